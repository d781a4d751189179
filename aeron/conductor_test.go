package aeron

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/broadcast"
	"github.com/ferry-bridge/ferry/aeron/internal/command"
	"github.com/ferry-bridge/ferry/aeron/internal/counters"
)

// waitDead waits for the client to stop serving calls.
func waitDead(t *testing.T, c *Client) error {
	t.Helper()
	select {
	case <-c.Dead():
		return c.Err()
	case <-time.After(5 * time.Second):
		t.Fatal("the client is still alive after 5 s")
		return nil
	}
}

// An ON_CLIENT_TIMEOUT is broadcast to every client; only the one it names is dead
// (the old Go client acted on any client's timeout).
func TestOnlyOwnClientTimeoutIsFatal(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	d.send(command.ResponseOnClientTimeout, command.ClientTimeout{ClientID: c.ClientID() + 1}.AppendTo(nil))
	if err := d.barrier(c); err != nil {
		t.Fatalf("another client's timeout killed this one: %v", err)
	}
	d.send(command.ResponseOnClientTimeout, command.ClientTimeout{ClientID: c.ClientID()}.AppendTo(nil))
	if err := waitDead(t, c); !errors.Is(err, ErrClientTimeout) {
		t.Fatalf("own timeout: client error %v, want ErrClientTimeout", err)
	}
}

// Images are matched by subscription registration id; an image event for another
// subscription is ignored, a repeated one is not added twice, and an unavailable image
// closes it (the old Go client mishandled unavailable images).
func TestImagesAreMatchedToTheirSubscription(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	type added struct {
		sub *Subscription
		err error
	}
	done := make(chan added, 1)
	go func() {
		s, err := c.AddSubscription(ctx, "aeron:ipc", 7, ImageHandlers{})
		done <- added{s, err}
	}()
	cmd := d.awaitCommand(command.CommandAddSubscription)
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: -1}.AppendTo(nil))
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	sub := a.sub

	log := newFakeLog(t)
	const subPos = 3
	d.allocateCounter(subPos, counters.TypeSubscriberPosition, nil)
	image := func(subscription int64) []byte {
		return command.ImageBuffersReady{CorrelationID: 99, SessionID: 5, StreamID: 7, SubscriptionRegistrationID: subscription,
			SubscriberPositionCounterID: subPos, LogFileName: log, SourceIdentity: "aeron:ipc"}.AppendTo(nil)
	}
	d.send(command.ResponseOnAvailableImage, image(sub.RegistrationID()+1))
	d.send(command.ResponseOnAvailableImage, image(sub.RegistrationID()))
	d.send(command.ResponseOnAvailableImage, image(sub.RegistrationID()))
	if err := d.barrier(c); err != nil || len(sub.Images()) != 1 {
		t.Fatalf("images = %d (want 1: one for this subscription, the repeat ignored); client error %v", len(sub.Images()), c.Err())
	}
	img := sub.Images()[0]
	d.send(command.ResponseOnUnavailableImage, command.ImageMessage{CorrelationID: 99, SubscriptionRegistrationID: sub.RegistrationID() + 1, StreamID: 7}.AppendTo(nil))
	if err := d.barrier(c); err != nil || img.IsClosed() {
		t.Fatalf("an unavailable image of another subscription closed this one's (client error %v)", err)
	}
	d.send(command.ResponseOnUnavailableImage, command.ImageMessage{CorrelationID: 99, SubscriptionRegistrationID: sub.RegistrationID(), StreamID: 7}.AppendTo(nil))
	waitFor(t, img.IsClosed)
	if sub.IsConnected() {
		t.Error("the subscription still has an image after it became unavailable")
	}
}

