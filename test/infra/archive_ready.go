package infra

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
)

// channelActive is the value of a local-socket-address counter once its socket is bound.
const channelActive = 1

// archiveReady reports why the archive is not ready yet, or nil once it is: the media
// driver's heartbeat in the cnc.dat our process wrote is live, the archive has allocated its control-session
// counter (its conductor runs), and the UDP socket of its control channel is bound. The
// archive allocates the control-session counter before the driver has bound that socket,
// so a client that came after the first check alone could find nobody listening.
func archiveReady(a *Archive) error {
	info, err := aeron.ProbeDriver(a.AeronDir, 10*time.Second)
	if err != nil {
		return err
	}
	// After a kill -9 the dead driver's cnc.dat stays, its heartbeat still fresh for a
	// while, and its counters with it: only a CnC file written by our process counts.
	if info.PID != int64(a.Pid()) {
		return fmt.Errorf("cnc.dat is from driver pid %d, not ours (%d)", info.PID, a.Pid())
	}
	if !info.HasCounter(aeron.CounterTypeArchiveControlSessions) {
		return errors.New("the media driver runs but the archive has no control-session counter yet")
	}
	endpoint, err := controlEndpoint(a.ControlChannel)
	if err != nil {
		return err
	}
	for _, c := range info.Counters {
		// Label: "rcv-local-sockaddr: <channel status id> <host:port>".
		if c.TypeID == aeron.CounterTypeLocalSocketAddress && strings.HasSuffix(c.Label, " "+endpoint) && c.Value == channelActive {
			return nil
		}
	}
	return fmt.Errorf("the archive's control channel %s is not bound yet", endpoint)
}

// controlEndpoint is the host:port of an aeron:udp?endpoint=host:port channel.
func controlEndpoint(channel string) (string, error) {
	_, params, ok := strings.Cut(channel, "?")
	if !ok {
		return "", fmt.Errorf("infra: control channel %q has no endpoint", channel)
	}
	for _, kv := range strings.Split(params, "|") {
		if k, v, _ := strings.Cut(kv, "="); k == "endpoint" {
			return v, nil
		}
	}
	return "", fmt.Errorf("infra: control channel %q has no endpoint", channel)
}
