package bolt

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// legitimate makes a ferry store, lets fill write more into it through bbolt itself (opened
// with opts), and checks that bbolt's own check finds nothing wrong with what it wrote.
func legitimate(t *testing.T, opts *bbolt.Options, fill func(*bbolt.DB) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	if opts != nil && opts.PageSize != 0 { // created with that page size
		db, err := bbolt.Open(path, 0o600, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open of a new store: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	legitimateAgain(t, path, opts, fill)
	return path
}

// bboltCheck is what bbolt's own check finds wrong with db, but for pages neither in the
// tree nor free: bbolt leaves some behind in the course of its work (they are lost space,
// not damage).
func bboltCheck(db *bbolt.DB) error {
	return db.View(func(tx *bbolt.Tx) error {
		var errs []error
		for e := range tx.Check() {
			if !strings.HasSuffix(e.Error(), "unreachable unfreed") {
				errs = append(errs, e)
			}
		}
		return errors.Join(errs...)
	})
}

// wantAccepted fails t unless the layout check, and the store's Open, take the file.
func wantAccepted(t *testing.T, path string) {
	t.Helper()
	if _, err := checkLayout(path, time.Second, false); err != nil {
		t.Fatalf("the layout check refused a file bbolt wrote: %v", err)
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open refused a file bbolt wrote: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// puts writes n keys key(i) with value(i) into bucket name, in one transaction.
func puts(db *bbolt.DB, name string, n int, key func(int) []byte, value func(int) []byte) error {
	return db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(name))
		for i := 0; i < n && err == nil; i++ {
			err = b.Put(key(i), value(i))
		}
		return err
	})
}

func keyf(format string) func(int) []byte {
	return func(i int) []byte { return fmt.Appendf(nil, format, i) }
}

// Every file bbolt writes passes the layout check: the walk refuses only what bbolt would
// not write. (Each case's layout was checked to be reached, not assumed.)
func TestEveryFileBboltWritesPassesTheLayoutCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *bbolt.Options
		fill func(*bbolt.DB) error
	}{
		{"values over several pages, a 32,000-byte key", nil, func(db *bbolt.DB) error {
			err := puts(db, "big", 40, keyf("k%03d"), func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 1000*i*i) })
			if err == nil {
				err = puts(db, "big", 1, func(int) []byte { return []byte(strings.Repeat("x", 32_000)) }, func(int) []byte { return nil })
			}
			return err
		}},
		{"a deep tree: long keys, keys prefixes of others, empty values, deletions", nil, func(db *bbolt.DB) error {
			for r := range 4 {
				err := db.Update(func(tx *bbolt.Tx) error {
					b, err := tx.CreateBucketIfNotExists([]byte("deep"))
					for i := 0; i < 5000 && err == nil; i++ {
						k := fmt.Appendf(nil, "%06d", i*4+r)
						err = errors.Join(b.Put(append(k, bytes.Repeat([]byte{0xff}, 600)...), nil), b.Put(k, []byte{}), b.Put(k[:3], []byte("p")))
					}
					return err
				})
				if err != nil {
					return err
				}
			}
			return db.Update(func(tx *bbolt.Tx) error {
				c, i := tx.Bucket([]byte("deep")).Cursor(), 0
				for k, _ := c.First(); k != nil; k, _ = c.Next() {
					if i++; i%3 != 0 {
						if err := c.Delete(); err != nil {
							return err
						}
					}
				}
				return nil
			})
		}},
		{"buckets nested 70 deep, inline, empty and deleted", nil, func(db *bbolt.DB) error {
			err := db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("nest"))
				for d := 0; d < 70 && err == nil; d++ {
					if b, err = b.CreateBucket(fmt.Appendf(nil, "d%d", d)); err == nil {
						err = b.Put([]byte("k"), bytes.Repeat([]byte("v"), d*20))
					}
				}
				for i := 0; i < 100 && err == nil; i++ {
					_, err = tx.CreateBucket(fmt.Appendf(nil, "empty%03d", i))
				}
				return err
			})
			if err != nil {
				return err
			}
			return db.Update(func(tx *bbolt.Tx) error {
				for i := 0; i < 100; i += 3 {
					if err := tx.DeleteBucket(fmt.Appendf(nil, "empty%03d", i)); err != nil {
						return err
					}
				}
				return nil
			})
		}},
		// Mapped large enough at the start: bbolt cannot grow the map while readers hold it.
		{"pages freed while readers held them", &bbolt.Options{InitialMmapSize: 1 << 28}, func(db *bbolt.DB) error {
			var readers []*bbolt.Tx
			defer func() {
				for _, r := range readers {
					_ = r.Rollback()
				}
			}()
			for r := range 5 {
				rtx, err := db.Begin(false)
				if err != nil {
					return err
				}
				readers = append(readers, rtx)
				if err := puts(db, "p", 2000, keyf("%05d"), func(int) []byte { return bytes.Repeat([]byte{byte(r)}, 100) }); err != nil {
					return err
				}
			}
			return nil
		}},
		{"16 KiB pages", &bbolt.Options{PageSize: 16 << 10}, func(db *bbolt.DB) error {
			return puts(db, "x", 20000, keyf("%06d"), func(i int) []byte { return make([]byte, i%300) })
		}},
		{"64 KiB pages", &bbolt.Options{PageSize: 64 << 10}, func(db *bbolt.DB) error {
			return puts(db, "x", 20000, keyf("%06d"), func(i int) []byte { return make([]byte, i%300) })
		}},
		{"no freelist written", &bbolt.Options{NoFreelistSync: true}, func(db *bbolt.DB) error {
			for range 3 {
				if err := puts(db, "x", 3000, keyf("%06d"), func(int) []byte { return make([]byte, 100) }); err != nil {
					return err
				}
			}
			return nil
		}},
		{"a freelist of more than 0xFFFF pages", &bbolt.Options{PageSize: 1024}, func(db *bbolt.DB) error {
			err := puts(db, "x", 100, keyf("%06d"), func(int) []byte { return make([]byte, 1024*1000) })
			if err == nil {
				err = db.Update(func(tx *bbolt.Tx) error { return tx.DeleteBucket([]byte("x")) })
			}
			if err == nil {
				err = puts(db, "y", 1, keyf("%d"), keyf("%d"))
			}
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := legitimate(t, tc.opts, tc.fill)
			if tc.name == "a freelist of more than 0xFFFF pages" {
				wantLongFreelist(t, path)
			}
			wantAccepted(t, path)
		})
	}
}

