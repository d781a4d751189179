package command

import (
	"errors"
	"fmt"
)

// Decoding errors. Each decoder returns a [*DecodeError] that matches one
// of them with errors.Is. A client conductor cannot tell which command a
// response it failed to decode belonged to, so it must treat either as a
// fatal protocol error of the driver connection.
var (
	// ErrTruncated reports a response payload that ends before a field
	// that the flyweight requires (the fixed fields, a string's length or
	// its bytes).
	ErrTruncated = errors.New("command: response truncated")
	// ErrMalformed reports a response payload whose bytes are present but
	// cannot have been written by a correct driver, e.g. a negative string
	// length.
	ErrMalformed = errors.New("command: response malformed")
)

// Encoding errors. An encoder returns an [*EncodeError] that matches one of
// them with errors.Is; nothing was appended, and the command must not be
// sent. They are bugs in the caller or invalid user input (e.g. a channel
// from the configuration), never transient.
var (
	// ErrNonASCII reports a string field (channel, counter label) that
	// holds a byte outside 7-bit ASCII: the protocol carries Agrona ASCII
	// strings only.
	ErrNonASCII = errors.New("command: string is not ASCII")
	// ErrTooLong reports a field longer than the protocol allows: a
	// channel longer than [MaxChannelLength], a counter key longer than
	// [MaxCounterKeyLength] or a label longer than
	// [MaxCounterLabelLength].
	ErrTooLong = errors.New("command: field too long")
)

// ErrDriver matches every [*DriverError] with errors.Is: the driver
// rejected a command. Whether that is fatal depends on the command; the
// per-code sentinels below say more.
var ErrDriver = errors.New("command: driver error")

// Per-code sentinels. A [*DriverError] matches, with errors.Is, [ErrDriver]
// and the sentinel of its [ErrorCode] (if it has one; UNUSED and codes
// unknown to Aeron 1.47.3 have none).
var (
	// ErrInvalidChannel: INVALID_CHANNEL. The channel URI is wrong;
	// retrying the same command fails again.
	ErrInvalidChannel = errors.New("command: driver error INVALID_CHANNEL")
	// ErrUnknownSubscription: UNKNOWN_SUBSCRIPTION.
	ErrUnknownSubscription = errors.New("command: driver error UNKNOWN_SUBSCRIPTION")
	// ErrUnknownPublication: UNKNOWN_PUBLICATION.
	ErrUnknownPublication = errors.New("command: driver error UNKNOWN_PUBLICATION")
	// ErrChannelEndpoint: CHANNEL_ENDPOINT_ERROR. The error's
	// CorrelationID is a channel-status counter id (§4.5).
	ErrChannelEndpoint = errors.New("command: driver error CHANNEL_ENDPOINT_ERROR")
	// ErrUnknownCounter: UNKNOWN_COUNTER.
	ErrUnknownCounter = errors.New("command: driver error UNKNOWN_COUNTER")
	// ErrUnknownCommandType: UNKNOWN_COMMAND_TYPE_ID. The driver does not
	// support the command (an older driver); retrying fails again.
	ErrUnknownCommandType = errors.New("command: driver error UNKNOWN_COMMAND_TYPE_ID")
	// ErrMalformedCommand: MALFORMED_COMMAND. A bug in the encoder or a
	// protocol mismatch with the driver.
	ErrMalformedCommand = errors.New("command: driver error MALFORMED_COMMAND")
	// ErrNotSupported: NOT_SUPPORTED.
	ErrNotSupported = errors.New("command: driver error NOT_SUPPORTED")
	// ErrUnknownHost: UNKNOWN_HOST. A host name in the channel did not
	// resolve; it may resolve later.
	ErrUnknownHost = errors.New("command: driver error UNKNOWN_HOST")
	// ErrResourceTemporarilyUnavailable: RESOURCE_TEMPORARILY_UNAVAILABLE.
	// The command may succeed when retried later.
	ErrResourceTemporarilyUnavailable = errors.New("command: driver error RESOURCE_TEMPORARILY_UNAVAILABLE")
	// ErrGeneric: GENERIC_ERROR.
	ErrGeneric = errors.New("command: driver error GENERIC_ERROR")
	// ErrStorageSpace: STORAGE_SPACE. The driver could not create the log
	// buffers (disk or /dev/shm full).
	ErrStorageSpace = errors.New("command: driver error STORAGE_SPACE")
	// ErrImageRejected: IMAGE_REJECTED.
	ErrImageRejected = errors.New("command: driver error IMAGE_REJECTED")
	// ErrPublicationRevoked: PUBLICATION_REVOKED.
	ErrPublicationRevoked = errors.New("command: driver error PUBLICATION_REVOKED")
)

