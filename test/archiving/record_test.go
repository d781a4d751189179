package archiving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestRecordListDescribeStop records a Go publication through StartRecording, then lists,
// describes and reads the positions of the recording while it is live and after it stops.
func TestRecordListDescribeStop(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch = "aeron:ipc?term-length=64k|alias=rec"
	stream := infra.UniqueStreamID()
	if s.archive.ArchiveID() != 1 {
		t.Errorf("archive id = %d, want the configured 1", s.archive.ArchiveID())
	}
	subID, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.aeron.AddExclusivePublication(ctx, ch, stream)
	if err != nil {
		t.Fatal(err)
	}
	start := nextSignal(t, s.archive, archive.SignalStart)
	if start.SubscriptionID != subID {
		t.Errorf("START signal for subscription %d, want %d", start.SubscriptionID, subID)
	}
	id := start.RecordingID

	var last int64
	for i := range 100 {
		msg := []byte(fmt.Sprintf("message %d", i))
		eventually.NoError(t, 5*time.Second, func() error { p, err := pub.Offer(msg); last = p; return err })
	}
	eventually.NoError(t, 10*time.Second, func() error {
		pos, err := s.archive.RecordingPosition(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if pos != last {
			return fmt.Errorf("recording position %d, publication at %d", pos, last)
		}
		return nil
	})
	live, err := s.archive.Recording(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !live.IsLive() || live.StopPosition != archive.NullPosition || live.StreamID != stream || live.SessionID != pub.SessionID() || live.OriginalChannel != ch {
		t.Errorf("live descriptor = %+v", live)
	}
	if stop, err := s.archive.StopPosition(ctx, id); err != nil || stop != archive.NullPosition {
		t.Errorf("stop position of a live recording = %d, %v; want NullPosition", stop, err)
	}
	listed, err := s.archive.RecordingsForURI(ctx, "term-length=64k", stream, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(listed) != 1 || listed[0].RecordingID != id {
		t.Errorf("listing for stream %d = %+v, want recording %d only", stream, listed, id)
	}

	// By parameters, in any order, and not by substring.
	for _, c := range []struct {
		channel string
		found   bool
	}{
		{"aeron:ipc", true},
		{"aeron:ipc?alias=rec|term-length=64k", true},
		{"aeron:ipc?alias=re", false},
		{"aeron:ipc?term-length=64k|alias=rec|eos=false", false},
		{"aeron:udp?endpoint=127.0.0.1:40123", false},
	} {
		uri, err := channel.Parse(c.channel)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.archive.RecordingsOfChannel(ctx, uri, stream, 10)
		if err != nil {
			t.Fatal(err)
		}
		if found := len(got) == 1 && got[0].RecordingID == id; found != c.found || len(got) > 1 {
			t.Errorf("RecordingsOfChannel(%s, stream %d) = %+v; want recording %d: %t", c.channel, stream, got, id, c.found)
		}
	}

	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	stop := nextSignal(t, s.archive, archive.SignalStop)
	if stop.RecordingID != id || stop.Position != last {
		t.Errorf("STOP signal = %+v, want recording %d at %d", stop, id, last)
	}
	if got, err := s.archive.StopPosition(ctx, id); err != nil || got != last {
		t.Errorf("stop position = %d, %v; want %d", got, err, last)
	}
	if got, err := s.archive.RecordingPosition(ctx, id); err != nil || got != archive.NullPosition {
		t.Errorf("recording position after stop = %d, %v; want NullPosition", got, err)
	}
	if _, err := s.archive.Recording(ctx, 1<<40); !errors.Is(err, archive.ErrRecordingUnknown) {
		t.Errorf("describing an unknown recording = %v, want ErrRecordingUnknown", err)
	}
}

// recorded starts recording ch on a new stream id and adds a publication to it; it returns
// the stream id, the recording subscription and the publication's recording id (from the
// archive's START signal).
func recorded(t testing.TB, s session, ch string) (stream int32, subID int64, pub *aeron.ExclusivePublication, id int64) {
	t.Helper()
	ctx := context.Background()
	stream = infra.UniqueStreamID()
	subID, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	if pub, err = s.aeron.AddExclusivePublication(ctx, ch, stream); err != nil {
		t.Fatal(err)
	}
	return stream, subID, pub, nextSignal(t, s.archive, archive.SignalStart).RecordingID
}

// nextSignal waits for the next signal of kind, skipping others.
func nextSignal(t testing.TB, c *archive.Client, kind archive.SignalKind) archive.Signal {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case s, ok := <-c.Signals():
			if !ok {
				t.Fatalf("signals closed while waiting for %v: %v", kind, c.Err())
			}
			if s.Kind == kind {
				return s
			}
		case <-timeout:
			t.Fatalf("no %v signal within 10 s", kind)
		}
	}
}

// TestRecordingsOfChannelSkipsRecordingsOfOtherChannels: the archive recorded a channel with
// a value Aeron accepts and the channel package would reject (sparse=1) on the same stream
// id as the selected channel; the listing of the selected channel returns its own recording
// and no error, instead of failing on the other's.
func TestRecordingsOfChannelSkipsRecordingsOfOtherChannels(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	stream := infra.UniqueStreamID()
	// One recording per channel, one after the other: the archive keys a recording
	// subscription by its stripped channel, "aeron:ipc" for both.
	record := func(ch string) int64 {
		sub, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := s.aeron.AddExclusivePublication(ctx, "aeron:ipc", stream)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		id := nextSignal(t, s.archive, archive.SignalStart).RecordingID
		if err := s.archive.StopRecordingSubscription(ctx, sub); err != nil {
			t.Fatal(err)
		}
		nextSignal(t, s.archive, archive.SignalStop)
		return id
	}
	record("aeron:ipc?sparse=1")
	mine := record("aeron:ipc?alias=mine")
	uri, err := channel.Parse("aeron:ipc?alias=mine")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.archive.RecordingsOfChannel(ctx, uri, stream, 10)
	if err != nil || len(got) != 1 || got[0].RecordingID != mine {
		t.Fatalf("RecordingsOfChannel(%s) = %+v, %v; want recording %d only", uri, got, err, mine)
	}
}

// TestExtendRecordingAppendsToAStoppedRecording: a recording stopped at a position is
// extended by a publication created at that position (its initial term id, term length and
// MTU); the archive signals EXTEND, the recording is live again under the same id with the
// extending publication's session, and on its stop it holds both parts, the second from the
// old stop position on.
func TestExtendRecordingAppendsToAStoppedRecording(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch = "aeron:ipc?term-length=64k"
	stream, subID, pub, id := recorded(t, s, ch)
	first := offerAll(t, pub, 0, 50, nil)
	waitRecorded(t, s, id, pub.Position())
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	stopped := nextSignal(t, s.archive, archive.SignalStop).Position
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	d, err := s.archive.Recording(ctx, id)
	if err != nil {
		t.Fatal(err)
	}

	at, err := channel.Parse(ch)
	if err != nil {
		t.Fatal(err)
	}
	ext, err := d.ContinuationChannel(at)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.archive.ExtendRecording(ctx, id, ext.String(), stream, archive.SourceLocal, true); err != nil {
		t.Fatal(err)
	}
	pub2, err := s.aeron.AddExclusivePublication(ctx, ext.String(), stream)
	if err != nil {
		t.Fatal(err)
	}
	if pub2.Position() != stopped {
		t.Fatalf("the extending publication starts at %d, want the stop position %d", pub2.Position(), stopped)
	}
	extend := nextSignal(t, s.archive, archive.SignalExtend)
	if extend.RecordingID != id || extend.Position != stopped {
		t.Errorf("EXTEND signal = %+v, want recording %d at %d", extend, id, stopped)
	}
	live, err := s.archive.Recording(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !live.IsLive() || live.SessionID != pub2.SessionID() || live.StartTimestampMs != d.StartTimestampMs || live.StartPosition != d.StartPosition {
		t.Errorf("extended descriptor = %+v; want live, in session %d, with the start of %+v", live, pub2.SessionID(), d)
	}
	second := offerAll(t, pub2, 50, 80, nil)
	waitRecorded(t, s, id, pub2.Position())
	if err := pub2.Close(); err != nil {
		t.Fatal(err)
	}
	end := nextSignal(t, s.archive, archive.SignalStop)
	if end.RecordingID != id || end.Position != second[len(second)-1] {
		t.Errorf("STOP signal after the extension = %+v, want recording %d at %d", end, id, second[len(second)-1])
	}

	img := startReplay(t, s, id, d.StartPosition, archive.ReplayToEnd)
	positions := append(first, second...)
	i := 0
	readUntilEnd(t, img, func(r replayed) {
		if i >= len(positions) || !bytes.Equal(r.payload, payloadFor(i)) || r.position != positions[i] {
			t.Fatalf("replayed message %d: %d bytes at %d", i, len(r.payload), r.position)
		}
		i++
	})
	if i != len(positions) {
		t.Errorf("replayed %d messages, want %d", i, len(positions))
	}
}
