package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// Connection is what one run of the pipeline holds open to Aeron: the media driver and the
// archive control session.
type Connection struct {
	Archive Archive
	Aeron   Subscriber
	// Dead is closed when the driver or the archive connection is lost; Err says why.
	Dead <-chan struct{}
	Err  func() error
	// Close releases both; it is called once, after the pipeline stopped.
	Close func() error
}

// RunOptions configure Run.
type RunOptions struct {
	// Connect opens a Connection; it may block until ctx is done.
	Connect func(ctx context.Context) (*Connection, error)
	// Streams returns the streams with the state their store holds now, but those skip
	// names. It is called at every (re)start, so that a restarted pipeline resumes from
	// the persisted checkpoints; skip names the streams that failed for good earlier in
	// the run, which are not started again, and whose stored state may be what failed
	// them. An error (a corrupt store, lessons 12 and 13) ends Run.
	Streams        func(skip func(name string) bool) ([]StreamConfig, error)
	CreateProducer ProducerFactory
	LastStored     LastStoredFunc
	Deduplication  DeduplicationFunc
	MaxMessageSize MaxMessageSizeFunc
	Terminated     TerminatedFunc
	Publishers     PublishersFunc
	Store          store.Store
	// Board receives the streams' status (nil: none).
	Board StatusBoard
	// Reconnect spaces the attempts to connect, and the reconnections after a connection
	// lost before it had been up for Reconnect.Max.
	Reconnect supervisor.Backoff
	// DrainTimeout bounds the drain at shutdown and before a reconnect.
	DrainTimeout time.Duration
	Logger       *slog.Logger

	// stopWait is each pipeline's Env.stopWait (tests).
	stopWait time.Duration
}

// Run runs the pipeline until ctx is done, then drains it. When the media driver or the
// archive is lost it drains and stops the pipeline, reconnects and starts it again from the
// persisted checkpoints: the same path as a process restart. A connection lost soon after
// it was made (before Reconnect.Max) is retried with back-off like a failed attempt, so
// that a driver or archive that accepts and then drops ferry is not reconnected to at full
// speed. The board hears of every change of the connection: while it is down ferry is
// neither healthy nor ready. Run returns nil after ctx is done, or an error when every
// stream failed (once the connection was lost: every stream failed, none of a transient
// failure, which a reconnect starts again) or the streams cannot be loaded.
func Run(ctx context.Context, o RunOptions) error {
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	report := func(c *messages.Connection) {
		if o.Board != nil {
			o.Board.SetConnection(c)
		}
	}
	down := &messages.Connection{}
	statuses, marks := &statusKeeper{}, &sentMarksKeeper{}
	// failed holds the streams that failed in this process. A reconnect starts again those
	// that failed of a transient failure (their actors kept failing on the archive, the
	// driver or the broker, perhaps as the connection died), from their persisted
	// checkpoints, as it does the streams that were running. It does not start the others:
	// what failed them — a record stored above a failed one (lesson 22), a vanished
	// recording, a corrupt store, a bug — is still true, and a new start would hide it or,
	// after lesson 22, take the failed record's re-send, answered as a duplicate, for
	// published. Their status stays failed; restarting ferry retries them.
	failed := map[string]StreamFailure{}
	started := time.Now()  // not connected since: the first attempt began then
	var wait time.Duration // before the next attempt
	for attempt := 0; ; {
		if wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
		conn, err := o.Connect(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			attempt++
			if down.SinceMs == 0 {
				down.SinceMs = started.UnixMilli()
			}
			down = &messages.Connection{SinceMs: down.SinceMs, FailedAttempts: down.FailedAttempts + 1, Error: err.Error()}
			report(down)
			wait = o.Reconnect.Delay(attempt, rand.Float64())
			log.Warn("cannot connect to the Aeron media driver and archive; retrying", "attempt", attempt, "retry_in", wait, "error", err)
			continue
		}
		up := time.Now()
		report(&messages.Connection{Connected: true, SinceMs: up.UnixMilli()})
		var lostAt time.Time
		lost, ended, err := runOnce(ctx, o, conn, statuses, marks, failed, log, func() {
			// Reported before the drain, which may take DrainTimeout: while it runs ferry is
			// not connected, and the time it takes is not time the connection held.
			lostAt = time.Now()
			down = &messages.Connection{SinceMs: lostAt.UnixMilli(), Error: fmt.Sprint("connection lost: ", conn.Err())}
			report(down)
		})
		if cerr := conn.Close(); cerr != nil {
			log.Debug("closing the Aeron connections", "error", cerr)
		}
		if err != nil || !lost {
			return err
		}
		if !awaitEnded(ctx, ended, log) {
			return nil
		}
		cause := conn.Err()
		if lostAt.Sub(up) >= o.Reconnect.Max {
			attempt, wait = 0, 0 // it held: reconnect at once
		} else {
			attempt++
			wait = o.Reconnect.Delay(attempt, rand.Float64())
		}
		log.Error("lost the Aeron media driver or archive; reconnecting, then resuming each stream (archive mode: from its persisted checkpoint; transport mode: from what is published next, at most once)",
			"error", cause, "was_up", lostAt.Sub(up).Round(time.Millisecond), "retry_in", wait)
	}
}

