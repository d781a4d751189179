package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/ferry-bridge/ferry/aeron/channel"
)

// Defaults of the keys that have one. Keys of the mode not selected get no
// default: their part of [Config] stays zero.
const (
	DefaultControlChannel   = "aeron:ipc?term-length=64k"
	DefaultControlStreamID  = 10
	DefaultResponseChannel  = "aeron:ipc?term-length=64k"
	DefaultResponseStreamID = 20
	DefaultMessageTimeout   = 10 * time.Second
	// DefaultRestartGrace covers a crashed publisher's recording: the archive stops it when
	// the driver finds the client dead (10 s by default) and the publication's linger ends.
	DefaultRestartGrace   = 20 * time.Second
	DefaultReplayChannel  = "aeron:ipc"
	DefaultReplayStreamID = 101
	DefaultStorePath      = "./ferry-data/checkpoints.db"
	DefaultEveryRecords   = 1000
	DefaultEvery          = time.Second
	DefaultMaxMessages    = 1000
	DefaultMaxBytes       = 64 << 20
	DefaultListen         = "127.0.0.1:8089"
	DefaultStallAfter     = 60 * time.Second
)

// Ranges. A value outside them is rejected, never clamped (lesson 19).
const (
	maxEveryRecords   = 1_000_000_000
	maxEveryMillis    = 3_600_000
	maxInflightMsgs   = 1 << 20
	maxInflightBytes  = 1 << 40
	minMessageTimeout = 100 * time.Millisecond // an answer over loopback takes a millisecond or so; 10ms is a typo for 10s
	maxMessageTimeout = time.Hour
)

// build decodes the settings present into a Config, applying defaults of
// the selected mode and recording every problem.
func (p *parser) build() *Config {
	c := &Config{Mode: p.mode()}
	p.checkModes(c.Mode)
	g := func(path string) *setting { return p.vals[path] }

	// Left out, the Aeron client's default; given empty (an unfilled variable or template),
	// refused as every other key's, rather than taken for the default: on a host with
	// several media drivers, that could be another's.
	c.Aeron.Dir = decode(p, "aeron.dir", g("aeron.dir"), "", filePath)

	a := &c.Archive
	a.ControlChannel = decode(p, "archive.control_channel", g("archive.control_channel"), mustChannel(DefaultControlChannel), archiveChannel)
	a.ControlStreamID = decode(p, "archive.control_stream_id", g("archive.control_stream_id"), int32(DefaultControlStreamID), int32Of)
	a.ResponseChannel = decode(p, "archive.response_channel", g("archive.response_channel"), mustChannel(DefaultResponseChannel), archiveChannel)
	a.ResponseStreamID = decode(p, "archive.response_stream_id", g("archive.response_stream_id"), int32(DefaultResponseStreamID), int32Of)
	a.MessageTimeout = decode(p, "archive.message_timeout", g("archive.message_timeout"), DefaultMessageTimeout, durationIn(minMessageTimeout, maxMessageTimeout))
	a.RestartGrace = decode(p, "archive.restart_grace", g("archive.restart_grace"), DefaultRestartGrace, durationIn(0, time.Hour))
	c.Replay.Channel = decode(p, "replay.channel", g("replay.channel"), mustChannel(DefaultReplayChannel), replayChannel)
	c.Replay.StreamID = decode(p, "replay.stream_id", g("replay.stream_id"), int32(DefaultReplayStreamID), int32Of)
	c.Transport.Spy = decode(p, "transport.spy", g("transport.spy"), false, boolean)

	p.buildPulsar(&c.Pulsar)

	c.Store.Path = decode(p, "store.path", g("store.path"), DefaultStorePath, filePath)
	c.Checkpoint.EveryRecords = decode(p, "checkpoint.every_records", g("checkpoint.every_records"), DefaultEveryRecords, intIn(1, maxEveryRecords))
	ms := decode(p, "checkpoint.every_ms", g("checkpoint.every_ms"), DefaultEvery.Milliseconds(), millisIn(1, maxEveryMillis))
	c.Checkpoint.Every = time.Duration(ms) * time.Millisecond
	c.Inflight.MaxMessages = decode(p, "inflight.max_messages", g("inflight.max_messages"), DefaultMaxMessages, intIn(1, maxInflightMsgs))
	c.Inflight.MaxBytes = decode(p, "inflight.max_bytes", g("inflight.max_bytes"), DefaultMaxBytes, sizeIn(1, maxInflightBytes))
	c.HTTP.Listen = decode(p, "http.listen", g("http.listen"), DefaultListen, listenAddr)
	c.Health.StallAfter = decode(p, "health.stall_after", g("health.stall_after"), DefaultStallAfter, durationIn(time.Second, 24*time.Hour))

	c.Streams = p.buildStreams(c)

	switch c.Mode {
	case ModeArchive:
		c.Transport = Transport{}
		p.checkStreamIDs(c)
	case ModeTransport:
		c.Archive, c.Replay, c.Store, c.Checkpoint = Archive{}, Replay{}, Store{}, Checkpoint{}
	}
	c.warnings = warnings(c, p)
	return c
}

