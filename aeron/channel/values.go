package channel

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Media is the transport of a channel.
type Media uint8

// Media of a channel URI. The zero Media is invalid.
const (
	// MediaIPC is shared memory between processes on one host ("ipc").
	MediaIPC Media = iota + 1
	// MediaUDP is unicast or multicast UDP ("udp").
	MediaUDP
)

// String returns "ipc", "udp" or "Media(n)".
func (m Media) String() string {
	switch m {
	case MediaIPC:
		return mediaIPC
	case MediaUDP:
		return mediaUDP
	default:
		return fmt.Sprintf("Media(%d)", uint8(m))
	}
}

const (
	mediaIPC = "ipc"
	mediaUDP = "udp"
)

// ControlMode is the value of the control-mode parameter.
type ControlMode uint8

// Control modes. The zero ControlMode is invalid.
const (
	// ControlModeManual: a multi-destination channel whose destinations
	// the client adds and removes (ReplayMerge subscriptions).
	ControlModeManual ControlMode = iota + 1
	// ControlModeDynamic: a multi-destination publication that receivers
	// join through its control endpoint.
	ControlModeDynamic
	// ControlModeResponse: a response channel (Aeron 1.44+).
	ControlModeResponse
)

var controlModeNames = [...]string{
	ControlModeManual:   "manual",
	ControlModeDynamic:  "dynamic",
	ControlModeResponse: "response",
}

// String returns the parameter value ("manual", "dynamic", "response") or
// "ControlMode(n)".
func (m ControlMode) String() string {
	if m >= ControlModeManual && int(m) < len(controlModeNames) {
		return controlModeNames[m]
	}
	return fmt.Sprintf("ControlMode(%d)", uint8(m))
}

func parseControlMode(s string) (ControlMode, bool) {
	for m := ControlModeManual; int(m) < len(controlModeNames); m++ {
		if controlModeNames[m] == s {
			return m, true
		}
	}
	return 0, false
}

// Endpoint is a UDP socket address as Aeron writes it in endpoint and
// control: "host:port", with an IPv6 address in brackets.
type Endpoint struct {
	// Host is a host name, an IPv4 address, or an IPv6 address without
	// brackets (possibly with a "%zone").
	Host string
	// Port is the UDP port; 0 asks the driver for an ephemeral port.
	Port uint16
}

// String returns "host:port", or "[host]:port" for an IPv6 host.
func (e Endpoint) String() string {
	return net.JoinHostPort(e.Host, strconv.FormatUint(uint64(e.Port), 10))
}

// Endpoint syntax limits.
const (
	maxHostNameLength  = 253
	maxHostLabelLength = 63
)

// ParseEndpoint parses "host:port" as Aeron's endpoint and control
// parameters accept it: the port is required (0…65535), an IPv6 address
// must be in brackets, and a host name is made of letters, digits, '-',
// '_' and '.'. It does not resolve the name. Errors are [*ParamError]s
// for the key "endpoint".
func ParseEndpoint(s string) (Endpoint, error) {
	e, problem := parseEndpoint(s)
	if problem != "" {
		return Endpoint{}, &ParamError{Key: KeyEndpoint, Value: s, Allowed: problem}
	}
	return e, nil
}

// parseEndpoint returns the endpoint, or what is wrong with s.
func parseEndpoint(s string) (Endpoint, string) {
	const allowed = `must be host:port with a port of 0…65535, e.g. "localhost:40123", "10.0.0.1:0" or "[::1]:40123"`
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return Endpoint{}, allowed + " (the port is missing)"
	}
	host, port := s[:i], s[i+1:]
	p, ok := parsePort(port)
	if !ok {
		return Endpoint{}, allowed
	}
	if strings.HasPrefix(host, "[") {
		if len(host) < len("[]") || !strings.HasSuffix(host, "]") {
			return Endpoint{}, allowed + " (unterminated IPv6 bracket)"
		}
		host = host[1 : len(host)-1]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return Endpoint{}, allowed + " (invalid IPv6 address in brackets)"
		}
		return Endpoint{Host: host, Port: p}, ""
	}
	if strings.ContainsAny(host, ":[]") {
		return Endpoint{}, allowed + " (an IPv6 address must be in brackets)"
	}
	if !validHost(host) {
		return Endpoint{}, allowed + " (invalid host name or IPv4 address)"
	}
	return Endpoint{Host: host, Port: p}, ""
}

func parsePort(s string) (uint16, bool) {
	if s == "" || !allDigits(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 10, 16)
	return uint16(v), err == nil
}

