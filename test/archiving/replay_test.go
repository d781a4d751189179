package archiving

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
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
	stream := infra.UniqueStreamID()
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
		each(replayed{payload: bytes.Clone(b), position: h.Position()})
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
// records it, so the recording starts at a non-zero position (lesson 8). For IPC that is
// where the driver last saw the slowest consumer (IpcPublication.joinPosition), so it may
// even fall inside a fragmented message. Replays from the recording's start and from a
// position in the middle deliver exactly the messages whose first fragment was recorded,
// byte for byte, at the positions they had when published; a message cut by the start is
// dropped whole by the assembler, never delivered damaged (lesson 10).
func TestReplayOfARecordingThatStartsMidStream(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch = "aeron:ipc?term-length=64k"
	stream := infra.UniqueStreamID()
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
	consume := func() {
		if _, err := keep.Poll(func([]byte, aeron.Header) {}, 1000); err != nil {
			t.Fatal(err)
		}
	}
	const before, recorded = 30, 60
	positions := offerAll(t, pub, 0, before, consume)
	unrecorded := pub.Position()

	subID, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	start := nextSignal(t, s.archive, archive.SignalStart)
	if start.Position <= 0 || start.Position > unrecorded || start.Position%32 != 0 {
		t.Fatalf("recording started at %d; want a frame-aligned position in (0, %d]", start.Position, unrecorded)
	}
	positions = append(positions, offerAll(t, pub, before, before+recorded, consume)...)
	waitRecorded(t, s, start.RecordingID, pub.Position())
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	stop := nextSignal(t, s.archive, archive.SignalStop)
	d, err := s.archive.Recording(ctx, start.RecordingID)
	if err != nil {
		t.Fatal(err)
	}
	last := positions[len(positions)-1]
	if d.StartPosition != start.Position || d.StopPosition != last || stop.Position != last {
		t.Fatalf("descriptor start %d stop %d, STOP signal at %d; want start %d, stop %d", d.StartPosition, d.StopPosition, stop.Position, start.Position, last)
	}
	// The first message the recording holds whole: the first one whose first fragment
	// begins at or after the recording's start.
	first := 0
	for positions[first]-framedLength(len(payloadFor(first)), pub.MaxPayloadLength()) < d.StartPosition {
		first++
	}
	t.Logf("recording of %d..%d starts at %d: message %d is the first recorded whole", d.StartPosition, d.StopPosition, d.StartPosition, first)

	for _, from := range []int{first, before + recorded/2} {
		t.Run(fmt.Sprintf("from message %d", from), func(t *testing.T) {
			position := d.StartPosition
			if from > first {
				position = positions[from-1] // the position after the previous message
			}
			img := startReplay(t, s, d.RecordingID, position, archive.ReplayToEnd)
			if img.JoinPosition() != position {
				t.Errorf("replay image joined at %d, want %d", img.JoinPosition(), position)
			}
			i := from
			readUntilEnd(t, img, func(r replayed) {
				if i >= len(positions) {
					t.Fatalf("replay delivered more than the %d messages published", len(positions))
				}
				if !bytes.Equal(r.payload, payloadFor(i)) || r.position != positions[i] {
					t.Fatalf("replayed message %d: %d bytes at %d; want %d bytes at %d", i, len(r.payload), r.position, len(payloadFor(i)), positions[i])
				}
				i++
			})
			if i != len(positions) {
				t.Errorf("replayed messages %d..%d, want %d..%d", from, i-1, from, len(positions)-1)
			}
		})
	}
}

// framedLength is the log space a message of n bytes takes (aeron-protocol.md §5.7):
// full fragments of maxPayload bytes plus an aligned last one, each with a 32-byte header.
func framedLength(n, maxPayload int) int64 {
	const header, alignment = 32, 32
	align := func(x int) int { return (x + alignment - 1) &^ (alignment - 1) }
	if n <= maxPayload {
		return int64(align(n + header))
	}
	full, rest := n/maxPayload, n%maxPayload
	length := full * (maxPayload + header)
	if rest > 0 {
		length += align(rest + header)
	}
	return int64(length)
}

// TestReplayFollowsALiveRecordingToItsStop: a replay with no length started while the
// recording is live follows it as the publisher keeps publishing, is never ahead of the
// recorded position, and ends exactly at the stop position once the recording stops
// (lesson 7).
func TestReplayFollowsALiveRecordingToItsStop(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch, total = "aeron:ipc?term-length=64k", 400
	stream := infra.UniqueStreamID()
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
				if !errors.Is(err, aeron.ErrBackPressured) && !errors.Is(err, aeron.ErrAdminAction) {
					return // the test failed or ended: stop, do not spin
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
			if rec != archive.NullPosition && h.Position() > rec {
				t.Fatalf("replay at %d is ahead of the recording at %d", h.Position(), rec)
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

// TestAReplayItsCallerGaveUpOnIsStopped: StartReplay's context ends after the request went
// out and before the archive answered. The archive starts the replay anyway — of a live
// recording, so it would follow it for ever, its image held open on the replay stream. The
// client stops it when the answer comes: the replay's image goes away.
func TestAReplayItsCallerGaveUpOnIsStopped(t *testing.T) {
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	stream := infra.UniqueStreamID()
	sub, err := s.archive.StartRecording(ctx, "aeron:ipc", stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.aeron.AddExclusivePublication(ctx, "aeron:ipc", stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = pub.Close()
		_ = s.archive.StopRecordingSubscription(ctx, sub)
	})
	id := nextSignal(t, s.archive, archive.SignalStart).RecordingID
	offerAll(t, pub, 0, 10, nil)

	replayStream := infra.UniqueStreamID()
	var joined atomic.Int32
	replays, err := s.aeron.AddSubscription(ctx, "aeron:ipc", replayStream, aeron.ImageHandlers{OnAvailable: func(*aeron.Image) { joined.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replays.Close() })
	// Give up ever later, until a request given up on went out (its replay's image joined).
	for wait := 20 * time.Microsecond; ; wait *= 2 {
		if wait > time.Second {
			t.Fatal("every StartReplay was answered within its time, or never sent")
		}
		before := joined.Load()
		callCtx, cancel := context.WithTimeout(ctx, wait)
		session, err := s.archive.StartReplay(callCtx, id, 0, archive.ReplayToEnd, "aeron:ipc", replayStream)
		cancel()
		if err == nil { // answered in time: not the case under test
			if err := s.archive.StopReplay(ctx, session); err != nil {
				t.Fatal(err)
			}
			eventually.NoError(t, 10*time.Second, func() error { return noImages(replays) })
			continue
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatal(err)
		}
		// Sent or not? A replay started joins its image within a second.
		started := false
		for deadline := time.Now().Add(time.Second); !started && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			started = joined.Load() != before
		}
		if !started {
			continue
		}
		t.Logf("given up on after %s; the replay started anyway", wait)
		eventually.NoError(t, 10*time.Second, func() error { return noImages(replays) })
		return
	}
}

// noImages fails while sub has an image. It reads what they hold: an IPC publication
// closed with data its subscribers have not read drains before its images go.
func noImages(sub *aeron.Subscription) error {
	if _, err := sub.Poll(func([]byte, aeron.Header) {}, 1000); err != nil {
		return err
	}
	if n := len(sub.Images()); n > 0 {
		return fmt.Errorf("%d replay image(s) still open", n)
	}
	return nil
}
