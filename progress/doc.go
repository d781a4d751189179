// Package progress is ferry's pure core for "how far may we say we got".
//
// It owns five decisions and nothing else:
//
//   - [CommitTracker]: per recording, which emitted records Pulsar has
//     acknowledged, and the committed position: the end of the contiguous
//     acknowledged prefix (lessons 1, 2, 4, 22, 26).
//   - [CheckpointPolicy]: when the committed position must be persisted, and
//     how a failing store is retried (lesson 3, 5).
//   - [Schedule]: which recordings of one stream may publish now (lessons 5, 11).
//   - [SequenceID] and [ProducerName]: the deduplication identity of a record
//     (lesson 20).
//   - [Window]: how much the replay may read now, given what is in flight (the
//     credits, architecture §2).
//
// # What this package must never do
//
// It performs no I/O, starts no goroutine, reads no clock and draws no random
// number. Time enters as a value (nowMs, milliseconds on a clock of the
// caller's that only moves forward: the checkpointer gives the time since the
// process started, so that a step of the time of day moves nothing) and every
// result is a value the caller carries out. Given the same inputs it returns
// the same outputs, so every failure story is a plain sequence of calls in a
// test.
//
// # What callers must do
//
// No value in this package is safe for concurrent use: exactly one actor owns
// each [CommitTracker], [CheckpointPolicy] and [Schedule], and Pulsar callbacks
// must reach it as messages, never as direct calls from another goroutine.
// For one recording the owner:
//
//  1. Calls [CommitTracker.Emit] for each record before handing it to the
//     producer, with sequence id [SequenceID] of its end position.
//  2. Delivers each producer outcome with [CommitTracker.Ack] or
//     [CommitTracker.Fail], tagged with the [Epoch] the record was emitted in.
//  3. Passes the committed position to [CheckpointPolicy.Committed] and calls
//     [CheckpointPolicy.Tick] on every timer tick; it persists each [Save]
//     Tick returns and reports the result with [CheckpointPolicy.Saved] or
//     [CheckpointPolicy.SaveFailed].
//  4. When [CommitTracker.Redelivery] reports that a re-delivery is required,
//     restarts the replay from the persisted position and calls
//     [CommitTracker.Reset] with it before emitting again.
//  5. When [CommitTracker.Completed] holds, calls [CheckpointPolicy.Complete];
//     once [CheckpointPolicy.FinalPersisted] holds, reports the recording to
//     [Schedule.Completed] so that the next recording may start.
package progress
