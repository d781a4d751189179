package channel

import (
	"errors"
	"testing"
)

var fuzzSeeds = []string{
	"aeron:ipc",
	"aeron:udp?endpoint=localhost:40123",
	"aeron-spy:aeron:udp?endpoint=[::1]:0|eos=false",
	"aeron:udp?control=localhost:8010|control-mode=dynamic|session-id=-5|tags=1,2",
	"aeron:ipc?init-term-id=-5|term-id=-3|term-offset=1024|term-length=1m|mtu=1408|linger=5s",
	"aeron:ipc?fc=max|x=a=b?c|alias=",
	"aeron:udp?control-mode=manual|session-id=tag:7|ttl=255|interface=eth0|sparse=true",
	"aeron:ipc?term-length=1000",
	"aeron:ipc?a=1||b=2",
	"aeron:tcp",
	"aeron:udp",
}

// FuzzParse: no panic; an error is a *SyntaxError or *ParamError with the
// zero URI; a URI that parses prints back as the exact input, and
// re-parsing and rebuilding it give an equal URI; every accessor works.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			var pe *ParamError
			if !(errors.As(err, &se) && errors.Is(err, ErrSyntax)) && !(errors.As(err, &pe) && errors.Is(err, ErrInvalidParam)) {
				t.Fatalf("Parse(%q) error %v is neither a *SyntaxError nor a *ParamError", s, err)
			}
			if !u.IsZero() {
				t.Fatalf("Parse(%q) returned a URI with an error", s)
			}
			return
		}
		if got := u.String(); got != s {
			t.Fatalf("Parse(%q).String() = %q", s, got)
		}
		again, err := Parse(u.String())
		if err != nil || !again.Equal(u) || again.String() != s {
			t.Fatalf("Parse(String()) = %q, %v", again, err)
		}
		rebuilt, err := u.Edit().Build()
		if err != nil || rebuilt.String() != s {
			t.Fatalf("Edit().Build() = %q, %v", rebuilt, err)
		}
		exerciseAccessors(t, u)
	})
}

// exerciseAccessors calls every accessor; on a valid URI each one that
// finds its key present must also decode it.
func exerciseAccessors(t *testing.T, u URI) {
	t.Helper()
	present := func(key string) bool { _, ok := u.Get(key); return ok }
	check := func(key string, ok bool) {
		if key == KeySessionID {
			return // a tag reference is present but not numeric
		}
		if present(key) != ok {
			t.Fatalf("%q: accessor for %s reports %v but Get reports %v", u, key, ok, present(key))
		}
	}
	_, ok := u.Endpoint()
	check(KeyEndpoint, ok)
	_, ok = u.Control()
	check(KeyControl, ok)
	_, ok = u.ControlMode()
	check(KeyControlMode, ok)
	_, okID := u.SessionID()
	_, okTag := u.SessionIDTag()
	if present(KeySessionID) != (okID || okTag) || okID && okTag {
		t.Fatalf("%q: session-id accessors %v/%v", u, okID, okTag)
	}
	_, ok = u.TermLength()
	check(KeyTermLength, ok)
	_, ok = u.MTU()
	check(KeyMTU, ok)
	_, ok = u.EOS()
	check(KeyEOS, ok)
	_, ok = u.Sparse()
	check(KeySparse, ok)
	_, ok = u.Tether()
	check(KeyTether, ok)
	_, ok = u.Reliable()
	check(KeyReliable, ok)
	_, ok = u.Linger()
	check(KeyLinger, ok)
	_, ok = u.Alias()
	check(KeyAlias, ok)
	_, ok = u.Interface()
	check(KeyInterface, ok)
	_, ok = u.TTL()
	check(KeyTTL, ok)
	_, ok = u.TermPosition()
	check(KeyTermOffset, ok)
	if len(u.Unknown()) > len(u.Params()) {
		t.Fatalf("%q: more unknown parameters than parameters", u)
	}
}

// FuzzBuild sets an arbitrary parameter through the Builder. Properties:
// no panic; Build fails with a *ParamError or yields a URI that parses
// back from its String to an equal URI (so no key or value can break the
// syntax).
func FuzzBuild(f *testing.F) {
	f.Add("alias", "x", int32(5))
	f.Add("a|b", "x", int32(-1))
	f.Add("k", "v|w", int32(0))
	f.Add("we?ird", "a=b", int32(7))
	f.Add("term-length", "64k", int32(1))
	f.Add("endpoint", "h:1", int32(2))
	f.Fuzz(func(t *testing.T, key, value string, sessionID int32) {
		for _, media := range []Media{MediaIPC, MediaUDP} {
			b := NewBuilder(media)
			if media == MediaUDP {
				b.Endpoint("localhost:40123")
			}
			u, err := b.Set(key, value).SessionID(sessionID).Build()
			if err != nil {
				var pe *ParamError
				if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidParam) || !u.IsZero() {
					t.Fatalf("Build error %v is not a *ParamError", err)
				}
				continue
			}
			back, err := Parse(u.String())
			if err != nil || !back.Equal(u) || back.String() != u.String() {
				t.Fatalf("Parse(%q) = %q, %v", u, back, err)
			}
			if v, ok := back.Get(key); !ok || v != value && key != KeySessionID {
				t.Fatalf("Get(%q) = %q, %v; want %q", key, v, ok, value)
			}
			if id, ok := back.SessionID(); !ok || id != sessionID {
				t.Fatalf("SessionID = %d, %v; want %d", id, ok, sessionID)
			}
		}
	})
}
