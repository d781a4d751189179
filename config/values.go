package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/ferry-bridge/ferry/aeron/channel"
)

// problem is what a value parser found wrong.
type problem struct {
	what, fix string
	cause     error
	// empty marks a blank value: decode replaces fix with emptyFix's.
	empty bool
}

// decode parses s with parse, or returns def if s is absent. A problem is
// recorded against path, which is marked as failed so that checks between
// keys skip it, and def is returned.
func decode[T any](p *parser, path string, s *setting, def T, parse func(string) (T, *problem)) T {
	if s == nil {
		return def
	}
	if s.null {
		p.add(p.keyError(ErrInvalid, path, s, "has no value", emptyFix(path, s)))
		p.failed[path] = true
		return def
	}
	v, pr := parse(s.text)
	if pr != nil {
		if s.env != "" && s.text == "" { // an empty variable: unset it rather than fix a value
			pr.what, pr.empty = "is empty", true
		}
		if pr.empty {
			pr.fix = emptyFix(path, s)
		}
		e := p.keyError(ErrInvalid, path, s, pr.what, pr.fix)
		e.Err = pr.cause
		p.add(e)
		p.failed[path] = true
		return def
	}
	return v
}

// keyError builds a KeyError about the setting s (nil when missing).
func (p *parser) keyError(kind error, path string, s *setting, what, fix string) *KeyError {
	e := &KeyError{Path: path, Problem: what, Fix: fix, Kind: kind}
	if s != nil {
		e.Value, e.Source, e.Line = s.text, s.source(), s.line
		if s.secret {
			e.Value = redacted
		}
	}
	return e
}

// emptyFix is the fix for the setting s of path that has no value or is empty: give it a
// value, or leave it out where that is allowed (for an environment variable, unset it).
func emptyFix(path string, s *setting) string {
	if s.env != "" {
		return fmt.Sprintf("unset %s, or give it a value", s.env)
	}
	k, ok := lookupKey(globalKeys, path)
	if _, rest, in := strings.Cut(path, "]."); in && strings.HasPrefix(path, streamsKey+"[") {
		k, ok = lookupKey(streamKeys, rest)
	}
	switch {
	case ok && k.need == required:
		return "give it a value; the key is required"
	case ok && k.need == unused:
		return "give it a value, or remove the key"
	}
	return "give it a value, or remove the key to get the default"
}

// nonEmpty rejects a blank value; decode supplies the fix (see emptyFix).
func nonEmpty(s string) (string, *problem) {
	if strings.TrimSpace(s) == "" {
		return "", &problem{what: "is empty", empty: true}
	}
	return s, nil
}

// filePath is a file's path, taken byte for byte: white space before or after it, or a
// control character in it, is refused. A trailing newline (a `|` block scalar, or a
// variable filled from a secret or a ConfigMap) would otherwise name another file — for
// store.path, a new, empty checkpoint store, from which every stream starts again at its
// start position (with latest, skipping what was recorded since its checkpoint).
func filePath(s string) (string, *problem) {
	if v, p := nonEmpty(s); p != nil {
		return v, p
	}
	return s, pathProblem(s)
}

func pathProblem(s string) *problem {
	switch {
	case strings.TrimSpace(s) != s:
		return &problem{what: fmt.Sprintf("%q begins or ends with white space (a trailing newline from a `|` block or a secret?), which ferry would take as part of the name, and so use another file", s),
			fix: "remove the white space: write the path on the key's line, or with `>-` or `|-`, or fill the variable with printf '%s'; " +
				"if a ferry ran with this value before, what it wrote is in the file whose name has the white space: rename that file to the name without it first (for store.path, or ferry starts a new, empty store)"}
	case strings.ContainsFunc(s, unicode.IsControl):
		return &problem{what: fmt.Sprintf("%q holds a control character, which no path ferry is meant to use has", s), fix: "write the path without it"}
	case s == "~" || strings.HasPrefix(s, "~/"):
		// Only a shell expands ~: ferry would make a directory named ~ where it runs, for
		// store.path a new, empty store there.
		return &problem{what: fmt.Sprintf("%q begins with ~, which ferry does not expand (only a shell does): it would name a directory called ~ in the directory ferry runs in", s),
			fix: "write the home directory out (/home/NAME/...), or give the path through an environment variable set by a shell, which expands it"}
	}
	return nil
}

