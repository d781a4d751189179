package bolt

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
// nothing more. (Power loss itself is not tested: this checks which directories are synced.)
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
		{"an existing file", filepath.Join(root, "ferry-data", "nested", "checkpoints.db"), nil, nil},
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
