package aeron

import (
	"math"
	"sync/atomic"

	"github.com/ferry-bridge/ferry/aeron/internal/counters"
	"github.com/ferry-bridge/ferry/aeron/internal/logbuffer"
)

// Image is one publisher session of a subscription's stream, as this subscriber reads it.
// Poll and ControlledPoll are not safe for concurrent use; the accessors are.
type Image struct {
	subscription   *Subscription
	correlationID  int64
	sessionID      int32
	sourceIdentity string
	logPath        string
	log            *logbuffer.Log
	// position is the sub-pos counter: the driver set it to the join position, this
	// image's poller is its only writer from then on, and the driver reads it to free
	// consumed log space and to compute publication limits.
	position     counters.Value
	joinPosition int64
	// closed is set by the conductor when the image becomes unavailable or its
	// subscription or client closes; the log stays mapped for the resource linger time
	// after that (none on Client.Close). A poll loads it before every frame and stops at
	// once: its handler may be what closed the image, or may have outlasted the linger,
	// and the frame after its fragment may be unmapped memory.
	closed atomic.Bool
	// consumed is the position after the last poll. The poller always stores it, even once
	// the image is closed and the counter may no longer be written, so a poll that raced
	// with the close still counts.
	consumed atomic.Int64
	// final and endOfStream are read when the image closes: after that the counter is
	// freed and the log is unmapped once the linger has passed, so neither may be read.
	final       atomic.Int64
	endOfStream atomic.Int64
}

func newImage(sub *Subscription, correlationID int64, sessionID int32, source, logPath string, log *logbuffer.Log, pos counters.Value) *Image {
	img := &Image{
		subscription:   sub,
		correlationID:  correlationID,
		sessionID:      sessionID,
		sourceIdentity: source,
		logPath:        logPath,
		log:            log,
		position:       pos,
		joinPosition:   pos.Load(),
	}
	img.consumed.Store(img.joinPosition)
	return img
}

// Poll delivers up to fragmentLimit fragments that follow the image's position and moves
// the position past everything it consumed (padding included), returning how many
// fragments it delivered. A closed image delivers nothing. An error means the log buffer is
// corrupt; the fragments before the corrupt frame were delivered and consumed.
//
// If handler panics, the panic goes on to the caller; the fragments handler returned from
// are consumed, and the one it panicked on is delivered again by the next poll (Java's
// Image.poll consumes that one too: a fragment is not skipped here).
//
// A poll stops in front of the next frame once the image is closed, as Java's does, so a
// handler may close the image's subscription, or the client, and the poll returns the
// fragments delivered so far.
func (i *Image) Poll(handler FragmentHandler, fragmentLimit int) (int, error) {
	return i.BoundedPoll(handler, math.MaxInt64, fragmentLimit)
}

// BoundedPoll is Poll that reads no fragment beginning at or after limitPosition (a
// fragment that begins before it is read whole): a reader bounds what one poll takes from
// the log in bytes, where the fragment limit bounds it in fragments.
func (i *Image) BoundedPoll(handler FragmentHandler, limitPosition int64, fragmentLimit int) (int, error) {
	if i.closed.Load() {
		return 0, nil
	}
	pos := i.position.Load()
	handled, returned := pos, false
	defer func() {
		if !returned { // handler panicked: what it returned from is consumed
			i.storePosition(pos, handled)
		}
	}()
	n, next, err := i.log.BoundedPoll(pos, min(limitPosition, i.log.MaxPossiblePosition()), fragmentLimit, func(b []byte, h Header) {
		handler(b, h)
		handled = h.Position()
	}, &i.closed)
	returned = true
	i.storePosition(pos, next)
	return n, err
}

// ControlledPoll is Poll with a handler that decides after each fragment what happens next
// (see [Action]). A fragment the handler panics on is not consumed, as with Abort.
func (i *Image) ControlledPoll(handler ControlledFragmentHandler, fragmentLimit int) (int, error) {
	if i.closed.Load() {
		return 0, nil
	}
	pos := i.position.Load()
	committed, handled, returned := pos, pos, false
	defer func() {
		if !returned {
			i.storePosition(committed, handled)
		}
	}()
	n, next, err := i.log.ControlledPoll(pos, fragmentLimit, func(b []byte, h Header) Action {
		a := handler(b, h)
		if a != Abort { // Continue, Commit and Break consume the fragment
			handled = h.Position()
		}
		return a
	}, func(p int64) {
		i.storePosition(committed, p)
		committed = p
	}, &i.closed)
	returned = true
	i.storePosition(committed, next)
	return n, err
}

// storePosition publishes a new subscriber position with a release store: everything this
// goroutine read from the consumed frames happens-before the driver's load that lets the
// publisher overwrite them. It is skipped once the image is closed, because the driver
// frees the counter and may give its id to another.
func (i *Image) storePosition(from, to int64) {
	if to == from {
		return
	}
	i.consumed.Store(to)
	if !i.closed.Load() {
		i.position.Store(to)
	}
}

// Position is the stream position after the last fragment consumed.
func (i *Image) Position() int64 {
	if i.closed.Load() {
		return max(i.final.Load(), i.consumed.Load())
	}
	return i.position.Load()
}

// JoinPosition is the position the image started at when it joined the subscription.
func (i *Image) JoinPosition() int64 { return i.joinPosition }

// IsEndOfStream reports whether the publisher ended the stream and everything up to its
// end has been consumed.
//
// For a closed image it answers from what was read when it closed: its log may be unmapped.
func (i *Image) IsEndOfStream() bool {
	if i.closed.Load() {
		return i.Position() >= i.endOfStream.Load()
	}
	// The log stays mapped for the resource linger after a close that races with this.
	return i.Position() >= i.log.EndOfStreamPosition()
}

// IsClosed reports whether the image is gone (unavailable, or its subscription closed).
func (i *Image) IsClosed() bool { return i.closed.Load() }

// SessionID is the publisher's session id (for an archive replay, the low 32 bits of the
// replay session id).
func (i *Image) SessionID() int32 { return i.sessionID }

// CorrelationID is the driver's id for the image.
func (i *Image) CorrelationID() int64 { return i.correlationID }

// SourceIdentity is "aeron:ipc" for IPC, or the sender's address for UDP.
func (i *Image) SourceIdentity() string { return i.sourceIdentity }

// Subscription is the subscription the image belongs to.
func (i *Image) Subscription() *Subscription { return i.subscription }

// InitialTermID is the publication's initial term id: with the session id and the source,
// it tells the publication apart from another with the same session id.
func (i *Image) InitialTermID() int32 { return i.log.InitialTermID() }

// TermLength is the length of each of the image's three terms.
func (i *Image) TermLength() int { return i.log.TermLength() }

// MaxMessageLength is the largest message the publisher can send on this image's log.
func (i *Image) MaxMessageLength() int { return i.log.MaxMessageLength() }

// markClosed is the conductor's: it keeps the final position and closes the image.
func (i *Image) markClosed() {
	i.final.Store(max(i.position.Load(), i.consumed.Load()))
	i.endOfStream.Store(i.log.EndOfStreamPosition())
	i.closed.Store(true)
}