var codeSentinels = map[ErrorCode]error{
	ErrorCodeInvalidChannel:                 ErrInvalidChannel,
	ErrorCodeUnknownSubscription:            ErrUnknownSubscription,
	ErrorCodeUnknownPublication:             ErrUnknownPublication,
	ErrorCodeChannelEndpointError:           ErrChannelEndpoint,
	ErrorCodeUnknownCounter:                 ErrUnknownCounter,
	ErrorCodeUnknownCommandTypeID:           ErrUnknownCommandType,
	ErrorCodeMalformedCommand:               ErrMalformedCommand,
	ErrorCodeNotSupported:                   ErrNotSupported,
	ErrorCodeUnknownHost:                    ErrUnknownHost,
	ErrorCodeResourceTemporarilyUnavailable: ErrResourceTemporarilyUnavailable,
	ErrorCodeGenericError:                   ErrGeneric,
	ErrorCodeStorageSpace:                   ErrStorageSpace,
	ErrorCodeImageRejected:                  ErrImageRejected,
	ErrorCodePublicationRevoked:             ErrPublicationRevoked,
}

// DriverError is the error the driver reported in an ON_ERROR response
// (see [ErrorResponse.Err]). It matches [ErrDriver] and its code's sentinel
// with errors.Is; use errors.As to read the fields.
type DriverError struct {
	// Code is the driver's error code.
	Code ErrorCode
	// Message is the driver's error text.
	Message string
	// CorrelationID is the correlation id of the failed command; for
	// ErrorCodeChannelEndpointError it is a channel-status counter id
	// instead (§4.5).
	CorrelationID int64
}

// Error implements error.
func (e *DriverError) Error() string {
	what := "correlation id"
	if e.Code == ErrorCodeChannelEndpointError {
		what = "channel-status counter id"
	}
	return fmt.Sprintf("command: driver error %s (code %d), %s %d: %s",
		e.Code, int32(e.Code), what, e.CorrelationID, e.Message)
}

// Is reports whether target is [ErrDriver] or the sentinel of e.Code.
func (e *DriverError) Is(target error) bool {
	if target == ErrDriver {
		return true
	}
	sentinel, ok := codeSentinels[e.Code]
	return ok && target == sentinel
}

// DecodeError describes a response payload a decoder rejected: which
// flyweight, which field, where. It unwraps to [ErrTruncated] or
// [ErrMalformed].
type DecodeError struct {
	// Flyweight names the response layout, e.g. "ImageBuffersReady".
	Flyweight string
	// Field names the field that could not be read, e.g. "log file name".
	Field string
	// Offset is the field's offset in the payload.
	Offset int
	// Length is the number of bytes the field needs at Offset (for
	// ErrTruncated) or the invalid length read from the wire (for
	// ErrMalformed).
	Length int
	// PayloadLength is the length of the payload given to the decoder.
	PayloadLength int
	// Err is ErrTruncated or ErrMalformed.
	Err error
}

// Error implements error.
func (e *DecodeError) Error() string {
	if errors.Is(e.Err, ErrMalformed) {
		return fmt.Sprintf("command: decode %s: %s: invalid length %d at offset %d (payload %d bytes): %v",
			e.Flyweight, e.Field, e.Length, e.Offset, e.PayloadLength, e.Err)
	}
	return fmt.Sprintf("command: decode %s: %s needs %d bytes at offset %d, payload has %d: %v",
		e.Flyweight, e.Field, e.Length, e.Offset, e.PayloadLength, e.Err)
}

// Unwrap returns Err.
func (e *DecodeError) Unwrap() error { return e.Err }

// EncodeError describes a command field an encoder rejected. It unwraps to
// [ErrNonASCII] or [ErrTooLong].
type EncodeError struct {
	// Command is the command being encoded.
	Command CommandType
	// Field names the rejected field, e.g. "channel".
	Field string
	// Reason says what was wrong, e.g. "byte 0xc3 at index 12".
	Reason string
	// Err is ErrNonASCII or ErrTooLong.
	Err error
}

// Error implements error.
func (e *EncodeError) Error() string {
	return fmt.Sprintf("command: encode %s: %s: %s: %v", e.Command, e.Field, e.Reason, e.Err)
}

// Unwrap returns Err.
func (e *EncodeError) Unwrap() error { return e.Err }