// mode decodes the required mode key.
func (p *parser) mode() Mode {
	s := p.vals["mode"]
	if s == nil {
		p.add(p.keyError(ErrMissing, "mode", nil, "is missing; there is no default", modeFix))
		return 0
	}
	parse := parseMode
	if s.env != "" {
		// Set from the environment: the fix is the variable's, not the file's.
		parse = func(v string) (Mode, *problem) {
			m, pr := parseMode(v)
			if pr != nil {
				pr.fix = fmt.Sprintf("set %s=archive (replay recordings from a checkpoint; nothing is lost) or %s=transport (live subscription; at most once), or unset it to use the file's mode", s.env, s.env)
			}
			return m, pr
		}
	}
	return decode(p, "mode", s, Mode(0), parse)
}

// checkModes rejects, by presence, every key and section of the mode not
// selected (lesson 17), and drops the keys it rejects so that their values
// are not reported as well. It does nothing when the mode is unknown.
func (p *parser) checkModes(m Mode) {
	if m == 0 {
		return
	}
	// The mode to switch to is set where the mode came from: the environment wins over
	// the file.
	setMode := func(owner Mode) string { return fmt.Sprintf("set mode: %s", owner) }
	if ms := p.vals["mode"]; ms != nil && ms.env != "" {
		setMode = func(owner Mode) string { return fmt.Sprintf("set %s=%s", ms.env, owner) }
	}
	reject := func(path string, s *setting, line int, owner Mode) {
		e := p.keyError(ErrWrongMode, path, s,
			fmt.Sprintf("belongs to %s mode, but mode is %s", owner, m),
			fmt.Sprintf("remove %s, or %s", path, setMode(owner)))
		if s != nil && s.env != "" {
			e.Fix = fmt.Sprintf("unset %s, or %s", s.env, setMode(owner))
		}
		if s == nil {
			e.Line, e.Source = line, fmt.Sprintf("line %d", line)
		}
		p.add(e)
	}
	for _, k := range globalKeys {
		if s := p.vals[k.path]; s != nil && k.mode != 0 && k.mode != m {
			reject(k.path, s, 0, k.mode)
			delete(p.vals, k.path)
		}
	}
	for _, sec := range p.sections {
		if owner := sectionMode(sec.path); sec.empty && owner != 0 && owner != m {
			reject(sec.path, nil, sec.line, owner)
		}
	}
	for i, e := range p.streams {
		for _, k := range streamKeys {
			if s := e.vals[k.path]; s != nil && k.mode != 0 && k.mode != m {
				reject(fmt.Sprintf("%s[%d].%s", streamsKey, i, k.path), s, 0, k.mode)
				delete(e.vals, k.path)
			}
		}
	}
}

// sectionMode returns the mode every key of a section belongs to, or 0.
func sectionMode(prefix string) Mode {
	var m Mode
	for _, k := range globalKeys {
		if !strings.HasPrefix(k.path, prefix+".") {
			continue
		}
		if k.mode == 0 || (m != 0 && k.mode != m) {
			return 0
		}
		m = k.mode
	}
	return m
}

