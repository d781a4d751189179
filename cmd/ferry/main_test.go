package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/observe"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// ferry runs the command line and returns its exit status and output.
func ferry(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeConfig writes an archive-mode configuration with one stream, "orders", whose
// checkpoint store is in a temporary directory.
func writeConfig(t *testing.T, extra string) (path, storePath string) {
	t.Helper()
	dir := t.TempDir()
	storePath = filepath.Join(dir, "data", "checkpoints.db")
	cfg := `mode: archive
pulsar:
  service_url: pulsar://127.0.0.1:6650
store:
  path: ` + storePath + `
streams:
  - name: orders
    channel: aeron:ipc
    stream_id: 1001
    topic: orders
` + extra
	path = filepath.Join(dir, "ferry.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, storePath
}

// editConfig rewrites the configuration file at path with edit.
func editConfig(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(raw))), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ordersDef is the definition writeConfig's stream is stored under, with topic
// persistent://public/default/topic.
func ordersDef(topic string) store.Stream {
	return store.Stream{Name: "orders", Channel: "aeron:ipc", StreamID: 1001, Topic: "persistent://public/default/" + topic, SchemaVersion: schemaVersion}
}

// edited changes stream orders's bucket in the store file at path with edit, as bbolt.
func edited(t *testing.T, path string, edit func(sb *bbolt.Bucket) error) {
	t.Helper()
	editedStream(t, path, "orders", edit)
}

// editedStream changes stream name's bucket in the store file at path with edit, as bbolt.
func editedStream(t *testing.T, path, name string, edit func(sb *bbolt.Bucket) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error { return edit(tx.Bucket([]byte("streams")).Bucket([]byte(name))) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

// definitionOfANewerFerry puts the stored definition in envelope version 9, as a newer ferry
// would write it.
func definitionOfANewerFerry(sb *bbolt.Bucket) error {
	return sb.Put([]byte("definition"), asNewerFerry(sb.Get([]byte("definition")), 9))
}

// asNewerFerry returns store/bolt envelope v in encoding version, as a newer ferry writes it
// (store/bolt/codec.go): the same header, its CRC-32C covering the kind and version bytes and
// the payload. With the version alone changed, the store reports the value damaged.
func asNewerFerry(v []byte, version byte) []byte {
	v = append([]byte(nil), v...)
	v[1] = version
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	sum := crc32.Update(crc32.Checksum(v[:2], castagnoli), castagnoli, v[10:])
	binary.LittleEndian.PutUint32(v[6:10], sum)
	return v
}

// loaded is what the store file at path holds of def, read as ferry reads it.
func loaded(t *testing.T, path string, def store.Stream) store.State {
	t.Helper()
	st, err := bolt.Open(path, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	state, err := st.Load(def)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// saved stores cps (none: the definition alone) of def in the store file at path.
func saved(t *testing.T, path string, def store.Stream, cps ...store.Checkpoint) {
	t.Helper()
	st, err := bolt.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(def, cps); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	path, _ := writeConfig(t, "    reset: true\n")
	code, out, errOut := ferry("validate", "--config", path)
	if code != exitOK || !strings.Contains(out, "valid, mode archive, 1 stream(s)") || !strings.Contains(out, "warning: streams[0].reset is set") {
		t.Fatalf("validate = %d\n%s%s", code, out, errOut)
	}
	before := environ
	t.Cleanup(func() { environ = before })
	environ = func() []string { return []string{"FERRY_STORE_PTH=/var/lib/ferry/checkpoints.db"} }
	code, out, errOut = ferry("validate", "--config", path)
	if code != exitOK || !strings.Contains(out, "warning: environment variable FERRY_STORE_PTH overrides no setting: did you mean FERRY_STORE_PATH?") {
		t.Fatalf("validate with a misspelt override = %d\n%s%s; want it named", code, out, errOut)
	}
	bad, _ := writeConfig(t, "    start_position: -2\n")
	code, _, errOut = ferry("validate", "--config", bad)
	if code != exitFailure || !strings.Contains(errOut, "streams[0].start_position") {
		t.Fatalf("validate of a bad config = %d, %q; want exit 1 naming streams[0].start_position", code, errOut)
	}
}

// A relative store.path names a file relative to where the command runs: looked at from
// another directory than ferry's, a store missing there may be elsewhere, and show says so
// rather than only "ferry starts at its configured start position".
func TestCheckpointShowOfARelativeStoreSaysWhereItWasLooked(t *testing.T) {
	path, _ := writeConfig(t, "")
	editConfig(t, path, func(cfg string) string {
		return regexp.MustCompile(`(?m)^  path: .*$`).ReplaceAllString(cfg, "  path: data/checkpoints.db")
	})
	t.Chdir(t.TempDir())
	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitOK || !strings.Contains(out, "no checkpoint store at") || !strings.Contains(out, "store.path is relative to the directory ferry runs in") {
		t.Fatalf("show of a relative store missing here = %d\n%s%s; want the note on the relative path", code, out, errOut)
	}
}

// ferry recordings shows as committed only what Pulsar acknowledged: a seed (a recording
// taken on, nothing acknowledged) is not, and a forgotten recording says so.
func TestRecordingsCommittedColumn(t *testing.T) {
	all := map[string]map[int64]store.Checkpoint{"orders": {
		1: {RecordingID: 1, Position: 4096},
		2: {RecordingID: 2, Position: 128, Completed: true},
		3: {RecordingID: 3, Position: 64, Seed: true},
		4: {RecordingID: 4, Position: 8192, Seed: true, Completed: true, Forgotten: true},
		6: {RecordingID: 6, Position: 512, Completed: true, StartMs: 1795970000000, SessionID: 9},
	}}
	listed := func(id int64) archive.RecordingDescriptor {
		return archive.RecordingDescriptor{RecordingID: id, StartTimestampMs: 1795970000000, SessionID: 9}
	}
	for id, want := range map[int64]string{1: "4096", 2: "128 (completed)", 3: "- (taken on at 64)", 4: "8192 (forgotten: never published after it)", 5: "-", 6: "512 (completed)"} {
		if got := committedText(all, "orders", listed(id)); got != want {
			t.Errorf("recording %d: COMMITTED %q, want %q", id, got, want)
		}
	}
	// Recording 6 of a replaced archive: another recording under the same id.
	other := listed(6)
	other.StartTimestampMs++
	if got := committedText(all, "orders", other); !strings.Contains(got, "of another recording") || !strings.HasPrefix(got, "- ") {
		t.Errorf("another recording under id 6: COMMITTED %q; want nothing committed, the checkpoint named another recording's", got)
	}
	// Recording 6 extended (ExtendRecording) by a publication of another session: the
	// archive lists it in that session, with its start; the running ferry follows it.
	extended := listed(6)
	extended.SessionID = 10
	if got := committedText(all, "orders", extended); got != "512 (completed)" {
		t.Errorf("recording 6 extended in another session: COMMITTED %q; want %q, as the running ferry takes it", got, "512 (completed)")
	}
	if got := committedText(nil, "orders", listed(1)); got != "?" {
		t.Errorf("checkpoints unknown: COMMITTED %q, want ?", got)
	}
}

// One stream whose checkpoints cannot be read (its definition changed) leaves the others'
// COMMITTED column as it is: only its own is unknown, and its error is the command's.
func TestRecordingsCommittedOfOneUnreadableStreamLeavesTheOthers(t *testing.T) {
	path, storePath := writeConfig(t, "  - name: fills\n    channel: aeron:ipc\n    stream_id: 2002\n    topic: fills\n")
	saved(t, storePath, ordersDef("orders-before"), store.Checkpoint{RecordingID: 1, Position: 64, UpdatedAtMs: 1795980000000})
	fills := ordersDef("fills")
	fills.Name, fills.StreamID = "fills", 2002
	saved(t, storePath, fills, store.Checkpoint{RecordingID: 2, Position: 4096, UpdatedAtMs: 1795980000000})
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	all, note, err := committedCheckpoints(cfg)
	if !errors.Is(err, store.ErrStreamChanged) || !strings.Contains(err.Error(), "stream orders") || note != "" {
		t.Fatalf("committed checkpoints: note %q, error %v; want orders's definition changed", note, err)
	}
	if got := committedText(all, "fills", archive.RecordingDescriptor{RecordingID: 2}); got != "4096" {
		t.Errorf("fills's recording 2: COMMITTED %q, want 4096", got)
	}
	if got := committedText(all, "orders", archive.RecordingDescriptor{RecordingID: 1}); got != "?" {
		t.Errorf("orders's recording 1, its checkpoints unread: COMMITTED %q, want ?", got)
	}
}

func TestCheckpointShowAndReset(t *testing.T) {
	path, storePath := writeConfig(t, "")
	code, out, _ := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitOK || !strings.Contains(out, "no checkpoint store") {
		t.Fatalf("show with no store = %d %q", code, out)
	}
	if _, err := os.Stat(storePath); err == nil {
		t.Fatal("checkpoint show created the store file")
	}
	// A reset where there is no store (store.path relative to another directory, say) is
	// an error naming the path, and creates nothing.
	code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes")
	if code != exitFailure || !strings.Contains(errOut, "no checkpoint store at "+storePath) || !strings.Contains(errOut, "nothing to reset") {
		t.Fatalf("reset with no store = %d\n%s%s; want exit 1 naming %s", code, out, errOut, storePath)
	}
	if _, err := os.Stat(storePath); err == nil {
		t.Fatal("checkpoint reset created the store file")
	}

	st, err := bolt.Open(storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	def := store.Stream{Name: "orders", Channel: "aeron:ipc", StreamID: 1001, Topic: "persistent://public/default/orders", SchemaVersion: schemaVersion}
	if err := st.Save(def, []store.Checkpoint{
		{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000, StartMs: 1795970000000, SessionID: -42,
			LastRecord: store.RecordMark{Start: 4000, End: 4096, Checksum: 0xe3069283}, Partitions: 3, ListedStop: 81920},
		{RecordingID: 8, Position: 64, UpdatedAtMs: 1795980000000, Seed: true},
		{RecordingID: 5, Position: 128, Completed: true, UpdatedAtMs: 1795980000000},
		{RecordingID: 9, Position: 640, UpdatedAtMs: 1795980000000, ListedStop: 4096, ForgottenTo: 8192},
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(storePath)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut = ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if after, err := os.ReadFile(storePath); err != nil || !bytes.Equal(before, after) {
		t.Fatalf("checkpoint show changed the store file (read error %v): it only looks", err)
	}
	for _, want := range []string{"acknowledged up to POSITION", "taken on, nothing acknowledged yet", "completed", "2026-11-29T16:33:20Z", "-42", "[4000, 4096) e3069283", "1 (of 3)", "LISTED STOP", "81920", "4096 (forgotten to 8192)"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Fatalf("show = %d, want %q in:\n%s%s", code, want, out, errOut)
		}
	}

	// Forget: only with --recording and --yes, only a checkpoint there is (refused before the
	// archive is asked whether it has the recording; a completed one, which changes nothing:
	// TestLesson14_ForgetOfACompletedRecordingChangesNothingAndSaysToGoOn).
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--yes"}, exitUsage, "--recording is required"},
		{[]string{"--recording", "-2", "--yes"}, exitUsage, "--recording -2: a recording id is 0 or more"},
		{[]string{"--recording", "7", "--topic-holds", "-64", "--yes"}, exitUsage, "--topic-holds -64: a position is 0 or more"},
		{[]string{"--recording", "7"}, exitUsage, "Add --yes"},
		{[]string{"--recording", "99", "--yes"}, exitFailure, "no checkpoint of recording 99"},
		// The first recording of every archive.
		{[]string{"--recording", "0", "--yes"}, exitFailure, "no checkpoint of recording 0"},
	} {
		args := append([]string{"checkpoint", "forget", "--config", path, "--stream", "orders"}, c.args...)
		if code, _, errOut := ferry(args...); code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("checkpoint forget %v = %d %q; want %d with %q", c.args, code, errOut, c.code, c.want)
		}
	}

	// While another process holds the store (a running ferry), both say so and what to do.
	held, err := bolt.Open(storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range [][]string{{"show"}, {"reset", "--yes"}, {"forget", "--recording", "7", "--yes"}} {
		args := append([]string{"checkpoint"}, cmd...)
		code, _, errOut := ferry(append(args, "--config", path, "--stream", "orders")...)
		if code != exitFailure || !strings.Contains(errOut, "held by a running ferry") {
			t.Errorf("checkpoint %s on a held store = %d %q; want exit 1 saying a running ferry holds it", cmd[0], code, errOut)
		}
	}
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}

	if code, _, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders"); code != exitUsage || !strings.Contains(errOut, "--yes") {
		t.Fatalf("reset without --yes = %d %q; want a usage error asking for --yes", code, errOut)
	}
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes"); code != exitOK || !strings.Contains(out, "verified") {
		t.Fatalf("reset = %d\n%s%s", code, out, errOut)
	}
	if _, out, _ := ferry("checkpoint", "show", "--config", path, "--stream", "orders"); !strings.Contains(out, "no checkpoint in") {
		t.Fatalf("show after reset = %q", out)
	}
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes"); code != exitOK || !strings.Contains(out, "nothing deleted") {
		t.Fatalf("second reset = %d\n%s%s; want exit 0 saying nothing was deleted", code, out, errOut)
	}
	if code, _, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "fills"); code != exitUsage || !strings.Contains(errOut, `no stream "fills"`) || !strings.Contains(errOut, "configured streams (orders)") {
		t.Fatalf("show of an unknown stream = %d %q; want exit 2 listing the configured streams", code, errOut)
	}
}

// A reset says, before and after, what the configured start position makes of the next run:
// with latest, what was recorded beyond the checkpoint and not yet published never is.
func TestCheckpointResetSaysWhatTheStartPositionLeavesOut(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"", "publishes every recording in the archive again from its start"},
		{"", "brokerDeduplicationProducerInactivityTimeoutMinutes, 6 hours by default"},
		{"    start_position: latest\n", "never published"},
		{"    start_position: 4096\n    start_recording_id: 9\n", "starts at position 4096 of recording 9"},
		{"    start_position: 4096\n    start_recording_id: 9\n", "still remembers the recording's producer (Pulsar forgets a producer idle"},
	} {
		path, storePath := writeConfig(t, c.extra)
		def := ordersDef("orders")
		saved(t, storePath, def, store.Checkpoint{RecordingID: 9, Position: 8192, UpdatedAtMs: 1})
		if code, _, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders"); code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: reset without --yes = %d %q; want %q", c.extra, code, errOut, c.want)
		}
		if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes"); code != exitOK || !strings.Contains(out, c.want) {
			t.Errorf("%q: reset = %d\n%s%s; want %q", c.extra, code, out, errOut, c.want)
		}
	}
}

