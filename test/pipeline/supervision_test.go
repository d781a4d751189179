package pipeline

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/harness"
)

// TestReplayFailureMidStreamRestartsFromThePersistedWatermark: the replay's subscription is
// closed under it mid-stream (as when the driver drops an image). The Replay actor fails,
// its supervisor restarts it from the persisted watermark — not from the start, not from
// what it had read — and nothing is lost or duplicated in the topic.
func TestReplayFailureMidStreamRestartsFromThePersistedWatermark(t *testing.T) {
	const n = 3000
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	w := watchTopic(t, sc.Topic)
	subs := &subscriptions{}
	starts := &replayStarts{}
	ip := startInProcess(t, inProcessOptions{wrapAeron: subs.wrap, wrapArchive: starts.wrap}, sc)
	starts.readStoredWith(func() (int64, error) {
		state, err := ip.store.Load(sc.definition())
		for _, c := range state.Checkpoints {
			if c.RecordingID == pub.recordingID {
				return c.Position, err
			}
		}
		return 0, err
	})
	head := pub.publish(t, 0, n/2)
	eventually.NoError(t, 30*time.Second, func() error {
		switch {
		case w.distinct() < n/4:
			return errors.New("fewer than a quarter of the messages arrived")
		case ip.checkpoint(sc, pub.recordingID).Position == 0:
			return errors.New("no checkpoint persisted yet")
		}
		return nil
	})
	first := subs.get(t, 0)
	atClose := ip.checkpoint(sc, pub.recordingID).Position
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	rest := pub.publish(t, n/2, n)
	subs.get(t, 1) // the restarted replay subscribed again
	ip.waitCheckpoint(sc, pub.recordingID, rest[len(rest)-1], 60*time.Second)
	calls := starts.get()
	if len(calls) < 2 {
		t.Fatalf("%d replays started, want the first and the restart's", len(calls))
	}
	// The restart replays from a checkpoint persisted at or after the close: it reads again
	// the record that ends at that checkpoint (to check it is the one published), so it
	// begins at that record's start — the end of the message before it — and the record
	// ends between the checkpoint at the close and the one stored when it asked the archive.
	restart := calls[1]
	i := slices.Index(head, restart.position) + 1 // the checkpoint's record; 0 if it began at 0
	if (i == 0 && restart.position != 0) || i >= len(head) || head[i] < atClose || head[i] > restart.stored {
		t.Fatalf("the restarted replay began at %d; want the start of a record ending between the checkpoint at the close (%d) and the one stored then (%d)",
			restart.position, atClose, restart.stored)
	}
	t.Logf("closed with %d persisted; the restart replayed from %d, the record ending at the checkpoint %d (%d stored then)", atClose, restart.position, head[i], restart.stored)
	if !ip.logs.contains("closed at position") {
		t.Errorf("the replay failure was not logged")
	}
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, n))
}

// TestRepeatedFailuresFailTheStreamAndOthersGoOn: every attempt to open stream A's replay
// fails. After the restart policy's 5 restarts within its window ferry gives stream A up,
// says why, and stream B, in the same process, publishes everything.
func TestRepeatedFailuresFailTheStreamAndOthersGoOn(t *testing.T) {
	const n = 500
	a, b := newStreamConfig(t, "a"), newStreamConfig(t, "b")
	_, pubA := newRecordedStream(t, a.Channel, a.StreamID)
	_, pubB := newRecordedStream(t, b.Channel, b.StreamID)
	pubA.publish(t, 0, n)
	pubA.mustBeRecorded(t)
	watchTopic(t, b.Topic)
	broken := &failingDescribe{bad: pubA.recordingID}
	ip := startInProcess(t, inProcessOptions{wrapArchive: func(arc actors.Archive) actors.Archive { broken.Archive = arc; return broken }}, a, b)
	posB := pubB.publish(t, 0, n)

	select {
	case f := <-ip.p.Failures():
		if f.Stream != a.Name || !strings.Contains(f.Err.Error(), "injected") {
			t.Fatalf("stream %s failed with %v, want stream %s with the injected error", f.Stream, f.Err, a.Name)
		}
		t.Logf("stream %s failed: %v", f.Stream, f.Err)
	case <-time.After(60 * time.Second):
		t.Fatalf("stream %s was never given up (%d failed attempts)", a.Name, broken.count())
	}
	if c := broken.count(); c != 6 {
		t.Errorf("%d attempts to open the replay, want 6 (the first and 5 restarts)", c)
	}
	ip.waitCheckpoint(b, pubB.recordingID, posB[n-1], 60*time.Second)
	msgs := readTopic(t, peers.Pulsar.ServiceURL, b.Topic, n, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, n))
	if !ip.logs.contains("stream failed") {
		t.Errorf("the stream's failure was not logged")
	}
}

// subscriptions is the real Aeron client; it keeps the subscriptions it added, in order.
type subscriptions struct {
	actors.Subscriber
	gate // held (hold): AddSubscription waits until release
	mu   sync.Mutex
	subs []*aeron.Subscription
}

// wrap is an inProcessOptions.wrapAeron: it decorates the real client with s.
func (s *subscriptions) wrap(real actors.Subscriber) actors.Subscriber {
	s.Subscriber = real
	return s
}

