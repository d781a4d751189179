package counters

import (
	"errors"
	"fmt"
)

// ErrCounterIDOutOfRange reports a counter id outside the counters buffers,
// e.g. an id in a driver response that does not match this CnC file. The
// caller must not use the id.
var ErrCounterIDOutOfRange = errors.New("counters: counter id out of range")

// ErrInvalidBuffer reports a metadata or values buffer that is not 8-byte
// aligned.
var ErrInvalidBuffer = errors.New("counters: invalid buffer")

// ErrCorrupt reports a label or key that a correct driver cannot have
// written. Every *CorruptError matches it with errors.Is.
var ErrCorrupt = errors.New("counters: corrupt counter")

// CorruptError describes a malformed label or key.
type CorruptError struct {
	ID     CounterID // NullCounterID when decoding a key on its own
	Reason string
}

// Error implements error.
func (e *CorruptError) Error() string {
	if e.ID == NullCounterID {
		return "counters: corrupt key: " + e.Reason
	}
	return fmt.Sprintf("counters: corrupt counter %d: %s", e.ID, e.Reason)
}

// Unwrap returns [ErrCorrupt].
func (e *CorruptError) Unwrap() error { return ErrCorrupt }
