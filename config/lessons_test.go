package config

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLesson17_ModeIsRequiredAndNamesBothChoices(t *testing.T) {
	_, err := Parse([]byte(doc("", "", "")), nil)
	ke := wantOne(t, err, "mode", ErrMissing)
	if !strings.Contains(ke.Fix, "mode: archive") || !strings.Contains(ke.Fix, "mode: transport") {
		t.Fatalf("fix %q does not name both modes", ke.Fix)
	}
	_, err = Parse([]byte(doc("Archive", "", "")), nil)
	wantOne(t, err, "mode", ErrInvalid)
}

func TestLesson17_ModeIsExplicitAndPrintable(t *testing.T) {
	for _, tt := range []struct {
		mode string
		want Mode
	}{{"archive", ModeArchive}, {"transport", ModeTransport}} {
		c := mustParse(t, doc(tt.mode, "", ""), nil)
		if c.Mode != tt.want || c.Mode.String() != tt.mode {
			t.Errorf("mode %s: got %v", tt.mode, c.Mode)
		}
	}
	if Mode(0).String() != "unset" {
		t.Errorf("zero Mode prints %q", Mode(0).String())
	}
}

// Keys of the other mode are rejected because they are present, even when
// their value is the default.
func TestLesson17_SettingOfTheOtherModeIsRejectedByPresence(t *testing.T) {
	for _, tt := range []struct {
		name, mode, globals, stream, path string
	}{
		{"control stream id at its default", "transport", "archive:\n  control_stream_id: 10\n", "", "archive.control_stream_id"},
		{"control channel at its default", "transport", "archive:\n  control_channel: aeron:ipc?term-length=64k\n", "", "archive.control_channel"},
		{"replay channel at its default", "transport", "replay:\n  channel: aeron:ipc\n", "", "replay.channel"},
		{"store path at its default", "transport", "store:\n  path: ./ferry-data/checkpoints.db\n", "", "store.path"},
		{"checkpoint records at its default", "transport", "checkpoint:\n  every_records: 1000\n", "", "checkpoint.every_records"},
		{"checkpoint ms at its default", "transport", "checkpoint:\n  every_ms: 1000\n", "", "checkpoint.every_ms"},
		{"empty archive section", "transport", "archive: {}\n", "", "archive"},
		{"null checkpoint section", "transport", "checkpoint:\n", "", "checkpoint"},
		{"start position at its default", "transport", "", "    start_position: earliest\n", "streams[0].start_position"},
		{"reset false", "transport", "", "    reset: false\n", "streams[0].reset"},
		{"start recording id", "transport", "", "    start_recording_id: 0\n", "streams[0].start_recording_id"},
		{"spy at its default", "archive", "transport:\n  spy: false\n", "", "transport.spy"},
		{"empty transport section", "archive", "transport:\n", "", "transport"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(doc(tt.mode, tt.globals, tt.stream)), nil)
			ke := wantOne(t, err, tt.path, ErrWrongMode)
			if ke.Line == 0 || !strings.Contains(ke.Problem, "mode is "+tt.mode) {
				t.Fatalf("got %v, want a line and the selected mode", ke)
			}
		})
	}
}

func TestLesson17_EnvironmentOverrideOfTheOtherModeIsRejected(t *testing.T) {
	for _, tt := range []struct {
		mode, env, value, path string
	}{
		{"transport", "FERRY_CHECKPOINT_EVERY_MS", "1000", "checkpoint.every_ms"},
		{"transport", "FERRY_STORE_PATH", "", "store.path"}, // set but empty is present
		{"archive", "FERRY_TRANSPORT_SPY", "false", "transport.spy"},
	} {
		t.Run(tt.env, func(t *testing.T) {
			_, err := Parse([]byte(doc(tt.mode, "", "")), envOf(map[string]string{tt.env: tt.value}))
			ke := wantOne(t, err, tt.path, ErrWrongMode)
			if ke.Source != tt.env || !strings.Contains(ke.Fix, "unset "+tt.env) {
				t.Fatalf("got %v, want the variable named as source and in the fix", ke)
			}
		})
	}
}

func TestLesson17_ModeFromEnvironmentDecidesWhatIsRejected(t *testing.T) {
	yaml := doc("archive", "checkpoint:\n  every_records: 500\n", "")
	mustParse(t, yaml, nil)
	_, err := Parse([]byte(yaml), envOf(map[string]string{"FERRY_MODE": "transport"}))
	ke := wantOne(t, err, "checkpoint.every_records", ErrWrongMode)
	// The file's mode is overridden: the fix names the variable, not the file's key.
	if want := "remove checkpoint.every_records, or set FERRY_MODE=archive"; ke.Fix != want {
		t.Fatalf("fix %q, want %q", ke.Fix, want)
	}
}