func (s *subscriptions) AddSubscription(ctx context.Context, ch string, stream int32, h aeron.ImageHandlers) (*aeron.Subscription, error) {
	if err := s.pass(ctx); err != nil {
		return nil, err
	}
	sub, err := s.Subscriber.AddSubscription(ctx, ch, stream, h)
	if err == nil {
		s.mu.Lock()
		s.subs = append(s.subs, sub)
		s.mu.Unlock()
	}
	return sub, err
}

// get waits for the i-th subscription.
func (s *subscriptions) get(t *testing.T, i int) *aeron.Subscription {
	t.Helper()
	var sub *aeron.Subscription
	eventually.NoError(t, 30*time.Second, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		if len(s.subs) <= i {
			return errors.New("not subscribed yet")
		}
		sub = s.subs[i]
		return nil
	})
	return sub
}

// failingDescribe is the real archive client, except that describing recording bad fails.
type failingDescribe struct {
	actors.Archive
	bad int64
	mu  sync.Mutex
	n   int
}

func (f *failingDescribe) Recording(ctx context.Context, id int64) (archive.RecordingDescriptor, error) {
	if id == f.bad {
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		return archive.RecordingDescriptor{}, errors.New("injected: the archive cannot describe this recording")
	}
	return f.Archive.Recording(ctx, id)
}

func (f *failingDescribe) count() int { f.mu.Lock(); defer f.mu.Unlock(); return f.n }

// TestLesson05_RecordingEndReachedBeforeDiscoverySeesItStop: the replay reads a stopped
// recording to its end, and its final checkpoint is persisted, seconds before the next
// discovery round lists it as stopped. The stream must wait for that round rather than
// fail ("completed out of schedule", as it did when the demo's publisher restarted), and
// then go on with the next recording.
func TestLesson05_RecordingEndReachedBeforeDiscoverySeesItStop(t *testing.T) {
	const n = 300
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	pa := a.publish(t, 0, n)
	ip := startInProcess(t, inProcessOptions{discovery: 3 * time.Second}, sc)
	ip.waitCheckpoint(sc, a.recordingID, pa[n-1], 30*time.Second)
	rs.stopRecording(t, a)
	a.close(t)
	rs.startRecording(t)
	b := rs.newPublication(t)
	pb := b.publish(t, n, 2*n)
	ip.waitCheckpoint(sc, b.recordingID, pb[n-1], 60*time.Second)
	if c := ip.checkpoint(sc, a.recordingID); !c.Completed || c.Position != pa[n-1] {
		t.Fatalf("recording %d: checkpoint %+v, want completed at %d", a.recordingID, c, pa[n-1])
	}
	select {
	case f := <-ip.p.Failures():
		t.Fatalf("stream failed: %v", f.Err)
	default:
	}
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, 2*n, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, 2*n))
}

// TestAbortedReplayIsNotTheRecordingsEnd: the archive ends ferry's replay of a stopped
// recording early (StopReplay, as on an archive shutdown) while its acknowledgements are
// held. The replay's image then reaches end of stream at a position below the recording's
// stop. ferry must not take it for the end — that would mark the recording completed and
// skip the rest — but restart the replay from the persisted checkpoint and publish
// everything.
func TestAbortedReplayIsNotTheRecordingsEnd(t *testing.T) {
	const n = 3000
	sc := newStreamConfig(t, "")
	rs, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pos := pub.publish(t, 0, n)
	rs.stopRecording(t, pub)
	watchTopic(t, sc.Topic)
	replays := &replaySessions{}
	var holding atomic.Bool
	holding.Store(true)
	ip := startInProcess(t, inProcessOptions{plan: heldFrom(200, &holding), wrapArchive: replays.wrap}, sc)
	ip.waitCheckpoint(sc, pub.recordingID, pos[199], 30*time.Second)
	session := replays.first(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := replays.Archive.StopReplay(ctx, session); err != nil {
		t.Fatal(err)
	}
	// From now on acknowledgements pass; then the ones held so far are released.
	holding.Store(false)
	ip.releaseUntilCheckpoint(ip.producer(0), sc, pub.recordingID, pos[n-1], 60*time.Second)
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, n))
	if !ip.logs.contains("aborted the replay") {
		t.Errorf("the aborted replay was not reported")
	}
}

