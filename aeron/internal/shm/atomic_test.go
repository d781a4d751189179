package shm

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
)

func TestHostIsLittleEndian(t *testing.T) {
	// The atomic accessors use native order and the Get/Put accessors
	// little-endian order; they agree only on a little-endian host.
	b := Alloc(16)
	b.StoreInt64(0, 0x0102030405060708)
	if got := b.GetInt64(0); got != 0x0102030405060708 {
		t.Fatalf("GetInt64 after StoreInt64 = %#x: host is not little-endian", got)
	}
	b.PutInt32(8, -7)
	if got := b.LoadInt32(8); got != -7 {
		t.Fatalf("LoadInt32 after PutInt32 = %d: host is not little-endian", got)
	}
}

func TestAtomicAccessors(t *testing.T) {
	b := Alloc(32)
	b.StoreInt32(4, 11)
	if got := b.LoadInt32(4); got != 11 {
		t.Errorf("LoadInt32 = %d, want 11", got)
	}
	if old := b.SwapInt32(4, -11); old != 11 {
		t.Errorf("SwapInt32 returned %d, want 11", old)
	}
	if got := b.LoadInt32(4); got != -11 {
		t.Errorf("LoadInt32 after swap = %d, want -11", got)
	}
	b.StoreInt64(8, 100)
	if got := b.LoadInt64(8); got != 100 {
		t.Errorf("LoadInt64 = %d, want 100", got)
	}
	if b.CompareAndSwapInt64(8, 99, 200) {
		t.Error("CompareAndSwapInt64 succeeded with a wrong old value")
	}
	if got := b.LoadInt64(8); got != 100 {
		t.Errorf("value changed by a failed CAS: %d", got)
	}
	if !b.CompareAndSwapInt64(8, 100, 200) {
		t.Error("CompareAndSwapInt64 failed with the right old value")
	}
	if got := b.AddInt64(8, 5); got != 205 {
		t.Errorf("AddInt64 returned %d, want 205", got)
	}
	if got := b.GetInt64(8); got != 205 {
		t.Errorf("GetInt64 after atomics = %d, want 205", got)
	}
	b.Int32Word(16).StoreRelease(-7)
	if got := b.LoadInt32(16); got != -7 {
		t.Errorf("LoadInt32 after a release store of -7 = %d", got)
	}
	b.Int64Word(24).StoreRelease(-1 << 40)
	if got := b.LoadInt64(24); got != -1<<40 {
		t.Errorf("LoadInt64 after a release store = %d, want %d", got, int64(-1<<40))
	}
	if got := b.GetInt32(20); got != 0 {
		t.Errorf("the release store at 16 wrote beyond its 4 bytes: %d at 20", got)
	}
}

// A release store publishes what was written before it: a reader that sees
// the flag with an acquire load sees the data (the message-passing litmus
// test, across two goroutines). Round i writes slot i with plain stores and
// then stores the flag i with a release store; a reader that sees flag f
// reads slot f, which nobody writes again. On amd64 the store is a plain MOV
// in assembly: were the compiler free to sink the slot's stores below it, or
// the store not single-copy atomic, the reader would find a slot unwritten
// or a flag torn.
func TestStoreReleasePublishesEarlierStores(t *testing.T) {
	const rounds = 100_000
	const slot = 16 // bytes per round: an int64 and an int32 written plainly
	b := Alloc(16 + rounds*slot)
	done := make(chan struct{})
	flag, pair := b.Int32Word(0), b.Int64Word(8)
	go func() {
		defer close(done)
		for i := 1; i < rounds; i++ {
			b.PutInt64(16+i*slot, int64(i)*3)
			b.PutInt32(16+i*slot+8, int32(i))
			pair.StoreRelease(int64(i)<<32 | int64(i))
			flag.StoreRelease(int32(i))
		}
	}()
	seen := 0
	for last := int32(0); last < rounds-1; {
		f := b.LoadInt32(0)
		if f == last {
			continue
		}
		if f < last {
			t.Fatalf("flag went back from %d to %d", last, f)
		}
		data, small := b.GetInt64(16+int(f)*slot), b.GetInt32(16+int(f)*slot+8)
		if data != int64(f)*3 || small != f {
			t.Fatalf("saw flag %d but its slot holds %d and %d (want %d and %d)", f, data, small, int64(f)*3, f)
		}
		// The word stored just before the flag: at least round f, never torn.
		if w := b.LoadInt64(8); w>>32 != w&0xffffffff || w>>32 < int64(f) {
			t.Fatalf("saw flag %d, then the word released before it as %#x", f, w)
		}
		last = f
		seen++
	}
	<-done
	if seen == 0 {
		t.Fatal("the reader never saw a flag change")
	}
}