func TestLesson17_SettingsOfTheOtherModeAreZero(t *testing.T) {
	c := mustParse(t, doc("transport", "", ""), nil)
	if !c.Archive.ControlChannel.IsZero() || c.Archive.ControlStreamID != 0 || !c.Replay.Channel.IsZero() ||
		c.Replay.StreamID != 0 || c.Store != (Store{}) || c.Checkpoint != (Checkpoint{}) {
		t.Fatalf("transport mode has archive settings: %+v %+v %+v %+v", c.Archive, c.Replay, c.Store, c.Checkpoint)
	}
	if c.Streams[0].Start != (StartPosition{}) {
		t.Fatalf("transport mode has a start position: %+v", c.Streams[0].Start)
	}
	c = mustParse(t, doc("archive", "", ""), nil)
	if c.Transport != (Transport{}) {
		t.Fatalf("archive mode has transport settings: %+v", c.Transport)
	}
}

func TestLesson17_TransportModeWarnsAtMostOnce(t *testing.T) {
	c := mustParse(t, doc("transport", "", ""), nil)
	if !slices.ContainsFunc(c.Warnings(), func(w string) bool { return strings.Contains(w, "at most once") }) {
		t.Fatalf("warnings %q do not state at-most-once", c.Warnings())
	}
	if w := mustParse(t, doc("archive", "", ""), nil).Warnings(); len(w) != 0 {
		t.Fatalf("archive mode with defaults warns: %q", w)
	}
}

func TestLesson18_ResetWarnsOnEveryStartWhileSet(t *testing.T) {
	yaml := doc("archive", "", "    reset: true\n")
	want := `streams[0].reset is set: the checkpoint of stream "orders" is deleted on every start; remove it after this start`
	for start := range 3 { // every Parse is a start: the warning never goes away by itself
		c := mustParse(t, yaml, nil)
		if !c.Streams[0].Reset || !slices.Contains(c.Warnings(), want) {
			t.Fatalf("start %d: Reset %v, warnings %q", start, c.Streams[0].Reset, c.Warnings())
		}
	}
	c := mustParse(t, doc("archive", "", "    reset: false\n"), nil)
	if c.Streams[0].Reset || len(c.Warnings()) != 0 {
		t.Fatalf("reset: false gives Reset %v, warnings %q", c.Streams[0].Reset, c.Warnings())
	}
}

func TestLesson18_WarningsAreACopy(t *testing.T) {
	c := mustParse(t, doc("archive", "", "    reset: true\n"), nil)
	c.Warnings()[0] = "changed"
	if c.Warnings()[0] == "changed" {
		t.Fatal("Warnings returns the Config's own slice")
	}
}

func TestLesson18_StartPositionIsRepresented(t *testing.T) {
	for _, tt := range []struct {
		stream string
		want   StartPosition
	}{
		{"", StartPosition{Kind: StartEarliest}},
		{"    start_position: earliest\n", StartPosition{Kind: StartEarliest}},
		{"    start_position: latest\n", StartPosition{Kind: StartLatest}},
		{"    start_position: 0\n    start_recording_id: 0\n", StartPosition{Kind: StartAt}},
		{"    start_position: 4096\n    start_recording_id: 7\n", StartPosition{Kind: StartAt, RecordingID: 7, Position: 4096}},
	} {
		c := mustParse(t, doc("archive", "", tt.stream), nil)
		if got := c.Streams[0].Start; got != tt.want {
			t.Errorf("%q: got %+v, want %+v", tt.stream, got, tt.want)
		}
	}
}

// A position is per recording (lesson 20), so it never comes alone.
func TestLesson18_PositionAndRecordingComeTogether(t *testing.T) {
	_, err := Parse([]byte(doc("archive", "", "    start_position: 4096\n")), nil)
	wantOne(t, err, "streams[0].start_recording_id", ErrMissing)
	_, err = Parse([]byte(doc("archive", "", "    start_recording_id: 7\n")), nil)
	wantOne(t, err, "streams[0].start_recording_id", ErrConflict)
	_, err = Parse([]byte(doc("archive", "", "    start_position: latest\n    start_recording_id: 7\n")), nil)
	wantOne(t, err, "streams[0].start_recording_id", ErrConflict)
}

