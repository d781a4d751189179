package aeron

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/command"
)

// endpointError broadcasts a CHANNEL_ENDPOINT_ERROR for channel status counter id.
func (d *fakeDriver) endpointError(id int64, message string) {
	d.t.Helper()
	d.send(command.ResponseOnError, command.ErrorResponse{OffendingCorrelationID: id,
		Code: command.ErrorCodeChannelEndpointError, Message: message}.AppendTo(nil))
}

// Under the driver's default dedicated threading, a UDP endpoint that fails to bind is
// reported after the driver answered the subscription (or publication): the resource stays
// open and idle, so the error must stay on it, where a poll loop can see it — not only in
// OnError, a log line. Another resource, on another channel, is not touched.
func TestAChannelEndpointErrorAfterTheResourceIsReadyIsItsError(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	failing := d.subscribe(c, "aeron:udp?endpoint=127.0.0.1:40456", 5)
	other := d.subscribe(c, "aeron:udp?endpoint=127.0.0.1:40457", 6)
	pubDone := make(chan *ExclusivePublication, 1)
	go func() {
		p, err := c.AddExclusivePublication(context.Background(), "aeron:udp?endpoint=127.0.0.1:40458", 7)
		if err != nil {
			t.Error(err)
		}
		pubDone <- p
	}()
	cmd := d.awaitCommand(command.CommandAddExclusivePublication)
	d.send(command.ResponseOnExclusivePublicationReady, command.PublicationBuffersReady{CorrelationID: cmd.correlationID, RegistrationID: cmd.correlationID,
		SessionID: 5, StreamID: 7, PublicationLimitCounterID: 1, ChannelStatusCounterID: 8, LogFileName: newFakeLog(t)}.AppendTo(nil))
	pub := <-pubDone
	if pub == nil {
		t.FailNow()
	}
	if failing.Err() != nil || other.Err() != nil || pub.Err() != nil {
		t.Fatalf("errors before any endpoint failed: %v, %v, %v", failing.Err(), other.Err(), pub.Err())
	}

	d.endpointError(5, "java.net.BindException: Address already in use")
	d.endpointError(8, "java.net.SocketException: Network is unreachable")
	if err := d.barrier(c); err != nil {
		t.Fatal(err)
	}
	err := failing.Err()
	if !errors.Is(err, ErrChannelEndpoint) || !strings.Contains(err.Error(), "Address already in use") || !strings.Contains(err.Error(), "127.0.0.1:40456") {
		t.Errorf("subscription whose endpoint failed: Err() = %v; want ErrChannelEndpoint with the driver's message and the channel", err)
	}
	if err := pub.Err(); !errors.Is(err, ErrChannelEndpoint) || !strings.Contains(err.Error(), "Network is unreachable") {
		t.Errorf("publication whose endpoint failed: Err() = %v; want ErrChannelEndpoint with the driver's message", err)
	}
	if err := other.Err(); err != nil {
		t.Errorf("subscription on another endpoint: Err() = %v; want nil", err)
	}
	if failing.IsClosed() {
		t.Error("the failed subscription was closed; closing is its user's (Java leaves it open too)")
	}
}

// A subscription added to a channel whose endpoint failed earlier (for another subscription
// of the client: the driver shares the endpoint, and broadcast its error before this one
// existed) learns it from the channel status counter, as Java's Subscription.channelStatus
// reads it. Once closed, the counter (maybe reused) is not read.
func TestASubscriptionWhoseChannelStatusReadsErroredReportsIt(t *testing.T) {
	d := newFakeDriver(t)
	c := d.client(Options{})
	const active = 1
	d.setCounterValue(5, active)
	sub := d.subscribe(c, "aeron:udp?endpoint=127.0.0.1:40456", 5)
	if err := sub.Err(); err != nil {
		t.Fatalf("channel status active: Err() = %v; want nil", err)
	}
	d.setCounterValue(5, channelErrored)
	if err := sub.Err(); !errors.Is(err, ErrChannelEndpoint) || !strings.Contains(err.Error(), "ERRORED") {
		t.Fatalf("channel status errored: Err() = %v; want ErrChannelEndpoint saying the status", err)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sub.Err(); err != nil {
		t.Fatalf("closed: Err() = %v; want nil (its counter is not read)", err)
	}
}
