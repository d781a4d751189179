package bolt_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/store/storetest"
	"github.com/ferry-bridge/ferry/supervisor"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t testing.TB) (store.Store, func() store.Store) {
		path := filepath.Join(t.TempDir(), "checkpoints.db")
		return openStore(t, path), func() store.Store { return openStore(t, path) }
	})
}

// openStore opens path and closes the store when t ends.
func openStore(t testing.TB, path string) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// seeded returns the path of a closed file holding stream "orders" with recordings 3 and 7.
func seeded(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	storetest.MustSave(t, s, storetest.Def("orders"), ckpt(3, 64), ckpt(7, 4096))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return path
}

func ckpt(id, pos int64) store.Checkpoint {
	return store.Checkpoint{RecordingID: id, Position: pos, UpdatedAtMs: 1_700_000_000_000}
}

// editRaw changes the file with bbolt directly, behind the store's back.
func editRaw(t testing.TB, path string, fn func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("bbolt.Open: %v", err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatalf("bbolt.Update: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("bbolt.Close: %v", err)
	}
}

func recordings(tx *bbolt.Tx) *bbolt.Bucket {
	return tx.Bucket([]byte("streams")).Bucket([]byte("orders")).Bucket([]byte("recordings"))
}

func recordingKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// wantMentions fails t unless err's message contains every one of wants.
func wantMentions(t testing.TB, err error, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// wantLoadCorrupt fails t unless loading "orders" fails with a CorruptError at key.
func wantLoadCorrupt(t testing.TB, path, key string) {
	t.Helper()
	s := openStore(t, path)
	st, err := s.Load(storetest.Def("orders"))
	var ce *store.CorruptError
	if !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) {
		t.Fatalf("Load = %+v, %v; want a *CorruptError", st, err)
	}
	if st.Stored || st.Checkpoints != nil {
		t.Errorf("Load returned %+v beside its error, want the zero State", st)
	}
	if ce.File != path || ce.Stream != "orders" || ce.Key != key {
		t.Errorf("CorruptError = %+v, want File %s, Stream orders, Key %q", ce, path, key)
	}
	wantMentions(t, err, path, store.ResetCommand("orders"))
}

func TestLesson13_TruncatedCheckpointFailsLoudly(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error {
		v := recordings(tx).Get(recordingKey(7))
		return recordings(tx).Put(recordingKey(7), append([]byte(nil), v[:len(v)-3]...))
	})
	wantLoadCorrupt(t, path, "recording 7")
}

func TestLesson13_CorruptCheckpointFailsLoudly(t *testing.T) {
	damage := map[string]func(v []byte) []byte{
		"garbage":        func([]byte) []byte { return []byte("\x00\xffnot a checkpoint at all") },
		"empty":          func([]byte) []byte { return []byte{} },
		"header only":    func(v []byte) []byte { return v[:10] },
		"flipped bit":    func(v []byte) []byte { v[len(v)-1] ^= 0x01; return v },
		"trailing bytes": func(v []byte) []byte { return append(v, 0) },
		"wrong kind":     func(v []byte) []byte { v[0] = 'D'; return v },
		"huge length":    func(v []byte) []byte { binary.LittleEndian.PutUint32(v[2:6], 1<<31); return v },
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			path := seeded(t)
			editRaw(t, path, func(tx *bbolt.Tx) error {
				v := append([]byte(nil), recordings(tx).Get(recordingKey(3))...)
				return recordings(tx).Put(recordingKey(3), fn(v))
			})
			wantLoadCorrupt(t, path, "recording 3")
		})
	}
}

func TestLesson13_CheckpointUnderWrongKeyFailsLoudly(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error {
		return recordings(tx).Put(recordingKey(9), recordings(tx).Get(recordingKey(7)))
	})
	wantLoadCorrupt(t, path, "recording 9")
}

func TestLesson13_CorruptDefinitionFailsLoudly(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error {
		sb := tx.Bucket([]byte("streams")).Bucket([]byte("orders"))
		return sb.Put([]byte("definition"), []byte("D\x01garbage"))
	})
	wantLoadCorrupt(t, path, "definition")
}

