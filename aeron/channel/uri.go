package channel

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parameter keys this package interprets. Any other key is kept verbatim
// (see [URI.Unknown]).
const (
	KeyEndpoint      = "endpoint"
	KeyControl       = "control"
	KeyControlMode   = "control-mode"
	KeySessionID     = "session-id"
	KeyTermLength    = "term-length"
	KeyMTU           = "mtu"
	KeyEOS           = "eos"
	KeyLinger        = "linger"
	KeySparse        = "sparse"
	KeyTether        = "tether"
	KeyReliable      = "reliable"
	KeyAlias         = "alias"
	KeyInterface     = "interface"
	KeyTTL           = "ttl"
	KeyInitialTermID = "init-term-id"
	KeyTermID        = "term-id"
	KeyTermOffset    = "term-offset"
)

// keyTags is Aeron's tags parameter; its first element is the channel tag,
// which is enough for a UDP channel without endpoint or control.
const keyTags = "tags"

// MaxLength is the longest URI Aeron accepts (ChannelUri.MAX_URI_LENGTH
// in Aeron 1.47.3).
const MaxLength = 4095

// URI syntax.
const (
	spyPrefix      = "aeron-spy:"
	aeronPrefix    = "aeron:"
	querySeparator = '?'
	paramSeparator = '|'
	keyValueSep    = '='
	// printable ASCII: the bytes a URI may contain.
	firstPrintable = 0x20
	lastPrintable  = 0x7E
	tagPrefix      = "tag:"
)

// Limits of the validated parameters (Aeron 1.47.3 LogBufferDescriptor,
// Configuration, FrameDescriptor).
const (
	minTermLength = 64 * kibi
	maxTermLength = gibi
	frameAlign    = 32
	// minMTU: Aeron requires mtu > the 32-byte data header; with the
	// 32-byte alignment the smallest MTU is 64.
	dataHeaderLength = 32
	maxMTU           = 65504
	maxTTL           = 255
	// mtuPerTerm: the MTU may not exceed the largest message of the term
	// (term length / 8).
	mtuPerTerm = 8
)

// Param is one key=value parameter of a URI.
type Param struct {
	Key   string
	Value string
}

// URI is a parsed, valid Aeron channel URI. URIs are immutable values,
// safe for concurrent use: the methods that change one return a new URI. The zero URI is not a valid channel
// (see [URI.IsZero]); obtain URIs from [Parse] or [Builder.Build].
type URI struct {
	spy    bool
	media  Media
	params []Param
}

// Parse parses and validates an Aeron channel URI:
//
//	["aeron-spy:"] "aeron:" ("ipc" | "udp") ["?" key "=" value {"|" key "=" value}]
//
// The URI must be printable ASCII and at most [MaxLength] bytes; keys must
// not repeat; values may be empty and may contain "=" but not "|".
// Besides the value of every key this package interprets (see the Key
// constants), Parse checks the rules between parameters that the driver
// enforces: init-term-id, term-id and term-offset come together, with
// term-id − init-term-id ≥ 0 and term-offset ≤ term-length; mtu ≤
// term-length/8; a udp channel with control-mode=dynamic has a control
// endpoint; and a udp channel has an endpoint, a control endpoint, tags, or
// control-mode manual or response.
//
// Errors are [*SyntaxError] (matching [ErrSyntax]) or [*ParamError]
// (matching [ErrInvalidParam]).
func Parse(s string) (URI, error) {
	if len(s) > MaxLength {
		return URI{}, &SyntaxError{URI: s, Offset: MaxLength,
			Reason: fmt.Sprintf("longer than %d bytes (%d)", MaxLength, len(s))}
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < firstPrintable || c > lastPrintable {
			return URI{}, &SyntaxError{URI: s, Offset: i,
				Reason: fmt.Sprintf("byte %#x is not printable ASCII", c)}
		}
	}
	var u URI
	pos := 0
	if strings.HasPrefix(s, spyPrefix) {
		u.spy, pos = true, len(spyPrefix)
	}
	if !strings.HasPrefix(s[pos:], aeronPrefix) {
		return URI{}, &SyntaxError{URI: s, Offset: pos,
			Reason: `must start with "aeron:" (or "aeron-spy:aeron:"), e.g. "aeron:udp?endpoint=localhost:40123" or "aeron:ipc"`}
	}
	pos += len(aeronPrefix)
	media, query, hasQuery := strings.Cut(s[pos:], string(querySeparator))
	switch media {
	case mediaIPC:
		u.media = MediaIPC
	case mediaUDP:
		u.media = MediaUDP
	default:
		return URI{}, &SyntaxError{URI: s, Offset: pos,
			Reason: fmt.Sprintf("unknown media %q: must be %q or %q", clip(media), mediaIPC, mediaUDP)}
	}
	pos += len(media) + 1
	if hasQuery {
		if query == "" {
			return URI{}, &SyntaxError{URI: s, Offset: pos, Reason: `"?" must be followed by key=value parameters`}
		}
		for segment := range strings.SplitSeq(query, string(paramSeparator)) {
			key, value, ok := strings.Cut(segment, string(keyValueSep))
			switch {
			case segment == "":
				return URI{}, &SyntaxError{URI: s, Offset: pos, Reason: `empty parameter (two "|" in a row, or "|" at the end)`}
			case !ok:
				return URI{}, &SyntaxError{URI: s, Offset: pos,
					Reason: fmt.Sprintf(`parameter %q has no "=": parameters are key=value separated by "|"`, clip(segment))}
			case key == "":
				return URI{}, &SyntaxError{URI: s, Offset: pos, Reason: "empty key"}
			}
			u.params = append(u.params, Param{Key: key, Value: value})
			pos += len(segment) + 1
		}
	}
	if err := u.validate(); err != nil {
		return URI{}, err
	}
	return u, nil
}