// A driver error answers the command it names, as a typed error.
func TestDriverErrorFailsItsCommand(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	done := make(chan error, 1)
	go func() {
		_, err := c.AddExclusivePublication(context.Background(), "aeron:udp?endpoint=nowhere:1", 1)
		done <- err
	}()
	cmd := d.awaitCommand(command.CommandAddExclusivePublication)
	d.send(command.ResponseOnError, command.ErrorResponse{OffendingCorrelationID: cmd.correlationID, Code: command.ErrorCodeUnknownHost, Message: "unknown host nowhere"}.AppendTo(nil))
	err := <-done
	var de *DriverError
	if !errors.As(err, &de) || !errors.Is(err, ErrDriver) || de.Name != "UNKNOWN_HOST" || de.Message != "unknown host nowhere" {
		t.Fatalf("error = %v, want a *DriverError UNKNOWN_HOST with the driver's message", err)
	}
	if err := d.barrier(c); err != nil {
		t.Fatalf("a refused command killed the client: %v", err)
	}
}

// A command the driver, still beating, does not answer within the driver timeout fails
// alone, as Java's awaitResponse throws to its caller alone: the client goes on (one slow
// answer must not end every stream's replay), and the answer, when it comes, is released,
// so that no resource is left that nobody owns. So is a late refusal, reported.
func TestACommandUnansweredWithinTheDriverTimeoutFailsAlone(t *testing.T) {
	for _, refused := range []bool{false, true} {
		t.Run(map[bool]string{false: "made late", true: "refused late"}[refused], func(t *testing.T) {
			d := newFakeDriver(t)
			var reported []error
			var mu sync.Mutex
			c := d.client(Options{DriverTimeout: 200 * time.Millisecond, KeepaliveInterval: time.Hour, OnError: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				reported = append(reported, err)
			}})
			d.keepBeating() // only the command goes unanswered
			_, err := c.AddSubscription(context.Background(), "aeron:ipc", 1, ImageHandlers{})
			if !errors.Is(err, ErrDriverTimeout) || !strings.Contains(err.Error(), "slow, not gone") {
				t.Fatalf("unanswered command: %v, want ErrDriverTimeout, saying the driver beats", err)
			}
			cmd := d.awaitCommand(command.CommandAddSubscription) // before the barrier's own
			if err := d.barrier(c); err != nil {
				t.Fatalf("one unanswered command ended the client: %v", err)
			}
			if refused {
				d.send(command.ResponseOnError, command.ErrorResponse{OffendingCorrelationID: cmd.correlationID, Code: command.ErrorCodeGenericError, Message: "late"}.AppendTo(nil))
				waitFor(t, func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(reported) == 1 && strings.Contains(reported[0].Error(), "timed out") && strings.Contains(reported[0].Error(), "late")
				})
			} else {
				d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: -1}.AppendTo(nil))
				if got := d.awaitCommand(command.CommandRemoveSubscription); got.registrationID != cmd.correlationID || got.clientID != c.ClientID() {
					t.Fatalf("removed registration %d of client %d; want the late subscription %d of client %d", got.registrationID, got.clientID, cmd.correlationID, c.ClientID())
				}
			}
			if err := d.barrier(c); err != nil {
				t.Fatalf("a late answer ended the client: %v", err)
			}
			if _, err := c.AddSubscription(context.Background(), "aeron:ipc", 2, ImageHandlers{}); !errors.Is(err, ErrDriverTimeout) {
				t.Fatalf("the next command: %v; want it sent and timed out in turn", err)
			}
		})
	}
}

// A command unanswered while the driver's heartbeat is stale too: the driver is gone, and
// the client ends (stop answers every waiting caller; a driver that does not beat cannot
// hear a CLIENT_CLOSE).
func TestACommandUnansweredByADriverThatStoppedBeatingEndsTheClient(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{DriverTimeout: 200 * time.Millisecond, KeepaliveInterval: time.Hour})
	_, err := c.AddSubscription(context.Background(), "aeron:ipc", 1, ImageHandlers{})
	if !errors.Is(err, ErrDriverTimeout) || strings.Contains(err.Error(), "slow, not gone") {
		t.Fatalf("unanswered command: %v, want ErrDriverTimeout, the driver gone", err)
	}
	if err := waitDead(t, c); !errors.Is(err, ErrDriverTimeout) {
		t.Fatalf("client error after an unanswered command: %v", err)
	}
}

// sentClientClose reports whether the client wrote a CLIENT_CLOSE; a dead client wrote all
// it will.
func sentClientClose(d *fakeDriver) bool {
	for _, cmd := range d.read() {
		if cmd.typ == command.CommandClientClose {
			return true
		}
	}
	return false
}

