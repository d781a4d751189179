package config

import (
	"strings"
	"testing"
)

func TestEnv_NamesFollowTheRule(t *testing.T) {
	for path, want := range map[string]string{
		"mode":                     "FERRY_MODE",
		"pulsar.service_url":       "FERRY_PULSAR_SERVICE_URL",
		"pulsar.auth.token":        "FERRY_PULSAR_AUTH_TOKEN",
		"checkpoint.every_records": "FERRY_CHECKPOINT_EVERY_RECORDS",
	} {
		if got := envName(path); got != want {
			t.Errorf("envName(%q) = %q, want %q", path, got, want)
		}
	}
	seen := map[string]string{}
	for _, k := range globalKeys {
		n := envName(k.path)
		if other, dup := seen[n]; dup {
			t.Errorf("%s and %s share %s", k.path, other, n)
		}
		seen[n] = k.path
	}
}

func TestEnv_OverridesTheFile(t *testing.T) {
	yaml := doc("archive", "inflight:\n  max_bytes: 1m\n", "")
	c := mustParse(t, yaml, map[string]string{
		"FERRY_PULSAR_SERVICE_URL":  "pulsar+ssl://broker:6651",
		"FERRY_PULSAR_AUTH_TOKEN":   "tok",
		"FERRY_INFLIGHT_MAX_BYTES":  "128m",
		"FERRY_AERON_DIR":           "/dev/shm/other",
		"FERRY_CHECKPOINT_EVERY_MS": "250",
		"FERRY_UNRELATED":           "ignored",
	})
	if c.Pulsar.ServiceURL != "pulsar+ssl://broker:6651" || string(c.Pulsar.Auth.Token) != "tok" ||
		c.Inflight.MaxBytes != 128<<20 || c.Aeron.Dir != "/dev/shm/other" || c.Checkpoint.Every.Milliseconds() != 250 {
		t.Fatalf("overrides not applied: %+v", c)
	}
	if len(c.Warnings()) != 0 {
		t.Fatalf("a token from the environment warns: %q", c.Warnings())
	}
}

// FERRY_MODE that replaces the file's mode warns: it changes what ferry promises (transport
// mode is at most once), and nothing else tells the file's reader.
func TestEnv_AModeOverridingTheFilesWarns(t *testing.T) {
	c := mustParse(t, doc("archive", "", ""), map[string]string{"FERRY_MODE": "transport"})
	if w := strings.Join(c.Warnings(), "\n"); c.Mode != ModeTransport || !strings.Contains(w, "FERRY_MODE=transport overrides mode: archive on line 1 of the configuration file") {
		t.Fatalf("mode %s, warnings %q; want transport, and the override said", c.Mode, w)
	}
	if w := mustParse(t, doc("archive", "", ""), map[string]string{"FERRY_MODE": "archive"}).Warnings(); len(w) != 0 {
		t.Fatalf("the same mode again warns: %q", w)
	}
}

func TestEnv_SuppliesRequiredKeys(t *testing.T) {
	yaml := strings.Replace(doc("", "", ""), "  service_url: pulsar://localhost:6650\n", "", 1)
	c := mustParse(t, yaml, map[string]string{"FERRY_MODE": "transport", "FERRY_PULSAR_SERVICE_URL": "pulsar://b:6650"})
	if c.Mode != ModeTransport || c.Pulsar.ServiceURL != "pulsar://b:6650" {
		t.Fatalf("got %v %q", c.Mode, c.Pulsar.ServiceURL)
	}
}

func TestEnv_InvalidValueNamesTheVariable(t *testing.T) {
	_, err := Parse([]byte(doc("archive", "", "")), envOf(map[string]string{"FERRY_INFLIGHT_MAX_MESSAGES": "0"}))
	ke := wantOne(t, err, "inflight.max_messages", ErrInvalid)
	if ke.Source != "FERRY_INFLIGHT_MAX_MESSAGES" || ke.Line != 0 ||
		!strings.Contains(ke.Error(), `"0" (FERRY_INFLIGHT_MAX_MESSAGES)`) {
		t.Fatalf("got %v", ke)
	}
	_, err = Parse([]byte(doc("archive", "", "")), envOf(map[string]string{"FERRY_PULSAR_SERVICE_URL": ""}))
	wantOne(t, err, "pulsar.service_url", ErrInvalid)
}

// A FERRY_ variable that overrides no key is reported, with the override it most likely
// misspells when there is one; overrides and other variables are not.
func TestEnv_UnknownOverridesAreReported(t *testing.T) {
	got := UnknownEnv([]string{
		"FERRY_STORE_PTH=/var/lib/ferry/checkpoints.db",
		"FERRY_STORE_PATH=/var/lib/ferry/checkpoints.db",
		"FERRY_SOMETHING_ELSE=1",
		"HOME=/root",
		"FERRYMAN=charon",
		"FERRY_PULSAR_SERVICEURL",
	})
	want := []string{
		"environment variable FERRY_STORE_PTH overrides no setting: did you mean FERRY_STORE_PATH?",
		"environment variable FERRY_SOMETHING_ELSE overrides no setting: ferry reads FERRY_",
		"environment variable FERRY_PULSAR_SERVICEURL overrides no setting: did you mean FERRY_PULSAR_SERVICE_URL?",
	}
	if len(got) != len(want) {
		t.Fatalf("UnknownEnv = %q; want %d warnings", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("warning %d = %q; want it to begin %q", i, got[i], want[i])
		}
	}
}

