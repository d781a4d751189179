package archiving

import (
	"context"
	"errors"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/archive"
)

// TestTruncateAndPurge: a stopped recording truncated to a message boundary stops there
// and replays only what is left; a purged recording is unknown to the archive from then
// on (what ferry must report loudly when it holds a checkpoint for one — lesson 14).
func TestTruncateAndPurge(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch, total = "aeron:ipc?term-length=64k", 20
	stream, subID, pub, id := recorded(t, s, ch)
	positions := offerAll(t, pub, 0, total, nil)
	waitRecorded(t, s, id, positions[len(positions)-1])
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	nextSignal(t, s.archive, archive.SignalStop)

	if err := s.archive.TruncateRecording(ctx, id, positions[total/2-1]); err != nil {
		t.Fatal(err)
	}
	if stop, err := s.archive.StopPosition(ctx, id); err != nil || stop != positions[total/2-1] {
		t.Fatalf("stop position after truncation = %d, %v; want %d", stop, err, positions[total/2-1])
	}
	n := 0
	readUntilEnd(t, startReplay(t, s, id, archive.NullPosition, archive.ReplayToEnd), func(r replayed) { n++ })
	if n != total/2 {
		t.Errorf("replayed %d messages of the truncated recording, want %d", n, total/2)
	}

	if err := s.archive.PurgeRecording(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := s.archive.Recording(ctx, id); !errors.Is(err, archive.ErrRecordingUnknown) {
		t.Errorf("describing a purged recording = %v, want ErrRecordingUnknown", err)
	}
	if _, err := s.archive.StopPosition(ctx, id); !errors.Is(err, archive.ErrRecordingUnknown) {
		t.Errorf("stop position of a purged recording = %v, want ErrRecordingUnknown", err)
	}
	if found, err := s.archive.RecordingsForURI(ctx, "aeron:ipc", stream, 10); err != nil || len(found) != 0 {
		t.Errorf("listing after the purge = %+v, %v; want none", found, err)
	}
}