// validate checks everything Parse promises about a URI, for Parse and
// Builder.Build alike.
func (u URI) validate() error {
	if u.media != MediaIPC && u.media != MediaUDP {
		return &ParamError{Key: "media", Value: u.media.String(), Allowed: `must be "ipc" or "udp"`}
	}
	for i, p := range u.params {
		if problem := keyProblem(p.Key); problem != "" {
			return &ParamError{Key: p.Key, Value: p.Value, Allowed: problem}
		}
		if problem := valueSyntaxProblem(p.Value); problem != "" {
			return &ParamError{Key: p.Key, Value: p.Value, Allowed: problem}
		}
		for _, q := range u.params[:i] {
			if q.Key == p.Key {
				return &ParamError{Key: p.Key, Value: p.Value, Allowed: "the key is given twice; give each key at most once"}
			}
		}
		if problem := valueProblem(p.Key, p.Value); problem != "" {
			return &ParamError{Key: p.Key, Value: p.Value, Allowed: problem}
		}
	}
	if err := u.validateTogether(); err != nil {
		return err
	}
	if n := u.length(); n > MaxLength {
		return &ParamError{Key: "uri", Value: u.String(), Allowed: fmt.Sprintf("the URI is %d bytes, at most %d allowed", n, MaxLength)}
	}
	return nil
}

func keyProblem(k string) string {
	if k == "" {
		return "keys must not be empty"
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < firstPrintable || c > lastPrintable || c == keyValueSep || c == paramSeparator {
			return `keys must be printable ASCII without "=" or "|"`
		}
	}
	return ""
}

func valueSyntaxProblem(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < firstPrintable || c > lastPrintable || c == paramSeparator {
			return `values must be printable ASCII without "|"`
		}
	}
	return ""
}

// valueProblem checks the value of a key this package interprets and
// says what is allowed; "" means valid (or a key it does not interpret).
func valueProblem(key, v string) string {
	switch key {
	case KeyEndpoint, KeyControl:
		_, problem := parseEndpoint(v)
		return problem
	case KeyControlMode:
		if _, ok := parseControlMode(v); !ok {
			return fmt.Sprintf("must be %q, %q or %q", ControlModeManual, ControlModeDynamic, ControlModeResponse)
		}
	case KeySessionID:
		if _, ok := parseInt32(v); ok {
			return ""
		}
		if tag, ok := strings.CutPrefix(v, tagPrefix); ok {
			if _, err := strconv.ParseInt(tag, 10, 64); err == nil {
				return ""
			}
		}
		return `must be a 32-bit signed integer, or "tag:" and a 64-bit integer`
	case KeyTermLength:
		if n, ok := parseSize(v); !ok || n < minTermLength || n > maxTermLength || n&(n-1) != 0 {
			return fmt.Sprintf("must be a power of two from 64k to 1g (%d…%d bytes; suffix k, m or g allowed)",
				minTermLength, maxTermLength)
		}
	case KeyMTU:
		if n, ok := parseSize(v); !ok || n <= dataHeaderLength || n > maxMTU || n%frameAlign != 0 {
			return fmt.Sprintf("must be a multiple of %d greater than %d and at most %d (%d…%d bytes; suffix k allowed)",
				frameAlign, dataHeaderLength, maxMTU, dataHeaderLength+frameAlign, maxMTU)
		}
	case KeyEOS, KeySparse, KeyTether, KeyReliable:
		if _, ok := parseBool(v); !ok {
			return fmt.Sprintf("must be %q or %q (Aeron reads any other value as false)", valueTrue, valueFalse)
		}
	case KeyLinger:
		if _, ok := parseDuration(v); !ok {
			return `must be a non-negative duration: nanoseconds, or a number with unit s, ms, us or ns, e.g. "5s" or "100ms"`
		}
	case KeyInterface:
		if v == "" {
			return "must not be empty: an address or host name, optionally with :port and /prefix-length"
		}
	case KeyTTL:
		if n, err := strconv.ParseUint(v, 10, 8); err != nil || n > maxTTL {
			return fmt.Sprintf("must be an integer from 0 to %d", maxTTL)
		}
	case KeyInitialTermID, KeyTermID:
		if _, ok := parseInt32(v); !ok {
			return "must be a 32-bit signed integer"
		}
	case KeyTermOffset:
		if n, ok := parseInt32(v); !ok || n < 0 || n > maxTermLength || n%frameAlign != 0 {
			return fmt.Sprintf("must be a multiple of %d from 0 to %d", frameAlign, maxTermLength)
		}
	}
	return ""
}

