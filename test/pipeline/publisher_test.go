package pipeline

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// The archive's default MTU; a message longer than maxPayload is fragmented.
const (
	mtu        = 1408
	maxPayload = mtu - 32 // one frame's payload: the MTU less the data header
	maxMessage = 4 * mtu  // the longest message the tests publish
)

// edgeSizes are the message sizes around fragment boundaries; every 16th message takes
// the next of them.
var edgeSizes = []int{maxPayload, maxPayload + 1, 2 * maxPayload, 2*maxPayload + 1, 3*maxPayload + 1, maxMessage, 8, 9}

// payloadSize cycles through small messages (most of them), messages of one to three
// fragments, and the edge sizes.
func payloadSize(i int) int {
	h := int((uint32(i) * 2654435761) >> 8) // a spread of i
	switch i % 16 {
	case 0:
		return edgeSizes[(i/16)%len(edgeSizes)]
	case 5, 10, 15:
		return maxPayload/2 + h%(3*maxPayload)
	default:
		return 8 + h%200
	}
}

// payloadFor is message i: its index (8 bytes, big-endian) and bytes that depend on i and
// the offset, payloadSize(i) long.
func payloadFor(i int) []byte {
	b := make([]byte, payloadSize(i))
	binary.BigEndian.PutUint64(b, uint64(i))
	for j := 8; j < len(b); j++ {
		b[j] = byte(i*131 + j*7)
	}
	return b
}

// sizedPayload is message i of size bytes (at least 8): its index (8 bytes, big-endian),
// then the byte i repeated.
func sizedPayload(i, size int) []byte {
	b := bytes.Repeat([]byte{byte(i)}, size)
	binary.BigEndian.PutUint64(b, uint64(i))
	return b
}

// indexOf is the index payloadFor wrote into a payload, or -1 if it has none.
func indexOf(payload []byte) int {
	if len(payload) < 8 {
		return -1
	}
	return int(binary.BigEndian.Uint64(payload))
}

// payloads is payloadFor(from..to-1).
func payloads(from, to int) [][]byte {
	out := make([][]byte, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, payloadFor(i))
	}
	return out
}

// aeronSession is an Aeron client and an archive control session on the shared archive's
// media driver: the test's own, separate from ferry's.
type aeronSession struct {
	aeron   *aeron.Client
	archive *archive.Client
}

func connectArchive(t testing.TB) aeronSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ac, err := aeron.Connect(ctx, aeron.Options{Dir: peers.Archive.AeronDir})
	if err != nil {
		t.Fatalf("aeron connect: %v", err)
	}
	t.Cleanup(func() { _ = ac.Close() })
	arc, err := archive.Connect(ctx, ac, archive.Options{ResponseStreamID: infra.UniqueStreamID()})
	if err != nil {
		t.Fatalf("archive connect: %v", err)
	}
	t.Cleanup(func() { _ = arc.Close() })
	return aeronSession{aeron: ac, archive: arc}
}

// recordedStream is one channel and stream id that the test publishes on and the archive
// records (once startRecording was called). Every publication on it is a session of its
// own, so a recording of its own.
type recordedStream struct {
	s         aeronSession
	channel   string
	streamID  int32
	subID     int64 // the archive's recording subscription while recording
	recording bool
}

// newStream connects to the shared archive for channel and streamID without recording yet.
func newStream(t testing.TB, channel string, streamID int32) *recordedStream {
	t.Helper()
	rs := &recordedStream{s: connectArchive(t), channel: channel, streamID: streamID}
	t.Cleanup(func() {
		if rs.recording {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = rs.s.archive.StopRecordingSubscription(ctx, rs.subID)
		}
	})
	return rs
}

// newRecordedStream has the archive record channel and streamID, and creates the first
// publication on it: the archive records it from position 0.
func newRecordedStream(t testing.TB, channel string, streamID int32) (*recordedStream, *publisher) {
	t.Helper()
	rs := newStream(t, channel, streamID)
	rs.startRecording(t)
	return rs, rs.newPublication(t)
}

