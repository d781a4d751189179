package shm

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Atomic accessors. Each is a sync/atomic operation on the word at off, in
// the host's native byte order, and is sequentially consistent: a Store* or
// read-modify-write is at least a release, a Load* at least an acquire, in
// the terms Aeron's Java and C code use. Each panics with an assertion if
// the word is outside the buffer or its address is not naturally aligned
// (4 bytes for 32-bit words, 8 for 64-bit words), and each write panics on
// a read-only buffer.

// LoadInt32 atomically loads the int32 at off.
func (b Buffer) LoadInt32(off int) int32 {
	return atomic.LoadInt32(b.int32At(off, "LoadInt32"))
}

// StoreInt32 atomically stores v at off.
func (b Buffer) StoreInt32(off int, v int32) {
	b.mustWritable("StoreInt32")
	atomic.StoreInt32(b.int32At(off, "StoreInt32"), v)
}

// SwapInt32 atomically stores v at off and returns the previous value. On
// amd64 (XCHG) and on arm64 with LSE atomics (SWPAL, ARMv8.1 and later) it
// is a full barrier, so later plain stores cannot become visible before it.
// Use it where Aeron follows a store with a release fence, which Go cannot
// express directly.
func (b Buffer) SwapInt32(off int, v int32) int32 {
	b.mustWritable("SwapInt32")
	return atomic.SwapInt32(b.int32At(off, "SwapInt32"), v)
}

// LoadInt64 atomically loads the int64 at off.
func (b Buffer) LoadInt64(off int) int64 {
	return atomic.LoadInt64(b.int64At(off, "LoadInt64"))
}

// StoreInt64 atomically stores v at off.
func (b Buffer) StoreInt64(off int, v int64) {
	b.mustWritable("StoreInt64")
	atomic.StoreInt64(b.int64At(off, "StoreInt64"), v)
}

// CompareAndSwapInt64 atomically replaces the int64 at off with new if it
// equals old, and reports whether it did.
func (b Buffer) CompareAndSwapInt64(off int, old, new int64) bool {
	b.mustWritable("CompareAndSwapInt64")
	return atomic.CompareAndSwapInt64(b.int64At(off, "CompareAndSwapInt64"), old, new)
}

// AddInt64 atomically adds delta to the int64 at off and returns the new
// value.
func (b Buffer) AddInt64(off int, delta int64) int64 {
	b.mustWritable("AddInt64")
	return atomic.AddInt64(b.int64At(off, "AddInt64"), delta)
}

// LoadWords copies len(dst) bytes starting at off into dst using one
// atomic 64-bit load per 8-byte word. off must be 8-byte aligned and the
// buffer must hold the whole last word: [off, off+align(len(dst), 8)).
//
// This is the read side of a seqlock ("copy, then validate"): because every
// load is an acquire, each is ordered before the caller's next atomic load,
// typically the one that re-checks that the bytes were not overwritten while
// being copied. Plain loads give no such order on arm64.
func (b Buffer) LoadWords(off int, dst []byte) {
	n := roundUpToWord(len(dst))
	b.mustRange(off, n, "LoadWords")
	if n == 0 {
		return
	}
	mustAligned(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b.b)), off), wordSize, off, "LoadWords")
	var word [wordSize]byte
	for i := 0; i < len(dst); i += wordSize {
		w := atomic.LoadUint64((*uint64)(unsafe.Pointer(&b.b[off+i])))
		binary.NativeEndian.PutUint64(word[:], w)
		copy(dst[i:], word[:])
	}
}

// StoreWords copies src to off using one atomic 64-bit store per 8-byte
// word. off must be 8-byte aligned and the buffer must hold the whole last
// word: [off, off+align(len(src), 8)). The bytes of the last word beyond
// len(src) are set to zero.
func (b Buffer) StoreWords(off int, src []byte) {
	b.mustWritable("StoreWords")
	n := roundUpToWord(len(src))
	b.mustRange(off, n, "StoreWords")
	if n == 0 {
		return
	}
	mustAligned(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b.b)), off), wordSize, off, "StoreWords")
	var word [wordSize]byte
	for i := 0; i < len(src); i += wordSize {
		word = [wordSize]byte{}
		copy(word[:], src[i:])
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&b.b[off+i])), binary.NativeEndian.Uint64(word[:]))
	}
}

// int32At and int64At return the address of the word at off after checking
// that it lies inside the buffer and is aligned on the real address. Both
// checks are one branch and the message is built out of line, only when it
// fails, so that they inline into every accessor: the hot paths of a
// publication and a subscription make several of these per message.
func (b Buffer) int32At(off int, op string) *int32 {
	if uint(off) > uint(len(b.b)-sizeofInt32) || (b.base()+uintptr(off))&(sizeofInt32-1) != 0 {
		panic(wordFault{op: op, off: off, size: sizeofInt32, length: len(b.b), base: b.base()})
	}
	// In range: the pointer stays inside the allocation (checkptr).
	return (*int32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b.b)), off))
}

func (b Buffer) int64At(off int, op string) *int64 {
	if uint(off) > uint(len(b.b)-sizeofInt64) || (b.base()+uintptr(off))&(sizeofInt64-1) != 0 {
		panic(wordFault{op: op, off: off, size: sizeofInt64, length: len(b.b), base: b.base()})
	}
	// In range: the pointer stays inside the allocation (checkptr).
	return (*int64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b.b)), off))
}

// base is the address of the buffer's first byte, as a number: no pointer is
// formed from it.
func (b Buffer) base() uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b.b))) }

// wordFault is the panic of a word accessor whose word is outside the buffer
// (see [rangeFault]) or not naturally aligned.
type wordFault struct {
	op        string
	off, size int
	length    int
	base      uintptr
}

func (f wordFault) Error() string {
	if f.off < 0 || f.off > f.length-f.size {
		return rangeFault{op: f.op, off: f.off, n: f.size, length: f.length}.Error()
	}
	return fmt.Sprintf("assertion failed: shm: %s: offset %d is at address %#x, not %d-byte aligned", f.op, f.off, f.base+uintptr(f.off), f.size)
}

// mustAligned checks the real address p of the word at off, not just off: a
// Buffer made by [Wrap] or [Buffer.Sub] may start anywhere. align is a power
// of two.
func mustAligned(p unsafe.Pointer, align uintptr, off int, op string) {
	if uintptr(p)&(align-1) != 0 {
		alignmentFailed(op, off, uintptr(p), align)
	}
}

//go:noinline
func alignmentFailed(op string, off int, addr, align uintptr) {
	assertionFailed("%s: offset %d is at address %#x, not %d-byte aligned", op, off, addr, align)
}

func roundUpToWord(n int) int {
	return (n + wordSize - 1) &^ (wordSize - 1)
}
