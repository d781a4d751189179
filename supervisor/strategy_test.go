package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/store"
)

// waitFor bounds every wait for an asynchronous outcome. It is generous: reaching it
// means the outcome never came.
const waitFor = 10 * time.Second

// fakeClock is a clock the test moves by hand. It is safe for concurrent use.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// logRecord is what the test keeps of one log record.
type logRecord struct {
	level slog.Level
	msg   string
	class string
}

// recordingHandler is a slog.Handler that keeps every record. It is safe for concurrent use.
type recordingHandler struct {
	mu      *sync.Mutex
	records *[]logRecord
}

func newRecordingHandler() recordingHandler {
	return recordingHandler{mu: new(sync.Mutex), records: new([]logRecord)}
}

func (h recordingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordingHandler) WithGroup(string) slog.Handler            { return h }

func (h recordingHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "class" {
			rec.class = a.Value.String()
		}
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.records = append(*h.records, rec)
	return nil
}

func (h recordingHandler) levels() []slog.Level {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []slog.Level
	for _, r := range *h.records {
		out = append(out, r.level)
	}
	return out
}

// giveUpCall is one call of a GiveUp callback.
type giveUpCall struct {
	child  *actor.PID
	class  Class
	reason any
}

// failWith makes the test child panic with reason.
type failWith struct{ reason any }

// probe carries what the test actors observe back to the test. Channels are buffered far
// beyond what a test case produces, so actors never block on them.
type probe struct {
	spawned    chan *actor.PID
	started    chan struct{}
	stopped    chan struct{}
	terminated chan *actor.PID // children the parent saw terminate
}

func newProbe() *probe {
	return &probe{
		spawned:    make(chan *actor.PID, 1),
		started:    make(chan struct{}, 64),
		stopped:    make(chan struct{}, 64),
		terminated: make(chan *actor.PID, 64),
	}
}

// child reports its lifecycle and panics when told to.
type child struct{ p *probe }

func (c *child) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		c.p.started <- struct{}{}
	case *actor.Stopped:
		c.p.stopped <- struct{}{}
	case *failWith:
		panic(m.reason)
	}
}

// parent spawns one child when started; its Props carry the strategy under test.
type parent struct{ p *probe }

func (a *parent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.p.spawned <- ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return &child{p: a.p} }))
	case *actor.Terminated:
		a.p.terminated <- m.Who
	}
}

func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatalf("timed out after %v waiting for %s", waitFor, what)
		panic("unreachable")
	}
}

// step is one failure the test injects into the child, and what must follow.
type step struct {
	advance    time.Duration // move the fake clock by this much first
	progressed bool          // tell the strategy the child made progress, then fail it
	reason     any           // what the child panics with
	wantDelay  time.Duration // the restart delay, if the child must be restarted
	wantGiveUp Class         // the class given up with, if the child must be stopped for good
}

