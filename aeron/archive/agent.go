package archive

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive/internal/codec"
	"github.com/ferry-bridge/ferry/aeron/internal/reentry"
)

// errAbandoned answers a call its caller gave up on before it was sent (nobody reads it but
// the goroutine that would have stopped what it started).
var errAbandoned = errors.New("archive: the caller gave up before the request was sent")

// A call is one request and the state of its answer. It belongs to the agent once queued.
type (
	callKind int
	call     struct {
		what      string
		kind      callKind
		corr      int64
		request   codec.Request
		wantCount int // listing: how many descriptors were asked for
		// sendBy bounds the offers of the request, from the first; deadline, the wait for
		// its answer, from when it went out (for a listing, from its last descriptor).
		sendBy, deadline time.Time
		reply            chan result // buffered, length 1: the agent never blocks on a caller
		// abandoned is set by the caller that gave up: a request not sent yet is dropped.
		abandoned atomic.Bool
		// undo, if set, reverses what a successful answer started (the relevant id's
		// replay or recording subscription) when the caller gave up before it came.
		undo func(relevantID int64)
		// probe: the agent's own liveness probe, which nobody waits for, nor remembers
		// (one a message timeout on a quiet session would crowd out the replays accepted).
		probe bool

		descriptors []RecordingDescriptor
	}
	result struct {
		relevantID  int64
		descriptors []RecordingDescriptor
		err         error
	}
)

const (
	// single: one ControlResponse answers it.
	single callKind = iota
	// listing: RecordingDescriptors answer it, ended by the count asked for or by a
	// RECORDING_UNKNOWN response where the catalog ran out.
	listing
)

// Agent pacing: while calls are outstanding it polls every millisecond; when idle it still
// polls the response stream often enough to drain the archive's pings (one a second).
const (
	busyInterval  = time.Millisecond
	idleInterval  = 5 * time.Millisecond
	pollFragments = 64
	// acceptedMemory bounds how many answered requests the agent remembers, to name the
	// request when the archive reports an error for one it had accepted (a failed replay).
	acceptedMemory = 256
)

// agent is the session's single owner of the request publication and the response
// subscription. Not safe for concurrent use: only its run goroutine touches it.
type agent struct {
	c        *Client
	asm      *aeron.FragmentAssembler
	outbox   []*call          // queued, not yet offered (in order)
	waiting  map[int64]*call  // offered, not yet answered, by correlation id
	accepted map[int64]string // answered OK, by correlation id: their description
	// acceptedOrder holds accepted's correlation ids, oldest first from acceptedNext once
	// full: the oldest is forgotten first.
	acceptedOrder [acceptedMemory]int64
	acceptedNext  int
	scratch       []byte
	lastHeard     time.Time
	dropped       uint64 // signals dropped since the last one delivered
	fatal         error
}

func newAgent(c *Client) *agent {
	a := &agent{c: c, waiting: map[int64]*call{}, accepted: map[int64]string{}, lastHeard: time.Now()}
	a.asm = aeron.NewFragmentAssembler(maxResponseLength, a.onMessage)
	return a
}

// maxResponseLength bounds a reassembled archive message: a descriptor holds three
// channel strings of at most 4095 bytes each and a few dozen bytes of fields.
const maxResponseLength = 64 << 10

func (a *agent) run() {
	c := a.c
	timer := time.NewTimer(idleInterval)
	defer timer.Stop()
	for a.fatal == nil {
		select {
		case cl := <-c.requests:
			a.outbox = append(a.outbox, cl)
		case <-c.stopping:
			a.stop(ErrClosed)
			return
		case <-c.aeron.Dead():
			a.fatal = fmt.Errorf("%w: the media driver connection ended: %w", ErrArchiveUnavailable, c.aeron.Err())
			continue
		case <-timer.C:
		}
		now := time.Now()
		a.send(now)
		a.poll()
		a.checkTimeouts(now)
		if len(a.outbox)+len(a.waiting) > 0 {
			timer.Reset(busyInterval)
		} else {
			timer.Reset(idleInterval)
		}
	}
	a.stop(a.fatal)
}