// TestARecordingTruncatedAndExtendedUnderTheReplaysTailStopsTheStream: the archive lets a
// recording be truncated (TruncateRecording) once it has offered a replay's last block, while
// ferry still reads the tail from its image. ferry's acknowledgements are held from message
// held on, and nothing is persisted past the start; the recording is cut after message cut
// (below what Pulsar acknowledged), recorded on from there with other bytes of the same
// sizes (same ends) and then past its old stop. The replay ends at the old stop, where the
// archive ends it; the recording now stops beyond, so the replay starts again from the
// persisted start. The records it reads again up to what was acknowledged are not sent
// again, and Pulsar would answer those above as duplicates: the tracker finds a record it had
// read changed, and the stream stops naming it. The topic holds the old messages only, once
// each, in order.
//
// Read to its credits' end when the archive changes the recording, ferry reads the old tail
// after it, committing it all: the last record committed, the old stop's, is found changed.
// Read and sent to the old stop before (its end check held back until the archive changed
// the recording), the records sent above what was acknowledged are read again too: the last
// one acknowledged is found changed.
func TestARecordingTruncatedAndExtendedUnderTheReplaysTailStopsTheStream(t *testing.T) {
	const n, m, held, cut = 200, 50, 60, 30
	for _, c := range []struct {
		name   string
		window int64 // max_inflight_records (0: ferry's default, more than n)
		sent   bool  // every record read and sent before the change
	}{
		{"read to its credits' end before the change", 20, false},
		{"read and sent to the old stop before the change", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := newStreamConfig(t, "")
			rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
			pa := a.publish(t, 0, n)
			rs.stopRecording(t, a)
			a.close(t)
			watchTopic(t, sc.Topic)
			var holding atomic.Bool
			holding.Store(true)
			gate := &describeGate{id: a.recordingID, open: make(chan struct{})}
			if !c.sent {
				close(gate.open)
			}
			ip := startInProcess(t, inProcessOptions{
				plan: heldFrom(held, &holding), maxInflightRecords: c.window, wrapArchive: gate.wrap,
				// Nothing persisted past the start, and no listing to see the cut before the extension.
				checkpoint: progress.CheckpointConfig{EveryRecords: 1 << 30, EveryMs: 24 * 3600 * 1000, RetryMinMs: 50, RetryMaxMs: 400},
				discovery:  time.Hour,
			}, sc)
			prod := ip.producer(0)
			eventually.NoError(t, 30*time.Second, func() error {
				st, err := ip.status(sc.Name)
				if err != nil {
					return err
				}
				if r := recordingOf(st, a.recordingID); r == nil || r.CommittedPosition == nil || *r.CommittedPosition != pa[held-1] || len(prod.Held()) == 0 {
					return fmt.Errorf("recording %d's status is %v with %d acknowledgements held; want it committed to message %d's end, %d, and the next held", a.recordingID, r, len(prod.Held()), held-1, pa[held-1])
				}
				if c.sent && !gate.reached() {
					return errors.New("the replay's end is not being checked yet")
				}
				return nil
			})
			eventually.NoError(t, 30*time.Second, func() error {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				// Refused ("cannot truncate recording with active replay") until the archive has
				// offered the replay's last block.
				return rs.s.archive.TruncateRecording(ctx, a.recordingID, pa[cut-1])
			})
			e := rs.extend(t, a, false)
			if pe := e.publishPayloads(t, rewritten(cut, n, false)); !slices.Equal(pe, pa[cut:]) {
				t.Fatalf("the rewritten messages end at %v, not where the old ones did (%v)", pe, pa[cut:])
			}
			e.publish(t, n, n+m)
			e.close(t)
			changed := pa[n-1] // the last record committed
			if c.sent {
				// Still held: the acknowledged end stays at message held-1 over the restart.
				close(gate.open)
				changed = pa[held-1]
			} else {
				// The old tail is read as its acknowledgements come.
				holding.Store(false)
				prod.ReleaseAll()
			}
			ip.waitFailed(sc.Name, 60*time.Second, fmt.Sprintf("recording %d changed below what ferry had read of it when its replay started again (up to %d)", a.recordingID, pa[n-1]),
				fmt.Sprintf("ferry read the record ending at %d", changed), "TruncateRecording", "give the stream a new name")
			holding.Store(false)
			prod.ReleaseAll()
			if !ip.logs.contains("recording extended while ferry replayed it") {
				t.Errorf("the replay did not start again over the extension")
			}
			assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second), payloads(0, n))
		})
	}
}

// describeGate is the real archive client, except that a describe of recording id after
// the first (a replay's end check: the first is its open) waits until open is closed, or
// until the call's deadline.
type describeGate struct {
	actors.Archive
	id    int64
	open  chan struct{}
	calls atomic.Int32
}

func (g *describeGate) wrap(a actors.Archive) actors.Archive { g.Archive = a; return g }

func (g *describeGate) Recording(ctx context.Context, id int64) (archive.RecordingDescriptor, error) {
	if id == g.id && g.calls.Add(1) > 1 {
		select {
		case <-g.open:
		case <-ctx.Done():
			return archive.RecordingDescriptor{}, ctx.Err()
		}
	}
	return g.Archive.Recording(ctx, id)
}

// reached reports whether a describe after the first was asked for.
func (g *describeGate) reached() bool { return g.calls.Load() > 1 }

// heldFrom is a plan that holds the acknowledgement of every send from the k-th on while
// holding is set, and delivers the others: the replay stops at its credits, far from the
// recording's end.
func heldFrom(k int, holding *atomic.Bool) harness.Plan {
	return func(n int, _ *pulsar.ProducerMessage) harness.Fault {
		if n >= k && holding.Load() {
			return harness.Hold()
		}
		return harness.Deliver()
	}
}

