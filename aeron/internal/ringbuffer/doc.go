// Package ringbuffer implements Agrona's ManyToOneRingBuffer, the to-driver
// command channel of the Aeron CnC file (aeron-protocol.md §2): many client
// threads (in any process) append records, one consumer (the media driver)
// reads them.
//
// # What it owns
//
//   - The ring layout: the data area and its 768-byte trailer of positions,
//     the correlation-id counter and the consumer heartbeat (layout.go).
//   - The producer side: [ManyToOne.Write] with Agrona's claim/commit
//     algorithm, [ManyToOne.NextCorrelationID] and
//     [ManyToOne.ConsumerHeartbeatTime].
//   - The consumer side, [ManyToOne.Read] and
//     [ManyToOne.SetConsumerHeartbeatTime], which only the driver performs.
//     They exist so that tests and in-process fakes of the driver can read
//     what the client wrote; a client never calls them on a real driver's
//     ring.
//
// # What it must never do
//
// It never blocks, sleeps or retries on a full ring ([ErrInsufficientCapacity]
// goes back to the caller, who owns the back-off policy). It never panics on
// bytes read from shared memory: a ring whose positions or records are
// inconsistent yields [ErrCorrupt]. It knows nothing of the commands carried
// in the records.
//
// # Callers must
//
//  1. Build the ring with [New] over the to-driver section of the CnC file.
//  2. Obtain the client id and every command's correlation id from
//     [ManyToOne.NextCorrelationID].
//  3. Encode a command and pass it to [ManyToOne.Write]; on
//     [ErrInsufficientCapacity] retry later, within the driver timeout.
//
// # Who may import it
//
// Packages under aeron/ only.
package ringbuffer
