package config

import (
	"slices"
	"time"

	"github.com/ferry-bridge/ferry/aeron/channel"
)

// Mode selects how ferry reads Aeron. It has no default: the file or
// FERRY_MODE must name one.
type Mode uint8

const (
	// ModeArchive replays Aeron Archive recordings from a checkpoint:
	// nothing is lost while ferry is down (at least once into Pulsar,
	// effectively once with broker deduplication).
	ModeArchive Mode = iota + 1
	// ModeTransport subscribes to the live streams: at most once, and
	// messages published while ferry is down are lost.
	ModeTransport
)

// String returns "archive", "transport", or "unset".
func (m Mode) String() string {
	switch m {
	case ModeArchive:
		return "archive"
	case ModeTransport:
		return "transport"
	}
	return "unset"
}

// Config is a validated configuration. Settings of the mode not selected
// are zero. A Config is not modified after [Parse] returns it and is safe
// for concurrent reads.
type Config struct {
	// Mode is the selected mode; callers must log it at start.
	Mode Mode
	// Aeron locates the media driver.
	Aeron Aeron
	// Archive is the archive control session (archive mode only).
	Archive Archive
	// Replay is where the archive sends replays (archive mode only).
	Replay Replay
	// Transport holds live-subscription settings (transport mode only).
	Transport Transport
	// Pulsar is the sink.
	Pulsar Pulsar
	// Store is the checkpoint store (archive mode only).
	Store Store
	// Checkpoint is the checkpoint policy (archive mode only).
	Checkpoint Checkpoint
	// Inflight bounds what is sent to Pulsar and not yet acknowledged.
	Inflight Inflight
	// HTTP is the status and metrics endpoint.
	HTTP HTTP
	// Health sets the health rule.
	Health Health
	// Streams are the streams to carry, in file order; at least one.
	Streams []Stream

	warnings []string
}

// Warnings returns the messages the caller must log at every start, in a
// stable order: the transport mode's at-most-once delivery, every stream
// with reset set (lesson 18), and insecure settings. Config itself does no
// logging.
func (c *Config) Warnings() []string { return slices.Clone(c.warnings) }

// Aeron locates the media driver.
type Aeron struct {
	// Dir is the driver directory (aeron.dir). Empty means the Aeron
	// client's default, /dev/shm/aeron-<user> on Linux.
	Dir string
}

// Archive is the archive control session.
type Archive struct {
	// ControlChannel is where requests go (archive.control_channel).
	ControlChannel channel.URI
	// ControlStreamID is the request stream (archive.control_stream_id).
	ControlStreamID int32
	// ResponseChannel is where responses come back
	// (archive.response_channel).
	ResponseChannel channel.URI
	// ResponseStreamID is the response stream
	// (archive.response_stream_id).
	ResponseStreamID int32
	// MessageTimeout bounds the wait for a control response
	// (archive.message_timeout).
	MessageTimeout time.Duration
	// RestartGrace is how long a new recording waits for an earlier live one that
	// stopped growing when it began — a crashed publisher's, which the archive stops
	// only seconds later — before taking it for a concurrent publisher's
	// (archive.restart_grace; 0 publishes them side by side at once).
	RestartGrace time.Duration
}

// Replay is where the archive sends replays.
type Replay struct {
	// Channel is the replay channel (replay.channel).
	Channel channel.URI
	// StreamID is the replay stream (replay.stream_id).
	StreamID int32
}

// Transport holds live-subscription settings.
type Transport struct {
	// Spy subscribes with "aeron-spy:" to a publication of the same
	// driver instead of over the network (transport.spy).
	Spy bool
}

// Pulsar is the sink.
type Pulsar struct {
	// ServiceURL is pulsar://, pulsar+ssl://, http:// or https://
	// (pulsar.service_url).
	ServiceURL string
	// TLS configures TLS; used only with pulsar+ssl:// or https://.
	TLS TLS
	// Auth configures token authentication.
	Auth Auth
	// AdminURL is the broker's admin REST API, http:// or https:// (pulsar.admin_url).
	// When set, ferry asks it, for each recording it publishes, whether the broker
	// deduplicates the recording's topic partition (lesson 21), and, in either mode, whether
	// a producer that answers nothing is connected before it replaces it; TLS and Auth apply
	// to it too. Empty: not asked.
	AdminURL string
}

