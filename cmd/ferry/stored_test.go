package main

import (
	"bytes"
	"log/slog"
	"net"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
)

// storedNames lists the streams the store file at path holds.
func storedNames(t *testing.T, path string) []string {
	t.Helper()
	st, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	streams, err := st.Streams()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range streams {
		names = append(names, s.Name)
	}
	return names
}

// renamed is stream orders as writeConfig configures it, stored under its old name a.
func renamed() store.Stream {
	def := ordersDef("orders")
	def.Name = "a"
	return def
}

// A stream renamed in the configuration (a → orders, the same channel, stream id and topic)
// finds no checkpoint under its new name: started at its start_position it would skip what
// was recorded since the checkpoint (latest), or publish the archive again under producer
// names deduplication has never seen (earliest). The start is refused, before anything is
// published or stored, naming both names and the two ways on. (The port taken ends a run
// that gets past the check at once, rather than waiting for the media driver.)
func TestARunOfARenamedStreamIsRefused(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	listen := "http:\n  listen: " + taken.Addr().String() + "\n"
	for _, c := range []struct{ extra, want string }{
		{"", "publish the whole archive again"},
		{"    start_position: latest\n", "leave out everything recorded since those checkpoints"},
	} {
		path, storePath := writeConfig(t, c.extra+listen)
		saved(t, storePath, renamed(), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
		code, _, errOut := ferry("run", "--config", path)
		for _, want := range []string{
			"stream orders has no checkpoint, but the checkpoint store " + storePath + " holds stream a's checkpoints for the same channel, stream id and topic",
			"was stream a renamed orders", c.want, "give the stream its old name back (name: a, in " + path + ")",
			"`ferry checkpoint reset --config " + path + " --stream a --yes`",
		} {
			if code != exitFailure || !strings.Contains(errOut, want) {
				t.Errorf("%q: ferry run of a renamed stream = %d, stderr:\n%s\nwant exit 1 and %q", c.extra, code, errOut, want)
			}
		}
		if strings.Contains(errOut, "starting at the configured start position") {
			t.Errorf("%q: ferry run of a renamed stream said it starts at its start position:\n%s", c.extra, errOut)
		}
		if got := storedNames(t, storePath); !slices.Equal(got, []string{"a"}) {
			t.Errorf("%q: after the refused start the store holds %q; want a's checkpoints alone, untouched", c.extra, got)
		}
	}

	// Two old names for the same channel, stream id and topic: both named, each with its reset.
	path, storePath := writeConfig(t, listen)
	b := renamed()
	b.Name = "b"
	saved(t, storePath, renamed(), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	saved(t, storePath, b)
	code, _, errOut := ferry("run", "--config", path)
	for _, want := range []string{"the checkpoints of streams a, b", "name: a or b", "--stream a --yes` and `", "--stream b --yes`"} {
		if code != exitFailure || !strings.Contains(errOut, want) {
			t.Errorf("ferry run beside two old names = %d, stderr:\n%s\nwant exit 1 and %q", code, errOut, want)
		}
	}
}

// A stream renamed whose old name the configuration gives another stream (orders → fills,
// and a new stream called orders): the store holds fills's checkpoints under orders, whose
// load fails as changed, and the reset that offers would drop them. The run (refused) and
// checkpoint show of fills say it was renamed, that the other stream takes a new name, and
// that a reset of orders would drop these checkpoints; nothing is deleted.
func TestARenamedStreamWhoseOldNameIsReusedIsRefused(t *testing.T) {
	path, storePath := writeConfig(t, "  - name: fills\n    channel: aeron:ipc\n    stream_id: 2002\n    topic: fills\n")
	old := ordersDef("fills")
	old.StreamID = 2002
	saved(t, storePath, old, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	for _, c := range []struct {
		args []string
		code int
	}{{[]string{"run", "--config", path}, exitFailure}, {[]string{"checkpoint", "show", "--config", path, "--stream", "fills"}, exitOK}} {
		code, out, errOut := ferry(c.args...)
		for _, want := range []string{
			"stream fills has no checkpoint, but the checkpoint store " + storePath + " holds stream orders's checkpoints for the same channel, stream id and topic",
			"was stream orders renamed fills", "give the stream its old name back (name: orders, in " + path + ")",
			"orders now names another stream in the configuration: give that one a new name; a reset of orders would drop these checkpoints",
		} {
			if code != c.code || !strings.Contains(out+errOut, want) {
				t.Errorf("ferry %s = %d, stdout:\n%s\nstderr:\n%s\nwant exit %d and %q", c.args[0:2], code, out, errOut, c.code, want)
			}
		}
	}
	if got := storedNames(t, storePath); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("after the refusals the store holds %q; want orders's checkpoints alone, untouched", got)
	}
}

// A stream stored and neither configured nor matching a configured stream (another stream
// id) is named in one warning at start, its checkpoints kept; so is one that matches a
// stream with reset: true, which starts again at its start_position as asked. The run here
// ends on a port taken, past the check.
func TestARunWarnsOfStoredStreamsTheConfigurationDoesNotName(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		stored      func() store.Stream
	}{
		{"another stream id", "", func() store.Stream { d := renamed(); d.Name, d.StreamID = "old", 2002; return d }},
		{"orders with reset: true", "    reset: true\n", func() store.Stream { d := renamed(); d.Name = "old"; return d }},
	} {
		t.Run(c.name, func(t *testing.T) {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer taken.Close()
			path, storePath := writeConfig(t, c.extra+"http:\n  listen: "+taken.Addr().String()+"\n")
			saved(t, storePath, c.stored(), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
			code, _, errOut := ferry("run", "--config", path)
			if code != exitFailure || !strings.Contains(errOut, "address already in use") {
				t.Fatalf("ferry run = %d, stderr:\n%s\nwant it to get past the check and fail on the port taken", code, errOut)
			}
			warnings := regexp.MustCompile(`(?m)^.*level=WARN.*does not name.*$`).FindAllString(errOut, -1)
			if len(warnings) != 1 || !strings.Contains(warnings[0], "streams=old") || !strings.Contains(warnings[0], "kept") ||
				!strings.Contains(warnings[0], "ferry checkpoint reset --config "+path+" --stream NAME --yes") {
				t.Fatalf("warnings of streams not configured: %q in\n%s\nwant one, naming old, that its checkpoints are kept, and the reset", warnings, errOut)
			}
			if got := storedNames(t, storePath); !slices.Contains(got, "old") {
				t.Errorf("after the start the store holds %q; want old's checkpoints kept", got)
			}
		})
	}
}

// `ferry checkpoint show` and `reset` take a stream only the store holds (renamed in the
// configuration, or removed from it): show prints its stored definition and checkpoints,
// reset asks for --yes, deletes it and verifies by reading back.
func TestCheckpointShowAndResetOfAStreamOnlyTheStoreHolds(t *testing.T) {
	path, storePath := writeConfig(t, "")
	old := renamed()
	old.Topic = "persistent://public/default/old-orders"
	saved(t, storePath, old, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	saved(t, storePath, ordersDef("orders"), store.Checkpoint{RecordingID: 9, Position: 64, UpdatedAtMs: 1795980000000})

	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "a")
	for _, want := range []string{"stream a is not in " + path, "stream a (aeron:ipc stream 1001 -> persistent://public/default/old-orders)", "acknowledged up to POSITION", "4096"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("show of a stream only the store holds = %d\n%s%s\nwant exit 0 and %q", code, out, errOut, want)
		}
	}
	if code, _, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "a"); code != exitUsage || !strings.Contains(errOut, "add --yes") {
		t.Fatalf("reset without --yes = %d %q; want a usage error asking for --yes", code, errOut)
	}
	if got := storedNames(t, storePath); !slices.Equal(got, []string{"a", "orders"}) {
		t.Fatalf("after a reset without --yes the store holds %q; want a and orders", got)
	}
	code, out, errOut = ferry("checkpoint", "reset", "--config", path, "--stream", "a", "--yes")
	if code != exitOK || !strings.Contains(out, "stream a: checkpoint deleted from "+storePath+" (verified by reading back)") {
		t.Fatalf("reset of a stream only the store holds = %d\n%s%s; want exit 0, deleted and verified", code, out, errOut)
	}
	if listed := strings.Index(out, "4096"); listed < 0 || listed > strings.Index(out, "checkpoint deleted") {
		t.Fatalf("reset of a stream only the store holds:\n%s\nwant the checkpoint it deletes (recording 7 at 4096) listed before the deletion", out)
	}
	if got := storedNames(t, storePath); !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("after the reset the store holds %q; want orders alone", got)
	}

	// The definition alone stored (start_position latest, decided on an empty archive).
	path, storePath = writeConfig(t, "")
	saved(t, storePath, renamed())
	if code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "a"); code != exitOK || !strings.Contains(out, "only its definition is stored") || strings.Contains(out, "RECORDING") {
		t.Fatalf("show of a stored-only stream's definition alone = %d\n%s%s; want exit 0, saying only the definition is stored", code, out, errOut)
	}
}