// send offers queued requests in order. A back-pressured or not-yet-connected publication
// keeps the rest queued for the next turn, so the response stream is still drained.
func (a *agent) send(now time.Time) {
	for len(a.outbox) > 0 {
		cl := a.outbox[0]
		if cl.abandoned.Load() { // before any wait: the requests behind it need not wait for it
			a.outbox = a.outbox[1:]
			cl.reply <- result{err: errAbandoned}
			continue
		}
		// The archive runs one listing per session at a time (a second one is refused
		// with ACTIVE_LISTING): a listing waits, and the requests behind it keep their order.
		if cl.kind == listing && a.listing() {
			return
		}
		if cl.sendBy.IsZero() {
			cl.sendBy = now.Add(a.c.opts.MessageTimeout)
		}
		err := a.offer(cl.request)
		if retryable(err) {
			if now.After(cl.sendBy) {
				a.fatal = fmt.Errorf("%w: could not send %s within %s: %w", ErrArchiveUnavailable, cl.what, a.c.opts.MessageTimeout, err)
			}
			return
		}
		a.outbox = a.outbox[1:]
		if err != nil {
			cl.reply <- result{err: fmt.Errorf("archive: %s: %w", cl.what, err)}
			continue
		}
		// The answer is due a message timeout after the request went out, not after it
		// was queued: a call may have waited behind a listing.
		cl.deadline = now.Add(a.c.opts.MessageTimeout)
		a.waiting[cl.corr] = cl
	}
}

func (a *agent) offer(req codec.Request) error {
	b, err := req.AppendTo(a.scratch[:0])
	if err != nil {
		return err
	}
	a.scratch = b
	_, err = a.c.pub.Offer(b)
	return err
}

// listing reports whether a listing is waiting for its descriptors.
func (a *agent) listing() bool {
	for _, cl := range a.waiting {
		if cl.kind == listing {
			return true
		}
	}
	return false
}

// retryable reports the offer results that only mean "not now".
func retryable(err error) bool {
	return errors.Is(err, aeron.ErrBackPressured) || errors.Is(err, aeron.ErrNotConnected) || errors.Is(err, aeron.ErrAdminAction)
}

// poll drains the response stream. It runs every turn whether or not a call is waiting:
// the archive drops a session whose responses it cannot send.
func (a *agent) poll() {
	for a.fatal == nil {
		n, err := a.c.sub.Poll(a.asm.OnFragment, pollFragments)
		if err != nil {
			a.fatal = fmt.Errorf("%w: reading its responses: %w", ErrArchiveUnavailable, err)
		}
		if n < pollFragments {
			return
		}
	}
}

// checkTimeouts ends the session if a call went unanswered for a message timeout, and asks
// the archive something once it has been silent that long with no call waiting (probe):
// a quiet archive is not a gone one. It pings an idle session (every second by default;
// aeron.archive.session.liveness.check.interval, since 1.47.0, changes that, and a new
// session hears none for its first second), so silence alone says nothing against a
// message timeout shorter than its interval; an unanswered question does.
func (a *agent) checkTimeouts(now time.Time) {
	if a.c.responseLost.Load() {
		a.fatal = fmt.Errorf("%w: its response stream went away", ErrArchiveUnavailable)
		return
	}
	if now.Sub(a.lastHeard) > a.c.opts.MessageTimeout && len(a.outbox)+len(a.waiting) == 0 {
		a.probe()
	}
	for _, cl := range a.waiting {
		if now.After(cl.deadline) {
			a.fatal = fmt.Errorf("%w: no answer to %s within %s", ErrArchiveUnavailable, cl.what, a.c.opts.MessageTimeout)
			return
		}
	}
}

// onMessage handles one whole message from the archive. Messages of other sessions cannot
// reach this subscription (its channel carries this session's id) but are ignored anyway.
func (a *agent) onMessage(b []byte, _ aeron.Header) {
	m, err := codec.Decode(b)
	if errors.Is(err, codec.ErrUnknownTemplate) {
		return // a newer archive's message this client has no use for
	}
	if err != nil {
		a.fatal = fmt.Errorf("%w: undecodable response: %w", ErrArchiveUnavailable, err)
		return
	}
	a.lastHeard = time.Now()
	switch m := m.(type) {
	case codec.ControlResponse:
		if m.ControlSessionID == a.c.controlSessionID && !m.IsPing() {
			a.onControlResponse(m)
		}
	case codec.RecordingDescriptor:
		if m.ControlSessionID == a.c.controlSessionID {
			a.onDescriptor(m)
		}
	case codec.RecordingSignalEvent:
		if m.ControlSessionID == a.c.controlSessionID {
			a.onSignal(m)
		}
	}
}