// A reset lists, before it deletes them, the checkpoints it deletes — recording, position,
// completed or not — and says what start_position latest leaves out, also with --yes and
// with nothing stored: an advice pasted with --yes otherwise dropped the only record of
// where the stream stood, and latest skips the stopped recordings the archive still holds.
func TestCheckpointResetListsWhatItDeletesAndWhatLatestLeavesOut(t *testing.T) {
	path, storePath := writeConfig(t, "    start_position: latest\n")
	out := resetListsTwo(t, path, storePath, ordersDef("orders"), "RECORDING", "4096", "acknowledged up to POSITION", "completed")
	if !strings.Contains(out, "nothing the archive holds now is published") {
		t.Errorf("reset = %q; want what latest leaves out", out)
	}
	code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes")
	if code != exitOK || !strings.Contains(out, "nothing deleted") || !strings.Contains(out, "nothing the archive holds now is published") {
		t.Fatalf("reset with nothing stored = %d\n%s%s; want what latest leaves out", code, out, errOut)
	}
}

// resetListsTwo stores two checkpoints of stream orders under def in storePath (recording 5
// completed at 128, 7 at 4096) and resets the stream with the configuration at path. It
// checks that the reset listed both, and printed start_position as the way on and each of
// also, before it deleted them; it returns what the reset printed.
func resetListsTwo(t *testing.T, path, storePath string, def store.Stream, also ...string) string {
	t.Helper()
	saved(t, storePath, def,
		store.Checkpoint{RecordingID: 5, Position: 128, Completed: true, UpdatedAtMs: 1},
		store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1})
	code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes")
	if code != exitOK {
		t.Fatalf("reset = %d\n%s%s", code, out, errOut)
	}
	deleted := strings.Index(out, "checkpoint deleted")
	for _, want := range append([]string{"start_recording_id and start_position"}, also...) {
		if i := strings.Index(out, want); i < 0 || i > deleted {
			t.Errorf("reset printed %q at %d, the deletion at %d; want it before:\n%s", want, i, deleted, out)
		}
	}
	for _, row := range [][]string{{"5", "128", "completed"}, {"7", "4096", "acknowledged"}} {
		if !regexp.MustCompile(`(?m)^` + strings.Join(row, `\s+`)).MatchString(out) {
			t.Errorf("reset lists no row %v:\n%s", row, out)
		}
	}
	return out
}

