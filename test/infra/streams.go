package infra

import "math/rand/v2"

// Where [UniqueStreamID] picks: at or above uniqueStreamLow, whose ids no fixed stream of
// the peers' users has (the archive's control streams, [DefaultControlStreamID]; the demo's
// 1001 and 2001; a Java sample's own), and in a window wide enough that two picks of the
// tests running at one time practically never meet.
const (
	uniqueStreamLow    = 1 << 20
	uniqueStreamWindow = 1 << 29
)

// UniqueStreamID returns a stream id, chosen at random, that no other test and no earlier
// run against the same media driver or archive has used. The peers [Shared] hands out are
// shared by the test packages, whose tests run at the same time, and by `ferry demo` (which
// test/pipeline runs on them, on its fixed stream ids): a publication or subscription of
// another on the same channel and stream would join the test's, and a recording or
// lingering publication of one would show up in another. A test that publishes, subscribes,
// records or replays on a shared peer takes its stream ids from here.
//
// It is safe for concurrent use.
func UniqueStreamID() int32 { return uniqueStreamLow + rand.Int32N(uniqueStreamWindow) }
