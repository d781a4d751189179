package bolt

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/ferry-bridge/ferry/store"
)

func TestLesson15_ResetVerificationCatchesLeftovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoints.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	def := store.Stream{Name: "orders", Channel: "aeron:ipc", StreamID: 1, Topic: "t"}
	if err := s.Save(def, []store.Checkpoint{{RecordingID: 1, Position: 64}}); err != nil {
		t.Fatalf("Save: %v", err)
	}
	// A delete that reports success and deletes nothing: Reset's read-back must fail loudly.
	s.deleteBucket = func(*bbolt.Bucket, []byte) error { return nil }
	err = s.Reset("orders")
	if !errors.Is(err, store.ErrResetFailed) {
		t.Fatalf("Reset whose delete did nothing: err = %v, want ErrResetFailed", err)
	}
	for _, want := range []string{path, `"orders"`, store.ResetCommand("orders")} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// syncedDirs records the directories Open syncs while fn runs (syncDir still syncs them).
func syncedDirs(t *testing.T, fn func()) []string {
	t.Helper()
	var synced []string
	was := syncDir
	syncDir = func(dir string) error { synced = append(synced, dir); return was(dir) }
	defer func() { syncDir = was }()
	fn()
	return synced
}

// A store Open creates is durable only if the entry of each directory it created is too:
// after a power loss, a new directory lost from its parent takes the file with it, and the
// next start creates a new store, every stream starting over. So Open syncs the file's
// directory and the parent of each directory it created, up to the first that existed, and
// nothing more. The file's directory is synced at every open that may write, the file new
// or not: the open that created it may have been killed before it synced. (Power loss
// itself is not tested: this checks which directories are synced.)
func TestOpenSyncsEveryDirectoryItCreatedIntoItsParent(t *testing.T) {
	root := t.TempDir()
	open := func(path string, opts *Options) {
		t.Helper()
		s, err := Open(path, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		path string
		opts *Options
		want []string
	}{
		{"new directories", filepath.Join(root, "ferry-data", "nested", "checkpoints.db"), nil,
			[]string{filepath.Join(root, "ferry-data", "nested"), filepath.Join(root, "ferry-data"), root}},
		{"an existing file", filepath.Join(root, "ferry-data", "nested", "checkpoints.db"), nil, []string{filepath.Join(root, "ferry-data", "nested")}},
		{"an existing file, read only", filepath.Join(root, "ferry-data", "nested", "checkpoints.db"), &Options{ReadOnly: true}, nil},
		{"a new file in an existing directory", filepath.Join(root, "ferry-data", "other.db"), nil,
			[]string{filepath.Join(root, "ferry-data")}},
	} {
		synced := syncedDirs(t, func() { open(tc.path, tc.opts) })
		if !slices.Equal(synced, tc.want) {
			t.Errorf("%s: Open synced %q, want %q", tc.name, synced, tc.want)
		}
	}
}

// A ferry that finds the store file empty in the gap between another ferry's bbolt creating
// it and locking it must not call it corrupt and advise deleting it from under its creator:
// it waits, and finds the file held (the creator still running with it), or created (the
// creator done with it). The creator is started from that gap: when Open has seen the file
// empty, holding its shared lock.
func TestAnEmptyFileFoundBeforeItsCreatorLocksItIsNotCorrupt(t *testing.T) {
	for _, tc := range []struct {
		name  string
		holds bool
	}{{"the creator holds it", true}, {"the creator is done with it", false}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "checkpoints.db")
			f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600) // created, neither locked nor written
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			created := make(chan *bbolt.DB, 1)
			var once sync.Once
			was := emptySeen
			emptySeen = func() {
				once.Do(func() {
					go func() {
						db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 5 * time.Second})
						if err != nil {
							t.Error(err)
						} else if !tc.holds {
							_ = db.Close()
						}
						created <- db
					}()
				})
			}
			defer func() { emptySeen = was }()

			s, err := Open(path, &Options{OpenTimeout: time.Second})
			if db := <-created; tc.holds && db != nil {
				defer db.Close()
			}
			switch {
			case tc.holds && (!errors.Is(err, store.ErrLocked) || errors.Is(err, store.ErrCorrupt)):
				t.Fatalf("Open of an empty file its creator then locked: %v; want ErrLocked", err)
			case !tc.holds && err != nil:
				t.Fatalf("Open of an empty file its creator then wrote: %v; want it opened", err)
			case !tc.holds:
				_ = s.Close()
			}
		})
	}
}
