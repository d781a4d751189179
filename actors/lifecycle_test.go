package actors

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// These tests drive one actor of a recording with messages, as its neighbours would, at
// the interleavings the end-to-end tests cannot time: the neighbours are probes.

// waitFor is how long a test waits for an actor's message.
const waitFor = 10 * time.Second

// probe is a stand-in neighbour: it hands every message it receives to the test.
type probe chan any

func (p probe) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		p <- ctx.Message()
	}
}

// next returns the first message of type T the probe receives; it fails the test when none
// arrives within waitFor.
func next[T any](t *testing.T, p probe) T {
	t.Helper()
	return nextWithin[T](t, p, waitFor)
}

// nextWithin is next, waiting up to d.
func nextWithin[T any](t *testing.T, p probe, d time.Duration) T {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case m := <-p:
			if v, ok := m.(T); ok {
				return v
			}
		case <-deadline:
			var zero T
			t.Fatalf("no %T within %s", zero, d)
			return zero
		}
	}
}

// startTracker starts recording 7's tracker among probe neighbours and tells it the
// replay started (generation 1).
func startTracker(t *testing.T, env *Env, cfg *StreamConfig) (*actor.ActorSystem, neighbours, *actor.PID) {
	t.Helper()
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	tracker := system.Root.Spawn(actor.PropsFromProducer(newTracker(env, cfg, 7, pids)))
	system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 1})
	return system, nb, tracker
}

// neighbours are the probes standing in for the actors around the one under test.
type neighbours struct{ stream, publisher, checkpointer, replay, tracker probe }

// spawnNeighbours starts a probe for each neighbour of a recording's actor and returns them
// with the PIDs to give that actor.
func spawnNeighbours(system *actor.ActorSystem) (neighbours, *recordingPIDs) {
	nb := neighbours{make(probe, 1024), make(probe, 1024), make(probe, 1024), make(probe, 1024), make(probe, 1024)}
	spawn := func(p probe) *actor.PID {
		return system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	}
	return nb, &recordingPIDs{stream: spawn(nb.stream), publisher: spawn(nb.publisher), replay: spawn(nb.replay), checkpointer: spawn(nb.checkpointer), tracker: spawn(nb.tracker)}
}

func testEnv(t *testing.T) (*Env, *StreamConfig) {
	t.Helper()
	env := &Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), bg: &tasks{}}
	t.Cleanup(env.bg.Close)
	cfg := &StreamConfig{
		Def:                store.Stream{Name: "s"},
		MaxInflightRecords: 1000,
		MaxInflightBytes:   1 << 20,
		CallTimeout:        time.Second,
		Restart:            supervisor.Policy{Backoff: supervisor.Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond}, MaxRestarts: 5, Window: time.Minute},
	}
	return env, cfg
}

func testSystem(t *testing.T) *actor.ActorSystem {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}))
	t.Cleanup(system.Shutdown)
	return system
}

// A batch the replay read just before its own Drain can reach the tracker after the
// tracker's Drain (the stream sends both; the replay may be inside a poll). Sent then, it
// would be published after the recording reported drained, its outcome after the final
// flush: a duplicate at the next start, after a stop that promised none.
func TestABatchArrivingAfterTheTrackersDrainIsNotPublished(t *testing.T) {
	env, cfg := testEnv(t)
	system, nb, tracker := startTracker(t, env, cfg)
	system.Root.Send(tracker, &messages.Drain{})
	if d := next[*messages.RecordingDrained](t, nb.stream); d.Unacknowledged != 0 {
		t.Fatalf("drained with %d unacknowledged, want 0", d.Unacknowledged)
	}
	// The poll that read the recording's last batch may find its end too and report it at
	// once: both arrive after the drain.
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 0, End: 64, Payload: []byte("late")}}})
	system.Root.Send(tracker, &messages.ReplayEnded{RecordingId: 7, Generation: 1, StopPosition: 64})
	// The tick pushes the status they left: one mailbox, so after them.
	system.Root.Send(tracker, &statusTick{})
	st := next[*messages.RecordingProgress](t, nb.stream).Status
	if st.Published != 0 || st.PendingRecords != 0 || st.GetCommittedPosition() != 0 {
		t.Fatalf("after its drain the tracker took a batch or the end: published %d, pending %d, committed %d; want 0, 0, 0", st.Published, st.PendingRecords, st.GetCommittedPosition())
	}
	// The probes are actors of their own: a message sent to them may reach their channel
	// after the status did, so watch them a while rather than look once.
	eventually.Always(t, 200*time.Millisecond, func() error {
		for name, p := range map[string]probe{"publisher": nb.publisher, "checkpointer": nb.checkpointer} {
			select {
			case m := <-p:
				// The end taken with nothing pending would complete the recording at 64:
				// the dropped record lost, counted as progress.
				return fmt.Errorf("the %s was sent %T after the drain", name, m)
			default:
			}
		}
		return nil
	})
}

// twoRecords is the first replay's batch of two records of recording 7, [0, 64) and [64, 128).
func twoRecords() *messages.RecordBatch {
	return &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{
		{Start: 0, End: 64, Payload: []byte("a")}, {Start: 64, End: 128, Payload: []byte("b")}}}
}

// A replay restarted for a reason other than a failed send (an image closed, an archive
// error) leaves that epoch's sends out: a drain waits for their outcomes too, rather than
// report the recording drained while they may still reach Pulsar, and a drain cut short
// counts them as unacknowledged.
func TestADrainWaitsForTheSendsOfAnEarlierReplay(t *testing.T) {
	for _, now := range []bool{false, true} {
		t.Run(fmt.Sprintf("now=%t", now), func(t *testing.T) {
			env, cfg := testEnv(t)
			system, nb, tracker := startTracker(t, env, cfg)
			system.Root.Send(tracker, twoRecords())
			next[*messages.RecordBatch](t, nb.publisher)
			system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 2, FromPosition: 0}) // the image closed
			system.Root.Send(tracker, &messages.Drain{Now: now})
			if now {
				if d := next[*messages.RecordingDrained](t, nb.stream); d.Unacknowledged != 2 {
					t.Fatalf("a drain cut short reported %d unacknowledged; want the 2 sends still out", d.Unacknowledged)
				}
				return
			}
			eventually.Always(t, 200*time.Millisecond, func() error {
				select {
				case m := <-nb.stream:
					if _, ok := m.(*messages.RecordingDrained); ok {
						return errors.New("the recording reported drained with the earlier replay's 2 sends still out")
					}
				default:
				}
				return nil
			})
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: 0, End: 64})
			system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, Epoch: 0, End: 128, Error: "broker said no"})
			if d := next[*messages.RecordingDrained](t, nb.stream); d.Unacknowledged != 0 {
				t.Fatalf("drained with %d unacknowledged once every send was answered; want 0", d.Unacknowledged)
			}
		})
	}
}

// A failed send needs a re-delivery, which a drain does not make; but a send below it still
// out may yet be acknowledged and committed: the drain waits for it (up to its deadline),
// rather than report the recording drained, after which the stream flushes the checkpoints
// and a commit coming later is not persisted. Cut short, it counts it as unacknowledged.
func TestADrainWaitsForASendBelowAFailedOne(t *testing.T) {
	for _, now := range []bool{false, true} {
		t.Run(fmt.Sprintf("now=%t", now), func(t *testing.T) {
			env, cfg := testEnv(t)
			system, nb, tracker := startTracker(t, env, cfg)
			system.Root.Send(tracker, twoRecords())
			sent := next[*messages.RecordBatch](t, nb.publisher)
			system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, Epoch: sent.Epoch, End: 128, Error: "broker said no"})
			system.Root.Send(tracker, &messages.Drain{Now: now})
			if now {
				if d := next[*messages.RecordingDrained](t, nb.stream); d.Unacknowledged != 2 {
					t.Fatalf("a drain cut short reported %d unacknowledged; want 2, the send still out and the failed one", d.Unacknowledged)
				}
				return
			}
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
			if c := next[*messages.Committed](t, nb.checkpointer); c.Position != 64 {
				t.Fatalf("committed %d; want 64", c.Position)
			}
			if d := next[*messages.RecordingDrained](t, nb.stream); d.Unacknowledged != 1 {
				t.Fatalf("drained with %d unacknowledged; want 1, the failed send, once the one below it was acknowledged and committed", d.Unacknowledged)
			}
		})
	}
}

// A re-delivery starts at the persisted position, below what this process already had
// acknowledged: the records up to the committed position are read again to keep the
// order, but not sent again (lesson 4's re-delivery sends only what was not stored).
func TestARedeliverySendsNothingAlreadyCommitted(t *testing.T) {
	env, cfg := testEnv(t)
	system, nb, tracker := startTracker(t, env, cfg)
	records := []*messages.Record{{Start: 0, End: 64, Payload: []byte("a")}, {Start: 64, End: 128, Payload: []byte("b")}, {Start: 128, End: 192, Payload: []byte("c")}}
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: records})
	sent := next[*messages.RecordBatch](t, nb.publisher)
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
	system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, Epoch: sent.Epoch, End: 128, Error: "broker said no"})
	system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, Epoch: sent.Epoch, End: 192, Error: "broker said no"})
	next[*messages.RedeliveryRequired](t, nb.replay)
	system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 2, FromPosition: 0}) // nothing persisted yet
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 2, Records: records})
	again := next[*messages.RecordBatch](t, nb.publisher)
	var ends []int64
	for _, r := range again.Records {
		ends = append(ends, r.End)
	}
	if !slices.Equal(ends, []int64{128, 192}) {
		t.Fatalf("the re-delivery sent the records ending at %v; want 128 and 192, not 64, acknowledged already", ends)
	}
}

// supervised is a stream supervisor's stand-in: it spawns one child, under the strategy
// its props give it, and hands what the child sends it to messages, if set.
type supervised struct {
	child    actor.Producer
	children chan *actor.PID
	messages probe
}

func (s *supervised) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		s.children <- ctx.Spawn(actor.PropsFromProducer(s.child))
	case actor.SystemMessage, actor.AutoReceiveMessage:
	default:
		if s.messages != nil {
			s.messages <- ctx.Message()
		}
	}
}

// spawnSupervised starts child under ferry's restart strategy (cfg.Restart), as a stream
// would, and returns it with the failures the strategy gives up on. The child is stopped
// before the test's tasks are awaited (a checkpointer's ticker is one).
func spawnSupervised(t *testing.T, system *actor.ActorSystem, env *Env, cfg *StreamConfig, child actor.Producer) (*actor.PID, <-chan error) {
	t.Helper()
	pid, givenUp, _ := spawnWatched(t, system, env, cfg, child)
	return pid, givenUp
}

