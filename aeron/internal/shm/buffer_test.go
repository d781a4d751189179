package shm

import (
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"
)

// mustPanicAssertion runs fn and fails the test unless it panics with a
// message (a string, or an error's text) that starts with "assertion failed:".
func mustPanicAssertion(t *testing.T, name string, fn func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: did not panic", name)
			return
		}
		msg, ok := r.(string)
		if err, isErr := r.(error); isErr {
			msg, ok = err.Error(), true
		}
		if !ok || !strings.HasPrefix(msg, "assertion failed:") {
			t.Errorf("%s: panic %v, want a message starting with %q", name, r, "assertion failed:")
		}
	}()
	fn()
}

func TestAllocIsAlignedZeroedAndExact(t *testing.T) {
	for n := 1; n <= 70; n++ {
		b := Alloc(n)
		if b.Len() != n {
			t.Fatalf("Alloc(%d).Len() = %d", n, b.Len())
		}
		if addr := uintptr(unsafe.Pointer(&b.Bytes()[0])); addr%wordSize != 0 {
			t.Fatalf("Alloc(%d) starts at %#x, not 8-byte aligned", n, addr)
		}
		for i, c := range b.Bytes() {
			if c != 0 {
				t.Fatalf("Alloc(%d)[%d] = %d, want 0", n, i, c)
			}
		}
		if cap(b.Bytes()) != n {
			t.Fatalf("Alloc(%d) has cap %d: bytes past the end are reachable", n, cap(b.Bytes()))
		}
	}
	if got := Alloc(0).Len(); got != 0 {
		t.Fatalf("Alloc(0).Len() = %d", got)
	}
	mustPanicAssertion(t, "Alloc(-1)", func() { Alloc(-1) })
}

func TestLittleEndianAccessorsWriteLittleEndianBytes(t *testing.T) {
	b := Alloc(16)
	b.PutInt32(0, 0x01020304)
	b.PutInt64(8, 0x0102030405060708)
	want := []byte{4, 3, 2, 1, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}
	if string(b.Bytes()) != string(want) {
		t.Fatalf("bytes = % x, want % x", b.Bytes(), want)
	}
	b.PutUint16(4, 0xBEEF)
	b.PutUint8(6, 0x7F)
	if got := b.GetUint16(4); got != 0xBEEF {
		t.Errorf("GetUint16 = %#x", got)
	}
	if got := b.Bytes()[4]; got != 0xEF {
		t.Errorf("low byte of uint16 = %#x, want 0xef", got)
	}
	if got := b.GetUint8(6); got != 0x7F {
		t.Errorf("GetUint8 = %#x", got)
	}
	if got := b.GetInt32(0); got != 0x01020304 {
		t.Errorf("GetInt32 = %#x", got)
	}
	if got := b.GetInt64(8); got != 0x0102030405060708 {
		t.Errorf("GetInt64 = %#x", got)
	}
	b.PutInt32(0, -2)
	if got := b.GetInt32(0); got != -2 {
		t.Errorf("GetInt32 after PutInt32(-2) = %d", got)
	}
}

func TestPlainAccessorsAreBoundsChecked(t *testing.T) {
	b := Alloc(16)
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"GetUint8 at len", func() { b.GetUint8(16) }},
		{"GetUint8 negative", func() { b.GetUint8(-1) }},
		{"PutUint8 at len", func() { b.PutUint8(16, 0) }},
		{"GetUint16 straddling end", func() { b.GetUint16(15) }},
		{"PutUint16 straddling end", func() { b.PutUint16(15, 0) }},
		{"GetInt32 straddling end", func() { b.GetInt32(13) }},
		{"PutInt32 negative", func() { b.PutInt32(-4, 0) }},
		{"GetInt64 straddling end", func() { b.GetInt64(9) }},
		{"PutInt64 huge offset", func() { b.PutInt64(math.MaxInt, 0) }},
	} {
		mustPanicAssertion(t, tc.name, tc.fn)
	}
	// The last valid positions do not panic.
	b.PutUint8(15, 1)
	b.PutUint16(14, 1)
	b.PutInt32(12, 1)
	b.PutInt64(8, 1)
}

