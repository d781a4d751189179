package shm

import (
	"fmt"
	"sync"
)

// Mode says how [Map] maps a file.
type Mode uint8

const (
	// ReadOnly maps the file for reading. Writes through the [Buffer]
	// accessors panic with an assertion; writes through [Buffer.Bytes]
	// crash the process.
	ReadOnly Mode = iota + 1
	// ReadWrite maps the file for reading and writing, shared with every
	// other process that maps it (MAP_SHARED).
	ReadWrite
)

// String returns "read-only" or "read-write".
func (m Mode) String() string {
	switch m {
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	default:
		return fmt.Sprintf("Mode(%d)", uint8(m))
	}
}

// Mapping is a file mapped into memory. Its bytes are available as a
// [Buffer] until [Mapping.Close].
//
// Mapping is safe for concurrent use. The caller must ensure that no
// goroutine still uses a Buffer obtained from the mapping when Close is
// called: after Close the memory is gone and touching it crashes the
// process (Aeron clients linger before unmapping for this reason). There is
// deliberately no finalizer-driven unmap, because a Buffer can outlive every
// reference to its Mapping.
type Mapping struct {
	path string
	mode Mode

	mu   sync.Mutex
	data []byte // nil once closed; guarded by mu
}

// Path returns the path of the mapped file.
func (m *Mapping) Path() string { return m.path }

// Mode returns how the file was mapped.
func (m *Mapping) Mode() Mode { return m.mode }

// Buffer returns the mapped bytes: the whole file as it was sized when
// mapped. After Close it returns an empty Buffer.
func (m *Mapping) Buffer() Buffer {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Buffer{b: m.data, readOnly: m.mode == ReadOnly}
}

// Close unmaps the file. It is idempotent: calls after the first return
// nil. If unmapping fails the mapping is still considered closed (retrying
// an munmap of the same range would be wrong) and the error is returned
// once.
func (m *Mapping) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.data == nil {
		return nil
	}
	data := m.data
	m.data = nil
	if err := munmap(data); err != nil {
		return fmt.Errorf("shm: unmap %s: %w", m.path, err)
	}
	return nil
}
