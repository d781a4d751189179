package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/channel"
)

func TestParse_DefaultsOfArchiveMode(t *testing.T) {
	c := mustParse(t, doc("archive", "", ""), nil)
	if c.Aeron.Dir != "" ||
		c.Archive.ControlChannel.String() != DefaultControlChannel || c.Archive.ControlStreamID != DefaultControlStreamID ||
		c.Archive.ResponseChannel.String() != DefaultResponseChannel || c.Archive.ResponseStreamID != DefaultResponseStreamID ||
		c.Archive.MessageTimeout != DefaultMessageTimeout || c.Archive.RestartGrace != DefaultRestartGrace ||
		c.Replay.Channel.String() != DefaultReplayChannel || c.Replay.StreamID != DefaultReplayStreamID ||
		c.Store.Path != DefaultStorePath ||
		c.Checkpoint != (Checkpoint{EveryRecords: DefaultEveryRecords, Every: DefaultEvery}) ||
		c.Inflight != (Inflight{MaxMessages: DefaultMaxMessages, MaxBytes: DefaultMaxBytes}) ||
		c.HTTP.Listen != DefaultListen || !c.Pulsar.TLS.ValidateHostname {
		t.Fatalf("defaults: %+v", c)
	}
	s := c.Streams[0]
	if s.Name != "orders" || s.Channel.String() != "aeron:udp?endpoint=localhost:40123" || s.StreamID != 1001 ||
		s.Topic != "persistent://public/default/orders" || s.Start.Kind != StartEarliest || s.Reset {
		t.Fatalf("stream: %+v", s)
	}
}

func TestParse_ExampleFileIsValid(t *testing.T) {
	c, err := Load("testdata/example.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != ModeArchive || c.Aeron.Dir != "/dev/shm/aeron-ferry" || c.Archive.MessageTimeout != 10*time.Second ||
		c.Pulsar.ServiceURL != "pulsar+ssl://pulsar.example.com:6651" || c.Pulsar.TLS.KeyFile != "/etc/ferry/client-key.pem" ||
		c.Pulsar.Auth.TokenFile != "/etc/ferry/token" || c.Pulsar.AdminURL != "https://pulsar.example.com:8443" || c.Inflight.MaxBytes != 64<<20 || len(c.Streams) != 2 ||
		c.Streams[1].Start != (StartPosition{Kind: StartAt, RecordingID: 7, Position: 4096}) {
		t.Fatalf("example: %+v", c)
	}
	if len(c.Warnings()) != 0 {
		t.Fatalf("the example warns: %q", c.Warnings())
	}
	if _, err := Load("testdata/transport.yaml", nil); err != nil {
		t.Fatal(err)
	}
}

// The abridged example in doc.go is valid too.
func TestParse_DocExampleIsValid(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for line := range strings.Lines(string(src)) {
		if yaml, ok := strings.CutPrefix(line, "//\t"); ok {
			b.WriteString(yaml)
		}
	}
	// The abridged example shows both modes' sections; drop transport's.
	yaml := strings.Replace(b.String(), "transport:                     # transport mode only\n  spy: false                   # subscribe with aeron-spy: on this driver\n", "", 1)
	if yaml == b.String() {
		t.Fatal("doc.go example changed: update this test")
	}
	if _, err := Parse([]byte(yaml), nil); err != nil {
		t.Fatalf("doc.go example:\n%s\n%v", yaml, err)
	}
	_, err = Parse([]byte(b.String()), nil)
	wantOne(t, err, "transport.spy", ErrWrongMode)
}

func TestLoad_MissingFile(t *testing.T) {
	_, err := Load("testdata/absent.yaml", nil)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "absent.yaml") {
		t.Fatalf("got %v", err)
	}
}

func TestParse_UnknownKeysAreRejectedWithSuggestion(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, path, fix string
	}{
		{"typo in a section", doc("archive", "checkpoint:\n  every_record: 5\n", ""), "checkpoint.every_record", "did you mean checkpoint.every_records?"},
		{"typo at the top", doc("archive", "stream: []\n", ""), "stream", "did you mean streams?"},
		{"typo in a stream", doc("archive", "", "    topik: x\n"), "streams[0].topik", "did you mean streams[0].topic?"},
		{"case", doc("archive", "HTTP:\n  listen: 127.0.0.1:1\n", ""), "HTTP", "did you mean http?"},
		{"far from everything", doc("archive", "colour: blue\n", ""), "colour", "remove it; allowed at the top level: mode, aeron, archive, replay, transport, pulsar, store, checkpoint, inflight, http, health, streams"},
		{"merge key", doc("archive", "aeron:\n  <<: {dir: x}\n", ""), "aeron.<<", "write the keys out here; an alias of a whole value (key: *name) is read"},
		{"merge key in a stream", "mode: archive\npulsar:\n  service_url: pulsar://x:6650\nstreams:\n  - &a\n    name: a\n    channel: aeron:ipc\n    stream_id: 1\n    topic: a\n" +
			"  - <<: *a\n    name: b\n    channel: aeron:ipc\n    stream_id: 2\n    topic: b\n", "streams[1].<<", "write the keys out here; an alias of a whole value (key: *name) is read"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), nil)
			ke := wantOne(t, err, tt.path, ErrUnknownKey)
			if ke.Fix != tt.fix || ke.Line == 0 {
				t.Fatalf("fix %q line %d, want %q", ke.Fix, ke.Line, tt.fix)
			}
		})
	}
}