// wentOnFor is how long wentOn watches an actor go on: long enough for a failure on its
// way (through the actor's mailbox, its supervisor's and the restart strategy) to arrive.
const wentOnFor = 200 * time.Millisecond

// wentOn fails the test if the actor whose failures givenUp has (spawnSupervised) is
// given up within wentOnFor. It watches for that while, not once: a look at once passes
// whenever the failure is still on its way.
func wentOn(t *testing.T, givenUp <-chan error) {
	t.Helper()
	eventually.Always(t, wentOnFor, func() error {
		select {
		case err := <-givenUp:
			return fmt.Errorf("given up: %v", err)
		default:
			return nil
		}
	})
}

// stoppedWith waits up to waitFor for the actor whose failures givenUp has
// (spawnSupervised) to be given up, fails the test unless the error says each of wants,
// and returns it.
func stoppedWith(t *testing.T, givenUp <-chan error, wants ...string) error {
	t.Helper()
	select {
	case err := <-givenUp:
		for _, want := range wants {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("given up with %v; want an error saying %q", err, wants)
			}
		}
		return err
	case <-time.After(waitFor):
		t.Fatalf("not given up within %s; want it to stop with an error saying %q", waitFor, wants)
		return nil
	}
}

// spawnWatched is spawnSupervised, and also returns what the child sends its parent.
func spawnWatched(t *testing.T, system *actor.ActorSystem, env *Env, cfg *StreamConfig, child actor.Producer) (*actor.PID, <-chan error, probe) {
	t.Helper()
	givenUp := make(chan error, 4)
	strategy, err := supervisor.NewStrategy(cfg.Restart, func(_ *actor.PID, _ supervisor.Class, reason any) {
		err, _ := reason.(error)
		givenUp <- err
	}, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	parent := &supervised{child: child, children: make(chan *actor.PID, 1), messages: make(probe, 1024)}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return parent }, actor.WithSupervisor(strategy)))
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	return <-parent.children, givenUp, parent.messages
}

// A checkpointer that failed (a bug) must not come back empty-handed: it would have lost
// every policy and the commits not yet persisted.
func TestARestartedCheckpointerFailsTheStreamLoudly(t *testing.T) {
	env, cfg := testEnv(t)
	system := testSystem(t)
	checkpointer, givenUp := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))

	// A commit for a recording whose replay never started: a bug, restarted like one.
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 9, Position: 64, Records: 1})
	stoppedWith(t, givenUp, "the checkpointer failed and cannot be restarted in place")
}

// Commits are reported to the checkpointer per burst of acknowledgements: every committed
// record is counted once, the position only moves forward and ends at the last record.
func TestEveryCommitReachesTheCheckpointer(t *testing.T) {
	env, cfg := testEnv(t)
	system, nb, tracker := startTracker(t, env, cfg)

	const n, size = 300, 64
	records := make([]*messages.Record, n)
	for i := range records {
		records[i] = &messages.Record{Start: int64(i * size), End: int64((i + 1) * size)}
	}
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: records})
	sent := next[*messages.RecordBatch](t, nb.publisher)
	for _, r := range sent.Records {
		system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: r.End})
	}
	var committed, last int64
	for committed < n {
		c := next[*messages.Committed](t, nb.checkpointer)
		if c.Position <= last || c.Position > n*size {
			t.Fatalf("committed %d after %d (records up to %d)", c.Position, last, n*size)
		}
		if want := (c.Position - last) / size; c.Records != want {
			t.Fatalf("commit to %d counts %d records, want %d", c.Position, c.Records, want)
		}
		last, committed = c.Position, committed+c.Records
	}
	if last != n*size {
		t.Fatalf("last commit at %d, want %d", last, n*size)
	}
}

// subscribeOnce is a Subscriber whose first subscription fails when the test says; any
// later one is counted: a reader that subscribes again after a drain publishes into the
// shutdown.
type subscribeOnce struct {
	fail  chan error
	again atomic.Int32
	calls atomic.Int32
}

func (s *subscribeOnce) AddSubscription(context.Context, string, int32, aeron.ImageHandlers) (*aeron.Subscription, error) {
	if s.calls.Add(1) == 1 {
		return nil, <-s.fail
	}
	s.again.Add(1)
	return nil, errors.New("subscribed again")
}

// stillSubscriber is an Aeron client whose subscription is made and never has an image: a
// transport-mode reader sits still, and the test drives its outcomes.
type stillSubscriber struct{}

func (stillSubscriber) AddSubscription(context.Context, string, int32, aeron.ImageHandlers) (*aeron.Subscription, error) {
	return nil, nil
}

// A transport-mode reader stopped (its stream failed, or ferry reconnects) within the push
// interval of a loss pushes its counts as it stops: the stream, and the next incarnation,
// which goes on from what the stream heard, count the loss.
func TestTheLiveReadersLastCountsArePushedWhenItStops(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.Transport = true
	env.Aeron = stillSubscriber{}
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	sends := &liveSends{epoch: 1, marks: newSentMarks(), inflight: []int64{10, 10}, inflightB: 20, sent: 2}
	live := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &live{env: env, cfg: cfg, pids: pids, liveSends: sends, lastEnd: map[publication]int64{}}
	}))
	next[*messages.RecordingProgress](t, nb.stream) // pushed when subscribed
	system.Root.Send(live, &messages.PublishFailed{End: 64, Error: "broker said no"})
	next[*messages.FailureObserved](t, nb.stream)
	_ = system.Root.StopFuture(live).Wait()
	eventually.NoError(t, waitFor, func() error {
		for {
			select {
			case m := <-nb.stream:
				if p, ok := m.(*messages.RecordingProgress); ok && p.Status.Failed == 1 && p.Status.PendingRecords == 1 {
					return nil
				}
			default:
				return errors.New("the stream did not hear of the loss: failed 1, pending 1")
			}
		}
	})
}

// A transport-mode reader whose subscription fails while it drains must not be restarted:
// the new incarnation would subscribe again and publish after the stream was told drained.
func TestALiveSubscriptionFailingDuringTheDrainIsNotRetried(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.Transport = true
	sub := &subscribeOnce{fail: make(chan error)}
	env.Aeron = sub
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	live, _ := spawnSupervised(t, system, env, cfg, newLive(env, cfg, pids))

	system.Root.Send(live, &messages.Drain{})
	next[*messages.RecordingDrained](t, nb.stream) // nothing in flight: drained at once
	sub.fail <- errors.New("media driver gone")
	eventually.Always(t, time.Second, func() error {
		if n := sub.again.Load(); n > 0 {
			return fmt.Errorf("the reader subscribed again %d times after its drain", n)
		}
		return nil
	})
}

// blockingClock is an Env.Now that, once armed, stops its next caller from within the
// function named in (another handler reading the clock must not take the stop meant for an
// acknowledgement's handling) until released.
type blockingClock struct {
	in       string
	armed    atomic.Bool
	entered  chan struct{}
	released chan struct{}
}

func (c *blockingClock) now() time.Time {
	if c.armed.Load() && calledFrom(c.in) && c.armed.CompareAndSwap(true, false) {
		c.entered <- struct{}{}
		<-c.released
	}
	return time.Now()
}

// calledFrom reports whether a function whose name ends in name is on the caller's stack.
func calledFrom(name string) bool {
	pcs := make([]uintptr, 32)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, name) {
			return true
		}
		if !more {
			return false
		}
	}
}

// Commits a tracker holds for its burst report still reach the checkpointer when the tracker
// is stopped first (a stop is handled before the messages queued, the report among them):
// the stream fails for another reason, say, and the checkpointer saves what was committed.
func TestCommitsHeldForABurstAreReportedWhenTheTrackerStops(t *testing.T) {
	env, cfg := testEnv(t)
	clock := &blockingClock{in: "(*tracker).acked", entered: make(chan struct{}), released: make(chan struct{})}
	env.Now = clock.now
	system, nb, tracker := startTracker(t, env, cfg)
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 0, End: 64}, {Start: 64, End: 128}}})
	sent := next[*messages.RecordBatch](t, nb.publisher)
	// The clock stops the acknowledgement's handling only: the batch's handling reads it
	// too, after it passed the batch on, and stopped there, the stop overtook the
	// acknowledgement (one run in some dozens with -race, until the clock looked at its
	// caller).
	clock.armed.Store(true)
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
	select { // inside the acknowledgement: the record is committed, its report not queued yet
	case <-clock.entered:
	case <-time.After(waitFor):
		t.Fatal("the acknowledgement's handling did not read the clock")
	}
	system.Root.Stop(tracker)
	close(clock.released)
	c := next[*messages.Committed](t, nb.checkpointer)
	if c.Position != 64 || c.Records != 1 {
		t.Fatalf("reported commit at %d of %d records, want 64 and 1", c.Position, c.Records)
	}
}

// TestTheTrackersLastStatusIsPushedWhenItStops: acknowledgements within the push interval
// are held for a timer, which a stop outruns; the stream must still hear the final counts,
// which its status carries into the next incarnation.
func TestTheTrackersLastStatusIsPushedWhenItStops(t *testing.T) {
	env, cfg := testEnv(t)
	system, nb, tracker := startTracker(t, env, cfg)
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 0, End: 64}, {Start: 64, End: 128}}})
	sent := next[*messages.RecordBatch](t, nb.publisher)
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 128})
	// Both acknowledgements were handled once the commit of 128 is reported (a stop, a
	// system message, would overtake them in the mailbox).
	for next[*messages.Committed](t, nb.checkpointer).Position != 128 {
	}
	system.Root.Stop(tracker)
	for {
		p := next[*messages.RecordingProgress](t, nb.stream)
		if p.Status.Acknowledged == 2 && p.Status.GetCommittedPosition() == 128 {
			return
		}
	}
}

// saveLog is a store that records every Save and fails the first failFirst of them, and
// the next one once failNext is set.
type saveLog struct {
	store.Store // not called: the checkpointer only saves
	failFirst   int
	failNext    atomic.Bool
	saves       chan []store.Checkpoint
}

func (s *saveLog) Save(_ store.Stream, cps []store.Checkpoint) error {
	s.saves <- cps
	if s.failFirst > 0 || s.failNext.Swap(false) {
		s.failFirst = max(s.failFirst-1, 0)
		return errors.New("injected: disk full")
	}
	return nil
}

