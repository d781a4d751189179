package channel

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func mustParse(t *testing.T, s string) URI {
	t.Helper()
	u, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(%q): %v", s, err)
	}
	return u
}

func TestParseValidRoundTrip(t *testing.T) {
	for _, s := range []string{
		"aeron:ipc",
		"aeron:udp?endpoint=localhost:40123",
		"aeron-spy:aeron:udp?endpoint=localhost:40123",
		"aeron:ipc?term-length=64k|alias=replay",
		"aeron:udp?endpoint=[::1]:0",
		"aeron:udp?endpoint=[fe80::1%eth0]:40123",
		"aeron:udp?endpoint=node_a.example-1.com:9",
		"aeron:udp?endpoint=127.0.0.1:040123",
		"aeron:udp?control=localhost:8010|control-mode=dynamic",
		"aeron:udp?control-mode=manual|session-id=-12345",
		"aeron:udp?control-mode=response|control=localhost:1",
		"aeron:udp?tags=1,2",
		"aeron:ipc?init-term-id=-5|term-id=-3|term-offset=1024|term-length=1m|mtu=1408",
		"aeron:ipc?init-term-id=2147483647|term-id=-2147483648|term-offset=0",
		"aeron:ipc?linger=0|eos=false|sparse=true|tether=false|reliable=true",
		"aeron:udp?endpoint=224.0.1.1:40456|interface=192.168.1.0/24|ttl=16",
		"aeron:udp?endpoint=224.0.1.1:40456|ttl=0|mtu=65504",
		"aeron:ipc?fc=max|cc=static|x-custom=a=b?c",
		"aeron:ipc?alias=",
		"aeron:ipc?alias=my replay stream",
		"aeron:ipc?session-id=tag:7",
		"aeron:ipc?session-id=+5",
		"aeron:ipc?term-length=1G",
		"aeron:ipc?term-length=1073741824",
		"aeron:ipc?term-length=65536|mtu=8k",
		"aeron:ipc?linger=5S",
		"aeron:ipc?linger=100MS",
		"aeron:ipc?linger=7Us",
		"aeron:ipc?linger=3ns",
		"aeron:ipc?linger=12345",
		"aeron:ipc?linger=9223372036ns",
		"aeron:ipc?we?ird=key",
		"aeron:udp?endpoint=localhost:0|linger=0|eos=false",
		"aeron-spy:aeron:ipc",
	} {
		u := mustParse(t, s)
		if got := u.String(); got != s {
			t.Errorf("Parse(%q).String() = %q", s, got)
		}
		again := mustParse(t, u.String())
		if !again.Equal(u) {
			t.Errorf("Parse(String()) of %q differs", s)
		}
		rebuilt, err := u.Edit().Build()
		if err != nil || rebuilt.String() != s {
			t.Errorf("Edit().Build() of %q = %q, %v", s, rebuilt.String(), err)
		}
	}
}

func TestParseSyntaxErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		reason string
	}{
		{"", 0, `must start with "aeron:"`},
		{"aeron", 0, `must start with "aeron:"`},
		{"Aeron:ipc", 0, `must start with "aeron:"`},
		{"aeron-spy:ipc", 10, `must start with "aeron:"`},
		{" aeron:ipc", 0, `must start with "aeron:"`},
		{"aeron:tcp", 6, `unknown media "tcp"`},
		{"aeron:", 6, `unknown media ""`},
		{"aeron:UDP", 6, `unknown media "UDP"`},
		{"aeron:udp:x", 6, `unknown media "udp:x"`},
		{"aeron:ipc?", 10, `"?" must be followed by key=value parameters`},
		{"aeron:ipc?alias", 10, `parameter "alias" has no "="`},
		{"aeron:ipc?alias=a|eos", 18, `parameter "eos" has no "="`},
		{"aeron:ipc?=x", 10, "empty key"},
		{"aeron:ipc?a=1||b=2", 14, "empty parameter"},
		{"aeron:ipc?a=1|", 14, "empty parameter"},
		{"aeron:ipc?alias=caf\xc3\xa9", 19, "byte 0xc3 is not printable ASCII"},
		{"aeron:ipc?alias=a\tb", 17, "byte 0x9 is not printable ASCII"},
		{"aeron:ipc?alias=a\x7fb", 17, "byte 0x7f is not printable ASCII"},
		{"aeron:ipc?alias=" + strings.Repeat("a", MaxLength), MaxLength, "longer than 4095 bytes"},
	} {
		u, err := Parse(tc.in)
		var se *SyntaxError
		if !errors.Is(err, ErrSyntax) || !errors.As(err, &se) {
			t.Errorf("Parse(%q) error = %v, want a *SyntaxError", clip(tc.in), err)
			continue
		}
		if se.Offset != tc.offset || !strings.Contains(se.Reason, tc.reason) || se.URI != tc.in {
			t.Errorf("Parse(%q) = offset %d %q, want offset %d containing %q", clip(tc.in), se.Offset, se.Reason, tc.offset, tc.reason)
		}
		if !u.IsZero() {
			t.Errorf("Parse(%q) returned a non-zero URI with an error", clip(tc.in))
		}
	}
}