// token is a bearer token: no white space in it or around it, which the broker would not
// take and Go's HTTP client refuses in a header (a trailing newline, from `echo` into a
// secret or a variable, is the usual one).
func token(s string) (string, *problem) {
	if v, p := nonEmpty(s); p != nil {
		return v, p
	}
	if strings.ContainsFunc(s, unicode.IsSpace) {
		return "", &problem{what: "holds white space (a trailing newline?), which a token never has", fix: "remove it: write the token with printf '%s', not echo"}
	}
	return s, nil
}

func boolean(s string) (bool, *problem) {
	switch s {
	case "true", "True", "TRUE":
		return true, nil
	case "false", "False", "FALSE":
		return false, nil
	}
	return false, &problem{what: "is not a boolean", fix: "write true or false"}
}

func intIn(lo, hi int64) func(string) (int64, *problem) {
	return func(s string) (int64, *problem) {
		fix := fmt.Sprintf("use a whole number from %d to %d", lo, hi)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, &problem{what: "is not a whole number in range", fix: fix}
		}
		if n < lo || n > hi {
			return 0, &problem{what: "is out of range", fix: fix}
		}
		return n, nil
	}
}

// millisIn parses a whole number of milliseconds, written without a unit. A fix says the
// unit; a Go duration there (5s) is named as one, with the number to write instead.
func millisIn(lo, hi int64) func(string) (int64, *problem) {
	parse := intIn(lo, hi)
	return func(s string) (int64, *problem) {
		n, pr := parse(s)
		if pr == nil {
			return n, nil
		}
		pr.fix = fmt.Sprintf("use a whole number of milliseconds from %d to %d, without a unit, such as 1000 for a second", lo, hi)
		if d, err := time.ParseDuration(s); err == nil && d%time.Millisecond == 0 && d.Milliseconds() >= lo && d.Milliseconds() <= hi {
			pr.what = "is a duration; the key takes a number of milliseconds"
			pr.fix = fmt.Sprintf("write %d (%s in milliseconds)", d.Milliseconds(), s)
		}
		return n, pr
	}
}

func int32Of(s string) (int32, *problem) {
	n, pr := intIn(math.MinInt32, math.MaxInt32)(s)
	return int32(n), pr
}

func durationIn(lo, hi time.Duration) func(string) (time.Duration, *problem) {
	// Examples inside the range: a fix must not suggest a value it refuses.
	var such []string
	for _, e := range []struct {
		d    time.Duration
		text string
	}{{500 * time.Millisecond, "500ms"}, {10 * time.Second, "10s"}, {5 * time.Minute, "5m"}} {
		if e.d >= lo && e.d <= hi {
			such = append(such, e.text)
		}
	}
	if len(such) == 0 {
		such = []string{lo.String()}
	}
	fix := fmt.Sprintf("use a Go duration from %v to %v, such as %s", lo, hi, strings.Join(such, " or "))
	return func(s string) (time.Duration, *problem) {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, &problem{what: "is not a duration", fix: fix}
		}
		if d < lo || d > hi {
			return 0, &problem{what: "is out of range", fix: fix}
		}
		return d, nil
	}
}

// sizeIn parses a byte count: digits with an optional k, m or g suffix
// (powers of 1024, either case).
func sizeIn(lo, hi int64) func(string) (int64, *problem) {
	return func(s string) (int64, *problem) {
		fix := fmt.Sprintf("use a byte count from %d to %d, optionally with k, m or g (1024, 1024², 1024³), such as 64m", lo, hi)
		digits, mult := s, int64(1)
		if n := len(s); n > 0 {
			switch s[n-1] {
			case 'k', 'K':
				digits, mult = s[:n-1], 1<<10
			case 'm', 'M':
				digits, mult = s[:n-1], 1<<20
			case 'g', 'G':
				digits, mult = s[:n-1], 1<<30
			}
		}
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || digits == "" || digits[0] == '+' {
			return 0, &problem{what: "is not a size", fix: fix}
		}
		if n < lo || n > hi/mult || n*mult < lo || n*mult > hi {
			return 0, &problem{what: "is out of range", fix: fix}
		}
		return n * mult, nil
	}
}