// TLS configures the TLS connection to Pulsar.
type TLS struct {
	// CAFile is the PEM file of trusted CAs (pulsar.tls.ca_file); empty
	// means the system pool.
	CAFile string
	// CertFile is the client certificate for mutual TLS
	// (pulsar.tls.cert_file); set with KeyFile or not at all.
	CertFile string
	// KeyFile is the client key (pulsar.tls.key_file).
	KeyFile string
	// InsecureSkipVerify accepts any server certificate
	// (pulsar.tls.insecure_skip_verify); a warning is logged at start.
	InsecureSkipVerify bool
	// ValidateHostname checks the server name against its certificate
	// (pulsar.tls.validate_hostname, default true).
	ValidateHostname bool
}

// Auth configures token authentication. At most one of Token and
// TokenFile is set.
type Auth struct {
	// Token is the token itself (pulsar.auth.token).
	Token Secret
	// TokenFile is a file holding the token (pulsar.auth.token_file); the
	// Pulsar client reads it, and re-reads it when the token expires.
	TokenFile string
}

// Secret is a string that does not print: String and GoString return
// "[redacted]". Convert with string(s) to use it.
type Secret string

// String returns "[redacted]", or "" for an empty Secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString returns the same as String.
func (s Secret) GoString() string { return s.String() }

const redacted = "[redacted]"

// Store is the checkpoint store.
type Store struct {
	// Path is the bbolt file (store.path).
	Path string
}

// Checkpoint is the checkpoint policy: the acknowledged floor is persisted
// after EveryRecords records or Every, whichever comes first.
type Checkpoint struct {
	// EveryRecords is checkpoint.every_records.
	EveryRecords int64
	// Every is checkpoint.every_ms.
	Every time.Duration
}

// Inflight bounds what is sent to Pulsar and not yet acknowledged: in archive mode per
// recording, as a stream publishes each of its live recordings at once (concurrent
// publishers, lesson 11), each with a window of its own, so what a process holds in flight
// is up to these times the recordings publishing together; in transport mode per stream
// (its live reader's one window, whatever the publications). (The Pulsar client's own memory limit is off: one shared
// by every producer fails sends as soon as recordings catching up together exceed it.)
type Inflight struct {
	// MaxMessages is inflight.max_messages.
	MaxMessages int64
	// MaxBytes is inflight.max_bytes.
	MaxBytes int64
}

// HTTP is the status and metrics endpoint.
type HTTP struct {
	// Listen is host:port (http.listen); loopback by default.
	Listen string
}

// Health sets the health rule: a stream with records pending whose committed position has
// not moved for StallAfter is unhealthy.
type Health struct {
	// StallAfter is health.stall_after (default 60s).
	StallAfter time.Duration
}

// Stream is one Aeron stream (channel + stream id) carried to one topic.
type Stream struct {
	// Name identifies the stream in checkpoints, producer names, logs and
	// metrics: [A-Za-z0-9._-], 1 to 128 bytes, unique.
	Name string
	// Channel is the channel the stream is published (and recorded) on.
	Channel channel.URI
	// StreamID is the Aeron stream id.
	StreamID int32
	// Topic is the full Pulsar topic name,
	// persistent://tenant/namespace/topic.
	Topic string
	// Start is where to begin when the store holds no checkpoint for the
	// stream (archive mode). A stored checkpoint always outranks it.
	Start StartPosition
	// Reset deletes the stream's checkpoint before starting (archive
	// mode). It is a one-shot: it deletes on every start while it is set,
	// so it is reported by [Config.Warnings].
	Reset bool
}

// StartKind says which start position a [StartPosition] holds.
type StartKind uint8

const (
	// StartEarliest begins at the start of the oldest recording (the
	// default in archive mode).
	StartEarliest StartKind = iota + 1
	// StartLatest leaves out the recordings stopped at the first start and begins each
	// live one (several, with concurrent publishers) at its live end; later recordings
	// are published in full.
	StartLatest
	// StartAt begins at Position in the recording RecordingID.
	StartAt
)

// String returns "earliest", "latest", "position", or "unset".
func (k StartKind) String() string {
	switch k {
	case StartEarliest:
		return "earliest"
	case StartLatest:
		return "latest"
	case StartAt:
		return "position"
	}
	return "unset"
}

// StartPosition is a configured start position. Positions are per
// recording, so StartAt carries the recording too. The zero value (Kind 0)
// is used in transport mode, which has no start position.
type StartPosition struct {
	// Kind says which position this is.
	Kind StartKind
	// RecordingID is the recording (StartAt only).
	RecordingID int64
	// Position is a non-negative, 32-byte aligned position in the
	// recording (StartAt only).
	Position int64
}