func (p *parser) buildPulsar(ps *Pulsar) {
	g := func(path string) *setting { return p.vals[path] }
	if s := g("pulsar.service_url"); s == nil {
		p.add(p.keyError(ErrMissing, "pulsar.service_url", nil, "is missing",
			"set pulsar.service_url (or FERRY_PULSAR_SERVICE_URL), e.g. pulsar://localhost:6650"))
	}
	ps.ServiceURL = decode(p, "pulsar.service_url", g("pulsar.service_url"), "", serviceURL)
	t := &ps.TLS
	t.CAFile = decode(p, "pulsar.tls.ca_file", g("pulsar.tls.ca_file"), "", filePath)
	t.CertFile = decode(p, "pulsar.tls.cert_file", g("pulsar.tls.cert_file"), "", filePath)
	t.KeyFile = decode(p, "pulsar.tls.key_file", g("pulsar.tls.key_file"), "", filePath)
	t.InsecureSkipVerify = decode(p, "pulsar.tls.insecure_skip_verify", g("pulsar.tls.insecure_skip_verify"), false, boolean)
	t.ValidateHostname = decode(p, "pulsar.tls.validate_hostname", g("pulsar.tls.validate_hostname"), true, boolean)
	ps.Auth.Token = Secret(decode(p, "pulsar.auth.token", g("pulsar.auth.token"), "", token))
	ps.Auth.TokenFile = decode(p, "pulsar.auth.token_file", g("pulsar.auth.token_file"), "", filePath)
	ps.AdminURL = decode(p, "pulsar.admin_url", g("pulsar.admin_url"), "", adminURL)

	overTLS := isTLSScheme(strings.SplitN(ps.ServiceURL, "://", 2)[0]) || strings.HasPrefix(ps.AdminURL, "https://")
	if v := g("pulsar.tls.validate_hostname"); v != nil && overTLS && !t.ValidateHostname && !t.InsecureSkipVerify && t.CAFile == "" && !p.failed["pulsar.tls.validate_hostname"] {
		p.add(p.keyError(ErrConflict, "pulsar.tls.validate_hostname", v, "is false without pulsar.tls.ca_file: the chain would be checked against the system's roots only, and any certificate they trust, for any name, taken for the broker's",
			"set pulsar.tls.ca_file to the CA that signs the broker's certificates, or "+drop("pulsar.tls.validate_hostname", v)))
	}
	cert, key := g("pulsar.tls.cert_file"), g("pulsar.tls.key_file")
	switch {
	case cert != nil && key == nil:
		p.add(p.keyError(ErrConflict, "pulsar.tls.cert_file", cert, "is set without pulsar.tls.key_file", "set both for mutual TLS, or neither"))
	case key != nil && cert == nil:
		p.add(p.keyError(ErrConflict, "pulsar.tls.key_file", key, "is set without pulsar.tls.cert_file", "set both for mutual TLS, or neither"))
	}
	if tok, file := g("pulsar.auth.token"), g("pulsar.auth.token_file"); tok != nil && file != nil {
		what, fix := "is set together with pulsar.auth.token", "keep one of pulsar.auth.token and pulsar.auth.token_file"
		if tok.env != "" || file.env != "" {
			// Name where each came from: a variable is unset, a key removed.
			if tok.env != "" {
				what += " (from " + tok.env + ")"
			}
			fix = drop("pulsar.auth.token", tok) + ", or " + drop("pulsar.auth.token_file", file)
		}
		p.add(p.keyError(ErrConflict, "pulsar.auth.token_file", file, what, fix))
	}
	scheme, _, _ := strings.Cut(ps.ServiceURL, "://")
	if ps.ServiceURL == "" || isTLSScheme(scheme) || strings.HasPrefix(ps.AdminURL, "https://") || p.failed["pulsar.admin_url"] {
		return // (an admin URL refused may be an https:// one mistyped: its error says enough)
	}
	// The URL is changed where it came from: a variable replaces the file's key.
	url := "pulsar.service_url"
	if s := g(url); s.env != "" {
		url = s.env
	}
	for _, path := range []string{"pulsar.tls.ca_file", "pulsar.tls.cert_file", "pulsar.tls.key_file", "pulsar.tls.insecure_skip_verify", "pulsar.tls.validate_hostname"} {
		if s := g(path); s != nil && !p.failed[path] { // a value refused is said once
			p.add(p.keyError(ErrConflict, path, s, "is a TLS setting, but "+url+" uses "+scheme+"://",
				tlsFix(url, path, s)))
		}
	}
}

