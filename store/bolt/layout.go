package bolt

import (
	"bytes"
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
// interrupted restore) and faults on the first missing page. checkLayout reads the
// meta pages first and refuses such a file with an error that says so. Layout, from
// go.etcd.io/bbolt internal/common (meta.go, page.go, bucket.go, types.go) at v1.4.3; the
// file is written in host byte order:
//
//	page header 16 bytes: 0 id u64 | 8 flags u16 | 10 count u16 | 12 overflow u32; then meta:
//	 0 magic u32 | 4 version u32 | 8 pageSize u32 | 12 flags u32 | 16 root 16 bytes (its page
//	id u64 first) | 32 freelist u64 | 40 pgid u64 (pages in use) | 48 txid u64 |
//	56 checksum u64 (FNV-64a of 0..56)
//	branch page: count elements of 16 bytes after the header: pos u32 | ksize u32 | child
//	 page id u64; a key is ksize bytes at pos from its element's first byte
//	leaf page: count elements of 16 bytes: flags u32 (0x01: a bucket) | pos u32 | ksize u32 |
//	 vsize u32; key then value at pos from the element. A bucket's value is its root page id
//	 u64 and a sequence u64; root 0 means the bucket's one leaf page follows in the value
//	 (an inline bucket)
//	freelist page: count page ids u64 after the header; a count of 0xFFFF means the first
//	 u64 is the count and the ids follow it
//
// Only the meta pages carry a checksum, and bbolt trusts every other page as it reads it:
// a key whose size or position is damaged becomes a slice reaching past the page — past the
// mapped file into the Go heap, where the garbage collector meets it as a bad pointer and
// ends the process (a fatal error, which no recover catches); a damaged freelist makes
// bbolt's first commit free billions of pages (it allocates until the machine's memory is
// gone), or hand out a page the tree still holds, whose data the next commit overwrites.
// So before bbolt opens the file, checkLayout walks the tree the newest meta names (see
// layoutCheck) and the freelist, as far as they can be checked without bbolt.
const (
	boltPageHeaderLen = 16
	boltMetaLen       = 64
	boltMagic         = 0xED0CDAED
	boltVersion       = 2

	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltNoFreelist   = ^uint64(0)
	boltElementLen   = 16   // a branch or a leaf element
	boltBucketLeaf   = 0x01 // a leaf element's flag: its value is a bucket
	boltBucketLen    = 16   // a bucket's value before its inline page
	boltOverflowed   = 0xFFFF
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

// checkPage reads the header of page id, which the meta or a parent page names as a page
// of one of kinds (flags), in a file of m.pgid pages, and reports what is wrong with it ("" if
// nothing is): it must say it is that page, of that kind, and end inside the file. It
// returns the page's overflow, the pages it runs on for.
func checkPage(f *os.File, m boltMeta, id uint64, what string, kinds ...uint16) (overflow uint64, damage string) {
	if id < 2 || id >= m.pgid {
		return 0, fmt.Sprintf("the %s page is %d, outside the file's pages [2, %d)", what, id, m.pgid)
	}
	var h [boltPageHeaderLen]byte
	if _, err := f.ReadAt(h[:], int64(id*m.pageSize)); err != nil {
		return 0, fmt.Sprintf("the %s page %d cannot be read: %v", what, id, err)
	}
	e := binary.NativeEndian
	gotID, flags, overflow := e.Uint64(h[0:]), e.Uint16(h[8:]), uint64(e.Uint32(h[12:]))
	switch {
	case gotID != id:
		return 0, fmt.Sprintf("the %s page %d says it is page %d", what, id, gotID)
	case !slices.Contains(kinds, flags):
		return 0, fmt.Sprintf("the %s page %d has flags %#x", what, id, flags)
	case id+overflow >= m.pgid:
		return 0, fmt.Sprintf("the %s page %d runs %d pages past it, beyond the file's %d", what, id, overflow, m.pgid)
	}
	return overflow, ""
}

// checkLayout refuses an existing file shorter than its newest valid meta page says, one
// whose tree or freelist is damaged in a way bbolt would not see (see layoutCheck; the
// freelist is not checked for a read-only open, which never reads it), and an empty one:
// bbolt would initialise it as a new store, and every stream would start again from its
// configured start position (lesson 13). A missing file (a new store), and one with no valid
// meta page at offset 0 nor at any page size bbolt writes (which bbolt refuses itself),
// pass. It returns the newest meta's transaction id (0 for those): above boltNewTxid,
// something was committed to the file.
//
// The file is read under a shared lock, so that no writer commits meanwhile (a commit frees
// and reuses the pages the meta names): with a writer holding it (a ferry running with the
// file), checkLayout waits for the lock as bbolt would, up to timeout, and then fails with
// errLockTimeout. The lock is released before bbolt opens the file.
//
// An empty file may be one another ferry is creating: bbolt v1.4.3 creates the file, and
// only then locks it and writes its first pages. Found in that gap, it is not yet held, and
// refused as damage the advice would be to delete it, under the ferry creating it. So an
// empty file is looked at again, with the lock released in between, until the timeout: a
// creator takes the lock at once (bbolt retries it every 50ms) and the wait becomes the one
// for a writer above, or the file is written and checked. Empty for the whole timeout with
// no process holding it, it is a store cut to nothing (a partial copy or restore) or one
// whose creation a crash interrupted.
func checkLayout(path string, timeout time.Duration, readOnly bool) (txid uint64, err error) {
	// A flaw of the walk's own must not take the process down: the file is refused.
	defer recoverCorrupt(path, &err)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open checkpoint store %s: %w", path, err)
	}
	defer f.Close() // and with it the shared lock
	var info os.FileInfo
	for deadline := time.Now().Add(timeout); ; time.Sleep(lockPoll) {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
			return 0, fmt.Errorf("open checkpoint store %s: lock: %w", path, err)
		}
		if err != nil {
			if time.Now().After(deadline) {
				return 0, errLockTimeout
			}
			continue
		}
		if info, err = f.Stat(); err != nil {
			return 0, fmt.Errorf("open checkpoint store %s: %w", path, err)
		}
		if info.Size() > 0 {
			break
		}
		emptySeen()
		if time.Now().After(deadline) {
			return 0, &store.CorruptError{File: path, Reason: fmt.Sprintf("the file is empty, and no process took it up within %v, "+
				"as a ferry creating it would at once (if ferry never ran with it, a start that crashed while creating it: "+
				"with no ferry starting on it, delete it)", timeout)}
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN); err != nil {
			return 0, fmt.Errorf("open checkpoint store %s: unlock: %w", path, err)
		}
	}
	m0, ok0 := readBoltMeta(f, 0)
	var m1 boltMeta
	var ok1 bool
	if ok0 {
		m1, ok1 = readBoltMeta(f, int64(m0.pageSize))
	} else {
		// The first meta page torn: its page size, which says where the second is, with it.
		// bbolt then looks for the second at every page size it could have been written
		// with (a file from a host with larger pages), as here.
		for size := int64(1024); size <= 1024<<14 && !ok1; size <<= 1 {
			m1, ok1 = readBoltMeta(f, size)
			ok1 = ok1 && int64(m1.pageSize) == size
		}
	}
	m := m0
	switch {
	case ok1 && (!ok0 || m1.txid > m0.txid):
		m = m1
	case !ok0:
		return 0, nil // neither meta page valid: bbolt refuses the file itself
	}
	if need := m.pgid * m.pageSize; uint64(info.Size()) < need {
		return 0, &store.CorruptError{File: path, Reason: fmt.Sprintf(
			"truncated: the file is %d bytes, its metadata says %d", info.Size(), need)}
	}
	c := newLayoutCheck(f, m)
	if damage := c.tree(); damage != "" {
		return 0, &store.CorruptError{File: path, Reason: "damaged: " + damage}
	}
	if m.freelist == boltNoFreelist || readOnly { // a read-only bbolt never reads the freelist
		return m.txid, nil
	}
	if damage := c.freelist(); damage != "" {
		return 0, &store.CorruptError{File: path, Reason: "damaged: " + damage, Remedy: fmt.Sprintf(
			"its checkpoints are intact — only bbolt's list of free pages is damaged, which the next save "+
				"would act on: with ferry stopped, copy them into a new file with bbolt's own tool (go run "+
				"go.etcd.io/bbolt/cmd/bbolt@v1.4.3 compact -o %[1]s.new %[1]s), check the copy (ferry "+
				"checkpoint show with store.path set to it), and put it in the file's place", path)}
	}
	return m.txid, nil
}