// A recording's completion whose save failed waits out its backoff: a drain must not report
// the checkpoints flushed meanwhile — the position is persisted, but not that the recording
// is done, which the next recording waits for.
func TestADrainWaitsForTheCompletedCheckpoint(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{saves: make(chan []store.Checkpoint, 16)}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 60_000, RetryMaxMs: 60_000}
	cfg.Stored.Checkpoints = []store.Checkpoint{{RecordingID: 7, Position: 0, Seed: true}}
	system := testSystem(t)
	checkpointer, _, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 0})
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 128, Records: 1})
	if p := next[*messages.CheckpointPersisted](t, parent); p.Position != 128 || p.Completed {
		t.Fatalf("persisted %+v; want 128, not completed", p)
	}
	saves.failNext.Store(true)
	system.Root.Send(checkpointer, &messages.RecordingFinished{RecordingId: 7, FinalPosition: 128})
	next[*messages.FailureObserved](t, parent) // the completed checkpoint's save failed: back-off of a minute
	system.Root.Send(checkpointer, &messages.Drain{})
	notFlushed(t, parent, 300*time.Millisecond, "the drain reported the checkpoints flushed while the recording's completion is not saved")
}

// The checkpointer tells the stream which save is a seed (CheckpointPersisted.Seed): the
// status takes a seed saved again lower, where a replay followed the recording's start back,
// as where its committed position starts; any other save below it is not.
func TestAPersistedSeedSaysItIsOne(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{saves: make(chan []store.Checkpoint, 16)}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 10, RetryMaxMs: 10}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 7, Position: 4096, Seed: true, FromStart: true}}}
	system := testSystem(t)
	checkpointer, _, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
	replay := make(probe, 4) // answered TakenOn once the seed is saved again
	system.Root.RequestWithCustomSender(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 1024},
		system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return replay })))
	if p := next[*messages.CheckpointPersisted](t, parent); p.Position != 1024 || !p.Seed {
		t.Fatalf("persisted %+v; want the seed saved again at 1024", p)
	}
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 1152, Records: 1})
	if p := next[*messages.CheckpointPersisted](t, parent); p.Position != 1152 || p.Seed {
		t.Fatalf("persisted %+v; want 1152, not a seed", p)
	}
}

// A drain waits for a listed stop whose write failed, as for any save: the next run checks
// the recording against it.
func TestADrainWaitsForAListedStop(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{saves: make(chan []store.Checkpoint, 16), failFirst: 1}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 60_000, RetryMaxMs: 60_000}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 7, Position: 128, StartMs: 5, SessionID: 9}}}
	system := testSystem(t)
	checkpointer, _, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
	system.Root.Send(checkpointer, &messages.RecordingListedStopped{RecordingId: 7, StopPosition: 4096})
	next[*messages.FailureObserved](t, parent) // its write failed: back-off of a minute
	system.Root.Send(checkpointer, &messages.Drain{})
	notFlushed(t, parent, 300*time.Millisecond, "the drain reported the checkpoints flushed while a listed stop is not written")
}

// notFlushed fails the test if the checkpointer reports its checkpoints flushed to parent
// within d (what else it sends is dropped): why says what that would mean.
func notFlushed(t *testing.T, parent probe, d time.Duration, why string) {
	t.Helper()
	never[*messages.CheckpointsFlushed](t, parent, d, why)
}

// never fails the test if a message of type T comes on pr within d (what else comes is
// dropped): why says what that would mean.
func never[T any](t *testing.T, pr probe, d time.Duration, why string) {
	t.Helper()
	eventually.Always(t, d, func() error {
		for {
			select {
			case m := <-pr:
				if v, ok := m.(T); ok {
					return fmt.Errorf("%s: %v", why, v)
				}
			default:
				return nil
			}
		}
	})
}

// A save the store refuses as it stands (here: it holds a later checkpoint than ferry's, a
// second writer or a bug) fails the stream, saying so, rather than be retried for ever
// while every recording's checkpoint of the stream is held back.
func TestASaveTheStoreRefusesAsItStandsFailsTheStream(t *testing.T) {
	env, cfg := testEnv(t)
	env.Store = refusingStore{fmt.Errorf("checkpoint store: stream s, recording 7: %w", store.ErrPositionRegressed)}
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 1, RetryMaxMs: 1}
	system := testSystem(t)
	checkpointer, givenUp := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 7, Position: 0, StartMs: 1})
	if err := stoppedWith(t, givenUp); !errors.Is(err, store.ErrPositionRegressed) {
		t.Fatalf("the stream failed with %v; want the store's refusal", err)
	}
}

// refusingStore refuses every save with err.
type refusingStore struct {
	err error
}

func (s refusingStore) Save(store.Stream, []store.Checkpoint) error { return s.err }
func (s refusingStore) Load(store.Stream) (store.State, error)      { return store.State{}, s.err }
func (s refusingStore) Reset(string) error                          { return s.err }
func (s refusingStore) Streams() ([]store.Stream, error)            { return nil, s.err }
func (s refusingStore) Close() error                                { return nil }

// A seed whose save failed waits out a long backoff; a later recording's seed must not be
// stored without it (the skip rule would then leave the earlier recording out after a
// crash): it goes in the same transaction. Nothing is flushed while a seed is unsaved.
func TestASeedLeftBehindGoesWithTheNextSave(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{failFirst: 1, saves: make(chan []store.Checkpoint, 16)}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 60_000, RetryMaxMs: 60_000}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	ids := func(cps []store.Checkpoint) []int64 {
		var out []int64
		for _, c := range cps {
			out = append(out, c.RecordingID)
		}
		slices.Sort(out)
		return out
	}
	nextSave := func() []store.Checkpoint {
		select {
		case cps := <-saves.saves:
			return cps
		case <-time.After(waitFor):
			t.Fatalf("no save within %s", waitFor)
			return nil
		}
	}

	system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 1, Position: 0, StartMs: 1})
	if got := nextSave(); !slices.Equal(ids(got), []int64{1}) || !got[0].Seed {
		t.Fatalf("first save %+v, want recording 1's seed", got)
	}
	system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 2, Position: 0, StartMs: 2})
	if got := nextSave(); !slices.Equal(ids(got), []int64{1, 2}) {
		t.Fatalf("second save %+v, want recording 1's seed (its first save failed) with recording 2's", got)
	}
}

// The seeds start_position latest decided (StartDecided) are stored in one write: in two, a
// restart between them would find the lowest alone, take the decision for made there, and
// publish the history of the others that the decision left out.
func TestTheSeedsLatestDecidedGoInOneWrite(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{saves: make(chan []store.Checkpoint, 16)}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 60_000, RetryMaxMs: 60_000}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	system.Root.Send(checkpointer, &messages.StartDecided{Seeds: []*messages.SeedCheckpoint{
		{RecordingId: 3, Position: 4096, StartMs: 1}, {RecordingId: 4, Position: 2000, StartMs: 2}, {RecordingId: 5, Position: 300, StartMs: 3},
	}})
	select {
	case cps := <-saves.saves:
		var got []string
		for _, c := range cps {
			got = append(got, fmt.Sprintf("%d at %d, seed %t", c.RecordingID, c.Position, c.Seed))
		}
		slices.Sort(got)
		if want := []string{"3 at 4096, seed true", "4 at 2000, seed true", "5 at 300, seed true"}; !slices.Equal(got, want) {
			t.Fatalf("the first write holds %q; want %q", got, want)
		}
	case <-time.After(waitFor):
		t.Fatalf("no save within %s", waitFor)
	}
}

// Stopping waits for the work the actors started, but not for ever: a task that never ends
// (a store write on a hung disk) is left behind after the bound.
func TestTasksCloseWithinLeavesAHungTaskBehind(t *testing.T) {
	var ts tasks
	release := make(chan struct{})
	defer close(release)
	if !ts.Go(func() { <-release }) {
		t.Fatal("the task was not started")
	}
	if ts.CloseWithin(50 * time.Millisecond) {
		t.Fatal("CloseWithin reported every task ended while one is blocked")
	}
	if ts.Go(func() {}) {
		t.Fatal("a task was started after Close")
	}
	var done tasks
	done.Go(func() {})
	if !done.CloseWithin(waitFor) {
		t.Fatal("CloseWithin did not see a finished task end")
	}
}

// gatedStore is a store whose every Save is handed to the test and returns what the test
// answers it with (nil: released), or nil once the test has ended (done closed).
type gatedStore struct {
	store.Store // not called: the checkpointer only saves
	saves       chan []store.Checkpoint
	answers     chan error
	done        chan struct{}
}

func (s *gatedStore) Save(_ store.Stream, cps []store.Checkpoint) error {
	select {
	case s.saves <- cps:
	case <-s.done:
		return nil
	}
	select {
	case err := <-s.answers:
		return err
	case <-s.done:
		return nil
	}
}

// newGatedStore returns a gatedStore that lets every save go when the test ends, before
// the actors' work is waited for.
func newGatedStore(t *testing.T) *gatedStore {
	gate := &gatedStore{saves: make(chan []store.Checkpoint), answers: make(chan error), done: make(chan struct{})}
	t.Cleanup(func() { close(gate.done) })
	return gate
}

// next returns the one checkpoint of the next save, which waits for its release.
func (s *gatedStore) next(t *testing.T) store.Checkpoint {
	t.Helper()
	select {
	case cps := <-s.saves:
		if len(cps) != 1 {
			t.Fatalf("save of %+v, want one checkpoint", cps)
		}
		return cps[0]
	case <-time.After(waitFor):
		t.Fatalf("no save within %s", waitFor)
		return store.Checkpoint{}
	}
}