func TestViewAndCheckRangeReturnErrors(t *testing.T) {
	b := Alloc(32)
	for _, tc := range []struct {
		name   string
		off, n int
		ok     bool
	}{
		{"whole", 0, 32, true},
		{"empty at end", 32, 0, true},
		{"middle", 8, 8, true},
		{"negative offset", -1, 4, false},
		{"negative length", 0, -1, false},
		{"past end", 30, 4, false},
		{"offset past end", 33, 0, false},
		{"overflowing sum", math.MaxInt, 1, false},
		{"huge length", 1, math.MaxInt, false},
	} {
		v, err := b.View(tc.off, tc.n)
		errRange := b.CheckRange(tc.off, tc.n)
		if tc.ok {
			if err != nil || errRange != nil {
				t.Errorf("%s: View err = %v, CheckRange err = %v, want nil", tc.name, err, errRange)
				continue
			}
			if v.Len() != tc.n {
				t.Errorf("%s: view length %d, want %d", tc.name, v.Len(), tc.n)
			}
			continue
		}
		var rangeErr *RangeError
		if !errors.As(err, &rangeErr) || !errors.Is(err, ErrOutOfRange) {
			t.Errorf("%s: View err = %v, want *RangeError wrapping ErrOutOfRange", tc.name, err)
			continue
		}
		if rangeErr.Offset != tc.off || rangeErr.Length != tc.n || rangeErr.Size != 32 {
			t.Errorf("%s: RangeError = %+v", tc.name, rangeErr)
		}
		if !errors.Is(errRange, ErrOutOfRange) {
			t.Errorf("%s: CheckRange err = %v, want ErrOutOfRange", tc.name, errRange)
		}
		if v.Len() != 0 {
			t.Errorf("%s: failed View returned %d bytes", tc.name, v.Len())
		}
	}
}

func TestViewAndSubAliasTheParent(t *testing.T) {
	b := Alloc(32)
	v, err := b.View(8, 16)
	if err != nil {
		t.Fatal(err)
	}
	v.PutInt64(0, 42)
	if got := b.GetInt64(8); got != 42 {
		t.Fatalf("write through View not visible in parent: got %d", got)
	}
	s := b.Sub(16, 8)
	s.PutInt64(0, 7)
	if got := v.GetInt64(8); got != 7 {
		t.Fatalf("write through Sub not visible in sibling view: got %d", got)
	}
	// A view cannot reach past its end even though the parent continues.
	mustPanicAssertion(t, "read past view end", func() { v.GetInt64(16) })
	if cap(v.Bytes()) != 16 {
		t.Fatalf("view cap = %d, want 16", cap(v.Bytes()))
	}
	mustPanicAssertion(t, "Sub out of range", func() { b.Sub(30, 4) })
}

func TestCheckAlignmentUsesTheRealAddress(t *testing.T) {
	b := Alloc(64)
	if err := b.CheckAlignment(8); err != nil {
		t.Fatalf("Alloc buffer: %v", err)
	}
	odd := Wrap(b.Bytes()[4:])
	if err := odd.CheckAlignment(4); err != nil {
		t.Fatalf("4-aligned view, 4-byte check: %v", err)
	}
	if err := odd.CheckAlignment(8); !errors.Is(err, ErrMisaligned) {
		t.Fatalf("4-aligned view, 8-byte check: err = %v, want ErrMisaligned", err)
	}
	if err := Wrap(nil).CheckAlignment(8); err != nil {
		t.Fatalf("empty buffer: %v", err)
	}
	mustPanicAssertion(t, "alignment 3", func() { _ = b.CheckAlignment(3) })
}

func TestReadOnlyBufferRejectsWrites(t *testing.T) {
	b := Alloc(16)
	ro := Buffer{b: b.Bytes(), readOnly: true}
	if !ro.ReadOnly() || b.ReadOnly() {
		t.Fatalf("ReadOnly flags: ro=%v rw=%v", ro.ReadOnly(), b.ReadOnly())
	}
	sub := ro.Sub(0, 8)
	if !sub.ReadOnly() {
		t.Fatal("Sub of a read-only buffer is writable")
	}
	view, err := ro.View(8, 8)
	if err != nil || !view.ReadOnly() {
		t.Fatalf("View of a read-only buffer: readOnly=%v err=%v", view.ReadOnly(), err)
	}
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"PutUint8", func() { ro.PutUint8(0, 1) }},
		{"PutUint16", func() { ro.PutUint16(0, 1) }},
		{"PutInt32", func() { ro.PutInt32(0, 1) }},
		{"PutInt64", func() { ro.PutInt64(0, 1) }},
		{"StoreInt32", func() { ro.StoreInt32(0, 1) }},
		{"SwapInt32", func() { ro.SwapInt32(0, 1) }},
		{"StoreInt64", func() { ro.StoreInt64(0, 1) }},
		{"CompareAndSwapInt64", func() { ro.CompareAndSwapInt64(0, 0, 1) }},
		{"AddInt64", func() { ro.AddInt64(0, 1) }},
		{"StoreWords", func() { ro.StoreWords(0, []byte{1}) }},
		{"Sub then PutInt64", func() { sub.PutInt64(0, 1) }},
	} {
		mustPanicAssertion(t, tc.name, tc.fn)
	}
	for i, c := range b.Bytes() {
		if c != 0 {
			t.Fatalf("byte %d changed to %d through a read-only buffer", i, c)
		}
	}
	// Reads still work.
	_ = ro.GetInt64(0)
	_ = ro.LoadInt64(8)
}
