package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
)

// ferryCommand runs a one-shot ferry command (not `ferry run`) and returns its exit status
// and output. A race reported in its output fails the test, whatever its exit status
// (checkRaceReports).
func ferryCommand(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, ferryBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = withoutFerryVars(cmd.Environ())
	err := cmd.Run()
	checkRaceReports(t, "ferry "+strings.Join(args, " "), errOut.String())
	if ctx.Err() != nil {
		t.Fatalf("ferry %s did not finish within a minute", strings.Join(args, " "))
	}
	return failExitCode(err), out.String(), errOut.String()
}

// TestRecordingsCommandListsPositionsAndCommits: `ferry recordings` lists a stream's
// recordings in the real archive with their positions and what ferry committed of each.
// With the checkpoint store damaged it still lists them, marks what ferry committed as
// unknown, and exits 1 with the store's error (the file, `ferry checkpoint reset`): a shell
// script must not read "?" as success.
func TestRecordingsCommandListsPositionsAndCommits(t *testing.T) {
	sc := newStreamConfig(t, "")
	rs, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	positions := pub.publish(t, 0, 50)
	rs.stopRecording(t, pub)
	cfg := newFerryConfig(t, sc)
	path := cfg.write(t)

	st, err := bolt.Open(cfg.Store.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	committed := store.Checkpoint{RecordingID: pub.recordingID, Position: positions[24], UpdatedAtMs: time.Now().UnixMilli()}
	if err := st.Save(sc.definition(), []store.Checkpoint{committed}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := ferryCommand(t, "recordings", "--config", path)
	row := fmt.Sprintf(`(?m)^%d\s+stopped\s+0\s+%d\s+%d\s`, pub.recordingID, positions[49], positions[24])
	if code != 0 || !strings.Contains(out, "stream "+sc.Name) || !matches(row, out) {
		t.Fatalf("ferry recordings = %d\nstdout:\n%s\nstderr:\n%s\nwant a row matching %s", code, out, errOut, row)
	}

	failEditCheckpoint(t, cfg.Store.Path, sc.Name, pub.recordingID, func(v []byte) []byte { v[len(v)-1] ^= 0x40; return v })
	code, out, errOut = ferryCommand(t, "recordings", "--config", path)
	unknown := fmt.Sprintf(`(?m)^%d\s+stopped\s+0\s+%d\s+\?\s`, pub.recordingID, positions[49])
	if code != 1 || !matches(unknown, out) || !strings.Contains(errOut, cfg.Store.Path) || !strings.Contains(errOut, "ferry checkpoint reset") {
		t.Fatalf("ferry recordings on a damaged store = %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, a row matching %s, and the store's error", code, out, errOut, unknown)
	}
}

// matches reports whether text matches the regular expression pattern.
func matches(pattern, text string) bool { return regexp.MustCompile(pattern).MatchString(text) }