func TestLesson13_CorruptValueBlocksSave(t *testing.T) {
	// A damaged checkpoint cannot be compared with, so it is not silently overwritten.
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error { return recordings(tx).Put(recordingKey(7), []byte("x")) })
	s := openStore(t, path)
	err := s.Save(storetest.Def("orders"), []store.Checkpoint{ckpt(7, 1<<20)})
	if !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Save over a corrupt value: err = %v, want ErrCorrupt", err)
	}
	wantMentions(t, err, path, "recording 7")
}

// setValueVersion rewrites the envelope version of recording id's checkpoint, as a ferry
// writing another version would store it.
func setValueVersion(t *testing.T, path string, id uint64, version byte) {
	t.Helper()
	editRaw(t, path, func(tx *bbolt.Tx) error {
		return recordings(tx).Put(recordingKey(id), bolt.AsNewerFerry(recordings(tx).Get(recordingKey(id)), version))
	})
}

func TestLesson13_UnknownValueVersionFailsLoudly(t *testing.T) {
	path := seeded(t)
	setValueVersion(t, path, 7, 9)
	s := openStore(t, path)
	_, err := s.Load(storetest.Def("orders"))
	var ve *store.UnknownVersionError
	if !errors.Is(err, store.ErrUnknownVersion) || !errors.As(err, &ve) {
		t.Fatalf("Load: err = %v, want an *UnknownVersionError", err)
	}
	if ve.Version != 9 || ve.Supported != 1 || ve.File != path || ve.Key != "recording 7" {
		t.Errorf("UnknownVersionError = %+v", ve)
	}
	wantMentions(t, err, path)
}

// A value a newer ferry wrote is reported as such even when the stream's definition no
// longer matches the configuration: "changed, reset it" would have a reset delete the newer
// ferry's checkpoints, which `ferry checkpoint reset` keeps unless forced.
func TestLesson13_UnknownValueVersionOutranksAChangedDefinition(t *testing.T) {
	path := seeded(t)
	setValueVersion(t, path, 7, 9)
	s := openStore(t, path)
	changed := storetest.Def("orders")
	changed.Topic += "-renamed"
	_, err := s.Load(changed)
	var ve *store.UnknownVersionError
	if !errors.As(err, &ve) || ve.Key != "recording 7" || ve.Version != 9 {
		t.Fatalf("Load with another topic: err = %v, want the UnknownVersionError of recording 7", err)
	}
}

// A value of the version this build reads, with a field it does not know, its checksum
// checking out, is a newer ferry's that added the field (checkpoint fields have been added
// without a new version): read, this build would drop the field at its next save without a
// word (a newer ferry's partition count, say, or the stop it keeps). Load and Save refuse it
// as a newer ferry's — not as damage, whose advice, a reset, would delete it — naming the
// field, also when the definition no longer matches the configuration.
func TestLesson13_AFieldOfANewerFerryFailsLoudly(t *testing.T) {
	for _, c := range []struct {
		name, key string
		edit      func(tx *bbolt.Tx) error
	}{
		{"checkpoint", "recording 7", func(tx *bbolt.Tx) error {
			return recordings(tx).Put(recordingKey(7), bolt.WithNewerField(recordings(tx).Get(recordingKey(7)), 99))
		}},
		{"definition", "definition", func(tx *bbolt.Tx) error {
			sb := tx.Bucket([]byte("streams")).Bucket([]byte("orders"))
			return sb.Put([]byte("definition"), bolt.WithNewerField(sb.Get([]byte("definition")), 99))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := seeded(t)
			editRaw(t, path, c.edit)
			s := openStore(t, path)
			changed := storetest.Def("orders")
			changed.Topic += "-renamed"
			for _, def := range []store.Stream{storetest.Def("orders"), changed} {
				_, err := s.Load(def)
				var ve *store.UnknownVersionError
				if !errors.As(err, &ve) || ve.Field != 99 || ve.Key != c.key || ve.File != path {
					t.Fatalf("Load (topic %s): err = %v, want the UnknownVersionError of %s, field 99", def.Topic, err, c.key)
				}
				if msg := err.Error(); !strings.Contains(msg, "field 99, which a newer ferry wrote") || !strings.Contains(msg, "do not reset or delete it with this build") {
					t.Errorf("Load: %q; want the field named, and no reset advised", msg)
				}
			}
			if c.name == "checkpoint" {
				err := s.Save(storetest.Def("orders"), []store.Checkpoint{ckpt(7, 1<<20)})
				if !errors.Is(err, store.ErrUnknownVersion) {
					t.Fatalf("Save over it: err = %v, want ErrUnknownVersion", err)
				}
			}
		})
	}
}