// A driver whose heartbeat stops is declared dead within the driver timeout.
func TestStaleDriverHeartbeatIsFatal(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{DriverTimeout: 300 * time.Millisecond, KeepaliveInterval: 10 * time.Millisecond})
	if err := waitDead(t, c); !errors.Is(err, ErrDriverTimeout) {
		t.Fatalf("stale heartbeat: %v, want ErrDriverTimeout", err)
	}
	if sentClientClose(d) {
		t.Fatal("CLIENT_CLOSE written to a driver whose heartbeat stopped")
	}
}

// A subscription closed because the client died says why: a poll in its image's
// OnUnavailable handler, run as the client stops, gets the cause, not a bare ErrClosed.
func TestResourcesClosedByADeadClientCarryTheCause(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	polled := make(chan error, 1)
	subscribeWithAnImage(t, d, c, ImageHandlers{OnUnavailable: func(img *Image) {
		_, err := img.Subscription().Poll(func([]byte, Header) {}, 1)
		polled <- err
	}})
	d.send(command.ResponseOnClientTimeout, command.ClientTimeout{ClientID: c.ClientID()}.AppendTo(nil))
	select {
	case err := <-polled:
		if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrClientTimeout) {
			t.Fatalf("poll as the client died of its timeout: %v; want ErrClosed with ErrClientTimeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the image was not reported unavailable as the client died")
	}
}

// A client that falls a whole buffer behind the driver's broadcasts has lost messages it
// cannot get back: that is fatal, never silently skipped.
func TestLappedBroadcastIsFatal(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{IdleInterval: time.Hour, KeepaliveInterval: time.Hour})
	filler := make([]byte, 256)
	for range 4 * fakeBroadcastCapacity / len(filler) {
		d.send(command.ResponseOnOperationSuccess, filler)
	}
	// Any request wakes the conductor, which then reads the lapped buffer.
	go func() { _, _ = c.AddSubscription(context.Background(), "aeron:ipc", 1, ImageHandlers{}) }()
	if err := waitDead(t, c); !errors.Is(err, broadcast.ErrLapped) {
		t.Fatalf("lapped broadcast: client error %v, want broadcast.ErrLapped", err)
	}
}

// The client refreshes its heartbeat counter once the driver has made it.
func TestHeartbeatCounterIsRefreshed(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{KeepaliveInterval: 10 * time.Millisecond})
	const id = 0 // the driver allocates counter ids in order; scans stop at the first unused one
	key := binary.LittleEndian.AppendUint64(nil, uint64(c.ClientID()))
	d.allocateCounter(id, counters.TypeClientHeartbeat, key)
	values, err := c.counters.Value(id)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	waitFor(t, func() bool { d.beat(time.Now()); return values.Load() >= before })
}

// The driver frees the heartbeat counter of a client it timed out, and may give its id to
// another counter: a client that finds its counter freed or taken has been timed out (the
// ON_CLIENT_TIMEOUT may not have reached it), holds nothing at the driver any more, and
// ends with ErrClientTimeout (Java's ClientConductor.checkLiveness ends the client too).
func TestAHeartbeatCounterFreedOrReusedIsAClientTimeout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(d *fakeDriver, id counters.CounterID, clientID int64)
	}{
		{"freed", func(d *fakeDriver, id counters.CounterID, _ int64) { d.freeCounter(id) }},
		{"reused by another client", func(d *fakeDriver, id counters.CounterID, clientID int64) {
			d.freeCounter(id)
			d.allocateCounter(id, counters.TypeClientHeartbeat, binary.LittleEndian.AppendUint64(nil, uint64(clientID+1)))
		}},
		{"reused as another type", func(d *fakeDriver, id counters.CounterID, clientID int64) {
			d.freeCounter(id)
			d.allocateCounter(id, counters.TypeSubscriberPosition, binary.LittleEndian.AppendUint64(nil, uint64(clientID)))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newFakeDriver(t)
			c := d.client(Options{KeepaliveInterval: 10 * time.Millisecond})
			const id = 0
			d.allocateCounter(id, counters.TypeClientHeartbeat, binary.LittleEndian.AppendUint64(nil, uint64(c.ClientID())))
			values, err := c.counters.Value(id)
			if err != nil {
				t.Fatal(err)
			}
			before := time.Now().UnixMilli()
			waitFor(t, func() bool { return values.Load() >= before }) // the client found its counter
			tc.change(d, id, c.ClientID())
			if err := waitDead(t, c); !errors.Is(err, ErrClientTimeout) {
				t.Fatalf("heartbeat counter %s: client error %v, want ErrClientTimeout", tc.name, err)
			}
		})
	}
}