// Each checkpoint keeps the last record it covers, the one the tracker reported with its
// position — not a later one that arrived while the save was in flight — and the watermark
// a restarted replay asks for hands back the pair as stored. After the recording's end
// (padding beyond the last record) the completed checkpoint keeps that record.
func TestACheckpointKeepsTheRecordItEndsWith(t *testing.T) {
	env, cfg := testEnv(t)
	gate := newGatedStore(t)
	env.Store = gate
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 10, RetryMaxMs: 10}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	watermark := func(position int64) *messages.Watermark {
		t.Helper()
		var w *messages.Watermark
		eventually.NoError(t, waitFor, func() error {
			res, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: 7, Generation: 1}, waitFor).Result()
			if err != nil {
				return err
			}
			if w = res.(*messages.Watermark); w.Position != position {
				return fmt.Errorf("watermark at %d, want %d", w.Position, position)
			}
			return nil
		})
		return w
	}
	a := &messages.RecordMark{Start: 64, End: 100, Checksum: 0xa}
	b := &messages.RecordMark{Start: 100, End: 200, Checksum: 0xb}

	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 0})
	if seed := gate.next(t); !seed.Seed || seed.LastRecord.Known() {
		t.Fatalf("first save %+v, want a seed without a record", seed)
	}
	gate.answers <- nil
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 100, Records: 2, LastRecord: a})
	if got := gate.next(t); got.Position != 100 || got.LastRecord != (store.RecordMark{Start: 64, End: 100, Checksum: 0xa}) {
		t.Fatalf("save %+v, want position 100 with record a", got)
	}
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 200, Records: 1, LastRecord: b}) // while a's save is in flight
	gate.answers <- nil
	if w := watermark(100); !proto.Equal(w.LastRecord, a) {
		t.Fatalf("watermark %v after the save of 100, want record a with it", w)
	}
	if got := gate.next(t); got.Position != 200 || got.LastRecord != (store.RecordMark{Start: 100, End: 200, Checksum: 0xb}) {
		t.Fatalf("save %+v, want position 200 with record b", got)
	}
	gate.answers <- nil
	if w := watermark(200); !proto.Equal(w.LastRecord, b) {
		t.Fatalf("watermark %v after the save of 200, want record b with it", w)
	}
	system.Root.Send(checkpointer, &messages.RecordingFinished{RecordingId: 7, FinalPosition: 256}) // padding after b
	if got := gate.next(t); !got.Completed || got.Position != 256 || got.LastRecord != (store.RecordMark{Start: 100, End: 200, Checksum: 0xb}) {
		t.Fatalf("final save %+v, want completed at 256 with record b", got)
	}
	gate.answers <- nil
}

// A watermark says whether its checkpoint was in the store when the pipeline started
// (a run before may have sent records above it: lesson 22), and when it was written; a
// seed stored by this pipeline was not.
func TestAWatermarkSaysWhetherItsCheckpointIsOfAnEarlierRun(t *testing.T) {
	env, cfg := testEnv(t)
	gate := newGatedStore(t)
	env.Store = gate
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 10, RetryMaxMs: 10}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 8, Position: 64, Seed: true, UpdatedAtMs: 123, StartMs: 2, SessionID: 2}}}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	watermark := func(rec int64) *messages.Watermark {
		t.Helper()
		res, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: rec, Generation: 1}, waitFor).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*messages.Watermark)
	}
	if w := watermark(8); !w.Seed || !w.Earlier || w.StoredAtMs != 123 {
		t.Fatalf("recording 8's watermark %v; want its stored seed, of an earlier run, written at 123", w)
	}
	system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 9, Position: 128, StartMs: 3, SessionId: 3})
	gate.next(t)
	gate.answers <- nil
	eventually.NoError(t, waitFor, func() error {
		if w := watermark(9); !w.Stored || !w.Seed || w.Earlier || w.StoredAtMs == 0 {
			return fmt.Errorf("recording 9's watermark %v; want its seed, of this run, with the time it was written", w)
		}
		return nil
	})
}

// The partitions a recording is routed by are stored before its publisher sends: asked
// (RouteRecording), the checkpointer stores the count with the recording's checkpoint — the
// next save of it, or the stored checkpoint written again with the count if none is due, or
// its seed once that is stored — and only then answers (RecordingRouted). A count stored
// already is answered at once; a second publisher of the recording gets the first one's
// count. Every later save keeps it, and the watermark carries it once stored, so that a
// restart, or a publisher created again, routes the recording where it began.
func TestACheckpointKeepsThePartitionsItsRecordingIsRoutedBy(t *testing.T) {
	env, cfg := testEnv(t)
	gate := newGatedStore(t)
	env.Store = gate
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 10, RetryMaxMs: 10}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 8, Position: 64, StartMs: 2, SessionID: 2, Partitions: 3}}}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	watermarkSays := func(rec int64, want int32) {
		t.Helper()
		res, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: rec, Generation: 1}, waitFor).Result()
		if err != nil {
			t.Fatal(err)
		}
		if w := res.(*messages.Watermark); w.Partitions != want {
			t.Fatalf("recording %d's watermark says %d partitions, want %d", rec, w.Partitions, want)
		}
	}
	// route asks as a publisher would, and returns the probe that gets the answer.
	route := func(rec int64, n int32) probe {
		p := make(probe, 4)
		system.Root.RequestWithCustomSender(checkpointer, &messages.RouteRecording{RecordingId: rec, Partitions: n}, system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p })))
		return p
	}
	answered := func(p probe, rec int64, want int32) {
		t.Helper()
		if r := next[*messages.RecordingRouted](t, p); r.RecordingId != rec || r.Partitions != want {
			t.Fatalf("answered %v; want recording %d routed by %d partitions", r, rec, want)
		}
	}
	watermarkSays(8, 3)
	answered(route(8, 5), 8, 3) // stored already: at once, no save

	// A seed stored, nothing due: the seed is written again with the count, and then answered.
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 0})
	if seed := gate.next(t); !seed.Seed || seed.Partitions != 0 {
		t.Fatalf("first save %+v, want a seed routed by nothing yet", seed)
	}
	gate.answers <- nil
	first := route(7, 4)
	if got := gate.next(t); !got.Seed || got.Position != 0 || got.Partitions != 4 {
		t.Fatalf("save %+v, want the seed again, routed by 4 partitions", got)
	}
	watermarkSays(7, 0) // not stored yet
	second := route(7, 5)
	watermarkSays(7, 0) // the checkpointer took the second question in
	if got := append(asked(first), asked(second)...); len(got) > 0 {
		t.Fatalf("answered %v before the count was stored", got)
	}
	gate.answers <- nil
	answered(first, 7, 4)
	answered(second, 7, 4)
	watermarkSays(7, 4)
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 100, Records: 1})
	if got := gate.next(t); got.Position != 100 || got.Partitions != 4 {
		t.Fatalf("save %+v, want position 100 routed by 4 partitions", got)
	}
	gate.answers <- nil

	// A seed in flight without the count: the count follows it.
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 10, Generation: 1, FromPosition: 0})
	if seed := gate.next(t); !seed.Seed || seed.Partitions != 0 {
		t.Fatalf("save %+v, want recording 10's seed", seed)
	}
	tenth := route(10, 2)
	gate.answers <- nil
	if got := gate.next(t); got.RecordingID != 10 || !got.Seed || got.Partitions != 2 {
		t.Fatalf("save %+v, want recording 10's seed again, routed by 2 partitions", got)
	}
	gate.answers <- nil
	answered(tenth, 10, 2)

	// A stored count goes with every later save.
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 8, Generation: 1, FromPosition: 64, StartMs: 2, SessionId: 2})
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 8, Position: 128, Records: 1})
	if got := gate.next(t); got.RecordingID != 8 || got.Position != 128 || got.Partitions != 3 {
		t.Fatalf("save %+v, want recording 8 at 128 routed by the 3 partitions stored", got)
	}
	gate.answers <- nil
}

// A checkpoint written again for its route alone (nothing else of its recording due) that
// the store fails is retried with the checkpoint settings' back-off, as any save, not at
// every tick; the publisher waits, and is answered once it is stored.
func TestARouteSaveTheStoreFailsIsRetriedWithBackOff(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{failFirst: 3, saves: make(chan []store.Checkpoint, 16)}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 100, RetryMaxMs: 200}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 8, Position: 64, StartMs: 2, SessionID: 2}}}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	answer := make(probe, 4)
	system.Root.RequestWithCustomSender(checkpointer, &messages.RouteRecording{RecordingId: 8, Partitions: 2}, system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return answer })))
	var at []time.Time
	for range 4 {
		select {
		case cps := <-saves.saves:
			if len(cps) != 1 || cps[0].RecordingID != 8 || cps[0].Position != 64 || cps[0].Partitions != 2 {
				t.Fatalf("save of %+v; want recording 8's checkpoint as stored, routed by 2 partitions", cps)
			}
			at = append(at, time.Now())
		case <-time.After(waitFor):
			t.Fatalf("%d saves within %s; want 4: three failures and a retry that succeeds", len(at), waitFor)
		}
		if len(at) < 4 && len(asked(answer)) > 0 {
			t.Fatal("answered before the count was stored")
		}
	}
	for i, want := range []time.Duration{100, 200, 200} {
		if gap := at[i+1].Sub(at[i]); gap < want*time.Millisecond*8/10 {
			t.Fatalf("retry %d came %s after the failure; want the back-off, %dms", i+1, gap, want)
		}
	}
	if r := next[*messages.RecordingRouted](t, answer); r.RecordingId != 8 || r.Partitions != 2 {
		t.Fatalf("answered %v; want recording 8 routed by 2 partitions", r)
	}
}