// tlsFix is the fix for a TLS setting path, set by s, without a TLS URL to use it; url is
// where the service URL was set (its key, or the variable that replaced it).
func tlsFix(url, path string, s *setting) string {
	return "use pulsar+ssl:// or https:// in " + url + " (or https:// in pulsar.admin_url), or " + drop(path, s)
}

// drop is how to take away the setting s of path: unset the environment variable it came
// from, or remove the key from the file.
func drop(path string, s *setting) string {
	if s.env != "" {
		return "unset " + s.env
	}
	return "remove " + path
}

// checkStreamIDs rejects archive control, response and replay streams
// sharing one IPC stream id: a client would read its own requests.
func (p *parser) checkStreamIDs(c *Config) {
	type use struct {
		path string
		ch   channel.URI
		id   int32
	}
	uses := []use{
		{"archive.control_stream_id", c.Archive.ControlChannel, c.Archive.ControlStreamID},
		{"archive.response_stream_id", c.Archive.ResponseChannel, c.Archive.ResponseStreamID},
		{"replay.stream_id", c.Replay.Channel, c.Replay.StreamID},
	}
	for j := range uses {
		for i := range j {
			a, b := uses[i], uses[j]
			if p.failed[a.path] || p.failed[b.path] || a.id != b.id || a.ch.Media() != channel.MediaIPC || b.ch.Media() != channel.MediaIPC {
				continue
			}
			s := p.vals[b.path]
			if s == nil {
				s = p.vals[a.path]
			}
			p.add(p.keyError(ErrConflict, b.path, s,
				fmt.Sprintf("is %d, like %s, on IPC", b.id, a.path),
				"give the archive control, response and replay streams different stream ids"))
		}
	}
}

// warnings returns what the caller must log at every start.
func warnings(c *Config, p *parser) []string {
	var w []string
	if c.Mode == ModeTransport {
		w = append(w, "transport mode: live subscription, at most once; messages published while ferry is down are lost")
	}
	if s := p.vals["mode"]; s != nil && s.env != "" && s.over != nil && s.over.text != s.text {
		w = append(w, fmt.Sprintf("%s=%s overrides mode: %s on line %d of the configuration file", s.env, s.text, s.over.text, s.over.line))
	}
	for i, s := range c.Streams {
		if s.Reset {
			w = append(w, fmt.Sprintf("streams[%d].reset is set: the checkpoint of stream %q is deleted on every start; remove it after this start", i, s.Name))
		}
	}
	token := c.Pulsar.Auth.Token != "" || c.Pulsar.Auth.TokenFile != ""
	if scheme, _, _ := strings.Cut(c.Pulsar.ServiceURL, "://"); token && !isTLSScheme(scheme) {
		w = append(w, "pulsar.service_url is "+scheme+":// while a token is set: the token goes to the broker in clear text; use pulsar+ssl:// (or https://)")
	}
	if strings.HasPrefix(c.Pulsar.AdminURL, "http://") && token {
		w = append(w, "pulsar.admin_url is http:// while a token is set: the token goes to the admin API in clear text; use https://")
	}
	if c.Pulsar.TLS.InsecureSkipVerify {
		w = append(w, "pulsar.tls.insecure_skip_verify is true: the broker's certificate is not verified")
	} else if scheme, _, _ := strings.Cut(c.Pulsar.ServiceURL, "://"); !c.Pulsar.TLS.ValidateHostname && (isTLSScheme(scheme) || strings.HasPrefix(c.Pulsar.AdminURL, "https://")) {
		w = append(w, "pulsar.tls.validate_hostname is false: any certificate pulsar.tls.ca_file's CA signed is taken for the broker's, whatever host it names")
	}
	if s := p.vals["pulsar.auth.token"]; s != nil && s.env == "" {
		w = append(w, "pulsar.auth.token is written in the configuration file; prefer FERRY_PULSAR_AUTH_TOKEN or pulsar.auth.token_file")
	}
	if c.HTTP.Listen != "" && !isLoopback(c.HTTP.Listen) {
		w = append(w, fmt.Sprintf("http.listen is %s: /status and /metrics are served without authentication beyond loopback", c.HTTP.Listen))
	}
	return w
}
