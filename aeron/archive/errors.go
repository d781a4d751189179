package archive

import (
	"errors"
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/archive/internal/codec"
)

// Errors an archive client returns. Test them with errors.Is and errors.As.
var (
	// ErrArchiveUnavailable means the archive cannot be reached: it did not answer within
	// the message timeout, or its response stream went away. The client is unusable from
	// then on; connect a new one when the archive is back.
	ErrArchiveUnavailable = errors.New("archive: archive unavailable")
	// ErrAuthenticationRequired means the archive challenged the connect request and no
	// credentials were configured.
	ErrAuthenticationRequired = errors.New("archive: the archive requires authentication; configure credentials")
	// ErrClosed is returned by calls on a client after [Client.Close].
	ErrClosed = errors.New("archive: client closed")
	// ErrArchive is wrapped by every refusal from the archive; errors.As with *Error gives
	// its code and message.
	ErrArchive = errors.New("archive: request refused")
	// ErrReentrant is returned by Close or a request made from OnError, which the agent
	// that would serve it runs: it would wait for itself for ever.
	ErrReentrant = errors.New("archive: call from OnError refused: it would wait for the agent running OnError; make it from another goroutine")
	// ErrRecordingUnknown is wrapped when the archive does not know a recording id (it was
	// never made, or was purged).
	ErrRecordingUnknown = errors.New("archive: unknown recording")
)

// Error is the archive's answer to a request it refused.
type Error struct {
	Request string // what was asked
	Code    int64  // the archive's error code (relevant id of the ERROR response)
	Message string // the archive's message
}

func (e *Error) Error() string {
	return fmt.Sprintf("archive: %s: refused (code %d): %s", e.Request, e.Code, e.Message)
}

// Unwrap makes errors.Is(err, ErrArchive) true.
func (e *Error) Unwrap() error { return ErrArchive }

// Is makes errors.Is(err, ErrRecordingUnknown) true for the archive's UNKNOWN_RECORDING
// refusals (an ERROR response whose relevant id is that code), as for a RECORDING_UNKNOWN
// response: a purged or never-made recording reads the same whichever request found it.
func (e *Error) Is(target error) bool {
	return target == ErrRecordingUnknown && codec.ErrorCode(e.Code) == codec.ErrorCodeUnknownRecording
}
