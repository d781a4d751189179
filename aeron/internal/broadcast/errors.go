package broadcast

import (
	"errors"
	"fmt"
)

// ErrLapped reports that the transmitter overwrote messages before this
// receiver read them ("unable to keep up with broadcast"): at least one
// buffer's worth of messages was lost. The receiver has resynchronised to
// the latest message and can continue, but an Aeron client conductor
// treats this as fatal, because responses to its commands may have been
// among the lost messages.
var ErrLapped = errors.New("broadcast: unable to keep up with broadcast (receiver lapped by transmitter)")

// ErrInvalidBuffer reports a buffer that cannot hold a broadcast buffer:
// its length is not a power of two of at least [MinCapacity] plus
// [TrailerLength], or it is not 8-byte aligned.
var ErrInvalidBuffer = errors.New("broadcast: invalid buffer")

// ErrInvalidTypeID reports a message type id below 1 passed to
// [Transmitter.Transmit]. It is a bug in the caller.
var ErrInvalidTypeID = errors.New("broadcast: message type id must be at least 1")

// ErrMessageTooLong reports a payload longer than capacity/8 passed to
// [Transmitter.Transmit]. It is a bug in the caller.
var ErrMessageTooLong = errors.New("broadcast: message longer than the maximum payload")

// ErrCorrupt reports a record or counter that cannot have been written by a
// correct transmitter, found while the receiver's position was still valid
// (so it is not explained by lapping). The buffer must not be used
// further. Every *CorruptError matches it with errors.Is.
var ErrCorrupt = errors.New("broadcast: corrupt buffer")

// CorruptError describes an inconsistency found at a buffer position. It
// unwraps to [ErrCorrupt].
type CorruptError struct {
	Position int64  // buffer position (unbounded byte count)
	Reason   string // what was wrong
}

// Error implements error.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("broadcast: corrupt buffer at position %d: %s", e.Position, e.Reason)
}

// Unwrap returns [ErrCorrupt].
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