func parseMode(s string) (Mode, *problem) {
	switch s {
	case "archive":
		return ModeArchive, nil
	case "transport":
		return ModeTransport, nil
	}
	if strings.TrimSpace(s) != s {
		return 0, &problem{what: "has white space around it", fix: modeFix}
	}
	return 0, &problem{what: "is not a mode", fix: modeFix}
}

const modeFix = "set mode: archive (replay recordings from a checkpoint; nothing is lost) or mode: transport (live subscription; at most once)"

func parseChannel(s string) (channel.URI, *problem) {
	u, err := channel.Parse(s)
	if err != nil {
		return channel.URI{}, &problem{
			what:  "is not a valid Aeron channel: " + strings.TrimPrefix(err.Error(), "channel: "),
			fix:   "write an Aeron channel such as aeron:ipc or aeron:udp?endpoint=host:port",
			cause: err,
		}
	}
	return u, nil
}

// archiveChannel parses one of the archive's channels (control, response, replay): ferry
// publishes or subscribes on it itself, so it cannot be a spy on another publication.
func archiveChannel(s string) (channel.URI, *problem) {
	u, pr := parseChannel(s)
	if pr == nil && u.IsSpy() {
		return channel.URI{}, &problem{what: "is a spy channel", fix: "write the channel without aeron-spy: (spying applies to a stream's channel in transport mode, transport.spy)"}
	}
	return u, pr
}

// replayChannel parses replay.channel, an archive channel on which nothing may be left out
// or cut short: reliable=false has a UDP subscription fill a lost datagram with padding
// rather than ask for it again (the record in it skipped without a word), eos=false keeps
// a replay's end from its subscriber (a stopped recording's replay never ends), and
// tether=false lets the driver drop a subscriber slowed by Pulsar (the replay fails again
// and again).
func replayChannel(s string) (channel.URI, *problem) {
	u, pr := archiveChannel(s)
	if pr != nil {
		return u, pr
	}
	for _, key := range []string{channel.KeyReliable, channel.KeyEOS, channel.KeyTether} {
		if v, ok := u.Get(key); ok && !strings.EqualFold(v, "true") { // as Java's Boolean.parseBoolean
			return channel.URI{}, &problem{what: fmt.Sprintf("sets %s=%s: a replay must deliver every record, and its end", key, v), fix: "remove " + key + " from the channel (ferry's replays need its default, true)"}
		}
	}
	return u, nil
}

// mustChannel parses a built-in default.
func mustChannel(s string) channel.URI {
	u, err := channel.Parse(s)
	if err != nil {
		panic("assertion failed: invalid default channel " + s + ": " + err.Error())
	}
	return u
}

// tlsSchemes are the service URL schemes that use TLS.
var tlsSchemes = []string{"pulsar+ssl", "https"}

func serviceURL(s string) (string, *problem) {
	fix := "write pulsar://host:6650, pulsar+ssl://host:6651, http://host:8080 or https://host:8443"
	scheme, rest, ok := strings.Cut(s, "://")
	switch {
	case !ok || rest == "":
		return "", &problem{what: "is not a URL", fix: fix}
	case scheme != "pulsar" && scheme != "http" && !isTLSScheme(scheme):
		return "", &problem{what: "has an unknown scheme " + strconv.Quote(scheme), fix: fix}
	case strings.ContainsFunc(rest, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", &problem{what: "contains white space or control characters", fix: fix}
	}
	// pulsar-client-go v0.19.0 (internal/service_uri.go) takes the hosts up to the first
	// '/', '?' or '#' and connects to them only: anything after is dropped, a lone "/" too.
	hosts, after := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		hosts, after = rest[:i], rest[i:]
	}
	switch {
	case hosts == "":
		return "", &problem{what: "has no host", fix: fix}
	case after != "" && after != "/":
		return "", &problem{what: "has a path, query or fragment " + strconv.Quote(after) + ", which the Pulsar client ignores",
			fix: "write the URL without it: " + scheme + "://" + hosts}
	case strings.Contains(hosts, "@"):
		return "", &problem{what: "has a user, which the Pulsar client ignores", fix: "write the URL without it; authenticate with pulsar.auth.token_file or pulsar.auth.token"}
	}
	// Several hosts are separated by ',' (or ';', which the client takes too).
	for _, h := range strings.Split(strings.ReplaceAll(hosts, ";", ","), ",") {
		if h == "" {
			return "", &problem{what: "has an empty host in its list of hosts", fix: "separate the hosts with single commas, as in " + scheme + "://host1:6650,host2:6650"}
		}
		if pr := serviceHost(scheme, h); pr != nil {
			return "", pr
		}
	}
	return s, nil
}

