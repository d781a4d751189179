package aeron

import (
	"fmt"
	"slices"
	"sync/atomic"
)

// Subscription receives a stream on a channel: one [Image] per publisher session the
// driver connects it to. Poll is not safe for concurrent use; everything else is.
type Subscription struct {
	client         *Client
	registrationID int64
	channel        string
	streamID       int32
	// endpoint is the channel's status counter (the driver names it in a channel endpoint
	// error) and the error kept. Set up by the conductor before the subscription is handed
	// over.
	endpoint *channelEndpoint
	handlers ImageHandlers
	// images is the current image list. The conductor replaces it, never modifies it: a
	// poller that loaded it reads a consistent list (the atomic store happens-before the
	// load that sees it).
	images     atomic.Pointer[[]*Image]
	closed     atomic.Bool
	roundRobin int // the polling goroutine's own: which image goes first next time
}

func newSubscription(c *Client, registrationID int64, channel string, streamID int32, h ImageHandlers) *Subscription {
	s := &Subscription{client: c, registrationID: registrationID, channel: channel, streamID: streamID, handlers: h}
	s.images.Store(&[]*Image{})
	return s
}

// Poll delivers up to fragmentLimit fragments from the subscription's images, starting
// with a different image each time so that none starves, and returns how many it
// delivered. An error means an image's log buffer is corrupt, or the subscription is closed.
//
// A closed subscription (closed by Close, or with its client) returns an error wrapping
// [ErrClosed] and, if the client died, its cause: a poll loop learns that nothing more will
// come instead of seeing an idle stream.
func (s *Subscription) Poll(handler FragmentHandler, fragmentLimit int) (int, error) {
	if s.closed.Load() {
		return 0, s.client.closedErr()
	}
	images := *s.images.Load()
	switch len(images) {
	case 0:
		return 0, nil
	case 1: // the common case, without the round robin's divisions
		return images[0].Poll(handler, fragmentLimit)
	}
	s.roundRobin = (s.roundRobin + 1) % len(images)
	fragments := 0
	for i := range images {
		if fragments >= fragmentLimit {
			break
		}
		n, err := images[(s.roundRobin+i)%len(images)].Poll(handler, fragmentLimit-fragments)
		fragments += n
		if err != nil {
			return fragments, err
		}
	}
	return fragments, nil
}

// Images returns the subscription's current images. The slice is shared: do not modify it.
func (s *Subscription) Images() []*Image { return *s.images.Load() }

// ImageBySessionID returns the image of a publisher session, or nil.
func (s *Subscription) ImageBySessionID(sessionID int32) *Image {
	for _, img := range *s.images.Load() {
		if img.sessionID == sessionID {
			return img
		}
	}
	return nil
}

// IsConnected reports whether the subscription has at least one image.
func (s *Subscription) IsConnected() bool { return len(*s.images.Load()) > 0 }

// Channel is the subscription's channel.
func (s *Subscription) Channel() string { return s.channel }

// StreamID is the subscription's stream id.
func (s *Subscription) StreamID() int32 { return s.streamID }

// RegistrationID is the driver's id for the subscription.
func (s *Subscription) RegistrationID() int64 { return s.registrationID }

// IsClosed reports whether the subscription was closed, by Close or with its client.
func (s *Subscription) IsClosed() bool { return s.closed.Load() }

// Err returns an error wrapping [ErrChannelEndpoint] once the media driver could not open
// the subscription's channel endpoint, or nil. Under the driver's default (dedicated)
// threading the receiver binds the UDP socket after the driver answered the subscription,
// so a bind that fails (the address in use, or not local) leaves an open subscription that
// polls as an idle stream and receives nothing, ever: a poll loop must check Err to tell it
// from a quiet one (as a Java poller checks Subscription.channelStatus), then close the
// subscription and add it again. It is set when the driver's error arrives, or when the
// channel status counter reads ERRORED (the endpoint, shared with another subscription of
// the channel, failed earlier). Poll does not return it, as Java's poll does not: on a
// multi-destination subscription (control-mode=manual) one destination that fails reports
// it too, while the others still receive. Safe for concurrent use; it reads a counter, not
// the driver.
func (s *Subscription) Err() error {
	return s.endpoint.err(s.closed.Load(), func() string {
		return fmt.Sprintf("subscription %q stream %d", s.channel, s.streamID)
	})
}

// Close removes the subscription from the driver and closes its images. It is idempotent
// and returns once the conductor has released the subscription; from an image handler or
// OnError, which the conductor runs, it returns [ErrReentrant] and does nothing (close it
// from another goroutine).
func (s *Subscription) Close() error {
	if s.closed.Load() {
		return nil
	}
	if s.client.reentrant() {
		return ErrReentrant
	}
	done := make(chan struct{})
	s.client.send(&release{resource: s, done: done})
	select {
	case <-done:
	case <-s.client.dead:
	}
	return nil
}

// image, addImage, removeImage and closeAll are the conductor's.

func (s *Subscription) image(correlationID int64) *Image {
	for _, img := range *s.images.Load() {
		if img.correlationID == correlationID {
			return img
		}
	}
	return nil
}

func (s *Subscription) addImage(img *Image) {
	next := append(slices.Clone(*s.images.Load()), img)
	s.images.Store(&next)
}

func (s *Subscription) removeImage(correlationID int64) *Image {
	images := *s.images.Load()
	i := slices.IndexFunc(images, func(img *Image) bool { return img.correlationID == correlationID })
	if i < 0 {
		return nil
	}
	next := slices.Delete(slices.Clone(images), i, i+1)
	s.images.Store(&next)
	return images[i]
}

func (s *Subscription) closeAll() []*Image {
	s.closed.Store(true)
	return *s.images.Swap(&[]*Image{})
}
