package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/ferry-bridge/ferry/store"
)

// bbolt v1.4.3 maps a file that is shorter than its metadata says (a truncated copy or an
// interrupted restore) and faults on the first missing page. checkTruncation reads the
// meta pages first and refuses such a file with an error that says so. Layout, from
// go.etcd.io/bbolt internal/common (meta.go, page.go, types.go) at v1.4.3; the file is
// written in host byte order:
//
//	page header 16 bytes: 0 id u64 | 8 flags u16 | 10 count u16 | 12 overflow u32; then meta:
//	 0 magic u32 | 4 version u32 | 8 pageSize u32 | 12 flags u32 | 16 root 16 bytes (its page
//	id u64 first) | 32 freelist u64 | 40 pgid u64 (pages in use) | 48 txid u64 |
//	56 checksum u64 (FNV-64a of 0..56)
//
// Only the meta pages carry a checksum. checkLayout also checks the headers of the pages the
// newest meta names — the root bucket's and the freelist's — as far as they can be checked
// without bbolt: a damaged freelist header makes bbolt's first commit free billions of pages
// (it allocates until the machine's memory is gone), a damaged root header makes the store
// read as empty.
const (
	boltPageHeaderLen = 16
	boltMetaLen       = 64
	boltMagic         = 0xED0CDAED
	boltVersion       = 2

	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltNoFreelist   = ^uint64(0)
	// boltNewTxid is the newest transaction id of a file bbolt created (its two meta
	// pages, transactions 0 and 1) that nothing was ever committed to.
	boltNewTxid = 1
)

type boltMeta struct {
	pageSize, pgid, txid, root, freelist uint64
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
	return boltMeta{pageSize: uint64(e.Uint32(meta[8:])), pgid: e.Uint64(meta[40:]), txid: e.Uint64(meta[48:]),
		root: e.Uint64(meta[16:]), freelist: e.Uint64(meta[32:])}, true
}

// checkPage reports what is wrong with the header of page id, which the meta names as a page
// of one of kinds (flags), in a file of m.pgid pages: it must say it is that page, of that
// kind, and end inside the file. "" if nothing is.
func checkPage(f *os.File, m boltMeta, id uint64, what string, kinds ...uint16) string {
	if id < 2 || id >= m.pgid {
		return fmt.Sprintf("the %s page is %d, outside the file's pages [2, %d)", what, id, m.pgid)
	}
	var h [boltPageHeaderLen]byte
	if _, err := f.ReadAt(h[:], int64(id*m.pageSize)); err != nil {
		return fmt.Sprintf("the %s page %d cannot be read: %v", what, id, err)
	}
	e := binary.NativeEndian
	gotID, flags, overflow := e.Uint64(h[0:]), e.Uint16(h[8:]), uint64(e.Uint32(h[12:]))
	switch {
	case gotID != id:
		return fmt.Sprintf("the %s page %d says it is page %d", what, id, gotID)
	case !slices.Contains(kinds, flags):
		return fmt.Sprintf("the %s page %d has flags %#x", what, id, flags)
	case id+overflow >= m.pgid:
		return fmt.Sprintf("the %s page %d runs %d pages past it, beyond the file's %d", what, id, overflow, m.pgid)
	}
	return ""
}

// checkLayout refuses an existing file shorter than its newest valid meta page says, one
// whose root or freelist page header is damaged (see checkPage), and an empty one: bbolt
// would initialise it as a new store, and every stream would start again from its
// configured start position (lesson 13). bbolt writes a new file's meta pages before Open
// returns, so an empty file is a store cut to nothing (a partial copy or restore), or one
// whose creation a crash interrupted. A missing file (a new store), and one without a valid
// meta page where this host's page size puts them (which bbolt opens or refuses itself),
// pass. It returns the newest meta's transaction id (0 for those): above boltNewTxid,
// something was committed to the file.
//
// The file is read under a shared lock, so that no writer commits meanwhile (a commit frees
// and reuses the pages the meta names): with a writer holding it (a ferry running with the
// file), checkLayout waits for the lock as bbolt would, up to timeout, and then fails with
// errLockTimeout. The lock is released before bbolt opens the file.
func checkLayout(path string, timeout time.Duration) (txid uint64, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open checkpoint store %s: %w", path, err)
	}
	defer f.Close() // and with it the shared lock
	for deadline := time.Now().Add(timeout); ; {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return 0, fmt.Errorf("open checkpoint store %s: lock: %w", path, err)
		}
		if time.Now().After(deadline) {
			return 0, errLockTimeout
		}
		time.Sleep(lockPoll)
	}
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("open checkpoint store %s: %w", path, err)
	}
	if info.Size() == 0 {
		return 0, &store.CorruptError{File: path, Reason: "the file is empty (if ferry never ran with it, a start that crashed while creating it: delete it)"}
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
		// Neither meta page valid where this host's page size puts them: bbolt looks for
		// the second at every page size (a file from a host with larger pages) and opens it,
		// or refuses the file.
		return 0, nil
	}
	if need := m.pgid * m.pageSize; uint64(info.Size()) < need {
		return 0, &store.CorruptError{File: path, Reason: fmt.Sprintf(
			"truncated: the file is %d bytes, its metadata says %d", info.Size(), need)}
	}
	damage := checkPage(f, m, m.root, "root bucket's", boltBranchPage, boltLeafPage)
	if damage == "" && m.freelist != boltNoFreelist {
		damage = checkPage(f, m, m.freelist, "freelist", boltFreelistPage)
	}
	if damage != "" {
		return 0, &store.CorruptError{File: path, Reason: "damaged: " + damage}
	}
	return m.txid, nil
}

// errLockTimeout is checkLayout's answer when another process held the file's lock for
// the whole open timeout.
var errLockTimeout = errors.New("lock not released")

// lockPoll is how often checkLayout tries the lock again while another process holds it.
const lockPoll = 10 * time.Millisecond