// wantLongFreelist fails t unless the file's freelist counts its pages in its first u64.
func wantLongFreelist(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if free := db.Stats().FreePageN; free <= boltOverflowed {
		t.Fatalf("%d pages free, not over 0xFFFF", free)
	}
}

// A store bbolt compacted into a new file (the remedy for a damaged freelist) passes.
func TestACompactedStorePassesTheLayoutCheck(t *testing.T) {
	src := legitimate(t, nil, func(db *bbolt.DB) error {
		return puts(db, "x", 20000, keyf("%06d"), func(i int) []byte { return make([]byte, i%500) })
	})
	dst := filepath.Join(t.TempDir(), "compacted.db")
	from, err := bbolt.Open(src, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	to, err := bbolt.Open(dst, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(bbolt.Compact(to, from, 64<<10), to.Close()); err != nil {
		t.Fatal(err)
	}
	wantAccepted(t, dst)
}

// Files bbolt wrote through many transactions of random puts, deletes and nested buckets
// created and deleted, at several fill percents, pass after every few transactions.
func TestFilesOfRandomWorkPassTheLayoutCheck(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 13))
			fill := []float64{0.1, 0.5, 1.0}[seed]
			path := legitimate(t, nil, func(*bbolt.DB) error { return nil })
			for round := range 10 {
				legitimateAgain(t, path, nil, func(db *bbolt.DB) error {
					for range 5 {
						if err := db.Update(func(tx *bbolt.Tx) error { return randomWork(tx, rng, fill) }); err != nil {
							return err
						}
					}
					return nil
				})
				if _, err := checkLayout(path, time.Second, false); err != nil {
					t.Fatalf("round %d: the layout check refused a file bbolt wrote: %v", round, err)
				}
			}
			wantAccepted(t, path)
		})
	}
}

// legitimateAgain lets fill write into path through bbolt (opened with opts), and checks
// that bbolt's own check finds nothing wrong with what it wrote.
func legitimateAgain(t *testing.T, path string, opts *bbolt.Options, fill func(*bbolt.DB) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, opts)
	if err != nil {
		t.Fatal(err)
	}
	err = fill(db)
	if err == nil {
		err = bboltCheck(db)
	}
	if err = errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
}

// randomWork is 300 random puts, deletes and bucket changes.
func randomWork(tx *bbolt.Tx, rng *rand.Rand, fill float64) error {
	for range 300 {
		name := fmt.Appendf(nil, "b%d", rng.IntN(6))
		b, err := tx.CreateBucketIfNotExists(name)
		if err != nil {
			return err
		}
		b.FillPercent = fill
		if rng.IntN(3) == 0 {
			if b, err = b.CreateBucketIfNotExists(fmt.Appendf(nil, "s%d", rng.IntN(4))); err != nil {
				return err
			}
			b.FillPercent = fill
		}
		k := fmt.Appendf(nil, "%x", rng.IntN(4000))
		switch n := rng.IntN(10); {
		case n < 4:
			err = b.Delete(k)
		case n == 4 && rng.IntN(50) == 0:
			err = tx.DeleteBucket(name)
		case n > 4 && b.Bucket(k) == nil:
			err = b.Put(k, make([]byte, rng.IntN(1+rng.IntN(6000))))
		}
		if err != nil {
			return err
		}
	}
	return nil
}
