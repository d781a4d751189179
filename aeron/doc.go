// Package aeron is ferry's Aeron client, written in Go from the Aeron 1.47.3 protocol
// (../shared/reference/aeron-protocol.md): it talks to a running media driver through its
// CnC file and shared-memory log buffers. It knows nothing of ferry, Pulsar or actors, and
// imports nothing of ferry outside aeron/.
//
// # Using it
//
//  1. [Connect] maps the driver's cnc.dat and starts the client's conductor.
//  2. [Client.AddExclusivePublication] and [Client.AddSubscription] ask the driver for a
//     resource and block until it answers (bounded by the context and the driver timeout).
//     A driver that still beats but answers later than its timeout fails that call alone,
//     with an error wrapping [ErrDriverTimeout]; the resource, if it comes, is released.
//  3. [ExclusivePublication.Offer] appends a message; [Subscription.Poll] and [Image.Poll]
//     deliver fragments (wrap the handler in a [FragmentAssembler] to get whole messages).
//     A handler's payload and [Header] are views of the log (or of the assembler's
//     buffer), valid only during the call: a handler copies what it keeps, or has the
//     assembler hand it over with [FragmentAssembler.Detach] (a reassembled message's
//     buffer, or a copy of a one-fragment message carved from the assembler's blocks, or
//     taken from a [BufferPool] the handler gives each buffer back to when it is done).
//     A poll loop also checks [Subscription.Err] (an offering one [ExclusivePublication.Err]):
//     a channel endpoint the driver could not open — a UDP bind that fails after it answered
//     the command, under its default dedicated threading — leaves the resource open and idle,
//     looking like a quiet stream.
//  4. [Client.Close] releases everything. If the driver dies, every call returns an error
//     wrapping [ErrDriverTimeout] from then on, and [Client.Done] is closed: the client
//     never hangs, panics or exits the process.
//
// # Concurrency
//
// One goroutine, the conductor, owns the client's state: the broadcast receiver that
// carries the driver's answers, the commands awaiting an answer, the registry of
// publications, subscriptions and images, the log-buffer mappings and their reference
// counts, the client's heartbeat and the driver liveness check. Every other goroutine asks
// it through a bounded request queue and waits for the answer on a channel of its own; the
// conductor never blocks on a caller.
//
// The data paths do not go through the conductor. [ExclusivePublication.Offer] runs on the
// caller's goroutine and writes the log buffer directly; an exclusive publication has one
// writer, so Offer is not safe for concurrent use (use one publication per goroutine).
// [Subscription.Poll] and [Image.Poll] run on the caller's goroutine too, and polls of one
// subscription must be serialised by the caller. The conductor adds and removes a
// subscription's images by publishing a new immutable image list with an atomic pointer,
// and marks resources closed with atomic flags; those are the only fields the data paths
// share with it.
//
// A log buffer is unmapped only after the resource linger time has passed since its last
// user released it (at once by [Client.Close], whose caller has stopped the others'
// offers and polls), and a poll checks its image's closed flag before every frame and
// stops once it is set, as Java's Image does. So a poll or offer that raced with a close or
// an unavailable image reads mapped memory, never an unmapped region (the segfault of
// upstream aeron#1675): what it reads after the close is at most the frame it had begun,
// well within the linger. That holds too for a fragment handler that closes its own
// subscription or client, or outlasts the linger after its image closed: the poll returns
// when it does, without reading on. Such a handler's payload and [Header] are views of the
// log, though: it must copy what it needs before it closes, or before the linger ends.
package aeron
