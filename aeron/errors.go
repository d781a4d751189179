package aeron

import (
	"errors"
	"fmt"
)

// Errors a client returns. Test them with errors.Is.
var (
	// ErrDriverTimeout means the media driver stopped answering: its heartbeat in cnc.dat
	// is older than the driver timeout (or it announced its shutdown), or a command got no
	// answer within it. The client is unusable from then on; connect a new one once a
	// driver runs again.
	ErrDriverTimeout = errors.New("aeron: media driver timeout")
	// ErrClientTimeout means the driver timed this client out (its heartbeat was not
	// refreshed within the client liveness timeout) and released its resources.
	ErrClientTimeout = errors.New("aeron: the media driver timed this client out")
	// ErrClientClosed is returned by calls on a client after [Client.Close].
	ErrClientClosed = errors.New("aeron: client closed")
	// ErrDriver is wrapped by every error the driver answered a command with; errors.As
	// with *DriverError gives its code and message.
	ErrDriver = errors.New("aeron: media driver refused the command")
	// ErrChannelEndpoint means the media driver could not open a channel's endpoint (a UDP
	// address already in use, or not local): the publication or subscription on it stays
	// open but sends or receives nothing, ever. It is returned by
	// [Subscription.Err] and [ExclusivePublication.Err] and passed to [Options.OnError].
	// Close the resource and add it again once the cause is fixed.
	ErrChannelEndpoint = errors.New("aeron: channel endpoint failed")
	// ErrReentrant is returned by a call that waits for the client's conductor
	// ([Client.Close], [Client.AddSubscription], [Client.AddExclusivePublication],
	// [Subscription.Close], [ExclusivePublication.Close]) when it is made from a handler
	// the conductor runs ([ImageHandlers], [Options.OnError]): it would wait for itself
	// for ever. The call did nothing; make it from another goroutine (go sub.Close()).
	ErrReentrant = errors.New("aeron: call from an image handler or OnError refused: it would wait for the conductor running that handler; make it from another goroutine")
)

// Offer results that are not a position. They are sentinels, so an Offer on the hot path
// allocates nothing; all but ErrClosed and ErrMaxPositionExceeded are worth a retry.
var (
	// ErrNotConnected: no subscriber is connected to the publication.
	ErrNotConnected = errors.New("aeron: publication not connected")
	// ErrBackPressured: the publication has reached its limit; subscribers must catch up.
	ErrBackPressured = errors.New("aeron: publication back-pressured")
	// ErrAdminAction: the publication moved to its next term; offer again at once.
	ErrAdminAction = errors.New("aeron: publication admin action (term rotation); retry")
	// ErrClosed: the publication or image is closed.
	ErrClosed = errors.New("aeron: closed")
	// ErrMaxPositionExceeded: the publication reached the largest position its term
	// length allows; it can take no more messages.
	ErrMaxPositionExceeded = errors.New("aeron: publication reached its maximum position")
	// ErrMessageTooLong: the message exceeds the publication's maximum message length.
	ErrMessageTooLong = errors.New("aeron: message too long")
)

// DriverError is the driver's answer to a command it refused.
type DriverError struct {
	Code    int32  // Aeron's ErrorCode (e.g. 1 INVALID_CHANNEL)
	Name    string // the code's name
	Message string // the driver's message
	Command string // what the client asked for
}

func (e *DriverError) Error() string {
	return fmt.Sprintf("aeron: %s: driver error %s (%d): %s", e.Command, e.Name, e.Code, e.Message)
}

// Unwrap makes errors.Is(err, ErrDriver) true.
func (e *DriverError) Unwrap() error { return ErrDriver }