// serviceHost checks one host of a service URL as pulsar-client-go v0.19.0 does before it
// connects (internal/service_uri.go, validateHostName): a host name, an IPv4 address or an
// IPv6 address in brackets, with a port from 1 to 65535 or none (the scheme's default).
func serviceHost(scheme, h string) *problem {
	fix := "write host:port, such as " + scheme + "://broker:6650, or [::1]:6650 for an IPv6 address"
	host, port, hasPort := h, "", false
	if strings.HasPrefix(h, "[") {
		end := strings.Index(h, "]")
		if end < 0 {
			return &problem{what: "has the host " + strconv.Quote(h) + ", with no ']' after the IPv6 address", fix: fix}
		}
		host = h[1:end]
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return &problem{what: "has " + strconv.Quote(h[:end+1]) + " in brackets, which is not an IPv6 address", fix: "write a host name or IPv4 address without brackets, an IPv6 address in them"}
		}
		switch rest := h[end+1:]; {
		case rest == "":
		case strings.HasPrefix(rest, ":"):
			port, hasPort = rest[1:], true
		default:
			return &problem{what: "has " + strconv.Quote(rest) + " after the IPv6 address " + strconv.Quote(h[:end+1]), fix: fix}
		}
	} else if i := strings.IndexByte(h, ':'); i >= 0 {
		host, port, hasPort = h[:i], h[i+1:], true
		if strings.Contains(port, ":") {
			return &problem{what: "has the host " + strconv.Quote(h) + ", with more than one ':'", fix: fix}
		}
	}
	if host == "" {
		return &problem{what: "has no host in " + strconv.Quote(h), fix: fix}
	}
	if hasPort {
		n, err := strconv.Atoi(port)
		if err != nil || port[0] < '0' || port[0] > '9' || n < 1 || n > math.MaxUint16 {
			return &problem{what: "has an invalid port in " + strconv.Quote(h),
				fix: fmt.Sprintf("use a port from 1 to 65535, or none for %s://'s default, %d", scheme, defaultServicePort(scheme))}
		}
	}
	if _, err := url.Parse(scheme + "://" + h); err != nil || strings.ContainsAny(host, "[]%") {
		return &problem{what: "has an invalid host in " + strconv.Quote(h), fix: fix}
	}
	return nil
}

// defaultServicePort is the port pulsar-client-go v0.19.0 connects to when a service URL's
// host has none.
func defaultServicePort(scheme string) int {
	switch scheme {
	case "pulsar+ssl":
		return 6651
	case "http":
		return 80
	case "https":
		return 443
	}
	return 6650
}

// adminURL is the broker's admin REST API: http:// or https://, a host, nothing after the
// path.
func adminURL(s string) (string, *problem) {
	fix := "write the broker's web service URL, http://host:8080 or https://host:8443 (its webServicePort)"
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || u.Opaque != "":
		return "", &problem{what: "is not a URL", fix: fix}
	case u.Scheme != "http" && u.Scheme != "https":
		return "", &problem{what: "has the scheme " + strconv.Quote(u.Scheme) + ", not http or https", fix: fix}
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return "", &problem{what: "has a query, fragment or user", fix: fix}
	}
	if p := serviceHost(u.Scheme, u.Host); p != nil { // url.Parse takes a port of 0, 99999 or none after ':', and no host before it
		p.fix = fix
		return "", p
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	if p := "/" + strings.TrimPrefix(path, "/"); strings.HasSuffix(p, "/admin") || strings.HasSuffix(p, "/admin/v2") || strings.Contains(p, "/admin/v2/") {
		// Copied from the REST API's documentation: ferry adds /admin/v2/… itself, and every
		// request would be answered 404.
		return "", &problem{what: "has the admin API's own path " + strconv.Quote(path) + ", which ferry adds to it", fix: "write the root of the broker's web service, e.g. " + u.Scheme + "://" + u.Host}
	}
	return u.Scheme + "://" + u.Host + path, nil // the scheme in lower case
}

func isTLSScheme(scheme string) bool {
	for _, t := range tlsSchemes {
		if scheme == t {
			return true
		}
	}
	return false
}

var streamNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func streamName(s string) (string, *problem) {
	if !streamNameRE.MatchString(s) {
		return "", &problem{what: "is not a valid stream name", fix: "use 1 to 128 letters, digits, '.', '_' or '-'"}
	}
	return s, nil
}

// pulsarNameRE is Pulsar's rule for tenant and namespace names.
var pulsarNameRE = regexp.MustCompile(`^[-=:.\w]+$`)

// topicName validates a Pulsar topic name and returns its full form. A
// short name "t" means persistent://public/default/t and "a/b/t" means
// persistent://a/b/t.
func topicName(s string) (string, *problem) {
	const fix = "write persistent://tenant/namespace/topic, tenant/namespace/topic, or a short name such as orders"
	rest, full := strings.CutPrefix(s, "persistent://")
	if strings.HasPrefix(s, "non-persistent://") {
		return "", &problem{what: "is a non-persistent topic; ferry's acknowledgements and deduplication need a persistent one", fix: "use persistent://" + strings.TrimPrefix(s, "non-persistent://")}
	}
	if !full && strings.Contains(s, "://") {
		return "", &problem{what: "has an unknown topic domain", fix: fix}
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 1 && !full:
		parts = []string{"public", "default", parts[0]}
	case len(parts) != 3:
		return "", &problem{what: "is not a topic name of the form tenant/namespace/topic", fix: fix}
	}
	for _, p := range parts[:2] {
		if !pulsarNameRE.MatchString(p) {
			return "", &problem{what: "has an invalid tenant or namespace " + strconv.Quote(p), fix: "use letters, digits, '-', '_', '=', ':' or '.'"}
		}
	}
	local := parts[2]
	switch {
	case local == "":
		return "", &problem{what: "has an empty topic", fix: fix}
	case strings.ContainsFunc(local, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "", &problem{what: "contains white space or control characters", fix: fix}
	case strings.Contains(local, "-partition-"):
		return "", &problem{what: "names one partition of a topic", fix: "name the topic without the -partition-N suffix"}
	}
	return "persistent://" + strings.Join(parts, "/"), nil
}

// listenAddr validates host:port; an empty host means every interface.
func listenAddr(s string) (string, *problem) {
	const fix = "write host:port, such as 127.0.0.1:8089"
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", &problem{what: "is not host:port", fix: fix, cause: err}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > math.MaxUint16 {
		return "", &problem{what: "has an invalid port", fix: "use a port from 1 to 65535"}
	}
	if strings.ContainsFunc(host, func(r rune) bool { return r <= ' ' || r == 0x7f || r == '/' }) {
		return "", &problem{what: "has an invalid host", fix: fix}
	}
	return s, nil
}

// isLoopback reports whether a valid listen address binds to loopback
// only. Host names are case-insensitive: LOCALHOST is localhost.
func isLoopback(listen string) bool {
	host, _, _ := net.SplitHostPort(listen)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// frameAlignment is Aeron's frame alignment: every position that starts
// a message is a multiple of it.
const frameAlignment = 32

func startPosition(s string) (StartPosition, *problem) {
	switch s {
	case "earliest":
		return StartPosition{Kind: StartEarliest}, nil
	case "latest":
		return StartPosition{Kind: StartLatest}, nil
	}
	const fix = "use earliest, latest, or a position >= 0 (with start_recording_id)"
	n, err := strconv.ParseInt(s, 10, 64)
	switch {
	case err != nil:
		return StartPosition{}, &problem{what: "is not earliest, latest or a position", fix: fix}
	case n < 0:
		return StartPosition{}, &problem{what: "is negative; positions start at 0 and there is no negative sentinel", fix: fix}
	case n%frameAlignment != 0:
		// Aligned is not enough to be a boundary (a message of many frames has aligned
		// positions inside it): the fix names where boundaries are found.
		return StartPosition{}, &problem{what: "is not a multiple of 32 (Aeron's frame alignment), so no message begins there",
			fix: fmt.Sprintf("use a position where a message begins: a ferry.position property in the topic (where the message after it begins), or a recording's start in `ferry recordings`; the aligned position below, %d, is one only if a message begins there", n-n%frameAlignment)}
	}
	return StartPosition{Kind: StartAt, Position: n}, nil
}
