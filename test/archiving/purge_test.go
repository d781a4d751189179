package archiving

import (
	"bytes"
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

// TestDetachThenAttachSegments: detaching a stopped recording's first two segments moves
// its start to the third and a replay from its start begins there; a detach off a segment
// boundary is refused; attaching brings both segments back — the start is 0 again and a
// replay delivers every message, in order, at the positions they were published at.
func TestDetachThenAttachSegments(t *testing.T) {
	const segment = 64 << 10
	own := startOwnArchive(t, map[string]string{"aeron.archive.segment.file.length": "64k"})
	s := connect(t, own, archive.Options{})
	ctx := context.Background()
	_, subID, pub, id := recorded(t, s, "aeron:ipc?term-length=64k")
	var positions []int64
	for len(positions) == 0 || positions[len(positions)-1] < 3*segment+segment/2 {
		positions = append(positions, offerAll(t, pub, len(positions), len(positions)+20, nil)...)
	}
	waitRecorded(t, s, id, positions[len(positions)-1])
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	nextSignal(t, s.archive, archive.SignalStop)

	if err := s.archive.DetachSegments(ctx, id, segment+1); !errors.Is(err, archive.ErrArchive) {
		t.Fatalf("detach at %d, off a segment boundary = %v, want ErrArchive", segment+1, err)
	}
	if err := s.archive.DetachSegments(ctx, id, 2*segment); err != nil {
		t.Fatal(err)
	}
	if d, err := s.archive.Recording(ctx, id); err != nil || d.StartPosition != 2*segment {
		t.Fatalf("start position after detaching two segments = %d, %v; want %d", d.StartPosition, err, 2*segment)
	}
	var first int64 = -1
	readUntilEnd(t, startReplay(t, s, id, archive.NullPosition, archive.ReplayToEnd), func(r replayed) {
		if first < 0 {
			first = r.position
		}
	})
	if first <= 2*segment {
		t.Errorf("replayed from the detached start: first message ends at %d, want beyond %d", first, 2*segment)
	}

	n, err := s.archive.AttachSegments(ctx, id)
	if err != nil || n != 2 {
		t.Fatalf("attach = %d segments, %v; want 2", n, err)
	}
	if d, err := s.archive.Recording(ctx, id); err != nil || d.StartPosition != 0 {
		t.Fatalf("start position after attaching = %d, %v; want 0", d.StartPosition, err)
	}
	i := 0
	readUntilEnd(t, startReplay(t, s, id, archive.NullPosition, archive.ReplayToEnd), func(r replayed) {
		if i < len(positions) && (r.position != positions[i] || !bytes.Equal(r.payload, payloadFor(i))) {
			t.Fatalf("replayed message %d at %d (%d bytes), want message %d at %d", i, r.position, len(r.payload), i, positions[i])
		}
		i++
	})
	if i != len(positions) {
		t.Errorf("replayed %d messages after attaching, want %d", i, len(positions))
	}
}