// A replay of a recording whose stored seed is from its start — which a replay may still
// follow back to an earlier start — is taken on (TakenOn) only once the seed is stored again
// where that replay begins, no longer from the start: from its first record sent on, Pulsar
// may hold records of it, and records below them would be dropped as duplicates. Until then
// a restarted incarnation's watermark is that seed, not the stored one, so it begins there
// too; and a seed saved again while the one before is in flight counts only when it lands. A
// recording whose seed is not from its start is taken on at once.
func TestAReplayIsTakenOnOnlyOnceItsSeedNoLongerFollowsTheStart(t *testing.T) {
	env, cfg := testEnv(t)
	gate := newGatedStore(t)
	env.Store = gate
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 10, RetryMaxMs: 10}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{
		{RecordingID: 7, Position: 4096, Seed: true, FromStart: true, StartMs: 1, SessionID: 1},
		{RecordingID: 8, Position: 64, Seed: true, StartMs: 2, SessionID: 2},
	}}
	system := testSystem(t)
	checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
	var mu sync.Mutex
	var taken []*messages.TakenOn
	probe := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*messages.TakenOn); ok {
			mu.Lock()
			taken = append(taken, m)
			mu.Unlock()
		}
	}))
	takenOn := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for _, m := range taken {
			got = append(got, fmt.Sprintf("%d/%d", m.RecordingId, m.Generation))
		}
		return got
	}
	watermark := func(id int64) *messages.Watermark {
		t.Helper()
		res, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: id, Generation: 1}, waitFor).Result()
		if err != nil {
			t.Fatal(err)
		}
		return res.(*messages.Watermark)
	}
	started := func(id int64, gen uint64, from int64) {
		system.Root.RequestWithCustomSender(checkpointer, &messages.ReplayStarted{RecordingId: id, Generation: gen, FromPosition: from, StartMs: id - 6, SessionId: int32(id - 6)}, probe)
	}

	// Not from its start: at once.
	if w := watermark(8); !w.Stored || !w.Seed || w.FromStart {
		t.Fatalf("watermark of recording 8 %v, want a stored seed not from the start", w)
	}
	started(8, 1, 64)
	eventually.NoError(t, waitFor, func() error {
		if got := takenOn(); !slices.Equal(got, []string{"8/1"}) {
			return fmt.Errorf("taken on: %v, want 8/1", got)
		}
		return nil
	})

	// From its start: the replay followed it back to 1024; the seed is saved there, and
	// until that save is done nothing is taken on.
	if w := watermark(7); !w.Seed || !w.FromStart || w.Position != 4096 {
		t.Fatalf("watermark of recording 7 %v, want the seed from its start at 4096", w)
	}
	started(7, 1, 1024)
	if got := gate.next(t); !got.Seed || got.FromStart || got.Position != 1024 {
		t.Fatalf("save %+v, want the seed at 1024, not from the start", got)
	}
	// A restarted incarnation begins where that one does, and does not follow the start
	// back again; it seeds again (the save in flight then counts for nothing).
	if w := watermark(7); !w.Stored || !w.Seed || w.FromStart || w.Position != 1024 {
		t.Fatalf("watermark of recording 7 while it is taken on %v, want the seed at 1024, not from the start", w)
	}
	started(7, 2, 1024)
	eventually.Always(t, 200*time.Millisecond, func() error {
		if got := takenOn(); len(got) != 1 {
			return fmt.Errorf("taken on while the seed is being saved: %v", got)
		}
		return nil
	})
	gate.answers <- nil // the first save, void
	if got := gate.next(t); !got.Seed || got.FromStart || got.Position != 1024 {
		t.Fatalf("save %+v, want the seed at 1024 again", got)
	}
	eventually.Always(t, 200*time.Millisecond, func() error {
		if got := takenOn(); len(got) != 1 {
			return fmt.Errorf("taken on after a void save: %v", got)
		}
		return nil
	})
	gate.answers <- nil
	eventually.NoError(t, waitFor, func() error {
		if got := takenOn(); !slices.Equal(got, []string{"8/1", "7/1", "7/2"}) {
			return fmt.Errorf("taken on: %v, want 8/1, 7/1, 7/2", got)
		}
		return nil
	})
	if w := watermark(7); !w.Seed || w.FromStart || w.Position != 1024 {
		t.Fatalf("watermark of recording 7 once taken on %v, want the stored seed at 1024", w)
	}
	// Taken on, a later incarnation is answered at once.
	started(7, 3, 1024)
	eventually.NoError(t, waitFor, func() error {
		if got := takenOn(); len(got) != 4 {
			return fmt.Errorf("taken on: %v, want 7/3 too", got)
		}
		return nil
	})
}

// A record the publisher skipped after its epoch's first failed send (fail-stop) did not
// fail: the status counts one failure, not a window of them, and the skipped records are
// re-delivered with the failed one.
func TestRecordsSkippedAfterAFailedSendAreNotCountedFailed(t *testing.T) {
	env, cfg := testEnv(t)
	system, nb, tracker := startTracker(t, env, cfg)
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{
		{Start: 0, End: 64, Payload: []byte("a")}, {Start: 64, End: 128, Payload: []byte("b")}, {Start: 128, End: 192, Payload: []byte("c")}}})
	system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, End: 64, Error: "broker said no"})
	for _, end := range []int64{128, 192} {
		system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, End: end, Error: "not sent: an earlier send of this epoch failed", NotSent: true})
	}
	// A drain pushes the counts so far, after what came before it (one mailbox), then says
	// it drained: the last status before that has every outcome in it.
	system.Root.Send(tracker, &messages.Drain{Now: true})
	var last *messages.RecordingStatus
	for done := false; !done; {
		select {
		case m := <-nb.stream:
			switch m := m.(type) {
			case *messages.RecordingProgress:
				last = m.Status
			case *messages.RecordingDrained:
				done = true
			}
		case <-time.After(waitFor):
			t.Fatalf("the tracker did not drain within %s", waitFor)
		}
	}
	if last == nil || last.Failed != 1 {
		t.Fatalf("status %v; want 1 failed, the send that failed", last)
	}
	if r := next[*messages.RedeliveryRequired](t, nb.replay); !strings.Contains(r.Reason, "broker said no") {
		t.Fatalf("re-delivery for %q; want the failed send's", r.Reason)
	}
}

// Pulsar stored a record above one of the same producer that failed (lesson 22): the stream
// stops whichever outcome reaches the tracker first — the failure, then the later record's
// acknowledgement, or that acknowledgement first — and also when a replay restart (for any
// reason: the replay's image closed, the recording extended) comes before or between the
// two, which then arrive as outcomes of the epoch before: the failed record's re-send would
// be answered as a duplicate of the stored one. The stop names the failure's cause, which
// may stand in the way of the record's publication too. A record above that was only
// answered as a duplicate (stored by an earlier run) is no such case.
func TestARecordStoredAboveAFailureStopsTheStreamInEitherOrder(t *testing.T) {
	const (
		noRestart = iota
		restartBetween
		restartBefore
	)
	for _, c := range []struct {
		name      string
		ackFirst  bool
		duplicate bool
		restart   int
		stops     bool
	}{
		{"failure first", false, false, noRestart, true},
		{"acknowledgement first", true, false, noRestart, true},
		{"a duplicate receipt first", true, true, noRestart, false},
		{"failure, a replay restart, acknowledgement", false, false, restartBetween, true},
		{"acknowledgement, a replay restart, failure", true, false, restartBetween, true},
		{"a replay restart, failure, acknowledgement", false, false, restartBefore, true},
		{"a replay restart, acknowledgement, failure", true, false, restartBefore, true},
		{"a duplicate receipt, a replay restart, failure", true, true, restartBetween, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			system, nb, tracker, givenUp := trackerOfTwoRecords(t)
			fail := &messages.PublishFailed{RecordingId: 7, End: 64, Error: "broker said no"}
			ack := &messages.PublishAcked{RecordingId: 7, End: 128, Duplicate: c.duplicate}
			first, second := proto.Message(fail), proto.Message(ack)
			if c.ackFirst {
				first, second = ack, fail
			}
			restart := &messages.ReplayStarted{RecordingId: 7, Generation: 2}
			if c.restart == restartBefore {
				system.Root.Send(tracker, restart)
			}
			system.Root.Send(tracker, first)
			if c.restart == restartBetween {
				system.Root.Send(tracker, restart)
			}
			system.Root.Send(tracker, second)
			if !c.stops {
				if c.restart == noRestart { // else the failure is of an epoch already re-delivered
					if r := next[*messages.RedeliveryRequired](t, nb.replay); !strings.Contains(r.Reason, "broker said no") {
						t.Fatalf("re-delivery for %q; want the failed send's", r.Reason)
					}
				}
				wentOn(t, givenUp)
				return
			}
			stoppedWith(t, givenUp, "lesson 22", "ending at 128 was stored by Pulsar after the record ending at 64 of the same producer failed (broker said no)")
		})
	}
}

// A replay started again from the persisted checkpoint (a send failed after the first replay
// had reached the end) that reaches an end below what was acknowledged found the recording
// truncated in the archive: the stream stops as over the other truncations, naming the
// records the archive no longer holds, not as over a bug of ferry's.
func TestAReplayEndingBelowWhatWasAcknowledgedStopsAsATruncation(t *testing.T) {
	system, _, tracker, givenUp := trackerOfTwoRecords(t)
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: 0, End: 64})
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: 0, End: 128})
	// Started again from the checkpoint persisted at 0; the archive now stops it at 64.
	system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 2})
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 2, Records: []*messages.Record{{Start: 0, End: 64, Payload: []byte("x")}}})
	system.Root.Send(tracker, &messages.ReplayEnded{RecordingId: 7, Generation: 2, StopPosition: 64})
	err := stoppedWith(t, givenUp, "recording 7 ends at 64, below 128, which ferry had already seen acknowledged: it was truncated in the archive", "records from 64 to 128")
	if c := supervisor.Classify(err); c != supervisor.Poison {
		t.Fatalf("the truncation is classed %s; want %s", c, supervisor.Poison)
	}
}

// A replay started again from the persisted checkpoint reads again records it had read and
// sent: if the archive truncated the recording and recorded on meanwhile (TruncateRecording
// and ExtendRecording, which it allows once it has offered the replay's last block, while
// ferry still reads the tail), a record read again is another one. Below what was
// acknowledged nothing is sent again, and above it Pulsar answers what it stored as
// duplicates: the stream stops instead, naming the record, with nothing sent; so too when
// the recording now stops before a record that was sent.
func TestAReplayReadingAgainAnotherRecordThanItSentStopsTheStream(t *testing.T) {
	for _, c := range []struct {
		name  string
		again []*messages.Record
		stop  int64 // the end of the replay read again (0: none)
		wants []string
	}{
		{"acknowledged, read again with other bytes", []*messages.Record{{Start: 0, End: 64, Payload: []byte("x")}, {Start: 64, End: 128, Payload: []byte("z"), Checksum: 0xbad}}, 0,
			[]string{"recording 7 changed below what ferry had read of it when its replay started again (up to 192)", "ferry read the record ending at 128 with CRC-32C 00000000", "the archive now holds the record [64, 128) with 00000bad", "give the stream a new name"}},
		{"sent, read again in other sizes", []*messages.Record{{Start: 0, End: 64, Payload: []byte("x")}, {Start: 64, End: 128, Payload: []byte("y")}, {Start: 128, End: 256, Payload: []byte("w")}}, 0,
			[]string{"ferry read the record ending at 192 with CRC-32C 00000000", "the archive now holds the record [128, 256) with 00000000"}},
		{"sent, and the recording now stops before it", []*messages.Record{{Start: 0, End: 64, Payload: []byte("x")}, {Start: 64, End: 128, Payload: []byte("y")}}, 160,
			[]string{"recording 7 now stops at 160, before the end of the record [128, 192) that ferry read when it replayed it before (up to 192)", "TruncateRecording", "drops the new records up to 192 as already stored"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			system, nb, tracker, givenUp := trackerOfTwoRecords(t)
			system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 128, End: 192, Payload: []byte("v")}}})
			next[*messages.RecordBatch](t, nb.publisher)
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: 0, End: 64})
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: 0, End: 128})
			// Started again from the checkpoint persisted at 0, with the record at 192 out.
			system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 2})
			system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 2, Records: c.again})
			if c.stop > 0 {
				system.Root.Send(tracker, &messages.ReplayEnded{RecordingId: 7, Generation: 2, StopPosition: c.stop})
			}
			err := stoppedWith(t, givenUp, c.wants...)
			if cl := supervisor.Classify(err); cl != supervisor.Poison {
				t.Fatalf("the change is classed %s; want %s", cl, supervisor.Poison)
			}
			for {
				select {
				case msg := <-nb.publisher:
					if b, ok := msg.(*messages.RecordBatch); ok {
						t.Fatalf("sent records read again after the change: %v", b.Records)
					}
					continue
				default:
				}
				break
			}
		})
	}
}