// TestALiveRecordingExtendedWhileFerryReplaysItIsFollowed: ferry replays a live recording,
// far behind it (its acknowledgements held); the recording stops and is extended in a
// session of its own before the replay reaches the stop. The archive ends the replay at the
// stop, and the recording is recording again: ferry reads on from its checkpoint, says the
// recording was extended, and reports no failure (it said the archive aborted the replay,
// which the status showed as a read failure). Every message once, in order.
func TestALiveRecordingExtendedWhileFerryReplaysItIsFollowed(t *testing.T) {
	const n, m = 3000, 300
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	pa := a.publish(t, 0, n)
	var holding atomic.Bool
	holding.Store(true)
	ip := startInProcess(t, inProcessOptions{plan: heldFrom(200, &holding)}, sc) // the replay begins live
	ip.waitCheckpoint(sc, a.recordingID, pa[199], 30*time.Second)
	rs.stopRecording(t, a)
	a.close(t)
	e := rs.extend(t, a, false)
	pe := e.publish(t, n, n+m)
	holding.Store(false)
	ip.releaseUntilCheckpoint(ip.producer(0), sc, a.recordingID, pe[m-1], 60*time.Second)
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n+m, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, n+m))
	if !ip.logs.contains("recording extended while ferry replayed it") {
		t.Errorf("the extension was not told")
	}
	// The status is pushed now and then: once it has the extension's end committed, it
	// has every failure before.
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		if r := recordingOf(st, a.recordingID); r == nil || r.CommittedPosition == nil || *r.CommittedPosition != pe[m-1] {
			return fmt.Errorf("recording %d's status is %v, want it committed at %d", a.recordingID, r, pe[m-1])
		}
		return nil
	})
	if f := ip.failure(t, sc.Name, "read"); f != nil || ip.logs.contains("aborted the replay") {
		t.Errorf("the extension was reported as a failure: %v", f)
	}
}

// TestARecordingExtendedOftenWhileFerryReplaysItIsFollowed: as
// TestALiveRecordingExtendedWhileFerryReplaysItIsFollowed, seven times over within a
// minute, more than the stream's restarts allow in that window (five): a publisher that
// extends its recording each time it starts again. Each extension starts the replay again
// from the checkpoint, which is no failure: the stream goes on, every message once, in
// order. (Counted as failures, the sixth stopped the stream.)
func TestARecordingExtendedOftenWhileFerryReplaysItIsFollowed(t *testing.T) {
	const rounds, n, m = 7, 300, 20
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	var holding atomic.Bool
	holding.Store(true)
	// A window of 100 records: the replay, its acknowledgements held, stays behind the n
	// messages recorded before each extension.
	ip := startInProcess(t, inProcessOptions{plan: heldFrom(0, &holding), maxInflightRecords: 100}, sc)
	pub, sent := a, 0
	for round := range rounds {
		holding.Store(true)
		p := pub.publish(t, sent, sent+n)
		sent += n
		if round == 0 {
			rs.stopRecording(t, pub)
			pub.close(t)
		} else {
			pub.waitRecorded(t, p[n-1])
			pub.close(t) // an extension stops with its publication (auto-stop)
			pub.waitStopped(t, p[n-1])
		}
		pub = rs.extend(t, a, false)
		pe := pub.publish(t, sent, sent+m)
		sent += m
		holding.Store(false)
		// A stream stopped by a round's restart never gets there.
		ip.releaseUntilCheckpoint(ip.producer(0), sc, a.recordingID, pe[m-1], 60*time.Second)
	}
	eventually.NoError(t, 30*time.Second, func() error {
		_, err := ip.notFailed(t, sc.Name) // the status is pushed now and then
		return err
	})
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, sent, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, sent))
	if got := strings.Count(ip.logs.String(), "recording extended while ferry replayed it"); got < rounds {
		t.Errorf("%d extensions told while the replay read the recording; want %d", got, rounds)
	}
}

// replayStarts is the real archive client; it keeps where each replay started and the
// checkpoint stored (stored) at that moment.
type replayStarts struct {
	actors.Archive
	stored func() (int64, error)
	mu     sync.Mutex
	calls  []replayStart
}

type replayStart struct{ position, stored int64 }

func (r *replayStarts) wrap(real actors.Archive) actors.Archive {
	r.Archive = real
	return r
}

// readStoredWith sets how the stored checkpoint is read (the store exists once the pipeline
// the decorator is given to does).
func (r *replayStarts) readStoredWith(stored func() (int64, error)) {
	r.mu.Lock()
	r.stored = stored
	r.mu.Unlock()
}

func (r *replayStarts) StartReplay(ctx context.Context, id, position, length int64, ch string, stream int32) (int64, error) {
	call := replayStart{position: position, stored: -1}
	r.mu.Lock()
	if r.stored != nil {
		if p, err := r.stored(); err == nil {
			call.stored = p
		}
	}
	r.calls = append(r.calls, call)
	r.mu.Unlock()
	return r.Archive.StartReplay(ctx, id, position, length, ch, stream)
}

func (r *replayStarts) get() []replayStart {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// replaySessions is the real archive client; it keeps the replay sessions it started and
// counts those it stopped.
type replaySessions struct {
	actors.Archive
	mu       sync.Mutex
	sessions []int64
	stops    int
}

func (r *replaySessions) StopReplay(ctx context.Context, session int64) error {
	err := r.Archive.StopReplay(ctx, session)
	r.mu.Lock()
	r.stops++
	r.mu.Unlock()
	return err
}

// counts returns how many replays were started and stopped so far.
func (r *replaySessions) counts() (started, stopped int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions), r.stops
}

// wrap is an inProcessOptions.wrapArchive: it decorates the real client with r.
func (r *replaySessions) wrap(real actors.Archive) actors.Archive {
	r.Archive = real
	return r
}

func (r *replaySessions) StartReplay(ctx context.Context, id, position, length int64, ch string, stream int32) (int64, error) {
	s, err := r.Archive.StartReplay(ctx, id, position, length, ch, stream)
	if err == nil {
		r.mu.Lock()
		r.sessions = append(r.sessions, s)
		r.mu.Unlock()
	}
	return s, err
}