func TestLesson13_UnknownSchemaVersionRefusedAtOpen(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), bolt.SchemaOfANewerFerry(2))
	})
	s, err := bolt.Open(path, nil)
	var ve *store.UnknownVersionError
	if s != nil || !errors.Is(err, store.ErrUnknownVersion) || !errors.As(err, &ve) || ve.Version != 2 {
		t.Fatalf("Open = %v, %v; want an *UnknownVersionError for version 2", s, err)
	}
	// No command of this build opens the file, reset --force included: moving it aside is
	// the way to run this build.
	wantMentions(t, err, path, "newer ferry", "move the file aside")
	// The refused file is left as it was, and released.
	editRaw(t, path, func(tx *bbolt.Tx) error {
		if v := tx.Bucket([]byte("meta")).Get([]byte("schema_version")); v[3] != 2 {
			t.Errorf("schema version rewritten to %v", v)
		}
		return nil
	})
}

// A schema version below the first is damage, not a newer ferry's file: the error must not
// send the operator looking for a release that does not exist.
func TestLesson13_ASchemaVersionNoFerryWritesIsDamage(t *testing.T) {
	path := seeded(t)
	editRaw(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte{0, 0, 0, 0})
	})
	s, err := bolt.Open(path, nil)
	var ce *store.CorruptError
	if s != nil || !errors.Is(err, store.ErrCorrupt) || !errors.As(err, &ce) || errors.Is(err, store.ErrUnknownVersion) {
		t.Fatalf("Open = %v, %v; want a *CorruptError", s, err)
	}
	wantMentions(t, err, path, "schema version 0")
}

func TestLesson12_MisshapenLayoutIsNotEmpty(t *testing.T) {
	// A stream whose bucket was replaced by a value is damage, not "never saved".
	path := seeded(t)
	storeStreamAsValue(t, path)
	wantLoadCorrupt(t, path, "stream bucket")
}

// The listing of the stored streams honours the damage checks Load makes of a definition:
// a stream whose definition cannot be read fails the listing, naming the file and the
// stream (left out, a renamed stream's checkpoints would look never saved); a definition a
// newer ferry wrote is reported as such.
func TestLesson13_StreamsFailsOnADamagedDefinition(t *testing.T) {
	inOrders := func(fn func(sb *bbolt.Bucket) error) func(tx *bbolt.Tx) error {
		return func(tx *bbolt.Tx) error { return fn(tx.Bucket([]byte("streams")).Bucket([]byte("orders"))) }
	}
	for _, tc := range []struct {
		name, key string
		edit      func(tx *bbolt.Tx) error
	}{
		{"garbled definition", "definition", inOrders(func(sb *bbolt.Bucket) error { return sb.Put([]byte("definition"), []byte("D\x01garbage")) })},
		{"flipped bit", "definition", inOrders(func(sb *bbolt.Bucket) error {
			v := append([]byte(nil), sb.Get([]byte("definition"))...)
			v[len(v)-1] ^= 0x01
			return sb.Put([]byte("definition"), v)
		})},
		{"definition missing", "definition", inOrders(func(sb *bbolt.Bucket) error { return sb.Delete([]byte("definition")) })},
		{"a value where the bucket belongs", "stream bucket", func(tx *bbolt.Tx) error {
			streams := tx.Bucket([]byte("streams"))
			if err := streams.DeleteBucket([]byte("orders")); err != nil {
				return err
			}
			return streams.Put([]byte("orders"), []byte("x"))
		}},
		{"bucket gone, the stream recorded as saved", "stream bucket", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("streams")).DeleteBucket([]byte("orders"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := seeded(t)
			editRaw(t, path, tc.edit)
			s := openStore(t, path)
			streams, err := s.Streams()
			var ce *store.CorruptError
			if !errors.As(err, &ce) || streams != nil {
				t.Fatalf("Streams = %+v, %v; want none and a *CorruptError", streams, err)
			}
			if ce.File != path || ce.Stream != "orders" || ce.Key != tc.key {
				t.Errorf("CorruptError = %+v, want File %s, Stream orders, Key %q", ce, path, tc.key)
			}
			wantMentions(t, err, path, store.ResetCommand("orders"))
			// The way out it names clears it.
			if err := s.Reset("orders"); err != nil {
				t.Fatal(err)
			}
			storetest.WantStreams(t, s)
		})
	}

	path := seeded(t)
	editRaw(t, path, inOrders(definitionOfANewerFerry))
	s := openStore(t, path)
	var ve *store.UnknownVersionError
	if streams, err := s.Streams(); !errors.As(err, &ve) || streams != nil || ve.Stream != "orders" || ve.Key != "definition" || ve.Version != 9 {
		t.Fatalf("Streams of a definition a newer ferry wrote = %+v, %v; want an *UnknownVersionError of orders' definition", streams, err)
	}
}

