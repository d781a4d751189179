package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// GiveUp is told when the strategy stops a child for good: the stream is failed and must
// say why (class and reason); the process and other streams keep running. It is called on
// the parent's goroutine, after the child was told to stop, and must not block.
type GiveUp func(child *actor.PID, class Class, reason any)

// Option changes a [Strategy] built by [NewStrategy]; tests use them to make time and
// randomness deterministic.
type Option func(*Strategy)

// WithClock makes the strategy read the time from now (default time.Now). Only the restart
// window uses it.
func WithClock(now func() time.Time) Option {
	return func(s *Strategy) { s.now = now }
}

// WithRandom makes the strategy draw backoff jitter from r, which must return numbers in
// [0, 1) (default math/rand/v2.Float64).
func WithRandom(r func() float64) Option {
	return func(s *Strategy) { s.random = r }
}

// WithAfterFunc makes the strategy schedule a delayed restart with after, which must call
// f once, d from now, on any goroutine, without blocking its caller (default: time.AfterFunc).
// Tests may run f at once.
func WithAfterFunc(after func(d time.Duration, f func())) Option {
	return func(s *Strategy) { s.after = after }
}

// WithNeverRestarted names the children that are never restarted, whatever the class of
// their failure: actors whose state a new incarnation could not rebuild. A failure of one
// stops it and calls [GiveUp] with its own class and reason (a restart it then refused
// would report only the refusal).
func WithNeverRestarted(never func(child *actor.PID) bool) Option {
	return func(s *Strategy) { s.never = never }
}

// Strategy implements actor.SupervisorStrategy for one parent (one-for-one): each failing
// child is handled alone, by the class of its failure (see [Class]):
//
//   - Poison and Corrupt, or any failure of a child never restarted
//     ([WithNeverRestarted]): the child is stopped and [GiveUp] is called.
//   - A [Restart] is no fault: it counts only in a row without progress (below), and the
//     child restarts after the shortest back-off.
//   - Transient and Bug: the failure is counted; if more than [Policy.MaxRestarts]
//     failures fall within [Policy.Window], or more than MaxRestarts in a row without the
//     child making progress in between (see [Strategy.Progressed]), however far apart,
//     or if it is a Bug and an earlier Bug still counts (within the window, or with no
//     progress since: a bug is restarted once), the child is stopped and GiveUp is
//     called; otherwise the child is restarted after [Backoff.Delay] of the number of
//     failures in the window. Its mailbox stays suspended until then, so it processes
//     nothing.
//
// The second bound is for a child that takes long to fail: one whose every attempt waits
// out a timeout before failing (an image that never joins, a request the peer never
// answers) has too few failures in any window to fill it, and would otherwise restart for
// ever without a word beyond its warnings.
//
// Every decision is logged (error level, but warn for a Transient restart and info for a
// [Restart]; a Bug with the stack of its panic when the child's producer is wrapped by
// [KeepStack]) and published as an *actor.SupervisorEvent on the actor system's EventStream.
//
// A pending restart is not cancelled: if the child was stopped meanwhile, the restart goes
// to protoactor's dead letters.
//
// Strategy is safe for concurrent use: protoactor calls HandleFailure on the parent's
// goroutine while delayed restarts fire on timer goroutines, and a Strategy shared by
// several parents keeps its failure counts per child PID.
type Strategy struct {
	policy Policy
	giveUp GiveUp
	never  func(child *actor.PID) bool // nil: every child may be restarted
	logger *slog.Logger
	now    func() time.Time
	random func() float64
	after  func(d time.Duration, f func())

	mu sync.Mutex
	// failures holds, per child (keyed by [pidKey]), what counts of its failures. Bounded:
	// at most MaxRestarts+1 times per child, and only children that failed within the
	// window or failed without progress since (others are swept on every failure; a
	// child's entry is removed when it is given up, makes progress or is forgotten).
	failures map[string]*failures
}

// failures is what a [Strategy] counts of one child's failures.
type failures struct {
	// times are the failures within the window, oldest first.
	times []time.Time
	// inARow counts the failures since the child last made progress.
	inARow int
	// lastBug is when the child last failed of a bug (zero: never), and bugSinceProgress
	// whether it has made no progress since: a bug is restarted once (from the checkpoint),
	// and a second one while the first still counts gives up.
	lastBug          time.Time
	bugSinceProgress bool
}

// stale reports whether nothing of f counts any more at now.
func (f *failures) stale(s *Strategy, now time.Time) bool {
	return f.inARow == 0 && (len(f.times) == 0 || !s.within(now, f.times[len(f.times)-1]))
}

var _ actor.SupervisorStrategy = (*Strategy)(nil)

// NewStrategy returns a Strategy applying p, calling giveUp when it stops a child for good
// and logging to logger (slog.Default() if nil). It fails with [ErrInvalidPolicy] if
// p.Validate fails and with [ErrNoGiveUp] if giveUp is nil.
func NewStrategy(p Policy, giveUp GiveUp, logger *slog.Logger, opts ...Option) (*Strategy, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if giveUp == nil {
		return nil, ErrNoGiveUp
	}
	if logger == nil {
		logger = slog.Default()
	}
	s := &Strategy{
		policy:   p,
		giveUp:   giveUp,
		logger:   logger,
		now:      time.Now,
		random:   rand.Float64,
		after:    func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		failures: make(map[string]*failures),
	}
	for _, opt := range opts {
		opt(s)
	}
	if s.now == nil || s.random == nil || s.after == nil {
		return nil, errors.New("supervisor: nil clock, random or after function")
	}
	return s, nil
}

