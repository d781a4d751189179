package infra

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// A peer's ports come from below the kernel's ephemeral range, so that no outgoing
// connection takes one while the peer is down for a restart; where the range leaves no
// room below it, from above it; and never from inside it.
func TestPortWindowLiesOutsideTheEphemeralRange(t *testing.T) {
	for _, c := range []struct {
		name, file string
		low, high  int
		wantErr    bool
	}{
		{"linux default", "32768\t60999\n", 20000, 32768, false},
		{"unreadable: linux default", "", 20000, 32768, false},
		{"not a range: linux default", "many\n", 20000, 32768, false},
		{"range starting low", "15000 50000\n", 50001, 65536, false},
		{"range of every port", "1024 65535\n", 0, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ip_local_port_range")
			if c.file != "" {
				if err := os.WriteFile(path, []byte(c.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			low, high, err := portWindow(path)
			if (err != nil) != c.wantErr {
				t.Fatalf("portWindow = %d, %d, %v; want an error: %v", low, high, err, c.wantErr)
			}
			if !c.wantErr && (low != c.low || high != c.high) {
				t.Fatalf("portWindow = [%d, %d), want [%d, %d)", low, high, c.low, c.high)
			}
		})
	}
}

func TestFreePortIsFreeForItsProtocolsAndOutsideTheEphemeralRange(t *testing.T) {
	low, high, err := portWindow(ephemeralRangeFile)
	if err != nil {
		t.Skip(err)
	}
	for _, p := range []Protocol{TCP, UDP, TCP | UDP} {
		port, err := FreePort(p)
		if err != nil {
			t.Fatal(err)
		}
		if port < low || port >= high {
			t.Errorf("FreePort(%d) = %d, outside [%d, %d)", p, port, low, high)
		}
		addr := net.JoinHostPort(Loopback, strconv.Itoa(port))
		if p&TCP != 0 {
			l, err := net.Listen("tcp", addr)
			if err != nil {
				t.Errorf("FreePort(%d) = %d, not free for TCP: %v", p, port, err)
			} else {
				l.Close()
			}
		}
		if p&UDP != 0 {
			c, err := net.ListenPacket("udp", addr)
			if err != nil {
				t.Errorf("FreePort(%d) = %d, not free for UDP: %v", p, port, err)
			} else {
				c.Close()
			}
		}
	}
	if _, err := FreePort(0); err == nil {
		t.Error("FreePort(0) found a port free for no protocol")
	}
}

// A port taken for one protocol is not free for it, and still free for the other.
func TestPortFreeChecksEachProtocol(t *testing.T) {
	port, err := FreePort(TCP | UDP)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenPacket("udp", net.JoinHostPort(Loopback, strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if portFree(port, UDP) || portFree(port, TCP|UDP) {
		t.Errorf("port %d is bound for UDP, yet found free for UDP", port)
	}
	if !portFree(port, TCP) {
		t.Errorf("port %d is bound for UDP only, yet found taken for TCP", port)
	}
}
