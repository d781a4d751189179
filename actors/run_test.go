package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// TestRunBacksOffFromConnectionsLostAsSoonAsMade: a driver or archive that accepts ferry and
// drops it at once is reconnected to with back-off, not at full speed (every reconnect
// builds a pipeline, reloads the store and creates producers), and the board says ferry is
// not connected, with the cause.
func TestRunBacksOffFromConnectionsLostAsSoonAsMade(t *testing.T) {
	var connects atomic.Int32
	dead := make(chan struct{})
	close(dead)
	board := &connectionBoard{}
	startRun(t, RunOptions{
		Connect: func(context.Context) (*Connection, error) {
			connects.Add(1)
			return &Connection{Aeron: noSubscriptions{}, Dead: dead,
				Err: func() error { return errors.New("dropped by the archive") }, Close: func() error { return nil }}, nil
		},
		Streams:   func(func(string) bool) ([]StreamConfig, error) { return nil, nil },
		Board:     board,
		Reconnect: supervisor.Backoff{Min: 50 * time.Millisecond, Max: 400 * time.Millisecond},
	})
	// Back-off from 50 ms doubling to 400 ms, each at least half its base: at most 8
	// connections in a second. At full speed it would be hundreds.
	eventually.Always(t, time.Second, func() error {
		if n := connects.Load(); n > 10 {
			return fmt.Errorf("%d connections in a second, each lost at once: no back-off", n)
		}
		return nil
	})
	if n := connects.Load(); n < 3 {
		t.Fatalf("%d connections in a second: it stopped reconnecting", n)
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if c := board.last(); c == nil || c.Connected || c.Error != "connection lost: dropped by the archive" {
			return fmt.Errorf("board's connection %v; want down, with the cause", c)
		}
		return nil
	})
}

// startRun runs Run with o until the test ends, with no producer, a drain of a second and
// no log, and checks that it returns nil then.
func startRun(t *testing.T, o RunOptions) {
	t.Helper()
	o.CreateProducer = noProducer
	o.DrainTimeout, o.Logger = time.Second, slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
}

// noProducer is a producer factory for tests whose pipelines never publish.
func noProducer(pulsar.ProducerOptions) (pulsar.Producer, error) {
	return nil, errors.New("no producer in this test")
}

// noSubscriptions is an Aeron client a pipeline of no streams never asks for anything.
type noSubscriptions struct{}

func (noSubscriptions) AddSubscription(context.Context, string, int32, aeron.ImageHandlers) (*aeron.Subscription, error) {
	return nil, errors.New("no subscriptions in this test")
}

// connectionBoard keeps the last connection state Run reported.
type connectionBoard struct {
	mu   sync.Mutex
	conn *messages.Connection
}

func (b *connectionBoard) SetStream(*messages.StreamStatus) {}

func (b *connectionBoard) SetConnection(c *messages.Connection) {
	b.mu.Lock()
	b.conn = c
	b.mu.Unlock()
}

func (b *connectionBoard) last() *messages.Connection {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn
}

// subscribeByStream fails the subscriptions of stream id 1 at once, unless told to let it
// wait, and leaves the others waiting, counting the calls of each.
type subscribeByStream struct {
	mu    sync.Mutex
	calls map[int32]int
	wait  map[int32]bool
}