func TestLesson19_OutOfRangeValuesAreRejected(t *testing.T) {
	for _, tt := range []struct {
		name, globals, stream, path, value string
	}{
		{"start position -2", "", "    start_position: -2\n    start_recording_id: 1\n", "streams[0].start_position", "-2"},
		{"start position -1 is no sentinel", "", "    start_position: -1\n    start_recording_id: 1\n", "streams[0].start_position", "-1"},
		{"start position unaligned", "", "    start_position: 33\n    start_recording_id: 1\n", "streams[0].start_position", "33"},
		{"start position word", "", "    start_position: oldest\n", "streams[0].start_position", "oldest"},
		{"start recording id -1", "", "    start_position: 0\n    start_recording_id: -1\n", "streams[0].start_recording_id", "-1"},
		{"stream id above int32", "", "", "streams[0].stream_id", "2147483648"},
		{"every_records 0", "checkpoint:\n  every_records: 0\n", "", "checkpoint.every_records", "0"},
		{"every_records negative", "checkpoint:\n  every_records: -1\n", "", "checkpoint.every_records", "-1"},
		{"every_ms 0", "checkpoint:\n  every_ms: 0\n", "", "checkpoint.every_ms", "0"},
		{"every_ms negative", "checkpoint:\n  every_ms: -5\n", "", "checkpoint.every_ms", "-5"},
		{"every_ms above an hour", "checkpoint:\n  every_ms: 3600001\n", "", "checkpoint.every_ms", "3600001"},
		{"max_messages 0", "inflight:\n  max_messages: 0\n", "", "inflight.max_messages", "0"},
		{"max_bytes 0", "inflight:\n  max_bytes: 0\n", "", "inflight.max_bytes", "0"},
		{"max_bytes 0k", "inflight:\n  max_bytes: 0k\n", "", "inflight.max_bytes", "0k"},
		{"max_bytes negative", "inflight:\n  max_bytes: -1m\n", "", "inflight.max_bytes", "-1m"},
		{"max_bytes overflow", "inflight:\n  max_bytes: 9223372036854775807g\n", "", "inflight.max_bytes", "9223372036854775807g"},
		{"control stream id below int32", "archive:\n  control_stream_id: -2147483649\n", "", "archive.control_stream_id", "-2147483649"},
		{"message timeout 0", "archive:\n  message_timeout: 0s\n", "", "archive.message_timeout", "0s"},
		{"message timeout negative", "archive:\n  message_timeout: -1s\n", "", "archive.message_timeout", "-1s"},
		{"message timeout without unit", "archive:\n  message_timeout: 10\n", "", "archive.message_timeout", "10"},
		{"message timeout of milliseconds", "archive:\n  message_timeout: 10ms\n", "", "archive.message_timeout", "10ms"},
		{"restart grace negative", "archive:\n  restart_grace: -1s\n", "", "archive.restart_grace", "-1s"},
		{"restart grace above an hour", "archive:\n  restart_grace: 61m\n", "", "archive.restart_grace", "61m"},
		{"listen port 0", "http:\n  listen: 127.0.0.1:0\n", "", "http.listen", "127.0.0.1:0"},
		{"listen port 70000", "http:\n  listen: 127.0.0.1:70000\n", "", "http.listen", "127.0.0.1:70000"},
		{"stall_after 0", "health:\n  stall_after: 0s\n", "", "health.stall_after", "0s"},
		{"stall_after below a second", "health:\n  stall_after: 500ms\n", "", "health.stall_after", "500ms"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			yaml := doc("archive", tt.globals, tt.stream)
			if tt.path == "streams[0].stream_id" {
				yaml = strings.Replace(yaml, "stream_id: 1001", "stream_id: "+tt.value, 1)
			}
			_, err := Parse([]byte(yaml), nil)
			ke := wantOne(t, err, tt.path, ErrInvalid)
			if ke.Value != tt.value || !strings.Contains(ke.Error(), `"`+tt.value+`"`) {
				t.Fatalf("got %v, want the value %q", ke, tt.value)
			}
		})
	}
}

