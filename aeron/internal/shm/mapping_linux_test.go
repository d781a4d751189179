package shm

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

func writeFile(t *testing.T, content []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mapped.dat")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMapReadWriteIsSharedWithTheFile(t *testing.T) {
	content := make([]byte, 4096+16)
	content[0] = 0x42
	path := writeFile(t, content)

	m, err := Map(path, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	if m.Path() != path || m.Mode() != ReadWrite {
		t.Fatalf("Path/Mode = %q/%v", m.Path(), m.Mode())
	}
	b := m.Buffer()
	if b.Len() != len(content) || b.ReadOnly() {
		t.Fatalf("Buffer len=%d readOnly=%v", b.Len(), b.ReadOnly())
	}
	if addr := uintptr(unsafe.Pointer(&b.Bytes()[0])); addr%4096 != 0 {
		t.Fatalf("mapping starts at %#x, not page aligned", addr)
	}
	if got := b.GetUint8(0); got != 0x42 {
		t.Fatalf("first byte = %#x, want the file's 0x42", got)
	}
	b.StoreInt64(4096, 0x0A0B0C0D)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if m.Buffer().Len() != 0 {
		t.Fatal("Buffer after Close is not empty")
	}

	onDisk, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{0x0D, 0x0C, 0x0B, 0x0A, 0, 0, 0, 0}
	if !bytes.Equal(onDisk[4096:4104], want) {
		t.Fatalf("file bytes = % x, want % x (MAP_SHARED write lost)", onDisk[4096:4104], want)
	}
}

func TestMapReadOnly(t *testing.T) {
	path := writeFile(t, []byte{1, 2, 3, 4, 5, 6, 7, 8})
	m, err := Map(path, ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	b := m.Buffer()
	if !b.ReadOnly() {
		t.Fatal("read-only mapping gave a writable Buffer")
	}
	if got := b.GetInt32(4); got != 0x08070605 {
		t.Fatalf("GetInt32 = %#x", got)
	}
	mustPanicAssertion(t, "write to read-only mapping", func() { b.PutInt32(0, 0) })
	mustPanicAssertion(t, "release store to a word of a read-only mapping", func() { b.Int32Word(4).StoreRelease(0) })
	mustPanicAssertion(t, "release store to a word of a read-only mapping", func() { b.Int64Word(0).StoreRelease(0) })
	if got := b.Int32Word(4).Load(); got != 0x08070605 {
		t.Fatalf("Int32Word(4).Load = %#x", got)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	m, err := Map(writeFile(t, make([]byte, 64)), ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := m.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
}

func TestMapErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.dat")
	if _, err := Map(missing, ReadWrite); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist naming the path", err)
	}
	empty := writeFile(t, nil)
	if _, err := Map(empty, ReadOnly); !errors.Is(err, ErrEmptyFile) {
		t.Errorf("empty file: err = %v, want ErrEmptyFile", err)
	}
	if _, err := Map(empty, Mode(0)); err == nil || !strings.Contains(err.Error(), "Mode(0)") {
		t.Errorf("invalid mode: err = %v", err)
	}
	if _, err := Map(dir, ReadOnly); err == nil {
		t.Error("mapping a directory succeeded")
	}
}

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want string
	}{{ReadOnly, "read-only"}, {ReadWrite, "read-write"}, {Mode(9), "Mode(9)"}} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", tc.m, got, tc.want)
		}
	}
}

// The prefetches of StoreReleasePairAndPrefetch reach past the word it stores; at the end
// of a mapping that is memory the process may not touch (here a guard page, then whatever
// follows the mapping), which a prefetch must ignore. (Under the race detector, or on a CPU
// without PREFETCHW, there are no prefetches and this only checks the stores.)
func TestStoreReleasePairAndPrefetchAtTheEndOfAMappingDoesNotFault(t *testing.T) {
	const page = 4096
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil { // a guard page
		t.Fatal(err)
	}
	b := Wrap(mem[:page])
	for off := page - PrefetchDistance; off < page; off += 8 {
		StoreReleasePairAndPrefetch(b.Int64Word(0), int64(off), b.Int64Word(off), -1, page)
	}
	if b.LoadInt64(0) != page-8 || b.LoadInt64(page-8) != -1 {
		t.Errorf("words 0 and %d = %d and %d", page-8, b.LoadInt64(0), b.LoadInt64(page-8))
	}
}