// TestStrategyWithActors runs the strategy as the supervisor of a real protoactor parent
// and fails its child step by step. Restarts run at once (in a new goroutine) but record
// the delay the strategy asked for; jitter is fixed at 0.5, so a delay is 3/4 of its base.
func TestStrategyWithActors(t *testing.T) {
	errDown := errors.New("pulsar: broker unavailable")
	transient := Fail(Transient, errDown)
	restart := Restart(errors.New("recording 7 was extended while ferry replayed it"))
	backoff := Backoff{Min: 10 * time.Millisecond, Max: 30 * time.Millisecond}
	delay := func(base time.Duration) time.Duration { return base * 3 / 4 }

	for _, tc := range []struct {
		name   string
		policy Policy
		steps  []step
	}{
		{
			name:   "transient failures restart with growing capped delays, then give up",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: time.Second, reason: transient, wantDelay: delay(20 * time.Millisecond)},
				{advance: time.Second, reason: transient, wantDelay: delay(30 * time.Millisecond)},
				{advance: time.Second, reason: transient, wantDelay: delay(30 * time.Millisecond)},
				{advance: time.Second, reason: transient, wantGiveUp: Transient},
			},
		},
		{
			name:   "poison stops at once without restarting",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: Fail(Poison, fmt.Errorf("replay recording 7: %w", archive.ErrRecordingUnknown)), wantGiveUp: Poison},
			},
		},
		{
			name:   "unknown recording panicked bare is poison",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{reason: fmt.Errorf("replay: %w", archive.ErrRecordingUnknown), wantGiveUp: Poison},
			},
		},
		{
			name:   "corrupt checkpoint stops at once without restarting",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: fmt.Errorf("load: %w", &store.CorruptError{File: "f.db", Stream: "s", Key: "k", Reason: "checksum mismatch"}), wantGiveUp: Corrupt},
			},
		},
		{
			name:   "failures outside the window with progress between them do not count",
			policy: Policy{Backoff: backoff, MaxRestarts: 1, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: time.Minute, progressed: true, reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: 2 * time.Minute, progressed: true, reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: time.Minute - 1, progressed: true, reason: transient, wantGiveUp: Transient},
			},
		},
		{
			// A child whose every attempt waits out a long timeout before failing never
			// has two failures within the window, yet makes no progress either.
			name:   "failures far apart in a row without progress give up",
			policy: Policy{Backoff: backoff, MaxRestarts: 2, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: 10 * time.Minute, reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: 10 * time.Minute, reason: transient, wantGiveUp: Transient},
			},
		},
		{
			name:   "progress restarts the count in a row, not the window's",
			policy: Policy{Backoff: backoff, MaxRestarts: 2, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: 10 * time.Minute, reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: 10 * time.Minute, progressed: true, reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{advance: time.Second, progressed: true, reason: transient, wantDelay: delay(20 * time.Millisecond)},
				{advance: time.Second, progressed: true, reason: transient, wantGiveUp: Transient},
			},
		},
		{
			name:   "a bug restarts once, then gives up",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: "assertion failed: ack floor moved backwards", wantDelay: delay(10 * time.Millisecond)},
				{reason: indexOutOfRange(), wantGiveUp: Bug},
			},
		},
		{
			name:   "a bug after another no longer counted restarts once more",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: nilMapWrite(), wantDelay: delay(10 * time.Millisecond)},
				// Outside the window, progress since: the first bug no longer counts.
				{advance: 2 * time.Minute, progressed: true, reason: indexOutOfRange(), wantDelay: delay(10 * time.Millisecond)},
				// Outside the window too, but no progress since: the second still counts.
				{advance: 2 * time.Minute, reason: nilMapWrite(), wantGiveUp: Bug},
			},
		},
		{
			name:   "transient failures do not use up a bug's restart",
			policy: Policy{Backoff: backoff, MaxRestarts: 4, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{reason: transient, wantDelay: delay(20 * time.Millisecond)},
				{reason: nilMapWrite(), wantDelay: delay(30 * time.Millisecond)},
				{reason: transient, wantDelay: delay(30 * time.Millisecond)},
				{reason: indexOutOfRange(), wantGiveUp: Bug},
			},
		},
		{
			// A child that starts again on purpose (ferry: a recording extended under its
			// replay) as often as it likes, with progress in between, is never given up,
			// and waits the shortest back-off; nor does it raise a failure's back-off.
			name:   "restarts with progress between them do not count",
			policy: Policy{Backoff: backoff, MaxRestarts: 2, Window: time.Minute},
			steps: []step{
				{reason: transient, wantDelay: delay(10 * time.Millisecond)},
				{progressed: true, reason: restart, wantDelay: delay(10 * time.Millisecond)},
				{progressed: true, reason: restart, wantDelay: delay(10 * time.Millisecond)},
				{progressed: true, reason: restart, wantDelay: delay(10 * time.Millisecond)},
				{progressed: true, reason: transient, wantDelay: delay(20 * time.Millisecond)},
				{progressed: true, reason: restart, wantDelay: delay(10 * time.Millisecond)},
				{progressed: true, reason: transient, wantGiveUp: Transient},
			},
		},
		{
			name:   "restarts in a row without progress give up",
			policy: Policy{Backoff: backoff, MaxRestarts: 2, Window: time.Minute},
			steps: []step{
				{reason: restart, wantDelay: delay(10 * time.Millisecond)},
				{reason: restart, wantDelay: delay(10 * time.Millisecond)},
				{reason: restart, wantGiveUp: Transient},
			},
		},
		{
			name:   "zero max restarts gives up on the first failure",
			policy: Policy{Backoff: backoff, MaxRestarts: 0, Window: time.Minute},
			steps: []step{
				{reason: transient, wantGiveUp: Transient},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newFakeClock()
			logs := newRecordingHandler()
			delays := make(chan time.Duration, 64)
			gaveUp := make(chan giveUpCall, 64)
			strategy, err := NewStrategy(tc.policy,
				func(child *actor.PID, class Class, reason any) {
					gaveUp <- giveUpCall{child: child, class: class, reason: reason}
				},
				slog.New(logs),
				WithClock(clock.Now),
				WithRandom(func() float64 { return 0.5 }),
				WithAfterFunc(func(d time.Duration, f func()) {
					delays <- d
					go f()
				}),
			)
			if err != nil {
				t.Fatal(err)
			}

			system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
				return slog.New(slog.DiscardHandler)
			}))
			var (
				eventsMu   sync.Mutex
				directives []actor.Directive
			)
			sub := system.EventStream.Subscribe(func(evt any) {
				if e, ok := evt.(*actor.SupervisorEvent); ok {
					eventsMu.Lock()
					directives = append(directives, e.Directive)
					eventsMu.Unlock()
				}
			})
			p := newProbe()
			parentPID := system.Root.Spawn(actor.PropsFromProducer(
				func() actor.Actor { return &parent{p: p} },
				actor.WithSupervisor(strategy),
			))
			t.Cleanup(func() {
				if err := system.Root.StopFuture(parentPID).Wait(); err != nil {
					t.Errorf("stop parent: %v", err)
				}
				system.EventStream.Unsubscribe(sub)
				system.Shutdown()
			})

			childPID := receive(t, p.spawned, "the child to be spawned")
			receive(t, p.started, "the child to start")

			var wantDirectives []actor.Directive
			var wantLevels []slog.Level
			for i, s := range tc.steps {
				clock.Advance(s.advance)
				if s.progressed {
					strategy.Progressed(childPID)
				}
				system.Root.Send(childPID, &failWith{reason: s.reason})
				if s.wantGiveUp == 0 {
					if got := receive(t, delays, fmt.Sprintf("step %d: a restart", i)); got != s.wantDelay {
						t.Fatalf("step %d: restart delay = %v, want %v", i, got, s.wantDelay)
					}
					receive(t, p.started, fmt.Sprintf("step %d: the child to start again", i))
					wantDirectives = append(wantDirectives, actor.RestartDirective)
					switch {
					case Classify(s.reason) == Bug:
						wantLevels = append(wantLevels, slog.LevelError)
					case s.reason == restart:
						wantLevels = append(wantLevels, slog.LevelInfo)
					default:
						wantLevels = append(wantLevels, slog.LevelWarn)
					}
					continue
				}
				call := receive(t, gaveUp, fmt.Sprintf("step %d: give up", i))
				if !call.child.Equal(childPID) || call.class != s.wantGiveUp || call.reason != s.reason {
					t.Fatalf("step %d: GiveUp(%v, %v, %v), want GiveUp(%v, %v, %v)",
						i, call.child, call.class, call.reason, childPID, s.wantGiveUp, s.reason)
				}
				receive(t, p.stopped, fmt.Sprintf("step %d: the child to stop", i))
				// The parent must have forgotten the child before the test stops the parent;
				// otherwise the parent's stop reaches the dead child through dead letters.
				if who := receive(t, p.terminated, fmt.Sprintf("step %d: the parent to see the child terminate", i)); !who.Equal(childPID) {
					t.Fatalf("step %d: parent saw %v terminate, want %v", i, who, childPID)
				}
				wantDirectives = append(wantDirectives, actor.StopDirective)
				wantLevels = append(wantLevels, slog.LevelError)
				if i != len(tc.steps)-1 {
					t.Fatalf("bad test case: step %d gives up but is not the last", i)
				}
			}

			// GiveUp and restarts are both decided inside HandleFailure, so by now any restart
			// the strategy scheduled has been recorded.
			select {
			case d := <-delays:
				t.Errorf("unexpected restart after %v", d)
			default:
			}
			select {
			case call := <-gaveUp:
				t.Errorf("unexpected GiveUp(%v, %v, %v)", call.child, call.class, call.reason)
			default:
			}
			if got := strategy.tracked(); got != 0 {
				t.Errorf("strategy still tracks %d children after giving up", got)
			}
			eventsMu.Lock()
			gotDirectives := slices.Clone(directives)
			eventsMu.Unlock()
			if !slices.Equal(gotDirectives, wantDirectives) {
				t.Errorf("supervisor events = %v, want %v", gotDirectives, wantDirectives)
			}
			if got := logs.levels(); !slices.Equal(got, wantLevels) {
				t.Errorf("log levels = %v, want %v", got, wantLevels)
			}
		})
	}
}