// waitFor is this package's eventually-helper (package aeron imports nothing of ferry, its
// tests included): it polls cond every millisecond and fails the test if it does not hold
// within 5 s.
func waitFor(t testing.TB, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// A command timed out whose caller gave up as the timeout's answer came (its context ended:
// the answer stays unread in its reply channel) is still awaited, in case the driver answers
// late. The client's end must not give it a second answer: that send would wait for ever,
// Close would not return, and a client ending on a failure would never say it is dead.
func TestTheEndOfAClientDoesNotWaitOnACommandThatTimedOut(t *testing.T) {
	d := newFakeDriver(t)
	d.keepBeating()
	c := d.client(Options{DriverTimeout: 100 * time.Millisecond, KeepaliveInterval: time.Hour})
	reply := make(chan answer, 1)
	req := &addSubscription{channel: "aeron:ipc", streamID: 1}
	req.setReply(reply)
	c.requests <- req
	waitFor(t, func() bool { return len(reply) == 1 }) // timed out: the answer waits unread
	c.send(&abandon{reply: reply})                     // the caller took its context's end instead
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		<-reply // the timeout's answer, taken now so that the client ends and the test with it
		t.Fatal("Close did not return: the client's end waits to answer a command that timed out")
	}
	select {
	case <-c.Dead():
	default:
		t.Fatal("closed, the client does not say it is dead")
	}
}

// A caller that gives up just after the driver answered leaves the resource in its reply
// channel; the conductor must release it, or an unpolled subscription would hold back its
// publishers for good.
func TestAnswerNobodyTookIsReleased(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	reply := make(chan answer, 1)
	req := &addSubscription{channel: "aeron:ipc", streamID: 1}
	req.setReply(reply)
	c.requests <- req
	cmd := d.awaitCommand(command.CommandAddSubscription)
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: -1}.AppendTo(nil))
	waitFor(t, func() bool { return len(reply) == 1 })
	c.send(&abandon{reply: reply}) // the caller's context ended as the answer arrived
	if got := d.awaitCommand(command.CommandRemoveSubscription); got.clientID != c.ClientID() {
		t.Fatalf("remove from client %d, want %d", got.clientID, c.ClientID())
	}
}

// A caller that gives up before the driver answers leaves a subscription the driver makes
// anyway: when its SUBSCRIPTION_READY comes, the conductor removes it from the driver, or
// an unpolled subscription would hold back its publishers for good.
func TestASubscriptionAnsweredAfterItsCallerGaveUpIsRemoved(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.AddSubscription(ctx, "aeron:ipc", 7, ImageHandlers{})
		done <- err
	}()
	add := d.awaitCommand(command.CommandAddSubscription)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("AddSubscription after its context was cancelled = %v, want context.Canceled", err)
	}
	// The caller queued its abandon before it returned; the barrier's request, queued
	// after it, is served after it: the answer below comes to an abandoned command.
	if err := d.barrier(c); err != nil {
		t.Fatal(err)
	}
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: add.correlationID, ChannelStatusCounterID: -1}.AppendTo(nil))
	if got := d.awaitCommand(command.CommandRemoveSubscription); got.registrationID != add.correlationID || got.clientID != c.ClientID() {
		t.Fatalf("REMOVE_SUBSCRIPTION of registration %d by client %d; want %d by %d", got.registrationID, got.clientID, add.correlationID, c.ClientID())
	}
}

