package aeron

import (
	"errors"
	"fmt"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/broadcast"
	"github.com/ferry-bridge/ferry/aeron/internal/command"
	"github.com/ferry-bridge/ferry/aeron/internal/counters"
	"github.com/ferry-bridge/ferry/aeron/internal/logbuffer"
)

// Requests the conductor serves. Each is handled on the conductor goroutine.
type (
	request interface{ isRequest() }

	// awaitable is a request the driver answers; its answer goes to the caller's reply
	// channel (buffered, length 1, so the conductor never blocks on a caller).
	awaitable interface {
		request
		setReply(chan answer)
		reply() chan answer
	}
	// replyTo is the caller's reply channel a command carries.
	replyTo struct{ ch chan answer }
	answer  struct {
		value any
		err   error
	}

	addPublication struct {
		replyTo
		channel  string
		streamID int32
	}
	addSubscription struct {
		replyTo
		channel  string
		streamID int32
		handlers ImageHandlers
	}
	// abandon: the caller stopped waiting; release the resource if it still arrives.
	abandon struct{ reply chan answer }
	// release: a publication or subscription closed by its user.
	release struct {
		resource any // *ExclusivePublication or *Subscription
		done     chan struct{}
	}
)

func (*addPublication) isRequest()        {}
func (*addSubscription) isRequest()       {}
func (*abandon) isRequest()               {}
func (*release) isRequest()               {}
func (r *replyTo) setReply(c chan answer) { r.ch = c }
func (r *replyTo) reply() chan answer     { return r.ch }

// awaiting is a command sent to the driver and not answered yet. abandoned: nobody takes
// its resource, which is released when it arrives; timedOut: its caller was told that the
// driver took longer than its timeout, and is told nothing more.
type awaiting struct {
	req       awaitable
	what      string
	deadline  time.Time
	abandoned bool
	timedOut  bool
}

// sharedLog is one mapped log buffer file and how many resources use it (an IPC
// publication and the images of its subscribers in this client share one file).
type sharedLog struct {
	log  *logbuffer.Log
	refs int
}

// lingering is a released use of a log, unmapped only after the resource linger time.
type lingering struct {
	path     string
	deadline time.Time
}

// conductor is the client's single owner of state (see the package doc). Not safe for
// concurrent use: only its run goroutine touches it.
type conductor struct {
	c  *Client
	rx *broadcast.CopyReceiver

	awaiting map[int64]*awaiting // by correlation id
	// removing holds the removes sent to the driver and not answered yet: what each
	// removed, by correlation id. Nobody waits for them, but the driver's refusal of one
	// goes to OnError; its answer, success or error, forgets it (the driver answers every
	// command, so the map holds only removes in flight).
	removing      map[int64]string
	publications  map[int64]*ExclusivePublication
	subscriptions map[int64]*Subscription
	logs          map[string]*sharedLog // by log file path
	lingering     []lingering

	heartbeat     *counters.Value // the client's heartbeat counter, once the driver made it
	nextKeepalive time.Time
	scratch       []byte // command encoding buffer
	fatal         error
}

func newConductor(c *Client, rx *broadcast.CopyReceiver) *conductor {
	return &conductor{
		c:             c,
		rx:            rx,
		awaiting:      map[int64]*awaiting{},
		removing:      map[int64]string{},
		publications:  map[int64]*ExclusivePublication{},
		subscriptions: map[int64]*Subscription{},
		logs:          map[string]*sharedLog{},
	}
}

// awaitingInterval is the conductor's pause while a command awaits its answer
// (Aeron's awaiting-response sleep).
const awaitingInterval = time.Millisecond

func (d *conductor) run() {
	timer := time.NewTimer(d.c.opts.IdleInterval)
	defer timer.Stop()
	for d.fatal == nil {
		select {
		case req := <-d.c.requests:
			d.handle(req, time.Now())
		case <-timer.C:
		case <-d.c.stopping:
			d.stop(ErrClientClosed)
			return
		}
		d.dutyCycle(time.Now())
		wait := d.c.opts.IdleInterval
		if len(d.awaiting) > 0 {
			wait = awaitingInterval
		}
		timer.Reset(wait)
	}
	d.stop(d.fatal)
}