func TestParse_InvalidConfigurations(t *testing.T) {
	two := "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40124\n    stream_id: 1002\n    topic: fills\n"
	for _, tt := range []struct {
		name, yaml, path string
		kind             error
	}{
		{"channel syntax", strings.Replace(doc("archive", "", ""), "aeron:udp?endpoint=localhost:40123", "udp://localhost", 1), "streams[0].channel", ErrInvalid},
		{"channel parameter", doc("archive", "replay:\n  channel: aeron:ipc?term-length=3\n", ""), "replay.channel", ErrInvalid},
		{"spy channel", strings.Replace(doc("transport", "", ""), "aeron:udp?endpoint", "aeron-spy:aeron:udp?endpoint", 1), "streams[0].channel", ErrInvalid},
		{"spy replay channel", doc("archive", "replay:\n  channel: aeron-spy:aeron:ipc\n", ""), "replay.channel", ErrInvalid},
		{"unreliable replay channel", doc("archive", "replay:\n  channel: aeron:udp?endpoint=localhost:40200|reliable=false\n", ""), "replay.channel", ErrInvalid},
		{"replay channel without end of stream", doc("archive", "replay:\n  channel: aeron:udp?endpoint=localhost:40200|eos=false\n", ""), "replay.channel", ErrInvalid},
		{"untethered replay channel", doc("archive", "replay:\n  channel: aeron:ipc?tether=false\n", ""), "replay.channel", ErrInvalid},
		{"transport.spy on an ipc stream", strings.Replace(doc("transport", "transport:\n  spy: true\n", ""), "aeron:udp?endpoint=localhost:40123", "aeron:ipc", 1), "streams[0].channel", ErrConflict},
		{"spy control channel", doc("archive", "archive:\n  control_channel: aeron-spy:aeron:udp?endpoint=localhost:8010\n", ""), "archive.control_channel", ErrInvalid},
		{"spy response channel", doc("archive", "archive:\n  response_channel: aeron-spy:aeron:ipc\n", ""), "archive.response_channel", ErrInvalid},
		{"non-persistent topic", strings.Replace(doc("archive", "", ""), "topic: orders", "topic: non-persistent://public/default/orders", 1), "streams[0].topic", ErrInvalid},
		{"topic with two parts", strings.Replace(doc("archive", "", ""), "topic: orders", "topic: public/orders", 1), "streams[0].topic", ErrInvalid},
		{"partition topic", strings.Replace(doc("archive", "", ""), "topic: orders", "topic: orders-partition-0", 1), "streams[0].topic", ErrInvalid},
		{"bad tenant", strings.Replace(doc("archive", "", ""), "topic: orders", "topic: persistent://te nant/ns/orders", 1), "streams[0].topic", ErrInvalid},
		{"bad stream name", strings.Replace(doc("archive", "", ""), "name: orders", "name: or/ders", 1), "streams[0].name", ErrInvalid},
		{"long stream name", strings.Replace(doc("archive", "", ""), "name: orders", "name: "+strings.Repeat("a", 129), 1), "streams[0].name", ErrInvalid},
		{"duplicate stream name", doc("archive", "", strings.Replace(two, "fills\n    channel", "orders\n    channel", 1)), "streams[1].name", ErrConflict},
		{"duplicate channel and stream id", doc("archive", "", strings.Replace(strings.Replace(two, "40124", "40123", 1), "1002", "1001", 1)), "streams[1].stream_id", ErrConflict},
		{"channel within another's", doc("archive", "", strings.Replace(strings.Replace(two, "40124", "40123|alias=fills", 1), "1002", "1001", 1)), "streams[1].stream_id", ErrConflict},
		{"channels overlapping", strings.Replace(doc("archive", "", strings.Replace(strings.Replace(two, "40124", "40123|mtu=8k", 1), "1002", "1001", 1)), "40123\n", "40123|term-length=64k\n", 1), "streams[1].stream_id", ErrConflict},
		{"transport streams on one address", strings.Replace(doc("transport", "", strings.Replace(strings.Replace(two, "40124", "40123|alias=fills", 1), "1002", "1001", 1)), "40123\n", "40123|alias=orders\n", 1), "streams[1].stream_id", ErrConflict},
		{"transport streams on one IPC stream", strings.Replace(doc("transport", "", "  - name: fills\n    channel: aeron:ipc?alias=b\n    stream_id: 1001\n    topic: fills\n"), "aeron:udp?endpoint=localhost:40123", "aeron:ipc?alias=a", 1), "streams[1].stream_id", ErrConflict},
		{"stream on the replay endpoint", doc("archive", "replay:\n  channel: aeron:udp?endpoint=localhost:40200|alias=r\n", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40200|alias=s\n    stream_id: 101\n    topic: fills\n"), "streams[1].stream_id", ErrConflict},
		{"stream on the replay stream", doc("archive", "", "  - name: fills\n    channel: aeron:ipc?alias=fills\n    stream_id: 101\n    topic: fills\n"), "streams[1].stream_id", ErrConflict},
		{"stream on the control stream", doc("archive", "", "  - name: fills\n    channel: aeron:ipc\n    stream_id: 10\n    topic: fills\n"), "streams[1].stream_id", ErrConflict},
		{"stream missing topic", doc("archive", "", "  - name: fills\n    channel: aeron:ipc\n    stream_id: 3\n"), "streams[1].topic", ErrMissing},
		{"stream not a mapping", doc("archive", "", "  - fills\n"), "streams[1]", ErrInvalid},
		{"streams not a list", "mode: archive\npulsar:\n  service_url: pulsar://x:6650\nstreams: orders\n", "streams", ErrInvalid},
		{"no streams", "mode: archive\npulsar:\n  service_url: pulsar://x:6650\nstreams: []\n", "streams", ErrMissing},
		{"streams missing", "mode: archive\npulsar:\n  service_url: pulsar://x:6650\n", "streams", ErrMissing},
		{"service url missing", strings.Replace(doc("archive", "", ""), "  service_url: pulsar://localhost:6650\n", "", 1), "pulsar.service_url", ErrMissing},
		{"service url scheme", strings.Replace(doc("archive", "", ""), "pulsar://localhost", "kafka://localhost", 1), "pulsar.service_url", ErrInvalid},
		{"token and token file", doc("archive", "", "")[:0] + strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  auth:\n    token: abc\n    token_file: /t\n", 1), "pulsar.auth.token_file", ErrConflict},
		{"empty token", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  auth:\n    token: ''\n", 1), "pulsar.auth.token", ErrInvalid},
		{"admin url scheme", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: pulsar://localhost:8080\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url without host", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http:///admin\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with port 0", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://localhost:0\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with a port out of range", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://localhost:99999\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with nothing after ':'", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: \"http://localhost:\"\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with a port and no host", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://:8080\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with a query", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://localhost:8080?x=1\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with the admin API's path", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://localhost:8080/admin/v2\n", 1), "pulsar.admin_url", ErrInvalid},
		{"admin url with the admin API's path and more", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://localhost:8080/proxy/admin/v2/persistent/\n", 1), "pulsar.admin_url", ErrInvalid},
		{"tls without tls url", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  tls:\n    ca_file: /ca.pem\n", 1), "pulsar.tls.ca_file", ErrConflict},
		{"cert without key", strings.Replace(doc("archive", "", ""), "pulsar://localhost:6650\n", "pulsar+ssl://localhost:6651\n  tls:\n    cert_file: /c.pem\n", 1), "pulsar.tls.cert_file", ErrConflict},
		{"boolean yes", strings.Replace(doc("archive", "", ""), "pulsar://localhost:6650\n", "pulsar+ssl://localhost:6651\n  tls:\n    validate_hostname: yes\n", 1), "pulsar.tls.validate_hostname", ErrInvalid},
		{"key given twice", doc("archive", "http:\n  listen: 127.0.0.1:1\n  listen: 127.0.0.1:2\n", ""), "http.listen", ErrConflict},
		{"section is a scalar", doc("archive", "http: 127.0.0.1:1\n", ""), "http", ErrInvalid},
		{"value is a list", doc("archive", "aeron:\n  dir: [a, b]\n", ""), "aeron.dir", ErrInvalid},
		{"null value", doc("archive", "store:\n  path: ~\n", ""), "store.path", ErrInvalid},
		{"size word", doc("archive", "inflight:\n  max_bytes: lots\n", ""), "inflight.max_bytes", ErrInvalid},
		{"replay on the response stream", doc("archive", "replay:\n  stream_id: 20\n", ""), "replay.stream_id", ErrConflict},
		{"listen without port", doc("archive", "http:\n  listen: localhost\n", ""), "http.listen", ErrInvalid},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), nil)
			wantOne(t, err, tt.path, tt.kind)
		})
	}
}

// A key without a value is given one, or left out only where that is allowed; an empty
// variable is unset or given a value.
func TestParse_EmptyValueFix(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		path, fix  string
	}{
		{"required mode", strings.Replace(doc("archive", "", ""), "mode: archive", "mode: ~", 1), nil, "mode", "give it a value; the key is required"},
		{"required service url", strings.Replace(doc("archive", "", ""), "pulsar://localhost:6650", "", 1), nil, "pulsar.service_url", "give it a value; the key is required"},
		{"required stream key", strings.Replace(doc("archive", "", ""), "topic: orders", "topic: null", 1), nil, "streams[0].topic", "give it a value; the key is required"},
		{"key with a default", doc("archive", "store:\n  path: ~\n", ""), nil, "store.path", "give it a value, or remove the key to get the default"},
		{"empty key with a default", doc("archive", "store:\n  path: ''\n", ""), nil, "store.path", "give it a value, or remove the key to get the default"},
		{"optional key without a default", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  auth:\n    token_file: ''\n", 1), nil, "pulsar.auth.token_file", "give it a value, or remove the key"},
		{"empty variable of a key with a default", doc("archive", "", ""), map[string]string{"FERRY_STORE_PATH": ""}, "store.path", "unset FERRY_STORE_PATH, or give it a value"},
		{"empty variable of a required key", doc("archive", "", ""), map[string]string{"FERRY_PULSAR_SERVICE_URL": ""}, "pulsar.service_url", "unset FERRY_PULSAR_SERVICE_URL, or give it a value"},
		{"empty mode variable", doc("archive", "", ""), map[string]string{"FERRY_MODE": ""}, "mode", "unset FERRY_MODE, or give it a value"},
		// Not taken for the default, which could be another media driver's.
		{"empty aeron.dir", doc("archive", "aeron:\n  dir: ''\n", ""), nil, "aeron.dir", "give it a value, or remove the key to get the default"},
		{"empty aeron.dir variable", doc("archive", "", ""), map[string]string{"FERRY_AERON_DIR": ""}, "aeron.dir", "unset FERRY_AERON_DIR, or give it a value"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), envOf(tt.env))
			ke := wantOne(t, err, tt.path, ErrInvalid)
			if ke.Fix != tt.fix {
				t.Fatalf("fix %q, want %q", ke.Fix, tt.fix)
			}
		})
	}
}