// A reset of a stream stored under another definition than the configured one (the
// configuration's topic changed since: `ferry run` refuses it, and names the reset) lists
// the checkpoints it deletes too, read under the definition they were stored with, as show
// does: they can be read, and are the only record of where the stream stood.
func TestCheckpointResetListsWhatItDeletesUnderAnotherDefinition(t *testing.T) {
	path, storePath := writeConfig(t, "")
	out := resetListsTwo(t, path, storePath, ordersDef("orders-before"), "stored under another definition than the configured one (topic")
	if strings.Contains(out, "cannot be read") {
		t.Errorf("reset says the checkpoints cannot be read:\n%s", out)
	}
}

// A stream whose definition alone is stored (start_position latest, decided on an empty
// archive) shows that, not an empty table; under another start position (the configuration
// changed since), the configured one applies, and show says so.
func TestCheckpointShowOfADecidedStartWithNoCheckpoint(t *testing.T) {
	for _, c := range []struct{ extra, want string }{
		{"    start_position: latest\n", "start_position latest was decided when the archive held none"},
		{"", "ferry starts at its configured start position"},
	} {
		path, storePath := writeConfig(t, c.extra)
		def := ordersDef("orders")
		saved(t, storePath, def)
		code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
		if code != exitOK || !strings.Contains(out, c.want) || strings.Contains(out, "RECORDING") {
			t.Fatalf("%q: show = %d\n%s%s; want exit 0, %q, and no table", c.extra, code, out, errOut, c.want)
		}
	}
}