// dutyCycle does the conductor's periodic work: drain the driver's answers, time out
// commands, keep the client alive and check the driver is, and unmap lingered logs.
func (d *conductor) dutyCycle(now time.Time) {
	d.drainBroadcast()
	for _, a := range d.awaiting {
		if a.timedOut || !now.After(a.deadline) {
			continue
		}
		if err := d.c.cnc.CheckDriverActive(now, d.c.opts.DriverTimeout); err != nil {
			d.fatal = fmt.Errorf("%w: no answer to %s within %s: %w", ErrDriverTimeout, a.what, d.c.opts.DriverTimeout, err)
			return
		}
		// The driver beats: it is slow, not gone. As Java's awaitResponse, only this
		// command fails; its answer, when it comes, is released (abandoned), so that no
		// resource is left that nobody owns, and the client's others go on.
		a.timedOut = true
		if !a.abandoned {
			a.abandoned = true
			a.req.reply() <- answer{err: fmt.Errorf("%w: no answer to %s within %s, though the driver's heartbeat is current (slow, not gone): its resource, if the driver makes it later, is released", ErrDriverTimeout, a.what, d.c.opts.DriverTimeout)}
		}
	}
	if !now.Before(d.nextKeepalive) {
		d.nextKeepalive = now.Add(d.c.opts.KeepaliveInterval)
		d.keepalive(now)
	}
	d.unmapLingered(now)
}

// drainBroadcast handles every driver message waiting in the to-clients buffer. The buffer
// is only 1 MiB and the driver writes it for all clients: a client that falls a lap behind
// has lost messages it cannot get back, which is fatal (as in the Java client).
func (d *conductor) drainBroadcast() {
	for d.fatal == nil {
		got, err := d.rx.Receive(d.onDriverMessage)
		if err != nil {
			d.fatal = fmt.Errorf("aeron: reading the driver's messages: %w", err)
			return
		}
		if !got {
			return
		}
	}
}

// keepalive checks the driver's heartbeat, then refreshes the client's own. The driver
// creates the client's heartbeat counter (type client-heartbeat, key = client id) on the
// client's first command; until then there is nothing to refresh.
func (d *conductor) keepalive(now time.Time) {
	if err := d.c.cnc.CheckDriverActive(now, d.c.opts.DriverTimeout); err != nil {
		d.fatal = fmt.Errorf("%w: %w", ErrDriverTimeout, err)
		return
	}
	if d.heartbeat == nil {
		ctr, ok := d.c.counters.Find(counters.TypeClientHeartbeat, d.isOwnHeartbeatKey)
		if !ok {
			return
		}
		v, err := d.c.counters.Value(ctr.ID())
		if err != nil {
			d.fatal = fmt.Errorf("aeron: heartbeat counter: %w", err)
			return
		}
		d.heartbeat = &v
	}
	ctr, err := d.c.counters.Counter(d.heartbeat.ID())
	if err != nil || ctr.State() != counters.StateAllocated || ctr.TypeID() != counters.TypeClientHeartbeat || !d.isOwnHeartbeatKey(ctr.Key()) {
		d.fatal = fmt.Errorf("%w: its heartbeat counter is gone", ErrClientTimeout)
		return
	}
	d.heartbeat.Store(now.UnixMilli())
}

func (d *conductor) isOwnHeartbeatKey(key []byte) bool {
	id, ok := counters.HeartbeatClientID(key)
	return ok && id == d.c.clientID
}