// definitionOfANewerFerry puts the stored definition in envelope version 9, as a newer ferry
// would write it.
func definitionOfANewerFerry(sb *bbolt.Bucket) error {
	return sb.Put([]byte("definition"), bolt.AsNewerFerry(sb.Get([]byte("definition")), 9))
}

// storeStreamAsValue replaces stream orders' bucket by a value, behind the store's back.
func storeStreamAsValue(t *testing.T, path string) {
	t.Helper()
	editRaw(t, path, func(tx *bbolt.Tx) error {
		streams := tx.Bucket([]byte("streams"))
		if err := streams.DeleteBucket([]byte("orders")); err != nil {
			return err
		}
		return streams.Put([]byte("orders"), []byte("x"))
	})
}

// The way out that error names, a reset, clears a stream stored as a value (its read-back
// refused it, so the advice could never work).
func TestLesson15_ResetClearsAStreamStoredAsAValue(t *testing.T) {
	path := seeded(t)
	storeStreamAsValue(t, path)
	s := openStore(t, path)
	if err := s.Reset("orders"); err != nil {
		t.Fatalf("Reset of a stream stored as a value: %v", err)
	}
	if st, err := s.Load(storetest.Def("orders")); err != nil || st.Stored {
		t.Fatalf("Load after Reset = %+v, %v; want nothing stored", st, err)
	}
}

func TestLesson13_DamagedFileFailsOpen(t *testing.T) {
	damage := map[string]func(t *testing.T, path string){
		"garbage": func(t *testing.T, path string) {
			writeFile(t, path, []byte(strings.Repeat("not a bbolt file ", 4096)))
		},
		"truncated to nothing": func(t *testing.T, path string) {
			if err := os.Truncate(path, 0); err != nil {
				t.Fatal(err)
			}
		},
		"truncated to 100 bytes": func(t *testing.T, path string) {
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		},
		"truncated after the meta pages": func(t *testing.T, path string) {
			if err := os.Truncate(path, 2*int64(os.Getpagesize())); err != nil {
				t.Fatal(err)
			}
		},
		"last page in use cut off": func(t *testing.T, path string) {
			var used int64
			editRaw(t, path, func(tx *bbolt.Tx) error { used = tx.Size(); return nil })
			if err := os.Truncate(path, used-int64(os.Getpagesize())); err != nil {
				t.Fatal(err)
			}
		},
		"one zeroed page": func(t *testing.T, path string) {
			writeFile(t, path, make([]byte, os.Getpagesize()))
		},
		"meta pages zeroed": func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			clear(b[:2*4096])
			writeFile(t, path, b)
		},
	}
	for name, fn := range damage {
		t.Run(name, func(t *testing.T) {
			path := seeded(t)
			fn(t, path)
			// An empty file is refused once no process took it up within the timeout.
			s, err := bolt.Open(path, &bolt.Options{OpenTimeout: 100 * time.Millisecond})
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open of a damaged file succeeded")
			}
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Open: err = %v, want ErrCorrupt", err)
			}
			wantMentions(t, err, path, "restore the file from a backup")
		})
	}
}

func writeFile(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestSecondOpenerFailsWithLockError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	openStore(t, path)
	s, err := bolt.Open(path, &bolt.Options{OpenTimeout: 50 * time.Millisecond})
	if err == nil {
		_ = s.Close()
		t.Fatal("second Open of a held file succeeded")
	}
	if !errors.Is(err, store.ErrLocked) || !errors.Is(err, berrors.ErrTimeout) {
		t.Errorf("second Open: err = %v, want ErrLocked wrapping bbolt's timeout", err)
	}
	wantMentions(t, err, path, "stop the other ferry")
}