func TestParseParamErrors(t *testing.T) {
	for _, tc := range []struct {
		in      string
		key     string
		value   string
		allowed string
	}{
		{"aeron:ipc?alias=a|alias=b", "alias", "b", "given twice"},

		{"aeron:udp?endpoint=localhost", "endpoint", "localhost", "port is missing"},
		{"aeron:udp?endpoint=localhost:", "endpoint", "localhost:", "host:port"},
		{"aeron:udp?endpoint=localhost:65536", "endpoint", "localhost:65536", "0…65535"},
		{"aeron:udp?endpoint=localhost:-1", "endpoint", "localhost:-1", "host:port"},
		{"aeron:udp?endpoint=localhost:+1", "endpoint", "localhost:+1", "host:port"},
		{"aeron:udp?endpoint=::1:40123", "endpoint", "::1:40123", "must be in brackets"},
		{"aeron:udp?endpoint=[::1:40123", "endpoint", "[::1:40123", "unterminated"},
		{"aeron:udp?endpoint=[1.2.3.4]:5", "endpoint", "[1.2.3.4]:5", "invalid IPv6"},
		{"aeron:udp?endpoint=[]:5", "endpoint", "[]:5", "invalid IPv6"},
		{"aeron:udp?endpoint=1.2.3.999:5", "endpoint", "1.2.3.999:5", "invalid host"},
		{"aeron:udp?endpoint=:40123", "endpoint", ":40123", "invalid host"},
		{"aeron:udp?endpoint=local host:1", "endpoint", "local host:1", "invalid host"},
		{"aeron:udp?endpoint=a..b:1", "endpoint", "a..b:1", "invalid host"},
		{"aeron:udp?control=localhost|control-mode=dynamic", "control", "localhost", "port is missing"},

		{"aeron:udp?control-mode=Manual", "control-mode", "Manual", `"manual", "dynamic" or "response"`},
		{"aeron:udp?control-mode=", "control-mode", "", `"manual", "dynamic" or "response"`},

		{"aeron:ipc?session-id=2147483648", "session-id", "2147483648", "32-bit signed integer"},
		{"aeron:ipc?session-id=abc", "session-id", "abc", "32-bit signed integer"},
		{"aeron:ipc?session-id=tag:x", "session-id", "tag:x", `"tag:"`},
		{"aeron:ipc?session-id=", "session-id", "", "32-bit signed integer"},

		{"aeron:ipc?term-length=1000", "term-length", "1000", "power of two from 64k to 1g"},
		{"aeron:ipc?term-length=32k", "term-length", "32k", "power of two"},
		{"aeron:ipc?term-length=2g", "term-length", "2g", "power of two"},
		{"aeron:ipc?term-length=3m", "term-length", "3m", "power of two"},
		{"aeron:ipc?term-length=64kb", "term-length", "64kb", "power of two"},
		{"aeron:ipc?term-length=-64k", "term-length", "-64k", "power of two"},
		{"aeron:ipc?term-length=", "term-length", "", "power of two"},
		{"aeron:ipc?term-length=k", "term-length", "k", "power of two"},
		{"aeron:ipc?term-length=99999999999999999999g", "term-length", "99999999999999999999g", "power of two"},
		{"aeron:ipc?term-length=9007199254740992k", "term-length", "9007199254740992k", "power of two"},

		{"aeron:ipc?mtu=32", "mtu", "32", "greater than 32 and at most 65504"},
		{"aeron:ipc?mtu=0", "mtu", "0", "multiple of 32"},
		{"aeron:ipc?mtu=1409", "mtu", "1409", "multiple of 32"},
		{"aeron:ipc?mtu=65536", "mtu", "65536", "at most 65504"},
		{"aeron:ipc?mtu=64k", "mtu", "64k", "at most 65504"},

		{"aeron:ipc?eos=TRUE", "eos", "TRUE", `"true" or "false"`},
		{"aeron:ipc?eos=1", "eos", "1", `"true" or "false"`},
		{"aeron:ipc?sparse=yes", "sparse", "yes", `"true" or "false"`},
		{"aeron:ipc?tether=", "tether", "", `"true" or "false"`},
		{"aeron:udp?endpoint=h:1|reliable=False", "reliable", "False", `"true" or "false"`},

		{"aeron:ipc?linger=-1", "linger", "-1", "non-negative duration"},
		{"aeron:ipc?linger=5m", "linger", "5m", "unit s, ms, us or ns"},
		{"aeron:ipc?linger=5h", "linger", "5h", "unit s, ms, us or ns"},
		{"aeron:ipc?linger=1.5s", "linger", "1.5s", "non-negative duration"},
		{"aeron:ipc?linger=s", "linger", "s", "non-negative duration"},
		{"aeron:ipc?linger=ms", "linger", "ms", "non-negative duration"},
		{"aeron:ipc?linger=", "linger", "", "non-negative duration"},
		{"aeron:ipc?linger=9223372036854775808", "linger", "9223372036854775808", "non-negative duration"},
		{"aeron:ipc?linger=9223372037s", "linger", "9223372037s", "non-negative duration"},

		{"aeron:udp?endpoint=h:1|ttl=256", "ttl", "256", "from 0 to 255"},
		{"aeron:udp?endpoint=h:1|ttl=-1", "ttl", "-1", "from 0 to 255"},
		{"aeron:udp?endpoint=h:1|ttl=x", "ttl", "x", "from 0 to 255"},
		{"aeron:udp?endpoint=h:1|interface=", "interface", "", "must not be empty"},

		{"aeron:ipc?init-term-id=x|term-id=1|term-offset=0", "init-term-id", "x", "32-bit signed integer"},
		{"aeron:ipc?init-term-id=1|term-id=1|term-offset=33", "term-offset", "33", "multiple of 32"},
		{"aeron:ipc?init-term-id=1|term-id=1|term-offset=-32", "term-offset", "-32", "multiple of 32"},
		{"aeron:ipc?init-term-id=1", "term-id", "", "must be given together (missing: term-id, term-offset)"},
		{"aeron:ipc?term-id=1|term-offset=0", "init-term-id", "", "missing: init-term-id"},
		{"aeron:ipc?init-term-id=10|term-id=9|term-offset=0", "term-id", "9", "term-id − init-term-id"},
		{"aeron:ipc?init-term-id=-2147483648|term-id=2147483647|term-offset=0", "term-id", "2147483647", "term-id − init-term-id"},
		{"aeron:ipc?term-length=64k|init-term-id=0|term-id=0|term-offset=65568", "term-offset", "65568", "at most term-length (65536)"},
		{"aeron:ipc?term-length=64k|mtu=8224", "mtu", "8224", "at most term-length/8 (8192)"},

		{"aeron:udp", "endpoint", "", "needs an endpoint, a control endpoint, tags, or control-mode"},
		{"aeron:udp?alias=x", "endpoint", "", "needs an endpoint"},
		{"aeron:udp?tags=", "endpoint", "", "needs an endpoint"},
		{"aeron-spy:aeron:udp?session-id=1", "endpoint", "", "needs an endpoint"},
		{"aeron:udp?endpoint=localhost:1|control-mode=dynamic", "control", "", "required with control-mode=dynamic"},
	} {
		u, err := Parse(tc.in)
		var pe *ParamError
		if !errors.Is(err, ErrInvalidParam) || !errors.As(err, &pe) {
			t.Errorf("Parse(%q) error = %v, want a *ParamError", tc.in, err)
			continue
		}
		if pe.Key != tc.key || pe.Value != tc.value || !strings.Contains(pe.Allowed, tc.allowed) {
			t.Errorf("Parse(%q) = %s=%q %q, want %s=%q containing %q", tc.in, pe.Key, pe.Value, pe.Allowed, tc.key, tc.value, tc.allowed)
		}
		if !u.IsZero() {
			t.Errorf("Parse(%q) returned a non-zero URI with an error", tc.in)
		}
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"aeron:ipc?term-length=1000",
			`channel: invalid term-length="1000": must be a power of two from 64k to 1g (65536…1073741824 bytes; suffix k, m or g allowed)`},
		{"aeron:ipc?eos=yes",
			`channel: invalid eos="yes": must be "true" or "false" (Aeron reads any other value as false)`},
		{"aeron:tcp?endpoint=h:1",
			`channel: invalid URI "aeron:tcp?endpoint=h:1" at offset 6: unknown media "tcp": must be "ipc" or "udp"`},
	} {
		_, err := Parse(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Parse(%q) error =\n%v\nwant\n%s", tc.in, err, tc.want)
		}
	}
	long := "aeron:ipc?alias=" + strings.Repeat("a", MaxLength)
	if _, err := Parse(long); err == nil || len(err.Error()) > 2*maxQuoted+100 {
		t.Errorf("error for a long URI is %d bytes: it must quote a clipped URI", len(err.Error()))
	}
}

