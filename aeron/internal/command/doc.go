// Package command is the client↔media-driver control protocol of Aeron
// 1.47.3 as pure byte codecs (aeron-protocol.md §4): the commands a client
// writes into the to-driver ring buffer and the responses the driver
// broadcasts to all clients.
//
// # What it owns
//
//   - The command type ids ([CommandType], 0x01…0x11), the response type ids
//     ([ResponseType], 0x0F01…0x0F0C) and the driver error codes
//     ([ErrorCode], 0…14), each with a String method that prints Aeron's
//     name.
//   - The flyweight layouts, as const chains (layout.go) pinned by a golden
//     test.
//   - Encoders for the commands a client sends: one struct per command
//     ([AddPublication], [AddSubscription], [RemovePublication], …), each a
//     [Command] whose [Command.AppendTo] appends the record payload.
//   - Decoders for every response flyweight ([DecodeErrorResponse],
//     [DecodePublicationBuffersReady], [DecodeImageBuffersReady], …), and
//     [DriverError], the Go error for an ON_ERROR response.
//
// # What it must never do
//
// It performs no I/O and touches no shared memory: encoders append to a
// []byte, decoders read a []byte that the caller copied out of the
// broadcast buffer. It never allocates or slices from a length read off the
// wire before checking it against the bytes present, and never panics on
// input: a short or inconsistent payload is a [*DecodeError]. It does not
// match responses to commands (that is the client conductor's job, §4.5)
// and does not parse channel URIs beyond checking that they are ASCII and
// at most [MaxChannelLength] bytes (package aeron/channel parses them).
//
// # Callers must
//
//  1. Allocate the client id once, and every command's correlation id,
//     from the to-driver ring's correlation counter
//     (ringbuffer.ManyToOne.NextCorrelationID), and put them in the command.
//  2. Encode with [Command.AppendTo] and write the payload as one ring
//     record whose type id is [Command.Type]. On error nothing was appended
//     and nothing may be sent.
//  3. Decode a broadcast message only with the decoder of its type id
//     (ON_PUBLICATION_READY and ON_EXCLUSIVE_PUBLICATION_READY share
//     [DecodePublicationBuffersReady]; ON_COUNTER_READY and
//     ON_UNAVAILABLE_COUNTER share [DecodeCounterUpdate]), and only from a
//     copy of the payload: decoded strings are copies, but the decoders
//     assume the bytes do not change while they run.
//  4. Filter responses by correlation id, client id or subscription
//     registration id: every client receives every response.
//
// # Who may import it
//
// Packages under aeron/ only (it is internal to the Aeron client).
package command