// A stream only the store holds whose definition a newer ferry wrote is reset only with
// --force, as a configured one; one whose definition is damaged is shown as an error naming
// it, and reset.
func TestCheckpointResetOfAStreamOnlyTheStoreHoldsHonoursItsDamage(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, renamed(), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	editedStream(t, storePath, "a", definitionOfANewerFerry)
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "a", "--yes"); code != exitFailure || !strings.Contains(errOut, "newer ferry") || !strings.Contains(errOut, "--force") {
		t.Fatalf("reset of a newer ferry's stored-only stream = %d\n%s%s; want exit 1 naming the newer ferry and --force", code, out, errOut)
	}
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "a", "--yes", "--force"); code != exitOK || !strings.Contains(out, "verified") {
		t.Fatalf("reset --force = %d\n%s%s", code, out, errOut)
	}

	path, storePath = writeConfig(t, "")
	saved(t, storePath, renamed(), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	editedStream(t, storePath, "a", func(sb *bbolt.Bucket) error { return sb.Put([]byte("definition"), []byte("D\x01garbage")) })
	if code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "a"); code != exitFailure || !strings.Contains(errOut, `stream "a", definition is corrupt`) {
		t.Fatalf("show of a damaged stored-only stream = %d\n%s%s; want exit 1 naming its damage", code, out, errOut)
	}
	if code, out, errOut := ferry("run", "--config", path); code != exitFailure || !strings.Contains(errOut, `stream "a", definition is corrupt`) || !strings.Contains(errOut, "stream orders has no checkpoint") {
		t.Fatalf("run beside a damaged stored-only stream = %d\n%s%s; want exit 1: whether orders is a renamed cannot be told", code, out, errOut)
	}
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "a", "--yes"); code != exitOK || !strings.Contains(out, "verified") {
		t.Fatalf("reset of a damaged stored-only stream = %d\n%s%s; want it deleted", code, out, errOut)
	}
	if got := storedNames(t, storePath); len(got) != 0 {
		t.Fatalf("after the reset the store holds %q; want nothing", got)
	}
}

