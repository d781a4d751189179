package infra

import (
	"fmt"
	"net"
)

// Loopback is the only address anything started here listens on.
const Loopback = "127.0.0.1"

// Port pickers; tests replace them to force a collision.
var (
	pickTCPPort = freeTCPPort
	pickUDPPort = freeUDPPort
)

// startAttempts bounds the starts of a peer whose ports were taken between picking and
// binding them (see freeTCPPort).
const startAttempts = 3

// addressInUse is what a JVM peer's log says when another process took one of its ports.
const addressInUse = "Address already in use"

// freeTCPPort returns a TCP port on the loopback address that was free a moment ago. It
// is released before the peer binds it, so another process can take it in between (Linux
// picks ephemeral ports from a random offset, which makes that unlikely, not impossible);
// a peer that loses the race fails to start and its log says "Address already in use".
func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free tcp port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freeUDPPort is [freeTCPPort] for UDP (Aeron's control and data channels).
func freeUDPPort() (int, error) {
	c, err := net.ListenPacket("udp", net.JoinHostPort(Loopback, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free udp port: %w", err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port, nil
}
