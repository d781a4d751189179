package aeron

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ferry-bridge/ferry/aeron/internal/counters"
	"github.com/ferry-bridge/ferry/aeron/internal/logbuffer"
)

// ExclusivePublication appends messages to one session of a stream: the only writer of its
// log buffer. Offer and Position belong to the one goroutine that offers; Close and the
// other accessors are safe for concurrent use.
type ExclusivePublication struct {
	client         *Client
	channel        string
	streamID       int32
	sessionID      int32
	registrationID int64
	// endpoint is the channel's status counter (the driver names it in a channel endpoint
	// error) and the error kept.
	endpoint *channelEndpoint
	logPath  string
	log      *logbuffer.Log
	appender *logbuffer.ExclusiveAppender // touched only by the offering goroutine
	limit    counters.Value               // pub-lmt, maintained by the driver
	// closed is set by Close or by the conductor when the client ends; Offer checks it
	// first, and the mapping outlives it by the resource linger time.
	closed atomic.Bool
}

// Offer appends payload as one message (fragmented if it exceeds the MTU's payload) and
// returns the stream position after it. When it cannot, it returns an error:
// [ErrBackPressured], [ErrNotConnected] and [ErrAdminAction] are worth a retry;
// [ErrClosed], [ErrMaxPositionExceeded] and [ErrMessageTooLong] are not.
func (p *ExclusivePublication) Offer(payload []byte) (int64, error) {
	if p.closed.Load() {
		return 0, p.client.closedErr()
	}
	// The driver's ordered store of the limit happens-before this load; a stale value only
	// makes the publication look back-pressured a little longer.
	flow := logbuffer.Flow{Limit: p.limit.Load(), Connected: p.log.IsConnected()}
	res, err := p.appender.Offer(flow, payload)
	if err != nil {
		if errors.Is(err, logbuffer.ErrMessageTooLong) {
			return 0, errors.Join(ErrMessageTooLong, err)
		}
		return 0, err
	}
	if pos, ok := res.Position(); ok {
		return pos, nil
	}
	switch res {
	case logbuffer.NotConnected:
		return 0, ErrNotConnected
	case logbuffer.BackPressured:
		return 0, ErrBackPressured
	case logbuffer.AdminAction:
		return 0, ErrAdminAction
	case logbuffer.MaxPositionExceeded:
		return 0, ErrMaxPositionExceeded
	default:
		return 0, ErrClosed
	}
}

// Position is the stream position after the last message offered. Call it from the
// offering goroutine.
func (p *ExclusivePublication) Position() int64 { return p.appender.Position() }

// IsConnected reports whether a subscriber is connected (as the driver last said).
func (p *ExclusivePublication) IsConnected() bool { return !p.closed.Load() && p.log.IsConnected() }

// Channel, StreamID, SessionID and RegistrationID identify the publication.
func (p *ExclusivePublication) Channel() string { return p.channel }

// StreamID is the publication's stream id.
func (p *ExclusivePublication) StreamID() int32 { return p.streamID }

// SessionID is the publication's session id: the image's session id at its subscribers,
// and the session id of an archive recording of it.
func (p *ExclusivePublication) SessionID() int32 { return p.sessionID }

// RegistrationID is the driver's id for the publication.
func (p *ExclusivePublication) RegistrationID() int64 { return p.registrationID }

// MaxPayloadLength is the largest message that fits in one frame.
func (p *ExclusivePublication) MaxPayloadLength() int { return p.appender.MaxPayloadLength() }

// MaxMessageLength is the largest message Offer accepts.
func (p *ExclusivePublication) MaxMessageLength() int { return p.appender.MaxMessageLength() }

// TermLength is the length of each of the publication's three terms.
func (p *ExclusivePublication) TermLength() int { return p.log.TermLength() }

// IsClosed reports whether the publication was closed, by Close or with its client.
func (p *ExclusivePublication) IsClosed() bool { return p.closed.Load() }

// Err returns an error wrapping [ErrChannelEndpoint] once the media driver could not open
// the publication's channel endpoint, or nil: its messages go nowhere, and only a new
// publication (once the cause is fixed) sends again. As [Subscription.Err]. Safe for
// concurrent use.
func (p *ExclusivePublication) Err() error {
	return p.endpoint.err(p.closed.Load(), func() string {
		return fmt.Sprintf("publication %q stream %d", p.channel, p.streamID)
	})
}

// Close removes the publication from the driver. Offers after it return [ErrClosed].
// It is idempotent and returns once the conductor has released the publication; from an
// image handler or OnError, which the conductor runs, it returns [ErrReentrant] and does
// nothing (close it from another goroutine).
func (p *ExclusivePublication) Close() error {
	if p.closed.Load() {
		return nil
	}
	if p.client.reentrant() {
		return ErrReentrant
	}
	done := make(chan struct{})
	p.client.send(&release{resource: p, done: done})
	select {
	case <-done:
	case <-p.client.dead:
	}
	return nil
}
