package bolt_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/store/storetest"
)

// newestMeta returns the root bucket's and the freelist's page ids from the newest of the
// file's two meta pages (bbolt's layout: see layout.go).
func newestMeta(b []byte, ps int) (root, freelist uint64) {
	at := func(i int) (txid, root, freelist uint64) {
		m := b[i*ps+16:]
		e := binary.NativeEndian
		return e.Uint64(m[48:]), e.Uint64(m[16:]), e.Uint64(m[32:])
	}
	t0, r0, f0 := at(0)
	t1, r1, f1 := at(1)
	if t1 > t0 {
		return r1, f1
	}
	return r0, f0
}

// openLoad opens path and loads "orders", with a bound on time and memory: damage can make
// bbolt allocate without end, and a test must fail rather than take the machine down.
func openLoad(t *testing.T, path string) (store.State, error) {
	t.Helper()
	type result struct {
		st  store.State
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := bolt.Open(path, &bolt.Options{OpenTimeout: 100 * time.Millisecond})
		if err != nil {
			done <- result{err: err}
			return
		}
		st, err := s.Load(storetest.Def("orders"))
		done <- result{st, errors.Join(err, s.Close())}
	}()
	var ms runtime.MemStats
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		select {
		case r := <-done:
			return r.st, r.err
		case <-time.After(50 * time.Millisecond):
		}
		if runtime.ReadMemStats(&ms); ms.Sys > 1<<30 {
			t.Fatalf("opening the damaged file has taken %d MiB of memory and goes on", ms.Sys>>20)
		}
	}
	t.Fatal("opening the damaged file took more than 20 s")
	return store.State{}, nil
}

// Damage to the headers of the pages the meta names (bbolt checksums only the meta pages)
// fails the open, naming the file: a root page whose element count is lost no longer reads
// as a new, empty store (every stream would start again from its start position), and a
// freelist page said to run past the file no longer has bbolt's first commit free
// billions of pages.
func TestLesson13_DamagedPageHeadersFailOpen(t *testing.T) {
	ps := os.Getpagesize()
	for _, tc := range []struct {
		name   string
		damage func(b []byte, root, freelist int)
	}{
		{"the root page's element count zeroed", func(b []byte, root, _ int) { b[root*ps+10], b[root*ps+11] = 0, 0 }},
		{"the root page naming another page", func(b []byte, root, _ int) { b[root*ps] ^= 0x01 }},
		{"the root page's kind", func(b []byte, root, _ int) { b[root*ps+8] = 0x10 }},
		{"the freelist page running past the file", func(b []byte, _, freelist int) { b[freelist*ps+15] ^= 0xFF }},
		{"the freelist page's kind", func(b []byte, _, freelist int) { b[freelist*ps+8] = 0x02 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := seeded(t)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			root, freelist := newestMeta(b, ps)
			tc.damage(b, int(root), int(freelist))
			writeFile(t, path, b)
			st, err := openLoad(t, path)
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Open and Load: %+v, %v; want ErrCorrupt", st, err)
			}
			wantMentions(t, err, path, "damaged")
		})
	}
}

// A file something was committed to that holds no ferry schema is damaged, or is not a
// checkpoint store (another program's bbolt file at store.path): refused, not taken as new.
// A file bbolt created that nothing was committed to (a first start that ended before it
// wrote the schema) is new.
func TestLesson13_AFileWrittenToWithoutASchemaIsNotANewStore(t *testing.T) {
	other := filepath.Join(t.TempDir(), "other.db")
	editRaw(t, other, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("sessions"))
		if err == nil {
			err = b.Put([]byte("k"), []byte("v"))
		}
		return err
	})
	if _, err := bolt.Open(other, nil); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of another program's bbolt file: %v; want ErrCorrupt", err)
	} else {
		wantMentions(t, err, other, "not a ferry checkpoint store")
	}

	fresh := filepath.Join(t.TempDir(), "checkpoints.db")
	db, err := bbolt.Open(fresh, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, fresh)
	storetest.MustSave(t, s, storetest.Def("orders"), ckpt(3, 64))
	storetest.WantCheckpoints(t, s, storetest.Def("orders"), ckpt(3, 64))
}