// errLockTimeout is checkLayout's answer when another process held the file's lock for
// the whole open timeout.
var errLockTimeout = errors.New("lock not released")

// lockPoll is how often checkLayout tries the lock again while another process holds it,
// and looks again at an empty file.
const lockPoll = 10 * time.Millisecond

// emptySeen is called when checkLayout finds the file empty, holding its shared lock: a test
// replaces it to start a creator in the gap.
var emptySeen = func() {}

// layoutCheck walks the pages of a bbolt file before bbolt reads them: the tree of
// buckets from the root page the meta names down to every leaf, inline buckets included
// (tree), and the freelist (freelist, after tree). It checks what bbolt takes on trust and
// would misread: every page says it is the page its parent names, is of the kind expected,
// and ends inside the file; no page is held twice (a cycle, or two parents); every element
// and its key and value lie inside their page (or inline bucket); keys are not empty, and
// in order within a page and within the range their parent's keys give it (bbolt's own
// check: a branch's key i bounds its child i from below, its key i+1 from above), or a
// lookup goes to the wrong page; every free page id lies inside the file, once, and no
// free page is one the tree or the freelist holds. It reads each page once, a ferry store
// being a few pages per hundred recordings.
type layoutCheck struct {
	f    *os.File
	m    boltMeta
	held map[uint64]bool // the pages of the tree seen so far, overflow pages included
}

