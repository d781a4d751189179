package shm

import (
	"fmt"
	"unsafe"
)

// wordSize is the width of the widest atomic access and therefore the
// alignment [Alloc] guarantees.
const wordSize = 8

// Buffer is a view of bytes that may be shared with another process. The
// zero Buffer is empty. A Buffer is a small value: copy it freely; copies
// view the same bytes.
//
// Buffer is safe for concurrent use in the sense that matters here: its
// methods never modify the Buffer value itself. Concurrent access to the
// underlying bytes must follow the ordering rules of whoever owns them; use
// the atomic accessors for words that another thread or process writes.
type Buffer struct {
	b        []byte
	readOnly bool
}

// Wrap returns a writable Buffer over b. The bytes are not copied. Atomic
// accessors require the real address to be aligned; use [Alloc] when the
// caller controls the allocation, or [Buffer.CheckAlignment] to verify b.
func Wrap(b []byte) Buffer {
	return Buffer{b: b}
}

// Alloc returns a zeroed, writable Buffer of n bytes in ordinary Go memory
// whose first byte is 8-byte aligned, so every 8-aligned offset is valid for
// 64-bit atomics. (A Go []byte carries no alignment guarantee; the bytes are
// therefore allocated as []uint64.) Tests and in-process fakes use it to
// build Aeron buffers without a driver. n must not be negative.
func Alloc(n int) Buffer {
	if n < 0 {
		assertionFailed("Alloc(%d): negative length", n)
	}
	if n == 0 {
		return Buffer{}
	}
	words := make([]uint64, (n+wordSize-1)/wordSize)
	return Buffer{b: unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)}
}

// Len returns the number of bytes in the buffer.
func (b Buffer) Len() int { return len(b.b) }

// ReadOnly reports whether the buffer views a read-only mapping. Writes to
// it panic with an assertion instead of faulting.
func (b Buffer) ReadOnly() bool { return b.readOnly }

// Bytes returns the underlying bytes. The slice aliases the buffer: for a
// mapping it is shared memory, valid only until the mapping is closed, and
// for a read-only mapping writing to it crashes the process. Bytes that
// another party writes concurrently must be read with the atomic accessors
// or copied and validated, never parsed in place.
func (b Buffer) Bytes() []byte { return b.b }

// CheckRange returns nil if [off, off+n) lies inside the buffer, otherwise
// a [*RangeError]. Use it for offsets and lengths read from shared memory.
func (b Buffer) CheckRange(off, n int) error {
	if !b.inRange(off, n) {
		return &RangeError{Offset: off, Length: n, Size: len(b.b)}
	}
	return nil
}

// View returns the sub-buffer [off, off+n), or a [*RangeError] if it does
// not lie inside b. Use it for offsets and lengths read from shared memory.
// The view inherits b's read-only flag.
func (b Buffer) View(off, n int) (Buffer, error) {
	if err := b.CheckRange(off, n); err != nil {
		return Buffer{}, err
	}
	return Buffer{b: b.b[off : off+n : off+n], readOnly: b.readOnly}, nil
}

// Sub returns the sub-buffer [off, off+n) for a range the caller has
// already validated or derived from layout constants. An out-of-range
// request is a bug in the caller and panics with an assertion.
func (b Buffer) Sub(off, n int) Buffer {
	b.mustRange(off, n, "Sub")
	return Buffer{b: b.b[off : off+n : off+n], readOnly: b.readOnly}
}

// CheckAlignment returns nil if the first byte of the buffer sits at an
// address that is a multiple of align (a power of two), otherwise an error
// wrapping [ErrMisaligned]. Constructors of shared-memory structures call
// it once, so that offset alignment implies address alignment afterwards.
// An empty buffer is aligned.
func (b Buffer) CheckAlignment(align int) error {
	if align <= 0 || align&(align-1) != 0 {
		assertionFailed("CheckAlignment(%d): alignment must be a power of two", align)
	}
	if len(b.b) == 0 {
		return nil
	}
	if addr := uintptr(unsafe.Pointer(&b.b[0])); addr%uintptr(align) != 0 {
		return fmt.Errorf("%w: buffer starts at %#x, need %d-byte alignment", ErrMisaligned, addr, align)
	}
	return nil
}

// inRange reports whether [off, off+n) lies inside the buffer, without
// overflowing for any int inputs.
func (b Buffer) inRange(off, n int) bool {
	return off >= 0 && n >= 0 && off <= len(b.b)-n
}

// The must* checks run on every access. A failed check panics with a fault
// value whose message is built only when somebody prints it: a panic of a
// composite literal costs the inliner next to nothing where a call to a
// formatting function costs most of its budget, so the checks inline into
// the accessors and the accessors into their callers.

func (b Buffer) mustRange(off, n int, op string) {
	if !b.inRange(off, n) {
		panic(rangeFault{op: op, off: off, n: n, length: len(b.b)})
	}
}

func (b Buffer) mustWritable(op string) {
	if b.readOnly {
		panic(readOnlyFault(op))
	}
}

// rangeFault is the panic of an access to [off, off+n) outside a buffer of
// length bytes: a bug in the caller.
type rangeFault struct {
	op     string
	off, n int
	length int
}

func (f rangeFault) Error() string {
	return fmt.Sprintf("assertion failed: shm: %s: range [%d, %d+%d) outside buffer of %d bytes", f.op, f.off, f.off, f.n, f.length)
}

// readOnlyFault is the panic of a write to a read-only mapping, named by the
// accessor.
type readOnlyFault string

func (f readOnlyFault) Error() string {
	return fmt.Sprintf("assertion failed: shm: %s: write to a read-only mapping", string(f))
}

// assertionFailed panics for a violated internal invariant. It is kept out
// of line so that the checks in the accessors stay cheap.
//
//go:noinline
func assertionFailed(format string, args ...any) {
	panic("assertion failed: shm: " + fmt.Sprintf(format, args...))
}
