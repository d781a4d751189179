package shm

import (
	"errors"
	"fmt"
)

// ErrOutOfRange reports that a requested range is not inside a [Buffer].
// [Buffer.View] and [Buffer.CheckRange] return it wrapped in a [*RangeError].
// Callers validating lengths read from shared memory treat it as corrupt
// input, never as a reason to panic.
var ErrOutOfRange = errors.New("shm: range outside buffer")

// ErrMisaligned reports that memory is not aligned as required for atomic
// access. [Buffer.CheckAlignment] returns it wrapped with the address
// details.
var ErrMisaligned = errors.New("shm: misaligned memory")

// ErrEmptyFile reports that [Map] was asked to map a zero-length file. mmap
// cannot map zero bytes; for cnc.dat it means the driver has created the
// file but not yet sized it, so callers usually retry.
var ErrEmptyFile = errors.New("shm: file is empty")

// RangeError describes a range that does not fit in a [Buffer]. It unwraps
// to [ErrOutOfRange].
type RangeError struct {
	Offset int // first byte of the requested range
	Length int // number of bytes requested
	Size   int // length of the buffer
}

// Error implements error.
func (e *RangeError) Error() string {
	return fmt.Sprintf("shm: range [%d, %d+%d) outside buffer of %d bytes", e.Offset, e.Offset, e.Length, e.Size)
}

// Unwrap returns [ErrOutOfRange].
func (e *RangeError) Unwrap() error { return ErrOutOfRange }