// A recording is reported finished only once the publisher has told what its producer
// read back of the topic (TopicRead), and never at a stop before the end of a record the
// topic holds of it: the archive truncated it below records ferry published (a recording
// only ever listed live before ferry stopped keeps no stop to tell it by). The read may come
// before the replay ends or after every record was acknowledged; one that comes after the
// recording finished (the read's answer after its timeout) still stops the stream.
func TestARecordingStoppingBeforeWhatTheTopicHoldsStopsTheStream(t *testing.T) {
	for _, c := range []struct {
		name  string
		reads []int64 // what the publisher's reads found, in order (-1: nothing)
		early bool    // told before the replay ended
		stop  int64   // the recording's stop
		// late: the second read comes after the recording finished
		late bool
	}{
		{"told before the replay ended", []int64{192}, true, 128, false},
		{"told once every record was acknowledged", []int64{192}, false, 128, false},
		{"told after it finished", []int64{-1, 192}, false, 128, true},
		{"the topic holds it to its stop", []int64{128}, false, 128, false},
		{"the topic holds nothing past the checkpoint", []int64{-1}, false, 128, false},
		{"the stop past the last record", []int64{128}, true, 160, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
				return StoredMessage{}, false, errors.New("not read here: the publisher reads")
			}
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			tracker, givenUp := spawnSupervised(t, system, env, cfg, newTracker(env, cfg, 7, pids))
			read := func(end int64) {
				system.Root.Send(tracker, &messages.TopicRead{RecordingId: 7, HoldsEnd: end, Producer: "ferry-s-7"})
			}
			system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 1})
			if c.early {
				read(c.reads[0])
			}
			system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 0, End: 64, Payload: []byte("x")}, {Start: 64, End: 128, Payload: []byte("y")}}})
			sent := next[*messages.RecordBatch](t, nb.publisher)
			system.Root.Send(tracker, &messages.ReplayEnded{RecordingId: 7, Generation: 1, StopPosition: c.stop})
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 128})
			if !c.early {
				// Everything acknowledged, the stop known: nothing is finished before the read.
				eventually.Always(t, 200*time.Millisecond, func() error {
					for {
						select {
						case m := <-nb.checkpointer:
							if f, ok := m.(*messages.RecordingFinished); ok {
								return fmt.Errorf("finished at %d before the publisher told what the topic holds", f.FinalPosition)
							}
							continue
						default:
						}
						return nil
					}
				})
				read(c.reads[0])
			}
			if c.late {
				next[*messages.RecordingFinished](t, nb.checkpointer)
				read(c.reads[1])
			}
			held := slices.Max(c.reads)
			if held <= c.stop {
				if f := next[*messages.RecordingFinished](t, nb.checkpointer); f.FinalPosition != c.stop {
					t.Fatalf("finished at %d; want %d", f.FinalPosition, c.stop)
				}
				wentOn(t, givenUp)
				return
			}
			err := stoppedWith(t, givenUp, fmt.Sprintf("recording 7 stops at %d, before the end of its record ending at %d, which the topic holds (the last message of producer ferry-s-7", c.stop, held),
				"TruncateRecording", fmt.Sprintf("the records from %d to %d", c.stop, held), "ferry checkpoint forget --config FILE --stream s --recording 7 --topic-holds 192 --yes", "deduplication holds up to 192")
			if cl := supervisor.Classify(err); cl != supervisor.Poison {
				t.Fatalf("the truncation is classed %s; want %s", cl, supervisor.Poison)
			}
		})
	}
}

// steppedClock is the time of day, stepped by offset (an NTP correction, an operator).
type steppedClock struct{ offset atomic.Int64 }

func (c *steppedClock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// The checkpointer measures its intervals — every_ms, the back-off after a failed save, a
// hung write — by a clock the time of day does not move: stepped back an hour after a
// commit, the last commit still reaches the store after every_ms (lesson 3), not an hour
// later; stepped back after a failed save, the retry still comes after its back-off;
// stepped forward during a write, the write is not reported hung.
func TestTheCheckpointersIntervalsDoNotFollowTheTimeOfDay(t *testing.T) {
	stored := store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 7, Position: 0, StartMs: 1, SessionID: 1}}}
	started := &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 0, StartMs: 1, SessionId: 1}
	committed := &messages.Committed{RecordingId: 7, Position: 64, Records: 1, LastRecord: &messages.RecordMark{Start: 0, End: 64}}
	saved := func(t *testing.T, saves *saveLog, what string) {
		t.Helper()
		select {
		case <-saves.saves:
		case <-time.After(waitFor):
			t.Fatalf("%s not within %s", what, waitFor)
		}
	}

	t.Run("the last commit, the clock stepped back", func(t *testing.T) {
		env, cfg := testEnv(t)
		clock := &steppedClock{}
		env.Now = clock.now
		saves := &saveLog{saves: make(chan []store.Checkpoint, 16)}
		env.Store = saves
		cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1000, EveryMs: 50, RetryMinMs: 50, RetryMaxMs: 1000}
		cfg.Stored = stored
		system := testSystem(t)
		checkpointer, _ := spawnSupervised(t, system, env, cfg, newCheckpointer(env, cfg))
		system.Root.Send(checkpointer, started)
		system.Root.Send(checkpointer, committed)
		if _, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: 999}, waitFor).Result(); err != nil {
			t.Fatal(err) // the commit is handled
		}
		clock.offset.Store(int64(-time.Hour))
		saved(t, saves, "the last commit saved (every_ms 50)")
	})

	t.Run("the retry of a failed save, the clock stepped back", func(t *testing.T) {
		env, cfg := testEnv(t)
		clock := &steppedClock{}
		env.Now = clock.now
		saves := &saveLog{failFirst: 1, saves: make(chan []store.Checkpoint, 16)}
		env.Store = saves
		cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 50, RetryMinMs: 50, RetryMaxMs: 1000}
		cfg.Stored = stored
		system := testSystem(t)
		checkpointer, _, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
		system.Root.Send(checkpointer, started)
		system.Root.Send(checkpointer, committed)
		saved(t, saves, "the first save")
		next[*messages.FailureObserved](t, parent) // it failed: retried after 50 ms
		clock.offset.Store(int64(-10 * time.Minute))
		saved(t, saves, "the save retried (back-off 50 ms)")
	})

	t.Run("a write, the clock stepped forward", func(t *testing.T) {
		env, cfg := testEnv(t)
		clock := &steppedClock{}
		env.Now = clock.now
		gate := newGatedStore(t)
		env.Store = gate
		cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 100, RetryMaxMs: 1000}
		system := testSystem(t)
		checkpointer, _, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
		system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 7, Position: 0, StartMs: 1, SessionId: 1})
		gate.next(t) // the seed's write, in flight
		clock.offset.Store(int64(5 * time.Second))
		system.Root.Send(checkpointer, &checkpointTickMsg{}) // the hung-write check, now
		if _, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: 999}, waitFor).Result(); err != nil {
			t.Fatal(err)
		}
		gate.answers <- nil
		if w := next[*messages.StoreWritten](t, parent); w.Failed {
			t.Fatalf("a write of milliseconds reported as failed (hung) after the clock stepped 5 s forward: %+v", w)
		}
	})
}

// policiesAsk asks an inspectedCheckpointer how many recordings it keeps a policy of.
type policiesAsk struct{}

// inspectedCheckpointer is a checkpointer the test can ask, in turn with its messages, how
// many recordings it keeps a policy of.
type inspectedCheckpointer struct{ *checkpointer }

func (i inspectedCheckpointer) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*policiesAsk); ok {
		ctx.Respond(len(i.policies))
		return
	}
	i.checkpointer.Receive(ctx)
}

// A completed recording's checkpoint, once persisted, is all the checkpointer keeps of it
// (every policy kept was walked at every tick: thousands over a long run); reopened, the
// recording is saved on from its end, with its last record and its origin.
func TestACompletedRecordingIsLetGoUntilItIsReopened(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{saves: make(chan []store.Checkpoint, 16)}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 100, RetryMaxMs: 1000}
	cfg.Stored.Checkpoints = []store.Checkpoint{{RecordingID: 7, Position: 0, StartMs: 5, SessionID: 9}}
	system := testSystem(t)
	inner := newCheckpointer(env, cfg)
	checkpointer, _, parent := spawnWatched(t, system, env, cfg, func() actor.Actor {
		return inspectedCheckpointer{inner().(*checkpointer)}
	})
	kept := func() int {
		t.Helper()
		n, err := system.Root.RequestFuture(checkpointer, &policiesAsk{}, waitFor).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n.(int)
	}
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 0, StartMs: 5, SessionId: 9})
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 64, Records: 1, LastRecord: &messages.RecordMark{Start: 0, End: 64, Checksum: 1}})
	system.Root.Send(checkpointer, &messages.RecordingFinished{RecordingId: 7, FinalPosition: 64})
	for p := next[*messages.CheckpointPersisted](t, parent); !p.Completed; p = next[*messages.CheckpointPersisted](t, parent) {
	}
	if n := kept(); n != 0 {
		t.Fatalf("%d policies kept after the recording's completed checkpoint was persisted, want 0", n)
	}

	system.Root.Send(checkpointer, &messages.RecordingReopened{RecordingId: 7})
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 2, FromPosition: 64, StartMs: 5, SessionId: 9})
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 128, Records: 1, LastRecord: &messages.RecordMark{Start: 64, End: 128, Checksum: 2}})
	for {
		select {
		case cps := <-saves.saves:
			if len(cps) != 1 || cps[0].Position != 128 {
				continue // the completed checkpoint's save
			}
			if c := cps[0]; c.Completed || c.LastRecord != (store.RecordMark{Start: 64, End: 128, Checksum: 2}) || c.StartMs != 5 || c.SessionID != 9 {
				t.Fatalf("saved %+v after the reopen; want 128, not completed, its last record and origin", c)
			}
			if n := kept(); n != 1 {
				t.Fatalf("%d policies kept for a reopened recording, want 1", n)
			}
			return
		case <-time.After(waitFor):
			t.Fatal("nothing saved of the reopened recording")
		}
	}
}

