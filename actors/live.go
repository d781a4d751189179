package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/supervisor"
)

// live is the transport mode's reader of one stream: it subscribes to the stream's channel
// itself (no archive) and hands every whole message of every publisher session to the
// stream's publisher. Delivery is at most once: what was published while ferry was down,
// and a message whose publish failed, is lost. Each loss is counted and logged at error
// level; nothing lost is reported as progress (lesson 26). ferry sends each message once;
// without sequence ids the broker cannot deduplicate the client's own re-send of a message
// whose acknowledgement a broker crash swallowed (README, transport mode). Order is kept
// within each publisher session (image) only: the poll takes the images in turn, so
// sessions interleave, a restarted publisher's new session with the unread tail of its old
// one too (the image of a publisher that left is not drained first).
//
// It is its own commit tracker: the publisher's outcomes come back to it and return its
// credits. Outcomes of one producer arrive in send order, so the bytes of each record are
// kept in a FIFO. It reports to the stream as its recording 0 (there are no recordings in
// transport mode): published, acknowledged, lost (failed) and pending counts at most every
// statusInterval, and each loss as a publish failure. Its mailbox holds one poll message,
// one status tick, one image check, the subscription result and at most one outcome per
// record in flight.
type live struct {
	env  *Env
	cfg  *StreamConfig
	pids *recordingPIDs
	*liveSends

	sub    liveSubscription
	addSub addLiveSubscription // nil: the Env's Aeron client
	// subscribing passes the subscription from the goroutine that adds it; whichever of the
	// two lets go second closes it (see handoff).
	subscribing *handoff[liveSubscription]
	cancel      context.CancelFunc
	asm         *aeron.FragmentAssembler
	discarded   uint64 // the assembler's discarded messages counted as lost so far
	// lastEnd is, of each image (publication) polled, the end of its last whole message
	// read. By image, not session: a publisher restarted between two polls has a new
	// image with the same session id, which starts at its own join position.
	lastEnd     map[publication]int64
	first       int // the image a poll starts at, turn by turn (see poll)
	publishers  int // the images the last poll found: the publications connected
	batch       *messages.RecordBatch
	reading     publication // of the image being polled
	again       uint64      // messages the poll read again (see sentMarks)
	pollPending bool
	// checkPending: a checkImages is on its way (the window is full).
	checkPending bool
	idle         time.Duration
	draining     bool
	drainedSent  bool
	pushes       pushThrottle
}

// liveSends is what the live reader knows of the records it handed to the publisher. It
// outlives incarnations, as the publisher and its sends do: a restarted reader goes on in
// the publisher's current epoch (starting over at 1, its first batches would be skipped as
// records of an epoch that failed) and the outcomes of records an earlier incarnation sent
// still return their credits.
type liveSends struct {
	epoch                 uint64
	marks                 *sentMarks // of each publication, the end of the last message sent
	readAgain             uint64     // messages read again and not sent again (see sentMarks)
	inflight              []int64    // bytes of each record in flight, in send order
	inflightB             int64
	sent                  uint64 // records handed to the publisher
	published             uint64 // records Pulsar acknowledged
	lost                  uint64
	lastReadMs, lastAckMs int64
	// released is closed once the subscriptions an earlier incarnation let go of are closed
	// (nil: none): the next subscribes after that. The driver makes a subscription on the
	// channel endpoint any other subscription to that channel holds, failed or not, and
	// opens an endpoint again only once no subscription holds it: added while the failed
	// one is still open, the new subscription would fail on the same endpoint, restart
	// after restart, until the supervisor gave the stream up.
	released <-chan struct{}
}

// liveSubscription is what the live reader uses of its subscription. *aeron.Subscription
// implements it.
type liveSubscription interface {
	Images() []*aeron.Image
	IsClosed() bool
	// Err reports a channel endpoint the media driver could not open (see
	// [aeron.Subscription.Err]): the subscription is open, idle, and receives nothing.
	Err() error
	Close() error
}

// addLiveSubscription adds the live reader's subscription; it blocks.
type addLiveSubscription func(ctx context.Context, channel string, streamID int32) (liveSubscription, error)

// subscribeWith adds live subscriptions with an Aeron client.
func subscribeWith(s Subscriber) addLiveSubscription {
	return func(ctx context.Context, channel string, streamID int32) (liveSubscription, error) {
		sub, err := s.AddSubscription(ctx, channel, streamID, aeron.ImageHandlers{})
		if sub == nil {
			return nil, err // not a nil *aeron.Subscription in a non-nil interface
		}
		return sub, err
	}
}