func TestAccessors(t *testing.T) {
	u := mustParse(t, "aeron:udp?endpoint=[fe80::1%eth0]:40123|control=10.0.0.1:0|control-mode=manual"+
		"|session-id=-7|term-length=1m|mtu=8k|eos=false|sparse=true|tether=false|reliable=true"+
		"|linger=250ms|alias=replay|interface=192.168.1.0/24|ttl=8"+
		"|init-term-id=-100|term-id=-98|term-offset=4096|fc=max|tags=3")
	if e, ok := u.Endpoint(); !ok || e != (Endpoint{Host: "fe80::1%eth0", Port: 40123}) || e.String() != "[fe80::1%eth0]:40123" {
		t.Errorf("Endpoint = %+v, %v", e, ok)
	}
	if e, ok := u.Control(); !ok || e != (Endpoint{Host: "10.0.0.1", Port: 0}) || e.String() != "10.0.0.1:0" {
		t.Errorf("Control = %+v, %v", e, ok)
	}
	if m, ok := u.ControlMode(); !ok || m != ControlModeManual {
		t.Errorf("ControlMode = %v, %v", m, ok)
	}
	if id, ok := u.SessionID(); !ok || id != -7 {
		t.Errorf("SessionID = %d, %v", id, ok)
	}
	if _, ok := u.SessionIDTag(); ok {
		t.Errorf("SessionIDTag present for a numeric session id")
	}
	if n, ok := u.TermLength(); !ok || n != 1<<20 {
		t.Errorf("TermLength = %d, %v", n, ok)
	}
	if n, ok := u.MTU(); !ok || n != 8192 {
		t.Errorf("MTU = %d, %v", n, ok)
	}
	for _, tc := range []struct {
		name      string
		get       func() (bool, bool)
		want, set bool
	}{
		{"EOS", u.EOS, false, true},
		{"Sparse", u.Sparse, true, true},
		{"Tether", u.Tether, false, true},
		{"Reliable", u.Reliable, true, true},
	} {
		if v, ok := tc.get(); v != tc.want || ok != tc.set {
			t.Errorf("%s = %v, %v; want %v, %v", tc.name, v, ok, tc.want, tc.set)
		}
	}
	if d, ok := u.Linger(); !ok || d != 250*time.Millisecond {
		t.Errorf("Linger = %v, %v", d, ok)
	}
	if a, ok := u.Alias(); !ok || a != "replay" {
		t.Errorf("Alias = %q, %v", a, ok)
	}
	if i, ok := u.Interface(); !ok || i != "192.168.1.0/24" {
		t.Errorf("Interface = %q, %v", i, ok)
	}
	if ttl, ok := u.TTL(); !ok || ttl != 8 {
		t.Errorf("TTL = %d, %v", ttl, ok)
	}
	if p, ok := u.TermPosition(); !ok || p != (TermPosition{InitialTermID: -100, TermID: -98, TermOffset: 4096}) {
		t.Errorf("TermPosition = %+v, %v", p, ok)
	}
	if got := u.Unknown(); len(got) != 2 || got[0] != (Param{"fc", "max"}) || got[1] != (Param{"tags", "3"}) {
		t.Errorf("Unknown = %v", got)
	}
	if v, ok := u.Get("fc"); !ok || v != "max" {
		t.Errorf("Get(fc) = %q, %v", v, ok)
	}
	if u.Media() != MediaUDP || u.IsSpy() || u.IsZero() {
		t.Errorf("Media/IsSpy/IsZero = %v/%v/%v", u.Media(), u.IsSpy(), u.IsZero())
	}
	params := u.Params()
	params[0].Value = "mutated:1"
	if e, _ := u.Endpoint(); e.Port != 40123 {
		t.Errorf("Params returned the URI's own slice")
	}

	// Absent parameters.
	ipc := mustParse(t, "aeron:ipc")
	if _, ok := ipc.Endpoint(); ok {
		t.Error("Endpoint present in aeron:ipc")
	}
	if _, ok := ipc.Linger(); ok {
		t.Error("Linger present in aeron:ipc")
	}
	if _, ok := ipc.TermPosition(); ok {
		t.Error("TermPosition present in aeron:ipc")
	}
	if v, ok := ipc.EOS(); v || ok {
		t.Error("EOS present in aeron:ipc")
	}
	if ipc.Params() != nil || ipc.Unknown() != nil {
		t.Error("aeron:ipc has parameters")
	}

	// Units.
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"0", 0}, {"12345", 12345}, {"3ns", 3}, {"7US", 7 * time.Microsecond}, {"100ms", 100 * time.Millisecond},
		{"5s", 5 * time.Second}, {"5S", 5 * time.Second}, {"9223372036854775807", time.Duration(1<<63 - 1)},
		{"9223372036s", 9223372036 * time.Second},
	} {
		d, ok := mustParse(t, "aeron:ipc?linger="+tc.in).Linger()
		if !ok || d != tc.want {
			t.Errorf("linger=%s: %v, %v; want %v", tc.in, d, ok, tc.want)
		}
	}
	for _, tc := range []struct {
		in   string
		want int32
	}{
		{"64k", 64 << 10}, {"64K", 64 << 10}, {"65536", 64 << 10}, {"16m", 16 << 20}, {"1g", 1 << 30}, {"1G", 1 << 30},
	} {
		n, ok := mustParse(t, "aeron:ipc?term-length="+tc.in).TermLength()
		if !ok || n != tc.want {
			t.Errorf("term-length=%s: %d, %v; want %d", tc.in, n, ok, tc.want)
		}
	}
	if tag, ok := mustParse(t, "aeron:ipc?session-id=tag:-9").SessionIDTag(); !ok || tag != -9 {
		t.Errorf("SessionIDTag = %d, %v", tag, ok)
	}
	if _, ok := mustParse(t, "aeron:ipc?session-id=tag:9").SessionID(); ok {
		t.Error("SessionID present for a tagged session id")
	}
	if m, _ := mustParse(t, "aeron:udp?control-mode=response").ControlMode(); m != ControlModeResponse {
		t.Errorf("ControlMode = %v", m)
	}
	if m, _ := mustParse(t, "aeron:udp?control=h:1|control-mode=dynamic").ControlMode(); m != ControlModeDynamic {
		t.Errorf("ControlMode = %v", m)
	}
	if !mustParse(t, "aeron-spy:aeron:udp?endpoint=h:1").IsSpy() {
		t.Error("IsSpy false for aeron-spy:")
	}
}

