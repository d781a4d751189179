package config

import (
	"fmt"
	"slices"
	"strings"
)

// key is one scalar setting of the schema.
type key struct {
	// path is the dotted path for global keys ("pulsar.auth.token") and
	// the bare name for stream keys ("start_position").
	path string
	// mode is the only mode the key is allowed in; 0 means both.
	mode Mode
	// secret keys have their value redacted in errors.
	secret bool
	// need says what leaving the key out means: it takes its default (most keys), it is
	// required, or it is unused.
	need need
}

// need is what leaving a key out means.
type need int

const (
	hasDefault need = iota // the key takes its default
	required               // the configuration is invalid without it
	unused                 // it is simply not used (no default)
)

// globalKeys are the scalar keys outside streams, in documentation order.
// Every one can be overridden from the environment (see envName).
var globalKeys = []key{
	{path: "mode", need: required},
	{path: "aeron.dir"},
	{path: "archive.control_channel", mode: ModeArchive},
	{path: "archive.control_stream_id", mode: ModeArchive},
	{path: "archive.response_channel", mode: ModeArchive},
	{path: "archive.response_stream_id", mode: ModeArchive},
	{path: "archive.message_timeout", mode: ModeArchive},
	{path: "archive.restart_grace", mode: ModeArchive},
	{path: "replay.channel", mode: ModeArchive},
	{path: "replay.stream_id", mode: ModeArchive},
	{path: "transport.spy", mode: ModeTransport},
	{path: "pulsar.service_url", need: required},
	{path: "pulsar.tls.ca_file"},
	{path: "pulsar.tls.cert_file", need: unused},
	{path: "pulsar.tls.key_file", need: unused},
	{path: "pulsar.tls.insecure_skip_verify"},
	{path: "pulsar.tls.validate_hostname"},
	{path: "pulsar.auth.token", secret: true, need: unused},
	{path: "pulsar.auth.token_file", need: unused},
	{path: "pulsar.admin_url", need: unused},
	{path: "store.path", mode: ModeArchive},
	{path: "checkpoint.every_records", mode: ModeArchive},
	{path: "checkpoint.every_ms", mode: ModeArchive},
	{path: "inflight.max_messages"},
	{path: "inflight.max_bytes"},
	{path: "http.listen"},
	{path: "health.stall_after"},
}

// streamKeys are the keys of one entry of streams.
var streamKeys = []key{
	{path: "name", need: required},
	{path: "channel", need: required},
	{path: "stream_id", need: required},
	{path: "topic", need: required},
	{path: "start_position", mode: ModeArchive},
	{path: "start_recording_id", mode: ModeArchive, need: unused},
	{path: "reset", mode: ModeArchive},
}

// streamsKey is the top-level key holding the list of streams.
const streamsKey = "streams"

// envPrefix starts the name of every environment override.
const envPrefix = "FERRY_"

// envName returns the environment variable that overrides a global key:
// FERRY_ followed by the path in upper case with "." replaced by "_", e.g.
// pulsar.auth.token → FERRY_PULSAR_AUTH_TOKEN.
func envName(path string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// UnknownEnv returns a warning for each variable of environ (as os.Environ gives it,
// NAME=value) that is named like an override, FERRY_…, and overrides no key: a misspelt
// override is otherwise not noticed, and its key keeps the file's value or the default.
// The closest override's name is suggested when it is close enough to be a typo.
func UnknownEnv(environ []string) []string {
	names := make([]string, len(globalKeys))
	for i, k := range globalKeys {
		names[i] = envName(k.path)
	}
	var warnings []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) || slices.Contains(names, name) {
			continue
		}
		fix := "ferry reads FERRY_ followed by a setting's path in upper case, \".\" as \"_\" (e.g. FERRY_PULSAR_SERVICE_URL); unset it if it is not meant for ferry"
		if near := closest(name, names); near != "" {
			fix = "did you mean " + near + "?"
		}
		warnings = append(warnings, fmt.Sprintf("environment variable %s overrides no setting: %s", name, fix))
	}
	return warnings
}

func lookupKey(keys []key, path string) (key, bool) {
	for _, k := range keys {
		if k.path == path {
			return k, true
		}
	}
	return key{}, false
}

// isSection reports whether prefix is a mapping of the schema, such as
// "pulsar" or "pulsar.tls".
func isSection(prefix string) bool {
	for _, k := range globalKeys {
		if strings.HasPrefix(k.path, prefix+".") {
			return true
		}
	}
	return false
}

// children returns the names allowed directly under a section ("" is the
// top level), in documentation order.
func children(prefix string) []string {
	var names []string
	add := func(n string) {
		for _, m := range names {
			if m == n {
				return
			}
		}
		names = append(names, n)
	}
	for _, k := range globalKeys {
		rest, ok := strings.CutPrefix(k.path, prefix+".")
		if prefix == "" {
			rest, ok = k.path, true
		}
		if ok {
			head, _, _ := strings.Cut(rest, ".")
			add(head)
		}
	}
	if prefix == "" {
		add(streamsKey)
	}
	return names
}

func streamKeyNames() []string {
	names := make([]string, len(streamKeys))
	for i, k := range streamKeys {
		names[i] = k.path
	}
	return names
}
