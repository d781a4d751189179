package aeron

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/broadcast"
	"github.com/ferry-bridge/ferry/aeron/internal/cnc"
	"github.com/ferry-bridge/ferry/aeron/internal/counters"
	"github.com/ferry-bridge/ferry/aeron/internal/ringbuffer"
)

// requestQueueLength bounds the requests waiting for the conductor. A caller whose request
// does not fit waits (bounded by its context): requests are rare control operations.
const requestQueueLength = 64

// Client is a connection to a media driver. It is safe for concurrent use.
type Client struct {
	opts     Options
	cnc      *cnc.File
	toDriver *ringbuffer.ManyToOne
	counters *counters.Reader
	clientID int64

	requests chan request  // to the conductor; bounded by requestQueueLength
	stopping chan struct{} // closed by Close
	dead     chan struct{} // closed when the client stops serving calls (Close or a fatal error)
	done     chan struct{} // closed when the conductor has released everything and exited
	stopOnce sync.Once
	// inHandler counts the user's handlers the conductor is running (0 or 1: a handler's
	// calls back into the client are refused), so that a call checks its stack for
	// re-entry only then (see reentrant.go).
	inHandler atomic.Int32
	// err is the reason the client is dead; written once by the conductor before it closes
	// dead, so a reader that saw dead closed sees it (channel close happens-before receive).
	err atomic.Pointer[error]
}

// Connect maps the driver's CnC file in opts.Dir, waiting up to the driver timeout (or ctx)
// for a live driver, and starts the client's conductor.
func Connect(ctx context.Context, opts Options) (*Client, error) {
	opts = opts.withDefaults()
	file, err := cnc.Wait(ctx, opts.Dir, cnc.WaitConfig{
		Timeout:       opts.DriverTimeout,
		PollInterval:  16 * time.Millisecond,
		DriverTimeout: opts.DriverTimeout,
	})
	if err != nil {
		return nil, fmt.Errorf("aeron: connect to the media driver in %s: %w", opts.Dir, err)
	}
	c, err := newClient(opts, file)
	if err != nil {
		return nil, errors.Join(err, file.Close())
	}
	return c, nil
}

func newClient(opts Options, file *cnc.File) (*Client, error) {
	ctrs, err := counters.NewReader(file.Section(cnc.CountersMetadata), file.Section(cnc.CountersValues))
	if err != nil {
		return nil, fmt.Errorf("aeron: counters in %s: %w", file.Path(), err)
	}
	rx, err := broadcast.NewReceiver(file.Section(cnc.ToClients))
	if err != nil {
		return nil, fmt.Errorf("aeron: to-clients buffer in %s: %w", file.Path(), err)
	}
	toDriver := file.ToDriver()
	c := &Client{
		opts:     opts,
		cnc:      file,
		toDriver: toDriver,
		counters: ctrs,
		// The client id comes from the same counter as every correlation id, so it can
		// never collide with one (Aeron.Context.conclude).
		clientID: toDriver.NextCorrelationID(),
		requests: make(chan request, requestQueueLength),
		stopping: make(chan struct{}),
		dead:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	d := newConductor(c, broadcast.NewCopyReceiver(rx))
	go d.run()
	return c, nil
}

// ClientID is the id the driver knows this client by.
func (c *Client) ClientID() int64 { return c.clientID }

// Dir is the media driver's directory this client is connected to.
func (c *Client) Dir() string { return c.opts.Dir }

// Err returns why the client stopped serving calls, or nil while it serves them.
func (c *Client) Err() error {
	if p := c.err.Load(); p != nil {
		return *p
	}
	return nil
}

// Dead is closed when the client stops serving calls: after Close, or when the driver
// died or timed the client out ([Client.Err] says which).
func (c *Client) Dead() <-chan struct{} { return c.dead }

// Done is closed once the client has released every mapping and its conductor has exited.
func (c *Client) Done() <-chan struct{} { return c.done }

// Close tells the driver the client is leaving, closes every publication, subscription and
// image, unmaps the log buffers and the CnC file, and returns once the conductor has exited.
// Offers, and polls on other goroutines, must have stopped before Close is called, and
// every archive client built on this one must be closed first: Close unmaps at once,
// without a linger. A fragment handler may call it (its poll stops before the next frame;
// its payload is gone once Close returns); from an image handler or OnError, which the
// conductor runs, it returns [ErrReentrant] and does nothing (call it from another
// goroutine). Close is idempotent.
func (c *Client) Close() error {
	if c.reentrant() {
		return ErrReentrant
	}
	c.stopOnce.Do(func() { close(c.stopping) })
	<-c.done
	if err := c.Err(); err != nil && !errors.Is(err, ErrClientClosed) {
		return err
	}
	return nil
}

// AddExclusivePublication asks the driver for an exclusive publication (one writer, no
// other publisher on its session) on channel and stream, and waits for it.
func (c *Client) AddExclusivePublication(ctx context.Context, channel string, streamID int32) (*ExclusivePublication, error) {
	v, err := c.call(ctx, &addPublication{channel: channel, streamID: streamID})
	if err != nil {
		return nil, err
	}
	return v.(*ExclusivePublication), nil
}

// ImageHandlers are told of images joining and leaving a subscription. They run on the
// conductor goroutine and must not block; a call that waits for the conductor
// ([Client.Close], the Add calls, [Subscription.Close], [ExclusivePublication.Close]) made
// from one returns [ErrReentrant]. Polls and offers are fine.
type ImageHandlers struct {
	OnAvailable   func(*Image)
	OnUnavailable func(*Image)
}

// AddSubscription asks the driver for a subscription to channel and stream, and waits for
// it. Images (one per publisher session) join it as the driver finds them.
func (c *Client) AddSubscription(ctx context.Context, channel string, streamID int32, handlers ImageHandlers) (*Subscription, error) {
	v, err := c.call(ctx, &addSubscription{channel: channel, streamID: streamID, handlers: handlers})
	if err != nil {
		return nil, err
	}
	return v.(*Subscription), nil
}

// call hands req to the conductor and waits for its answer, the client's death, or ctx.
// If ctx ends first, the conductor is told to release the resource if it arrives later.
// From a handler the conductor runs, it returns ErrReentrant at once.
func (c *Client) call(ctx context.Context, req awaitable) (any, error) {
	if c.reentrant() {
		return nil, ErrReentrant
	}
	reply := make(chan answer, 1)
	req.setReply(reply)
	select {
	case c.requests <- req:
	case <-c.dead:
		return nil, c.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case a := <-reply:
		return a.value, a.err
	case <-c.dead:
		return nil, c.Err()
	case <-ctx.Done():
		c.send(&abandon{reply: reply})
		return nil, ctx.Err()
	}
}

// send queues a request that needs no answer; it is dropped if the client is dead.
func (c *Client) send(req request) {
	select {
	case c.requests <- req:
	case <-c.dead:
	}
}

// closedErr is what a closed publication or subscription returns: [ErrClosed], with the
// client's cause if the client died.
func (c *Client) closedErr() error {
	if err := c.Err(); err != nil && !errors.Is(err, ErrClientClosed) {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return ErrClosed
}
