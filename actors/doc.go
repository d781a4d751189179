// Package actors is ferry's pipeline as protoactor-go actors: the shells around the pure
// core in package progress. Each actor translates messages into calls of the core and the
// core's results into effects (a Pulsar send, a store write, a message to another actor).
//
// # The actors of one stream
//
//	StreamSupervisor   parent of everything below; owns the recording schedule
//	  Discovery        lists the stream's recordings in the archive
//	  Checkpointer     owns the checkpoint policies and the store writes
//	  per recording r that may publish now:
//	    Replay[r]        one continuous open-ended replay from the persisted watermark
//	    CommitTracker[r] the contiguous acknowledged prefix, credits, re-delivery
//	    Publisher[r]     the Pulsar producer ferry-<stream>-<r>
//
// A failed Replay is restarted by the StreamSupervisor's strategy (package supervisor)
// from the persisted watermark: the same path as a process restart.
//
// # What this package must never do
//
// Receive never blocks: archive calls, Aeron subscription changes, producer creation,
// flushes and store writes run on goroutines owned by the actor that started them, and
// their results come back as messages. Pulsar callbacks only send messages. Every mailbox
// is bounded by the credits its senders hold (see each Props).
//
// # What callers must do
//
//  1. Load every stream's stored state before starting (a read failure or corrupt store
//     stops the start, lessons 12 and 13) and pass it in [StreamConfig].
//  2. Start the [Pipeline], then on shutdown call [Pipeline.Drain] before [Pipeline.Stop].
package actors
