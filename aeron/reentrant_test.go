package aeron

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/command"
)

// An image handler runs on the conductor goroutine, which a Close waits for: a handler
// that closes its subscription would wait for itself for ever (the client's keepalive
// stopped, the driver timing it out, Dead never closed, the process looking alive). The
// Close is refused with ErrReentrant instead, as Java's ClientConductor.ensureNotReentrant
// refuses it, and the client goes on.
func TestACloseFromAnImageHandlerIsRefused(t *testing.T) {
	d := newFakeDriver(t)
	// Not d.client: its cleanup's Close would hang too, were the handler's Close to hang.
	c, err := newClient(Options{IdleInterval: time.Millisecond, OnError: func(error) {}}.withDefaults(), d.file)
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	sub := subscribeWithAnImage(t, d, c, ImageHandlers{OnUnavailable: func(img *Image) {
		closed <- img.Subscription().Close()
	}})
	d.send(command.ResponseOnUnavailableImage, command.ImageMessage{CorrelationID: 99, SubscriptionRegistrationID: sub.RegistrationID(), StreamID: 7}.AppendTo(nil))
	select {
	case err := <-closed:
		if !errors.Is(err, ErrReentrant) {
			t.Fatalf("Close from an OnUnavailable handler = %v, want ErrReentrant", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Close from an OnUnavailable handler has not returned after 1 s: it waits for the conductor running the handler")
	}
	if err := d.barrier(c); err != nil {
		t.Fatalf("the client after a refused Close: %v", err)
	}
	if err := sub.Close(); err != nil || !sub.IsClosed() {
		t.Fatalf("Close from the test's goroutine = %v, closed %v; want nil, true", err, sub.IsClosed())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}

// Every call that waits for the conductor is refused from a handler the conductor runs:
// both image handlers and OnError.
func TestCallsThatWaitForTheConductorAreRefusedInHandlers(t *testing.T) {
	d := newFakeDriver(t)
	type result struct {
		call string
		err  error
	}
	results := make(chan result, 8)
	var c *Client
	c = d.client(Options{OnError: func(error) {
		results <- result{"Client.Close from OnError", c.Close()}
	}})
	pub := d.publish(c)
	failing := d.subscribe(c, "aeron:udp?endpoint=127.0.0.1:40456", 42)
	subscribeWithAnImage(t, d, c, ImageHandlers{OnAvailable: func(*Image) {
		_, err := c.AddSubscription(context.Background(), "aeron:ipc", 8, ImageHandlers{})
		results <- result{"AddSubscription from OnAvailable", err}
		_, err = c.AddExclusivePublication(context.Background(), "aeron:ipc", 8)
		results <- result{"AddExclusivePublication from OnAvailable", err}
		results <- result{"ExclusivePublication.Close from OnAvailable", pub.Close()}
		results <- result{"Client.Close from OnAvailable", c.Close()}
	}})
	d.endpointError(42, "java.net.BindException: Address already in use") // for OnError
	for range 5 {
		select {
		case r := <-results:
			if !errors.Is(r.err, ErrReentrant) {
				t.Errorf("%s = %v, want ErrReentrant", r.call, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a call from a handler has not returned after 5 s")
		}
	}
	if err := d.barrier(c); err != nil || pub.IsClosed() || failing.IsClosed() {
		t.Fatalf("after the refused calls: client error %v, publication closed %v, subscription closed %v; want nil, false, false",
			err, pub.IsClosed(), failing.IsClosed())
	}
}

// A call from another goroutine while a handler runs is not the handler's: it waits for
// the conductor as usual, and is served once the handler returns. (A flag alone, set while
// a handler runs, would refuse it.)
func TestACallFromAnotherGoroutineDuringAHandlerIsServed(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	other := d.subscribe(c, "aeron:ipc", -1)
	entered, release := make(chan struct{}), make(chan struct{})
	sub := subscribeWithAnImage(t, d, c, ImageHandlers{OnUnavailable: func(*Image) {
		close(entered)
		<-release
	}})
	d.send(command.ResponseOnUnavailableImage, command.ImageMessage{CorrelationID: 99, SubscriptionRegistrationID: sub.RegistrationID(), StreamID: 7}.AppendTo(nil))
	<-entered
	closed := make(chan error, 1)
	go func() { closed <- other.Close() }()
	// Its release request is queued: it passed the reentrancy check while the handler runs.
	waitFor(t, func() bool {
		select {
		case err := <-closed:
			t.Fatalf("Close from another goroutine returned %v while a handler ran; want it to wait for the conductor", err)
		default:
		}
		return len(c.requests) == 1
	})
	close(release)
	select {
	case err := <-closed:
		if err != nil || !other.IsClosed() {
			t.Fatalf("Close from another goroutine during a handler = %v, closed %v; want nil, true", err, other.IsClosed())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close from another goroutine has not returned 5 s after the handler did")
	}
}

// publish adds an exclusive publication to IPC stream 7, as the fake driver answers it.
func (d *fakeDriver) publish(c *Client) *ExclusivePublication {
	d.t.Helper()
	done := make(chan *ExclusivePublication, 1)
	go func() {
		p, err := c.AddExclusivePublication(context.Background(), "aeron:ipc", 7)
		if err != nil {
			d.t.Error(err)
		}
		done <- p
	}()
	cmd := d.awaitCommand(command.CommandAddExclusivePublication)
	d.send(command.ResponseOnExclusivePublicationReady, command.PublicationBuffersReady{CorrelationID: cmd.correlationID, RegistrationID: cmd.correlationID,
		SessionID: 5, StreamID: 7, PublicationLimitCounterID: 1, ChannelStatusCounterID: -1, LogFileName: newFakeLog(d.t)}.AppendTo(nil))
	pub := <-done
	if pub == nil {
		d.t.FailNow()
	}
	return pub
}