func (a *agent) onControlResponse(m codec.ControlResponse) {
	cl := a.waiting[m.CorrelationID]
	if cl == nil {
		// Duplicate connect OKs (the archive repeats them until its first request) are
		// harmless; an error for a request already answered (a replay that failed after
		// it was accepted) is not.
		if m.Code == codec.ResponseCodeError {
			what, ok := a.accepted[m.CorrelationID]
			if !ok {
				what = fmt.Sprintf("request %d", m.CorrelationID)
			}
			a.onError(&Error{Request: what + " (after the archive had accepted it)", Code: m.RelevantID, Message: m.ErrorMessage})
		}
		return
	}
	delete(a.waiting, m.CorrelationID)
	switch {
	case m.Code == codec.ResponseCodeOK && cl.probe:
	case m.Code == codec.ResponseCodeOK:
		a.remember(m.CorrelationID, cl.what)
		cl.reply <- result{relevantID: m.RelevantID, descriptors: cl.descriptors}
	case m.Code == codec.ResponseCodeRecordingUnknown && cl.kind == listing:
		// The catalog ran out before the count asked for: the listing is complete.
		cl.reply <- result{descriptors: cl.descriptors}
	case m.Code == codec.ResponseCodeRecordingUnknown:
		cl.reply <- result{err: fmt.Errorf("%w: %s: %s", ErrRecordingUnknown, cl.what, m.ErrorMessage)}
	default:
		cl.reply <- result{err: &Error{Request: cl.what, Code: m.RelevantID, Message: m.ErrorMessage}}
	}
}

func (a *agent) onDescriptor(m codec.RecordingDescriptor) {
	cl := a.waiting[m.CorrelationID]
	if cl == nil || cl.kind != listing {
		return
	}
	cl.descriptors = append(cl.descriptors, descriptorFrom(m))
	// A listing that makes progress is alive: its next descriptor is due a message
	// timeout after this one (as the Java client's descriptor poller does).
	cl.deadline = time.Now().Add(a.c.opts.MessageTimeout)
	if len(cl.descriptors) == cl.wantCount {
		// Exactly the count asked for ends a listing with no terminating message.
		delete(a.waiting, m.CorrelationID)
		cl.reply <- result{descriptors: cl.descriptors}
	}
}

// onSignal delivers a recording signal without ever blocking the agent: if the consumer
// is behind, the signal is dropped and counted in the next one delivered.
func (a *agent) onSignal(m codec.RecordingSignalEvent) {
	s := Signal{Kind: m.Signal, RecordingID: m.RecordingID, SubscriptionID: m.SubscriptionID, Position: m.Position, Dropped: a.dropped}
	select {
	case a.c.signals <- s:
		a.dropped = 0
	default:
		a.dropped++
	}
}

// probe queues a request whose only use is its answer (the archive's id): unanswered within
// a message timeout, the session ends as for any call (checkTimeouts). Nobody waits for
// its reply.
func (a *agent) probe() {
	corr := a.c.correlationID()
	a.outbox = append(a.outbox, &call{what: fmt.Sprintf("a liveness probe (archive id, after %s without a message)", a.c.opts.MessageTimeout), kind: single, corr: corr, probe: true,
		request: &codec.ArchiveIDRequest{ControlSessionID: a.c.controlSessionID, CorrelationID: corr}, reply: make(chan result, 1)})
}

// onError passes an error that belongs to no call to the user's OnError, marked as run by
// the agent so that a call back into the client from it is refused (Client.reentrant).
func (a *agent) onError(err error) {
	a.c.inOnError.Add(1)
	defer a.c.inOnError.Add(-1)
	reentry.Run(func() { a.c.opts.OnError(err) })
}

// reentrant reports whether the caller is OnError run by this client's agent (or a
// handler of another client while this agent runs OnError; package reentry says why):
// a call that waits for the agent must then return ErrReentrant. Other calls pay one
// atomic load.
func (c *Client) reentrant() bool {
	return c.inOnError.Load() > 0 && reentry.OnStack()
}