// Where a listing showed a recording stopped is written at once for a recording whose
// checkpoint is stored, as it is stored (not moved, its time kept: a seed's is when nothing
// of the recording had been sent), completed ones included (extended since, they are checked
// against it), and again after a failed write; for one not stored yet it goes with its seed.
// Later saves keep it, as they keep the stop a loaded checkpoint has.
func TestAListedStopIsWrittenAtOnceAndKept(t *testing.T) {
	env, cfg := testEnv(t)
	saves := &saveLog{saves: make(chan []store.Checkpoint, 16), failFirst: 1}
	env.Store = saves
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 60_000, RetryMinMs: 100, RetryMaxMs: 1000}
	acked := store.Checkpoint{RecordingID: 7, Position: 1000, UpdatedAtMs: 1_700_000_000_000, StartMs: 5, SessionID: 9, Partitions: 2, LastRecord: store.RecordMark{Start: 936, End: 1000, Checksum: 3}}
	loaded := store.Checkpoint{RecordingID: 8, Position: 2000, UpdatedAtMs: 1_700_000_000_000, StartMs: 6, SessionID: 9, ListedStop: 4000}
	completed := store.Checkpoint{RecordingID: 6, Position: 500, Completed: true, UpdatedAtMs: 1_700_000_000_000, StartMs: 4, SessionID: 9, ListedStop: 500}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{completed, acked, loaded}}
	system := testSystem(t)
	checkpointer, _, _ := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
	next := func(what string) store.Checkpoint { t.Helper(); return onlySave(t, saves.saves, what) }
	amended := func(cp store.Checkpoint, stop int64) store.Checkpoint { cp.ListedStop = stop; return cp }

	system.Root.Send(checkpointer, &messages.RecordingListedStopped{RecordingId: 7, StopPosition: 5000})
	for i, how := range []string{"failed", "written again after the failure"} {
		if c := next("recording 7's checkpoint listed stopped at 5000"); c != amended(acked, 5000) {
			t.Fatalf("write %d (%s): saved %+v; want recording 7 as stored, listed stopped at 5000", i+1, how, c)
		}
	}
	system.Root.Send(checkpointer, &messages.RecordingListedStopped{RecordingId: 6, StopPosition: 800})
	if c := next("recording 6's completed checkpoint listed stopped at 800"); c != amended(completed, 800) {
		t.Fatalf("saved %+v; want recording 6 as stored, listed stopped at 800", c)
	}
	// This one writes nothing: the next write is its seed's.
	system.Root.Send(checkpointer, &messages.RecordingListedStopped{RecordingId: 10, StopPosition: 7000})
	system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 10, Position: 0, StartMs: 8, SessionId: 9})
	if c := next("recording 10's seed"); c.RecordingID != 10 || !c.Seed || c.ListedStop != 7000 {
		t.Fatalf("saved %+v; want recording 10's seed, listed stopped at 7000", c)
	}
	for _, cp := range []store.Checkpoint{acked, loaded} {
		id, pos := cp.RecordingID, cp.Position+64
		system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: id, Generation: 1, FromPosition: cp.Position, StartMs: cp.StartMs, SessionId: 9})
		system.Root.Send(checkpointer, &messages.Committed{RecordingId: id, Position: pos, Records: 1, LastRecord: &messages.RecordMark{Start: pos - 64, End: pos, Checksum: 1}})
		want := map[int64]int64{7: 5000, 8: 4000}[id]
		if c := next(fmt.Sprintf("recording %d's commit", id)); c.RecordingID != id || c.Position != pos || c.ListedStop != want {
			t.Fatalf("saved %+v; want recording %d at %d, listed stopped at %d", c, id, pos, want)
		}
	}
}

// onlySave returns the one checkpoint of the next save on saves, failing the test if it
// holds more, or none comes within waitFor: what says what it should be.
func onlySave(t *testing.T, saves <-chan []store.Checkpoint, what string) store.Checkpoint {
	t.Helper()
	select {
	case cps := <-saves:
		if len(cps) != 1 {
			t.Fatalf("saved %+v; want %s alone", cps, what)
		}
		return cps[0]
	case <-time.After(waitFor):
		t.Fatalf("nothing saved; want %s", what)
	}
	return store.Checkpoint{}
}

// A stop listed while a save of its recording is under way is written after it, not lost
// with a seed that left without it; and one listed while a save of its recording fails goes
// with that save when it is retried, after its back-off, not at once in a write of the
// checkpoint as last stored, which a failed write may have moved on after all (bbolt writes
// the meta page before the fsync that fails) and which would then move back.
func TestAListedStopWaitsForTheSaveUnderWay(t *testing.T) {
	env, cfg := testEnv(t)
	st := newGatedStore(t)
	env.Store = st
	const retryMs = 300
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 60_000, RetryMinMs: retryMs, RetryMaxMs: retryMs}
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 7, Position: 64, UpdatedAtMs: 1_700_000_000_000, StartMs: 5, SessionID: 9}}}
	system := testSystem(t)
	checkpointer, _, _ := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
	next := func(what string) store.Checkpoint { t.Helper(); return onlySave(t, st.saves, what) }

	system.Root.Send(checkpointer, &messages.SeedCheckpoint{RecordingId: 10, Position: 0, StartMs: 8, SessionId: 9})
	seed := next("recording 10's seed")
	system.Root.Send(checkpointer, &messages.RecordingListedStopped{RecordingId: 10, StopPosition: 7000})
	st.answers <- nil
	if c := next("recording 10's seed, listed stopped at 7000"); c.RecordingID != 10 || !c.Seed || c.ListedStop != 7000 || c.UpdatedAtMs != seed.UpdatedAtMs {
		t.Fatalf("saved %+v; want recording 10's seed as stored (%+v), listed stopped at 7000", c, seed)
	}
	st.answers <- nil

	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 64, StartMs: 5, SessionId: 9})
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 128, Records: 1, LastRecord: &messages.RecordMark{Start: 64, End: 128, Checksum: 1}})
	if c := next("recording 7 at 128"); c.Position != 128 {
		t.Fatalf("saved %+v; want recording 7 at 128", c)
	}
	system.Root.Send(checkpointer, &messages.RecordingListedStopped{RecordingId: 7, StopPosition: 4096})
	failed := time.Now()
	st.answers <- errors.New("injected: fsync failed")
	c := next("recording 7 at 128 again, listed stopped at 4096")
	if took := time.Since(failed); c.Position != 128 || c.ListedStop != 4096 || took < (retryMs-20)*time.Millisecond {
		t.Fatalf("saved %+v %s after the failed save; want recording 7 at 128, listed stopped at 4096, after its back-off of %d ms", c, took.Round(time.Millisecond), retryMs)
	}
	st.answers <- nil
}

// A recording let go of at its completed checkpoint takes a repeat of its end as its
// completed policy took it — nothing to save — rather than as a bug that fails the stream:
// here a replay start that came while the completed save was being written (so it made no
// policy of its own), and that replay's end after the save.
func TestARecordingLetGoOfTakesARepeatOfItsEnd(t *testing.T) {
	env, cfg := testEnv(t)
	gate := newGatedStore(t)
	env.Store = gate
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 100, RetryMaxMs: 1000}
	cfg.Stored.Checkpoints = []store.Checkpoint{{RecordingID: 7, Position: 0, StartMs: 5, SessionID: 9}}
	system := testSystem(t)
	checkpointer, givenUp, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 1, FromPosition: 0, StartMs: 5, SessionId: 9})
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 64, Records: 1, LastRecord: &messages.RecordMark{Start: 0, End: 64}})
	gate.next(t)
	gate.answers <- nil
	next[*messages.CheckpointPersisted](t, parent)
	system.Root.Send(checkpointer, &messages.RecordingFinished{RecordingId: 7, FinalPosition: 64})
	if cp := gate.next(t); !cp.Completed {
		t.Fatalf("saved %+v, want the completed checkpoint", cp)
	}
	system.Root.Send(checkpointer, &messages.ReplayStarted{RecordingId: 7, Generation: 2, FromPosition: 64, StartMs: 5, SessionId: 9})
	gate.answers <- nil // the completed save lands: the recording is let go of
	if p := next[*messages.CheckpointPersisted](t, parent); !p.Completed {
		t.Fatalf("persisted %+v, want completed", p)
	}
	system.Root.Send(checkpointer, &messages.Committed{RecordingId: 7, Position: 64})
	system.Root.Send(checkpointer, &messages.RecordingFinished{RecordingId: 7, FinalPosition: 64})
	if _, err := system.Root.RequestFuture(checkpointer, &messages.WatermarkRequest{RecordingId: 7}, waitFor).Result(); err != nil {
		t.Fatalf("the checkpointer does not answer after the repeated end: %v", err)
	}
	wentOn(t, givenUp)
}