// A --stream neither configured nor stored is a usage error (exit 2) listing the configured
// and the stored names; forget takes configured streams only.
func TestCheckpointOfAStreamNeitherConfiguredNorStoredIsAUsageError(t *testing.T) {
	path, storePath := writeConfig(t, "")
	for _, cmd := range [][]string{{"show"}, {"reset", "--yes"}, {"reset"}} {
		args := append(append([]string{"checkpoint"}, cmd...), "--config", path, "--stream", "fills")
		if code, _, errOut := ferry(args...); code != exitUsage || !strings.Contains(errOut, `no stream "fills"`) || !strings.Contains(errOut, "no checkpoint store at "+storePath) || !strings.Contains(errOut, "--stream: orders") {
			t.Errorf("checkpoint %v of an unknown stream, no store = %d %q; want exit 2 listing orders and saying there is no store", cmd, code, errOut)
		}
	}
	saved(t, storePath, renamed())
	for _, cmd := range [][]string{{"show"}, {"reset", "--yes"}, {"reset"}} {
		args := append(append([]string{"checkpoint"}, cmd...), "--config", path, "--stream", "fills")
		if code, _, errOut := ferry(args...); code != exitUsage || !strings.Contains(errOut, `no stream "fills"`) || !strings.Contains(errOut, "it holds a") || !strings.Contains(errOut, "configured streams (orders)") {
			t.Errorf("checkpoint %v of an unknown stream = %d %q; want exit 2 listing orders and a", cmd, code, errOut)
		}
	}
	if got := storedNames(t, storePath); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after the refused commands the store holds %q; want a, untouched", got)
	}
	for _, name := range []string{"fills", "a"} {
		if code, _, errOut := ferry("checkpoint", "forget", "--config", path, "--stream", name, "--recording", "7", "--yes"); code != exitUsage || !strings.Contains(errOut, "configured stream only") {
			t.Errorf("checkpoint forget of %s, not configured = %d %q; want exit 2 saying forget takes configured streams", name, code, errOut)
		}
	}
}