func TestZeroURI(t *testing.T) {
	var u URI
	if !u.IsZero() || u.String() != "" || u.Media() != 0 {
		t.Errorf("zero URI: IsZero %v, String %q", u.IsZero(), u.String())
	}
	if _, ok := u.Endpoint(); ok {
		t.Error("zero URI has an endpoint")
	}
	if _, err := u.WithSessionID(1); !errors.Is(err, ErrInvalidParam) {
		t.Errorf("WithSessionID on the zero URI: %v", err)
	}
	if !u.Equal(URI{}) || u.Equal(mustParse(t, "aeron:ipc")) {
		t.Error("Equal on the zero URI")
	}
}

func TestEqual(t *testing.T) {
	a := mustParse(t, "aeron:udp?endpoint=h:1|alias=x")
	for _, tc := range []struct {
		other string
		want  bool
	}{
		{"aeron:udp?endpoint=h:1|alias=x", true},
		{"aeron:udp?alias=x|endpoint=h:1", true},
		{"aeron-spy:aeron:udp?endpoint=h:1|alias=x", false},
		{"aeron:udp?endpoint=h:1|alias=y", false},
		{"aeron:udp?endpoint=h:1", false},
		{"aeron:udp?endpoint=h:1|alias=x|eos=true", false},
		{"aeron:udp?endpoint=h:1|fc=x", false},
	} {
		if got := a.Equal(mustParse(t, tc.other)); got != tc.want {
			t.Errorf("Equal(%q) = %v, want %v", tc.other, got, tc.want)
		}
	}
}

