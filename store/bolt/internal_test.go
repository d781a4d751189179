package bolt

import (
	"errors"
	"path/filepath"
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