// handle serves one request from a caller.
func (d *conductor) handle(req request, now time.Time) {
	switch r := req.(type) {
	case *addPublication:
		d.send(r, fmt.Sprintf("add exclusive publication %q stream %d", r.channel, r.streamID), now,
			func(corr int64) command.Command {
				return command.AddExclusivePublication{ClientID: d.c.clientID, CorrelationID: corr, StreamID: r.streamID, Channel: r.channel}
			})
	case *addSubscription:
		d.send(r, fmt.Sprintf("add subscription %q stream %d", r.channel, r.streamID), now,
			func(corr int64) command.Command {
				return command.AddSubscription{ClientID: d.c.clientID, CorrelationID: corr, StreamID: r.streamID, Channel: r.channel}
			})
	case *abandon:
		matched := false
		for _, a := range d.awaiting {
			if a.req.reply() == r.reply {
				a.abandoned, matched = true, true
			}
		}
		if !matched {
			// Answered before the caller gave up: the answer is in its reply channel
			// (this goroutine sent it earlier), and nobody will take the resource.
			select {
			case ans := <-r.reply:
				switch v := ans.value.(type) {
				case *ExclusivePublication:
					d.releasePublication(v, now)
				case *Subscription:
					d.releaseSubscription(v, now)
				}
			default:
			}
		}
	case *release:
		switch res := r.resource.(type) {
		case *ExclusivePublication:
			d.releasePublication(res, now)
		case *Subscription:
			d.releaseSubscription(res, now)
		}
		close(r.done)
	}
}

// send writes a command to the driver and records it as awaiting its answer. The
// correlation id is taken from the driver's ring counter, like the client id.
func (d *conductor) send(req awaitable, what string, now time.Time, build func(corr int64) command.Command) {
	corr := d.c.toDriver.NextCorrelationID()
	if err := d.write(build(corr)); err != nil {
		req.reply() <- answer{err: fmt.Errorf("aeron: %s: %w", what, err)}
		return
	}
	d.awaiting[corr] = &awaiting{req: req, what: what, deadline: now.Add(d.c.opts.DriverTimeout)}
}

func (d *conductor) write(cmd command.Command) error {
	payload, err := cmd.AppendTo(d.scratch[:0])
	if err != nil {
		return err
	}
	d.scratch = payload
	return d.c.toDriver.Write(int32(cmd.Type()), payload)
}

// onDriverMessage handles one message from the driver. Messages for other clients and
// repeats (the receiver first re-delivers the latest message sent before it attached) find
// no matching command or resource and are ignored.
func (d *conductor) onDriverMessage(typeID int32, payload []byte) {
	switch command.ResponseType(typeID) {
	case command.ResponseOnExclusivePublicationReady:
		if r, err := command.DecodePublicationBuffersReady(payload); d.decoded(err) {
			d.onPublicationReady(r)
		}
	case command.ResponseOnSubscriptionReady:
		if r, err := command.DecodeSubscriptionReady(payload); d.decoded(err) {
			d.onSubscriptionReady(r)
		}
	case command.ResponseOnError:
		if r, err := command.DecodeErrorResponse(payload); d.decoded(err) {
			d.onError(r)
		}
	case command.ResponseOnAvailableImage:
		if r, err := command.DecodeImageBuffersReady(payload); d.decoded(err) {
			d.onAvailableImage(r)
		}
	case command.ResponseOnUnavailableImage:
		if r, err := command.DecodeImageMessage(payload); d.decoded(err) {
			d.onUnavailableImage(r)
		}
	case command.ResponseOnOperationSuccess:
		if r, err := command.DecodeOperationSucceeded(payload); d.decoded(err) {
			delete(d.removing, r.CorrelationID)
		}
	case command.ResponseOnClientTimeout:
		if r, err := command.DecodeClientTimeout(payload); d.decoded(err) && r.ClientID == d.c.clientID {
			d.fatal = ErrClientTimeout
		}
	}
}

// decoded reports a driver message that does not decode: the driver speaks another
// protocol version, or the buffer is corrupt. Either way the client cannot go on.
func (d *conductor) decoded(err error) bool {
	if err != nil {
		d.fatal = fmt.Errorf("aeron: undecodable message from the driver: %w", err)
		return false
	}
	return true
}

// take removes and returns the command awaiting an answer with this correlation id.
func (d *conductor) take(corr int64) *awaiting {
	a := d.awaiting[corr]
	delete(d.awaiting, corr)
	return a
}