// A store file deleted, or replaced by another (a restore, a rename), while the store has
// it open: bbolt would go on writing to the file it opened, and those checkpoints would not
// be read at the next start. Save fails with ErrReplaced, which stops the stream (Corrupt);
// nothing is written to the file now at the path.
func TestSaveFailsWhenTheFileWasDeletedOrReplaced(t *testing.T) {
	def := storetest.Def("orders")
	for _, tt := range []struct {
		name, what string
		change     func(t *testing.T, path string)
	}{
		{"deleted", "deleted", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", "replaced", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, nil)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.db")
			s := openStore(t, path)
			if err := s.Save(def, []store.Checkpoint{ckpt(3, 64)}); err != nil {
				t.Fatal(err)
			}
			tt.change(t, path)
			err := s.Save(def, []store.Checkpoint{ckpt(3, 128)})
			if !errors.Is(err, store.ErrReplaced) || supervisor.Classify(err) != supervisor.Corrupt {
				t.Fatalf("Save after the file was %s: %v (class %v), want ErrReplaced, Corrupt", tt.what, err, supervisor.Classify(err))
			}
			wantMentions(t, err, path, tt.what, "start_position")
			if fi, err := os.Stat(path); err == nil && fi.Size() != 0 {
				t.Fatalf("the file now at %s has %d bytes: the store wrote to it", path, fi.Size())
			}
			// What the store held is saved beside the path, once, and named.
			copies, _ := filepath.Glob(path + ".rescued-*")
			if len(copies) != 1 {
				t.Fatalf("copies beside %s: %v, want one", path, copies)
			}
			wantMentions(t, err, copies[0])
			if again := s.Save(def, []store.Checkpoint{ckpt(3, 192)}); !errors.Is(again, store.ErrReplaced) || !strings.Contains(again.Error(), copies[0]) {
				t.Fatalf("second Save: %v, want ErrReplaced naming %s again", again, copies[0])
			}
			if more, _ := filepath.Glob(path + ".rescued-*"); len(more) != 1 {
				t.Fatalf("copies after a second Save: %v, want the one", more)
			}
			storetest.WantCheckpoints(t, openStore(t, copies[0]), def, ckpt(3, 64))
		})
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := seeded(t)
	s := openStore(t, path)
	storetest.WantCheckpoints(t, s, storetest.Def("orders"), ckpt(3, 64), ckpt(7, 4096))
	if s.Path() != path {
		t.Errorf("Path() = %s, want %s", s.Path(), path)
	}
}

func TestOpenCreatesDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ferry-data", "nested", "checkpoints.db")
	s := openStore(t, path)
	storetest.WantEmpty(t, s, storetest.Def("orders"))
	if _, err := os.Stat(path); err != nil {
		t.Errorf("file not created: %v", err)
	}
}

func TestLesson27_ResetReallyDeletesFromFile(t *testing.T) {
	path := seeded(t)
	s, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Reset("orders"); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// Look at the file itself, not through the store that did the deleting.
	editRaw(t, path, func(tx *bbolt.Tx) error {
		streams := tx.Bucket([]byte("streams"))
		if streams.Bucket([]byte("orders")) != nil || streams.Get([]byte("orders")) != nil {
			t.Errorf("stream orders is still in the file after Reset")
		}
		return nil
	})
	storetest.WantEmpty(t, openStore(t, path), storetest.Def("orders"))
}

func TestLesson13_DamagedPageFailsLoudlyNeverCrashes(t *testing.T) {
	// Every page but the meta pages, overwritten in turn: the store either still returns the
	// exact data (the page was free) or fails with ErrCorrupt; it never returns other data,
	// reports the stream absent, or takes the process down (bbolt asserts, or faults in the
	// mapped file).
	ps := int64(os.Getpagesize())
	var used int64
	editRaw(t, seeded(t), func(tx *bbolt.Tx) error { used = tx.Size(); return nil })
	for pg := int64(2); pg < used/ps; pg++ {
		path := seeded(t)
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, werr := f.WriteAt([]byte(strings.Repeat("A", int(ps))), pg*ps)
		if err := errors.Join(werr, f.Close()); err != nil {
			t.Fatal(err)
		}
		s, err := bolt.Open(path, nil)
		if err == nil {
			_, err = s.Load(storetest.Def("orders"))
			if err == nil {
				storetest.WantCheckpoints(t, s, storetest.Def("orders"), ckpt(3, 64), ckpt(7, 4096))
			}
			if cerr := s.Close(); cerr != nil {
				t.Errorf("Close: %v", cerr)
			}
		}
		if err != nil && !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("page %d damaged: err = %v, want ErrCorrupt or the intact data", pg, err)
		}
		if err != nil {
			wantMentions(t, err, path)
		}
	}
}

