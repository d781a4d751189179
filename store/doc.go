// Package store defines ferry's checkpoint store: the durable record, per stream, of how far
// each Aeron Archive recording has been published to Pulsar and acknowledged.
//
// It owns the [Store] interface, the value types [Stream], [Checkpoint] and [State], and the
// errors every implementation returns (errors.go). Implementations live in sub-packages
// (store/bolt, the embedded default); each must pass the contract suite in store/storetest.
//
// This package performs no I/O and starts no goroutines.
//
// Implementations must:
//
//  1. Persist a [Store.Save] batch in one transaction: all of it or none of it.
//  2. Never move a checkpoint backwards: a lower position, or a completed recording marked
//     not completed, is refused with [ErrPositionRegressed]. Only [Store.Reset] goes back.
//  3. Store a stream's definition on first use and refuse a changed one with
//     [ErrStreamChanged] until the stream is reset.
//  4. Report every read failure, corrupt or truncated value and unknown encoding version as
//     an error ([ErrCorrupt], [ErrUnknownVersion]); never as "no checkpoint" (lessons 12, 13).
//  5. Verify a reset by reading back, and fail with [ErrResetFailed] if anything remains
//     (lesson 15).
//
// Callers must:
//
//  1. Save only positions Pulsar has acknowledged (the contiguous acknowledged prefix).
//  2. Treat [State.Stored] == false as "never saved or reset", the only case in which the
//     configured start position applies (a stored checkpoint outranks it, lesson 18).
//  3. Stop the stream, not retry blindly, on [ErrCorrupt], [ErrUnknownVersion] and
//     [ErrStreamChanged]: each needs an operator, and its message says what to do.
package store
