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
	"github.com/ferry-bridge/ferry/test/eventually"
)

// replayed is one message read back through a replay, with the position after it.
type replayed struct {
	payload  []byte
	position int64
}

// payloadFor makes message i: its index and a size cycling from a few bytes to over three
// MTUs (the archive's default MTU is 1408), so fragmented messages cross term boundaries.
func payloadFor(i int) []byte {
	size := 16 + (i*997)%(3*1408+500)
	b := bytes.Repeat([]byte{byte(i)}, size)
	copy(b, fmt.Sprintf("m%06d", i))
	return b
}

// offerAll offers payloadFor(from..to-1) and returns the position after each. Between
// attempts it calls meanwhile, if given (e.g. to let a subscriber consume).
func offerAll(t *testing.T, pub *aeron.ExclusivePublication, from, to int, meanwhile func()) []int64 {
	t.Helper()
	var positions []int64
	for i := from; i < to; i++ {
		msg := payloadFor(i)
		eventually.NoError(t, 10*time.Second, func() error {
			if meanwhile != nil {
				meanwhile()
			}
			p, err := pub.Offer(msg)
			if err == nil {
				positions = append(positions, p)
			}
			return err
		})
	}
	return positions
}

// startReplay replays recording id from position for length to a fresh IPC stream and
// returns the replay's image.
func startReplay(t *testing.T, s session, id, position, length int64) *aeron.Image {
	t.Helper()
	ctx := context.Background()
	stream := uniqueStream()
	replaySession, err := s.archive.StartReplay(ctx, id, position, length, "aeron:ipc", stream)
	if err != nil {
		t.Fatal(err)
	}
	ch := fmt.Sprintf("aeron:ipc?session-id=%d", archive.ReplayImageSessionID(replaySession))
	sub, err := s.aeron.AddSubscription(ctx, ch, stream, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	var img *aeron.Image
	eventually.NoError(t, 10*time.Second, func() error {
		if img = sub.ImageBySessionID(archive.ReplayImageSessionID(replaySession)); img == nil {
			return errors.New("the replay image has not joined")
		}
		return nil
	})
	return img
}

// readUntilEnd reads a replay image until end of stream.
func readUntilEnd(t *testing.T, img *aeron.Image, each func(replayed)) {
	t.Helper()
	asm := aeron.NewFragmentAssembler(img.MaxMessageLength(), func(b []byte, h aeron.Header) {
		each(replayed{payload: bytes.Clone(b), position: h.Position})
	})
	eventually.NoError(t, 60*time.Second, func() error {
		for {
			n, err := img.Poll(asm.OnFragment, 100)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		if !img.IsEndOfStream() {
			return fmt.Errorf("replay at %d, not at its end", img.Position())
		}
		return nil
	})
}

// TestReplayOfARecordingThatStartsMidStream: the publication advances before the archive
// records it, so the recording starts at a non-zero position. Replays from its start and
// from a position in the middle return exactly the recorded messages, byte for byte, at
// the positions they had when published (lessons 8 and 10).
func TestReplayOfARecordingThatStartsMidStream(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch = "aeron:ipc?term-length=64k"
	stream := uniqueStream()
	// A plain subscriber keeps the publication connected before the recording starts.
	keep, err := s.aeron.AddSubscription(ctx, ch, stream, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.aeron.AddExclusivePublication(ctx, ch, stream)
	if err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if !pub.IsConnected() {
			return errors.New("not connected")
		}
		return nil
	})
	drain := func() {
		for {
			if n, _ := keep.Poll(func([]byte, aeron.Header) {}, 1000); n == 0 {
				return
			}
		}
	}
	const before, recorded = 30, 60
	offerAll(t, pub, 0, before, drain)
	drain()
	unrecorded := pub.Position()

	subID, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	start := nextSignal(t, s.archive, archive.SignalStart)
	if start.Position != unrecorded {
		t.Fatalf("recording started at %d, want %d (the publication's position)", start.Position, unrecorded)
	}
	positions := offerAll(t, pub, before, before+recorded, drain)
	drain()
	// The archive records asynchronously and stops where it has got to: stopping before
	// it caught up with the publisher would cut the recording short.
	waitRecorded(t, s, start.RecordingID, pub.Position())
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	stop := nextSignal(t, s.archive, archive.SignalStop)
	d, err := s.archive.Recording(ctx, start.RecordingID)
	if err != nil {
		t.Fatal(err)
	}
	if d.StartPosition != unrecorded || d.StopPosition != positions[len(positions)-1] || stop.Position != d.StopPosition {
		t.Fatalf("descriptor start %d stop %d, STOP signal at %d; want start %d stop %d", d.StartPosition, d.StopPosition, stop.Position, unrecorded, positions[len(positions)-1])
	}

	for _, from := range []int{0, recorded / 2} {
		t.Run(fmt.Sprintf("from message %d", before+from), func(t *testing.T) {
			position := d.StartPosition
			if from > 0 {
				position = positions[from-1] // the position after the previous message
			}
			img := startReplay(t, s, d.RecordingID, position, archive.ReplayToEnd)
			if img.JoinPosition() != position {
				t.Errorf("replay image joined at %d, want %d", img.JoinPosition(), position)
			}
			i := from
			readUntilEnd(t, img, func(r replayed) {
				if i >= recorded {
					t.Fatalf("replay delivered more than the %d recorded messages", recorded)
				}
				if !bytes.Equal(r.payload, payloadFor(before+i)) || r.position != positions[i] {
					t.Fatalf("replayed message %d: %d bytes at %d; want %d bytes at %d", before+i, len(r.payload), r.position, len(payloadFor(before+i)), positions[i])
				}
				i++
			})
			if i != recorded {
				t.Errorf("replayed %d messages, want %d", i-from, recorded-from)
			}
		})
	}
}

// TestReplayFollowsALiveRecordingToItsStop: a replay with no length started while the
// recording is live follows it as the publisher keeps publishing, is never ahead of the
// recorded position, and ends exactly at the stop position once the recording stops
// (lesson 7).
func TestReplayFollowsALiveRecordingToItsStop(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch, total = "aeron:ipc?term-length=64k", 400
	stream := uniqueStream()
	subID, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.aeron.AddExclusivePublication(ctx, ch, stream)
	if err != nil {
		t.Fatal(err)
	}
	id := nextSignal(t, s.archive, archive.SignalStart).RecordingID
	positions := offerAll(t, pub, 0, total/4, nil)

	img := startReplay(t, s, id, archive.NullPosition, archive.ReplayToEnd)
	published := make(chan []int64, 1)
	go func() {
		// Keep publishing while the replay follows; the archive records as it goes.
		var more []int64
		for i := total / 4; i < total; i++ {
			msg := payloadFor(i)
			for {
				p, err := pub.Offer(msg)
				if err == nil {
					more = append(more, p)
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		published <- more
	}()

	i := 0
	checked := 0
	asm := aeron.NewFragmentAssembler(img.MaxMessageLength(), func(b []byte, h aeron.Header) {
		if !bytes.Equal(b, payloadFor(i)) {
			t.Fatalf("replayed message %d differs (%d bytes)", i, len(b))
		}
		// Never ahead of what the archive has recorded (checked for a sample: each check
		// is a request to the archive).
		if i%40 == 0 {
			rec, err := s.archive.RecordingPosition(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec != archive.NullPosition && h.Position > rec {
				t.Fatalf("replay at %d is ahead of the recording at %d", h.Position, rec)
			}
			checked++
		}
		i++
	})
	var all []int64
	stopped := false
	eventually.NoError(t, 60*time.Second, func() error {
		if _, err := img.Poll(asm.OnFragment, 50); err != nil {
			t.Fatal(err)
		}
		if !stopped {
			select {
			case more := <-published:
				all = append(positions, more...)
				waitRecorded(t, s, id, all[len(all)-1])
				if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
					t.Fatal(err)
				}
				stopped = true
			default:
			}
			return fmt.Errorf("publishing (%d replayed so far)", i)
		}
		if !img.IsEndOfStream() {
			return fmt.Errorf("replayed %d messages, at %d, not at the end", i, img.Position())
		}
		return nil
	})
	stopAt, err := s.archive.StopPosition(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if i != total || img.Position() != stopAt || stopAt != all[len(all)-1] {
		t.Errorf("replayed %d of %d messages, ended at %d; recording stopped at %d, publisher at %d", i, total, img.Position(), stopAt, all[len(all)-1])
	}
	if checked == 0 {
		t.Error("the replay position was never compared with the recording position")
	}
}

// waitRecorded waits until the archive has recorded recording id up to position.
func waitRecorded(t *testing.T, s session, id, position int64) {
	t.Helper()
	eventually.NoError(t, 10*time.Second, func() error {
		rec, err := s.archive.RecordingPosition(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if rec < position {
			return fmt.Errorf("recorded up to %d of %d", rec, position)
		}
		return nil
	})
}