func (r *replaySessions) first(t *testing.T) int64 {
	t.Helper()
	var s int64
	eventually.NoError(t, 30*time.Second, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.sessions) == 0 {
			return errors.New("no replay started")
		}
		s = r.sessions[0]
		return nil
	})
	return s
}

// TestAFailureDuringADrainDoesNotReopenTheReplay: ferry is stopping — its replay has
// released the archive's replay — when a publish fails. The failure asks for a re-delivery;
// a draining replay must not open the recording again and publish into the shutdown (the
// next start resumes from the persisted checkpoint). The drain still ends, reporting the
// records the broker never acknowledged. (The acknowledgements from message 100 on are held
// and then all fail: one of them acknowledged before message 100's failure would be a record
// stored above a failed one, lesson 22's stop.)
func TestAFailureDuringADrainDoesNotReopenTheReplay(t *testing.T) {
	const n, failing = 2000, 100
	sc := newStreamConfig(t, "")
	rs, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pub.publish(t, 0, n)
	rs.stopRecording(t, pub)
	replays := &replaySessions{}
	plan := func(k int, _ *pulsar.ProducerMessage) harness.Fault {
		if k >= failing {
			return harness.Hold()
		}
		return harness.Deliver()
	}
	ip := startInProcess(t, inProcessOptions{plan: plan, wrapArchive: replays.wrap}, sc)
	p := ip.producer(0)
	eventually.NoError(t, 30*time.Second, func() error {
		if len(p.Held()) == 0 {
			return fmt.Errorf("the acknowledgement of message %d is not held yet", failing)
		}
		return nil
	})
	type drainResult struct {
		drained []*messages.Drained
		err     error
	}
	done := make(chan drainResult, 1)
	go func() {
		d, err := ip.p.Drain(20 * time.Second)
		done <- drainResult{d, err}
	}()
	eventually.NoError(t, 10*time.Second, func() error {
		if _, stopped := replays.counts(); stopped == 0 {
			return errors.New("the replay has not released the archive's replay: it has not seen the drain")
		}
		return nil
	})
	var held []int
	for _, h := range p.Held() {
		held = append(held, h.N)
	}
	p.ReleaseFailed(held...)
	res := <-done
	if res.err != nil {
		t.Fatalf("drain: %v", res.err)
	}
	if len(res.drained) != 1 || res.drained[0].Unacknowledged == 0 {
		t.Errorf("drained %+v, want the stream to report its unacknowledged records", res.drained)
	}
	// The supervisor restarts a failed replay within 200 ms here (startInProcess's policy).
	eventually.Always(t, 2*time.Second, func() error {
		if started, _ := replays.counts(); started != 1 {
			return fmt.Errorf("%d archive replays started: the draining replay opened the recording again", started)
		}
		return nil
	})
}

// TestARecordingCompletingAfterTheDrainDoesNotStartItsSuccessor: ferry is stopping and its
// drain gave up waiting for the last acknowledgement of recording A; the stream reported
// itself drained but stays up until the pipeline stops it. The acknowledgement then arrives
// and completes A. The stream must not start A's successor B — an archive replay and sends
// after the stream said it was drained, re-sent on the next start.
func TestARecordingCompletingAfterTheDrainDoesNotStartItsSuccessor(t *testing.T) {
	const n = 300
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	a.publish(t, 0, n)
	rs.stopRecording(t, a)
	a.close(t)
	rs.startRecording(t)
	b := rs.newPublication(t)
	b.publish(t, n, 2*n)
	rs.stopRecording(t, b)
	replays := &replaySessions{}
	plan := harness.Faults(map[int]harness.Fault{n - 1: harness.Hold()}) // A's last record
	ip := startInProcess(t, inProcessOptions{plan: plan, wrapArchive: replays.wrap}, sc)
	p := ip.producer(0)
	eventually.NoError(t, 30*time.Second, func() error {
		// A's replay reached the end (and released the archive's replay) with its last
		// acknowledgement held.
		if _, stopped := replays.counts(); len(p.Held()) == 0 || stopped == 0 {
			return fmt.Errorf("held %d, archive replays stopped %d", len(p.Held()), stopped)
		}
		return nil
	})
	drained, err := ip.p.Drain(5 * time.Second) // gives up on the held acknowledgement, at 4 s
	if err != nil {
		t.Fatal(err)
	}
	if len(drained) != 1 || drained[0].Unacknowledged != 1 {
		t.Fatalf("drained %+v, want one stream with 1 unacknowledged record", drained)
	}
	p.Release(n - 1)
	eventually.NoError(t, 10*time.Second, func() error {
		if c := ip.checkpoint(sc, a.recordingID); !c.Completed {
			return fmt.Errorf("recording %d: checkpoint %+v, not completed yet", a.recordingID, c)
		}
		return nil
	})
	eventually.Always(t, 2*time.Second, func() error {
		if started, _ := replays.counts(); started != 1 {
			return fmt.Errorf("%d archive replays started: the drained stream started recording %d", started, b.recordingID)
		}
		return nil
	})
}