// A token from the environment that conflicts with token_file is named as such.
func TestParse_TokenConflictNamesWhereTheTokenCameFrom(t *testing.T) {
	inFile := strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  auth:\n    token_file: /t\n", 1)
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		fix        string
	}{
		{"both in the file", strings.Replace(inFile, "token_file: /t\n", "token: abc\n    token_file: /t\n", 1), nil, "keep one of pulsar.auth.token and pulsar.auth.token_file"},
		{"token from the environment", inFile, map[string]string{"FERRY_PULSAR_AUTH_TOKEN": "abc"}, "unset FERRY_PULSAR_AUTH_TOKEN, or remove pulsar.auth.token_file"},
		{"both from the environment", doc("archive", "", ""), map[string]string{"FERRY_PULSAR_AUTH_TOKEN": "abc", "FERRY_PULSAR_AUTH_TOKEN_FILE": "/t"}, "unset FERRY_PULSAR_AUTH_TOKEN, or unset FERRY_PULSAR_AUTH_TOKEN_FILE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), envOf(tt.env))
			ke := wantOne(t, err, "pulsar.auth.token_file", ErrConflict)
			if ke.Fix != tt.fix {
				t.Fatalf("fix %q, want %q", ke.Fix, tt.fix)
			}
			if fromEnv := tt.env["FERRY_PULSAR_AUTH_TOKEN"] != ""; fromEnv != strings.Contains(ke.Problem, "FERRY_PULSAR_AUTH_TOKEN") {
				t.Fatalf("problem %q: want FERRY_PULSAR_AUTH_TOKEN named if and only if the token came from it", ke.Problem)
			}
		})
	}
}

