package bolt_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
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
// file's two meta pages (bbolt's layout: see truncation.go).
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
