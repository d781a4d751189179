package shm

import "sync/atomic"

// Int32Word and Int64Word are single aligned words of a Buffer, checked
// (range, alignment) once when they are taken, for the words a hot path
// touches on every message: a log's tails, a frame's first word, a
// counter's value. Their accessors check nothing but writability, so each
// inlines into its caller, and a release store costs one call to a MOV
// (release_amd64.s). Like a Buffer, a word is valid only while the memory
// it views is: a word of a mapping must not be used after the mapping is
// closed. The zero value is no word; using it panics.

// Int32Word is one aligned int32 of a Buffer.
type Int32Word struct {
	p        *int32
	readOnly bool
}

// Int64Word is one aligned int64 of a Buffer.
type Int64Word struct {
	p        *int64
	readOnly bool
}

// Int32Word returns the int32 word at off, which must lie inside the
// buffer at a 4-byte aligned address (else it panics, as
// [Buffer.LoadInt32]).
func (b Buffer) Int32Word(off int) Int32Word {
	return Int32Word{p: b.int32At(off, "Int32Word"), readOnly: b.readOnly}
}

// Int64Word returns the int64 word at off, which must lie inside the
// buffer at an 8-byte aligned address (else it panics, as
// [Buffer.LoadInt64]).
func (b Buffer) Int64Word(off int) Int64Word {
	return Int64Word{p: b.int64At(off, "Int64Word"), readOnly: b.readOnly}
}

// Load is [Buffer.LoadInt32] of the word.
func (w Int32Word) Load() int32 { return atomic.LoadInt32(w.p) }

// StoreRelease stores v with release ordering only: a reader that sees v
// with an acquire load ([Int32Word.Load], [Buffer.LoadInt32], or the
// driver's volatile read) sees every store this goroutine made before it.
// It is Agrona's putIntOrdered/putIntRelease, the store Aeron publishes
// frames and tails with, and weaker than [Buffer.StoreInt32]: it does not
// order a later load before it (no store-load fence), which a publisher
// never needs. On amd64 it costs a plain MOV where StoreInt32 is an XCHG
// that drains the store buffer (see release_amd64.go); elsewhere, and under
// the race detector (which must see the edge), it is StoreInt32. It panics
// on a word of a read-only mapping.
func (w Int32Word) StoreRelease(v int32) {
	if w.readOnly {
		panic(readOnlyFault("Int32Word.StoreRelease"))
	}
	storeRelease32(w.p, v)
}

// Load is [Buffer.LoadInt64] of the word.
func (w Int64Word) Load() int64 { return atomic.LoadInt64(w.p) }

// StoreRelease is [Int32Word.StoreRelease] for an int64.
func (w Int64Word) StoreRelease(v int64) {
	if w.readOnly {
		panic(readOnlyFault("Int64Word.StoreRelease"))
	}
	storeRelease64(w.p, v)
}

// PrefetchDistance is how far ahead of the word it stores
// [StoreReleasePairAndPrefetch] asks the CPU to fetch cache lines for
// writing: four 64-byte lines, about the time a line takes to come from
// memory at the rate a writer of small frames fills them (measured in
// docs/performance.md, "Aeron IPC").
const PrefetchDistance = 256

// cacheLine is the unit of the prefetch (x86-64 and arm64 lines).
const cacheLine = 64

// StoreReleasePairAndPrefetch is a.StoreRelease(av) followed by
// b.StoreRelease(bv), then a hint to the CPU that the n bytes starting
// [PrefetchDistance] past b are about to be written. It is made for a
// single writer filling a buffer front to back that claims each piece of n
// bytes (a) and marks its start (b) before writing it, as a log appender
// does:
//
//   - The two stores are one call, where two StoreRelease calls would make
//     the compiler spill and reload the caller's registers around each.
//   - The hint (PREFETCHW on amd64 CPUs that have it, for each cache line)
//     gets the lines' ownership coming while the writer is busy with the
//     lines before them. Without it, each store to a new line waits for the
//     line to arrive from memory, or from the core of a reader that just
//     looked at it, and the stores queued behind it stall the writer: at
//     64-byte frames that halved an IPC publisher's rate. Piece after piece,
//     the prefetches run PrefetchDistance ahead of the writes and reach
//     every line (a line that two pieces share, twice). A prefetch reads and
//     changes nothing the program can see and never faults, so addresses
//     past the end of the buffer (or of any mapping) are harmless.
//
// n is a piece, such as a frame (at most an MTU): the prefetches, one per
// 64 bytes, run in one stretch of assembly that the scheduler cannot
// preempt. A reader that sees bv (acquire) sees av too. It panics, before
// storing anything, if either word is of a read-only mapping.
func StoreReleasePairAndPrefetch(a Int64Word, av int64, b Int64Word, bv int64, n int) {
	if a.readOnly || b.readOnly {
		panic(readOnlyFault("StoreReleasePairAndPrefetch"))
	}
	storeRelease64PairPrefetch(a.p, av, b.p, bv, n)
}