func TestParse_ChannelErrorKeepsItsCause(t *testing.T) {
	_, err := Parse([]byte(doc("archive", "replay:\n  channel: aeron:ipc?term-length=3\n", "")), nil)
	var pe *channel.ParamError
	if !errors.As(err, &pe) || pe.Key != "term-length" || !errors.Is(err, channel.ErrInvalidParam) {
		t.Fatalf("got %v", err)
	}
}

func TestParse_AllProblemsAreReportedInFileOrder(t *testing.T) {
	yaml := `inflight:
  max_messages: 0
checkpoint:
  every_records: -1
pulsar:
  service_url: pulsar://localhost:6650
  servce_url: x
streams:
  - name: orders
    channel: aeron:ipc
    stream_id: 1
    topic: orders
    start_position: -2
  - name: fills
    channel: aeron:ipc
    stream_id: 2
`
	_, err := Parse([]byte(yaml), nil)
	kes := keyErrors(t, err)
	var got []string
	for _, ke := range kes {
		got = append(got, ke.Path)
	}
	want := []string{"mode", "inflight.max_messages", "checkpoint.every_records", "pulsar.servce_url", "streams[0].start_position", "streams[1].topic"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v\n%v", got, want, err)
	}
	for _, kind := range []error{ErrMissing, ErrInvalid, ErrUnknownKey} {
		if !errors.Is(err, kind) {
			t.Errorf("joined error does not match %v", kind)
		}
	}
}