// storedChannel is a channel as a stream is stored with it; reorderedChannel is the same
// channel, its parameters in another order.
const storedChannel, reorderedChannel = "aeron:udp?endpoint=localhost:40123|term-length=64k", "aeron:udp?term-length=64k|endpoint=localhost:40123"

// reordered is writeConfig's configuration (with extra), stream orders's channel
// reorderedChannel.
func reordered(t *testing.T, extra string) (path, storePath string) {
	t.Helper()
	path, storePath = writeConfig(t, extra)
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Replace(text, []byte("channel: aeron:ipc"), []byte("channel: "+reorderedChannel), 1), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, storePath
}

// A stream whose channel is written with its parameters in another order than the store
// keeps it is the same stream, not a changed one (whose ways on include a reset): `checkpoint
// show` shows its checkpoints. And a stream renamed and reordered at once is still found
// renamed: `ferry run` refuses it, naming the old name.
func TestAChannelWithItsParametersReorderedIsTheSameStream(t *testing.T) {
	def := ordersDef("orders")
	def.Channel = storedChannel
	path, storePath := reordered(t, "")
	saved(t, storePath, def, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitOK || !strings.Contains(out, "4096") || strings.Contains(errOut, "definition changed") {
		t.Fatalf("show of a stream whose channel's parameters are reordered = %d\n%s%s; want exit 0 and recording 7 at 4096", code, out, errOut)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path, storePath = reordered(t, "http:\n  listen: "+taken.Addr().String()+"\n")
	def.Name = "a"
	saved(t, storePath, def, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	if code, _, errOut := ferry("run", "--config", path); code != exitFailure || !strings.Contains(errOut, "holds stream a's checkpoints for the same channel, stream id and topic") {
		t.Fatalf("ferry run of a stream renamed, its channel reordered = %d, stderr:\n%s\nwant exit 1, naming stream a", code, errOut)
	}
}

// A stream the configuration does not name whose definition is damaged (the list of stored
// streams then fails) does not make a configured stream whose channel's parameters are
// reordered look changed: `checkpoint show` shows its checkpoints, and a run's store checks
// pass, warning that the stored streams could not be listed.
func TestADamagedStreamElsewhereDoesNotMakeAReorderedChannelAChange(t *testing.T) {
	path, storePath := reordered(t, "")
	def := ordersDef("orders")
	def.Channel = storedChannel
	saved(t, storePath, def, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	old := renamed()
	old.Name, old.StreamID = "old", 2002
	saved(t, storePath, old, store.Checkpoint{RecordingID: 3, Position: 64, UpdatedAtMs: 1795980000000})
	editedStream(t, storePath, "old", func(sb *bbolt.Bucket) error { return sb.Put([]byte("definition"), []byte("D\x01garbage")) })

	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitOK || !strings.Contains(out, "4096") || strings.Contains(errOut, "definition changed") {
		t.Errorf("show beside a damaged stream = %d\n%s%s; want exit 0 and recording 7 at 4096", code, out, errOut)
	}

	cfg, st := configAndStore(t, path, storePath)
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if err := checkStoredStreams(path, cfg, st, log); err != nil {
		t.Fatalf("checkStoredStreams: %v", err)
	}
	if !strings.Contains(logged.String(), "could not be listed") || !strings.Contains(logged.String(), `stream \"old\", definition is corrupt`) {
		t.Errorf("the run's log:\n%s\nwant a warning that the stored streams could not be listed, naming old's damage", &logged)
	}
	reset := false
	configs, err := streamConfigs(cfg, st, log, &reset, nil)
	if err != nil {
		t.Fatalf("streamConfigs: %v; want orders loaded under its stored definition", err)
	}
	if len(configs) != 1 || configs[0].Def != def || len(configs[0].Stored.Checkpoints) != 1 || configs[0].Stored.Checkpoints[0].Position != 4096 {
		t.Fatalf("streamConfigs = %+v; want orders under %+v, recording 7 at 4096", configs, def)
	}
}

// `ferry checkpoint show` and `reset` of a configured stream with nothing stored under its
// name, but its channel, stream id and topic stored under an old name (renamed in the
// configuration), say what `ferry run` does: it refuses the start, naming the old name and
// the ways on. show does not say the stream starts at its start position; reset deletes
// nothing, says so, and fails, as the run still refuses.
func TestCheckpointShowAndResetOfARenamedStreamSayTheRunRefusesIt(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, renamed(), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	refusal := []string{
		"stream orders has no checkpoint, but the checkpoint store " + storePath + " holds stream a's checkpoints for the same channel, stream id and topic",
		"ferry does not start", "give the stream its old name back (name: a, in " + path + ")",
		"`ferry checkpoint reset --config " + path + " --stream a --yes`",
	}

	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	for _, want := range refusal {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("show of a renamed stream = %d\n%s%s\nwant exit 0 and %q", code, out, errOut, want)
		}
	}
	if strings.Contains(out, "ferry starts at its configured start position") {
		t.Errorf("show of a renamed stream said it starts at its start position, which the run refuses:\n%s", out)
	}

	code, out, errOut = ferry("checkpoint", "reset", "--config", path, "--stream", "orders")
	for _, want := range append(refusal, "nothing stored in "+storePath+" under that name, so a reset would delete nothing") {
		if code != exitFailure || !strings.Contains(errOut, want) {
			t.Errorf("reset of a renamed stream without --yes = %d\n%s%s\nwant exit 1 and %q", code, out, errOut, want)
		}
	}
	if strings.Contains(out+errOut, "next run") {
		t.Errorf("reset of a renamed stream without --yes said what the next run does, which the run refuses:\n%s%s", out, errOut)
	}

	code, out, errOut = ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes")
	for _, want := range append(refusal, "nothing stored in "+storePath+" under that name, so nothing deleted") {
		if code != exitFailure || !strings.Contains(errOut, want) {
			t.Errorf("reset of a renamed stream = %d\n%s%s\nwant exit 1 and %q", code, out, errOut, want)
		}
	}
	if strings.Contains(out, "next run") {
		t.Errorf("reset of a renamed stream said what the next run does, which the run refuses:\n%s", out)
	}
	if got := storedNames(t, storePath); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after the reset the store holds %q; want a's checkpoints alone, untouched", got)
	}

	// Whether orders is a renamed stream cannot be told, another stream's definition damaged:
	// the run refuses the start, and show and reset say so too.
	path, storePath = writeConfig(t, "")
	old := renamed()
	old.Name, old.StreamID = "old", 2002
	saved(t, storePath, old)
	editedStream(t, storePath, "old", func(sb *bbolt.Bucket) error { return sb.Put([]byte("definition"), []byte("D\x01garbage")) })
	const untold = "stream orders has no checkpoint, and whether the checkpoint store holds its checkpoints under another name (the stream renamed in the configuration) cannot be told, so ferry does not start"
	if code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders"); code != exitOK || !strings.Contains(out, untold) || !strings.Contains(out, `stream "old", definition is corrupt`) {
		t.Errorf("show beside a damaged stream = %d\n%s%s\nwant exit 0 and %q, naming old's damage", code, out, errOut, untold)
	}
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes"); code != exitFailure || !strings.Contains(errOut, "nothing deleted") || !strings.Contains(errOut, untold) {
		t.Errorf("reset beside a damaged stream = %d\n%s%s\nwant exit 1, nothing deleted, and %q", code, out, errOut, untold)
	}
}

