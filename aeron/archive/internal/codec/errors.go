package codec

import (
	"errors"
	"fmt"
)

// Decoding errors. Every decoder (and [PeekHeader], [Decode]) returns a
// [*DecodeError] that matches exactly one of them with errors.Is.
var (
	// ErrTruncated reports a message that ends before its header, its
	// fixed block (as long as its header's blockLength says), a var
	// field's length or a var field's bytes. The control stream delivers
	// whole messages, so this is a protocol failure of the session (or a
	// caller that did not reassemble fragments), not a reason to wait.
	ErrTruncated = errors.New("codec: message truncated")
	// ErrMalformed reports a message whose bytes are present but that no
	// correct archive writes: a block too short for the fields its header
	// version must carry, or a var field longer than [MaxVarDataLength].
	// It is a protocol failure of the session.
	ErrMalformed = errors.New("codec: message malformed")
	// ErrSchemaMismatch reports a header whose schema id is not
	// [SchemaID]: the stream carries something other than archive
	// messages. The Java client throws on it; a session must fail.
	ErrSchemaMismatch = errors.New("codec: not an archive schema message")
	// ErrUnknownTemplate reports, from [Decode], a template id this package
	// does not decode (a message of a newer archive, or one a client never
	// receives). The message is well framed: the caller skips it and
	// carries on, as the Java client does.
	ErrUnknownTemplate = errors.New("codec: unknown template id")
	// ErrTemplateMismatch reports a message given to the decoder of
	// another template (e.g. a RecordingDescriptor to
	// [DecodeControlResponse]). It is a bug in the caller's dispatch:
	// dispatch on [PeekHeader] or use [Decode].
	ErrTemplateMismatch = errors.New("codec: message is of another template")
)

// Encoding errors. An encoder returns an [*EncodeError] that matches one of
// them with errors.Is; it appended nothing, and nothing may be sent. They
// are bugs in the caller or invalid configuration (e.g. a channel from a
// config file), never transient.
var (
	// ErrNonASCII reports a channel holding a byte outside 7-bit ASCII: the
	// schema's varAsciiEncoding carries US-ASCII only.
	ErrNonASCII = errors.New("codec: string is not ASCII")
	// ErrTooLong reports a channel longer than [MaxChannelLength] or
	// credentials longer than [MaxVarDataLength].
	ErrTooLong = errors.New("codec: field too long")
	// ErrInvalidValue reports an enum field set to a value the schema does
	// not list (e.g. a SourceLocation of 2), or a version that does not fit
	// version_t.
	ErrInvalidValue = errors.New("codec: invalid field value")
)

// DecodeError describes a message a decoder rejected: which template,
// which field, where and why. It unwraps to one of the decoding sentinels.
type DecodeError struct {
	// Template is the template id read from the header, or 0 if the
	// header itself was truncated.
	Template TemplateID
	// Field names what could not be read: "header", "block", a field name
	// of the schema such as "errorMessage".
	Field string
	// Offset is the offset in the message of what could not be read.
	Offset int
	// MessageLength is the length of the message given to the decoder.
	MessageLength int
	// Reason says what was wrong, e.g. "needs 12 bytes, 7 remain".
	Reason string
	// Err is ErrTruncated, ErrMalformed, ErrSchemaMismatch,
	// ErrUnknownTemplate or ErrTemplateMismatch.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	return fmt.Sprintf("codec: decode %s: %s at offset %d of %d-byte message: %s: %v",
		e.Template, e.Field, e.Offset, e.MessageLength, e.Reason, e.Err)
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError describes a request field an encoder rejected. It unwraps to
// [ErrNonASCII], [ErrTooLong] or [ErrInvalidValue].
type EncodeError struct {
	// Template is the request being encoded.
	Template TemplateID
	// Field names the rejected field as the schema does, e.g.
	// "replayChannel".
	Field string
	// Reason says what was wrong, e.g. "byte 0xc3 at index 12".
	Reason string
	// Err is ErrNonASCII, ErrTooLong or ErrInvalidValue.
	Err error
}

// Error implements error.
func (e *EncodeError) Error() string {
	return fmt.Sprintf("codec: encode %s: %s: %s: %v", e.Template, e.Field, e.Reason, e.Err)
}

// Unwrap returns Err.
func (e *EncodeError) Unwrap() error { return e.Err }
