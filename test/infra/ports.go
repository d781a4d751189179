package infra

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// Loopback is the only address anything started here listens on.
const Loopback = "127.0.0.1"

// Port pickers; tests replace them to force a collision.
var (
	pickTCPPort = func() (int, error) { return FreePort(TCP) }
	pickUDPPort = func() (int, error) { return FreePort(UDP) }
)

// startAttempts bounds the starts of a peer whose ports were taken between picking and
// binding them (see [FreePort]).
const startAttempts = 3

// addressInUse is what a JVM peer's log says when another process took one of its ports.
const addressInUse = "Address already in use"

// Protocol is a set of transport protocols a port must be free for.
type Protocol uint8

// The protocols of [FreePort]; TCP|UDP asks for a number free for both.
const (
	TCP Protocol = 1 << iota
	UDP
)

// Where [FreePort] picks ports: from lowestPort up to the start of the kernel's ephemeral
// range, or, if that leaves fewer than minPorts, from its end up.
const (
	lowestPort = 20000
	minPorts   = 1000
	// ephemeralRangeFile is where Linux keeps its ephemeral range: "32768\t60999" by default.
	ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"
	freePortTries      = 100
)

// FreePort returns a loopback port that was free a moment ago for each protocol in p,
// chosen at random outside the kernel's ephemeral range. The kernel gives ports of that
// range to every outgoing TCP connection and to every socket bound to port 0 (Aeron's
// "endpoint=…:0" channels): a peer's port from it could be taken by any process while the
// peer is down for a restart, which would then fail with "Address already in use". Outside
// it, only another picker can take the port, and only once it is free.
//
// The port is released before the caller binds it, so another process can still take it
// in between: a peer that loses the race fails to start, its log says "Address already in
// use", and its start is tried again with other ports (see [startAttempts]).
func FreePort(p Protocol) (int, error) {
	if p&(TCP|UDP) == 0 {
		return 0, errors.New("infra: FreePort needs TCP, UDP or both")
	}
	low, high, err := portWindow(ephemeralRangeFile)
	if err != nil {
		return 0, err
	}
	for range freePortTries {
		port := low + rand.IntN(high-low)
		if portFree(port, p) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("infra: no free port in %d..%d after %d tries", low, high-1, freePortTries)
}

// portWindow returns the ports [low, high) FreePort picks from, given the file that holds
// the ephemeral range (Linux's default 32768–60999 if it cannot be read).
func portWindow(rangeFile string) (low, high int, err error) {
	first, last := 32768, 60999
	if b, err := os.ReadFile(rangeFile); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			a, aerr := strconv.Atoi(f[0])
			z, zerr := strconv.Atoi(f[1])
			if aerr == nil && zerr == nil && a <= z {
				first, last = a, z
			}
		}
	}
	switch {
	case first-lowestPort >= minPorts:
		return lowestPort, first, nil
	case 65535-last >= minPorts:
		return last + 1, 65536, nil
	default:
		return 0, 0, fmt.Errorf("infra: the ephemeral port range %d-%d (%s) leaves fewer than %d ports "+
			"above %d for test peers; narrow it, e.g. sysctl net.ipv4.ip_local_port_range=\"32768 60999\"",
			first, last, rangeFile, minPorts, lowestPort)
	}
}

// portFree reports whether port can be bound on the loopback address for each protocol in p.
func portFree(port int, p Protocol) bool {
	addr := net.JoinHostPort(Loopback, strconv.Itoa(port))
	if p&TCP != 0 {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return false
		}
		defer l.Close()
	}
	if p&UDP != 0 {
		c, err := net.ListenPacket("udp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
	}
	return true
}
