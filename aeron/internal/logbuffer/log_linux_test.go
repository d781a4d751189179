package logbuffer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// writeLogFile writes a log initialised in memory to a file, as the driver
// creates one, and returns its path.
func writeLogFile(t *testing.T, p LogParams) string {
	t.Helper()
	b := shm.Alloc(LogLength(p.TermLength, p.PageSize))
	if err := InitMetadata(b, p); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "1-2.logbuffer")
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A log written through one mapping is read through another: offers go
// to the file.
func TestOpenMapsFileReadWrite(t *testing.T) {
	path := writeLogFile(t, testParams())
	pubLog, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	subLog, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := errors.Join(pubLog.Close(), subLog.Close(), subLog.Close()); err != nil {
			t.Error(err)
		}
	})
	if subLog.Source() != path || subLog.TermLength() != testTermLength {
		t.Errorf("Source %q, TermLength %d", subLog.Source(), subLog.TermLength())
	}

	a := newTestAppender(t, pubLog)
	pos, err := a.Offer(Flow{Limit: 1 << 20, Connected: true}, []byte("over the file"))
	if err != nil || pos != 64 {
		t.Fatalf("Offer = %v, %v", pos, err)
	}
	var got string
	n, next, err := subLog.Poll(0, noLimit, func(payload []byte, h Header) { got = string(payload) })
	if err != nil || n != 1 || next != 64 || got != "over the file" {
		t.Errorf("Poll = %d, %d, %v, payload %q", n, next, err, got)
	}
}

func TestOpenErrors(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "missing.logbuffer"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want fs.ErrNotExist", err)
	}

	truncated := filepath.Join(t.TempDir(), "truncated.logbuffer")
	if err := os.WriteFile(truncated, make([]byte, MinPageSize), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(truncated); !errors.Is(err, ErrInvalidLog) {
		t.Errorf("Open(zeroed page) = %v, want ErrInvalidLog", err)
	}
}

func TestAppenderRefusesReadOnlyLog(t *testing.T) {
	m, err := shm.Map(writeLogFile(t, testParams()), shm.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	l, err := Wrap(m.Buffer())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewExclusiveAppender(l); !errors.Is(err, ErrReadOnly) {
		t.Errorf("NewExclusiveAppender(read-only) = %v, want ErrReadOnly", err)
	}
	// Reading a read-only log works.
	if n, next, err := l.Poll(0, noLimit, func([]byte, Header) {}); n != 0 || next != 0 || err != nil {
		t.Errorf("Poll(read-only, empty) = %d, %d, %v", n, next, err)
	}
}
