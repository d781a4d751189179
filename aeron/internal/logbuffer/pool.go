package logbuffer

import (
	"math/bits"
	"sync"
	"unsafe"
)

// BufferPool recycles the buffers an assembler hands over with
// [FragmentAssembler.Detach], for a handler that knows when it is done with
// each: it gives a buffer back with [BufferPool.Put], and the assembler's
// next message may be copied into it. Buffers come in size classes, four
// per doubling (a buffer is at most a quarter larger than asked for), from
// 64 bytes to maxPooled; a larger one is allocated and left to the garbage
// collector. The pool holds its buffers as a [sync.Pool] does: until the
// garbage collector needs them.
//
// Putting a buffer back is a promise that nothing reads or writes it any
// more: the next message overwrites it. Scribble makes a broken promise show:
// every buffer put back is overwritten at once with 0xA5 bytes, so that a
// reader that still holds it sees garbage rather than, usually, the right
// bytes. Tests set it; it costs a memset per buffer.
//
// A BufferPool is safe for concurrent use; its zero value is ready to use.
type BufferPool struct {
	Scribble bool
	classes  [classCount]sync.Pool // of unsafe.Pointer: the first byte of a buffer of the class's size
}

const (
	minPooled = 64
	maxPooled = 16 << 20
	// classCount is 1 (up to 64 bytes) + 4 per doubling from 64 B to 16 MiB.
	classCount = 1 + 4*18
)

// classOf returns the index of the smallest class of at least n bytes;
// n must be at most maxPooled.
func classOf(n int) int {
	if n <= minPooled {
		return 0
	}
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n ≤ 2^k, k ≥ 7
	step := 1 << (k - 3)       // a quarter of 2^(k-1)
	j := (n - 1<<(k-1) + step - 1) / step
	return 1 + 4*(k-7) + j - 1
}

// classSize returns the size of class c.
func classSize(c int) int {
	if c == 0 {
		return minPooled
	}
	k, j := (c-1)/4+7, (c-1)%4+1
	return 1<<(k-1) + j<<(k-3)
}

// Get returns an empty buffer of at least the given capacity: a recycled
// one when the pool has one of its class, else a new one.
func (p *BufferPool) Get(capacity int) []byte {
	if capacity > maxPooled {
		return make([]byte, 0, capacity)
	}
	c := classOf(capacity)
	size := classSize(c)
	if b, ok := p.classes[c].Get().(unsafe.Pointer); ok {
		return unsafe.Slice((*byte)(b), size)[:0]
	}
	return make([]byte, 0, size)
}

// Put gives b back for reuse. Buffers whose capacity is not exactly a
// class's size (not from Get, or cut short) are left to the garbage
// collector, as is a nil pool's.
func (p *BufferPool) Put(b []byte) {
	n := cap(b)
	if p == nil || n < minPooled || n > maxPooled {
		return
	}
	c := classOf(n)
	if classSize(c) != n {
		return
	}
	b = b[:n]
	if p.Scribble {
		for i := range b {
			b[i] = 0xA5
		}
	}
	// A pointer in an interface needs no allocation; it keeps the whole
	// buffer alive, as the slice did.
	p.classes[c].Put(unsafe.Pointer(unsafe.SliceData(b)))
}
