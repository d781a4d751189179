package cnc

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/ferry-bridge/ferry/aeron/internal/ringbuffer"
	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// File is a validated CnC image: its header and its sections. The
// sections are shared memory; they stay valid until [File.Close].
//
// File is safe for concurrent use; what callers do with the sections is
// governed by the packages that interpret them.
type File struct {
	source   string
	mapping  *shm.Mapping // nil when wrapping caller memory
	header   Header
	sections [sectionCount]shm.Buffer
	toDriver *ringbuffer.ManyToOne
}

// Map maps <dir>/cnc.dat read-write (a client writes commands and its
// heartbeat through it) and validates it as [Wrap] does. Errors wrap
// [ErrDriverNotFound] if the file does not exist, [ErrNotReady] if it is
// empty or not yet initialised, and otherwise as [Wrap]'s; I/O errors are
// returned wrapped with the path.
func Map(dir string) (*File, error) {
	return mapFile(dir, shm.ReadWrite)
}

// MapReadOnly is [Map] for observers (tools in the spirit of AeronStat) that
// only read counters and the error log. Writing to its sections panics.
func MapReadOnly(dir string) (*File, error) {
	return mapFile(dir, shm.ReadOnly)
}

func mapFile(dir string, mode shm.Mode) (*File, error) {
	path := filepath.Join(dir, FileName)
	m, err := shm.Map(path, mode)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w: %w", ErrDriverNotFound, err)
	case errors.Is(err, shm.ErrEmptyFile):
		return nil, fmt.Errorf("%w: %w", ErrNotReady, err)
	case err != nil:
		return nil, fmt.Errorf("cnc: %w", err)
	}
	f, err := wrap(m.Buffer(), path)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	f.mapping = m
	return f, nil
}

// Wrap validates a CnC image held in b (for example one built in memory by
// a test) without mapping anything; [File.Close] then does nothing. Besides
// [ReadHeader]'s errors it returns one wrapping [ErrTruncated] if a section
// ends past b, and one wrapping [ErrCorrupt] if the to-driver section is not
// a ring buffer.
func Wrap(b shm.Buffer) (*File, error) {
	return wrap(b, "CnC buffer")
}

func wrap(b shm.Buffer, source string) (*File, error) {
	h, err := ReadHeader(b, source)
	if err != nil {
		return nil, err
	}
	if required := h.RequiredLength(); required > int64(b.Len()) {
		return nil, fmt.Errorf("%w: %s is %d bytes, its header declares %d", ErrTruncated, source, b.Len(), required)
	}
	f := &File{source: source, header: h}
	for s := range Section(sectionCount) {
		f.sections[s] = b.Sub(int(h.SectionOffset(s)), int(h.SectionLengths[s])) // inside b: checked above
	}
	f.toDriver, err = ringbuffer.New(f.sections[ToDriver])
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, source, err)
	}
	return f, nil
}

// Path returns the mapped file's path, or a description of the wrapped
// buffer.
func (f *File) Path() string { return f.source }

// Header returns the header read when the file was mapped.
func (f *File) Header() Header { return f.header }

// Section returns a section's bytes.
func (f *File) Section(s Section) shm.Buffer {
	if s < 0 || s >= sectionCount {
		panic(fmt.Sprintf("assertion failed: cnc: no section %v", s))
	}
	return f.sections[s]
}

// ToDriver returns the to-driver ring buffer, validated by Map or Wrap.
func (f *File) ToDriver() *ringbuffer.ManyToOne { return f.toDriver }

// DriverHeartbeat returns the driver's last heartbeat (the to-driver ring's
// consumer heartbeat) in epoch milliseconds: 0 before the driver's first
// duty cycle, -1 once it has shut down.
func (f *File) DriverHeartbeat() int64 { return f.toDriver.ConsumerHeartbeatTime() }

// Close unmaps the file. It is idempotent. No section may be used after it.
func (f *File) Close() error {
	if f.mapping == nil {
		return nil
	}
	return f.mapping.Close()
}
