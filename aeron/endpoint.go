package aeron

import (
	"fmt"
	"sync/atomic"

	"github.com/ferry-bridge/ferry/aeron/internal/command"
	"github.com/ferry-bridge/ferry/aeron/internal/counters"
)

// channelErrored is the value of a channel status counter whose endpoint failed (Java's
// ChannelEndpointStatus.ERRORED). The driver stores it before it broadcasts the
// CHANNEL_ENDPOINT_ERROR (UdpChannelTransport.openDatagramChannel in 1.47.3).
const channelErrored = -1

// channelEndpoint is what a publication or subscription knows of its channel's media
// endpoint (the driver's UDP socket, shared by every resource of the client on that
// channel): its status counter, and the error the driver reported on it. The conductor
// sets it up before it hands the resource over, and stores the error; Err reads it on any
// goroutine.
type channelEndpoint struct {
	statusID int32 // command.NullCounterID for IPC
	// status is the channel status counter's value slot; nil when there is none to read
	// (IPC, or an id outside the counters buffer).
	status *counters.Value
	failed atomic.Pointer[error]
}

// newChannelEndpoint returns the endpoint of a resource whose channel status counter is id.
// Like Java's ClientConductor.channelStatus, ids 0 and NullCounterID are not read.
func newChannelEndpoint(ctrs *counters.Reader, id int32) *channelEndpoint {
	e := &channelEndpoint{statusID: id}
	if id != 0 && id != command.NullCounterID {
		if v, err := ctrs.Value(counters.CounterID(id)); err == nil {
			e.status = &v
		}
	}
	return e
}

// fail keeps the driver's error on the endpoint; the first one is kept.
func (e *channelEndpoint) fail(err error) { e.failed.CompareAndSwap(nil, &err) }

// err returns the error kept, or one built by describe if the status counter reads ERRORED
// (the endpoint failed before this resource was made, for another resource of the channel,
// and the driver broadcast its error then). A closed resource's counter may be freed and
// reused, so it is not read: only a kept error is returned.
func (e *channelEndpoint) err(closed bool, describe func() string) error {
	if p := e.failed.Load(); p != nil {
		return *p
	}
	if closed || e.status == nil || e.status.Load() != channelErrored {
		return nil
	}
	return fmt.Errorf("%w: %s (status counter %d reads ERRORED; the media driver's error log says why)", ErrChannelEndpoint, describe(), e.statusID)
}