// fakeSupervisor records the directives a strategy applies. It is safe for concurrent use.
type fakeSupervisor struct {
	mu        sync.Mutex
	restarted []string
	stopped   []string
}

func (s *fakeSupervisor) Children() []*actor.PID          { return nil }
func (s *fakeSupervisor) EscalateFailure(any, any)        { panic("the strategy must never escalate") }
func (s *fakeSupervisor) ResumeChildren(...*actor.PID)    { panic("the strategy must never resume") }
func (s *fakeSupervisor) RestartChildren(p ...*actor.PID) { s.record(&s.restarted, p) }
func (s *fakeSupervisor) StopChildren(p ...*actor.PID)    { s.record(&s.stopped, p) }

func (s *fakeSupervisor) record(into *[]string, pids []*actor.PID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pids {
		*into = append(*into, p.Id)
	}
}

// TestStrategyBoundedState checks that the strategy forgets children: a given-up child at
// once, a child whose failures all left the window on the next failure of any child, and
// that protoactor's RestartStatistics never hold more than the failures in the window.
func TestStrategyBoundedState(t *testing.T) {
	clock := newFakeClock()
	var gaveUp []string
	strategy, err := NewStrategy(
		Policy{Backoff: Backoff{Min: time.Millisecond, Max: time.Second}, MaxRestarts: 2, Window: time.Minute},
		func(child *actor.PID, _ Class, _ any) { gaveUp = append(gaveUp, child.Id) },
		slog.New(slog.DiscardHandler),
		WithClock(clock.Now),
		WithRandom(func() float64 { return 0 }),
		WithAfterFunc(func(_ time.Duration, f func()) { f() }),
	)
	if err != nil {
		t.Fatal(err)
	}
	sup := &fakeSupervisor{}
	a, b, c := actor.NewPID("nonhost", "a"), actor.NewPID("nonhost", "b"), actor.NewPID("nonhost", "c")
	rsA, rsB, rsC := actor.NewRestartStatistics(), actor.NewRestartStatistics(), actor.NewRestartStatistics()
	transient := Fail(Transient, errors.New("down"))

	for _, s := range []struct {
		name        string
		advance     time.Duration
		progressed  *actor.PID // made progress before the failure
		child       *actor.PID
		rs          *actor.RestartStatistics
		reason      any
		wantTracked int
	}{
		{"a fails", 0, nil, a, rsA, transient, 1},
		{"b fails", 0, nil, b, rsB, transient, 2},
		{"b is poisoned and forgotten", 0, nil, b, rsB, Fail(Poison, archive.ErrRecordingUnknown), 1},
		{"c fails after a's failure left the window, a without progress since", time.Minute, nil, c, rsC, transient, 2},
		{"c fails again after a made progress", 0, a, c, rsC, transient, 1},
		{"c fails a third time and is given up", 0, nil, c, rsC, transient, 0},
	} {
		clock.Advance(s.advance)
		if s.progressed != nil {
			strategy.Progressed(s.progressed)
		}
		strategy.HandleFailure(nil, sup, s.child, s.rs, s.reason, nil)
		if got := strategy.tracked(); got != s.wantTracked {
			t.Fatalf("%s: tracked children = %d, want %d", s.name, got, s.wantTracked)
		}
	}
	if want := []string{"b", "c"}; !slices.Equal(gaveUp, want) {
		t.Errorf("gave up %v, want %v", gaveUp, want)
	}
	if want := []string{"a", "b", "c", "c"}; !slices.Equal(sup.restarted, want) {
		t.Errorf("restarted %v, want %v", sup.restarted, want)
	}
	if want := []string{"b", "c"}; !slices.Equal(sup.stopped, want) {
		t.Errorf("stopped %v, want %v", sup.stopped, want)
	}
	if rsB.FailureCount() != 0 || rsC.FailureCount() != 0 {
		t.Errorf("restart statistics of given-up children = %d, %d, want 0, 0", rsB.FailureCount(), rsC.FailureCount())
	}

	// A child that fails forever, but never twice within the window and with progress
	// between its failures, is restarted forever with the first delay, its statistics stay
	// at one failure, and it is forgotten once it made progress.
	for i := range 100 {
		clock.Advance(time.Minute)
		strategy.Progressed(a)
		strategy.HandleFailure(nil, sup, a, rsA, transient, nil)
		if got := rsA.FailureCount(); got != 1 {
			t.Fatalf("failure %d: restart statistics hold %d failures, want 1", i, got)
		}
	}
	if got := len(sup.restarted); got != 104 {
		t.Errorf("restarts = %d, want 104", got)
	}
	if len(gaveUp) != 2 {
		t.Errorf("gave up %v, want only b and c", gaveUp)
	}
	clock.Advance(time.Minute)
	strategy.Progressed(a)
	if got := strategy.tracked(); got != 0 {
		t.Errorf("tracked children after a's progress out of the window = %d, want 0", got)
	}

	// Without progress, the same child is given up at its third failure in a row.
	for range 3 {
		clock.Advance(time.Minute)
		strategy.HandleFailure(nil, sup, a, rsA, transient, nil)
	}
	if want := []string{"b", "c", "a"}; !slices.Equal(gaveUp, want) {
		t.Errorf("gave up %v, want %v", gaveUp, want)
	}

	// Forget drops a child's count: spawned again under its name, it starts afresh.
	strategy.HandleFailure(nil, sup, b, rsB, transient, nil)
	strategy.Forget(b)
	if got := strategy.tracked(); got != 0 {
		t.Errorf("tracked children after Forget = %d, want 0", got)
	}
}