func TestSelects(t *testing.T) {
	for _, tc := range []struct {
		u, recorded string
		want        bool
	}{
		{"aeron:udp?endpoint=h:4012", "aeron:udp?endpoint=h:4012", true},
		{"aeron:udp?endpoint=h:4012", "aeron:udp?alias=x|endpoint=h:4012|term-length=64k", true},
		{"aeron:udp?endpoint=h:4012|alias=x", "aeron:udp?alias=x|endpoint=h:4012", true},
		{"aeron:udp?endpoint=h:4012", "aeron-spy:aeron:udp?endpoint=h:4012", true},
		{"aeron:ipc", "aeron:ipc?session-id=12", true},
		{"aeron:ipc", "aeron:ipc", true},
		{"aeron:udp?endpoint=h:4012", "aeron:udp?endpoint=h:4012|sparse=1", true}, // a value Parse rejects
		{"aeron:udp?endpoint=h:4012", "aeron:udp?endpoint=h:40123", false},
		{"aeron:ipc?session-id=1", "aeron:ipc?session-id=12", false},
		{"aeron:udp?endpoint=h:4012|alias=x", "aeron:udp?endpoint=h:4012", false},
		{"aeron:udp?endpoint=h:4012", "aeron:udp?control=h:4012|control-mode=dynamic", false},
		{"aeron:ipc", "aeron:udp?endpoint=h:4012", false},
		{"aeron:ipc", "aeron:ipcx", false},
		{"aeron:ipc", "not a channel", false},
	} {
		if got := mustParse(t, tc.u).Selects(tc.recorded); got != tc.want {
			t.Errorf("%q.Selects(%q) = %v, want %v", tc.u, tc.recorded, got, tc.want)
		}
	}
}