func TestParse_NotAConfiguration(t *testing.T) {
	for _, tt := range []struct {
		name, yaml string
		want       error
	}{
		{"bad YAML", "mode: [archive\n", ErrSyntax},
		{"tab indentation", "pulsar:\n\tservice_url: x\n", ErrSyntax},
		{"two documents", doc("archive", "", "") + "---\nmode: transport\n", ErrSyntax},
		{"a list", "- mode: archive\n", ErrSyntax},
		{"a scalar", "archive\n", ErrSyntax},
		{"too large", "mode: archive\n" + strings.Repeat("#", MaxSize), ErrTooLarge},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Parse([]byte(tt.yaml), nil); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	for _, empty := range []string{"", "# nothing\n", "~\n"} {
		_, err := Parse([]byte(empty), nil)
		if kes := keyErrors(t, err); len(kes) != 3 || kes[0].Path != "mode" {
			t.Fatalf("empty %q: %v", empty, err)
		}
	}
}

func TestParse_AliasesAreFollowed(t *testing.T) {
	yaml := "mode: archive\nx-common: &ch aeron:ipc\n"
	_, err := Parse([]byte(yaml+"pulsar:\n  service_url: pulsar://h:6650\nstreams:\n  - {name: a, channel: *ch, stream_id: 1, topic: a}\n"), nil)
	wantOne(t, err, "x-common", ErrUnknownKey) // no room for anchors at the top level
	c := mustParse(t, "mode: archive\npulsar:\n  service_url: pulsar://h:6650\nstreams:\n  - &s {name: a, channel: aeron:ipc, stream_id: 1, topic: a}\n  - {name: b, channel: aeron:ipc, stream_id: 2, topic: b}\n", nil)
	if len(c.Streams) != 2 {
		t.Fatalf("streams: %+v", c.Streams)
	}
}

// An error about a value given by an alias (*n) is on the line of the alias's key, not on
// the anchor's line (where the alias's node is): that is where the value must be fixed.
func TestParse_AnAliasIsReportedOnItsKeysLine(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, path string
		line             int
	}{
		{"a value", doc("archive", "inflight:\n  max_bytes: &n 0\ncheckpoint:\n  every_records: *n\n", ""), "checkpoint.every_records", 5},
		{"a list for a value", doc("archive", "aeron:\n  dir: &d [a]\nstore:\n  path: *d\n", ""), "store.path", 5},
		{"a value in a stream", doc("archive", "", "    reset: &r maybe\n  - name: fills\n    channel: aeron:ipc\n    stream_id: 1002\n    topic: fills\n    reset: *r\n"), "streams[1].reset", 14},
		{"a stream", doc("archive", "x-anchor: &s fills\n", "  - *s\n"), "streams[1]", 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), nil)
			var found bool
			for _, ke := range keyErrors(t, err) {
				if ke.Path != tt.path {
					continue
				}
				found = true
				if ke.Line != tt.line || !strings.Contains(ke.Error(), fmt.Sprintf("(line %d)", tt.line)) {
					t.Errorf("%v: line %d; want %d, the alias's key's", ke, ke.Line, tt.line)
				}
			}
			if !found {
				t.Fatalf("no error for %s: %v", tt.path, err)
			}
		})
	}
}

func TestKeyError_Format(t *testing.T) {
	_, err := Parse([]byte(doc("archive", "", "    start_position: -2\n    start_recording_id: 3\n")), nil)
	want := `config: streams[0].start_position = "-2" (line 9): is negative; positions start at 0 and there is no negative sentinel; fix: use earliest, latest, or a position >= 0 (with start_recording_id)`
	if err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
	_, err = Parse([]byte(doc("", "", "")), nil)
	if want := "config: mode: is missing; there is no default; fix: " + modeFix; err == nil || err.Error() != want {
		t.Fatalf("got\n%v\nwant\n%s", err, want)
	}
}

func TestSecret_NeverPrints(t *testing.T) {
	yaml := strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  auth:\n    token: s3cr3t\n", 1)
	c := mustParse(t, yaml, nil)
	if string(c.Pulsar.Auth.Token) != "s3cr3t" {
		t.Fatalf("token %q", string(c.Pulsar.Auth.Token))
	}
	for _, f := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(f, c.Pulsar); strings.Contains(s, "s3cr3t") {
			t.Errorf("%s prints the token: %s", f, s)
		}
	}
	if !strings.Contains(strings.Join(c.Warnings(), "\n"), "pulsar.auth.token is written in the configuration file") {
		t.Errorf("warnings %q", c.Warnings())
	}
	// An error about the token does not quote it.
	_, err := Parse([]byte(yaml), envOf(map[string]string{"FERRY_MODE": "archive", "FERRY_PULSAR_AUTH_TOKEN_FILE": "/t"}))
	ke := wantOne(t, err, "pulsar.auth.token_file", ErrConflict)
	_, err = Parse([]byte(strings.Replace(yaml, "token: s3cr3t", "token: [s3cr3t]", 1)), nil)
	ke = wantOne(t, err, "pulsar.auth.token", ErrInvalid)
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("error quotes the token: %v", ke)
	}
}