// A publication the driver made but the client cannot set up (its log does not map) fails
// its caller, and the driver is told to remove it rather than keep it, and its session,
// until the client closes.
func TestAPublicationThatCannotBeSetUpIsRemovedFromTheDriver(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	failed := make(chan error, 1)
	go func() {
		_, err := c.AddExclusivePublication(context.Background(), "aeron:ipc", 7)
		failed <- err
	}()
	cmd := d.awaitCommand(command.CommandAddExclusivePublication)
	d.send(command.ResponseOnExclusivePublicationReady, command.PublicationBuffersReady{CorrelationID: cmd.correlationID, RegistrationID: cmd.correlationID,
		SessionID: 5, StreamID: 7, PublicationLimitCounterID: 1, ChannelStatusCounterID: -1, LogFileName: filepath.Join(t.TempDir(), "no-such.logbuffer")}.AppendTo(nil))
	if err := <-failed; err == nil {
		t.Fatal("a publication whose log does not exist was set up")
	}
	if got := d.awaitCommand(command.CommandRemovePublication); got.registrationID != cmd.correlationID {
		t.Fatalf("removed publication %d, want %d", got.registrationID, cmd.correlationID)
	}
}

// Closing a subscription tells its handler every image left, as an unavailable image
// would; and a closed image answers Position and IsEndOfStream after its log is unmapped.
func TestClosingASubscriptionReportsItsImagesAndLeavesThemSafe(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{ResourceLinger: time.Millisecond})
	left := make(chan *Image, 1)
	sub := subscribeWithAnImage(t, d, c, ImageHandlers{OnUnavailable: func(img *Image) { left <- img }})
	img := sub.Images()[0]
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-left:
		if got != img {
			t.Fatal("the handler was told of another image")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the subscription did not report its image as unavailable")
	}
	// Let the 1 ms linger pass and the log be unmapped: these must not touch it.
	waitFor(t, func() bool { return !isMapped(t, img.logPath) })
	if img.Position() != 0 || img.IsEndOfStream() {
		t.Errorf("closed image: position %d, end of stream %v; want 0, false", img.Position(), img.IsEndOfStream())
	}
	if _, err := sub.Poll(func([]byte, Header) {}, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("poll of a closed subscription = %v, want ErrClosed", err)
	}
}

// isMapped reports whether this process maps path (/proc/self/maps; a mapping of a file the
// driver deleted shows as "path (deleted)").
func isMapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Contains(string(maps), " "+path)
}

// subscribeWithAnImage adds a subscription to IPC stream 7 with handlers, as the fake
// driver answers it, and gives it one image (session 5); it returns once connected.
func subscribeWithAnImage(t *testing.T, d *fakeDriver, c *Client, handlers ImageHandlers) *Subscription {
	t.Helper()
	done := make(chan *Subscription, 1)
	go func() {
		s, err := c.AddSubscription(context.Background(), "aeron:ipc", 7, handlers)
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	cmd := d.awaitCommand(command.CommandAddSubscription)
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: -1}.AppendTo(nil))
	sub := <-done
	d.allocateCounter(3, counters.TypeSubscriberPosition, nil)
	d.send(command.ResponseOnAvailableImage, command.ImageBuffersReady{CorrelationID: 99, SessionID: 5, StreamID: 7,
		SubscriptionRegistrationID: sub.RegistrationID(), SubscriberPositionCounterID: 3, LogFileName: newFakeLog(t), SourceIdentity: "aeron:ipc"}.AppendTo(nil))
	waitFor(t, sub.IsConnected)
	return sub
}