// A token with white space (a trailing newline from `echo` into a variable) is refused at
// start, without showing the token: the broker would refuse it, and Go's HTTP client
// refuses the admin API's header with it.
func TestEnv_ATokenWithANewlineIsRefused(t *testing.T) {
	_, err := Parse([]byte(doc("archive", "", "")), envOf(map[string]string{"FERRY_PULSAR_AUTH_TOKEN": "eyJhbGciOiJIUzI1NiJ9.secret\n"}))
	ke := wantOne(t, err, "pulsar.auth.token", ErrInvalid)
	if !strings.Contains(ke.Error(), "white space") || strings.Contains(ke.Error(), "secret") {
		t.Fatalf("got %v; want the white space named, the token not shown", ke)
	}
}

// A path is taken byte for byte: one with white space around it (a trailing newline from a
// `|` block, or from a secret or a ConfigMap in a variable) would name another file — for
// store.path a new, empty store, from which every stream starts again at its start
// position. It is refused, naming the key; white space inside a path is a path's own.
func TestAPathWithWhiteSpaceAroundItIsRefused(t *testing.T) {
	for _, c := range []struct {
		name, globals string
		env           map[string]string
		key           string
	}{
		{"a variable ending in a newline", "", map[string]string{"FERRY_STORE_PATH": "/var/lib/ferry/checkpoints.db\n"}, "store.path"},
		{"a | block", "store:\n  path: |\n    /var/lib/ferry/checkpoints.db\n", nil, "store.path"},
		{"a quoted leading space", "store:\n  path: ' /var/lib/ferry/checkpoints.db'\n", nil, "store.path"},
		{"a control character", "store:\n  path: \"/var/lib/ferry/check\\tpoints.db\"\n", nil, "store.path"},
		{"aeron.dir", "aeron:\n  dir: \"/dev/shm/aeron \"\n", nil, "aeron.dir"},
		{"a token file", "", map[string]string{"FERRY_PULSAR_AUTH_TOKEN_FILE": "/run/secrets/token\n"}, "pulsar.auth.token_file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(doc("archive", c.globals, "")), envOf(c.env))
			ke := wantOne(t, err, c.key, ErrInvalid)
			if msg := ke.Error(); !strings.Contains(msg, "white space") && !strings.Contains(msg, "control character") {
				t.Errorf("got %q; want the white space or control character named", msg)
			}
		})
	}
	cfg, err := Parse([]byte(doc("archive", "store:\n  path: /var/lib/ferry data/checkpoints.db\n", "")), envOf(nil))
	if err != nil || cfg.Store.Path != "/var/lib/ferry data/checkpoints.db" {
		t.Fatalf("a path with a space inside: %+v, %v; want it taken as written", cfg.Store, err)
	}
}

// A path beginning with ~ is refused, naming the key: only a shell expands it, and ferry
// would use a directory called ~ where it runs (for store.path a new, empty store).
func TestAPathBeginningWithATildeIsRefused(t *testing.T) {
	for _, c := range []struct{ globals, key string }{
		{"store:\n  path: ~/ferry/checkpoints.db\n", "store.path"},
		{"aeron:\n  dir: \"~\"\n", "aeron.dir"},
	} {
		_, err := Parse([]byte(doc("archive", c.globals, "")), envOf(nil))
		if ke := wantOne(t, err, c.key, ErrInvalid); !strings.Contains(ke.Error(), "does not expand") {
			t.Errorf("%s: got %v; want the ~ named", c.key, ke)
		}
	}
	cfg, err := Parse([]byte(doc("archive", "store:\n  path: /var/lib/ferry/~old/checkpoints.db\n", "")), envOf(nil))
	if err != nil || cfg.Store.Path != "/var/lib/ferry/~old/checkpoints.db" {
		t.Fatalf("a path with a ~ inside: %+v, %v; want it taken as written", cfg.Store, err)
	}
}

// A mode from FERRY_MODE that is not one is fixed where it came from: the variable, not the
// file (which may say the right mode already); white space around it is named.
func TestEnv_AModeVariableThatIsNotAModeNamesTheVariable(t *testing.T) {
	_, err := Parse([]byte(doc("archive", "", "")), envOf(map[string]string{"FERRY_MODE": "archive "}))
	ke := wantOne(t, err, "mode", ErrInvalid)
	if !strings.Contains(ke.Fix, "set FERRY_MODE=archive") || !strings.Contains(ke.Fix, "unset it") || strings.Contains(ke.Fix, "set mode:") || !strings.Contains(ke.Error(), "white space") {
		t.Fatalf("got %v; want the white space named and the variable's fix", ke)
	}
	_, err = Parse([]byte(doc("archiv", "", "")), envOf(nil))
	if ke := wantOne(t, err, "mode", ErrInvalid); !strings.HasPrefix(ke.Fix, "set mode: archive") {
		t.Fatalf("a mode in the file: fix %q; want the file's", ke.Fix)
	}
}