func newLayoutCheck(f *os.File, m boltMeta) *layoutCheck {
	return &layoutCheck{f: f, m: m, held: map[uint64]bool{}}
}

// tree reports the first damage found in the tree, "" if none.
func (c *layoutCheck) tree() string { return c.page(c.m.root, "root bucket's", nil, nil) }

// read checks the header of page id (see checkPage) and returns the page with its
// overflow pages.
func (c *layoutCheck) read(id uint64, what string, kinds ...uint16) ([]byte, string) {
	overflow, damage := checkPage(c.f, c.m, id, what, kinds...)
	if damage != "" {
		return nil, damage
	}
	b := make([]byte, (1+overflow)*c.m.pageSize)
	if _, err := c.f.ReadAt(b, int64(id*c.m.pageSize)); err != nil {
		return nil, fmt.Sprintf("the %s page %d cannot be read: %v", what, id, err)
	}
	return b, ""
}

// page checks page id of the tree, which its parent names as what, and the pages below it;
// its keys must lie in [lo, hi) (nil: unbounded). The recursion is as deep as the tree:
// each page is read once, and an inline bucket lies inside its parent's page.
func (c *layoutCheck) page(id uint64, what string, lo, hi []byte) string {
	b, damage := c.read(id, what, boltBranchPage, boltLeafPage)
	if damage != "" {
		return damage
	}
	for p := id; p < id+uint64(len(b))/c.m.pageSize; p++ {
		if c.held[p] {
			return fmt.Sprintf("page %d is named twice in the tree (the %s page %d reaches it)", p, what, id)
		}
		c.held[p] = true
	}
	return c.node(b, what, fmt.Sprintf("the %s page %d", what, id), lo, hi)
}