func (s *subscribeByStream) AddSubscription(ctx context.Context, _ string, stream int32, _ aeron.ImageHandlers) (*aeron.Subscription, error) {
	s.mu.Lock()
	s.calls[stream]++
	refuse := stream == 1 && !s.wait[stream]
	s.mu.Unlock()
	if refuse {
		return nil, errors.New("refused by the test")
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// letWait makes the subscriptions of stream wait from now on.
func (s *subscribeByStream) letWait(stream int32) {
	s.mu.Lock()
	s.wait[stream] = true
	s.mu.Unlock()
}

func (s *subscribeByStream) count(stream int32) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[stream]
}

// TestAStreamFailedOfATransientFailureIsStartedAgainAfterAReconnect: a stream whose actors
// kept failing on what may come back (here: its live subscription refused, as by a driver
// going away) is started again when ferry reconnects to the media driver and archive, as a
// restart of ferry would; until then its status says it failed.
func TestAStreamFailedOfATransientFailureIsStartedAgainAfterAReconnect(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	cfg.CallTimeout = time.Hour
	cfg.Restart.MaxRestarts = 1
	subs := &subscribeByStream{calls: map[int32]int{}, wait: map[int32]bool{}}
	board := &streamBoard{streams: map[string]*messages.StreamStatus{}}
	deads := runTwoStreams(t, cfg, subs, board)
	waitFailedTransiently(t, board.stream)
	tries := subs.count(1)
	subs.letWait(1) // the new driver takes the subscription
	close(<-deads)  // the driver is lost
	<-deads         // and ferry connected again
	waitRunningAgain(t, subs, board.stream, tries)
	// Started again, it is no longer failed; why it was stays among its last failures.
	if st := board.stream("a"); !slices.ContainsFunc(st.Failures, func(f *messages.Failure) bool {
		return f.Kind == "stream" && f.AtMs > 0 && strings.Contains(f.Message, "refused by the test")
	}) {
		t.Fatalf("stream a started again: failures %v; want why it failed, kind stream", st.Failures)
	}
}

// TestAStreamFailedForGoodStaysFailedAcrossAReconnect: a stream that failed of what a new
// start would find again (here a bug: its supervisor failed) is not started again when the
// media driver or archive is lost and ferry reconnects — after lesson 22, say, a new start
// would take the failed record's re-send, answered as a duplicate, for published — and its
// status stays failed; the other stream is started again. Nor are its stored checkpoints
// read again, which may be what failed it (damaged while ferry ran, so that its save was
// refused): their load's error would end the run, and stop the other stream too.
func TestAStreamFailedForGoodStaysFailedAcrossAReconnect(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	subs := &subscribeByStream{calls: map[int32]int{}, wait: map[int32]bool{1: true}}
	board := newFailingBoard("a")
	board.armed.Store(true)
	close(board.release) // stream a's supervisor fails at its first status push
	var damaged atomic.Bool
	deads := runTwoStreamsLoading(t, cfg, subs, board, func(name string) error {
		if name == "a" && damaged.Load() {
			return errors.New(`stream "a": its checkpoints are corrupt`)
		}
		return nil
	})
	failedA := func() error {
		if st := board.stream("a"); st == nil || st.State != "failed" {
			return fmt.Errorf("stream a's status %v; want failed", st)
		}
		return nil
	}
	eventually.NoError(t, waitFor, failedA)
	damaged.Store(true)
	tries := subs.count(1)
	close(<-deads) // the driver is lost
	<-deads        // and ferry connected again
	waitSubscribedAgain(t, subs, 2)
	eventually.Always(t, 300*time.Millisecond, func() error {
		if n := subs.count(1); n != tries {
			return fmt.Errorf("stream a subscribed %d times after the reconnect: started again", n-tries)
		}
		return failedA()
	})
}

// TestAStreamFailingForGoodAfterATransientFailureStaysFailedAcrossAReconnect: a stream
// that failed of a transient failure and then, while its actors stopped, for good (here
// its supervisor fails; lesson 22 found by a stopping tracker is the case that matters)
// says the later failure, and a reconnect does not start it again.
func TestAStreamFailingForGoodAfterATransientFailureStaysFailedAcrossAReconnect(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	cfg.CallTimeout = time.Hour
	cfg.Restart.MaxRestarts = 1
	subs := &subscribeByStream{calls: map[int32]int{}, wait: map[int32]bool{}}
	board := newFailingBoard("a")
	deads := runTwoStreams(t, cfg, subs, board)
	waitFailedTransiently(t, board.stream)
	close(board.release)
	board.armed.Store(true) // stream a's next status push fails its supervisor
	eventually.NoError(t, waitFor, func() error {
		if st := board.stream("a"); st == nil || !strings.Contains(st.Reason, "the stream's supervisor failed") {
			return fmt.Errorf("stream a's status %v; want the later failure", st)
		}
		return nil
	})
	tries := subs.count(1)
	subs.letWait(1)
	close(<-deads) // the driver is lost
	<-deads        // and ferry connected again
	waitSubscribedAgain(t, subs, 2)
	eventually.Always(t, 300*time.Millisecond, func() error {
		if n := subs.count(1); n != tries {
			return fmt.Errorf("stream a, failed for good after a transient failure, subscribed %d times after the reconnect: started again", n-tries)
		}
		return nil
	})
}

// TestAStreamFailingSlowlyWithoutProgressFails: an actor whose every attempt fails long
// after the one before (here: the window is shorter than the back-off, as when each attempt
// waits out a timeout) never has two failures in one window; failing in a row without
// progress, it still fails the stream, which says so, and the other stream goes on.
func TestAStreamFailingSlowlyWithoutProgressFails(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	cfg.Restart = supervisor.Policy{Backoff: supervisor.Backoff{Min: time.Millisecond, Max: time.Millisecond}, MaxRestarts: 3, Window: time.Nanosecond}
	subs := &subscribeByStream{calls: map[int32]int{}}
	board := &streamBoard{streams: map[string]*messages.StreamStatus{}}
	runTwoStreams(t, cfg, subs, board)
	eventually.NoError(t, waitFor, func() error {
		st := board.stream("a")
		if st == nil || st.State != "failed" {
			return fmt.Errorf("stream a's status %v (subscribed %d times); want failed", st, subs.count(1))
		}
		if !strings.Contains(st.Reason, "refused by the test") {
			return fmt.Errorf("stream a failed with %q; want the refusal", st.Reason)
		}
		return nil
	})
	if n := subs.count(1); n != cfg.Restart.MaxRestarts+1 {
		t.Errorf("stream a subscribed %d times; want %d (the first and its restarts)", n, cfg.Restart.MaxRestarts+1)
	}
	eventually.NoError(t, waitFor, func() error {
		if st := board.stream("b"); st == nil || st.State == "failed" {
			return fmt.Errorf("stream b's status %v; want it running", st)
		}
		return nil
	})
}

// TestAStreamFailingDuringTheDrainStaysFailedAcrossAReconnect: a stream that fails while the
// lost connection's pipeline drains (an acknowledgement arriving then can be lesson 22's) is
// as failed as one that failed before the loss: not started again after the reconnect.
func TestAStreamFailingDuringTheDrainStaysFailedAcrossAReconnect(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	subs := &subscribeByStream{calls: map[int32]int{}, wait: map[int32]bool{1: true}}
	board := newFailingBoard("a")
	deads := runTwoStreams(t, cfg, subs, board)
	eventually.NoError(t, waitFor, func() error {
		if subs.count(1) == 0 || subs.count(2) == 0 {
			return errors.New("the streams did not subscribe")
		}
		return nil
	})
	board.armed.Store(true)
	select { // stream a's supervisor is held inside its next status push
	case <-board.blocked:
	case <-time.After(waitFor):
		t.Fatalf("stream a pushed no status within %s", waitFor)
	}
	close(<-deads) // the driver is lost: Run leaves its wait and drains
	select {
	case <-board.lost:
	case <-time.After(waitFor):
		t.Fatalf("Run reported no lost connection within %s", waitFor)
	}
	tries := subs.count(1)
	close(board.release) // now stream a fails, with the drain waiting for it
	<-deads              // ferry connected again
	waitSubscribedAgain(t, subs, 2)
	eventually.Always(t, 300*time.Millisecond, func() error {
		if n := subs.count(1); n != tries {
			return fmt.Errorf("stream a, failed during the drain, subscribed %d times after the reconnect: started again", n-tries)
		}
		if st := board.stream("a"); st == nil || st.State != "failed" {
			return fmt.Errorf("stream a's status %v; want failed", st)
		}
		return nil
	})
}

// TestAReconnectStartsAgainAStreamFailedOfATransientFailureThoughNoneIsLeftRunning: the
// last stream failing (for good) as the lost connection's pipeline drains does not end Run
// with "every stream failed" while another stream's failure was transient: ferry
// reconnects and starts that one again.
func TestAReconnectStartsAgainAStreamFailedOfATransientFailureThoughNoneIsLeftRunning(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	cfg.CallTimeout = time.Hour
	cfg.Restart.MaxRestarts = 1
	subs := &subscribeByStream{calls: map[int32]int{}, wait: map[int32]bool{}}
	board := newFailingBoard("b")
	deads := runTwoStreams(t, cfg, subs, board)
	eventually.NoError(t, waitFor, func() error {
		if st := board.stream("a"); st == nil || st.State != "failed" {
			return fmt.Errorf("stream a's status %v; want failed", st)
		}
		return nil
	})
	board.armed.Store(true)
	select { // stream b's supervisor is held inside its next status push
	case <-board.blocked:
	case <-time.After(waitFor):
		t.Fatalf("stream b pushed no status within %s", waitFor)
	}
	close(<-deads) // the driver is lost: Run leaves its wait and drains
	select {
	case <-board.lost:
	case <-time.After(waitFor):
		t.Fatalf("Run reported no lost connection within %s", waitFor)
	}
	tries := subs.count(1)
	subs.letWait(1)
	close(board.release) // now stream b fails (a bug), with the drain waiting for it
	select {
	case <-deads: // ferry connected again
	case <-time.After(waitFor):
		t.Fatalf("ferry did not reconnect within %s", waitFor)
	}
	waitRunningAgain(t, subs, board.stream, tries)
}

// TestTheLastTransientFailureAsTheConnectionDiesIsStartedAgain: the last stream failing
// transiently while the connection is still taken for alive, which dies during the drain,
// does not end Run with "every stream failed": the connection is looked at again after the
// drain, and ferry reconnects and starts the stream again.
func TestTheLastTransientFailureAsTheConnectionDiesIsStartedAgain(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.Transport = true
	cfg.CallTimeout = time.Hour
	cfg.Restart.MaxRestarts = 0 // the live reader's first failure gives it up
	a := *cfg
	a.Def.Name, a.Def.StreamID = "a", 1
	subs := &subscribeByStream{calls: map[int32]int{}, wait: map[int32]bool{}}
	board := &holdFailedBoard{streamBoard: streamBoard{streams: map[string]*messages.StreamStatus{}}, blocked: make(chan struct{}), release: make(chan struct{})}
	deads := make(chan chan struct{}, 2)
	startRun(t, RunOptions{
		Connect: func(context.Context) (*Connection, error) {
			dead := make(chan struct{})
			deads <- dead
			return &Connection{Aeron: subs, Dead: dead, Err: func() error { return errors.New("driver restarted by the test") }, Close: func() error { return nil }}, nil
		},
		Streams:   func(func(string) bool) ([]StreamConfig, error) { return []StreamConfig{a}, nil },
		Board:     board,
		Reconnect: supervisor.Backoff{Min: time.Millisecond, Max: time.Millisecond},
	})
	dead := <-deads
	select { // stream a failed (reported), and is held in its push of that status
	case <-board.blocked:
	case <-time.After(waitFor):
		t.Fatalf("stream a did not fail within %s", waitFor)
	}
	subs.letWait(1)
	close(dead) // the connection dies while Run drains
	close(board.release)
	select {
	case <-deads: // connected again
	case <-time.After(waitFor):
		t.Fatalf("ferry did not reconnect within %s", waitFor)
	}
	waitSubscribedAgain(t, subs, 1)
}

// holdFailedBoard holds the first push of a failed status until released.
type holdFailedBoard struct {
	streamBoard
	once             sync.Once
	blocked, release chan struct{}
}

func (b *holdFailedBoard) SetStream(st *messages.StreamStatus) {
	if st.State == "failed" {
		b.once.Do(func() {
			close(b.blocked)
			<-b.release
		})
	}
	b.streamBoard.SetStream(st)
}

// waitFailedTransiently waits until stream a's status, as stream gives it, says it failed
// of a transient failure.
func waitFailedTransiently(t *testing.T, stream func(string) *messages.StreamStatus) {
	t.Helper()
	eventually.NoError(t, waitFor, func() error {
		if st := stream("a"); st == nil || st.State != "failed" || !strings.Contains(st.Reason, "(transient)") {
			return fmt.Errorf("stream a's status %v; want failed, transient", st)
		}
		return nil
	})
}

// waitRunningAgain waits until stream a (stream id 1), which had subscribed tries times,
// subscribed again after a reconnect and its status no longer says it failed.
func waitRunningAgain(t *testing.T, subs *subscribeByStream, stream func(string) *messages.StreamStatus, tries int) {
	t.Helper()
	eventually.NoError(t, waitFor, func() error {
		if n := subs.count(1); n == tries {
			return errors.New("stream a did not subscribe again after the reconnect")
		}
		if st := stream("a"); st == nil || st.State == "failed" {
			return fmt.Errorf("stream a's status %v; want it running again", st)
		}
		return nil
	})
}

// waitSubscribedAgain waits until the stream of stream id subscribed a second time: ferry
// reconnected and started it again.
func waitSubscribedAgain(t *testing.T, subs *subscribeByStream, stream int32) {
	t.Helper()
	eventually.NoError(t, waitFor, func() error {
		if n := subs.count(stream); n < 2 {
			return fmt.Errorf("stream id %d subscribed %d times; want again after the reconnect", stream, n)
		}
		return nil
	})
}

// runTwoStreams runs Run, until the test ends, with streams a (stream id 1) and b (2) made
// of cfg, on connections to subs; each connection's Dead channel, for the test to close,
// comes on the channel returned, as the connection is made.
func runTwoStreams(t *testing.T, cfg *StreamConfig, subs Subscriber, board StatusBoard) <-chan chan struct{} {
	t.Helper()
	return runTwoStreamsLoading(t, cfg, subs, board, func(string) error { return nil })
}

// runTwoStreamsLoading is runTwoStreams whose streams' loads (at each start, those Run does
// not skip) fail with what load returns for the stream's name.
func runTwoStreamsLoading(t *testing.T, cfg *StreamConfig, subs Subscriber, board StatusBoard, load func(name string) error) <-chan chan struct{} {
	t.Helper()
	a, b := *cfg, *cfg
	a.Def.Name, a.Def.StreamID = "a", 1
	b.Def.Name, b.Def.StreamID = "b", 2
	deads := make(chan chan struct{}, 2)
	startRun(t, RunOptions{
		Connect: func(context.Context) (*Connection, error) {
			dead := make(chan struct{})
			deads <- dead
			return &Connection{Aeron: subs, Dead: dead, Err: func() error { return errors.New("driver restarted by the test") }, Close: func() error { return nil }}, nil
		},
		Streams: func(skip func(string) bool) ([]StreamConfig, error) {
			var out []StreamConfig
			for _, s := range []StreamConfig{a, b} {
				if skip(s.Def.Name) {
					continue
				}
				if err := load(s.Def.Name); err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, nil
		},
		Board:     board,
		Reconnect: supervisor.Backoff{Min: time.Millisecond, Max: time.Millisecond},
	})
	return deads
}

// failingBoard is a streamBoard on which, once armed, the failing stream's next status push
// blocks until released and then panics: that stream's supervisor fails, at the time the
// test chooses. lost is closed when Run reports the connection lost.
type failingBoard struct {
	streamBoard
	failing          string
	armed            atomic.Bool
	blocked, release chan struct{}
	lost             chan struct{}
	lostOnce         sync.Once
}

// newFailingBoard is a failingBoard for stream failing, not armed.
func newFailingBoard(failing string) *failingBoard {
	return &failingBoard{streamBoard: streamBoard{streams: map[string]*messages.StreamStatus{}},
		failing: failing, blocked: make(chan struct{}), release: make(chan struct{}), lost: make(chan struct{})}
}

func (b *failingBoard) SetStream(st *messages.StreamStatus) {
	if st.Name == b.failing && b.armed.CompareAndSwap(true, false) {
		close(b.blocked)
		<-b.release
		panic("the board failed the stream, as the test asked")
	}
	b.streamBoard.SetStream(st)
}

func (b *failingBoard) SetConnection(c *messages.Connection) {
	if !c.Connected && strings.HasPrefix(c.Error, "connection lost") {
		b.lostOnce.Do(func() { close(b.lost) })
	}
}

// Each stream's failure is delivered once, whatever order the streams report in — a
// stream reporting twice (its supervisor failing while it fails) does not take the place
// of another's, which would then be started again after a reconnect, and not counted among
// the streams that failed — but for a failure for good after a transient one, which is
// delivered too and replaces it: the stream must not be started again.
func TestEachStreamsFailureIsDeliveredOnce(t *testing.T) {
	env, cfg := testEnv(t)
	env.Aeron, env.CreateProducer = waitingSubscriber{}, noProducer
	cfg.Transport = true
	a, b := *cfg, *cfg
	a.Def.Name, b.Def.Name = "a", "b"
	p, err := NewPipeline(env, []StreamConfig{a, b})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	p.report("a", supervisor.Transient, errors.New("first"))
	p.report("b", supervisor.Poison, errors.New("b's"))
	p.report("b", supervisor.Transient, errors.New("b's again, while failing"))
	p.report("a", supervisor.Poison, errors.New("lesson 22, as a's tracker stopped"))
	p.report("a", supervisor.Bug, errors.New("again, while failing for good"))
	for _, want := range []StreamFailure{
		{"a", supervisor.Transient, errors.New("first")},
		{"b", supervisor.Poison, errors.New("b's")},
		{"a", supervisor.Poison, errors.New("lesson 22, as a's tracker stopped")},
	} {
		select {
		case f := <-p.Failures():
			if f.Stream != want.Stream || f.Class != want.Class || f.Err.Error() != want.Err.Error() {
				t.Fatalf("failure %s (%s): %v; want %s (%s): %v", f.Stream, f.Class, f.Err, want.Stream, want.Class, want.Err)
			}
		default:
			t.Fatalf("stream %s's failure %q was not delivered", want.Stream, want.Err)
		}
	}
	select {
	case f := <-p.Failures():
		t.Fatalf("a further failure of stream %s was delivered: %v", f.Stream, f.Err)
	default:
	}
}

// oneStoppedRecording is an archive holding recording 7 of the stream, stopped at 64.
type oneStoppedRecording struct{ replayCounter }

func (*oneStoppedRecording) RecordingsOfChannel(context.Context, channel.URI, int32, int32) ([]archive.RecordingDescriptor, error) {
	return []archive.RecordingDescriptor{{RecordingID: 7, StartTimestampMs: 1, StopTimestampMs: 2, StopPosition: 64, SessionID: 1}}, nil
}

// ChannelRecordings is RecordingsOfChannel's listing, with no recordings the channel does
// not select.
func (o *oneStoppedRecording) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error) {
	selected, err = o.RecordingsOfChannel(ctx, uri, streamID, pageSize)
	return selected, nil, err
}

// A checkpoint store write that Pipeline.Stop stopped waiting for (a hung disk) may still
// land: a reconnect does not load the store, and start a pipeline from it, before it has.
// Loaded before, the new pipeline would resume from checkpoints the write then overwrites,
// and its own saves, from the older positions, would be refused as regressions.
func TestAReconnectWaitsForTheStoppedPipelinesStoreWrite(t *testing.T) {
	_, cfg := testEnv(t)
	cfg.DiscoveryInterval = 20 * time.Millisecond
	cfg.Checkpoint = progress.CheckpointConfig{EveryRecords: 1, EveryMs: 10, RetryMinMs: 10, RetryMaxMs: 100}
	// The replays fail to subscribe (noSubscriptions), restarted slowly: the stream lives.
	cfg.Restart = supervisor.Policy{Backoff: supervisor.Backoff{Min: 200 * time.Millisecond, Max: time.Second}, MaxRestarts: 1000, Window: time.Minute}
	gate := newGatedStore(t)
	var loads atomic.Int32
	deads := make(chan chan struct{}, 2)
	startRun(t, RunOptions{
		Connect: func(context.Context) (*Connection, error) {
			dead := make(chan struct{})
			deads <- dead
			return &Connection{Archive: &oneStoppedRecording{}, Aeron: noSubscriptions{}, Dead: dead,
				Err: func() error { return errors.New("archive restarted by the test") }, Close: func() error { return nil }}, nil
		},
		Streams: func(func(string) bool) ([]StreamConfig, error) {
			loads.Add(1)
			return []StreamConfig{*cfg}, nil
		},
		Store:     gate,
		Reconnect: supervisor.Backoff{Min: time.Millisecond, Max: time.Millisecond},
		stopWait:  100 * time.Millisecond,
	})
	dead := <-deads
	<-gate.saves // recording 7's seed, its write hung
	close(dead)  // the archive is lost: drain (1 s), stop (0.1 s), reconnect
	eventually.Always(t, 3*time.Second, func() error {
		if n := loads.Load(); n != 1 {
			return fmt.Errorf("the store loaded %d times while the stopped pipeline's write was in flight", n)
		}
		return nil
	})
	gate.answers <- nil // the write lands
	eventually.NoError(t, waitFor, func() error {
		if n := loads.Load(); n != 2 {
			return fmt.Errorf("the store loaded %d times after the write landed; want 2 (reconnected)", n)
		}
		return nil
	})
}

// ferry is not connected since its first attempt began, not since that attempt gave up
// (an attempt may take the archive's whole connect timeout).
func TestNotConnectedSinceTheFirstAttemptBegan(t *testing.T) {
	board := &connectionBoard{}
	began := time.Now()
	startRun(t, RunOptions{
		Connect: func(ctx context.Context) (*Connection, error) {
			select { // a slow attempt: no media driver answers
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			return nil, errors.New("no media driver")
		},
		Streams:   func(func(string) bool) ([]StreamConfig, error) { return nil, nil },
		Board:     board,
		Reconnect: supervisor.Backoff{Min: time.Hour, Max: time.Hour},
	})
	eventually.NoError(t, waitFor, func() error {
		c := board.last()
		if c == nil {
			return errors.New("no connection state yet")
		}
		if since := time.UnixMilli(c.SinceMs); since.Sub(began) > 500*time.Millisecond {
			return fmt.Errorf("not connected since %s after the start, want since the first attempt began", since.Sub(began))
		}
		return nil
	})
}