// TestAPublisherBugFailsTheStreamLoudly: the publisher panics with a runtime error (here
// pulsar-client-go's SendAsync, as a bug in the client would) in the middle of a batch. A
// publisher restarted in place would have lost the batches it held and the bookkeeping of
// its sends, and the recording would stall for good without a word; instead the stream
// fails at once, saying it was a bug and which (until session 23 it was restarted, refused
// to run, and the stream failed as "poison" with the refusal's text alone).
func TestAPublisherBugFailsTheStreamLoudly(t *testing.T) {
	const n, panicAt = 500, 100
	sc := newStreamConfig(t, "")
	rs, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pub.publish(t, 0, n)
	rs.stopRecording(t, pub)
	var sends atomic.Int64
	ip := startInProcess(t, inProcessOptions{createProducer: func(create actors.ProducerFactory) actors.ProducerFactory {
		return func(opts pulsar.ProducerOptions) (pulsar.Producer, error) {
			p, err := create(opts)
			if err != nil {
				return p, err
			}
			return &panickingProducer{Producer: p, sends: &sends, at: panicAt}, nil
		}
	}}, sc)
	select {
	case f := <-ip.p.Failures():
		if msg := f.Err.Error(); !strings.Contains(msg, "publisher failed (bug)") || !strings.Contains(msg, "assignment to entry in nil map") {
			t.Fatalf("stream %s failed with %v, want the publisher's bug, with its reason", f.Stream, f.Err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the stream did not fail within 30 s after its publisher panicked (send %d); checkpoint %+v", panicAt, ip.checkpoint(sc, pub.recordingID))
	}
}

// panickingProducer is the real producer, but its at-th SendAsync panics with a runtime
// error before sending.
type panickingProducer struct {
	pulsar.Producer
	sends *atomic.Int64
	at    int64
}

func (p *panickingProducer) NumPartitions() uint32 {
	return p.Producer.(actors.PartitionCounter).NumPartitions()
}

func (p *panickingProducer) SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	if p.sends.Add(1) == p.at {
		var broken map[string]int
		broken["send"]++ // assignment to a nil map: a runtime error
	}
	p.Producer.SendAsync(ctx, msg, cb)
}

// TestACorruptStoreDuringTheDrainEndsTheDrain: the drain's final checkpoint write finds the
// store corrupt. The checkpointer stops for good and the stream fails, saying why; the drain
// must end then — nothing more can be persisted — rather than wait for a flush from a
// checkpointer that is gone until the drain's timeout.
func TestACorruptStoreDuringTheDrainEndsTheDrain(t *testing.T) {
	const n = 200
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID) // live: the drain, not the end, writes
	w := watchTopic(t, sc.Topic)
	st := &corruptingStore{}
	ip := startInProcess(t, inProcessOptions{
		wrapStore: func(s store.Store) store.Store { st.Store = s; return st },
		// Nothing is written before the drain.
		checkpoint: progress.CheckpointConfig{EveryRecords: 1_000_000, EveryMs: 3_600_000, RetryMinMs: 50, RetryMaxMs: 400},
	}, sc)
	pub.publish(t, 0, n)
	eventually.NoError(t, 30*time.Second, func() error {
		if got := w.distinct(); got < n {
			return fmt.Errorf("%d of %d messages in the topic", got, n)
		}
		return nil
	})
	st.corrupt.Store(true)
	const timeout = 10 * time.Second
	began := time.Now()
	if _, err := ip.p.Drain(timeout); err != nil {
		t.Fatalf("the drain did not end when the store turned out corrupt (after %s): %v", time.Since(began).Round(time.Millisecond), err)
	}
	select {
	case f := <-ip.p.Failures():
		if !errors.Is(f.Err, store.ErrCorrupt) {
			t.Errorf("stream %s failed with %v, want the corrupt store", f.Stream, f.Err)
		}
	default:
		t.Errorf("the stream did not report its failure")
	}
}

// corruptingStore is the real store until corrupt is set; from then on every write fails
// with store.ErrCorrupt, as a damaged file would.
type corruptingStore struct {
	store.Store
	corrupt atomic.Bool
}

func (s *corruptingStore) Save(def store.Stream, cps []store.Checkpoint) error {
	if s.corrupt.Load() {
		return fmt.Errorf("checkpoints.db: injected: %w", store.ErrCorrupt)
	}
	return s.Store.Save(def, cps)
}

// TestStartLatestPublishesWhatComesAfterTheStart: with start_position latest and nothing
// stored, ferry begins at the live end of the newest recording: the 100 messages recorded
// before it started are not published, every one after is, exactly once, in order.
func TestStartLatestPublishesWhatComesAfterTheStart(t *testing.T) {
	const n = 100
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	before := pub.publish(t, 0, n)
	pub.waitRecorded(t, before[n-1])
	watchTopic(t, sc.Topic)
	subs := &subscriptions{}
	ip := startInProcess(t, inProcessOptions{
		start:     config.StartPosition{Kind: config.StartLatest},
		wrapAeron: subs.wrap,
	}, sc)
	subs.get(t, 0) // the replay is open: its start position was taken before it subscribed
	after := pub.publish(t, n, 2*n)
	ip.waitCheckpoint(sc, pub.recordingID, after[n-1], 30*time.Second)
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(n, 2*n))
}