// A store opened read only (ferry checkpoint show, ferry recordings) reads what is stored
// and writes nothing: the file's bytes are the same afterwards, and a save fails. A file a
// ferry created and wrote nothing into yet holds nothing; a running ferry still excludes it.
func TestReadOnlyWritesNothing(t *testing.T) {
	path := seeded(t)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open read only: %v", err)
	}
	storetest.WantCheckpoints(t, s, storetest.Def("orders"), ckpt(3, 64), ckpt(7, 4096))
	if err := s.Save(storetest.Def("orders"), []store.Checkpoint{ckpt(7, 8192)}); err == nil {
		t.Error("a save through a read-only store succeeded")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the file changed under a read-only store (read error %v)", err)
	}

	empty := filepath.Join(t.TempDir(), "checkpoints.db")
	db, err := bbolt.Open(empty, 0o600, nil) // as bbolt leaves a file before ferry's schema
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = bolt.Open(empty, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("Open read only of a file with nothing in it: %v", err)
	}
	if st, err := s.Load(storetest.Def("orders")); err != nil || st.Stored {
		t.Errorf("Load of a file with nothing in it: %+v, %v; want nothing stored", st, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	openStore(t, path) // a running ferry
	if _, err := bolt.Open(path, &bolt.Options{ReadOnly: true, OpenTimeout: 50 * time.Millisecond}); !errors.Is(err, store.ErrLocked) {
		t.Fatalf("Open read only of a file a writer holds: %v, want ErrLocked", err)
	}
}

// An empty file another process holds locked is one being created (bbolt locks a new file
// before writing its first pages), not a store cut to nothing: the open says it is held,
// rather than advise deleting it.
func TestAnEmptyFileBeingCreatedIsHeldNotCorrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	_, err = bolt.Open(path, &bolt.Options{OpenTimeout: 50 * time.Millisecond})
	if !errors.Is(err, store.ErrLocked) || errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("Open of an empty file being created: %v; want ErrLocked", err)
	}
}

// A closed store says it is closed, also once its file is gone: not that the file was
// deleted under a running ferry, with a rescue copy made of a store that holds nothing open.
func TestAClosedStoreWhoseFileIsGoneSaysItIsClosed(t *testing.T) {
	def := storetest.Def("orders")
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s := openStore(t, path)
	if err := s.Save(def, []store.Checkpoint{ckpt(3, 64)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.Save(def, []store.Checkpoint{ckpt(3, 128)}); !errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrReplaced) {
		t.Fatalf("Save after Close, its file deleted: %v; want ErrClosed", err)
	}
	if err := s.Reset(def.Name); !errors.Is(err, store.ErrClosed) || errors.Is(err, store.ErrReplaced) {
		t.Fatalf("Reset after Close, its file deleted: %v; want ErrClosed", err)
	}
	if copies, _ := filepath.Glob(path + ".rescued-*"); len(copies) != 0 {
		t.Fatalf("a closed store wrote rescue copies: %v", copies)
	}
}

// A store.path naming a directory is said to be one, opened for writing or read only: bbolt
// takes a directory opened read only for an invalid database, and "corrupt, move it aside"
// would be advice to move the directory holding the real store.
func TestADirectoryIsNotTakenForADamagedStore(t *testing.T) {
	dir := t.TempDir()
	for _, opts := range []*bolt.Options{nil, {ReadOnly: true}} {
		_, err := bolt.Open(dir, opts)
		if err == nil || errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), "it is a directory") {
			t.Errorf("Open(%s, %+v) = %v; want it said to be a directory, not corrupt", dir, opts, err)
		}
	}
}