// Checkpoint data in an encoding version this build does not read (a newer ferry wrote it)
// is reset only with --force: its definition, or a checkpoint stored under a definition the
// configuration has since changed (which this build must not take for "changed, reset it").
func TestCheckpointResetRefusesDataOfANewerFerry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		topic string // stored
		edit  func(sb *bbolt.Bucket) error
	}{
		{"its definition", "orders", definitionOfANewerFerry},
		{"a checkpoint under a changed definition", "orders-before", func(sb *bbolt.Bucket) error {
			recs := sb.Bucket([]byte("recordings"))
			k, v := recs.Cursor().First()
			return recs.Put(append([]byte(nil), k...), asNewerFerry(v, 9))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, storePath := writeConfig(t, "")
			saved(t, storePath, ordersDef(tc.topic), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
			edited(t, storePath, tc.edit)

			code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes")
			if code != exitFailure || !strings.Contains(errOut, "newer ferry") || !strings.Contains(errOut, "--force") {
				t.Fatalf("reset of a newer ferry's data = %d\n%s%s; want exit 1 naming the newer ferry and --force", code, out, errOut)
			}
			if code, _, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders"); code != exitFailure || !strings.Contains(errOut, "encoding version 9") {
				t.Fatalf("show after the refused reset = %d %q; want the data still there", code, errOut)
			}
			if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes", "--force"); code != exitOK || !strings.Contains(out, "verified") {
				t.Fatalf("reset --force = %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// A bit flipped in a checkpoint's version byte (disk damage: 1 -> 3) is reported as damage,
// not as a newer ferry's data: show names the reset, and reset --yes clears it, with no
// --force and no release to look for.
func TestCheckpointResetClearsAVersionByteDamagedByOneBit(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, ordersDef("orders"), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	edited(t, storePath, func(sb *bbolt.Bucket) error {
		recs := sb.Bucket([]byte("recordings"))
		k, v := recs.Cursor().First()
		v = append([]byte(nil), v...)
		v[1] ^= 0x02
		return recs.Put(append([]byte(nil), k...), v)
	})
	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitFailure || !strings.Contains(errOut, "corrupt") || strings.Contains(errOut, "newer ferry") || !strings.Contains(errOut, "checkpoint reset") {
		t.Fatalf("show of a damaged version byte = %d\n%s%s; want exit 1, corrupt, naming the reset and no newer ferry", code, out, errOut)
	}
	if code, out, errOut := ferry("checkpoint", "reset", "--config", path, "--stream", "orders", "--yes"); code != exitOK || !strings.Contains(out, "verified") {
		t.Fatalf("reset --yes of a damaged version byte = %d\n%s%s; want it deleted", code, out, errOut)
	}
}

// A bit flipped in the file's schema version makes the file unopenable by any command:
// show says it is damaged and that moving the file aside is a way on.
func TestCheckpointShowOfADamagedSchemaVersionSaysMoveTheFileAside(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, ordersDef("orders"), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	db, err := bbolt.Open(storePath, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("meta")).Put([]byte("schema_version"), []byte{0, 0, 0, 3})
	})
	if err := errors.Join(err, db.Close()); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitFailure || !strings.Contains(errOut, "corrupt") || strings.Contains(errOut, "newer ferry") || !strings.Contains(errOut, "move it aside") {
		t.Fatalf("show of a damaged schema version = %d\n%s%s; want exit 1, corrupt, saying to move the file aside", code, out, errOut)
	}
}

// `reset: true` refuses, as `ferry checkpoint reset` without --force does, to delete what a
// newer ferry wrote (a downgrade with the setting left on): the start fails saying so, and
// the data stays.
func TestResetTrueRefusesDataOfANewerFerry(t *testing.T) {
	path, storePath := writeConfig(t, "    reset: true\n")
	def := ordersDef("orders")
	saved(t, storePath, def, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	edited(t, storePath, definitionOfANewerFerry)
	cfg, st := configAndStore(t, path, storePath)
	reset := false
	if _, err := streamConfigs(cfg, st, slog.New(slog.DiscardHandler), &reset, nil); err == nil || !strings.Contains(err.Error(), "newer ferry") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("a start with reset: true over a newer ferry's data: %v; want it refused, naming the newer ferry and --force", err)
	}
	if _, err := st.Load(def); !errors.Is(err, store.ErrUnknownVersion) {
		t.Fatalf("after the refused reset, load = %v; want the newer data still there", err)
	}
}

// A stream Run skips (failed for good earlier in the run) is not loaded at a reconnect:
// its stored state, here one this build cannot read, may be what failed it.
func TestStreamConfigsDoesNotLoadAStreamSkipped(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, ordersDef("orders"), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	edited(t, storePath, definitionOfANewerFerry)
	cfg, st := configAndStore(t, path, storePath)
	reset := true // done: as at a reconnect
	if _, err := streamConfigs(cfg, st, slog.New(slog.DiscardHandler), &reset, nil); err == nil {
		t.Fatal("orders loaded with a newer ferry's data; want the load's error (the test's premise)")
	}
	configs, err := streamConfigs(cfg, st, slog.New(slog.DiscardHandler), &reset, func(name string) bool { return name == "orders" })
	if err != nil || len(configs) != 0 {
		t.Fatalf("with orders skipped: %d streams, %v; want none, and no error", len(configs), err)
	}
}

// configAndStore loads the configuration at path and opens the store at storePath, closed
// when the test ends.
func configAndStore(t *testing.T, path, storePath string) (*config.Config, *bolt.Store) {
	t.Helper()
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return cfg, st
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"validate"}, {"validate", "--bogus"}, {"checkpoint", "show", "--config", "x"}} {
		if code, _, _ := ferry(args...); code != exitUsage {
			t.Errorf("ferry %q = %d, want %d", args, code, exitUsage)
		}
	}
	for _, args := range [][]string{{"checkpoint"}, {"checkpoint", "list"}} {
		if code, _, errOut := ferry(args...); code != exitUsage || !strings.Contains(errOut, "want show, reset or forget") {
			t.Errorf("ferry %q = %d %q; want a usage error asking for show, reset or forget", args, code, errOut)
		}
	}
	// Asking for help is not a mistake: the usage goes to stdout, exit 0.
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"run", "-h"}, {"checkpoint", "-h"}, {"checkpoint", "reset", "--help"}} {
		if code, out, errOut := ferry(args...); code != exitOK || !strings.HasPrefix(out, "usage:") || errOut != "" {
			t.Errorf("ferry %q = %d, stdout %q, stderr %q; want the usage on stdout, exit 0", args, code, out, errOut)
		}
	}
	// A subcommand's help is its usage line and its flags.
	for _, c := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"demo", "-h"}, []string{"usage: ferry demo [--aeron-dir DIR] [--pulsar URL] [--pulsar-admin URL] [--dir DIR] [--rate N] [--listen HOST:PORT]\n", "-aeron-dir", "-pulsar", "-pulsar-admin", "-dir", "-rate", "-listen"}},
		{[]string{"checkpoint", "reset", "--help"}, []string{"usage: ferry checkpoint reset --config FILE --stream NAME --yes [--force]\n", "-config", "-stream", "-yes", "-force"}},
		{[]string{"status", "-help"}, []string{"usage: ferry status --config FILE [--json] [--watch]\n", "-config", "-json", "-watch"}},
	} {
		code, out, errOut := ferry(c.args...)
		for _, want := range c.flags {
			if code != exitOK || !strings.Contains(out, want) || errOut != "" {
				t.Errorf("ferry %q = %d, stdout %q, stderr %q; want exit 0 and %q on stdout", c.args, code, out, errOut, want)
			}
		}
	}
	for _, v := range []string{"version", "--version", "-version"} {
		if code, out, _ := ferry(v); code != exitOK || !strings.HasPrefix(out, "ferry ") {
			t.Errorf("%s = %d %q; want exit 0 and the version", v, code, out)
		}
	}
	if code, out, errOut := ferry("version", "-h"); code != exitOK || !strings.Contains(out, "usage: ferry version") || errOut != "" {
		t.Errorf("version -h = %d, stdout %q, stderr %q; want exit 0 and its usage, as every command's -h", code, out, errOut)
	}
	if code, _, errOut := ferry("version", "extra"); code != exitUsage || !strings.Contains(errOut, "version takes no arguments") {
		t.Errorf("version extra = %d %q; want a usage error", code, errOut)
	}
}