// StartDecided has the checkpointer store the stream's definition, with no checkpoint if
// none is due (start_position latest, decided on an empty archive: stream.go), retried
// with back-off when the write fails, and a drain waits for it; a store that held the
// definition at start is not written for it.
func TestTheCheckpointerStoresTheDefinitionAStartWasDecidedOn(t *testing.T) {
	start := func(t *testing.T, stored store.State) (*actor.PID, *actor.ActorSystem, *saveLog, probe) {
		env, cfg := testEnv(t)
		saves := &saveLog{failFirst: 1, saves: make(chan []store.Checkpoint, 16)}
		env.Store = saves
		cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 1000, RetryMinMs: 400, RetryMaxMs: 1000}
		cfg.Stored = stored
		system := testSystem(t)
		checkpointer, _, parent := spawnWatched(t, system, env, cfg, newCheckpointer(env, cfg))
		system.Root.Send(checkpointer, &messages.StartDecided{})
		return checkpointer, system, saves, parent
	}
	saved := func(t *testing.T, saves *saveLog, what string) {
		t.Helper()
		select {
		case cps := <-saves.saves:
			if len(cps) != 0 {
				t.Fatalf("%s: saved %+v; want the definition alone", what, cps)
			}
		case <-time.After(waitFor):
			t.Fatalf("%s: no save within %s", what, waitFor)
		}
	}

	t.Run("nothing stored", func(t *testing.T) {
		checkpointer, system, saves, parent := start(t, store.State{})
		saved(t, saves, "the definition")
		if w := next[*messages.StoreWritten](t, parent); !w.Failed {
			t.Fatal("the first write was to fail")
		}
		failedAt := time.Now()
		system.Root.Send(checkpointer, &messages.Drain{})
		notFlushed(t, parent, 200*time.Millisecond, "flushed before the definition was stored")
		saved(t, saves, "the definition again")
		if waited := time.Since(failedAt); waited < 300*time.Millisecond {
			t.Fatalf("the failed write retried after %s; want the back-off, 400 ms", waited)
		}
		next[*messages.CheckpointsFlushed](t, parent)
	})
	t.Run("the definition stored at start", func(t *testing.T) {
		checkpointer, system, saves, parent := start(t, store.State{Stored: true, Stream: store.Stream{Name: "s"}})
		system.Root.Send(checkpointer, &messages.Drain{})
		next[*messages.CheckpointsFlushed](t, parent)
		select {
		case cps := <-saves.saves:
			t.Fatalf("saved %+v for a definition the store held", cps)
		default:
		}
	})
}

// A commit tracker that fails with a bug (restarted by the strategy, then refusing to run)
// still reports what was committed before the failure, as one the stream stops does: the
// acknowledged record's commit reaches the checkpointer. (Its report went only at Stopping,
// and the failed incarnation is restarted, never stopped: a restart published the record
// again — stored twice unless the broker deduplicates it.)
func TestACommitTrackerFailingWithABugReportsWhatWasCommitted(t *testing.T) {
	for _, c := range []struct {
		name string
		fail any
	}{
		{"a bug", (*messages.PublishAcked)(nil)}, // nil dereference: a runtime error, restarted
		{"poison", &messages.PublishAcked{RecordingId: 7, Epoch: 99, End: 64}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			tracker, givenUp := spawnSupervised(t, system, env, cfg, newTracker(env, cfg, 7, pids))
			system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 1})
			system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 0, End: 64}, {Start: 64, End: 128}}})
			sent := next[*messages.RecordBatch](t, nb.publisher)
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
			system.Root.Send(tracker, c.fail)
			stoppedWith(t, givenUp)
			if c := next[*messages.Committed](t, nb.checkpointer); c.Position != 64 {
				t.Fatalf("committed %d reported; want 64", c.Position)
			}
		})
	}
}

// A commit tracker tells the stream when lesson 22 cannot be ruled out for its recording —
// a failed send has sends above it without an outcome, one of which Pulsar may store — as
// it stops (the outcomes that come after are lost with it) or answers a drain at its
// deadline; a drain waits for those outcomes meanwhile. With every outcome in, it says
// nothing.
func TestACommitTrackerSaysWhenLesson22IsUndecided(t *testing.T) {
	for _, c := range []string{"stopped with outcomes due", "stopped with every outcome in", "a drain waits for the outcomes", "a drain's deadline with outcomes due"} {
		t.Run(c, func(t *testing.T) {
			env, cfg := testEnv(t)
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			tracker := system.Root.Spawn(actor.PropsFromProducer(newTracker(env, cfg, 7, pids)))
			system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 1})
			system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{{Start: 0, End: 64}, {Start: 64, End: 128}, {Start: 128, End: 192}}})
			sent := next[*messages.RecordBatch](t, nb.publisher)
			system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, Epoch: sent.Epoch, End: 64, Error: "timed out"})
			next[*messages.RedeliveryRequired](t, nb.replay)
			answerTheRest := func() {
				for _, end := range []int64{128, 192} {
					system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, Epoch: sent.Epoch, End: end, Error: "timed out"})
				}
			}
			// drained reads what the stream is told up to the tracker's RecordingDrained.
			drained := func() (told *messages.HazardUndecided) {
				t.Helper()
				for {
					switch m := next[any](t, nb.stream).(type) {
					case *messages.HazardUndecided:
						told = m
					case *messages.RecordingDrained:
						return told
					}
				}
			}
			var told *messages.HazardUndecided
			switch c {
			case "stopped with outcomes due":
				if err := system.Root.StopFuture(tracker).Wait(); err != nil {
					t.Fatal(err)
				}
				told = next[*messages.HazardUndecided](t, nb.stream)
			case "stopped with every outcome in":
				answerTheRest()
				system.Root.Send(tracker, &messages.Drain{Now: true}) // answered once they are handled
				told = drained()
			case "a drain waits for the outcomes":
				system.Root.Send(tracker, &messages.Drain{})
				never[*messages.RecordingDrained](t, nb.stream, 200*time.Millisecond, "drained while the sends above the failed one await their outcome")
				answerTheRest()
				told = drained()
			case "a drain's deadline with outcomes due":
				system.Root.Send(tracker, &messages.Drain{})
				system.Root.Send(tracker, &messages.Drain{Now: true})
				told = drained()
			}
			if c == "stopped with outcomes due" || c == "a drain's deadline with outcomes due" {
				if told == nil || told.FailedEnd != 64 || told.Unanswered != 2 {
					t.Fatalf("the stream was told %v; want the record ending at 64 failed with 2 sends above it due", told)
				}
				return
			}
			if told != nil {
				t.Fatalf("the stream was told %v with every outcome in", told)
			}
			if err := system.Root.StopFuture(tracker).Wait(); err != nil {
				t.Fatal(err)
			}
			never[*messages.HazardUndecided](t, nb.stream, 100*time.Millisecond, "told at the stop with every outcome in")
		})
	}
}

// The publisher's report of a record it skipped can reach the tracker before the failure
// that stopped the sends (that send's callback stops the epoch first and tells the tracker
// after): the re-delivery starts at once, and the failure, when it comes, is the cause the
// status says, not the skip.
func TestAFailureArrivingAfterItsSkipsIsTheCauseSaid(t *testing.T) {
	env, cfg := testEnv(t)
	system, nb, tracker := startTracker(t, env, cfg)
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{
		{Start: 0, End: 64, Payload: []byte("a")}, {Start: 64, End: 128, Payload: []byte("b")}}})
	system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, End: 128, Error: "not sent: an earlier send of this epoch failed", NotSent: true})
	next[*messages.RedeliveryRequired](t, nb.replay)
	system.Root.Send(tracker, &messages.PublishFailed{RecordingId: 7, End: 64, Error: "broker said no"})
	for {
		select {
		case m := <-nb.stream:
			if f, ok := m.(*messages.FailureObserved); ok {
				if !strings.Contains(f.Failure.Message, "ending at 64: broker said no") {
					t.Fatalf("the failure said: %q; want the failed send's, ending at 64, broker said no", f.Failure.Message)
				}
				return
			}
		case <-time.After(waitFor):
			t.Fatalf("no failure said within %s", waitFor)
		}
	}
}

// A commit tracker whose mailbox is full (outcomes of a failed epoch and batches of replays
// restarted in quick succession, as its doc says may happen) still commits: it never waits
// for room in its own mailbox, which only it could make. It waited, spinning, for good when
// an acknowledgement had it send itself the burst's commit report then.
func TestACommitTrackerWithAFullMailboxStillCommits(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.MaxInflightRecords = 32
	clock := &blockingClock{in: "(*tracker).acked", entered: make(chan struct{}), released: make(chan struct{})}
	env.Now = clock.now
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	capacity := recordingMailbox(cfg)
	tracker := system.Root.Spawn(actor.PropsFromProducer(newTracker(env, cfg, 7, pids), actor.WithMailbox(actor.Bounded(capacity))))
	system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 1})
	records := make([]*messages.Record, cfg.MaxInflightRecords)
	for i := range records {
		records[i] = &messages.Record{Start: int64(i * 64), End: int64((i + 1) * 64)}
	}
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: records})
	sent := next[*messages.RecordBatch](t, nb.publisher)

	clock.armed.Store(true)
	system.Root.Send(tracker, &messages.PublishAcked{RecordingId: 7, Epoch: sent.Epoch, End: 64})
	<-clock.entered // handling the first acknowledgement, which commits: nothing else is taken
	var queued atomic.Int64
	go func() { // one more than the mailbox holds: the last send waits for room
		for k := range capacity + 1 {
			gen := uint64(2 + k/len(records))
			system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: gen, Records: []*messages.Record{records[k%len(records)]}})
			queued.Add(1)
		}
	}()
	eventually.NoError(t, waitFor, func() error {
		if n := queued.Load(); n != int64(capacity) {
			return fmt.Errorf("%d messages queued; want the mailbox full (%d)", n, capacity)
		}
		return nil
	})
	close(clock.released)
	select {
	case m := <-nb.checkpointer:
		if c, ok := m.(*messages.Committed); !ok || c.Position != 64 {
			t.Fatalf("the checkpointer was sent %v; want the commit of the first record", m)
		}
	case <-time.After(waitFor):
		t.Fatalf("no commit within %s of the acknowledgement: the tracker waits for room in its own full mailbox", waitFor)
	}
}

// trackerOfTwoRecords is a supervised commit tracker of recording 7 whose first replay
// (generation 1) read two records, [0, 64) and [64, 128), which it passed on to the
// publisher: the start of the tests of what their outcomes do.
func trackerOfTwoRecords(t *testing.T) (*actor.ActorSystem, neighbours, *actor.PID, <-chan error) {
	t.Helper()
	env, cfg := testEnv(t)
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	tracker, givenUp := spawnSupervised(t, system, env, cfg, newTracker(env, cfg, 7, pids))
	system.Root.Send(tracker, &messages.ReplayStarted{RecordingId: 7, Generation: 1})
	system.Root.Send(tracker, &messages.RecordBatch{RecordingId: 7, Generation: 1, Records: []*messages.Record{
		{Start: 0, End: 64, Payload: []byte("x")}, {Start: 64, End: 128, Payload: []byte("y")}}})
	next[*messages.RecordBatch](t, nb.publisher)
	return system, nb, tracker, givenUp
}