// liveSubscribed says the live subscription was added (taken from the handoff it names) or
// could not be.
type liveSubscribed struct {
	from *handoff[liveSubscription]
	err  error
}

// pollLive is the live reader's self-message to poll again; by is the incarnation that
// sent it. The mailbox outlives a restart: an earlier incarnation's poll, handled by the
// next, would clear its pollPending, and two poll loops would run.
type pollLive struct{ by *live }

func newLive(env *Env, cfg *StreamConfig, pids *recordingPIDs) actor.Producer {
	s := &liveSends{epoch: 1, marks: env.sentMarks.take(cfg.Def.Name)}
	return func() actor.Actor {
		return &live{env: env, cfg: cfg, pids: pids, liveSends: s, lastEnd: map[publication]int64{}}
	}
}

func (l *live) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		l.subscribe(ctx)
	case *liveSubscribed:
		if msg.from != l.subscribing {
			// An earlier incarnation's, handled by this one (the mailbox outlives a restart):
			// that one abandoned its handoff, and its subscription is closed.
			return
		}
		sub, _ := msg.from.take()
		if l.draining {
			// Stopping: not wanted any more, and a failure to subscribe is no reason for a
			// restart, which would subscribe again and publish after the drain.
			l.closeSub(sub)
			l.drained(ctx)
			return
		}
		if msg.err != nil {
			l.failRead(ctx, fmt.Errorf("subscribe to %s stream %d: %w", l.channel(), l.cfg.Def.StreamID, msg.err))
		}
		l.sub = sub
		if l.sub != nil {
			l.checkChannel(ctx) // the driver's error may have come already: not live then
		}
		l.asm = aeron.NewFragmentAssembler(maxMessageLength, l.onMessage)
		l.asm.UsePool(l.env.Payloads)
		l.env.Logger.Info("transport mode: subscribed; at most once, messages published while ferry is down are lost", "stream", l.cfg.Def.Name, "channel", l.channel(), "stream_id", l.cfg.Def.StreamID)
		l.pushStatus(ctx, true) // the stream is live from now on
		l.schedulePoll(ctx, 0)
	case *pollLive:
		if msg.by != l {
			return // an earlier incarnation's
		}
		l.pollPending = false
		l.poll(ctx)
	case *messages.PublishAcked:
		l.published++
		l.lastAckMs = l.env.nowMs()
		l.outcome(ctx)
	case *messages.PublishFailed:
		l.lost++ // that message only: in transport mode the publisher does not fail-stop
		l.env.Logger.Error("transport mode: a message could not be published and is lost (at most once)", "stream", l.cfg.Def.Name, "position", msg.End, "lost_total", l.lost, "error", msg.Error)
		ctx.Send(l.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: l.env.nowMs(), Kind: "publish",
			Message: fmt.Sprintf("the message ending at %d is lost (transport mode, at most once): %s", msg.End, msg.Error)}})
		l.outcome(ctx)
	case *statusTick:
		l.pushes.ticked()
		l.pushStatus(ctx, true)
	case *checkImages:
		if msg.by != l {
			return // an earlier incarnation's
		}
		l.checkPending = false
		if l.sub != nil && !l.draining && l.windowFull() {
			l.checkChannel(ctx)
			l.observeImages(ctx)
			l.scheduleImageCheck(ctx)
		}
	case *messages.Drain:
		l.draining = true
		if msg.Now && !l.drainedSent {
			l.drainedSent = true
			ctx.Send(l.pids.stream, &messages.RecordingDrained{Unacknowledged: int64(len(l.inflight))})
			return
		}
		l.drained(ctx)
	case *actor.Restarting, *actor.Stopping:
		if l.cancel != nil {
			l.cancel()
		}
		// A subscription added and not taken yet: its liveSubscribed, behind this message,
		// is dropped with the stopped actor (or ignored by the next incarnation).
		var abandoned liveSubscription
		if l.subscribing != nil {
			abandoned, _ = l.subscribing.abandon()
		}
		l.released = l.closeSub(l.sub, abandoned)
		l.sub = nil
		// The messages in progress go with the assembler: lost, and counted. The counts
		// held back by the push interval are pushed now, if the stream still takes them:
		// the timer's tick would reach a stopped reader, and the next incarnation starts
		// from what the stream last heard.
		if l.asm != nil {
			l.asm.Reset()
			l.countBrokenOff(ctx)
		}
		l.pushStatus(ctx, true)
	}
}

// channel is the subscription channel: the stream's, as a spy on this driver if configured.
func (l *live) channel() string {
	if l.cfg.Spy && !l.cfg.Channel.IsSpy() {
		return "aeron-spy:" + l.cfg.Channel.String()
	}
	return l.cfg.Channel.String()
}