// startRecording asks the archive to record the stream (StartRecording, local source).
// Publications that exist already must be told with awaitRecording.
func (rs *recordedStream) startRecording(t testing.TB) {
	t.Helper()
	if rs.recording {
		t.Fatal("startRecording: already recording")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := rs.s.archive.StartRecording(ctx, rs.channel, rs.streamID, archive.SourceLocal, false)
	if err != nil {
		t.Fatalf("start recording %s stream %d: %v", rs.channel, rs.streamID, err)
	}
	rs.subID, rs.recording = id, true
}

// truncate has the archive truncate a's recording at position at (TruncateRecording: the
// recording stopped).
func (rs *recordedStream) truncate(t testing.TB, a *publisher, at int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.s.archive.TruncateRecording(ctx, a.recordingID, at); err != nil {
		t.Fatalf("truncate recording %d at %d: %v", a.recordingID, at, err)
	}
}

// stopRecording stops the recording subscription, and with it the recordings of pubs,
// once each has recorded everything its publication published (the archive stops a
// recording where it has got to, not where the publisher is: docs/findings.md). It waits
// until each recording has its stop position, and checks that it is the publication's.
func (rs *recordedStream) stopRecording(t testing.TB, pubs ...*publisher) {
	t.Helper()
	if !rs.recording {
		t.Fatal("stopRecording: not recording")
	}
	for _, p := range pubs {
		p.waitRecorded(t, p.pub.Position())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rs.s.archive.StopRecordingSubscription(ctx, rs.subID); err != nil {
		t.Fatalf("stop recording: %v", err)
	}
	rs.recording = false
	for _, p := range pubs {
		p.waitStopped(t, p.pub.Position())
	}
}

// publisher is one exclusive publication on a recorded stream and the recording the
// archive makes of it.
type publisher struct {
	rs          *recordedStream
	pub         *aeron.ExclusivePublication
	recordingID int64 // -1 until recorded
	// meanwhile, if set, runs between offer attempts (e.g. to drain a plain subscriber).
	meanwhile func()
}

// newPublication adds an exclusive publication (a new session) to the stream. If the
// stream is being recorded, it waits for the archive's recording of it.
func (rs *recordedStream) newPublication(t testing.TB) *publisher {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := rs.s.aeron.AddExclusivePublication(ctx, rs.channel, rs.streamID)
	if err != nil {
		t.Fatalf("publication on %s stream %d: %v", rs.channel, rs.streamID, err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	p := &publisher{rs: rs, pub: pub, recordingID: -1}
	if rs.recording {
		p.awaitRecording(t)
	}
	return p
}

// extend continues the stopped recording of a (whose publication is closed) with a new
// publication at its stop position, recorded by the archive's ExtendRecording; sameSession
// gives the new publication a's session id, as a publisher resuming its stream may. The
// archive stops the extension when the new publication closes.
func (rs *recordedStream) extend(t testing.TB, a *publisher, sameSession bool) *publisher {
	t.Helper()
	if rs.recording {
		t.Fatal("extend: stop the stream's recording first (the archive records a channel once)")
	}
	d := a.descriptor(t)
	base, err := channel.Parse(rs.channel)
	if err != nil {
		t.Fatal(err)
	}
	if sameSession {
		if base, err = channel.BuilderFrom(base).SessionID(d.SessionID).Build(); err != nil {
			t.Fatal(err)
		}
	}
	ext, err := d.ContinuationChannel(base)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	subID, err := rs.s.archive.ExtendRecording(ctx, d.RecordingID, ext.String(), rs.streamID, archive.SourceLocal, true)
	if err != nil {
		t.Fatalf("extend recording %d: %v", d.RecordingID, err)
	}
	t.Cleanup(func() { // stopped already (auto-stop) unless the publication never joined
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rs.s.archive.StopRecordingSubscription(ctx, subID)
	})
	// In a's session once the driver has let a's closed publication go (after its linger).
	var pub *aeron.ExclusivePublication
	eventually.NoError(t, 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pub, err = rs.s.aeron.AddExclusivePublication(ctx, ext.String(), rs.streamID)
		if err != nil && !(sameSession && strings.Contains(err.Error(), "clashing sessionId")) {
			t.Fatalf("publication on %s stream %d: %v", ext, rs.streamID, err)
		}
		return err
	})
	t.Cleanup(func() { _ = pub.Close() })
	if pub.Position() != d.StopPosition || sameSession && pub.SessionID() != d.SessionID {
		t.Fatalf("the extending publication is at %d in session %d; want the stop position %d (and session %d: %t)", pub.Position(), pub.SessionID(), d.StopPosition, d.SessionID, sameSession)
	}
	p := &publisher{rs: rs, pub: pub, recordingID: d.RecordingID}
	eventually.NoError(t, 10*time.Second, func() error {
		if now := p.descriptor(t); !now.IsLive() || now.SessionID != pub.SessionID() {
			return fmt.Errorf("recording %d is not yet live in session %d: %+v", d.RecordingID, pub.SessionID(), now)
		}
		return nil
	})
	return p
}

// stoppedThenLive records two recordings of a stream: A, nA messages (0..nA-1) from a
// publication now closed, its recording stopped at its end; then B, from a new publication,
// the next nB messages, live and recorded up to its last.
func stoppedThenLive(t testing.TB, sc streamConfig, nA, nB int) (rs *recordedStream, a *publisher, pa []int64, b *publisher, pb []int64) {
	t.Helper()
	rs, a = newRecordedStream(t, sc.Channel, sc.StreamID)
	pa = a.publish(t, 0, nA)
	rs.stopRecording(t, a)
	a.close(t)
	rs.startRecording(t)
	b = rs.newPublication(t)
	pb = b.publish(t, nA, nA+nB)
	b.waitRecorded(t, pb[nB-1])
	return rs, a, pa, b, pb
}

// awaitRecording waits until the archive lists a live recording of this publication's
// session other than the one already known, and takes its id.
func (p *publisher) awaitRecording(t testing.TB) archive.RecordingDescriptor {
	t.Helper()
	var found archive.RecordingDescriptor
	eventually.NoError(t, 10*time.Second, func() error {
		d, err := p.liveRecording()
		if err != nil {
			return err
		}
		found = d
		return nil
	})
	p.recordingID = found.RecordingID
	return found
}

func (p *publisher) liveRecording() (archive.RecordingDescriptor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := p.rs.s.archive.RecordingsForURI(ctx, p.rs.channel, p.rs.streamID, 100)
	if err != nil {
		return archive.RecordingDescriptor{}, err
	}
	for i := len(all) - 1; i >= 0; i-- {
		d := all[i]
		if d.SessionID == p.pub.SessionID() && d.IsLive() && d.RecordingID != p.recordingID {
			return d, nil
		}
	}
	return archive.RecordingDescriptor{}, fmt.Errorf("no new live recording of session %d among the %d of %s stream %d", p.pub.SessionID(), len(all), p.rs.channel, p.rs.streamID)
}

// descriptor is the archive's current descriptor of this publication's recording.
func (p *publisher) descriptor(t testing.TB) archive.RecordingDescriptor {
	t.Helper()
	p.mustBeRecorded(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := p.rs.s.archive.Recording(ctx, p.recordingID)
	if err != nil {
		t.Fatalf("describe recording %d: %v", p.recordingID, err)
	}
	return d
}

func (p *publisher) mustBeRecorded(t testing.TB) {
	t.Helper()
	if p.recordingID < 0 {
		t.Fatal("the publication has no recording (startRecording, then awaitRecording)")
	}
}

// waitRecorded waits until the archive has recorded this publication's recording up to
// position.
func (p *publisher) waitRecorded(t testing.TB, position int64) {
	t.Helper()
	p.mustBeRecorded(t)
	eventually.NoError(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rec, err := p.rs.s.archive.MaxRecordedPosition(ctx, p.recordingID)
		if err != nil {
			t.Fatalf("recorded position of recording %d: %v", p.recordingID, err)
		}
		if rec < position {
			return fmt.Errorf("recording %d recorded up to %d of %d", p.recordingID, rec, position)
		}
		return nil
	})
}

// waitStopped waits until the recording has stopped and fails unless it stopped at want.
func (p *publisher) waitStopped(t testing.TB, want int64) {
	t.Helper()
	p.mustBeRecorded(t)
	var stop int64
	eventually.NoError(t, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var err error
		if stop, err = p.rs.s.archive.StopPosition(ctx, p.recordingID); err != nil {
			t.Fatalf("stop position of recording %d: %v", p.recordingID, err)
		}
		if stop == archive.NullPosition {
			return fmt.Errorf("recording %d is still live", p.recordingID)
		}
		return nil
	})
	if stop != want {
		t.Fatalf("recording %d stopped at %d, want %d (the publication's position)", p.recordingID, stop, want)
	}
}

// close closes the publication and, if it is recorded, waits until its recording has
// stopped at the publication's final position (an IPC publication drains to the archive
// before it ends).
func (p *publisher) close(t testing.TB) {
	t.Helper()
	last := p.pub.Position()
	if err := p.pub.Close(); err != nil {
		t.Fatalf("close publication: %v", err)
	}
	if p.recordingID >= 0 {
		p.waitStopped(t, last)
	}
}

func retryable(err error) bool {
	return errors.Is(err, aeron.ErrBackPressured) || errors.Is(err, aeron.ErrNotConnected) || errors.Is(err, aeron.ErrAdminAction)
}

// offer offers msg until it is taken, a non-retryable error, or timeout; it returns the
// position after the message.
func (p *publisher) offer(msg []byte, timeout time.Duration) (int64, error) {
	deadline := time.Now().Add(timeout)
	for spins := 0; ; spins++ {
		pos, err := p.pub.Offer(msg)
		if err == nil {
			return pos, nil
		}
		if !retryable(err) {
			return 0, fmt.Errorf("offer message %d: %w", indexOf(msg), err)
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("offer message %d (%d bytes): %w for %s", indexOf(msg), len(msg), err, timeout)
		}
		if p.meanwhile != nil {
			p.meanwhile()
		}
		if spins < 100 {
			runtime.Gosched()
		} else {
			time.Sleep(100 * time.Microsecond) // back-off of a retry loop, not a wait for an outcome
		}
	}
}

// publish offers payloadFor(from..to-1), retrying back pressure, and returns the position
// after each message: its end position in the stream, and so in the recording.
func (p *publisher) publish(t testing.TB, from, to int) []int64 {
	t.Helper()
	return p.publishEach(t, to-from, func(k int) []byte { return payloadFor(from + k) })
}

// publishPayloads offers each of msgs in turn, as publish does, and returns the position
// after each.
func (p *publisher) publishPayloads(t testing.TB, msgs [][]byte) []int64 {
	t.Helper()
	return p.publishEach(t, len(msgs), func(k int) []byte { return msgs[k] })
}

// publishEach offers msg(0..n-1), made one at a time, retrying back pressure.
func (p *publisher) publishEach(t testing.TB, n int, msg func(k int) []byte) []int64 {
	t.Helper()
	positions := make([]int64, 0, n)
	for k := range n {
		msg := msg(k)
		eventually.NoError(t, 20*time.Second, func() error {
			pos, err := p.offer(msg, 5*time.Millisecond)
			if err != nil && !retryable(err) {
				t.Fatal(err)
			}
			if err == nil {
				positions = append(positions, pos)
			}
			return err
		})
	}
	return positions
}

// background publishes payloadFor(from, from+1, …) on a goroutine, a burst per tick,
// until stopped.
type background struct {
	p      *publisher
	from   int
	stopCh chan struct{}
	done   chan struct{}

	mu        sync.Mutex
	positions []int64
	err       error
}

// publishInBackground starts publishing from message from: perTick messages every tick, so
// that the stream stays live for as long as the test needs. The publication must not be
// used by anyone else until stop.
func (p *publisher) publishInBackground(t testing.TB, from, perTick int, tick time.Duration) *background {
	b := &background{p: p, from: from, stopCh: make(chan struct{}), done: make(chan struct{})}
	go b.run(perTick, tick)
	t.Cleanup(func() {
		select {
		case <-b.stopCh:
		default:
			close(b.stopCh)
		}
		<-b.done
	})
	return b
}

// maxBackground bounds a background publisher that nobody stops.
const maxBackground = 1_000_000

func (b *background) run(perTick int, tick time.Duration) {
	defer close(b.done)
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	i := b.from
	for {
		for range perTick {
			pos, err := b.p.offer(payloadFor(i), 10*time.Second)
			b.mu.Lock()
			if err != nil {
				b.err = err
			} else {
				b.positions = append(b.positions, pos)
			}
			b.mu.Unlock()
			if err != nil {
				return
			}
			i++
			if i-b.from >= maxBackground {
				return
			}
		}
		select {
		case <-b.stopCh:
			return
		case <-ticker.C:
		}
	}
}

// count is how many messages were published so far.
func (b *background) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.positions)
}