// remember keeps what request corr was, answered OK, for an error the archive may report of
// it later; the acceptedMemory newest are kept, so that a long run's many small calls do not
// crowd out a replay accepted long ago.
func (a *agent) remember(corr int64, what string) {
	if len(a.accepted) >= acceptedMemory {
		delete(a.accepted, a.acceptedOrder[a.acceptedNext])
	}
	a.accepted[corr] = what
	a.acceptedOrder[a.acceptedNext] = corr
	a.acceptedNext = (a.acceptedNext + 1) % acceptedMemory
}

// stop fails every call with cause, tells the archive the session ends (when closing
// normally), and marks the client dead.
func (a *agent) stop(cause error) {
	for _, cl := range a.outbox {
		cl.reply <- result{err: cause}
	}
	for _, cl := range a.waiting {
		cl.reply <- result{err: cause}
	}
	a.outbox, a.waiting = nil, nil
	if errors.Is(cause, ErrClosed) {
		// Best effort: without it the archive ends the session when it notices the
		// response publication disconnect.
		_ = a.offer(&codec.CloseSessionRequest{ControlSessionID: a.c.controlSessionID})
	} else {
		a.onError(cause)
	}
	a.c.err.Store(&cause)
	close(a.c.dead)
	close(a.c.signals)
	close(a.c.done)
}

// handshake opens the control session (aeron-protocol.md §10.4): wait until the request
// publication is connected (an archive listens), send the connect request, and wait for
// the OK that carries the control session id. Nothing else is sent before it: the
// archive drops requests that arrive before it has authenticated the session. It runs on
// the caller's goroutine, before the agent starts.
func (c *Client) handshake(ctx context.Context, responseChannel string) error {
	unavailable := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrArchiveUnavailable}, args...)...)
	}
	for !c.pub.IsConnected() {
		if err := pause(ctx); err != nil {
			return unavailable("no archive listens on %s stream %d (%w)", c.pub.Channel(), c.pub.StreamID(), err)
		}
	}
	corr := c.correlationID()
	connect := &codec.AuthConnectRequest{CorrelationID: corr, ResponseStreamID: c.opts.ResponseStreamID,
		Version: codec.ProtocolSemanticVersion, ResponseChannel: responseChannel, Credentials: c.opts.Credentials}
	if err := c.offerUntil(ctx, connect); err != nil {
		return unavailable("send the connect request: %w", err)
	}
	var answer error
	answered := false
	asm := aeron.NewFragmentAssembler(maxResponseLength, func(b []byte, _ aeron.Header) {
		m, err := codec.Decode(b)
		if answered || errors.Is(err, codec.ErrUnknownTemplate) {
			return
		}
		if err != nil {
			answered, answer = true, unavailable("undecodable response: %w", err)
			return
		}
		switch m := m.(type) {
		case codec.ControlResponse:
			if m.CorrelationID != corr {
				return
			}
			answered = true
			if m.Code != codec.ResponseCodeOK {
				answer = &Error{Request: "connect", Code: m.RelevantID, Message: m.ErrorMessage}
				return
			}
			c.controlSessionID = m.ControlSessionID
		case codec.Challenge:
			if m.CorrelationID != corr {
				return
			}
			if len(c.opts.Credentials) == 0 {
				answered, answer = true, ErrAuthenticationRequired
				return
			}
			if err := c.offerUntil(ctx, &codec.ChallengeResponse{ControlSessionID: m.ControlSessionID, CorrelationID: corr, Credentials: c.opts.Credentials}); err != nil {
				answered, answer = true, unavailable("answer the challenge: %w", err)
			}
		}
	})
	for !answered {
		n, err := c.sub.Poll(asm.OnFragment, pollFragments)
		if err != nil {
			return unavailable("reading its responses: %w", err)
		}
		if n == 0 {
			if err := pause(ctx); err != nil {
				return unavailable("no answer to the connect request (%w)", err)
			}
		}
	}
	return answer
}

// offerUntil offers req until it is accepted, a non-retryable error, or ctx ends.
func (c *Client) offerUntil(ctx context.Context, req codec.Request) error {
	b, err := req.AppendTo(nil)
	if err != nil {
		return err
	}
	for {
		_, err := c.pub.Offer(b)
		if !retryable(err) {
			return err
		}
		if err := pause(ctx); err != nil {
			return err
		}
	}
}

// pause waits a millisecond, or returns ctx's error.
func pause(ctx context.Context) error {
	t := time.NewTimer(busyInterval)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