// The duration keys' bounds are accepted too, at each end.
func TestLesson19_DurationBoundsAreAccepted(t *testing.T) {
	for _, c := range []struct {
		section, key, value string
		get                 func(*Config) time.Duration
		want                time.Duration
	}{
		{"archive", "message_timeout", minMessageTimeout.String(), func(c *Config) time.Duration { return c.Archive.MessageTimeout }, minMessageTimeout},
		{"archive", "message_timeout", maxMessageTimeout.String(), func(c *Config) time.Duration { return c.Archive.MessageTimeout }, maxMessageTimeout},
		{"archive", "restart_grace", "0s", func(c *Config) time.Duration { return c.Archive.RestartGrace }, 0},
		{"archive", "restart_grace", "1h", func(c *Config) time.Duration { return c.Archive.RestartGrace }, time.Hour},
		{"health", "stall_after", "1s", func(c *Config) time.Duration { return c.Health.StallAfter }, time.Second},
	} {
		t.Run(c.key+" "+c.value, func(t *testing.T) {
			cfg := mustParse(t, doc("archive", c.section+":\n  "+c.key+": "+c.value+"\n", ""), nil)
			if got := c.get(cfg); got != c.want {
				t.Fatalf("%s.%s: %s parsed as %v, want %v", c.section, c.key, c.value, got, c.want)
			}
		})
	}
}

func TestLesson19_BoundaryValuesAreAccepted(t *testing.T) {
	yaml := doc("archive", "checkpoint:\n  every_records: 1\n  every_ms: 3600000\ninflight:\n  max_messages: 1048576\n  max_bytes: 1024g\nhealth:\n  stall_after: 24h\n",
		"    start_position: 0\n    start_recording_id: 0\n")
	yaml = strings.Replace(yaml, "stream_id: 1001", "stream_id: -2147483648", 1)
	c := mustParse(t, yaml, nil)
	if c.Checkpoint.EveryRecords != 1 || c.Checkpoint.Every.Milliseconds() != 3600000 ||
		c.Inflight.MaxMessages != 1<<20 || c.Inflight.MaxBytes != 1<<40 || c.Streams[0].StreamID != -2147483648 || c.Health.StallAfter != 24*time.Hour {
		t.Fatalf("got %+v %+v %d", c.Checkpoint, c.Inflight, c.Streams[0].StreamID)
	}
}

// A fix never suggests a value it refuses: each example a duration key's fix gives is
// accepted there. (health.stall_after's fix once suggested 500ms, below its second.)
func TestTheExamplesADurationsFixGivesAreAccepted(t *testing.T) {
	for _, c := range []struct{ section, key string }{
		{"archive", "message_timeout"}, {"archive", "restart_grace"}, {"health", "stall_after"},
	} {
		set := func(v string) string { return doc("archive", c.section+":\n  "+c.key+": "+v+"\n", "") }
		_, err := Parse([]byte(set("-1s")), nil)
		ke := wantOne(t, err, c.section+"."+c.key, ErrInvalid)
		_, such, ok := strings.Cut(ke.Fix, "such as ")
		if !ok {
			t.Fatalf("%s: fix %q gives no example", ke.Path, ke.Fix)
		}
		for _, example := range strings.Split(such, " or ") {
			if _, err := Parse([]byte(set(example)), nil); err != nil {
				t.Errorf("%s: the fix's example %q is refused: %v", ke.Path, example, err)
			}
		}
	}
}

// checkpoint.every_ms takes milliseconds, without a unit: its fix says so, and a Go
// duration written there is named as one, with the number of milliseconds to write.
func TestEveryMsFixSaysMilliseconds(t *testing.T) {
	for _, tt := range []struct{ value, problem, fix string }{
		{"5s", "is a duration; the key takes a number of milliseconds", "write 5000 (5s in milliseconds)"},
		{"250ms", "is a duration; the key takes a number of milliseconds", "write 250 (250ms in milliseconds)"},
		{"2h", "is not a whole number in range", "use a whole number of milliseconds from 1 to 3600000, without a unit, such as 1000 for a second"},
		{"0", "is out of range", "use a whole number of milliseconds from 1 to 3600000, without a unit, such as 1000 for a second"},
		{"1.5", "is not a whole number in range", "use a whole number of milliseconds from 1 to 3600000, without a unit, such as 1000 for a second"},
	} {
		t.Run(tt.value, func(t *testing.T) {
			_, err := Parse([]byte(doc("archive", "checkpoint:\n  every_ms: "+tt.value+"\n", "")), nil)
			ke := wantOne(t, err, "checkpoint.every_ms", ErrInvalid)
			if ke.Problem != tt.problem || ke.Fix != tt.fix {
				t.Fatalf("got %v; want %q, fix %q", ke, tt.problem, tt.fix)
			}
		})
	}
}
