// Package harness holds fault-injecting decorators that wrap the real peers. A decorator
// may delay, reorder, fail or lose what the real peer does; it never makes the peer faster
// or more reliable than it is (lesson 27: a double better than the real thing deletes
// exactly the states where the bugs live).
//
// [Producer] wraps a real pulsar-client-go producer and takes control of its send
// acknowledgements: each one is delivered, delayed, held back (to be released later, in
// any order), turned into a failure, or lost, as a [Plan] decides. The message itself is
// always sent to the real broker exactly as the caller asked, so a failed or lost
// acknowledgement may belong to a message the broker stored: the state a lossless
// pipeline must survive. It can also close the real producer under a send, the way the
// client's own reconnect does ([Producer.CloseWhileSending]).
//
// What the real producer ties to an acknowledgement follows the planned one, not the
// broker's: a flush waits until the callbacks of earlier sends have run, and a send keeps
// its slot of the pending queue until its outcome reaches the caller, so a late
// acknowledgement fills the queue as it would in the real client.
//
// Only tests import this package.
package harness