// clientOptionsOf is the Pulsar client's options of a configuration whose pulsar section
// holds section (its keys, indented), with one stream.
func clientOptionsOf(t *testing.T, section string) pulsar.ClientOptions {
	t.Helper()
	cfg, err := config.Parse([]byte("mode: archive\npulsar:\n"+section+
		"streams:\n  - name: orders\n    channel: aeron:ipc\n    stream_id: 1001\n    topic: orders\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := clientOptions(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// A client certificate is presented in the TLS handshake beside a token (mutual TLS), and
// authenticates ferry only when no token does.
func TestClientOptionsPresentTheCertificateBesideAToken(t *testing.T) {
	certFile, keyFile := clientCertFiles(t)
	tlsConf := "  tls:\n    cert_file: " + certFile + "\n    key_file: " + keyFile + "\n"
	for _, c := range []struct {
		name, pulsar, wantAuth string
	}{
		{"certificate and token", "  service_url: pulsar+ssl://127.0.0.1:6651\n" + tlsConf + "  auth:\n    token: abc\n", "token"},
		{"certificate alone", "  service_url: pulsar+ssl://127.0.0.1:6651\n" + tlsConf, "tls"},
		{"certificate for the admin API only", "  service_url: pulsar://127.0.0.1:6650\n  admin_url: https://127.0.0.1:8443\n" + tlsConf, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := clientOptionsOf(t, c.pulsar)
			if c.wantAuth == "" { // a plain connection to the broker: no certificate, no TLS authentication
				if opts.TLSCertificateFile != "" || opts.Authentication != nil {
					t.Errorf("TLS certificate %q, authentication %T on a pulsar:// connection", opts.TLSCertificateFile, opts.Authentication)
				}
				return
			}
			if opts.TLSCertificateFile != certFile || opts.TLSKeyFilePath != keyFile {
				t.Errorf("TLS certificate %q, key %q; want the configured pair in the handshake", opts.TLSCertificateFile, opts.TLSKeyFilePath)
			}
			named, ok := opts.Authentication.(interface{ Name() string })
			if !ok || named.Name() != c.wantAuth {
				t.Errorf("authentication %T, want %q", opts.Authentication, c.wantAuth)
			}
		})
	}
}

// A completed recording known from its checkpoint only (retention purged it) shows where
// ferry completed it, not "live"; a forgotten one says so, and after what.
func TestStatusTableShowsCompletedAndForgottenRecordingsKnownFromTheirCheckpoints(t *testing.T) {
	st := &messages.Status{Version: "test", AtMs: 1795980000000, Streams: []*messages.StreamStatus{{
		Name: "orders", Mode: "archive", State: "replaying", Healthy: true,
		Recordings: []*messages.RecordingStatus{
			{RecordingId: 1, CommittedPosition: proto.Int64(4096), CheckpointedPosition: proto.Int64(4096), Completed: true},
			{RecordingId: 2, CommittedPosition: proto.Int64(2048), CheckpointedPosition: proto.Int64(2048), Completed: true, Forgotten: true},
			{RecordingId: 3, StopPosition: proto.Int64(8192), CommittedPosition: proto.Int64(8192), Completed: true},
			{RecordingId: 4, CommittedPosition: proto.Int64(1024), CheckpointedPosition: proto.Int64(1024)}, // not listed yet
			{RecordingId: 5, RecordedPosition: proto.Int64(4096), CommittedPosition: proto.Int64(1024)},     // listed live
		},
	}}}
	var out bytes.Buffer
	printStatus(&out, st)
	for _, row := range []string{`(?m)^\s+1\s+4096 \(done\)\s`, `(?m)^\s+2\s+gone, forgotten after 2048\s`, `(?m)^\s+3\s+8192 \(done\)\s`, `(?m)^\s+4\s+\?\s`, `(?m)^\s+5\s+live\s`} {
		if !regexp.MustCompile(row).MatchString(out.String()) {
			t.Errorf("no row matching %s in\n%s", row, out.String())
		}
	}
}

// A transport stream says how many publishers ferry reads from; an archive stream has no
// such line.
func TestStatusTableShowsATransportStreamsPublishers(t *testing.T) {
	st := &messages.Status{Version: "test", AtMs: 1795980000000, Streams: []*messages.StreamStatus{
		{Name: "ticks", Mode: "transport", State: "live", Healthy: true, Recordings: []*messages.RecordingStatus{{Publishers: proto.Int32(3)}}},
		{Name: "orders", Mode: "archive", State: "caught-up", Healthy: true, Recordings: []*messages.RecordingStatus{{RecordingId: 1}}},
	}}
	var out bytes.Buffer
	printStatus(&out, st)
	if got := strings.Count(out.String(), "publishers connected"); got != 1 || !strings.Contains(out.String(), "stream ticks (transport): live, healthy, restarts 0\n  publishers connected: 3\n") {
		t.Errorf("want one line \"publishers connected: 3\" under stream ticks only, got %d in\n%s", got, out.String())
	}
}

// Each waiting recording is shown with what it waits for.
func TestStatusTableSaysWhatEachWaitingRecordingWaitsFor(t *testing.T) {
	st := &messages.Status{Version: "test", AtMs: 1795980000000, Streams: []*messages.StreamStatus{{
		Name: "orders", Mode: "archive", State: "replaying", Healthy: true,
		WaitingRecordings: []int64{2, 3},
		Waiting:           []*messages.WaitingRecording{{RecordingId: 2, Behind: 1, Reason: "extended"}, {RecordingId: 3, Behind: 1, Reason: "stopped"}},
	}}}
	var out bytes.Buffer
	printStatus(&out, st)
	for _, line := range []string{
		"recording 2 waits: recording 1 was recorded again after it stopped (extended)",
		"recording 3 waits: recording 1 stopped, and every record of it is acknowledged first",
	} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("no line with %q in\n%s", line, out.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader on two goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// watchAStartingFerry runs `ferry status --watch` (asJSON: --json) until the test ends,
// against a stand-in status endpoint that answers 503 until the test sets answering, then
// a healthy stream orders; out is what it printed.
func watchAStartingFerry(t *testing.T, asJSON bool) (answering *atomic.Bool, out *syncBuffer) {
	t.Helper()
	answering, out = new(atomic.Bool), &syncBuffer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !answering.Load() {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"atMs":"1796000000000","version":"test","streams":[{"name":"orders","mode":"archive","state":"caught-up","healthy":true}]}`))
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchStatus(ctx, out, srv.URL+"/status", asJSON, 10*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-done; srv.Close() })
	return answering, out
}

// `ferry status --watch` rides out a ferry that does not answer (restarting, say): it says
// so in place of the table and asks again, showing the table once ferry answers.
func TestStatusWatchAsksAgainWhileFerryDoesNotAnswer(t *testing.T) {
	answering, out := watchAStartingFerry(t, false)
	eventually.NoError(t, 5*time.Second, func() error {
		if !strings.Contains(out.String(), "503 Service Unavailable") || !strings.Contains(out.String(), "asking again") {
			return fmt.Errorf("output so far %q; want the failure and that it asks again", out.String())
		}
		return nil
	})
	answering.Store(true)
	eventually.NoError(t, 5*time.Second, func() error {
		if !strings.Contains(out.String(), "stream orders") {
			return fmt.Errorf("output so far %q; want the table once ferry answers", out.String())
		}
		return nil
	})
}

// `ferry status --watch --json` writes JSON documents one after another, for a program to
// read: no screen control between them, and a ferry that does not answer is a document too.
func TestStatusWatchAsJSONWritesDocumentsOnly(t *testing.T) {
	answering, out := watchAStartingFerry(t, true)
	docs := func() (errs, statuses int, err error) {
		dec := json.NewDecoder(strings.NewReader(out.String()))
		for dec.More() {
			var doc map[string]any
			if err := dec.Decode(&doc); err != nil {
				text := out.String()
				return errs, statuses, fmt.Errorf("%w in %q...", err, text[:min(len(text), 200)])
			}
			switch {
			case doc["error"] != nil:
				if _, ok := doc["at_ms"].(string); !ok {
					return errs, statuses, fmt.Errorf("error document %v: want at_ms a string, as /status writes its 64-bit integers", doc)
				}
				errs++
			case doc["streams"] != nil:
				statuses++
			default:
				return errs, statuses, fmt.Errorf("document %v is neither a status nor an error", doc)
			}
		}
		return errs, statuses, nil
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if errs, _, err := docs(); err != nil || errs == 0 {
			return fmt.Errorf("%d error documents (%v)", errs, err)
		}
		return nil
	})
	answering.Store(true)
	eventually.NoError(t, 5*time.Second, func() error {
		if _, statuses, err := docs(); err != nil || statuses == 0 {
			return fmt.Errorf("%d status documents (%v)", statuses, err)
		}
		return nil
	})
	if _, _, err := docs(); err != nil {
		t.Fatal(err)
	}
}

// ferry demo refuses a rate its sample publisher cannot tick at (a rate above 10^9 made the
// interval 0, and time.NewTicker panics), before it starts anything.
func TestDemoRefusesARateItCannotTickAt(t *testing.T) {
	for _, rate := range []string{"0", "-5", "2000000000"} {
		if code, _, errOut := ferry("demo", "--rate", rate, "--aeron-dir", t.TempDir()); code != exitUsage || !strings.Contains(errOut, "--rate "+rate) {
			t.Errorf("ferry demo --rate %s = %d, %q; want a usage error naming it", rate, code, errOut)
		}
	}
}

// A run that ends on an error of its own says that error, not that a signal came: the
// signal handler must not take the run's own end for a signal.
func TestARunThatFailsToStartReportsNoSignal(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path, _ := writeConfig(t, "http:\n  listen: "+taken.Addr().String()+"\n")
	code, _, errOut := ferry("run", "--config", path)
	if code != exitFailure || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("ferry run on a port taken = %d, stderr %q; want 1 and the listen error", code, errOut)
	}
	if strings.Contains(errOut, "signal received") {
		t.Fatalf("ferry run on a port taken logged a signal nobody sent:\n%s", errOut)
	}
}

// The status endpoint closes a kept-alive connection that has waited for its next request
// longer than its idle timeout: scrapers and browsers that keep connections open must not
// hold ferry's goroutines and sockets for ever.
func TestTheStatusEndpointClosesIdleConnections(t *testing.T) {
	defer func(d time.Duration) { httpIdleTimeout = d }(httpIdleTimeout)
	httpIdleTimeout = 200 * time.Millisecond
	cfg := &config.Config{}
	cfg.HTTP.Listen = "127.0.0.1:0"
	var logged bytes.Buffer
	stop, err := serveHTTP(cfg, observe.NewBoard("test"), slog.New(slog.NewTextHandler(&logged, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	m := regexp.MustCompile(`url=http://([^/]+)/status`).FindStringSubmatch(logged.String())
	if m == nil {
		t.Fatalf("no status endpoint logged: %q", logged.String())
	}
	conn, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: ferry\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// The connection stays open, idle: the server closes it after its idle timeout.
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read on the idle connection = %d, %v; want io.EOF, the server closing it", n, err)
	}
}

// hungClose is a checkpoint store whose Close waits for a write that never ends, as
// bbolt's does behind a write on a hung disk.
type hungClose struct {
	store.Store
	release chan struct{}
}

func (h hungClose) Close() error {
	<-h.release
	return h.Store.Close()
}

// A checkpoint store that does not close (a write on a hung disk holds it) does not hold
// up ferry's exit for ever, and ferry says so. The run ends at once here, on a port taken.
func TestAStoreThatDoesNotCloseDoesNotHoldUpTheExit(t *testing.T) {
	defer func(d time.Duration, open func(string) (store.Store, error)) { storeCloseWait, openStore = d, open }(storeCloseWait, openStore)
	storeCloseWait = 100 * time.Millisecond
	release := make(chan struct{})
	defer close(release)
	openStore = func(path string) (store.Store, error) {
		st, err := bolt.Open(path, nil)
		return hungClose{st, release}, err
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	path, _ := writeConfig(t, "http:\n  listen: "+taken.Addr().String()+"\n")
	type result struct {
		code   int
		errOut string
	}
	ran := make(chan result, 1)
	go func() {
		code, _, errOut := ferry("run", "--config", path)
		ran <- result{code, errOut}
	}()
	select {
	case r := <-ran:
		if r.code != exitFailure || !strings.Contains(r.errOut, "the checkpoint store did not close within 100ms") {
			t.Fatalf("ferry run = %d, stderr %q; want 1, saying the store did not close", r.code, r.errOut)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ferry run still waits for a store that does not close, 5 s on")
	}
}

// `ferry status` (once, not --watch) exits 1 after the table when the ferry it asks is not
// healthy — disconnected from Aeron, a stream unhealthy, a configured stream with no status
// yet — saying why, so that a script can tell; 0 when all is well.
func TestStatusExitsOneWhenFerryIsNotHealthy(t *testing.T) {
	caughtUp := &messages.StreamStatus{Name: "orders", State: "caught-up", Healthy: true}
	for _, c := range []struct {
		name   string
		status *messages.Status
		code   int
		want   string
	}{
		{"healthy", &messages.Status{Connection: &messages.Connection{Connected: true}, Streams: []*messages.StreamStatus{caughtUp}}, exitOK, ""},
		{"stalled", &messages.Status{Connection: &messages.Connection{Connected: true}, Streams: []*messages.StreamStatus{{Name: "orders", State: "stalled", Reason: "stalled: 100 records pending"}}}, exitFailure, "orders: stalled: 100 records pending"},
		{"disconnected", &messages.Status{Connection: &messages.Connection{Error: "connection lost: archive gone"}, Streams: []*messages.StreamStatus{caughtUp}}, exitFailure, "not connected to Aeron since"},
		{"another configuration", &messages.Status{Connection: &messages.Connection{Connected: true}}, exitFailure, "orders: not in the running ferry's status"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, err := protojson.Marshal(c.status)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
			defer srv.Close()
			path, _ := writeConfig(t, "http:\n  listen: "+strings.TrimPrefix(srv.URL, "http://")+"\n")
			code, out, errOut := ferry("status", "--config", path)
			if code != c.code || !strings.Contains(out, "orders") && len(c.status.Streams) > 0 || c.want != "" && !strings.Contains(errOut, c.want) {
				t.Fatalf("status = %d\n%s%s; want %d, the table, and %q", code, out, errOut, c.code, c.want)
			}
		})
	}
}

// `ferry status` reads the /status of a newer ferry, with a field this binary does not
// know, as the status it is: a healthy ferry is not reported as not running.
func TestStatusOfANewerFerryWithAFieldUnknownHere(t *testing.T) {
	body := `{"at_ms":"1795980000000","version":"next","connection":{"connected":true},"field_of_a_newer_ferry":1,` +
		`"streams":[{"name":"orders","mode":"archive","state":"caught-up","healthy":true,"field_of_a_newer_ferry":"x"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(body)) }))
	defer srv.Close()
	path, _ := writeConfig(t, "http:\n  listen: "+strings.TrimPrefix(srv.URL, "http://")+"\n")
	code, out, errOut := ferry("status", "--config", path)
	if code != exitOK || !strings.Contains(out, "stream orders") {
		t.Fatalf("status of a healthy newer ferry = %d\n%s%s; want 0 and the table", code, out, errOut)
	}
}

// `checkpoint show` of a stream whose configured definition changed (its topic, here)
// shows the checkpoints a reset would delete, under the definition they were stored with,
// then fails saying what changed and the way out.
func TestCheckpointShowOfAChangedDefinitionShowsWhatIsStored(t *testing.T) {
	path, storePath := writeConfig(t, "")
	def := ordersDef("old-orders")
	saved(t, storePath, def, store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	code, out, errOut := ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitFailure || !strings.Contains(out, "old-orders") || !strings.Contains(out, "4096") || !strings.Contains(errOut, "definition changed") || !strings.Contains(errOut, "checkpoint reset") {
		t.Fatalf("show = %d\n%s%s; want exit 1, recording 7 at 4096 under the stored topic, and the change with the way out", code, out, errOut)
	}

	// The definition alone stored (start_position latest, decided on an empty archive).
	path, storePath = writeConfig(t, "")
	saved(t, storePath, def)
	code, out, errOut = ferry("checkpoint", "show", "--config", path, "--stream", "orders")
	if code != exitFailure || !strings.Contains(out, "only its definition is stored") || strings.Contains(out, "RECORDING") || !strings.Contains(errOut, "definition changed") {
		t.Fatalf("show of a changed definition stored alone = %d\n%s%s; want exit 1, saying only the definition is stored, no table", code, out, errOut)
	}
}

// A stream fails over a recording it had not finished that the archive no longer has, and
// names `ferry checkpoint forget` as the way on — also for a completed recording the archive
// extended and then lost before ferry stored any of the extension (lesson 14). Forget of a
// completed recording changes nothing and says so, exit 0, naming what such an extension
// lost: the way on is then to start ferry again, which goes on without it.
func TestLesson14_ForgetOfACompletedRecordingChangesNothingAndSaysToGoOn(t *testing.T) {
	path, storePath := writeConfig(t, "")
	def := ordersDef("orders")
	cp := store.Checkpoint{RecordingID: 5, Position: 8192, Completed: true, UpdatedAtMs: 1795980000000,
		LastRecord: store.RecordMark{Start: 8000, End: 8192, Checksum: 7}}
	saved(t, storePath, def, cp)

	code, out, errOut := ferry("checkpoint", "forget", "--config", path, "--stream", "orders", "--recording", "5", "--yes")
	if code != exitOK || errOut != "" {
		t.Fatalf("forget of a completed recording = %d\n%s%s; want exit 0, nothing on stderr", code, out, errOut)
	}
	for _, want := range []string{"recording 5 is completed", "at 8192", "nothing changed", "extended it past 8192", "Start ferry again"} {
		if !strings.Contains(out, want) {
			t.Errorf("forget of a completed recording said %q; want it to say %q", out, want)
		}
	}
	if state := loaded(t, storePath, def); len(state.Checkpoints) != 1 || state.Checkpoints[0] != cp {
		t.Errorf("checkpoints after forget of a completed recording: %+v; want it unchanged, %+v", state.Checkpoints, cp)
	}
}

// failingLoad is a checkpoint store whose every Load fails as the storage itself would (a
// read error of the disk): neither damage nor another ferry's data nor a changed stream.
type failingLoad struct {
	store.Store
	err error
}

func (f failingLoad) Load(store.Stream) (store.State, error) { return store.State{}, f.err }

// A load that fails for any reason stops the start (lesson 12): a read error of the
// storage is not "no checkpoint", which would start the stream at its start position and
// publish again what its checkpoint covers.
func TestAStoreThatCannotBeReadStopsTheStart(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, ordersDef("orders"), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	cfg, st := configAndStore(t, path, storePath)
	ioErr := errors.New("i/o error")
	for _, done := range []bool{false, true} { // the start, then a reconnect
		reset := done
		configs, err := streamConfigs(cfg, failingLoad{st, ioErr}, slog.New(slog.DiscardHandler), &reset, nil)
		if !errors.Is(err, ioErr) || len(configs) != 0 {
			t.Fatalf("streams loaded from a store that cannot be read (resets done before: %t): %d streams, error %v; want none, the read error", done, len(configs), err)
		}
		for _, want := range []string{"stream orders: its checkpoints could not be read from " + storePath, "ferry does not start without them"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("the read error says %q; want it to say %q", err, want)
			}
		}
	}
}

// pulsar.auth.token_file is read the same way for the broker and the admin API: a file
// written with "\r\n" line ends gives both the token alone (pulsar-client-go's own reader
// would send the broker "abc\r", refused at every connection); white space inside the token,
// or an empty file, is an error naming the file.
func TestATokenFileIsReadTheSameForTheBrokerAndTheAdminAPI(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	crlf := file("crlf", "abc\r\n")
	opts := clientOptionsOf(t, "  service_url: pulsar://127.0.0.1:6650\n  auth:\n    token_file: "+crlf+"\n")
	broker, ok := opts.Authentication.(interface{ GetData() ([]byte, error) })
	if !ok {
		t.Fatalf("authentication %T gives no token", opts.Authentication)
	}
	if got, err := broker.GetData(); err != nil || string(got) != "abc" {
		t.Errorf("the broker's token from a file ending in \\r\\n: %q, %v; want \"abc\"", got, err)
	}
	if got, err := tokenFromFile(crlf)(); err != nil || got != "abc" {
		t.Errorf("the admin API's token from a file ending in \\r\\n: %q, %v; want \"abc\"", got, err)
	}
	for name, content := range map[string]string{"empty": " \n", "inside": "ab c\n", "control": "ab\x00c"} {
		path := file(name, content)
		if _, err := tokenFromFile(path)(); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("token file %s (%q): %v; want an error naming it", name, content, err)
		}
	}
	// The broker's is read at start too: a missing or empty file stops it, instead of
	// every producer failing later.
	for name, path := range map[string]string{"missing": filepath.Join(dir, "missing"), "empty": file("empty", "")} {
		cfg, err := config.Parse([]byte("mode: archive\npulsar:\n  service_url: pulsar://127.0.0.1:6650\n  auth:\n    token_file: "+path+"\n"+
			"streams:\n  - name: orders\n    channel: aeron:ipc\n    stream_id: 1001\n    topic: orders\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := clientOptions(cfg, io.Discard); err == nil || !strings.Contains(err.Error(), "pulsar.auth.token_file") {
			t.Errorf("token file %s: %v; want the start stopped, naming pulsar.auth.token_file", name, err)
		}
	}
}

// A store that holds no stream is said at every start, not only by the start that created
// it: that one may have stopped on another error (here a token file missing, as an upgrade
// run from another directory may stop on a port the old ferry holds), and the next start,
// on a wrong store.path, would otherwise begin every stream at its start position quietly.
func TestAStoreHoldingNoStreamIsSaidAtEveryStart(t *testing.T) {
	path, storePath := writeConfig(t, "")
	missing := filepath.Join(t.TempDir(), "token")
	editConfig(t, path, func(cfg string) string {
		return strings.Replace(cfg, "  service_url: pulsar://127.0.0.1:6650\n",
			"  service_url: pulsar://127.0.0.1:6650\n  auth:\n    token_file: "+missing+"\n", 1)
	})
	for i, want := range []string{"no checkpoint store at store.path: created a new one", "the checkpoint store at store.path holds no stream"} {
		code, out, errOut := ferry("run", "--config", path)
		if code != exitFailure || !strings.Contains(errOut, "pulsar.auth.token_file") || !strings.Contains(errOut, want) || !strings.Contains(errOut, storePath) {
			t.Fatalf("start %d, token file missing = %d\n%s%s\nwant it stopped on the token file, after %q naming %s", i+1, code, out, errOut, want, storePath)
		}
	}
}

// An error of the store that advises a command names the configuration file ferry runs
// with, not the placeholder FILE: the command is one to paste.
func TestAStoreErrorAdvisesTheCommandForTheConfigurationInUse(t *testing.T) {
	path, storePath := writeConfig(t, "")
	saved(t, storePath, ordersDef("another-topic"), store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1795980000000})
	code, _, errOut := ferry("run", "--config", path)
	if code != exitFailure || !strings.Contains(errOut, "ferry checkpoint reset --config "+path+" --stream orders") || strings.Contains(errOut, "--config FILE") {
		t.Fatalf("ferry run of a changed stream = %d, stderr:\n%s\nwant exit 1 and the reset command for %s", code, errOut, path)
	}
}

// A command ferry advises names the configuration file as one shell word.
func TestShellWordQuotesWhatAShellWouldSplitOrExpand(t *testing.T) {
	for in, want := range map[string]string{
		"/etc/ferry/ferry.yaml":    "/etc/ferry/ferry.yaml",
		"/etc/my ferry/ferry.yaml": "'/etc/my ferry/ferry.yaml'",
		"/etc/it's/ferry.yaml":     `'/etc/it'\''s/ferry.yaml'`,
		"/etc/$HOME/ferry.yaml":    "'/etc/$HOME/ferry.yaml'",
		"":                         "''",
	} {
		if got := shellWord(in); got != want {
			t.Errorf("shellWord(%q) = %s, want %s", in, got, want)
		}
	}
}