// positionsSoFar are the end positions of the messages published so far.
func (b *background) positionsSoFar() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.positions...)
}

// check fails the test if publishing failed.
func (b *background) check(t testing.TB) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		t.Fatalf("background publishing stopped: %v", b.err)
	}
}

// waitCount waits until at least n messages were published in all.
func (b *background) waitCount(t testing.TB, n int, timeout time.Duration) {
	t.Helper()
	eventually.NoError(t, timeout, func() error {
		b.check(t)
		if c := b.count(); c < n {
			return fmt.Errorf("published %d of %d messages", c, n)
		}
		return nil
	})
}

// stop stops publishing and returns the end position of every message published.
func (b *background) stop(t testing.TB) []int64 {
	t.Helper()
	close(b.stopCh)
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the background publisher did not stop within 30 s")
	}
	b.check(t)
	return b.positionsSoFar()
}

// plainSubscriber is a subscription on the stream that is not the archive's: it keeps a
// publication connected before the recording starts, and must be drained.
type plainSubscriber struct {
	sub *aeron.Subscription
}

func (rs *recordedStream) plainSubscriber(t testing.TB) *plainSubscriber {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sub, err := rs.s.aeron.AddSubscription(ctx, rs.channel, rs.streamID, aeron.ImageHandlers{})
	if err != nil {
		t.Fatalf("subscription on %s stream %d: %v", rs.channel, rs.streamID, err)
	}
	ps := &plainSubscriber{sub: sub}
	t.Cleanup(func() { _ = ps.close() })
	return ps
}