func TestOverlaps(t *testing.T) {
	for _, tc := range []struct {
		u, v string
		want bool
	}{
		{"aeron:udp?endpoint=h:1", "aeron:udp?endpoint=h:1", true},
		{"aeron:udp?endpoint=h:1|term-length=64k", "aeron:udp?endpoint=h:1|mtu=8k", true},
		{"aeron:ipc?alias=a", "aeron:ipc?session-id=5", true},
		{"aeron:ipc", "aeron-spy:aeron:ipc", true},
		{"aeron:udp?endpoint=h:1", "aeron:udp?endpoint=h:2", false},
		{"aeron:ipc?alias=a", "aeron:ipc?alias=b", false},
		{"aeron:ipc", "aeron:udp?endpoint=h:1", false},
	} {
		u, v := mustParse(t, tc.u), mustParse(t, tc.v)
		if got, back := u.Overlaps(v), v.Overlaps(u); got != tc.want || back != tc.want {
			t.Errorf("%q.Overlaps(%q) = %v, and back %v; want %v", tc.u, tc.v, got, back, tc.want)
		}
	}
}

func TestWith(t *testing.T) {
	u := mustParse(t, "aeron:udp?endpoint=localhost:40123|alias=a|fc=max")
	v, err := u.With("alias", "b")
	if err != nil || v.String() != "aeron:udp?endpoint=localhost:40123|alias=b|fc=max" {
		t.Fatalf("With(alias) = %q, %v", v, err)
	}
	if u.String() != "aeron:udp?endpoint=localhost:40123|alias=a|fc=max" {
		t.Fatalf("With changed the original: %q", u)
	}
	v, err = u.WithSessionID(-1234)
	if err != nil || v.String() != "aeron:udp?endpoint=localhost:40123|alias=a|fc=max|session-id=-1234" {
		t.Fatalf("WithSessionID = %q, %v", v, err)
	}
	v, err = v.WithSessionID(5)
	if err != nil || v.String() != "aeron:udp?endpoint=localhost:40123|alias=a|fc=max|session-id=5" {
		t.Fatalf("WithSessionID replace = %q, %v", v, err)
	}
	v, err = u.Without("alias", "absent")
	if err != nil || v.String() != "aeron:udp?endpoint=localhost:40123|fc=max" {
		t.Fatalf("Without = %q, %v", v, err)
	}
	if _, err := u.Without(KeyEndpoint); !errors.Is(err, ErrInvalidParam) {
		t.Fatalf("Without(endpoint) on udp: %v, want ErrInvalidParam", err)
	}
	if _, err := u.With(KeyTermLength, "1000"); !errors.Is(err, ErrInvalidParam) {
		t.Fatalf("With(term-length=1000): %v", err)
	}
	ipc := mustParse(t, "aeron:ipc?alias="+strings.Repeat("a", MaxLength-len("aeron:ipc?alias=")))
	if _, err := ipc.WithSessionID(1); !errors.Is(err, ErrInvalidParam) || !strings.Contains(err.Error(), "at most 4095") {
		t.Fatalf("WithSessionID past MaxLength: %v", err)
	}
}