func (d *conductor) onPublicationReady(r command.PublicationBuffersReady) {
	a := d.take(r.CorrelationID)
	if a == nil {
		return
	}
	pub, err := d.newPublication(a.req.(*addPublication), r)
	if err != nil {
		// The driver made it: tell it the publication is gone, or it keeps it, and its
		// session, until the client closes.
		d.removePublication(r.RegistrationID, a.req.(*addPublication).channel, r.StreamID)
		d.failCaller(a, answer{err: fmt.Errorf("aeron: %s: %w", a.what, err)})
		return
	}
	d.publications[r.RegistrationID] = pub
	if a.abandoned {
		d.releasePublication(pub, time.Now())
		return
	}
	a.req.reply() <- answer{value: pub}
}

func (d *conductor) onSubscriptionReady(r command.SubscriptionReady) {
	a := d.take(r.CorrelationID)
	if a == nil {
		return
	}
	req := a.req.(*addSubscription)
	sub := newSubscription(d.c, r.CorrelationID, req.channel, req.streamID, req.handlers)
	sub.endpoint = newChannelEndpoint(d.c.counters, r.ChannelStatusCounterID)
	d.subscriptions[r.CorrelationID] = sub
	if a.abandoned {
		d.releaseSubscription(sub, time.Now())
		return
	}
	a.req.reply() <- answer{value: sub}
}

func (d *conductor) onError(r command.ErrorResponse) {
	if r.Code == command.ErrorCodeChannelEndpointError {
		// The id is a channel-status counter, not a command (aeron-protocol.md §4.5). The
		// driver broadcasts it to every client: it is this client's only if one of its
		// publications or subscriptions has that counter (Java's
		// ClientConductor.onChannelEndpointError reports it to those only). It arrives
		// after the resource was handed over when the driver's sender or receiver thread
		// opens the endpoint (dedicated threading, the default): OnError alone would leave
		// the resource looking healthy, so it is kept on the resource too, for its Err.
		id := int32(r.OffendingCorrelationID)
		if id == command.NullCounterID {
			return
		}
		for _, pub := range d.publications {
			if pub.endpoint.statusID == id {
				err := fmt.Errorf("%w: publication %q stream %d (status counter %d): %s", ErrChannelEndpoint, pub.channel, pub.streamID, id, r.Message)
				pub.endpoint.fail(err)
				d.reportError(err)
			}
		}
		for _, sub := range d.subscriptions {
			if sub.endpoint.statusID == id {
				err := fmt.Errorf("%w: subscription %q stream %d (status counter %d): %s", ErrChannelEndpoint, sub.channel, sub.streamID, id, r.Message)
				sub.endpoint.fail(err)
				d.reportError(err)
			}
		}
		return
	}
	if what, ok := d.removing[r.OffendingCorrelationID]; ok {
		delete(d.removing, r.OffendingCorrelationID)
		d.reportError(&DriverError{Code: int32(r.Code), Name: r.Code.String(), Message: r.Message, Command: what})
		return
	}
	a := d.take(r.OffendingCorrelationID)
	if a == nil {
		return
	}
	d.failCaller(a, answer{err: &DriverError{Code: int32(r.Code), Name: r.Code.String(), Message: r.Message, Command: a.what}})
}

// failCaller gives the caller of command a its failure (ans), or, if it was told already
// that the command timed out, reports it.
func (d *conductor) failCaller(a *awaiting, ans answer) {
	if a.timedOut {
		d.reportError(fmt.Errorf("after %s timed out: %w", a.what, ans.err))
		return
	}
	a.req.reply() <- ans
}

func (d *conductor) onAvailableImage(r command.ImageBuffersReady) {
	sub := d.subscriptions[r.SubscriptionRegistrationID]
	if sub == nil || sub.image(r.CorrelationID) != nil {
		return
	}
	img, err := d.newImage(sub, r)
	if err != nil {
		d.reportError(fmt.Errorf("aeron: image %d of subscription %q stream %d: %w", r.SessionID, sub.channel, sub.streamID, err))
		return
	}
	sub.addImage(img)
	if h := sub.handlers.OnAvailable; h != nil {
		d.callback(func() { h(img) })
	}
}

func (d *conductor) onUnavailableImage(r command.ImageMessage) {
	sub := d.subscriptions[r.SubscriptionRegistrationID]
	if sub == nil {
		return
	}
	img := sub.removeImage(r.CorrelationID)
	if img == nil {
		return
	}
	d.closeImage(img, time.Now())
	if h := sub.handlers.OnUnavailable; h != nil {
		d.callback(func() { h(img) })
	}
}

