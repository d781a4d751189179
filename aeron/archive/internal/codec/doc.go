// Package codec is the Aeron Archive control protocol as pure byte codecs
// (aeron-protocol.md §10): the SBE messages a client sends to an archive
// and the ones the archive sends back, for Aeron 1.47.3 (SBE schema 101,
// version 10; client protocol 1.11.0). It is written by hand from the
// protocol description; no code was generated.
//
// # What it owns
//
//   - The schema constants ([SchemaID], [SchemaVersion],
//     [ProtocolSemanticVersion]), the template ids ([TemplateID]) and the
//     schema's enums ([ControlResponseCode], [RecordingSignal],
//     [SourceLocation]) and the archive's error codes ([ErrorCode]), each
//     with a String method that prints the upstream name.
//   - The layouts (layout.go): header, block offsets and var-field order
//     of every message, as const chains pinned by a golden test.
//   - Encoders for the requests a client sends: one struct per request,
//     each a [Request] whose AppendTo appends the whole message, header
//     included, at schema version 10 with that version's full block.
//   - Decoders for what an archive sends on a control session
//     ([DecodeControlResponse], [DecodeRecordingDescriptor],
//     [DecodeRecordingSignalEvent], [DecodeChallenge], [DecodePing], …)
//     and on the recording-events stream ([DecodeRecordingStarted], …),
//     [PeekHeader] to dispatch by template id, and [Decode] to do both.
//
// # What it must never do
//
// It performs no I/O, keeps no state and starts no goroutine: encoders
// append to a []byte, decoders read one. It never allocates or slices from
// a length read off the wire before checking it against the bytes present
// and [MaxVarDataLength], and never panics on input: every failure is a
// [*DecodeError] or [*EncodeError] matching a sentinel of errors.go. It
// does not match responses to requests, track sessions or interpret
// results; that is the archive client's job.
//
// # Wire rules it follows
//
//   - A decoder honours the header's blockLength: a longer block (a newer
//     archive) is skipped to find the var fields; a block shorter than the
//     fields every version carries is [ErrMalformed].
//   - Fields added after a message's first version (ControlResponse
//     version since 4) read as their null value when the header's version
//     predates them, whatever the block length.
//   - Bytes after the last var field are ignored: RecordingDescriptor
//     messages end in catalog padding, and newer versions append fields.
//   - An enum value the schema does not list decodes as is (its String
//     prints the number); encoders reject such values.
//
// # Callers must
//
//  1. Reassemble fragments first: every function takes exactly one whole
//     message, header included.
//  2. Dispatch with [Decode] (or [PeekHeader] and the matching decoder),
//     skip messages that fail with [ErrUnknownTemplate], and treat every
//     other decode error as a protocol failure of the session.
//  3. Ignore messages for other control sessions, and treat a
//     [ControlResponse] for which [ControlResponse.IsPing] holds, or a
//     [Ping], as a liveness signal, not an answer.
//  4. Fill every request's optional fields with [NullValue] (not zero)
//     when unused, and send Version [ProtocolSemanticVersion] when
//     connecting.
//
// # Who may import it
//
// Package aeron/archive only (the Go internal rule also admits other
// packages under aeron/archive; none should need it).
package codec