// validHost accepts an IPv4 address or a host name. A host made only of
// digits and dots must be a valid IPv4 address.
func validHost(h string) bool {
	if h == "" || len(h) > maxHostNameLength {
		return false
	}
	if strings.Trim(h, "0123456789.") == "" {
		a, err := netip.ParseAddr(h)
		return err == nil && a.Is4()
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > maxHostLabelLength {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !isAlnum(c) && c != '-' && c != '_' {
				return false
			}
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// TermPosition is the init-term-id, term-id and term-offset parameters,
// which Aeron accepts only together: the log starts at that position (the
// archive sets them on replay publications so that replayed positions
// equal recorded ones).
type TermPosition struct {
	InitialTermID int32
	TermID        int32
	TermOffset    int32
}

// Size suffixes accepted by Aeron (Agrona SystemUtil.parseSize), case
// insensitive.
const (
	kibi = 1 << 10
	mebi = 1 << 20
	gibi = 1 << 30
)

// parseSize parses a byte count with an optional k, m or g suffix (powers
// of 1024, either case), as Aeron does. Signs are not accepted.
func parseSize(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	unit := int64(1)
	switch s[len(s)-1] {
	case 'k', 'K':
		unit = kibi
	case 'm', 'M':
		unit = mebi
	case 'g', 'G':
		unit = gibi
	}
	if unit != 1 {
		s = s[:len(s)-1]
	}
	return scaled(s, unit)
}

// scaled parses a non-empty run of decimal digits and multiplies it by
// unit, failing on overflow of int64.
func scaled(digits string, unit int64) (int64, bool) {
	if digits == "" || !allDigits(digits) {
		return 0, false
	}
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || v > math.MaxInt64/unit {
		return 0, false
	}
	return v * unit, true
}

// formatSize writes n with the largest suffix that divides it exactly.
func formatSize(n int64) string {
	switch {
	case n != 0 && n%gibi == 0:
		return strconv.FormatInt(n/gibi, 10) + "g"
	case n != 0 && n%mebi == 0:
		return strconv.FormatInt(n/mebi, 10) + "m"
	case n != 0 && n%kibi == 0:
		return strconv.FormatInt(n/kibi, 10) + "k"
	default:
		return strconv.FormatInt(n, 10)
	}
}

// parseDuration parses a duration as Aeron does (Agrona
// SystemUtil.parseDuration): a plain number is nanoseconds, otherwise the
// suffix is s, ms, us or ns (either case). Signs are not accepted and
// values that overflow int64 nanoseconds are rejected (Aeron saturates
// them).
func parseDuration(s string) (time.Duration, bool) {
	if s == "" {
		return 0, false
	}
	if allDigits(s) {
		v, ok := scaled(s, 1)
		return time.Duration(v), ok
	}
	n := len(s)
	if s[n-1] != 's' && s[n-1] != 'S' || n < 2 {
		return 0, false
	}
	unit, digits := time.Second, s[:n-1]
	switch s[n-2] {
	case 'n', 'N':
		unit, digits = time.Nanosecond, s[:n-2]
	case 'u', 'U':
		unit, digits = time.Microsecond, s[:n-2]
	case 'm', 'M':
		unit, digits = time.Millisecond, s[:n-2]
	}
	v, ok := scaled(digits, int64(unit))
	return time.Duration(v), ok
}

// formatDuration writes d with the largest unit that divides it exactly.
// A negative d is written as is and rejected by validation.
func formatDuration(d time.Duration) string {
	switch {
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d%time.Millisecond == 0:
		return strconv.FormatInt(int64(d/time.Millisecond), 10) + "ms"
	case d%time.Microsecond == 0:
		return strconv.FormatInt(int64(d/time.Microsecond), 10) + "us"
	default:
		return strconv.FormatInt(int64(d), 10) + "ns"
	}
}

// parseInt32 parses a decimal int32 with an optional sign, as Java's
// Integer.parseInt does.
func parseInt32(s string) (int32, bool) {
	v, err := strconv.ParseInt(s, 10, 32)
	return int32(v), err == nil
}

// Boolean parameter values. Aeron compares with "true" exactly and reads
// anything else as false, so this package accepts only these two.
const (
	valueTrue  = "true"
	valueFalse = "false"
)

func parseBool(s string) (bool, bool) {
	switch s {
	case valueTrue:
		return true, true
	case valueFalse:
		return false, true
	default:
		return false, false
	}
}

func formatBool(b bool) string {
	if b {
		return valueTrue
	}
	return valueFalse
}
