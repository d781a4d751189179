// Package infra starts and stops the real peers ferry is tested against: the Java Aeron
// ArchivingMediaDriver (io.aeron:aeron-all) and a Pulsar standalone broker, both fetched from
// Maven Central by fetch.sh into a cache outside git, at the versions in versions.env.
//
// It owns the peers' processes, their ports, data directories and logs. It never stops a
// process it did not start, and it always stops the ones it did: each peer runs in its own
// process group, is killed with the process that started it (Linux parent-death signal) unless
// started detached, and is stopped by [Peers.Stop] or the peer's own Stop.
//
// Tests use it through [Shared] in TestMain: it reuses peers named by environment variables
// (set by `make test`, `make infra-up`, or a developer) or starts a private set for the test
// binary. Tests that kill or restart a peer start their own with [StartArchive] or
// [StartPulsar] so that other tests never see the fault. A broker that takes TLS and
// authenticates by token is started with [PulsarOptions.Security] ([NewPulsarSecurity] makes
// its CA, certificate, secret key and tokens; nothing is fetched).
//
// Only test code, cmd/peers and the demo may import this package; ferry itself must not.
package infra