// A stream's bucket gone from a file that records the stream as saved is damage, not a
// stream never saved (which would start again from its start position); after a reset it
// is a stream never saved.
func TestLesson13_AStreamLostFromTheFileIsDamageNotAbsence(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error { return tx.Bucket([]byte("streams")).DeleteBucket([]byte("orders")) })
	s := openStore(t, path)
	var ce *store.CorruptError
	if _, err := s.Load(storetest.Def("orders")); !errors.As(err, &ce) || ce.Key != "stream bucket" {
		t.Fatalf("Load: %v; want a CorruptError at the stream bucket", err)
	} else {
		wantMentions(t, err, path, store.ResetCommand("orders"))
	}
	if err := s.Reset("orders"); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Load(storetest.Def("orders")); err != nil || st.Stored {
		t.Fatalf("Load after the reset: %+v, %v; want nothing stored", st, err)
	}
}

// A save does not make a lost stream's bucket anew: it would hold that batch alone, and the
// next start would take it for all the stream has (the recordings it lost left out as
// skipped). The bucket lost while ferry runs, the save fails as Load does, and Load still
// reports the damage.
func TestLesson13_ASaveDoesNotRecreateALostStream(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error { return tx.Bucket([]byte("streams")).DeleteBucket([]byte("orders")) })
	s := openStore(t, path)
	var ce *store.CorruptError
	if err := s.Save(storetest.Def("orders"), []store.Checkpoint{ckpt(7, 8192)}); !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) || ce.Key != "stream bucket" {
		t.Errorf("Save: %v; want a CorruptError at the stream bucket", err)
	} else {
		wantMentions(t, err, path, store.ResetCommand("orders"))
	}
	if st, err := s.Load(storetest.Def("orders")); !errors.As(err, &ce) || ce.Key != "stream bucket" {
		t.Fatalf("Load after the save: %+v, %v; want a CorruptError at the stream bucket", st, err)
	}
}

// Checkpoints are never deleted one by one: fewer found than were saved is damage (a
// recording's checkpoint lost would have it published again from its start), not a
// smaller state. A file written before the count was kept is counted at its next save.
func TestLesson13_ALostCheckpointIsDamageNotFewerCheckpoints(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error { return recordings(tx).Delete(recordingKey(7)) })
	wantLoadCorrupt(t, path, "recordings")

	old := seeded(t)
	editRaw(t, old, func(tx *bbolt.Tx) error { // as a ferry before the count wrote it
		return tx.Bucket([]byte("streams")).Bucket([]byte("orders")).Delete([]byte("count"))
	})
	s := openStore(t, old)
	storetest.WantCheckpoints(t, s, storetest.Def("orders"), ckpt(3, 64), ckpt(7, 4096))
	storetest.MustSave(t, s, storetest.Def("orders"), ckpt(9, 32))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	editRaw(t, old, func(tx *bbolt.Tx) error { return recordings(tx).Delete(recordingKey(3)) })
	wantLoadCorrupt(t, old, "recordings")
}

// The version byte of a value is not under its checksum: a version no ferry writes (below
// the first) is damage, not "a newer ferry wrote it" (which would have the operator look
// for a release that does not exist, and a reset refuse without --force).
func TestLesson13_AValueVersionNoFerryWritesIsDamage(t *testing.T) {
	path := seeded(t)
	setValueVersion(t, path, 7, 0)
	wantLoadCorrupt(t, path, "recording 7")
}