func TestAtomicAccessorsCheckAlignmentAndBounds(t *testing.T) {
	b := Alloc(32)
	shifted := Wrap(b.Bytes()[4:]) // offset 0 of this buffer is only 4-aligned
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"LoadInt32 misaligned", func() { b.LoadInt32(2) }},
		{"StoreInt32 misaligned", func() { b.StoreInt32(6, 0) }},
		{"SwapInt32 misaligned", func() { b.SwapInt32(1, 0) }},
		{"LoadInt64 at 4", func() { b.LoadInt64(4) }},
		{"StoreInt64 at 12", func() { b.StoreInt64(12, 0) }},
		{"CompareAndSwapInt64 at 4", func() { b.CompareAndSwapInt64(4, 0, 1) }},
		{"AddInt64 at 20", func() { b.AddInt64(20, 1) }},
		{"LoadInt64 on a 4-aligned base", func() { shifted.LoadInt64(0) }},
		{"LoadInt32 past end", func() { b.LoadInt32(32) }},
		{"LoadInt64 straddling end", func() { b.LoadInt64(28) }},
		{"StoreInt64 negative", func() { b.StoreInt64(-8, 0) }},
		{"AddInt64 past end", func() { b.AddInt64(32, 1) }},
	} {
		mustPanicAssertion(t, tc.name, tc.fn)
	}
	// A 4-aligned base is fine for 32-bit atomics.
	shifted.StoreInt32(0, 3)
	if got := b.LoadInt32(4); got != 3 {
		t.Fatalf("LoadInt32 through parent = %d, want 3", got)
	}
}

func TestLoadWordsAndStoreWordsRoundTrip(t *testing.T) {
	for n := 0; n <= 24; n++ {
		b := Alloc(40)
		for i := range b.Bytes() {
			b.Bytes()[i] = 0xAA // the zero-fill of the last word must be visible
		}
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i + 1)
		}
		b.StoreWords(8, src)
		if !bytes.Equal(b.Bytes()[8:8+n], src) {
			t.Fatalf("n=%d: stored % x, want % x", n, b.Bytes()[8:8+n], src)
		}
		end := 8 + roundUpToWord(n)
		for i := 8 + n; i < end; i++ {
			if b.Bytes()[i] != 0 {
				t.Fatalf("n=%d: byte %d of the last word = %#x, want zero fill", n, i, b.Bytes()[i])
			}
		}
		for i := end; i < b.Len(); i++ {
			if b.Bytes()[i] != 0xAA {
				t.Fatalf("n=%d: byte %d past the last word was overwritten", n, i)
			}
		}
		dst := make([]byte, n)
		b.LoadWords(8, dst)
		if !bytes.Equal(dst, src) {
			t.Fatalf("n=%d: loaded % x, want % x", n, dst, src)
		}
	}
}

func TestLoadWordsReadsNativeWords(t *testing.T) {
	b := Alloc(16)
	b.StoreInt64(0, 0x1122334455667788)
	dst := make([]byte, 3)
	b.LoadWords(0, dst)
	var want [8]byte
	binary.NativeEndian.PutUint64(want[:], 0x1122334455667788)
	if !bytes.Equal(dst, want[:3]) {
		t.Fatalf("LoadWords = % x, want % x", dst, want[:3])
	}
}

func TestLoadWordsAndStoreWordsCheckAlignmentAndBounds(t *testing.T) {
	b := Alloc(32)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"LoadWords misaligned", func() { b.LoadWords(4, make([]byte, 4)) }},
		{"StoreWords misaligned", func() { b.StoreWords(12, make([]byte, 4)) }},
		// One byte at 32 needs the word [32, 40), which is past the end.
		{"LoadWords last word past end", func() { b.LoadWords(32, make([]byte, 1)) }},
		{"StoreWords past end", func() { b.StoreWords(24, make([]byte, 9)) }},
		{"LoadWords negative", func() { b.LoadWords(-8, make([]byte, 1)) }},
	} {
		mustPanicAssertion(t, tc.name, tc.fn)
	}
	// Three bytes at 24 need the whole word [24, 32), which fits.
	b.LoadWords(24, make([]byte, 3))
	b.StoreWords(24, make([]byte, 8))
	b.LoadWords(32, nil) // empty copy at the end is fine
}

func TestAddInt64IsAtomicAcrossGoroutines(t *testing.T) {
	const (
		goroutines = 4
		increments = 2000
	)
	b := Alloc(8)
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range increments {
				b.AddInt64(0, 1)
			}
		})
	}
	wg.Wait()
	if got := b.LoadInt64(0); got != goroutines*increments {
		t.Fatalf("counter = %d, want %d", got, goroutines*increments)
	}
}