// The driver broadcasts a channel endpoint error (naming a channel-status counter) to every
// client: a client reports it only for its own publication or subscription on that counter,
// naming the channel, as Java's ClientConductor.onChannelEndpointError does; another
// client's endpoint, and the null counter id, are not its errors.
func TestAChannelEndpointErrorIsReportedOnlyForTheClientsOwnEndpoint(t *testing.T) {
	d := newFakeDriver(t)
	var (
		mu       sync.Mutex
		reported []error
	)
	c := d.client(Options{OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		reported = append(reported, err)
	}})
	done := make(chan error, 1)
	go func() {
		_, err := c.AddSubscription(context.Background(), "aeron:udp?endpoint=127.0.0.1:40456", 7, ImageHandlers{})
		done <- err
	}()
	cmd := d.awaitCommand(command.CommandAddSubscription)
	d.send(command.ResponseOnSubscriptionReady, command.SubscriptionReady{CorrelationID: cmd.correlationID, ChannelStatusCounterID: 42}.AppendTo(nil))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{12345, -1, 42} {
		d.send(command.ResponseOnError, command.ErrorResponse{OffendingCorrelationID: id,
			Code: command.ErrorCodeChannelEndpointError, Message: fmt.Sprintf("endpoint of counter %d failed", id)}.AppendTo(nil))
	}
	if err := d.barrier(c); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 || !errors.Is(reported[0], ErrChannelEndpoint) ||
		!strings.Contains(reported[0].Error(), `subscription "aeron:udp?endpoint=127.0.0.1:40456" stream 7`) ||
		!strings.Contains(reported[0].Error(), "endpoint of counter 42 failed") {
		t.Fatalf("reported %v; want the error of counter 42 only, naming the subscription", reported)
	}
}

// The client does not wait for the driver's answer to a remove (the resource is closed on
// its side already), but a refusal is its error all the same: it reaches OnError as a
// *DriverError naming the resource, once. An answered remove is forgotten.
func TestADriverErrorForARemoveReachesOnError(t *testing.T) {
	d := newFakeDriver(t)
	reported := make(chan error, 8)
	c := d.client(Options{OnError: func(err error) { reported <- err }})
	refused := d.subscribe(c, "aeron:ipc", -1)
	if err := refused.Close(); err != nil {
		t.Fatal(err)
	}
	remove := d.awaitCommand(command.CommandRemoveSubscription)
	refusal := command.ErrorResponse{OffendingCorrelationID: remove.correlationID, Code: command.ErrorCodeUnknownSubscription,
		Message: fmt.Sprintf("unknown subscription: %d", remove.registrationID)}.AppendTo(nil)
	d.send(command.ResponseOnError, refusal)
	select {
	case err := <-reported:
		var de *DriverError
		if !errors.As(err, &de) || de.Name != "UNKNOWN_SUBSCRIPTION" || !strings.Contains(de.Command, fmt.Sprintf("remove subscription \"aeron:ipc\" stream 7 (registration id %d)", refused.RegistrationID())) {
			t.Fatalf("OnError got %v; want a *DriverError UNKNOWN_SUBSCRIPTION naming the subscription removed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the driver's error for REMOVE_SUBSCRIPTION did not reach OnError within 5 s")
	}
	pub := d.publish(c)
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	remove = d.awaitCommand(command.CommandRemovePublication)
	d.send(command.ResponseOnError, command.ErrorResponse{OffendingCorrelationID: remove.correlationID, Code: command.ErrorCodeUnknownPublication,
		Message: fmt.Sprintf("unknown publication: %d", remove.registrationID)}.AppendTo(nil))
	select {
	case err := <-reported:
		var de *DriverError
		if !errors.As(err, &de) || de.Name != "UNKNOWN_PUBLICATION" || !strings.Contains(de.Command, fmt.Sprintf("remove publication \"aeron:ipc\" stream 7 (registration id %d)", pub.RegistrationID())) {
			t.Fatalf("OnError got %v; want a *DriverError UNKNOWN_PUBLICATION naming the publication removed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the driver's error for REMOVE_PUBLICATION did not reach OnError within 5 s")
	}

	// Answered, a remove is forgotten: a second error for the same id (a driver's repeat),
	// or an error for a remove that succeeded, is not reported.
	answered := d.subscribe(c, "aeron:ipc", -1)
	if err := answered.Close(); err != nil {
		t.Fatal(err)
	}
	remove = d.awaitCommand(command.CommandRemoveSubscription)
	d.send(command.ResponseOnOperationSuccess, command.OperationSucceeded{CorrelationID: remove.correlationID}.AppendTo(nil))
	d.send(command.ResponseOnError, command.ErrorResponse{OffendingCorrelationID: remove.correlationID, Code: command.ErrorCodeUnknownSubscription, Message: "after success"}.AppendTo(nil))
	d.send(command.ResponseOnError, refusal)
	if err := d.barrier(c); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-reported:
		t.Fatalf("OnError got %v for a remove already answered", err)
	default:
	}
}