// runOnce runs one pipeline on conn, of the streams not in failed, and adds those that fail
// to it. lost reports that the connection died; onLost is called as soon as it does, before
// the drain.
//
// ended is closed once the stopped pipeline's work has ended (see Pipeline.Ended); nil if
// none was started.
func runOnce(ctx context.Context, o RunOptions, conn *Connection, statuses *statusKeeper, marks *sentMarksKeeper, failed map[string]StreamFailure, log *slog.Logger, onLost func()) (lost bool, ended <-chan struct{}, err error) {
	forGood := func(name string) bool { f, ok := failed[name]; return ok && f.Class != supervisor.Transient }
	// Not loaded again either: one failed of its damaged checkpoints would end the run,
	// and with it the streams that run.
	streams, err := o.Streams(forGood)
	if err != nil {
		return false, nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		if f := failed[name]; forGood(name) {
			log.Error("stream failed earlier in this run: not started again after the reconnect; restart ferry to retry it", "stream", name, "class", f.Class.String(), "error", f.Err)
		}
	}
	for _, s := range streams {
		if f, ok := failed[s.Def.Name]; ok {
			log.Warn("stream failed earlier in this run of a transient failure: started again after the reconnect, from its persisted checkpoint", "stream", s.Def.Name, "error", f.Err)
			delete(failed, s.Def.Name)
		}
	}
	if len(streams) == 0 && len(failed) > 0 {
		return false, nil, everyStreamFailed(failed)
	}
	configured := len(streams) + len(failed) // failed: those failed for good, not started
	env := &Env{Archive: conn.Archive, Aeron: conn.Aeron, CreateProducer: o.CreateProducer, LastStored: o.LastStored, Deduplication: o.Deduplication, MaxMessageSize: o.MaxMessageSize, Terminated: o.Terminated, Publishers: o.Publishers, Store: o.Store, Logger: log, Board: o.Board, statuses: statuses, sentMarks: marks,
		Payloads: &aeron.BufferPool{Scribble: scribblePayloads}, stopWait: o.stopWait}
	p, err := NewPipeline(env, streams)
	if err != nil {
		return false, nil, err
	}
	if err := p.Start(); err != nil {
		p.Stop()
		return false, p.Ended(), err
	}
	log.Info("ferry running", "streams", len(streams))
	var runErr error
wait:
	for {
		select {
		case <-ctx.Done():
			log.Info("stopping: draining what is in flight", "timeout", o.DrainTimeout)
			break wait
		case <-conn.Dead:
			lost = true
			onLost()
			break wait
		case f := <-p.Failures():
			failed[f.Stream] = f
			if len(failed) == configured {
				select { // decided after the drain: the connection may be dying too
				case <-conn.Dead:
					lost = true
					onLost()
				default:
				}
				break wait
			}
		}
	}
	drained, derr := p.Drain(o.DrainTimeout)
	// A stream can fail during the drain (an acknowledgement arriving then can be lesson
	// 22's): it is as failed as one that failed before, and a reconnect must not start it
	// again.
	takeFailures(p, failed)
	for _, d := range drained {
		if _, ok := failed[d.Stream]; ok {
			log.Error("stream failed: what it had sent and not acknowledged was not waited for; in archive mode the next start re-publishes it from the persisted checkpoint, in transport mode it is lost", "stream", d.Stream)
			continue
		}
		if d.Unacknowledged > 0 {
			log.Error("stream stopped with records not committed: in archive mode (records not acknowledged, or acknowledged after one that was not) the next start re-publishes them from the persisted checkpoint; in transport mode (records not acknowledged) they are lost",
				"stream", d.Stream, "unacknowledged", d.Unacknowledged)
			continue
		}
		log.Info("stream drained", "stream", d.Stream, "unacknowledged", d.Unacknowledged)
	}
	if derr != nil {
		log.Error("drain incomplete: in archive mode the next start re-publishes from the persisted checkpoint; in transport mode what was not acknowledged is lost", "error", derr)
	}
	p.Stop()
	takeFailures(p, failed)
	if configured > 0 && len(failed) == configured {
		if !lost && ctx.Err() == nil {
			select { // every stream failed: perhaps of the connection dying meanwhile
			case <-conn.Dead:
				lost = true
				onLost()
			default:
			}
		}
		if !(lost && anyTransient(failed)) {
			// (A stream that failed of a transient failure as the connection died is
			// started again after the reconnect.)
			runErr = everyStreamFailed(failed)
		}
	}
	return lost && runErr == nil, p.Ended(), runErr
}