// TestLesson11_StartLatestTakesOnEveryLivePublisher: two publishers on the stream, so two
// live recordings, A and the newer B, each with 100 messages recorded before ferry starts
// with start_position latest. Each is taken on at its live end at the first listing, and
// seeded there at once. B then waits behind A, idle since (archive.restart_grace: an idle
// live recording may be a crashed publisher's), while B's publisher goes on; once A grows,
// B publishes from where it was seeded, not from where it has got to by then: everything
// both published after the start arrives, once each, in order; nothing from before. (Until
// session 12 only the newest, B, was taken on, and its replay began wherever it was live
// when it opened.)
func TestLesson11_StartLatestTakesOnEveryLivePublisher(t *testing.T) {
	const n = 100
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	b := rs.newPublication(t)
	beforeA, beforeB := a.publish(t, 0, n), b.publish(t, 1000, 1000+n)
	a.waitRecorded(t, beforeA[n-1])
	b.waitRecorded(t, beforeB[n-1])
	watchTopic(t, sc.Topic)
	ip := startInProcess(t, inProcessOptions{start: config.StartPosition{Kind: config.StartLatest}, restartGrace: time.Minute}, sc)
	eventually.NoError(t, 30*time.Second, func() error {
		for _, c := range []struct{ id, at int64 }{{a.recordingID, beforeA[n-1]}, {b.recordingID, beforeB[n-1]}} {
			if cp := ip.checkpoint(sc, c.id); !cp.Seed || cp.Position != c.at {
				return fmt.Errorf("recording %d: checkpoint %+v, want a seed at its live end %d", c.id, cp, c.at)
			}
		}
		return nil
	})
	afterB := b.publish(t, 1000+n, 1000+2*n) // B waits behind the idle A meanwhile
	eventually.NoError(t, 10*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil || !slices.Contains(st.WaitingRecordings, b.recordingID) {
			return fmt.Errorf("status %v (%v): want B %d waiting behind the idle A", st, err, b.recordingID)
		}
		if got, want := waitOf(st, b.recordingID), fmt.Sprintf("quiet behind %d", a.recordingID); got != want {
			return fmt.Errorf("the status says B %d waits %s, want %s", b.recordingID, got, want)
		}
		return nil
	})
	afterA := a.publish(t, n, 2*n)
	ip.waitCheckpoint(sc, a.recordingID, afterA[n-1], 30*time.Second)
	ip.waitCheckpoint(sc, b.recordingID, afterB[n-1], 30*time.Second)
	groups := byRecording(readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, 2*n, 30*time.Second))
	assertExactlyOnceInOrder(t, groups[a.recordingID], payloads(n, 2*n))
	assertExactlyOnceInOrder(t, groups[b.recordingID], payloads(1000+n, 1000+2*n))
}

// TestConcurrentRecordingsCatchingUpLargeMessagesFailNoSend: three publishers' recordings of
// 1 MiB messages, made while ferry was down and growing on, are caught up at once (lesson
// 11), each with its own window of 32 MiB in flight: more together than a Pulsar client
// memory limit sized two windows per stream (64 MiB here) holds. No send fails (a failed send is a
// re-delivery and a replay restart, and ten in five minutes fail the stream); everything
// arrives, in order.
func TestConcurrentRecordingsCatchingUpLargeMessagesFailNoSend(t *testing.T) {
	const backlog, more, size = 60, 40, 1 << 20
	sc := newStreamConfig(t, "")
	sc.Channel += "|term-length=16m" // a message may take up to an eighth of a term
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	pubs := []*publisher{a, rs.newPublication(t), rs.newPublication(t)}
	want, ends := map[int64][][]byte{}, map[int64][]int64{}
	publish := func(k, i int) {
		p := pubs[k]
		msg := sizedPayload(k*1000+i, size)
		end, err := p.offer(msg, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		want[p.recordingID] = append(want[p.recordingID], msg)
		ends[p.recordingID] = append(ends[p.recordingID], end)
	}
	for k := range pubs {
		for i := range backlog {
			publish(k, i)
		}
	}
	w := watchTopic(t, sc.Topic)
	cfg := newFerryConfig(t, sc)
	cfg.Inflight = &inflightSection{MaxBytes: "32m"}
	f := startFerry(t, cfg.write(t))
	// The publishers go on, each a message every 50 ms, so that none of the recordings is
	// quiet (which would hold the others back for the restart grace): all three are caught
	// up at once.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := backlog; i < backlog+more; i++ {
		<-tick.C
		for k := range pubs {
			publish(k, i)
		}
	}
	for _, p := range pubs {
		w.waitAll(t, f, p.recordingID, ends[p.recordingID], 120*time.Second)
	}
	st, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, fl := range st.Failures {
		if fl.Kind == "publish" {
			t.Fatalf("a send failed while the recordings caught up: %s", fl.Message)
		}
	}
	if st.Restarts != 0 {
		t.Fatalf("%d restarts while the recordings caught up; want none", st.Restarts)
	}
	f.mustStop()
	groups := byRecording(readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, len(pubs)*(backlog+more), 60*time.Second))
	for id, msgs := range want {
		assertExactlyOnceInOrder(t, groups[id], msgs)
	}
}