// newPublication maps the publication's log and builds it.
func (d *conductor) newPublication(req *addPublication, r command.PublicationBuffersReady) (*ExclusivePublication, error) {
	log, err := d.acquireLog(r.LogFileName)
	if err != nil {
		return nil, err
	}
	limit, err := d.c.counters.Value(counters.CounterID(r.PublicationLimitCounterID))
	if err != nil {
		d.releaseLog(r.LogFileName, time.Now())
		return nil, fmt.Errorf("publication limit counter: %w", err)
	}
	appender, err := logbuffer.NewExclusiveAppender(log)
	if err != nil {
		d.releaseLog(r.LogFileName, time.Now())
		return nil, err
	}
	return &ExclusivePublication{
		client:         d.c,
		channel:        req.channel,
		streamID:       r.StreamID,
		sessionID:      r.SessionID,
		registrationID: r.RegistrationID,
		endpoint:       newChannelEndpoint(d.c.counters, r.ChannelStatusCounterID),
		logPath:        r.LogFileName,
		log:            log,
		appender:       appender,
		limit:          limit,
	}, nil
}

// newImage maps the image's log and builds it at the driver's join position.
func (d *conductor) newImage(sub *Subscription, r command.ImageBuffersReady) (*Image, error) {
	log, err := d.acquireLog(r.LogFileName)
	if err != nil {
		return nil, err
	}
	pos, err := d.c.counters.Value(counters.CounterID(r.SubscriberPositionCounterID))
	if err != nil {
		d.releaseLog(r.LogFileName, time.Now())
		return nil, fmt.Errorf("subscriber position counter: %w", err)
	}
	return newImage(sub, r.CorrelationID, r.SessionID, r.SourceIdentity, r.LogFileName, log, pos), nil
}

func (d *conductor) releasePublication(pub *ExclusivePublication, now time.Time) {
	if d.publications[pub.registrationID] != pub {
		return
	}
	delete(d.publications, pub.registrationID)
	pub.closed.Store(true)
	d.removePublication(pub.registrationID, pub.channel, pub.streamID)
	d.releaseLog(pub.logPath, now)
}

func (d *conductor) releaseSubscription(sub *Subscription, now time.Time) {
	if d.subscriptions[sub.registrationID] != sub {
		return
	}
	delete(d.subscriptions, sub.registrationID)
	d.closeImages(sub, now)
	d.remove(fmt.Sprintf("remove subscription %q stream %d (registration id %d)", sub.channel, sub.streamID, sub.registrationID),
		func(corr int64) command.Command {
			return command.RemoveSubscription{ClientID: d.c.clientID, CorrelationID: corr, RegistrationID: sub.registrationID}
		})
}

func (d *conductor) removePublication(registrationID int64, channel string, streamID int32) {
	d.remove(fmt.Sprintf("remove publication %q stream %d (registration id %d)", channel, streamID, registrationID),
		func(corr int64) command.Command {
			return command.RemovePublication{ClientID: d.c.clientID, CorrelationID: corr, RegistrationID: registrationID}
		})
}

// remove tells the driver a resource is gone. Like the Java client it does not wait for
// the answer: the resource is already closed on this side. Unlike the Java client (1.47.3
// files a refused remove's error under the remove's own correlation id, which no call
// looks up), it reports a refusal to OnError: the correlation id is kept until the driver
// answers.
func (d *conductor) remove(what string, build func(corr int64) command.Command) {
	corr := d.c.toDriver.NextCorrelationID()
	if err := d.write(build(corr)); err != nil {
		d.reportError(fmt.Errorf("aeron: %s: %w", what, err))
		return
	}
	d.removing[corr] = what
}

// closeImages closes a closing subscription's images and tells its handler, as for images
// that became unavailable: a handler that tracks images must see every one leave.
func (d *conductor) closeImages(sub *Subscription, now time.Time) {
	for _, img := range sub.closeAll() {
		d.closeImage(img, now)
		if h := sub.handlers.OnUnavailable; h != nil {
			d.callback(func() { h(img) })
		}
	}
}

