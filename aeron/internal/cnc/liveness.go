package cnc

import (
	"fmt"
	"time"
)

// driverShutDownHeartbeat is the heartbeat value a driver leaves when it
// shuts down cleanly (aeron-protocol.md §9).
const driverShutDownHeartbeat = -1

// CheckDriverActive returns nil if the driver's heartbeat is no older than
// timeout at time now, and otherwise an error wrapping [ErrDriverInactive]
// that says whether there was no heartbeat yet, the driver shut down, or
// the heartbeat is stale (and by how much). A heartbeat exactly timeout old
// is still active, as in Aeron (dead when now > heartbeat + timeout).
func (f *File) CheckDriverActive(now time.Time, timeout time.Duration) error {
	heartbeat := f.DriverHeartbeat()
	switch {
	case heartbeat == 0:
		return fmt.Errorf("%w: %s has no driver heartbeat yet", ErrDriverInactive, f.source)
	case heartbeat == driverShutDownHeartbeat:
		return fmt.Errorf("%w: the driver of %s has shut down", ErrDriverInactive, f.source)
	case heartbeat < 0:
		return fmt.Errorf("%w: %s has an invalid driver heartbeat %d", ErrDriverInactive, f.source, heartbeat)
	}
	if age := now.Sub(time.UnixMilli(heartbeat)); age > timeout {
		return fmt.Errorf("%w: last driver heartbeat in %s was %v ago, limit %v", ErrDriverInactive, f.source, age, timeout)
	}
	return nil
}