// validateTogether checks the rules between parameters.
func (u URI) validateTogether() error {
	termKeys := []string{KeyInitialTermID, KeyTermID, KeyTermOffset}
	var missing []string
	for _, k := range termKeys {
		if _, ok := u.Get(k); !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 && len(missing) < len(termKeys) {
		return &ParamError{Key: missing[0], Allowed: fmt.Sprintf(
			"init-term-id, term-id and term-offset must be given together (missing: %s)", strings.Join(missing, ", "))}
	}
	termLength, hasTermLength := u.TermLength()
	if p, ok := u.TermPosition(); ok {
		if p.TermID-p.InitialTermID < 0 { // int32 arithmetic, as Aeron
			v, _ := u.Get(KeyTermID)
			return &ParamError{Key: KeyTermID, Value: v, Allowed: fmt.Sprintf(
				"term-id − init-term-id (%d) must be from 0 to 2^31−1 in 32-bit arithmetic", p.InitialTermID)}
		}
		if hasTermLength && p.TermOffset > termLength {
			v, _ := u.Get(KeyTermOffset)
			return &ParamError{Key: KeyTermOffset, Value: v, Allowed: fmt.Sprintf(
				"must be at most term-length (%d)", termLength)}
		}
	}
	if mtu, ok := u.MTU(); ok && hasTermLength && mtu > termLength/mtuPerTerm {
		v, _ := u.Get(KeyMTU)
		return &ParamError{Key: KeyMTU, Value: v, Allowed: fmt.Sprintf(
			"must be at most term-length/%d (%d) for term-length %d", mtuPerTerm, termLength/mtuPerTerm, termLength)}
	}
	if u.media != MediaUDP {
		return nil
	}
	mode, hasMode := u.ControlMode()
	_, hasControl := u.Get(KeyControl)
	_, hasEndpoint := u.Get(KeyEndpoint)
	if mode == ControlModeDynamic && !hasControl {
		return &ParamError{Key: KeyControl, Allowed: "a control endpoint (host:port) is required with control-mode=dynamic"}
	}
	// Without endpoint, control or a channel tag, a udp channel needs
	// control-mode manual or response (dynamic without control failed
	// above).
	tags, _ := u.Get(keyTags)
	channelTag, _, _ := strings.Cut(tags, ",")
	if !hasEndpoint && !hasControl && channelTag == "" && !hasMode {
		return &ParamError{Key: KeyEndpoint, Allowed: "an aeron:udp channel needs an endpoint, a control endpoint, tags, " +
			"or control-mode=manual or control-mode=response"}
	}
	return nil
}

// String returns the URI: prefix, media and the parameters in insertion
// order, exactly as given. Parse(u.String()) returns u. The zero URI gives
// "".
func (u URI) String() string {
	if u.IsZero() {
		return ""
	}
	var b strings.Builder
	b.Grow(u.length())
	if u.spy {
		b.WriteString(spyPrefix)
	}
	b.WriteString(aeronPrefix)
	b.WriteString(u.media.String())
	for i, p := range u.params {
		if i == 0 {
			b.WriteByte(querySeparator)
		} else {
			b.WriteByte(paramSeparator)
		}
		b.WriteString(p.Key)
		b.WriteByte(keyValueSep)
		b.WriteString(p.Value)
	}
	return b.String()
}

// length is len(u.String()) without building it.
func (u URI) length() int {
	n := len(aeronPrefix) + len(u.media.String())
	if u.spy {
		n += len(spyPrefix)
	}
	for _, p := range u.params {
		n += len(p.Key) + len(p.Value) + len("?=")
	}
	return n
}

// IsZero reports whether u is the zero URI (no channel), e.g. an unset
// configuration field.
func (u URI) IsZero() bool { return u.media == 0 }

// Media returns the channel's media.
func (u URI) Media() Media { return u.media }

// IsSpy reports whether the URI has the "aeron-spy:" prefix (a
// subscription that spies on a local UDP publication).
func (u URI) IsSpy() bool { return u.spy }

// Equal reports whether u and v are the same channel: same prefix, media
// and parameters, in any order. (String is order-sensitive: two equal URIs
// may print differently.)
func (u URI) Equal(v URI) bool {
	if u.spy != v.spy || u.media != v.media || len(u.params) != len(v.params) {
		return false
	}
	for _, p := range u.params {
		if w, ok := v.Get(p.Key); !ok || w != p.Value {
			return false
		}
	}
	return true
}

// Selects reports whether a recording made on channel, the text the archive keeps, is one of
// u's: channel names u's media and has each of u's parameters with the same value, in any
// order and beside any others; an "aeron-spy:" prefix is ignored (a spy reads the same
// stream). A substring test would also take endpoint=h:40123 for endpoint=h:4012, or
// session-id=12 for session-id=1. channel is read as it is, without checking its values:
// Aeron records channels this package would reject (sparse=1, say), and a recording of
// another stream must not stop the selection of u's.
func (u URI) Selects(channel string) bool {
	rest, ok := strings.CutPrefix(strings.TrimPrefix(channel, spyPrefix), aeronPrefix+u.media.String())
	if !ok || rest != "" && rest[0] != '?' {
		return false
	}
	params := map[string]string{}
	if rest != "" {
		for kv := range strings.SplitSeq(rest[1:], "|") {
			k, v, _ := strings.Cut(kv, "=")
			params[k] = v
		}
	}
	for _, p := range u.params {
		if v, ok := params[p.Key]; !ok || v != p.Value {
			return false
		}
	}
	return true
}

// Overlaps reports whether some channel has both u's and v's parameters: the same media, and
// no key that both set to different values. A recording on such a channel is selected by
// both ([URI.Selects]). The "aeron-spy:" prefix is ignored.
func (u URI) Overlaps(v URI) bool {
	if u.media != v.media {
		return false
	}
	for _, p := range u.params {
		if w, ok := v.Get(p.Key); ok && w != p.Value {
			return false
		}
	}
	return true
}

// Get returns the value of any parameter, interpreted by this package or
// not, exactly as given.
func (u URI) Get(key string) (string, bool) {
	for _, p := range u.params {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// Params returns a copy of all parameters in insertion order.
func (u URI) Params() []Param {
	if len(u.params) == 0 {
		return nil
	}
	return append([]Param(nil), u.params...)
}

// Unknown returns, in insertion order, the parameters whose keys this
// package does not interpret (no Key constant), such as fc, cc, tags or a
// misspelt key. Aeron may use them or ignore them; this package keeps
// them verbatim.
func (u URI) Unknown() []Param {
	var out []Param
	for _, p := range u.params {
		if !isKnownKey(p.Key) {
			out = append(out, p)
		}
	}
	return out
}

var knownKeys = map[string]bool{
	KeyEndpoint: true, KeyControl: true, KeyControlMode: true, KeySessionID: true, KeyTermLength: true,
	KeyMTU: true, KeyEOS: true, KeyLinger: true, KeySparse: true, KeyTether: true, KeyReliable: true,
	KeyAlias: true, KeyInterface: true, KeyTTL: true, KeyInitialTermID: true, KeyTermID: true,
	KeyTermOffset: true,
}

func isKnownKey(k string) bool { return knownKeys[k] }

// Endpoint returns the endpoint parameter (the data address of a UDP
// channel).
func (u URI) Endpoint() (Endpoint, bool) { return u.endpointParam(KeyEndpoint) }

// Control returns the control parameter (the control address of a
// multi-destination UDP channel).
func (u URI) Control() (Endpoint, bool) { return u.endpointParam(KeyControl) }

func (u URI) endpointParam(key string) (Endpoint, bool) {
	v, ok := u.Get(key)
	if !ok {
		return Endpoint{}, false
	}
	e, problem := parseEndpoint(v)
	return e, problem == ""
}

// ControlMode returns the control-mode parameter.
func (u URI) ControlMode() (ControlMode, bool) {
	v, ok := u.Get(KeyControlMode)
	if !ok {
		return 0, false
	}
	return parseControlMode(v)
}

// SessionID returns the session-id parameter. It returns false if the
// parameter is absent or is a tag reference (see [URI.SessionIDTag]).
func (u URI) SessionID() (int32, bool) {
	v, ok := u.Get(KeySessionID)
	if !ok {
		return 0, false
	}
	return parseInt32(v)
}

// SessionIDTag returns the tag of a session-id given as "tag:<n>" (a
// publication that shares the session of the publication tagged n).
func (u URI) SessionIDTag() (int64, bool) {
	v, ok := u.Get(KeySessionID)
	if !ok {
		return 0, false
	}
	tag, ok := strings.CutPrefix(v, tagPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(tag, 10, 64)
	return n, err == nil
}

// TermLength returns the term-length parameter in bytes (suffixes
// resolved: "64k" is 65536).
func (u URI) TermLength() (int32, bool) {
	return u.sizeParam(KeyTermLength)
}

// MTU returns the mtu parameter in bytes.
func (u URI) MTU() (int32, bool) {
	return u.sizeParam(KeyMTU)
}

func (u URI) sizeParam(key string) (int32, bool) {
	v, ok := u.Get(key)
	if !ok || valueProblem(key, v) != "" {
		return 0, false
	}
	n, ok := parseSize(v)
	return int32(n), ok
}

// EOS returns the eos parameter: whether the publication signals end of
// stream when it closes.
func (u URI) EOS() (value, ok bool) { return u.boolParam(KeyEOS) }

// Sparse returns the sparse parameter: whether log buffer files are
// sparse.
func (u URI) Sparse() (value, ok bool) { return u.boolParam(KeySparse) }

// Tether returns the tether parameter: whether a slow subscription holds
// the publication back.
func (u URI) Tether() (value, ok bool) { return u.boolParam(KeyTether) }

// Reliable returns the reliable parameter: whether a UDP subscription asks
// for retransmission of lost data.
func (u URI) Reliable() (value, ok bool) { return u.boolParam(KeyReliable) }

func (u URI) boolParam(key string) (bool, bool) {
	v, ok := u.Get(key)
	if !ok {
		return false, false
	}
	return parseBool(v)
}

// Linger returns the linger parameter: how long a closed publication
// lingers before the driver frees it.
func (u URI) Linger() (time.Duration, bool) {
	v, ok := u.Get(KeyLinger)
	if !ok {
		return 0, false
	}
	return parseDuration(v)
}

// Alias returns the alias parameter (a name for the channel in counters
// and tools).
func (u URI) Alias() (string, bool) { return u.Get(KeyAlias) }

// Interface returns the interface parameter as given (the local interface
// of a UDP channel: an address or host, optionally with :port and
// /prefix-length).
func (u URI) Interface() (string, bool) { return u.Get(KeyInterface) }

// TTL returns the ttl parameter (multicast time-to-live).
func (u URI) TTL() (uint8, bool) {
	v, ok := u.Get(KeyTTL)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 8)
	return uint8(n), err == nil
}

// TermPosition returns init-term-id, term-id and term-offset, which a
// valid URI has either all or none of.
func (u URI) TermPosition() (TermPosition, bool) {
	var p TermPosition
	for _, f := range []struct {
		key string
		dst *int32
	}{
		{KeyInitialTermID, &p.InitialTermID},
		{KeyTermID, &p.TermID},
		{KeyTermOffset, &p.TermOffset},
	} {
		v, ok := u.Get(f.key)
		if !ok {
			return TermPosition{}, false
		}
		if *f.dst, ok = parseInt32(v); !ok {
			return TermPosition{}, false
		}
	}
	return p, true
}

// With returns a copy of u with key set to value: replaced in place if the
// key is present, appended otherwise. The result is validated as Parse
// would.
func (u URI) With(key, value string) (URI, error) {
	return u.Edit().Set(key, value).Build()
}

// WithSessionID returns a copy of u with session-id set to id, e.g. the
// low 32 bits of an archive replay session id on a replay subscription.
func (u URI) WithSessionID(id int32) (URI, error) {
	return u.Edit().SessionID(id).Build()
}

// Without returns a copy of u without the given keys (absent keys are
// ignored). The result is validated as Parse would: removing an endpoint a
// UDP channel needs is an error.
func (u URI) Without(keys ...string) (URI, error) {
	b := u.Edit()
	for _, k := range keys {
		b.Remove(k)
	}
	return b.Build()
}

// Edit returns a [Builder] that starts from u.
func (u URI) Edit() *Builder {
	return &Builder{uri: URI{spy: u.spy, media: u.media, params: u.Params()}}
}
