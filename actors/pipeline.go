package actors

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/supervisor"
)

// StreamFailure is a stream that stopped, and why.
type StreamFailure struct {
	Stream string
	// Class is what kind of failure stopped the stream: Transient if its actors kept failing
	// on what may come back (the archive, the driver, the broker), Poison or Corrupt if on
	// what a new start finds again (a vanished recording, lesson 22, a corrupt store), Bug
	// if on ferry's own error.
	Class supervisor.Class
	Err   error
}

// Pipeline is ferry's actor system: one StreamSupervisor per configured stream, spawned
// from the system's root. Start, Drain and Stop must be called from one goroutine.
type Pipeline struct {
	env      *Env
	streams  []*StreamConfig
	system   *actor.ActorSystem
	pids     []*actor.PID
	failures chan StreamFailure
	// reported are the streams whose failure went to failures, and its class: one each,
	// so that a stream reporting twice (its supervisor failing while failing) cannot take
	// another's place — but for a failure for good after a transient one, which replaces
	// it (room for two each).
	reportedMu sync.Mutex
	reported   map[string]supervisor.Class
}

// NewPipeline checks the streams' settings and builds the actor system; nothing runs until
// Start.
func NewPipeline(env *Env, streams []StreamConfig) (*Pipeline, error) {
	if env.Aeron == nil || env.CreateProducer == nil {
		return nil, errors.New("actors: Env needs an Aeron client and a producer factory")
	}
	if env.Logger == nil {
		env.Logger = slog.Default()
	}
	env.bg = &tasks{}
	p := &Pipeline{env: env, failures: make(chan StreamFailure, 2*len(streams))}
	for i := range streams {
		s := streams[i]
		if err := s.Validate(); err != nil {
			return nil, err
		}
		if !s.Transport && (env.Archive == nil || env.Store == nil) {
			return nil, fmt.Errorf("actors: stream %s is in archive mode: Env needs an archive and a store", s.Def.Name)
		}
		p.streams = append(p.streams, &s)
	}
	// protoactor logs every actor start and stop at info: keep only its warnings.
	quiet := env.Logger.Handler()
	p.system = actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(levelFilter{quiet, slog.LevelWarn}).With("lib", "protoactor")
	}))
	return p, nil
}

// Start spawns every stream's supervisor.
func (p *Pipeline) Start() error {
	for _, s := range p.streams {
		name := "stream-" + s.Def.Name
		self := actor.NewPID(p.system.Address(), name)
		props, err := streamProps(p.env, s, self, p.system, p.report)
		if err != nil {
			return err
		}
		pid, err := p.system.Root.SpawnNamed(props, name)
		if err != nil {
			return fmt.Errorf("actors: start stream %s: %w", s.Def.Name, err)
		}
		p.pids = append(p.pids, pid)
	}
	return nil
}

// Failures delivers each stream that failed, once, and again if a failure for good
// followed a transient one: the later failure of a stream replaces the earlier.
func (p *Pipeline) Failures() <-chan StreamFailure { return p.failures }

// report hands stream's failure to Failures, the first time only, or a failure for good
// after a transient one; it never blocks (the channel holds two failures per stream).
func (p *Pipeline) report(stream string, class supervisor.Class, err error) {
	p.reportedMu.Lock()
	defer p.reportedMu.Unlock()
	if was, ok := p.reported[stream]; ok && (was != supervisor.Transient || class == supervisor.Transient) {
		return
	}
	if p.reported == nil {
		p.reported = map[string]supervisor.Class{}
	}
	p.reported[stream] = class
	select {
	case p.failures <- StreamFailure{Stream: stream, Class: class, Err: err}:
	default: // a stream not among p.streams
		p.env.Logger.Error("bug: a stream's failure has no room to be reported", "stream", stream, "error", err)
	}
}

// Drain asks every stream to stop reading and waits, up to timeout in all, until what was
// sent is acknowledged and persisted. It returns each stream's answer; a stream that did
// not answer in time is reported in the error.
func (p *Pipeline) Drain(timeout time.Duration) ([]*messages.Drained, error) {
	// The streams stop waiting for acknowledgements at 80% of the timeout, leaving the rest
	// to persist what was acknowledged.
	deadline := time.Now().Add(timeout * 4 / 5).UnixMilli()
	futures := make([]*actor.Future, len(p.pids))
	for i, pid := range p.pids {
		futures[i] = p.system.Root.RequestFuture(pid, &messages.Drain{DeadlineMs: deadline}, timeout)
	}
	var out []*messages.Drained
	var errs []error
	for i, f := range futures {
		res, err := f.Result()
		if d, ok := res.(*messages.Drained); ok && err == nil {
			out = append(out, d)
			continue
		}
		if errors.Is(err, actor.ErrDeadLetter) {
			errs = append(errs, fmt.Errorf("stream %s had stopped (its supervisor failed twice, logged above): nothing of it was drained", p.streams[i].Def.Name))
			continue
		}
		errs = append(errs, fmt.Errorf("stream %s did not drain within %s: %v", p.streams[i].Def.Name, timeout, err))
	}
	return out, errors.Join(errs...)
}

// stopWait bounds Stop's wait for the goroutines the actors started: flushes and archive
// calls end within their own timeouts, but a store write on a hung disk may never return.
const stopWait = 30 * time.Second

// Stop stops every actor and waits for the goroutines they started (producer flushes,
// replay closes, store writes), at most stopWait: a store write that does not return is
// left behind, said at error level, rather than holding up the exit (Run's reconnect waits
// for it: Ended).
func (p *Pipeline) Stop() {
	for _, pid := range p.pids {
		_ = p.system.Root.StopFuture(pid).Wait()
	}
	p.system.Shutdown()
	wait := cmp.Or(p.env.stopWait, stopWait)
	if !p.env.bg.CloseWithin(wait) {
		p.env.Logger.Error("stopping: work the actors started has not ended after " + wait.String() + " (a checkpoint store write on a hung disk?); an exit does not wait for it, a reconnect does")
	}
}

// Ended, after Stop, is closed once the goroutines the actors started have ended: a store
// write Stop did not wait for may land until then. Before Stop it is nil.
func (p *Pipeline) Ended() <-chan struct{} { return p.env.bg.done() }
