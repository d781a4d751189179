// Package config reads ferry's YAML configuration, applies environment
// overrides, and validates the result into a [Config].
//
// # What it owns
//
//   - The schema below: every key, its type, range, default, and the mode
//     it belongs to.
//   - The environment overrides.
//   - Presence-aware validation, and errors that name the key and the fix.
//   - The start-up warnings ([Config.Warnings]): transport mode's
//     at-most-once delivery, every stream whose reset is set, and insecure
//     settings.
//
// # Schema
//
// testdata/example.yaml is the reference file: every key, with its default
// where it has one, but pulsar.auth.token (a secret, best set by
// FERRY_PULSAR_AUTH_TOKEN) and transport.spy (transport mode only) appear
// in comments only. A test keeps it valid, and another keeps this abridged
// copy valid:
//
//	mode: archive                  # required, no default: archive | transport
//	aeron:
//	  dir: /dev/shm/aeron-ferry    # default: the Aeron client's default
//	archive:                       # archive mode only
//	  control_channel: aeron:ipc?term-length=64k
//	  control_stream_id: 10
//	  response_channel: aeron:ipc?term-length=64k
//	  response_stream_id: 20
//	  message_timeout: 10s         # Go duration, 100ms .. 1h
//	  restart_grace: 20s           # Go duration, 0 .. 1h: how long a new recording waits
//	                               # for an earlier live one that stopped growing (a crashed
//	                               # publisher's, until the archive stops it) before taking
//	                               # it for a concurrent publisher's
//	replay:                        # archive mode only
//	  channel: aeron:ipc           # not reliable=false, eos=false or tether=false: refused
//	  stream_id: 101               # used by nothing else on the media driver: a subscriber
//	                               # to it there reads replays before ferry (refused, loudly)
//	transport:                     # transport mode only
//	  spy: false                   # subscribe with aeron-spy: on this driver
//	pulsar:
//	  service_url: pulsar+ssl://pulsar.example.com:6651  # required
//	  admin_url: https://pulsar.example.com:8443  # no default: asks the broker whether each topic deduplicates, its maxMessageSize policy (archive mode), and whether a producer that answers nothing is connected
//	  tls:                         # only with pulsar+ssl:// or https://
//	    ca_file: /etc/ferry/ca.pem
//	    cert_file: /etc/ferry/client.pem   # with key_file, or neither
//	    key_file: /etc/ferry/client-key.pem
//	    insecure_skip_verify: false
//	    validate_hostname: true    # false: the chain only (needs ca_file)
//	  auth:                        # token or token_file, not both
//	    token_file: /etc/ferry/token
//	store:                         # archive mode only
//	  path: ./ferry-data/checkpoints.db
//	checkpoint:                    # archive mode only; whichever comes first
//	  every_records: 1000          # 1 .. 1e9
//	  every_ms: 1000               # 1 .. 3600000
//	inflight:                      # archive: per recording publishing (each live one at once); transport: per stream
//	  max_messages: 1000           # 1 .. 1048576
//	  max_bytes: 64m               # 1 .. 1024g; k, m, g are powers of 1024
//	http:
//	  listen: 127.0.0.1:8089
//	health:
//	  stall_after: 60s             # Go duration, 1s .. 24h
//	streams:                       # at least one
//	  - name: orders               # [A-Za-z0-9._-], 1..128, unique
//	    channel: aeron:udp?endpoint=localhost:40123   # recordings whose channel has these parameters
//	    stream_id: 1001            # int32
//	    topic: orders              # = persistent://public/default/orders; in archive mode one stream's only
//	    start_position: 4096       # archive only: earliest (default) | latest | position
//	    start_recording_id: 7      # archive only; with a position, and only then
//	    reset: false               # archive only; true deletes the checkpoint on every start
//
// # Environment
//
// Every key outside streams can be overridden by FERRY_ followed by its
// path in upper case with "." replaced by "_": pulsar.service_url by
// FERRY_PULSAR_SERVICE_URL, pulsar.auth.token by FERRY_PULSAR_AUTH_TOKEN,
// mode by FERRY_MODE. A variable that is set counts as present even when
// empty, and is validated like a value in the file. Streams cannot be
// overridden. Variables are looked up by name; [UnknownEnv] names the
// FERRY_ variables that override nothing (a misspelt one), for the caller
// to warn of.
//
// # Validation
//
// Validation is presence-aware. A key of the mode not selected is rejected
// because it is present (in the file, as an empty section, or in the
// environment), whatever its value, even its default (lesson 17). A value
// out of range is rejected, never clamped or ignored: there are no
// negative sentinels, and a start position is earliest, latest, or a
// 32-byte aligned position >= 0 in a named recording (lesson 19); the
// recordings below that one are left out, a live one too (a concurrent
// publisher's: the stream says so at error level, and latest, which starts
// every live recording at its live end, is the start that leaves none out).
// Unknown
// keys are rejected, with a suggestion when one is close. Every problem is
// reported at once, as a [*KeyError] naming the key path, the value, where
// it came from, and the fix.
//
// # What it must never do
//
// It never logs, never exits, never panics on input, and performs no I/O
// besides reading the file given to [Load]: token and TLS files are
// checked by the components that read them. It imports nothing of ferry
// but the leaf package aeron/channel.
//
// # Callers must
//
//  1. Call [Load] with os.LookupEnv, and on error print it as is and exit:
//     every line names a key and the fix.
//  2. Log [Config.Mode] and every line of [Config.Warnings] at every start.
//  3. Prefer a stored checkpoint to [Stream.Start] (lesson 18); when
//     [Stream.Reset] is set, delete the checkpoint, read back that it is
//     gone, and fail loudly if it is not (lesson 15).
//  4. Never print [Auth.Token] other than through its String method.
package config