func TestWarnings_InsecureSettings(t *testing.T) {
	yaml := strings.Replace(doc("archive", "http:\n  listen: 0.0.0.0:8089\n", ""), "pulsar://localhost:6650\n",
		"pulsar+ssl://localhost:6651\n  tls:\n    insecure_skip_verify: true\n", 1)
	w := mustParse(t, yaml, nil).Warnings()
	if len(w) != 2 || !strings.Contains(w[0], "insecure_skip_verify") || !strings.Contains(w[1], "0.0.0.0:8089") {
		t.Fatalf("warnings %q", w)
	}
	for _, listen := range []string{"'[::1]:8089'", "localhost:8089", "LOCALHOST:8089", "LocalHost:8089", "127.0.0.2:8089"} {
		if w := mustParse(t, doc("archive", "http:\n  listen: "+listen+"\n", ""), nil).Warnings(); len(w) != 0 {
			t.Fatalf("loopback listen %s warns: %q", listen, w)
		}
	}
	yaml = strings.Replace(doc("archive", "", ""), "pulsar://localhost:6650\n",
		"pulsar+ssl://localhost:6651\n  tls:\n    ca_file: /ca.pem\n    validate_hostname: false\n", 1)
	if w := mustParse(t, yaml, nil).Warnings(); len(w) != 1 || !strings.Contains(w[0], "pulsar.tls.validate_hostname is false") {
		t.Fatalf("warnings %q; want validate_hostname's", w)
	}
	yaml = strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: https://localhost:8443\n  tls:\n    ca_file: /ca.pem\n    validate_hostname: false\n", 1)
	if w := mustParse(t, yaml, nil).Warnings(); len(w) != 1 || !strings.Contains(w[0], "pulsar.tls.validate_hostname is false") {
		t.Fatalf("an https:// admin URL: warnings %q; want validate_hostname's", w)
	}
}

// validate_hostname: false checks the chain only: without a CA of the operator's, the
// system's roots would vouch for any certificate they trust, for any name.
func TestValidateHostnameFalseWithoutACAFileIsRefused(t *testing.T) {
	yaml := strings.Replace(doc("archive", "", ""), "pulsar://localhost:6650\n", "pulsar+ssl://localhost:6651\n  tls:\n    validate_hostname: false\n", 1)
	_, err := Parse([]byte(yaml), nil)
	if ke := wantOne(t, err, "pulsar.tls.validate_hostname", ErrConflict); !strings.Contains(ke.Fix, "pulsar.tls.ca_file") {
		t.Fatalf("fix %q; want ca_file named", ke.Fix)
	}
}

// Streams on one stream id are accepted when their channels differ in a parameter both set
// (no recording is selected by both), and a UDP stream on the replay's stream id is accepted
// on another address.
func TestParse_StreamsThatCannotShareARecordingAreAccepted(t *testing.T) {
	mustParse(t, doc("archive", "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40124\n    stream_id: 1001\n    topic: fills\n"), nil)
	mustParse(t, strings.Replace(doc("archive", "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40123|alias=b\n    stream_id: 1001\n    topic: fills\n"),
		"40123\n", "40123|alias=a\n", 1), nil)
	mustParse(t, doc("archive", "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40124\n    stream_id: 101\n    topic: fills\n"), nil)
	// Port 0 is no shared address: MDC subscriptions to two publishers' control addresses.
	mustParse(t, strings.Replace(doc("transport", "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:0|control=pubb:40000|control-mode=dynamic\n    stream_id: 1001\n    topic: fills\n"),
		"aeron:udp?endpoint=localhost:40123", "aeron:udp?endpoint=localhost:0|control=puba:40000|control-mode=dynamic", 1), nil)
	// In transport mode, other sessions of one address are other messages.
	mustParse(t, strings.Replace(doc("transport", "", "  - name: fills\n    channel: aeron:ipc?session-id=2\n    stream_id: 1001\n    topic: fills\n"),
		"aeron:udp?endpoint=localhost:40123", "aeron:ipc?session-id=1", 1), nil)
}

// A service URL is checked host by host as pulsar-client-go v0.19.0 reads it, so that
// `ferry validate` refuses what `ferry run` would: each host of a list is a host name, an
// IPv4 address or an IPv6 one in brackets, with a port from 1 to 65535 or none (the
// scheme's default); nothing follows the hosts but a "/", which the client ignores.
func TestParse_ServiceURLIsCheckedHostByHost(t *testing.T) {
	for _, tt := range []struct{ url, want string }{
		{"pulsar://localhost:abc", "invalid port"},
		{"pulsar://localhost:", "invalid port"},
		{"pulsar://localhost:0", "invalid port"},
		{"http://h:99999", "invalid port"},
		{"pulsar://:6650", "no host"},
		{"pulsar:///", "no host"},
		{"pulsar://h:6650/admin?x=1#f", "path, query or fragment"},
		{"pulsar://h:6650?x=1", "path, query or fragment"},
		{"pulsar://user@h:6650", "user"},
		{"pulsar://h1:6650,,h2:6650", "empty host"},
		{"pulsar://h1:6650,", "empty host"},
		{"pulsar://h1:6650,:6650", "no host"},
		{"pulsar://h1:6650,h2:x", "invalid port"},
		{"pulsar://::1:6650", "more than one ':'"},
		{"pulsar://[::1:6650", "no ']'"},
		{"pulsar://[broker]:6650", "not an IPv6 address"},
		{"pulsar://h^:6650", "invalid host"},
	} {
		t.Run(tt.url, func(t *testing.T) {
			_, err := Parse([]byte(doc("archive", "", "")), envOf(map[string]string{"FERRY_PULSAR_SERVICE_URL": tt.url}))
			if ke := wantOne(t, err, "pulsar.service_url", ErrInvalid); !strings.Contains(ke.Problem, tt.want) {
				t.Fatalf("got %v; want %q said", ke, tt.want)
			}
		})
	}
	for _, url := range []string{
		"pulsar://broker:6650", "pulsar://broker:6650/", "pulsar://broker", "pulsar+ssl://broker", "http://broker", "https://broker:8443",
		"pulsar://h1:6650,h2:6650,h3", "pulsar://h1:6650;h2:6650", "pulsar://10.0.0.1:6650,10.0.0.2:6650/",
		"pulsar://[::1]:6650", "pulsar://[::1]", "pulsar://[::1]:6650,[fe80::1]:6650",
	} {
		if c := mustParse(t, doc("archive", "", ""), map[string]string{"FERRY_PULSAR_SERVICE_URL": url}); c.Pulsar.ServiceURL != url {
			t.Errorf("service_url %q read as %q", url, c.Pulsar.ServiceURL)
		}
	}
}

