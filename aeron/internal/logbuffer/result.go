package logbuffer

import "fmt"

// OfferResult is the outcome of an offer (aeron-protocol.md §6.4): the
// new stream position after the message when positive, otherwise one of
// the negative status codes, which have Aeron's values.
type OfferResult int64

// Offer status codes (Publication.NOT_CONNECTED … MAX_POSITION_EXCEEDED).
const (
	// NotConnected: the publication limit was reached and no subscriber
	// is connected. Retry later or give up.
	NotConnected OfferResult = -1
	// BackPressured: the publication limit was reached; subscribers are
	// connected but behind. Retry later.
	BackPressured OfferResult = -2
	// AdminAction: the offer hit the end of a term; the appender padded
	// it and rotated to the next term. Retry at once.
	AdminAction OfferResult = -3
	// Closed: the appender was closed. Do not retry.
	Closed OfferResult = -4
	// MaxPositionExceeded: the stream would pass its maximum possible
	// position (term length × 2^31). The publication is finished: close
	// it and use a new one.
	MaxPositionExceeded OfferResult = -5
)

// IsPosition reports whether r is a new stream position, i.e. the
// message was appended.
func (r OfferResult) IsPosition() bool { return r > 0 }

// Position returns the stream position after the appended message, and
// whether r is one.
func (r OfferResult) Position() (int64, bool) { return int64(r), r > 0 }

// String returns "position N" or the Aeron name of the status.
func (r OfferResult) String() string {
	switch r {
	case NotConnected:
		return "NOT_CONNECTED"
	case BackPressured:
		return "BACK_PRESSURED"
	case AdminAction:
		return "ADMIN_ACTION"
	case Closed:
		return "CLOSED"
	case MaxPositionExceeded:
		return "MAX_POSITION_EXCEEDED"
	}
	if r > 0 {
		return fmt.Sprintf("position %d", int64(r))
	}
	return fmt.Sprintf("OfferResult(%d)", int64(r))
}

// Flow is the state of the world outside the log that an offer depends
// on. The caller reads both values just before offering, so that an
// appender needs nothing but memory and can be tested in plain memory.
type Flow struct {
	// Limit is the publication limit: the value of the publication's
	// pub-lmt counter, read with an acquire load (it pairs with the
	// driver's release store, made after the driver cleaned the term
	// space below the limit). An offer appends only while the
	// publication's position is below it.
	Limit int64
	// Connected is the log's is-connected flag ([Log.IsConnected]). It
	// only decides between [BackPressured] and [NotConnected] when the
	// limit is reached.
	Connected bool
}