// anyTransient reports whether a stream in failed failed of a transient failure.
func anyTransient(failed map[string]StreamFailure) bool {
	for _, f := range failed {
		if f.Class == supervisor.Transient {
			return true
		}
	}
	return false
}

// awaitEndedRemindEvery is how often a reconnect held back by awaitEnded says so again.
const awaitEndedRemindEvery = time.Minute

// awaitEnded holds a reconnect back until the stopped pipeline's work has ended (a nil
// ended: none), or ctx is done (false). A checkpoint store write Pipeline.Stop stopped
// waiting for (a hung disk) may still land: a pipeline started before it did would load the
// checkpoints it then overwrites, and its own saves, from the older positions, would be
// refused as regressions and fail its streams.
func awaitEnded(ctx context.Context, ended <-chan struct{}, log *slog.Logger) bool {
	if ended == nil {
		return true
	}
	select {
	case <-ended:
		return true
	default:
	}
	since := time.Now()
	remind := time.NewTicker(awaitEndedRemindEvery)
	defer remind.Stop()
	const msg = "not reconnecting yet: the stopped pipeline's work (a checkpoint store write?) has not ended, and the store must not be read before it lands; check the disk the checkpoint file is on"
	log.Error(msg)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-ended:
			log.Info("the stopped pipeline's work ended; reconnecting", "waited", time.Since(since).Round(time.Millisecond))
			return true
		case <-remind.C:
			log.Error(msg, "waited", time.Since(since).Round(time.Second))
		}
	}
}

// takeFailures adds the streams the pipeline reported failed, and not yet taken, to failed.
func takeFailures(p *Pipeline, failed map[string]StreamFailure) {
	for {
		select {
		case f := <-p.Failures():
			failed[f.Stream] = f
		default:
			return
		}
	}
}

// everyStreamFailed is Run's error once no stream is left running.
func everyStreamFailed(failed map[string]StreamFailure) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(failed)) {
		errs = append(errs, fmt.Errorf("stream %s: %w", name, failed[name].Err))
	}
	return fmt.Errorf("every stream failed: %w", errors.Join(errs...))
}