// Two streams on one topic are refused, whatever the spelling of the topic: a short name is
// persistent://public/default/<name>. The error names both streams, the topic and the fix.
func TestParse_TwoStreamsOnOneTopicAreRefused(t *testing.T) {
	for _, tt := range []struct{ mode, topic string }{
		{"archive", "persistent://public/default/orders"},
		{"archive", "public/default/orders"},
		{"archive", "orders"},
	} {
		t.Run(tt.mode+" "+tt.topic, func(t *testing.T) {
			_, err := Parse([]byte(doc(tt.mode, "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40124\n    stream_id: 1002\n    topic: "+tt.topic+"\n")), nil)
			ke := wantOne(t, err, "streams[1].topic", ErrConflict)
			for _, want := range []string{"persistent://public/default/orders", `stream "fills"`, `stream "orders" (streams[0])`} {
				if !strings.Contains(ke.Problem, want) {
					t.Errorf("problem %q does not name %s", ke.Problem, want)
				}
			}
			if ke.Fix != "give each stream its own topic" || !strings.Contains(ke.Problem, "resume") {
				t.Errorf("got %v; want each stream given its own topic, and the resume check named", ke)
			}
		})
	}
	mustParse(t, doc("archive", "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40124\n    stream_id: 1002\n    topic: other/default/orders\n"), nil)
	// Transport mode, at most once and with no resume check: streams may share a topic.
	mustParse(t, doc("transport", "", "  - name: fills\n    channel: aeron:udp?endpoint=localhost:40124\n    stream_id: 1002\n    topic: orders\n"), nil)
}