// One bit flipped in a version byte — a value's, whose version 1 checksum does not cover it,
// or the file's schema version, which has none — is damage, not a newer ferry's data: the
// error must not send the operator to a release that does not exist, and must let the way
// out it names work (a stream's reset; for the file, which no command opens, moving it
// aside). Read-only opens (ferry checkpoint show) say the same.
func TestLesson13_ABitFlippedInAVersionIsDamageNotANewerFerry(t *testing.T) {
	flipped := func(v []byte, at, bit int) []byte {
		v = slices.Clone(v)
		v[at] ^= 1 << bit
		return v
	}
	for _, key := range []string{"definition", "recording 7"} {
		for bit := range 8 {
			path := seeded(t)
			editRaw(t, path, func(tx *bbolt.Tx) error {
				if key == "definition" {
					sb := tx.Bucket([]byte("streams")).Bucket([]byte("orders"))
					return sb.Put([]byte("definition"), flipped(sb.Get([]byte("definition")), 1, bit))
				}
				return recordings(tx).Put(recordingKey(7), flipped(recordings(tx).Get(recordingKey(7)), 1, bit))
			})
			for _, ro := range []bool{true, false} {
				s, err := bolt.Open(path, &bolt.Options{ReadOnly: ro})
				if err != nil {
					t.Fatal(err)
				}
				_, err = s.Load(storetest.Def("orders"))
				var ce *store.CorruptError
				if !errors.As(err, &ce) || errors.Is(err, store.ErrUnknownVersion) || ce.Key != key {
					t.Errorf("%s, version bit %d flipped, read-only %v: Load = %v; want a *CorruptError of %s", key, bit, ro, err, key)
				}
				if !ro {
					if err := s.Reset("orders"); err != nil { // the way out the error names
						t.Errorf("%s, version bit %d flipped: Reset = %v", key, bit, err)
					}
				}
				_ = s.Close()
			}
		}
	}
	for bit := range 32 {
		path := seeded(t)
		editRaw(t, path, func(tx *bbolt.Tx) error {
			meta := tx.Bucket([]byte("meta"))
			return meta.Put([]byte("schema_version"), flipped(meta.Get([]byte("schema_version")), 3-bit/8, bit%8))
		})
		for _, ro := range []bool{true, false} {
			s, err := bolt.Open(path, &bolt.Options{ReadOnly: ro})
			if s != nil || !errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrUnknownVersion) {
				t.Fatalf("schema version bit %d flipped, read-only %v: Open = %v, %v; want a *CorruptError", bit, ro, s, err)
			}
			wantMentions(t, err, path, "move it aside")
		}
	}
}

// A reset through a store whose file was deleted or replaced under it fails: deleting the
// stream from the file ferry opened would leave it in the one at the path, and the
// read-back (of the opened file) would call that verified.
func TestResetFailsWhenTheFileWasReplaced(t *testing.T) {
	path := seeded(t)
	s := openStore(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, path+".old"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, b) // restored from a copy under the running store
	if err := s.Reset("orders"); !errors.Is(err, store.ErrReplaced) {
		t.Fatalf("Reset: %v; want ErrReplaced", err)
	}
}

// A damaged page can make bbolt hand out a key of many kilobytes: an error names at most
// its first bytes, not all of it (nor what follows it in memory).
func TestAnErrorNamesAKeyShortly(t *testing.T) {
	path := seeded(t)
	long := []byte(strings.Repeat("k", 30_000))
	editRaw(t, path, func(tx *bbolt.Tx) error { return recordings(tx).Put(long, []byte("v")) })
	s := openStore(t, path)
	_, err := s.Load(storetest.Def("orders"))
	if !errors.Is(err, store.ErrCorrupt) || len(err.Error()) > 1_000 {
		t.Fatalf("Load: an error of %d bytes (%v); want ErrCorrupt, short", len(err.Error()), errors.Is(err, store.ErrCorrupt))
	}
}

