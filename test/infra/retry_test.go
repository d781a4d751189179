package infra

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// takenFirst makes a port picker return port once, then free ports.
func takenFirst(port int, pick func() (int, error)) (func() (int, error), *int) {
	calls := 0
	return func() (int, error) {
		calls++
		if calls == 1 {
			return port, nil
		}
		return pick()
	}, &calls
}

// A port can be taken between picking and binding it: the archive then exits with
// "Address already in use", and StartArchive tries again with another port.
func TestArchiveStartRetriesWhenItsControlPortIsTaken(t *testing.T) {
	busy, err := net.ListenPacket("udp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.LocalAddr().(*net.UDPAddr).Port
	orig := pickUDPPort
	var calls *int
	pickUDPPort, calls = takenFirst(taken, orig)
	t.Cleanup(func() { pickUDPPort = orig })

	a, err := StartArchive(context.Background(), ArchiveOptions{Dir: filepath.Join(t.TempDir(), "archive")})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	if *calls != 2 || strings.HasSuffix(a.ControlChannel, fmt.Sprintf(":%d", taken)) {
		t.Fatalf("picked %d ports, control channel %s; want a second port instead of the taken %d", *calls, a.ControlChannel, taken)
	}
	if !strings.Contains(logSince(a.log, nil), addressInUse) {
		t.Errorf("the first start did not fail for its port; log:\n%s", a.LogTail())
	}
}

// The same for the broker: its service port is taken on the first attempt.
func TestPulsarStartRetriesWhenItsPortIsTaken(t *testing.T) {
	busy, err := net.Listen("tcp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().(*net.TCPAddr).Port
	orig := pickTCPPort
	var calls *int
	pickTCPPort, calls = takenFirst(taken, orig)
	t.Cleanup(func() { pickTCPPort = orig })

	p, err := StartPulsar(context.Background(), PulsarOptions{Dir: filepath.Join(t.TempDir(), "pulsar")})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if *calls != 6 || strings.HasSuffix(p.ServiceURL, fmt.Sprintf(":%d", taken)) {
		t.Fatalf("picked %d ports, service URL %s; want a second set instead of the taken %d", *calls, p.ServiceURL, taken)
	}
	if !strings.Contains(logSince(p.log, nil), addressInUse) {
		t.Errorf("the first start did not fail for its port")
	}
}
