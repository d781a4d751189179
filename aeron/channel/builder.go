package channel

import (
	"math/bits"
	"strconv"
	"time"
)

// Builder assembles a URI parameter by parameter. Setting a key that is
// already present replaces its value in place; new keys are appended, so
// [URI.String] lists them in the order they were first set. Setters never
// fail: [Builder.Build] validates the whole URI as [Parse] would and
// reports the first problem. A Builder is not safe for concurrent use.
type Builder struct {
	uri URI
}

// NewBuilder starts a URI of the given media with no parameters.
func NewBuilder(media Media) *Builder {
	return &Builder{uri: URI{media: media}}
}

// Build validates the URI and returns it. The Builder may be used further;
// the URI does not share its parameters.
func (b *Builder) Build() (URI, error) {
	u := URI{spy: b.uri.spy, media: b.uri.media, params: b.uri.Params()}
	if err := u.validate(); err != nil {
		return URI{}, err
	}
	return u, nil
}

// Spy sets or clears the "aeron-spy:" prefix.
func (b *Builder) Spy(spy bool) *Builder {
	b.uri.spy = spy
	return b
}

// Set sets any parameter, interpreted by this package or not.
func (b *Builder) Set(key, value string) *Builder {
	for i := range b.uri.params {
		if b.uri.params[i].Key == key {
			b.uri.params[i].Value = value
			return b
		}
	}
	b.uri.params = append(b.uri.params, Param{Key: key, Value: value})
	return b
}

// Remove removes a parameter if present.
func (b *Builder) Remove(key string) *Builder {
	for i := range b.uri.params {
		if b.uri.params[i].Key == key {
			b.uri.params = append(b.uri.params[:i], b.uri.params[i+1:]...)
			return b
		}
	}
	return b
}

// Endpoint sets endpoint to hostPort ("host:port", "[ipv6]:port").
func (b *Builder) Endpoint(hostPort string) *Builder { return b.Set(KeyEndpoint, hostPort) }

// Control sets control to hostPort ("host:port", "[ipv6]:port").
func (b *Builder) Control(hostPort string) *Builder { return b.Set(KeyControl, hostPort) }

// ControlMode sets control-mode.
func (b *Builder) ControlMode(m ControlMode) *Builder { return b.Set(KeyControlMode, m.String()) }

// SessionID sets session-id.
func (b *Builder) SessionID(id int32) *Builder {
	return b.Set(KeySessionID, strconv.FormatInt(int64(id), 10))
}

// TermLength sets term-length, written with the largest exact suffix
// ("64k", "16m", "1g").
func (b *Builder) TermLength(bytes int32) *Builder {
	return b.Set(KeyTermLength, formatSize(int64(bytes)))
}

// MTU sets mtu, written in bytes.
func (b *Builder) MTU(bytes int32) *Builder {
	return b.Set(KeyMTU, strconv.FormatInt(int64(bytes), 10))
}

// EOS sets eos.
func (b *Builder) EOS(eos bool) *Builder { return b.Set(KeyEOS, formatBool(eos)) }

// Sparse sets sparse.
func (b *Builder) Sparse(sparse bool) *Builder { return b.Set(KeySparse, formatBool(sparse)) }

// Tether sets tether.
func (b *Builder) Tether(tether bool) *Builder { return b.Set(KeyTether, formatBool(tether)) }

// Reliable sets reliable.
func (b *Builder) Reliable(reliable bool) *Builder { return b.Set(KeyReliable, formatBool(reliable)) }

// Linger sets linger, written with the largest exact unit ("5s", "100ms",
// "3us", "7ns"). A negative duration makes Build fail.
func (b *Builder) Linger(d time.Duration) *Builder { return b.Set(KeyLinger, formatDuration(d)) }

// Alias sets alias.
func (b *Builder) Alias(alias string) *Builder { return b.Set(KeyAlias, alias) }

// Interface sets interface.
func (b *Builder) Interface(iface string) *Builder { return b.Set(KeyInterface, iface) }

// TTL sets ttl.
func (b *Builder) TTL(ttl uint8) *Builder {
	return b.Set(KeyTTL, strconv.FormatUint(uint64(ttl), 10))
}

// InitialPosition sets init-term-id, term-id, term-offset and term-length so that a
// publication starts at position in a log of initialTermID and termLength (a power of two,
// which Build checks), as Aeron's ChannelUriStringBuilder.initialPosition does: to continue a
// stream, or a recording, where it stopped. Build rejects a position that is not
// frame-aligned or is negative (its term would come before the initial one); as in Java, a
// position of 2^31 terms or more wraps the term id.
func (b *Builder) InitialPosition(position int64, initialTermID, termLength int32) *Builder {
	shift := bits.TrailingZeros32(uint32(termLength))
	b.TermPosition(TermPosition{
		InitialTermID: initialTermID,
		TermID:        initialTermID + int32(position>>shift),
		TermOffset:    int32(position & int64(termLength-1)),
	})
	return b.TermLength(termLength)
}

// BuilderFrom starts a builder with u's media, spy prefix and parameters.
func BuilderFrom(u URI) *Builder {
	return &Builder{uri: URI{spy: u.spy, media: u.media, params: u.Params()}}
}

// TermPosition sets init-term-id, term-id and term-offset together.
func (b *Builder) TermPosition(p TermPosition) *Builder {
	b.Set(KeyInitialTermID, strconv.FormatInt(int64(p.InitialTermID), 10))
	b.Set(KeyTermID, strconv.FormatInt(int64(p.TermID), 10))
	return b.Set(KeyTermOffset, strconv.FormatInt(int64(p.TermOffset), 10))
}