// A second opener (a second ferry, `ferry checkpoint show`) while ferry saves is told the
// store is held, never that it is damaged: the pages the checks read are not read while
// a writer holds the file (its commits free and reuse them). The saves go on all along.
func TestASecondOpenerWhileFerrySavesIsToldItIsHeld(t *testing.T) {
	path := seeded(t)
	s := openStore(t, path)
	var stop atomic.Bool
	saved := make(chan error, 1)
	go func() {
		var err error
		for i := int64(1); !stop.Load() && err == nil; i++ {
			cps := []store.Checkpoint{ckpt(3, 64+i*64), ckpt(7, 4096+i*64)}
			for j := range int64(20) { // new recordings, many: pages freed and reused at every commit
				cps = append(cps, ckpt(100+j+i%50*20, 64+i*64))
			}
			err = s.Save(storetest.Def("orders"), cps)
		}
		saved <- err
	}()
	opens := 0
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); opens++ {
		for _, readOnly := range []bool{false, true} {
			o, err := bolt.Open(path, &bolt.Options{ReadOnly: readOnly, OpenTimeout: time.Microsecond})
			if err == nil {
				_ = o.Close()
				stop.Store(true)
				t.Fatal("opened a store another opener holds")
			}
			if !errors.Is(err, store.ErrLocked) {
				stop.Store(true)
				t.Fatalf("open %d (read only %t) while ferry saves: %v; want ErrLocked", opens, readOnly, err)
			}
		}
	}
	stop.Store(true)
	if err := <-saved; err != nil {
		t.Fatalf("a save failed: %v", err)
	}
}

// holdFor holds bbolt's lock on path (an exclusive flock, as a running ferry holds it)
// through a descriptor of its own, and lets go after d.
func holdFor(t *testing.T, path string, d time.Duration) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(d, func() { _ = f.Close() })
}

// A file another process holds when ferry opens it is checked once that process lets go,
// before bbolt opens it: an empty one (cut to nothing) is refused, not set up as a new
// store; a damaged one is refused by the checks, bbolt never opening it (a panic inside
// bbolt's open would leave its descriptor and lock behind).
func TestAFileHeldWhenFerryOpensItIsCheckedOnceLetGo(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "checkpoints.db")
	writeFile(t, empty, nil)
	holdFor(t, empty, 100*time.Millisecond)
	if _, err := bolt.Open(empty, &bolt.Options{OpenTimeout: 5 * time.Second}); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of an empty file held, then let go: %v; want ErrCorrupt", err)
	}

	damaged := seeded(t)
	b, err := os.ReadFile(damaged)
	if err != nil {
		t.Fatal(err)
	}
	_, freelist := newestMeta(b, os.Getpagesize())
	b[int(freelist)*os.Getpagesize()+8] = 0x02 // the freelist page said to be a leaf
	writeFile(t, damaged, b)
	holdFor(t, damaged, 100*time.Millisecond)
	_, err = bolt.Open(damaged, &bolt.Options{OpenTimeout: 5 * time.Second})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of a damaged file held, then let go: %v; want ErrCorrupt", err)
	}
	wantMentions(t, err, "damaged: the freelist page")
	f, err := os.Open(damaged)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("the refused file is still locked in this process: %v", err)
	}
}

// A store written on a host with larger pages (16 KiB) whose first meta page is torn opens
// from its second, as bbolt opens it: the checks look for the second at this host's page
// size only, and leave such a file to bbolt.
func TestAStoreFromAHostWithLargerPagesOpensFromItsSecondMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{PageSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path) // the schema, and a save: meta pages at txid 2 and 3
	storetest.MustSave(t, s, storetest.Def("orders"), ckpt(3, 64))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[16:80]) // the first meta page torn
	writeFile(t, path, b)
	r, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open of a store bbolt opens from its second meta page: %v", err)
	}
	defer r.Close()
	storetest.WantCheckpoints(t, r, storetest.Def("orders"), ckpt(3, 64))
}

