package shm

import "sync/atomic"

// Int32Word and Int64Word are single aligned words of a Buffer, checked
// (range, alignment) once when they are taken, for the words a hot path
// touches on every message: a log's tails, a frame's first word, a
// counter's value. Their accessors check nothing but writability, so each
// inlines into its caller, and a release store costs one call to a MOV
// (release_amd64.s) instead of a call to a checking accessor that calls
// the MOV. They follow the ordering rules of the Buffer accessors of the
// same names and, like a Buffer, are valid only while the memory they view
// is: a word of a mapping must not be used after the mapping is closed.
// The zero value is no word; using it panics.

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

// StoreRelease is [Buffer.StoreReleaseInt32] of the word.
func (w Int32Word) StoreRelease(v int32) {
	if w.readOnly {
		panic(readOnlyFault("Int32Word.StoreRelease"))
	}
	storeRelease32(w.p, v)
}

// Load is [Buffer.LoadInt64] of the word.
func (w Int64Word) Load() int64 { return atomic.LoadInt64(w.p) }

// StoreRelease is [Buffer.StoreReleaseInt64] of the word.
func (w Int64Word) StoreRelease(v int64) {
	if w.readOnly {
		panic(readOnlyFault("Int64Word.StoreRelease"))
	}
	storeRelease64(w.p, v)
}