// drain polls what is available and discards it.
func (ps *plainSubscriber) drain() {
	_, _ = ps.sub.Poll(func([]byte, aeron.Header) {}, 1000)
}

// consumePast polls one fragment at a time until the subscriber's image of pub is past
// position, and returns where it stopped: inside a fragmented message that straddles
// position, it stops after that message's first fragment.
func (ps *plainSubscriber) consumePast(t testing.TB, p *publisher, position int64) int64 {
	t.Helper()
	var at int64
	eventually.NoError(t, 10*time.Second, func() error {
		img := ps.sub.ImageBySessionID(p.pub.SessionID())
		if img == nil {
			return fmt.Errorf("no image of session %d", p.pub.SessionID())
		}
		for img.Position() <= position {
			n, err := img.Poll(func([]byte, aeron.Header) {}, 1)
			if err != nil {
				t.Fatalf("poll: %v", err)
			}
			if n == 0 && img.Position() <= position {
				return fmt.Errorf("subscriber at %d, not past %d", img.Position(), position)
			}
		}
		at = img.Position()
		return nil
	})
	return at
}

func (ps *plainSubscriber) close() error { return ps.sub.Close() }

// waitConnected waits until a subscriber (the archive's or a plain one) is connected.
func (p *publisher) waitConnected(t testing.TB) {
	t.Helper()
	eventually.NoError(t, 10*time.Second, func() error {
		if !p.pub.IsConnected() {
			return errors.New("publication not connected")
		}
		return nil
	})
}