// many is a store holding checkpoints of 300 recordings of stream "orders", saved over
// several commits, so that the recordings' bucket is a tree of pages (a branch page over
// leaves) and the file has free pages; and the checkpoints it holds.
func many(t *testing.T) (path string, want []store.Checkpoint) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for first := int64(1); first <= 300; first += 100 {
		var cps []store.Checkpoint
		for id := first; id < first+100; id++ {
			cps = append(cps, ckpt(id, 64*id))
		}
		storetest.MustSave(t, s, storetest.Def("orders"), cps...)
		want = append(want, cps...)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// treeOf is where the pages of a store's tree are, as bbolt tells (its own reading of the
// file, undamaged): the root page, the recordings' bucket's root page, the freelist's.
type treeOf struct {
	root, recordings, freelist int
	held                       []int // every page the tree holds
}

func pagesOf(t *testing.T, path string) treeOf {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil) // not read only: Tx.Page needs the freelist
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tr treeOf
	err = db.View(func(tx *bbolt.Tx) error {
		tr.recordings = int(recordings(tx).Root())
		if tx.Bucket([]byte("meta")).Root() != 0 {
			return errors.New("the meta bucket is not inline")
		}
		for id := 2; id < int(tx.Size())/os.Getpagesize(); id++ {
			if p, err := tx.Page(id); err != nil {
				return err
			} else if p != nil && (p.Type == "branch" || p.Type == "leaf") {
				tr.held = append(tr.held, id)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root, freelist := newestMeta(b, os.Getpagesize())
	tr.root, tr.freelist = int(root), int(freelist)
	return tr
}

// inlineMeta is the offset of the meta bucket's inline page: in the value of the root
// page's first element ("meta", before "streams"), 16 bytes into it.
func inlineMeta(b []byte, tr treeOf) int {
	r := tr.root * os.Getpagesize()
	if string(b[key(b, r, 0):key(b, r, 0)+4]) != "meta" {
		panic("the root page's first element is not meta/")
	}
	return key(b, r, 0) + 4 + 16
}

// element is the offset in the file of element i of the page at off (branch and leaf
// elements are 16 bytes, after the page's header of 16); key is its key's, on a leaf page
// (the key's position is the element's second u32), branchKey on a branch page (its first).
func element(off, i int) int { return off + 16 + 16*i }

func key(b []byte, off, i int) int {
	el := element(off, i)
	return el + int(binary.NativeEndian.Uint32(b[el+4:]))
}

func branchKey(b []byte, off, i int) int {
	el := element(off, i)
	return el + int(binary.NativeEndian.Uint32(b[el:]))
}

// A damaged element of the tree — a key or value said to run past its page, a child page
// outside the file or named twice, keys out of order, a bucket's inline page misshapen — or
// a freelist that lists a page the tree holds, fails the open, naming the file, before
// bbolt reads any of it: bbolt trusts these, and a key slice reaching past its page can
// reach past the mapped file into the Go heap, which ends the process with a fatal error
// no recover catches; a free page the tree holds is overwritten by the next commit.
func TestLesson13_DamagedElementsFailOpen(t *testing.T) {
	ps := os.Getpagesize()
	u32 := func(b []byte, at int, v uint32) { binary.NativeEndian.PutUint32(b[at:], v) }
	u64 := func(b []byte, at int, v uint64) { binary.NativeEndian.PutUint64(b[at:], v) }
	child := func(b []byte, branch, i int) int { // page i of a branch names, its offset
		return ps * int(binary.NativeEndian.Uint64(b[element(branch, i)+8:]))
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte, tr treeOf)
		says   string
	}{
		{"a leaf element's key size", func(b []byte, tr treeOf) {
			u32(b, element(child(b, tr.recordings*ps, 0), 3)+8, 1<<24)
		}, "element 3's key and value"},
		{"a leaf element's position", func(b []byte, tr treeOf) {
			u32(b, element(child(b, tr.recordings*ps, 0), 3)+4, 1<<30)
		}, "element 3's key and value"},
		{"a leaf element's value size", func(b []byte, tr treeOf) {
			u32(b, element(child(b, tr.recordings*ps, 0), 3)+12, 1<<31)
		}, "element 3's key and value"},
		{"a leaf's keys out of order", func(b []byte, tr treeOf) {
			leaf := child(b, tr.recordings*ps, 0)
			clear(b[key(b, leaf, 4) : key(b, leaf, 4)+8])
		}, "element 4's key 0000000000000000 is not after"},
		{"a leaf's element count", func(b []byte, tr treeOf) {
			b[child(b, tr.recordings*ps, 0)+11] = 0x01 // 256 more
		}, "elements run past"},
		{"a branch naming a page outside the file", func(b []byte, tr treeOf) {
			u64(b, element(tr.recordings*ps, 1)+8, 1<<40)
		}, "outside the file's pages"},
		{"a branch naming a page twice", func(b []byte, tr treeOf) {
			u64(b, element(tr.recordings*ps, 1)+8, uint64(child(b, tr.recordings*ps, 0)/ps))
		}, "named twice in the tree"},
		{"a branch naming itself", func(b []byte, tr treeOf) {
			u64(b, element(tr.recordings*ps, 1)+8, uint64(tr.recordings))
		}, "named twice in the tree"},
		{"an inline bucket's element", func(b []byte, tr treeOf) {
			// meta/ is small and holds no bucket: inline, in the value of the root page's
			// first element ("meta", before "streams"), its page 16 bytes into the value.
			u32(b, element(inlineMeta(b, tr), 0)+8, 1<<12)
		}, `bucket "meta"'s inline page: element 0's key and value`},
		{"an inline bucket's keys out of order", func(b []byte, tr treeOf) {
			m := inlineMeta(b, tr)
			b[key(b, m, 1)] = 'a' // "schema_version" before "saved/orders"
		}, "is not after"},
		{"a bucket's value too short", func(b []byte, tr treeOf) {
			u32(b, element(tr.root*ps, 0)+12, 8)
		}, `the value of bucket "meta" is 8 bytes`},
		{"the freelist listing a page the tree holds", func(b []byte, tr treeOf) {
			fl := tr.freelist * ps
			if binary.NativeEndian.Uint16(b[fl+10:]) == 0 {
				panic("nothing free")
			}
			u64(b, fl+16, uint64(tr.recordings))
		}, "which the tree holds"},
		{"the freelist listing a page twice", func(b []byte, tr treeOf) {
			fl := tr.freelist * ps
			if binary.NativeEndian.Uint16(b[fl+10:]) < 2 {
				panic("fewer than two pages free")
			}
			copy(b[fl+24:fl+32], b[fl+16:fl+24])
		}, "lists page"},
		{"the freelist listing a page outside the file", func(b []byte, tr treeOf) {
			u64(b, tr.freelist*ps+16, 1<<40)
		}, "outside the file's pages"},
		{"the freelist listing itself", func(b []byte, tr treeOf) {
			u64(b, tr.freelist*ps+16, uint64(tr.freelist))
		}, "lists its own page"},
		{"the freelist listing more than its page holds", func(b []byte, tr treeOf) {
			b[tr.freelist*ps+10], b[tr.freelist*ps+11] = 0xFE, 0xFF // 0xFFFE ids
		}, "more than its"},
		{"the freelist's long count listing more than its page holds", func(b []byte, tr treeOf) {
			b[tr.freelist*ps+10], b[tr.freelist*ps+11] = 0xFF, 0xFF // the count is the first u64
			u64(b, tr.freelist*ps+16, 1<<20)
		}, "more than its"},
		{"the freelist's long count, listing a page the tree holds", func(b []byte, tr treeOf) {
			b[tr.freelist*ps+10], b[tr.freelist*ps+11] = 0xFF, 0xFF
			u64(b, tr.freelist*ps+16, 1) // one page, listed after the count
			u64(b, tr.freelist*ps+24, uint64(tr.recordings))
		}, "which the tree holds"},
		{"a page of the tree running over the freelist page", func(b []byte, tr treeOf) {
			last := -1 // the tree's last page before the freelist's
			for _, id := range tr.held {
				if id < tr.freelist {
					last = max(last, id)
				}
			}
			if last < 0 {
				panic("no page of the tree before the freelist's")
			}
			u32(b, last*ps+12, uint32(tr.freelist-last)) // its overflow
		}, "is also a page of the tree"},
		{"a branch key the child's keys lie below", func(b []byte, tr treeOf) {
			// Still between its neighbours, so the branch page alone looks right: a lookup
			// would go to the wrong leaf (a save regressing a checkpoint, a key stored twice).
			k := branchKey(b, tr.recordings*ps, 1)
			b[k+7] = 0x02
		}, "outside the keys the parent page gives it"},
		{"an empty key", func(b []byte, tr treeOf) {
			u32(b, element(child(b, tr.recordings*ps, 0), 0)+8, 0)
		}, "element 0's key is empty"},
		{"a child page naming another page", func(b []byte, tr treeOf) {
			b[child(b, tr.recordings*ps, 0)] ^= 0x01
		}, "says it is page"},
		{"a child page's kind", func(b []byte, tr treeOf) {
			b[child(b, tr.recordings*ps, 0)+8] = 0x10
		}, "has flags 0x10"},
		{"a child page running past the file", func(b []byte, tr treeOf) {
			u32(b, child(b, tr.recordings*ps, 0)+12, 1<<20)
		}, "beyond the file's"},
		{"an inline bucket's page not a leaf", func(b []byte, tr treeOf) {
			b[inlineMeta(b, tr)+8] = 0x01
		}, `bucket "meta"'s inline page is not a leaf page`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := many(t)
			tr := pagesOf(t, path)
			if binary.NativeEndian.Uint16(readPage(t, path, tr.recordings)[8:]) != 0x01 {
				t.Fatalf("the recordings' bucket's root page %d is not a branch page", tr.recordings)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.damage(b, tr)
			writeFile(t, path, b)
			s, err := bolt.Open(path, &bolt.Options{OpenTimeout: 100 * time.Millisecond})
			if err == nil {
				_ = s.Close()
				t.Fatal("Open of the damaged file succeeded")
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Fatalf("Open: %v; want ErrCorrupt", err)
			}
			wantMentions(t, err, path, "damaged", tc.says)
		})
	}
}

func readPage(t *testing.T, path string, id int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	return b[id*ps : (id+1)*ps]
}

// Bytes of the file changed at random, one at a time, in any page but the meta pages
// (bbolt checksums those): the store opens, loads and saves the exact data, or fails with
// ErrCorrupt naming the file; it never returns other data, never takes the process down,
// and never reports damage as a newer ferry's data (ErrUnknownVersion: a value's version
// byte, outside version 1's checksum, is checked against the checksum a newer version
// carries). The seed is fixed, so that a failure can be run again.
func TestLesson13_AByteChangedAnywhereFailsLoudlyNeverCrashes(t *testing.T) {
	if testing.Short() {
		t.Skip("many opens")
	}
	path, want := many(t)
	tr := pagesOf(t, path)
	clean, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	rng := rand.New(rand.NewPCG(13, uint64(len(clean))))
	intact, refused, refusedAtOpen := 0, 0, 0
	for trial := range 1500 {
		b := slices.Clone(clean)
		at := 2*ps + rng.IntN(len(b)-2*ps) // anywhere, or in a page the tree or freelist holds
		if pages := append(tr.held, tr.freelist); trial%2 == 0 {
			at = pages[rng.IntN(len(pages))]*ps + rng.IntN(ps)
		}
		was := b[at]
		b[at] ^= byte(1 + rng.IntN(255))
		writeFile(t, path, b)
		st, err := openLoad(t, path)
		if err == nil {
			// A commit after the damage (the freelist is used, keys are looked up), and what
			// the file holds after it.
			err = func() error {
				s, err := bolt.Open(path, nil)
				if err != nil {
					return err
				}
				return errors.Join(s.Save(storetest.Def("orders"), []store.Checkpoint{ckpt(1, 1<<20)}), s.Close())
			}()
			if err == nil {
				st, err = openLoad(t, path)
			}
		}
		switch {
		case err != nil && (!errors.Is(err, store.ErrCorrupt) || errors.Is(err, store.ErrUnknownVersion)):
			t.Fatalf("trial %d, byte %d (page %d) %#x→%#x: %v; want ErrCorrupt or the data", trial, at, at/ps, was, b[at], err)
		case err != nil:
			wantMentions(t, err, path)
			refused++
			if strings.Contains(err.Error(), "corrupt: damaged: ") {
				refusedAtOpen++
			}
		default:
			saved := slices.Clone(want)
			saved[0] = ckpt(1, 1<<20)
			if !slices.EqualFunc(st.Checkpoints, saved, func(a, b store.Checkpoint) bool { return a.RecordingID == b.RecordingID && a.Position == b.Position }) {
				t.Fatalf("trial %d, byte %d (page %d) %#x→%#x: loaded %d checkpoints, not the %d saved", trial, at, at/ps, was, b[at], len(st.Checkpoints), len(saved))
			}
			intact++
		}
	}
	t.Logf("%d damaged files refused (%d by the layout check at open), %d read intact (the byte was in free or unused space)", refused, refusedAtOpen, intact)
	if refused == 0 || intact == 0 {
		t.Fatalf("refused %d, intact %d: the trials did not reach both kinds of byte", refused, intact)
	}
}

// Damage to the freelist alone leaves every checkpoint intact: the refusal says so, and how
// to copy them into a new file, and a read-only open (ferry checkpoint show, which never
// reads the freelist) reads them all.
func TestLesson13_AFreelistDamagedAloneSaysTheCheckpointsAreIntact(t *testing.T) {
	path, want := many(t)
	tr := pagesOf(t, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	binary.NativeEndian.PutUint64(b[tr.freelist*os.Getpagesize()+16:], uint64(tr.recordings))
	writeFile(t, path, b)
	if s, err := bolt.Open(path, nil); err == nil {
		_ = s.Close()
		t.Fatal("Open of a file whose freelist lists a page of the tree succeeded")
	} else if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open: %v; want ErrCorrupt", err)
	} else {
		wantMentions(t, err, path, "checkpoints are intact", "compact -o "+path+".new "+path)
	}
	r, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open: %v", err)
	}
	defer r.Close()
	storetest.WantCheckpoints(t, r, storetest.Def("orders"), want...)
}

// A store written on a host with larger pages (16 KiB) whose first meta page is torn is
// checked from its second meta page, as bbolt opens it: its freelist listing the root page
// is refused, not taken on and overwritten at the next save.
func TestAStoreFromAHostWithLargerPagesIsCheckedFromItsSecondMeta(t *testing.T) {
	const ps = 16 << 10
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{PageSize: ps})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, path)
	for i := int64(1); i <= 4; i++ { // pages freed at every commit
		storetest.MustSave(t, s, storetest.Def("orders"), ckpt(i, 64))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[16:80]) // the first meta page torn; the second is the newer one
	m := b[ps+16:]
	root, freelist := binary.NativeEndian.Uint64(m[16:]), binary.NativeEndian.Uint64(m[32:])
	if binary.NativeEndian.Uint16(b[freelist*ps+10:]) == 0 {
		t.Fatal("nothing free")
	}
	binary.NativeEndian.PutUint64(b[freelist*ps+16:], root)
	writeFile(t, path, b)
	if _, err := bolt.Open(path, nil); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open: %v; want ErrCorrupt", err)
	} else {
		wantMentions(t, err, path, "which the tree holds")
	}
}
