package ringbuffer

import (
	"errors"
	"fmt"
)

// ErrInsufficientCapacity reports that the ring has no room for the record
// now. It is back-pressure, not a failure: the consumer frees space as it
// reads, so the caller retries later (a driver that never frees space is
// detected by its heartbeat going stale).
var ErrInsufficientCapacity = errors.New("ringbuffer: insufficient capacity")

// ErrInvalidTypeID reports a message type id below 1; type ids 0 and below
// are reserved (-1 marks padding). It is a bug in the caller.
var ErrInvalidTypeID = errors.New("ringbuffer: message type id must be at least 1")

// ErrMessageTooLong reports a payload longer than
// [ManyToOne.MaxPayloadLength]. It is a bug in the caller or a command that
// must be rejected before encoding.
var ErrMessageTooLong = errors.New("ringbuffer: message longer than the maximum payload")

// ErrInvalidBuffer reports a buffer that cannot hold a ring: its length is
// not a power of two plus [TrailerLength], or it is not 8-byte aligned. For
// a CnC file it means the file is corrupt or from an incompatible driver.
var ErrInvalidBuffer = errors.New("ringbuffer: invalid buffer")

// ErrCorrupt reports that the ring's positions or records are inconsistent.
// The ring must not be used further; the driver owning it is broken or the
// mapping is not a ring. Every *CorruptError matches it with errors.Is.
var ErrCorrupt = errors.New("ringbuffer: corrupt ring")

// CorruptError describes an inconsistency found at a ring position. It
// unwraps to [ErrCorrupt].
type CorruptError struct {
	Position int64  // ring position (unbounded byte count) where it was found
	Reason   string // what was wrong
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("ringbuffer: corrupt ring at position %d: %s", e.Position, e.Reason)
}

// Unwrap returns [ErrCorrupt].
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
