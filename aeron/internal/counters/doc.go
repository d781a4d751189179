// Package counters reads the media driver's counters (aeron-protocol.md §8):
// the values buffer (one 128-byte record per counter) and the metadata
// buffer (one 512-byte record per counter) of the CnC file.
//
// # What it owns
//
//   - The layouts of both records and of the keys ferry reads (stream
//     counters, client heartbeat, local socket address, archive recording
//     position), and the counter type ids (layout.go, types.go).
//   - [Reader]: bounds-checked access to counters by id, iteration over
//     allocated counters in id order, and search by type id and key.
//   - The archive recording-position ("rec-pos") key and its lookups by
//     recording id or session id ([Reader.FindRecordingPosition],
//     [Reader.FindRecordingPositionBySession]).
//
// # What it must never do
//
// It never allocates, frees or relabels counters and never writes their
// metadata: that is the driver's job. Its only write is [Value.Store], for a
// value the client itself owns (its heartbeat). It never panics on bytes
// read from shared memory: ids from the driver are range-checked, and a
// label or key that cannot have been written by a correct driver yields
// [ErrCorrupt].
//
// # Callers must
//
//  1. Build the [Reader] over the counters metadata and values sections of
//     the CnC file.
//  2. Re-check a [Counter] they hold (its state, type id and key, e.g. with
//     [Counter.IsRecordingPosition]) before trusting its value: the driver
//     frees counters and later reuses their ids.
//
// # Who may import it
//
// Packages under aeron/ only.
package counters
