package logbuffer

import (
	"errors"
	"fmt"
)

// ErrInvalidLog reports a buffer or file that is not a usable log buffer:
// its length does not match the term length and page size in its
// metadata, those values are out of range, it is misaligned, or its
// append state is inconsistent. It comes from [Open], [Wrap] and
// [NewExclusiveAppender] and is never retried: the driver that created
// the log and this client disagree about its layout.
var ErrInvalidLog = errors.New("logbuffer: invalid log buffer")

// ErrInvalidTermLength reports a term length that is not a power of two
// between [MinTermLength] and [MaxTermLength]. Log validation wraps it
// together with [ErrInvalidLog].
var ErrInvalidTermLength = errors.New("logbuffer: invalid term length")

// ErrInvalidPageSize reports a page size that is not a power of two
// between [MinPageSize] and [MaxPageSize]. Log validation wraps it together
// with [ErrInvalidLog].
var ErrInvalidPageSize = errors.New("logbuffer: invalid page size")

// ErrInvalidMTU reports an MTU in a log's metadata that an appender
// cannot fragment with: not a multiple of [FrameAlignment], not larger
// than [HeaderLength], or larger than the term.
// [NewExclusiveAppender] wraps it together with [ErrInvalidLog].
var ErrInvalidMTU = errors.New("logbuffer: invalid MTU")

// ErrReadOnly reports an attempt to append to a log mapped read-only. It
// is a bug in the caller.
var ErrReadOnly = errors.New("logbuffer: log is read-only")

// ErrMessageTooLong reports a message longer than the log's maximum
// message length (min(termLength/8, 16 MiB)) passed to an offer. It is a
// bug in the caller, who must bound its messages; nothing was appended.
var ErrMessageTooLong = errors.New("logbuffer: message longer than the maximum message length")

// ErrInvalidPosition reports a subscriber position that cannot index the
// log: negative, not a multiple of [FrameAlignment], or at or beyond the
// maximum possible position. The position comes from a driver counter, so
// this means the counter (or the caller's bookkeeping) is corrupt; nothing
// was read.
var ErrInvalidPosition = errors.New("logbuffer: invalid subscriber position")

// ErrInvalidAction reports a [ControlledFragmentHandler] that returned a
// value other than the four [Action] constants. It is a bug in the
// handler; the poll stops after that fragment as for [Break].
var ErrInvalidAction = errors.New("logbuffer: invalid controlled poll action")

// ErrShortFrame reports fewer than [HeaderLength] bytes given to
// [DecodeFrameHeader].
var ErrShortFrame = errors.New("logbuffer: frame shorter than a data frame header")

// ErrCorrupt reports a term holding a frame that no correct publisher or
// driver writes: a published length shorter than a header, or one that
// runs past the end of the term. Readers stop in front of it; the image
// cannot make progress and must be closed. Every *CorruptError matches it
// with errors.Is.
var ErrCorrupt = errors.New("logbuffer: corrupt term")

// CorruptError describes a corrupt frame. It unwraps to [ErrCorrupt].
type CorruptError struct {
	Position    int64  // stream position of the first byte of the frame
	FrameLength int32  // the frame length word as read
	Reason      string // what was wrong
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("logbuffer: corrupt frame at position %d (frame length %d): %s",
		e.Position, e.FrameLength, e.Reason)
}

// Unwrap returns [ErrCorrupt].
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