// TestStartLatestLeavesTheSameOutAfterARestart: at the first listing recording A is live, S
// (an earlier recording of the second publisher) stopped, and C (the second publisher
// again) live. start_position latest publishes A and C from their live ends and nothing of
// S — nor after a restart, whose rule is the store's (recordings below the lowest stored are
// left out): S has its turn, from its stop, with nothing to publish. Before and after the
// restart, what A and C publish arrives once each, in order, and S never.
func TestStartLatestLeavesTheSameOutAfterARestart(t *testing.T) {
	const n = 50
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	a.publish(t, 0, n)
	b := rs.newPublication(t)
	b.publish(t, 1000, 1000+n)
	b.close(t) // S stops once the archive sees the publication gone
	eventually.NoError(t, 30*time.Second, func() error {
		if b.descriptor(t).IsLive() {
			return fmt.Errorf("recording S %d still live", b.recordingID)
		}
		return nil
	})
	c := rs.newPublication(t)
	pc := c.publish(t, 2000, 2000+n)
	c.waitRecorded(t, pc[n-1])
	watchTopic(t, sc.Topic)
	storePath := filepath.Join(t.TempDir(), "checkpoints.db")
	opts := inProcessOptions{start: config.StartPosition{Kind: config.StartLatest}, storePath: storePath}
	ip := startInProcess(t, opts, sc)
	eventually.NoError(t, 30*time.Second, func() error {
		if cp := ip.checkpoint(sc, c.recordingID); !cp.Seed || cp.Position != pc[n-1] {
			return fmt.Errorf("recording C %d: checkpoint %+v, want a seed at its live end %d", c.recordingID, cp, pc[n-1])
		}
		return nil
	})
	a1, c1 := a.publish(t, n, 2*n), c.publish(t, 2000+n, 2000+2*n)
	ip.waitCheckpoint(sc, a.recordingID, a1[n-1], 30*time.Second)
	ip.waitCheckpoint(sc, c.recordingID, c1[n-1], 30*time.Second)
	if _, err := ip.stop(); err != nil {
		t.Fatal(err)
	}

	again := startInProcess(t, opts, sc)
	a2, c2 := a.publish(t, 2*n, 3*n), c.publish(t, 2000+2*n, 2000+3*n)
	again.waitCheckpoint(sc, a.recordingID, a2[n-1], 30*time.Second)
	again.waitCheckpoint(sc, c.recordingID, c2[n-1], 30*time.Second)
	groups := byRecording(readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, 4*n, 30*time.Second))
	assertExactlyOnceInOrder(t, groups[a.recordingID], payloads(n, 3*n))
	assertExactlyOnceInOrder(t, groups[c.recordingID], payloads(2000+n, 2000+3*n))
	if got := len(groups[b.recordingID]); got != 0 {
		t.Fatalf("%d messages of the recording S %d, stopped before the first start, were published", got, b.recordingID)
	}
}

// stopCaughtUp stops ip once its stream sc is caught up.
func stopCaughtUp(t *testing.T, ip *inProcess, sc streamConfig) {
	t.Helper()
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		if st.State != "caught-up" {
			return fmt.Errorf("stream %s (%s), want caught-up", st.State, st.Reason)
		}
		return nil
	})
	if _, err := ip.stop(); err != nil {
		t.Fatal(err)
	}
}

// TestStartLatestOnAnEmptyArchiveLeavesNothingOutAfterARestart: at the first start the
// archive holds none of the stream's recordings; ferry is stopped, and while it is down a
// recording is made. The restart publishes all of it, as the run before would have. (Until
// the decision was stored, nothing was: the restart took start_position latest again and
// began the recording at its live end, its head never published, without a word.)
func TestStartLatestOnAnEmptyArchiveLeavesNothingOutAfterARestart(t *testing.T) {
	const n = 50
	sc := newStreamConfig(t, "")
	watchTopic(t, sc.Topic)
	storePath := filepath.Join(t.TempDir(), "checkpoints.db")
	opts := inProcessOptions{start: config.StartPosition{Kind: config.StartLatest}, storePath: storePath}
	ip := startInProcess(t, opts, sc)
	stopCaughtUp(t, ip, sc)

	_, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	pa := a.publish(t, 0, n) // live when ferry starts again
	again := startInProcess(t, opts, sc)
	again.waitCheckpoint(sc, a.recordingID, pa[n-1], 30*time.Second)
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second), payloads(0, n))
}

// TestStartLatestWithNothingLiveLeavesNothingOutAfterARestart: at the first listing the only
// recording, A, is stopped, so start_position latest publishes nothing of it; ferry is then
// stopped, and while it is down recording B is made. The restart publishes all of B (this
// run would have: later recordings are published in full), and still nothing of A. (Until
// the first listing seeded the newest stopped recording when none was live, nothing was
// stored, and the restart took start_position latest again: B was left out without a word.)
func TestStartLatestWithNothingLiveLeavesNothingOutAfterARestart(t *testing.T) {
	const n = 50
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	pa := a.publish(t, 0, n)
	a.close(t)
	watchTopic(t, sc.Topic)
	storePath := filepath.Join(t.TempDir(), "checkpoints.db")
	opts := inProcessOptions{start: config.StartPosition{Kind: config.StartLatest}, storePath: storePath}
	ip := startInProcess(t, opts, sc)
	stopCaughtUp(t, ip, sc)

	b := rs.newPublication(t)
	pb := b.publish(t, 1000, 1000+n)
	b.close(t)
	again := startInProcess(t, opts, sc)
	again.waitCheckpoint(sc, b.recordingID, pb[n-1], 30*time.Second)
	groups := byRecording(readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second))
	assertExactlyOnceInOrder(t, groups[b.recordingID], payloads(1000, 1000+n))
	if got := len(groups[a.recordingID]); got != 0 {
		t.Fatalf("%d messages of recording A %d (stopped at %d before the first start) were published", got, a.recordingID, pa[n-1])
	}
}