func (l *live) subscribe(ctx actor.Context) {
	callCtx, cancel := context.WithTimeout(context.Background(), l.cfg.CallTimeout)
	l.cancel = cancel
	self, system, ch, stream := ctx.Self(), ctx.ActorSystem(), l.channel(), l.cfg.Def.StreamID
	add := l.addSub
	if add == nil {
		add = subscribeWith(l.env.Aeron)
	}
	h := &handoff[liveSubscription]{}
	l.subscribing = h
	released := l.released
	if !l.env.tasks().Go(func() {
		defer cancel()
		if released != nil {
			select {
			case <-released:
			case <-callCtx.Done(): // add fails with it
			}
		}
		sub, err := add(callCtx, ch, stream)
		if err == nil && !h.offer(sub) {
			// The reader stopped meanwhile. Left open, an IPC or spy subscription nobody
			// polls would hold the application's publisher back.
			if sub != nil {
				_ = sub.Close()
			}
			return
		}
		system.Root.Send(self, &liveSubscribed{from: h, err: err})
	}) {
		cancel()
	}
}

func (l *live) poll(ctx actor.Context) {
	if l.sub == nil || l.draining {
		return
	}
	l.checkChannel(ctx)
	images := l.observeImages(ctx)
	// Each poll starts at the next image: one that starts every poll would take the credits
	// an outcome returns first, and while its publisher has a backlog (Pulsar slower than
	// the publishers) another session would get none.
	l.first = (l.first + 1) % max(len(images), 1)
	moved := false
	for k := range images {
		img := images[(l.first+k)%len(images)]
		if l.windowFull() {
			l.scheduleImageCheck(ctx)
			return // outcomes resume polling
		}
		credits := min(l.cfg.MaxInflightRecords-int64(len(l.inflight)), fragmentLimit)
		l.reading = publicationOf(img)
		if _, ok := l.lastEnd[l.reading]; !ok {
			l.lastEnd[l.reading] = img.JoinPosition()
			l.joinedAhead(ctx, img)
		}
		before := img.Position()
		l.batch = &messages.RecordBatch{Generation: 0, Epoch: l.epoch, SessionId: img.SessionID()}
		// The window's free bytes, counted from the end of the session's last whole message
		// (the image may be inside the next one), bound the read, as the replay's: the byte
		// bound is overshot by less than one message, the one that straddles it. A read
		// takes at least a frame, so that a message longer than the room left still arrives.
		limit := max(l.lastEnd[l.reading]+l.cfg.MaxInflightBytes-l.inflightB, before+1)
		_, err := img.BoundedPoll(l.asm.OnFragment, limit, int(credits))
		l.marks.readTo(l.reading, img.Position())
		batch := l.batch
		l.batch = nil
		if l.again > 0 {
			l.readAgain += l.again
			l.env.Logger.Warn("transport mode: messages read again were already sent: not sent again (the media driver joined the new subscription at a slower subscriber's position)",
				"stream", l.cfg.Def.Name, "session", img.SessionID(), "messages", l.again, "up_to", l.marks.last(l.reading), "read_again_total", l.readAgain)
			l.again = 0
		}
		if len(batch.Records) > 0 {
			l.sent += uint64(len(batch.Records))
			l.lastReadMs = l.env.nowMs()
			ctx.Send(l.pids.publisher, batch)
			l.pushStatus(ctx, false)
		}
		if err != nil {
			l.failRead(ctx, fmt.Errorf("poll session %d: %w", img.SessionID(), err))
		}
		moved = moved || img.Position() != before
	}
	if l.sub.IsClosed() {
		l.failRead(ctx, errors.New("the live subscription was closed (media driver gone?)"))
	}
	if moved {
		l.idle = 0
		l.schedulePoll(ctx, 0)
		return
	}
	l.idle = min(max(2*l.idle, idlePollMin), idlePollMax)
	l.schedulePoll(ctx, l.idle)
}

// failRead reports err as the stream's read failure, which the status keeps past the
// restart, and fails the reader (transient: it subscribes again after the back-off).
func (l *live) failRead(ctx actor.Context, err error) {
	ctx.Send(l.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: l.env.nowMs(), Kind: "read", Message: err.Error()}})
	panic(supervisor.Fail(supervisor.Transient, fmt.Errorf("stream %s: %w", l.cfg.Def.Name, err)))
}

