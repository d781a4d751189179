package aeron

import (
	"errors"
	"fmt"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/cnc"
	"github.com/ferry-bridge/ferry/aeron/internal/counters"
)

// DriverInfo is a snapshot of a media driver as its CnC file shows it, in the spirit of
// Aeron's AeronStat.
type DriverInfo struct {
	Dir                   string
	PID                   int64
	StartedAt             time.Time
	CnCVersion            string
	ClientLivenessTimeout time.Duration
	// HeartbeatAge is how old the driver's heartbeat was when read.
	HeartbeatAge time.Duration
	// Counters are the driver's allocated counters, in id order.
	Counters []CounterInfo
}

// CounterInfo is one counter of a [DriverInfo] snapshot.
type CounterInfo struct {
	ID     int32
	TypeID int32
	Label  string
	Value  int64
}

// Counter type ids worth looking for in a [DriverInfo] (Aeron's AeronCounters).
const (
	CounterTypeClientHeartbeat        = int32(counters.TypeClientHeartbeat)
	CounterTypeLocalSocketAddress     = int32(counters.TypeLocalSocketAddressStatus)
	CounterTypeRecordingPosition      = int32(counters.TypeRecordingPosition)
	CounterTypeArchiveControlSessions = int32(counters.TypeArchiveControlSessions)
)

// ProbeDriver reads dir/cnc.dat once, without becoming a client, and describes the driver.
// The error wraps [ErrDriverTimeout] if the driver's heartbeat is older than timeout (or
// it shut down), and says so if there is no driver in dir at all.
func ProbeDriver(dir string, timeout time.Duration) (DriverInfo, error) {
	file, err := cnc.MapReadOnly(dir)
	if err != nil {
		return DriverInfo{}, fmt.Errorf("aeron: no media driver in %s: %w", dir, err)
	}
	defer file.Close()
	now := time.Now()
	if err := file.CheckDriverActive(now, timeout); err != nil {
		return DriverInfo{}, fmt.Errorf("%w: %w", ErrDriverTimeout, err)
	}
	h := file.Header()
	info := DriverInfo{
		Dir:                   dir,
		PID:                   h.DriverPID,
		StartedAt:             h.DriverStartTime,
		CnCVersion:            h.Version.String(),
		ClientLivenessTimeout: h.ClientLivenessTimeout,
		HeartbeatAge:          now.Sub(time.UnixMilli(file.DriverHeartbeat())),
	}
	r, err := counters.NewReader(file.Section(cnc.CountersMetadata), file.Section(cnc.CountersValues))
	if err != nil {
		return DriverInfo{}, fmt.Errorf("aeron: counters in %s: %w", file.Path(), err)
	}
	for c := range r.Allocated() {
		label, err := c.Label()
		if err != nil {
			return DriverInfo{}, errors.Join(fmt.Errorf("aeron: counter %d in %s", c.ID(), file.Path()), err)
		}
		info.Counters = append(info.Counters, CounterInfo{ID: int32(c.ID()), TypeID: int32(c.TypeID()), Label: label, Value: c.Value()})
	}
	return info, nil
}

// HasCounter reports whether the snapshot holds a counter of typeID.
func (d DriverInfo) HasCounter(typeID int32) bool {
	for _, c := range d.Counters {
		if c.TypeID == typeID {
			return true
		}
	}
	return false
}