func TestNewStrategy(t *testing.T) {
	valid := Policy{Backoff: Backoff{Min: time.Second, Max: time.Minute}, MaxRestarts: 3, Window: time.Minute}
	giveUp := func(*actor.PID, Class, any) {}
	for _, tc := range []struct {
		name    string
		policy  Policy
		giveUp  GiveUp
		opts    []Option
		wantErr error
	}{
		{"valid", valid, giveUp, nil, nil},
		{"invalid policy", Policy{}, giveUp, nil, ErrInvalidPolicy},
		{"no give up", valid, nil, nil, ErrNoGiveUp},
		{"nil clock", valid, giveUp, []Option{WithClock(nil)}, errAny},
		{"nil random", valid, giveUp, []Option{WithRandom(nil)}, errAny},
		{"nil after", valid, giveUp, []Option{WithAfterFunc(nil)}, errAny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewStrategy(tc.policy, tc.giveUp, nil, tc.opts...)
			switch {
			case tc.wantErr == nil && (err != nil || s == nil):
				t.Fatalf("NewStrategy() = %v, %v; want a strategy", s, err)
			case tc.wantErr == errAny && err == nil:
				t.Fatal("NewStrategy() succeeded, want an error")
			case tc.wantErr != nil && tc.wantErr != errAny && !errors.Is(err, tc.wantErr):
				t.Fatalf("NewStrategy() error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// errAny stands for "some error" in TestNewStrategy.
var errAny = errors.New("any error")
