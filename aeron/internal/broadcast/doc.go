// Package broadcast implements Agrona's one-to-many broadcast buffer, the
// to-clients channel of the Aeron CnC file (aeron-protocol.md §3): the media
// driver transmits responses and events, every client receives all of them,
// and a client that falls a whole buffer behind loses messages.
//
// # What it owns
//
//   - The layout: the data area and its 128-byte trailer of counters
//     (layout.go).
//   - [Receiver], the client's cursor, with lap detection and the padding
//     record at the wrap; [CopyReceiver], which copies each message out and
//     re-validates it before delivery (what an Aeron client uses).
//   - [Transmitter], the driver side, for tests and in-process fakes of the
//     driver. A client never transmits on a real driver's buffer.
//
// # What it must never do
//
// It never parses a message in shared memory in place: the transmitter may
// overwrite it at any moment, so [CopyReceiver] copies first and delivers
// only what is still valid afterwards. It never panics on bytes read from
// shared memory ([ErrCorrupt]) and never blocks.
//
// # Callers must
//
//  1. Create the [Receiver] when connecting. It starts at the latest
//     message, so the first message received may predate the client:
//     filter responses by correlation id and client id.
//  2. Poll [CopyReceiver.Receive] often: the default buffer holds 1 MiB
//     of driver events.
//  3. Treat [ErrLapped] as fatal for the client conductor, as the Java
//     client does: messages were lost and pending commands may never
//     complete.
//
// # Who may import it
//
// Packages under aeron/ only.
package broadcast