// checkChannel fails the reader, to subscribe again after the restart's back-off, if the
// media driver could not open its subscription's channel endpoint (a UDP address in use or
// not local). The driver says so after it made the subscription (its receiver thread binds
// the socket, under the default dedicated threading): the subscription stays open with no
// image, and polls as a quiet stream. Not failed, the stream would show live and healthy
// while nothing can arrive (lesson 16); failed, its status shows the driver's reason, and
// the supervisor gives up on it after its restarts if the endpoint keeps failing.
func (l *live) checkChannel(ctx actor.Context) {
	cause := l.sub.Err()
	if cause == nil {
		return
	}
	l.failRead(ctx, fmt.Errorf("subscription to %s stream %d receives nothing, its channel endpoint failed (subscribing again once this subscription is closed: the media driver opens the endpoint again only when no subscription to the channel holds it, so another subscriber to it on that driver keeps it failed): %w", l.channel(), l.cfg.Def.StreamID, cause))
}

// windowFull reports whether the records or bytes in flight leave no credit to read.
func (l *live) windowFull() bool {
	return int64(len(l.inflight)) >= l.cfg.MaxInflightRecords || l.inflightB >= l.cfg.MaxInflightBytes
}

// checkImages is the live reader's self-message, while its window is full, to look at the
// subscription's images (see observeImages).
type checkImages struct{ by *live } // by: as pollLive's

// scheduleImageCheck arms one checkImages, statusInterval from now.
func (l *live) scheduleImageCheck(ctx actor.Context) {
	if l.checkPending {
		return
	}
	l.checkPending = true
	self, system := ctx.Self(), ctx.ActorSystem()
	time.AfterFunc(statusInterval, func() { system.Root.Send(self, &checkImages{by: l}) })
}

// observeImages returns the subscription's images, after forgetting the sessions gone, counting
// the messages they broke off and pushing a changed publisher count at once. Called by each
// poll and, while the window is full and the reader does not poll, every statusInterval, so
// that the status follows the publishers while Pulsar holds the reader back.
func (l *live) observeImages(ctx actor.Context) []*aeron.Image {
	images := l.sub.Images()
	if len(l.lastEnd) > len(images) {
		l.forgetGone(images)
	}
	if len(images) != l.publishers {
		l.publishers = len(images)
		l.pushStatus(ctx, true)
	}
	l.countBrokenOff(ctx)
	return images
}

// forgetGone drops what the reader keeps of the publisher sessions whose images are gone: the
// end of the last message, and a message in progress, which the assembler discards (and
// countBrokenOff counts) instead of keeping its buffer for ever.
func (l *live) forgetGone(images []*aeron.Image) {
	present := make(map[publication]bool, len(images))
	sessions := make(map[int32]bool, len(images))
	for _, img := range images {
		present[publicationOf(img)] = true
		sessions[img.SessionID()] = true
	}
	for p := range l.lastEnd {
		if present[p] {
			continue
		}
		delete(l.lastEnd, p)
		// The assembler keeps a message in progress by session: not while a new image of
		// the session (its publisher restarted) may be inside one. The old one's, if any,
		// is discarded (and counted) when the new image's first fragment finds it.
		if !sessions[p.session] {
			l.asm.FreeSession(p.session)
		}
	}
}

// joinedAhead says, at error level and as a `skipped` failure, that a reader subscribed
// again (restarted, or after a reconnect to a driver that kept the publication) joined
// publication img past where it had read it to (readPast): the driver joins a new
// subscription where the slowest subscriber of the stream is, and another, faster one had
// read on meanwhile; or, alone on the driver over the network, the driver dropped its image
// with the reader's subscription, and made a new one that joins where the sender is
// (readPastStream). What was published in between is lost (at most once), as if ferry had
// been down; how many messages is not known, their bytes are. (Alone on the driver with an
// IPC publication or a spy, the reader joins again where its last poll left the image,
// which may be inside a message, counted as broken off, or past padding: nothing to say.)
func (l *live) joinedAhead(ctx actor.Context, img *aeron.Image) {
	read, newImage, ok := l.marks.readPastStream(publicationOf(img))
	if !ok || img.JoinPosition() <= read {
		return
	}
	why := "another subscriber of the stream on the media driver read on while ferry's reader was away"
	if newImage {
		why = "the media driver's image of the publication went with ferry's subscription, its last, and the new one joined where the publisher was"
	}
	l.env.Logger.Error("transport mode: the reader subscribed again past where it had read a publication to: what was published in between is lost (at most once)",
		"stream", l.cfg.Def.Name, "session", img.SessionID(), "read_to", read, "joined_at", img.JoinPosition())
	ctx.Send(l.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: l.env.nowMs(), Kind: "skipped",
		Message: fmt.Sprintf("session %d: the reader, subscribed again, joined at position %d, past %d, where it had read to: the %d bytes published in between are lost (transport mode, at most once; %s)", img.SessionID(), img.JoinPosition(), read, img.JoinPosition()-read, why)}})
}