func (d *conductor) closeImage(img *Image, now time.Time) {
	img.markClosed()
	d.releaseLog(img.logPath, now)
}

// acquireLog maps a log buffer file, or shares the mapping another resource holds.
func (d *conductor) acquireLog(path string) (*logbuffer.Log, error) {
	if s := d.logs[path]; s != nil {
		s.refs++
		return s.log, nil
	}
	log, err := logbuffer.Open(path)
	if err != nil {
		return nil, err
	}
	d.logs[path] = &sharedLog{log: log, refs: 1}
	return log, nil
}

// releaseLog gives up one use of a log; the mapping goes only when its last use has
// lingered for the resource linger time.
func (d *conductor) releaseLog(path string, now time.Time) {
	d.lingering = append(d.lingering, lingering{path: path, deadline: now.Add(d.c.opts.ResourceLinger)})
}

func (d *conductor) unmapLingered(now time.Time) {
	kept := d.lingering[:0]
	for _, l := range d.lingering {
		if now.Before(l.deadline) {
			kept = append(kept, l)
			continue
		}
		d.unref(l.path)
	}
	d.lingering = kept
}

func (d *conductor) unref(path string) {
	s := d.logs[path]
	if s == nil {
		return
	}
	if s.refs--; s.refs == 0 {
		delete(d.logs, path)
		if err := s.log.Close(); err != nil {
			d.reportError(fmt.Errorf("aeron: unmap %s: %w", path, err))
		}
	}
}

// stop ends the client: every resource is closed, every waiting caller gets cause, the
// driver is told the client is leaving (unless it is the driver that died), and once no
// call can still be reading a mapping, everything is unmapped.
func (d *conductor) stop(cause error) {
	now := time.Now()
	// The cause first: a poll or offer that sees a resource closed below, or an
	// OnUnavailable handler, reads it through closedErr.
	d.c.err.Store(&cause)
	for corr, a := range d.awaiting {
		delete(d.awaiting, corr)
		if !a.timedOut { // answered when it timed out: its reply channel holds one answer, read or not
			a.req.reply() <- answer{err: cause}
		}
	}
	for _, pub := range d.publications {
		pub.closed.Store(true)
		d.releaseLog(pub.logPath, now)
	}
	for _, sub := range d.subscriptions {
		d.closeImages(sub, now)
	}
	clear(d.publications)
	clear(d.subscriptions)
	// Tell a driver that still beats that the client leaves, so that it frees what the
	// client held (a late answer to an unanswered command included) now rather than at its
	// client liveness timeout; a driver whose heartbeat stopped cannot hear it.
	if !errors.Is(cause, ErrDriverTimeout) || d.c.cnc.CheckDriverActive(now, d.c.opts.DriverTimeout) == nil {
		if err := d.write(command.ClientClose{ClientID: d.c.clientID}); err != nil {
			d.reportError(fmt.Errorf("aeron: %s: %w", command.CommandClientClose, err))
		}
	}
	if !errors.Is(cause, ErrClientClosed) {
		// Before dead closes: whatever OnError does happens-before a caller's wake-up on
		// Dead (the channel close), so the caller sees it.
		d.reportError(cause)
	}
	close(d.c.dead)
	if !errors.Is(cause, ErrClientClosed) {
		// Offers and polls may still be running on other goroutines: they see the closed
		// flags, but may be inside a log buffer right now. Linger, unless Close is called
		// (whose contract is that they have stopped).
		linger := time.NewTimer(d.c.opts.ResourceLinger)
		select {
		case <-linger.C:
		case <-d.c.stopping:
			linger.Stop()
		}
	}
	for path, s := range d.logs {
		if err := s.log.Close(); err != nil {
			d.c.opts.Logger.Warn("aeron: unmap log buffer", "path", path, "err", err)
		}
	}
	clear(d.logs)
	d.lingering = nil
	if err := d.c.cnc.Close(); err != nil {
		d.c.opts.Logger.Warn("aeron: unmap cnc.dat", "err", err)
	}
	close(d.c.done)
}