// newLateRecordedStream makes a stream whose recording starts after the publication has
// advanced, inside a fragmented message (lessons 8 and 10). Messages 0..cut, at least
// minBefore of them, are published before the recording; cut is fragmented. A plain
// subscriber keeps the publication connected meanwhile, consumes up to the first fragment
// of message cut and leaves: the driver samples a leaving subscriber's position into the
// publication's consumer position, which is where a new subscriber (the archive's) joins
// when no other is left. (A recording started while a subscriber is still there joins at
// the consumer position the driver last sampled, which can lag it all the way to 0.)
// It returns the stream, the publication (recorded) and the end positions of 0..cut.
func newLateRecordedStream(t testing.TB, channel string, streamID int32, minBefore int) (*recordedStream, *publisher, []int64) {
	t.Helper()
	cut := minBefore
	for payloadSize(cut) <= maxPayload || cut == 0 {
		cut++
	}
	rs := newStream(t, channel, streamID)
	keep := rs.plainSubscriber(t)
	pub := rs.newPublication(t)
	pub.meanwhile = keep.drain
	pub.waitConnected(t)
	positions := pub.publish(t, 0, cut+1)
	pub.meanwhile = nil
	at := keep.consumePast(t, pub, positions[cut-1])
	if at >= positions[cut] {
		t.Fatalf("the subscriber consumed message %d whole (at %d, the message ends at %d)", cut, at, positions[cut])
	}
	if err := keep.close(); err != nil {
		t.Fatal(err)
	}
	rs.startRecording(t)
	d := pub.awaitRecording(t)
	if d.StartPosition != at {
		t.Fatalf("the recording starts at %d, want %d (where the last subscriber left, inside message %d: %d..%d)", d.StartPosition, at, cut, positions[cut-1], positions[cut])
	}
	return rs, pub, positions
}

// recordedFrom is the index into positions (the end positions of a publication's messages
// from its first, which began at position 0) of the
// first message the recording holds whole for certain: the first whose predecessor ended
// at or after the recording's start. The message before it may be whole in the recording
// too (padding can sit between) or cut by the start.
func recordedFrom(positions []int64, start int64) int {
	if start == 0 {
		return 0
	}
	for k := 1; k < len(positions); k++ {
		if positions[k-1] >= start {
			return k
		}
	}
	return len(positions)
}

// equalPayload reports whether got is message i.
func equalPayload(got []byte, i int) bool { return bytes.Equal(got, payloadFor(i)) }