// countBrokenOff counts as lost the messages the assembler dropped unfinished since the last
// count: a publisher gone in the middle of a message, or, on a channel subscribed with
// reliable=false, fragments the network lost (the driver fills the gap instead of asking
// again). Lost either way; counted, they are not silent (lesson 26). A message whose first
// fragment never arrived is not among them: the assembler cannot tell it from a message begun
// before ferry joined.
func (l *live) countBrokenOff(ctx actor.Context) {
	d := l.asm.Stats().Discarded
	if d == l.discarded {
		return
	}
	n := d - l.discarded
	l.discarded = d
	l.lost += n
	l.env.Logger.Error("transport mode: messages broke off before their end and are lost (at most once)", "stream", l.cfg.Def.Name, "lost", n, "lost_total", l.lost)
	ctx.Send(l.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: l.env.nowMs(), Kind: "partial",
		Message: fmt.Sprintf("%d message(s) broke off before their end and are lost (transport mode, at most once): a publisher left in the middle of a message, or the channel is unreliable (reliable=false) and the network lost fragments", n)}})
	l.pushStatus(ctx, true)
}

func (l *live) onMessage(payload []byte, h aeron.Header) {
	end := h.Position()
	owned := l.asm.Detach() // a reassembled message's buffer, or a copy out of the log
	if l.marks.sent(l.reading, end) {
		l.again++
		l.lastEnd[l.reading] = end
		l.env.Payloads.Put(owned)
		return
	}
	l.marks.mark(l.reading, end)
	l.batch.Records = append(l.batch.Records, &messages.Record{Start: l.lastEnd[l.reading], End: end, Payload: owned})
	l.lastEnd[l.reading] = end
	l.inflight = append(l.inflight, int64(len(payload)))
	l.inflightB += int64(len(payload))
}

// outcome returns one record's credits.
func (l *live) outcome(ctx actor.Context) {
	if len(l.inflight) > 0 {
		l.inflightB -= l.inflight[0]
		l.inflight = l.inflight[1:]
	}
	l.pushStatus(ctx, len(l.inflight) == 0)
	if l.draining {
		l.drained(ctx)
		return
	}
	l.schedulePoll(ctx, 0)
}

func (l *live) drained(ctx actor.Context) {
	if len(l.inflight) == 0 && !l.drainedSent {
		l.drainedSent = true
		ctx.Send(l.pids.stream, &messages.RecordingDrained{})
	}
}

// pushStatus reports the counts to the stream, at most every statusInterval unless forced
// (then a timer sends the latest once the interval is over). Acknowledged is what was
// published; failed, what was lost.
func (l *live) pushStatus(ctx actor.Context, force bool) {
	if !l.pushes.due(ctx, force, l.env.elapsedMs()) {
		return
	}
	st := &messages.RecordingStatus{Published: l.sent, Acknowledged: l.published, Failed: l.lost,
		PendingRecords: int64(len(l.inflight)), PendingBytes: l.inflightB}
	if l.sub != nil {
		st.Publishers = proto.Int32(int32(l.publishers))
	}
	if l.lastReadMs != 0 {
		st.LastReadMs = proto.Int64(l.lastReadMs)
	}
	if l.lastAckMs != 0 {
		st.LastAckMs = proto.Int64(l.lastAckMs)
	}
	// As a request, so that the stream knows the sender (see its RecordingProgress).
	ctx.Request(l.pids.stream, &messages.RecordingProgress{RecordingId: 0, Status: st})
}

func (l *live) schedulePoll(ctx actor.Context, d time.Duration) {
	if l.pollPending || l.sub == nil || l.draining {
		return
	}
	l.pollPending = true
	if d == 0 {
		sendToSelf(ctx.ActorSystem(), ctx.Self(), &pollLive{by: l})
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	time.AfterFunc(d, func() { system.Root.Send(self, &pollLive{by: l}) })
}

// closeSub closes subs (nil ones skipped) on a goroutine, and returns a channel closed once
// they are closed.
func (l *live) closeSub(subs ...liveSubscription) <-chan struct{} {
	closed := make(chan struct{})
	if !l.env.tasks().Go(func() {
		defer close(closed)
		for _, sub := range subs {
			if sub != nil {
				_ = sub.Close()
			}
		}
	}) {
		close(closed) // ferry stops: its Aeron client closes them all
	}
	return closed
}
