package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"syscall"

	"github.com/ferry-bridge/ferry/store"
)

// bbolt v1.4.3 maps a file that is shorter than its metadata says (a truncated copy or an
// interrupted restore) and faults on the first missing page. checkTruncation reads the
// meta pages first and refuses such a file with an error that says so. Layout, from
// go.etcd.io/bbolt internal/common (meta.go, page.go, types.go) at v1.4.3; the file is
// written in host byte order:
//
//	page header 16 bytes, then meta:
//	 0 magic u32 | 4 version u32 | 8 pageSize u32 | 12 flags u32 | 16 root 16 bytes |
//	32 freelist u64 | 40 pgid u64 (pages in use) | 48 txid u64 | 56 checksum u64 (FNV-64a of 0..56)
const (
	boltPageHeaderLen = 16
	boltMetaLen       = 64
	boltMagic         = 0xED0CDAED
	boltVersion       = 2
)

type boltMeta struct {
	pageSize, pgid, txid uint64
}

// readBoltMeta returns the meta stored at off, or ok false if it is absent or invalid.
func readBoltMeta(f *os.File, off int64) (m boltMeta, ok bool) {
	var b [boltPageHeaderLen + boltMetaLen]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return boltMeta{}, false
	}
	meta := b[boltPageHeaderLen:]
	h := fnv.New64a()
	h.Write(meta[:56])
	e := binary.NativeEndian
	if e.Uint32(meta[0:]) != boltMagic || e.Uint32(meta[4:]) != boltVersion || e.Uint64(meta[56:]) != h.Sum64() {
		return boltMeta{}, false
	}
	return boltMeta{pageSize: uint64(e.Uint32(meta[8:])), pgid: e.Uint64(meta[40:]), txid: e.Uint64(meta[48:])}, true
}

// checkTruncation refuses an existing file shorter than its newest valid meta page says,
// and an empty one: bbolt would initialise it as a new store, and every stream would start
// again from its configured start position (lesson 13). bbolt writes a new file's meta pages
// before Open returns, so an empty file is a store cut to nothing (a partial copy or
// restore), or one whose creation a crash interrupted. A missing file (a new store) and a
// file without a valid meta page (which bbolt itself refuses) pass.
func checkTruncation(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open checkpoint store %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("open checkpoint store %s: %w", path, err)
	}
	if info.Size() == 0 {
		if lockHeld(f) {
			// Being created: bbolt locks a new file before it writes its first pages.
			return fmt.Errorf("open checkpoint store %s: %w: another process holds it while creating it (a ferry starting with it?)", path, store.ErrLocked)
		}
		return &store.CorruptError{File: path, Reason: "the file is empty (if ferry never ran with it, a start that crashed while creating it: delete it)"}
	}
	m0, ok0 := readBoltMeta(f, 0)
	second := int64(os.Getpagesize())
	if ok0 {
		second = int64(m0.pageSize)
	}
	m1, ok1 := readBoltMeta(f, second)
	m := m0
	switch {
	case ok1 && (!ok0 || m1.txid > m0.txid):
		m = m1
	case !ok0:
		return nil
	}
	if need := m.pgid * m.pageSize; uint64(info.Size()) < need {
		return &store.CorruptError{File: path, Reason: fmt.Sprintf(
			"truncated: the file is %d bytes, its metadata says %d", info.Size(), need)}
	}
	return nil
}

// lockHeld reports whether another process (or another open of the file) holds bbolt's
// exclusive lock on f.
func lockHeld(f *os.File) bool {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}