// node checks the elements of page b, a page of what (the bucket's tree it is in) whose keys
// must lie in [lo, hi); where says which page it is.
func (c *layoutCheck) node(b []byte, what, where string, lo, hi []byte) string {
	e := binary.NativeEndian
	kind, count := e.Uint16(b[8:]), int(e.Uint16(b[10:]))
	if boltPageHeaderLen+count*boltElementLen > len(b) {
		return fmt.Sprintf("%s: its %d elements run past its %d bytes", where, count, len(b))
	}
	var before []byte
	for i := range count {
		at := boltPageHeaderLen + i*boltElementLen
		el := b[at : at+boltElementLen]
		var flags, pos, ksize, vsize uint64
		if kind == boltBranchPage {
			pos, ksize = uint64(e.Uint32(el[0:])), uint64(e.Uint32(el[4:]))
		} else {
			flags, pos, ksize, vsize = uint64(e.Uint32(el[0:])), uint64(e.Uint32(el[4:])), uint64(e.Uint32(el[8:])), uint64(e.Uint32(el[12:]))
		}
		start := uint64(at) + pos
		if end := start + ksize + vsize; end > uint64(len(b)) {
			return fmt.Sprintf("%s: element %d's key and value (%d and %d bytes, at offset %d from the element) run past its %d bytes",
				where, i, ksize, vsize, pos, len(b))
		}
		key := b[start : start+ksize]
		switch {
		case ksize == 0:
			return fmt.Sprintf("%s: element %d's key is empty", where, i)
		case i > 0 && bytes.Compare(before, key) >= 0:
			return fmt.Sprintf("%s: element %d's %s is not after the %s before it", where, i, keyText(key), keyText(before))
		case lo != nil && bytes.Compare(key, lo) < 0, hi != nil && bytes.Compare(key, hi) >= 0:
			return fmt.Sprintf("%s: element %d's %s lies outside the keys the parent page gives it", where, i, keyText(key))
		}
		before = key
		var damage string
		switch {
		case kind == boltBranchPage:
			next := hi // child i holds the keys from key i up to key i+1
			if i+1 < count {
				nextAt := boltPageHeaderLen + (i+1)*boltElementLen
				npos, nsize := uint64(e.Uint32(b[nextAt:])), uint64(e.Uint32(b[nextAt+4:]))
				if nstart := uint64(nextAt) + npos; nstart+nsize <= uint64(len(b)) {
					next = b[nstart : nstart+nsize]
				} // else: element i+1 is refused when its turn comes
			}
			damage = c.page(e.Uint64(el[8:]), what, key, next)
		case flags&boltBucketLeaf != 0:
			damage = c.bucket(b[start+ksize:start+ksize+vsize], key)
		}
		if damage != "" {
			return damage
		}
	}
	return ""
}

// bucket checks bucket name, whose value is v: its root page, or its inline page.
func (c *layoutCheck) bucket(v, name []byte) string {
	name = name[:min(len(name), 32)]
	if len(v) < boltBucketLen {
		return fmt.Sprintf("the value of bucket %q is %d bytes, shorter than a bucket's %d", name, len(v), boltBucketLen)
	}
	what := fmt.Sprintf("bucket %q's", name)
	if root := binary.NativeEndian.Uint64(v); root != 0 {
		return c.page(root, what, nil, nil)
	}
	inline := v[boltBucketLen:]
	where := fmt.Sprintf("the %s inline page", what)
	if len(inline) < boltPageHeaderLen || binary.NativeEndian.Uint16(inline[8:]) != boltLeafPage {
		return fmt.Sprintf("%s is not a leaf page (%d bytes)", where, len(inline))
	}
	return c.node(inline, what, where, nil, nil)
}

// freelist checks the freelist page: its ids, inside the file, once each, and none the tree
// (walked before) or the freelist itself holds.
func (c *layoutCheck) freelist() string {
	b, damage := c.read(c.m.freelist, "freelist", boltFreelistPage)
	if damage != "" {
		return damage
	}
	pages := uint64(len(b)) / c.m.pageSize
	for p := c.m.freelist; p < c.m.freelist+pages; p++ {
		if c.held[p] {
			return fmt.Sprintf("the freelist's page %d is also a page of the tree", p)
		}
	}
	e := binary.NativeEndian
	first, count := uint64(0), uint64(e.Uint16(b[10:]))
	if count == boltOverflowed {
		first, count = 1, e.Uint64(b[boltPageHeaderLen:])
	}
	if room := uint64(len(b)-boltPageHeaderLen) / 8; count > room || first+count > room {
		return fmt.Sprintf("the freelist page %d lists %d pages, more than its %d bytes hold", c.m.freelist, count, len(b))
	}
	free := make(map[uint64]bool, count)
	for i := first; i < first+count; i++ {
		id := e.Uint64(b[boltPageHeaderLen+8*i:])
		switch {
		case free[id]:
			return fmt.Sprintf("the freelist page %d lists page %d twice", c.m.freelist, id)
		case id < 2 || id >= c.m.pgid:
			return fmt.Sprintf("the freelist page %d lists page %d, outside the file's pages [2, %d)", c.m.freelist, id, c.m.pgid)
		case c.held[id]:
			return fmt.Sprintf("the freelist page %d lists page %d, which the tree holds (the next commit would overwrite it)", c.m.freelist, id)
		case id >= c.m.freelist && id < c.m.freelist+pages:
			return fmt.Sprintf("the freelist page %d lists its own page %d", c.m.freelist, id)
		}
		free[id] = true
	}
	return ""
}
