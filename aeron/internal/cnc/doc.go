// Package cnc maps and validates the media driver's command-and-control file
// (<aeron.dir>/cnc.dat, aeron-protocol.md §1) and tells whether a live
// driver is behind it.
//
// # What it owns
//
//   - The CnC header layout and version (layout.go, version.go) and the
//     position of the five sections that follow it: the to-driver ring
//     buffer, the to-clients broadcast buffer, the counters metadata and
//     values buffers, and the driver's error log.
//   - [Map] / [Wrap]: validation of a CnC image (version compatible, every
//     section inside the file, to-driver ring well formed) and access to
//     its header fields and sections.
//   - Driver liveness from the to-driver ring's consumer heartbeat
//     ([File.CheckDriverActive]) and [Wait], the connect-time wait for a
//     live driver.
//
// # What it must never do
//
// It never writes to the file (the driver initialises it; clients write
// only through the ring buffer and counters packages). It never sleeps
// except inside [Wait], and there only through the caller's clock. It never
// panics on the file's contents: every inconsistency is a typed error.
//
// # Callers must
//
//  1. Connect with [Wait] (or [Map] and [File.CheckDriverActive]), giving
//     the driver timeout (Aeron's aeron.driver.timeout, 10 s by default).
//  2. Keep checking [File.CheckDriverActive] while connected: a driver
//     whose heartbeat goes stale is dead, and every pending command fails.
//  3. [File.Close] the file only when nothing uses its sections any more.
//
// # Who may import it
//
// Packages under aeron/ only.
package cnc