func TestBuilder(t *testing.T) {
	u, err := NewBuilder(MediaUDP).
		Endpoint("localhost:40123").
		TermLength(64<<10).
		MTU(1408).
		EOS(false).
		Linger(100*time.Millisecond).
		SessionID(-7).
		Sparse(true).
		Tether(false).
		Reliable(true).
		Alias("replay").
		Interface("127.0.0.1").
		TTL(4).
		Set("fc", "max").
		Build()
	const want = "aeron:udp?endpoint=localhost:40123|term-length=64k|mtu=1408|eos=false|linger=100ms|session-id=-7" +
		"|sparse=true|tether=false|reliable=true|alias=replay|interface=127.0.0.1|ttl=4|fc=max"
	if err != nil || u.String() != want {
		t.Fatalf("Build = %q, %v\nwant %q", u, err, want)
	}
	if !mustParse(t, want).Equal(u) {
		t.Fatal("Parse(String()) differs from the built URI")
	}

	mdc, err := NewBuilder(MediaUDP).Control("10.0.0.1:8010").ControlMode(ControlModeDynamic).Spy(true).Build()
	if err != nil || mdc.String() != "aeron-spy:aeron:udp?control=10.0.0.1:8010|control-mode=dynamic" {
		t.Fatalf("MDC = %q, %v", mdc, err)
	}

	b := NewBuilder(MediaIPC).Alias("a").Set("x", "1").Alias("b").TermPosition(TermPosition{-3, -1, 64})
	u, err = b.Build()
	if err != nil || u.String() != "aeron:ipc?alias=b|x=1|init-term-id=-3|term-id=-1|term-offset=64" {
		t.Fatalf("Build = %q, %v", u, err)
	}
	b.Remove("x").Remove("absent")
	if u.String() != "aeron:ipc?alias=b|x=1|init-term-id=-3|term-id=-1|term-offset=64" {
		t.Fatalf("a built URI changed with its builder: %q", u)
	}
	if u2, _ := b.Build(); u2.String() != "aeron:ipc?alias=b|init-term-id=-3|term-id=-1|term-offset=64" {
		t.Fatalf("after Remove: %q", u2)
	}

	e := mustParse(t, "aeron:ipc?alias=x")
	eb := e.Edit().Alias("changed")
	if e.String() != "aeron:ipc?alias=x" {
		t.Fatalf("Edit aliases the URI: %q", e)
	}
	if got, _ := eb.Build(); got.String() != "aeron:ipc?alias=changed" {
		t.Fatalf("Edit build = %q", got)
	}

	for _, tc := range []struct {
		name  string
		b     *Builder
		key   string
		value string
	}{
		{"term length", NewBuilder(MediaIPC).TermLength(1000), KeyTermLength, "1000"},
		{"term length zero", NewBuilder(MediaIPC).TermLength(0), KeyTermLength, "0"},
		{"negative linger", NewBuilder(MediaIPC).Linger(-time.Second), KeyLinger, "-1s"},
		{"mtu", NewBuilder(MediaIPC).MTU(33), KeyMTU, "33"},
		{"key with |", NewBuilder(MediaIPC).Set("a|b", "x"), "a|b", "x"},
		{"key with =", NewBuilder(MediaIPC).Set("a=b", "x"), "a=b", "x"},
		{"empty key", NewBuilder(MediaIPC).Set("", "x"), "", "x"},
		{"key non-ASCII", NewBuilder(MediaIPC).Set("caf\u00e9", "x"), "caf\u00e9", "x"},
		{"value with |", NewBuilder(MediaIPC).Set("alias", "a|b"), "alias", "a|b"},
		{"value with newline", NewBuilder(MediaIPC).Set("alias", "a\nb"), "alias", "a\nb"},
		{"zero media", NewBuilder(0), "media", "Media(0)"},
		{"udp without endpoint", NewBuilder(MediaUDP), KeyEndpoint, ""},
		{"partial term position", NewBuilder(MediaIPC).TermPosition(TermPosition{}).Remove(KeyTermID), KeyTermID, ""},
	} {
		u, err := tc.b.Build()
		var pe *ParamError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidParam) || pe.Key != tc.key || pe.Value != tc.value {
			t.Errorf("%s: Build = %q, %v; want a *ParamError for %s=%q", tc.name, u, err, tc.key, tc.value)
		}
		if !u.IsZero() {
			t.Errorf("%s: non-zero URI with an error", tc.name)
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {5 * time.Second, "5s"}, {90 * time.Second, "90s"}, {1500 * time.Millisecond, "1500ms"},
		{3 * time.Microsecond, "3us"}, {7, "7ns"}, {time.Duration(1<<63 - 1), "9223372036854775807ns"},
	} {
		if got := formatDuration(tc.d); got != tc.want {
			t.Errorf("formatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
		if d, ok := parseDuration(tc.want); !ok || d != tc.d {
			t.Errorf("parseDuration(%q) = %v, %v", tc.want, d, ok)
		}
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0"}, {1, "1"}, {1024, "1k"}, {64 << 10, "64k"}, {1 << 20, "1m"}, {3 << 20, "3m"}, {1 << 30, "1g"},
		{65537, "65537"}, {1536, "1536"},
	} {
		got := formatSize(tc.n)
		if got != tc.want {
			t.Errorf("formatSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
		if n, ok := parseSize(got); !ok || n != tc.n {
			t.Errorf("parseSize(%q) = %d, %v", got, n, ok)
		}
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{MediaIPC.String(), "ipc"},
		{MediaUDP.String(), "udp"},
		{Media(0).String(), "Media(0)"},
		{Media(9).String(), "Media(9)"},
		{ControlModeManual.String(), "manual"},
		{ControlModeDynamic.String(), "dynamic"},
		{ControlModeResponse.String(), "response"},
		{ControlMode(0).String(), "ControlMode(0)"},
		{ControlMode(4).String(), "ControlMode(4)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}

func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Endpoint
	}{
		{"localhost:40123", Endpoint{"localhost", 40123}},
		{"127.0.0.1:0", Endpoint{"127.0.0.1", 0}},
		{"[::1]:65535", Endpoint{"::1", 65535}},
		{"[::ffff:1.2.3.4]:1", Endpoint{"::ffff:1.2.3.4", 1}},
		{"my_host-1.example.com:9", Endpoint{"my_host-1.example.com", 9}},
	} {
		got, err := ParseEndpoint(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
		if back, err := ParseEndpoint(got.String()); err != nil || back != got {
			t.Errorf("ParseEndpoint(%q.String()) = %+v, %v", tc.in, back, err)
		}
	}
	for _, in := range []string{"", "localhost", "host:99999", "[::1]", "::1:5", "1.2.3:4", strings.Repeat("a", 64) + ":1"} {
		if _, err := ParseEndpoint(in); !errors.Is(err, ErrInvalidParam) {
			t.Errorf("ParseEndpoint(%q) error = %v, want ErrInvalidParam", in, err)
		}
	}
}

// InitialPosition places a publication at a position of a log: the term it falls in counted
// from the initial term id (which may wrap), the offset within it, and the term length, as
// Aeron's ChannelUriStringBuilder.initialPosition; BuilderFrom keeps the base URI's
// parameters and replaces those it sets again.
func TestInitialPositionAndBuilderFrom(t *testing.T) {
	base, err := Parse("aeron-spy:aeron:udp?endpoint=127.0.0.1:40123|term-length=1m|alias=a")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		position           int64
		initial, length    int32
		termID, termOffset int32
	}{
		{0, 7, 64 << 10, 7, 0},
		{3<<16 + 128, 7, 64 << 10, 10, 128},
		{5<<30 + 4096, -2, 1 << 30, 3, 4096},
		{1<<16 - 32, 2147483647, 64 << 10, 2147483647, 1<<16 - 32},
		{1 << 16, 2147483647, 64 << 10, -2147483648, 0},
	} {
		u, err := BuilderFrom(base).InitialPosition(c.position, c.initial, c.length).Build()
		if err != nil {
			t.Fatalf("position %d: %v", c.position, err)
		}
		p, ok := u.TermPosition()
		if !ok || p != (TermPosition{InitialTermID: c.initial, TermID: c.termID, TermOffset: c.termOffset}) {
			t.Errorf("position %d of a log of %d-byte terms from term %d: %+v, want term %d offset %d", c.position, c.length, c.initial, p, c.termID, c.termOffset)
		}
		if l, _ := u.Get(KeyTermLength); l != formatSize(int64(c.length)) {
			t.Errorf("position %d: term-length %q, want %d", c.position, l, c.length)
		}
		if a, _ := u.Get(KeyAlias); a != "a" || !u.IsSpy() || u.Media() != base.Media() {
			t.Errorf("BuilderFrom lost the base URI's alias, spy prefix or media: %s", u)
		}
	}
}

// A negative or unaligned position cannot be a publication's initial position.
func TestInitialPositionRejectsImpossiblePositions(t *testing.T) {
	for _, position := range []int64{-32, 16} {
		if u, err := NewBuilder(MediaIPC).InitialPosition(position, 7, 64<<10).Build(); err == nil {
			t.Errorf("position %d built %s", position, u)
		}
	}
}
