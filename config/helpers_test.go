package config

import (
	"errors"
	"strings"
	"testing"
)

// doc returns a configuration: mode (omitted if empty), the global YAML
// in globals, the pulsar section, and one stream with the extra keys in
// stream (each line indented by the caller's 4 spaces).
func doc(mode, globals, stream string) string {
	var b strings.Builder
	if mode != "" {
		b.WriteString("mode: " + mode + "\n")
	}
	b.WriteString(globals)
	b.WriteString("pulsar:\n  service_url: pulsar://localhost:6650\n")
	b.WriteString("streams:\n  - name: orders\n    channel: aeron:udp?endpoint=localhost:40123\n    stream_id: 1001\n    topic: orders\n")
	b.WriteString(stream)
	return b.String()
}

// envOf returns an env lookup over m.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// keyErrors returns the KeyErrors joined in err, in order.
func keyErrors(t *testing.T, err error) []*KeyError {
	t.Helper()
	if err == nil {
		t.Fatal("Parse succeeded, want an error")
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*KeyError, 0, len(errs))
	for _, e := range errs {
		var ke *KeyError
		if !errors.As(e, &ke) {
			t.Fatalf("error %v is not a *KeyError", e)
		}
		out = append(out, ke)
	}
	return out
}

// wantOne checks that err holds exactly one KeyError, for path and kind,
// and that its message names the path and a fix.
func wantOne(t *testing.T, err error, path string, kind error) *KeyError {
	t.Helper()
	kes := keyErrors(t, err)
	if len(kes) != 1 {
		t.Fatalf("got %d errors, want 1 for %s:\n%v", len(kes), path, err)
	}
	ke := kes[0]
	if ke.Path != path || !errors.Is(ke, kind) {
		t.Fatalf("got %v (path %q), want path %q matching %v", ke, ke.Path, path, kind)
	}
	msg := ke.Error()
	if !strings.Contains(msg, path) || !strings.Contains(msg, "; fix: ") || ke.Fix == "" {
		t.Fatalf("message %q does not name the key and the fix", msg)
	}
	return ke
}

func mustParse(t *testing.T, yaml string, env map[string]string) *Config {
	t.Helper()
	c, err := Parse([]byte(yaml), envOf(env))
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror: %v", yaml, err)
	}
	return c
}