// A --stream the configuration does not have, while a running ferry holds the store: most
// likely mistyped. show and reset say so, as a usage error naming the configured streams,
// rather than only that ferry must be stopped first (to find out it was a typo).
func TestAMistypedStreamWhileFerryRunsIsAUsageError(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, ordersDef("orders"), store.Checkpoint{RecordingID: 9, Position: 64, UpdatedAtMs: 1795980000000})
	running, err := bolt.Open(storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer running.Close()
	for _, args := range [][]string{
		{"checkpoint", "show", "--config", path, "--stream", "ordrs"},
		{"checkpoint", "reset", "--config", path, "--stream", "ordrs", "--yes"},
	} {
		code, _, errOut := ferry(args...)
		for _, want := range []string{path + ` has no stream "ordrs"; pass one of its streams to --stream: orders`, "held by a running ferry"} {
			if code != exitUsage || !strings.Contains(errOut, want) {
				t.Errorf("ferry %s of a mistyped stream while ferry runs = %d, stderr:\n%s\nwant exit %d and %q", args[:2], code, errOut, exitUsage, want)
			}
		}
	}
	// A configured name: stop ferry first, as before.
	code, _, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes")
	if code != exitFailure || !strings.Contains(errOut, "held by a running ferry") || strings.Contains(errOut, "has no stream") {
		t.Errorf("reset of a configured stream while ferry runs = %d, stderr:\n%s\nwant exit 1, saying ferry holds the store", code, errOut)
	}
}