// HandleFailure decides what happens to child, which failed with reason while handling
// message. It implements actor.SupervisorStrategy; protoactor calls it on sup's goroutine.
// rs is kept in step with the strategy's own count of failures within the window (it is
// reset when the child is given up), so it never grows without bound.
func (s *Strategy) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	rs *actor.RestartStatistics, reason any, _ any,
) {
	class := Classify(reason)
	attrs := []any{
		slog.String("child", pidKey(child)),
		slog.String("class", class.String()),
		slog.Any("reason", reason),
	}
	if stack := StackOf(reason); stack != nil && class == Bug {
		attrs = append(attrs, slog.String("stack", string(stack)))
	}

	if class == Poison || class == Corrupt || s.never != nil && s.never(child) {
		s.forget(child, rs)
		s.logger.Error("supervisor: stopping child for good", attrs...)
		s.stop(system, sup, child, class, reason)
		return
	}

	restart := expected(reason)
	attempt, inARow, bugAgain := s.recordFailure(child, class, restart)
	if attempt > s.policy.MaxRestarts || inARow > s.policy.MaxRestarts || bugAgain {
		s.forget(child, rs)
		var msg string
		switch {
		case attempt > s.policy.MaxRestarts:
			msg = "supervisor: stopping child for good: too many restarts"
		case inARow > s.policy.MaxRestarts:
			msg = "supervisor: stopping child for good: too many restarts in a row without progress"
		default:
			msg = "supervisor: stopping child for good: a bug again after its restart"
		}
		s.logger.Error(msg, append(attrs,
			slog.Int("failures", attempt),
			slog.Int("failures_without_progress", inARow),
			slog.Int("max_restarts", s.policy.MaxRestarts),
			slog.Duration("window", s.policy.Window))...)
		s.stop(system, sup, child, class, reason)
		return
	}
	if rs != nil {
		rs.Reset()
		for range attempt {
			rs.Fail()
		}
	}

	delay := s.policy.Backoff.Delay(attempt, s.random())
	level := slog.LevelWarn
	switch {
	case class == Bug:
		level = slog.LevelError
	case restart:
		delay, level = s.policy.Backoff.Delay(1, s.random()), slog.LevelInfo
	}
	s.logger.Log(context.Background(), level, "supervisor: restarting child", append(attrs,
		slog.Int("attempt", attempt),
		slog.Int("failures_without_progress", inARow),
		slog.Duration("delay", delay))...)
	publish(system, child, reason, actor.RestartDirective)
	s.after(delay, func() { sup.RestartChildren(child) })
}

// stop stops child, reports the directive and tells giveUp.
func (s *Strategy) stop(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID, class Class, reason any) {
	sup.StopChildren(child)
	publish(system, child, reason, actor.StopDirective)
	s.giveUp(child, class, reason)
}

// recordFailure counts a failure of child now, of class, and returns how many of its
// failures fall within the window and how many came in a row without progress, this one
// included in both (a restart, [Restart], in the second only), and whether it is a bug
// following another that still counts (within the window, or with no progress since). It
// sweeps other children of which nothing counts any more.
func (s *Strategy) recordFailure(child *actor.PID, class Class, restart bool) (inWindow, inARow int, bugAgain bool) {
	now := s.now()
	key := pidKey(child)

	s.mu.Lock()
	defer s.mu.Unlock()
	for k, f := range s.failures {
		if k != key && f.stale(s, now) {
			delete(s.failures, k)
		}
	}
	f := s.failures[key]
	if f == nil {
		f = &failures{}
		s.failures[key] = f
	}
	kept := f.times[:0]
	for _, t := range f.times {
		if s.within(now, t) {
			kept = append(kept, t)
		}
	}
	f.times = kept
	if !restart {
		f.times = append(f.times, now)
	}
	f.inARow++
	if class == Bug {
		bugAgain = f.bugSinceProgress || !f.lastBug.IsZero() && s.within(now, f.lastBug)
		f.lastBug, f.bugSinceProgress = now, true
	}
	return len(f.times), f.inARow, bugAgain
}

// Progressed tells the strategy that children made progress (for ferry: their recording's
// committed position moved beyond any it reached before, or it has nothing to move on to):
// their failures so far no longer count as in a row. Failures within the window still count. Safe to call from any
// goroutine.
func (s *Strategy) Progressed(children ...*actor.PID) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, child := range children {
		if f := s.failures[pidKey(child)]; f != nil {
			f.inARow, f.bugSinceProgress = 0, false
			if f.stale(s, now) {
				delete(s.failures, pidKey(child))
			}
		}
	}
}

// Forget drops everything the strategy counts of children that were stopped for good by
// their parent (a child spawned again under the same name starts afresh). Safe to call
// from any goroutine.
func (s *Strategy) Forget(children ...*actor.PID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, child := range children {
		delete(s.failures, pidKey(child))
	}
}

// within reports whether a failure at t still counts at now.
func (s *Strategy) within(now, t time.Time) bool {
	return now.Sub(t) < s.policy.Window
}

// forget drops everything known about child's failures.
func (s *Strategy) forget(child *actor.PID, rs *actor.RestartStatistics) {
	s.Forget(child)
	if rs != nil {
		rs.Reset()
	}
}

// pidKey names a child in the failure map and in logs: "address/id", unique within an
// actor system and cheaper and steadier than the PID's protobuf text.
func pidKey(p *actor.PID) string {
	return p.Address + "/" + p.Id
}

// tracked returns how many children the strategy holds failure times for (for tests).
func (s *Strategy) tracked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.failures)
}

// publish announces a directive on the system's EventStream, as protoactor's own
// strategies do.
func publish(system *actor.ActorSystem, child *actor.PID, reason any, d actor.Directive) {
	if system == nil || system.EventStream == nil {
		return
	}
	system.EventStream.Publish(&actor.SupervisorEvent{Child: child, Reason: reason, Directive: d})
}
