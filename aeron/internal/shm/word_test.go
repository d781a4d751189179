package shm

import "testing"

func TestWordsViewTheirBufferWord(t *testing.T) {
	b := Alloc(32)
	w64, w32 := b.Int64Word(8), b.Int32Word(20)
	w64.StoreRelease(-42)
	w32.StoreRelease(7)
	if got := b.LoadInt64(8); got != -42 {
		t.Errorf("LoadInt64(8) after Int64Word(8).StoreRelease(-42) = %d", got)
	}
	if got := b.LoadInt32(20); got != 7 {
		t.Errorf("LoadInt32(20) after Int32Word(20).StoreRelease(7) = %d", got)
	}
	b.StoreInt64(8, 5)
	b.StoreInt32(20, 6)
	if w64.Load() != 5 || w32.Load() != 6 {
		t.Errorf("words load %d and %d, want 5 and 6", w64.Load(), w32.Load())
	}
	// A word of a sub-buffer is the parent's word at the sum of the offsets.
	if got := b.Sub(8, 16).Int32Word(12).Load(); got != 6 {
		t.Errorf("Sub(8, 16).Int32Word(12) = %d, want the word at 20 (6)", got)
	}
}

func TestWordsAreCheckedWhenTaken(t *testing.T) {
	b := Alloc(32)
	shifted := Wrap(b.Bytes()[4:])
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"Int64Word at 4", func() { b.Int64Word(4) }},
		{"Int64Word on a 4-aligned base", func() { shifted.Int64Word(0) }},
		{"Int64Word straddling end", func() { b.Int64Word(28) }},
		{"Int64Word negative", func() { b.Int64Word(-8) }},
		{"Int32Word misaligned", func() { b.Int32Word(2) }},
		{"Int32Word past end", func() { b.Int32Word(32) }},
	} {
		mustPanicAssertion(t, tc.name, tc.fn)
	}
}

func TestStoreReleasePairAndPrefetchStoresBothWords(t *testing.T) {
	b := Alloc(64)
	StoreReleasePairAndPrefetch(b.Int64Word(0), 11, b.Int64Word(56), -12, 64)
	if got0, got56 := b.LoadInt64(0), b.LoadInt64(56); got0 != 11 || got56 != -12 {
		t.Errorf("words 0 and 56 = %d and %d, want 11 and -12", got0, got56)
	}
}

func TestStoreReleasePairAndPrefetchRefusesReadOnlyWordsBeforeStoring(t *testing.T) {
	rw := Alloc(16)
	ro := Buffer{b: rw.b, readOnly: true} // as a read-only mapping's
	for _, tc := range []struct {
		name string
		a, b Int64Word
	}{
		{"first read-only", ro.Int64Word(0), rw.Int64Word(8)},
		{"second read-only", rw.Int64Word(0), ro.Int64Word(8)},
	} {
		mustPanicAssertion(t, tc.name, func() { StoreReleasePairAndPrefetch(tc.a, 1, tc.b, 2, 0) })
		if rw.LoadInt64(0) != 0 || rw.LoadInt64(8) != 0 {
			t.Fatalf("%s: a word was stored before the panic", tc.name)
		}
	}
}