// TLS settings serve an https:// admin URL too, beside a plain pulsar:// service URL.
func TestParse_TLSSettingsWithAnHTTPSAdminURL(t *testing.T) {
	c := mustParse(t, strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: HTTPS://localhost:8443/\n  tls:\n    ca_file: /ca.pem\n", 1), nil)
	if c.Pulsar.AdminURL != "https://localhost:8443" || c.Pulsar.TLS.CAFile != "/ca.pem" {
		t.Fatalf("pulsar: %+v", c.Pulsar)
	}
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("warnings %q", w)
	}
	// In transport mode too: whether a producer that answers nothing is connected.
	if c := mustParse(t, strings.Replace(doc("transport", "", ""), "6650\n", "6650\n  admin_url: http://localhost:8080\n", 1), nil); c.Pulsar.AdminURL != "http://localhost:8080" {
		t.Fatalf("admin_url in transport mode: %q", c.Pulsar.AdminURL)
	}
	// A path before the admin API's own: a proxy may serve it there.
	if c := mustParse(t, strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://proxy:8080/pulsar/\n", 1), nil); c.Pulsar.AdminURL != "http://proxy:8080/pulsar" {
		t.Fatalf("admin_url under a path: %q", c.Pulsar.AdminURL)
	}
	c = mustParse(t, strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: http://localhost:8080\n  auth:\n    token_file: /t\n", 1), nil)
	if w := c.Warnings(); len(w) != 2 || !strings.Contains(w[0], "the token goes to the broker in clear text") || !strings.Contains(w[1], "the token goes to the admin API in clear text") {
		t.Fatalf("pulsar:// and an http:// admin URL with a token: warnings %q", w)
	}
	c = mustParse(t, strings.Replace(doc("archive", "", ""), "pulsar://localhost:6650\n", "pulsar+ssl://localhost:6651\n  admin_url: https://localhost:8443\n  auth:\n    token_file: /t\n", 1), nil)
	if w := c.Warnings(); len(w) != 0 {
		t.Fatalf("a token over TLS to both: warnings %q", w)
	}
}

// A TLS setting without a TLS URL to use it is refused with a fix that names both URLs, in
// either mode (pulsar.admin_url is taken in both).
func TestATLSSettingWithoutATLSURLIsRefusedWithAFixTheModeAllows(t *testing.T) {
	for _, mode := range []string{"archive", "transport"} {
		_, err := Parse([]byte(strings.Replace(doc(mode, "", ""), "6650\n", "6650\n  tls:\n    ca_file: /ca.pem\n", 1)), nil)
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Path != "pulsar.tls.ca_file" || !strings.Contains(ke.Fix, "pulsar.service_url (or https:// in pulsar.admin_url)") {
			t.Fatalf("%s mode: %v; want pulsar.tls.ca_file refused, the fix naming both URLs", mode, err)
		}
	}
}

// The URL to change is named where it was set: a variable replaces the file's key, so
// editing the file would change nothing.
func TestATLSSettingWithoutATLSURLNamesTheVariableTheURLCameFrom(t *testing.T) {
	yaml := strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  tls:\n    ca_file: /ca.pem\n", 1)
	_, err := Parse([]byte(yaml), envOf(map[string]string{"FERRY_PULSAR_SERVICE_URL": "pulsar://broker:6650"}))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Path != "pulsar.tls.ca_file" {
		t.Fatalf("%v; want pulsar.tls.ca_file refused", err)
	}
	if want := "FERRY_PULSAR_SERVICE_URL uses pulsar://"; !strings.Contains(ke.Problem, want) {
		t.Errorf("problem %q; want it to say %q", ke.Problem, want)
	}
	if want := "use pulsar+ssl:// or https:// in FERRY_PULSAR_SERVICE_URL "; !strings.HasPrefix(ke.Fix, want) {
		t.Errorf("fix %q; want it to begin %q", ke.Fix, want)
	}
}

// A TLS setting refused is taken away where it came from: a variable is unset, a key
// removed (as the token conflict says).
func TestParse_ATLSSettingIsDroppedWhereItCameFrom(t *testing.T) {
	overTLS := map[string]string{"FERRY_PULSAR_SERVICE_URL": "pulsar+ssl://broker:6651"}
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		path, fix  string
	}{
		{"ca_file in the file", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  tls:\n    ca_file: /ca.pem\n", 1), nil,
			"pulsar.tls.ca_file", ", or remove pulsar.tls.ca_file"},
		{"ca_file from the environment", doc("archive", "", ""), map[string]string{"FERRY_PULSAR_TLS_CA_FILE": "/etc/ferry/ca.pem"},
			"pulsar.tls.ca_file", ", or unset FERRY_PULSAR_TLS_CA_FILE"},
		{"key_file from the environment, transport mode", strings.Replace(doc("transport", "", ""), "6650\n", "6650\n  tls:\n    cert_file: /c.pem\n", 1), map[string]string{"FERRY_PULSAR_TLS_KEY_FILE": "/k.pem"},
			"pulsar.tls.key_file", ", or unset FERRY_PULSAR_TLS_KEY_FILE"},
		{"validate_hostname in the file", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  tls:\n    validate_hostname: false\n", 1), overTLS,
			"pulsar.tls.validate_hostname", ", or remove pulsar.tls.validate_hostname"},
		{"validate_hostname from the environment", doc("archive", "", ""), map[string]string{"FERRY_PULSAR_SERVICE_URL": "pulsar+ssl://broker:6651", "FERRY_PULSAR_TLS_VALIDATE_HOSTNAME": "false"},
			"pulsar.tls.validate_hostname", ", or unset FERRY_PULSAR_TLS_VALIDATE_HOSTNAME"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), envOf(tt.env))
			var ke *KeyError
			for _, e := range keyErrors(t, err) {
				if e.Path == tt.path && errors.Is(e, ErrConflict) {
					ke = e
				}
			}
			if ke == nil {
				t.Fatalf("no conflict for %s: %v", tt.path, err)
			}
			if !strings.HasSuffix(ke.Fix, tt.fix) {
				t.Fatalf("fix %q; want it to end %q", ke.Fix, tt.fix)
			}
		})
	}
}

// One mistake is one error: a missing mode is said once, not again for each TLS setting
// whose fix depends on the mode; an admin URL refused (an https:// one mistyped, maybe)
// does not also have the TLS settings it would use called settings without a TLS URL; a
// TLS setting whose value is refused (an empty variable) is not also called one.
func TestParse_OneMistakeOneError(t *testing.T) {
	tls := "6650\n  tls:\n    ca_file: /ca.pem\n    insecure_skip_verify: false\n"
	for _, c := range []struct {
		name, yaml string
		env        map[string]string
		want       []string // the paths of the errors, in order
	}{
		{"mode missing, two TLS settings over pulsar://", strings.Replace(doc("", "", ""), "6650\n", tls, 1), nil, []string{"mode", "pulsar.tls.ca_file", "pulsar.tls.insecure_skip_verify"}},
		{"admin URL mistyped, a CA file", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  admin_url: https//broker:8443\n  tls:\n    ca_file: /ca.pem\n", 1), nil, []string{"pulsar.admin_url"}},
		{"an empty CA file variable over pulsar://", doc("archive", "", ""), map[string]string{"FERRY_PULSAR_TLS_CA_FILE": ""}, []string{"pulsar.tls.ca_file"}},
		{"validate_hostname not a boolean over pulsar://", strings.Replace(doc("archive", "", ""), "6650\n", "6650\n  tls:\n    validate_hostname: yes\n", 1), nil, []string{"pulsar.tls.validate_hostname"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml), envOf(c.env))
			var got []string
			for _, e := range keyErrors(t, err) {
				got = append(got, e.Path)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("errors at %q; want %q (%v)", got, c.want, err)
			}
		})
	}
}
