package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/store"
)

// TestAPurgedRecordingForgottenLetsTheStreamGoOn: retention purges recording A while ferry,
// stopped, had published only part of it (lesson 14): the next start fails the stream,
// naming `ferry checkpoint forget` as the way on. The command refuses while the archive
// still has A, and without --yes; with it, it completes A's checkpoint where it stands,
// marked forgotten, and the next start publishes the recording after A, B, warning that A
// was forgotten (and /status shows it forgotten). The topic holds what was published of A,
// then all of B; nothing is published twice.
func TestAPurgedRecordingForgottenLetsTheStreamGoOn(t *testing.T) {
	const nA, nB = 600, 400
	sc := newStreamConfig(t, "")
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	w := watchTopic(t, sc.Topic)
	cfg := newFerryConfig(t, sc)
	pa := a.publish(t, 0, nA)
	f := startFerry(t, cfg.write(t))
	w.waitAll(t, f, a.recordingID, pa, 90*time.Second)
	f.mustStop()
	expectCheckpoint(t, cfg, sc, a.recordingID, pa[nA-1], false)
	recording := strconv.FormatInt(a.recordingID, 10)
	forget := []string{"checkpoint", "forget", "--config", cfg.path, "--stream", sc.Name, "--recording", recording}

	// A is still in the archive: ferry would publish it on, and forgetting it is refused.
	code, out, errOut := ferryCommand(t, append(forget, "--yes")...)
	if code != 1 || !strings.Contains(errOut, "the archive still has recording "+recording) {
		t.Fatalf("forget of a recording the archive has: exit %d, stdout %q, stderr %q; want 1, saying the archive still has it", code, out, errOut)
	}
	expectCheckpoint(t, cfg, sc, a.recordingID, pa[nA-1], false)

	// A stopped with more than ferry published of it, then purged; B recorded after it.
	more := a.publish(t, nA, nA+100)
	rs.stopRecording(t, a)
	a.close(t) // or the next recording subscription records it again
	failPurge(t, rs.s, a.recordingID)
	rs.startRecording(t)
	b := rs.newPublication(t)
	pb := b.publish(t, nA+100, nA+100+nB)

	f = startFerry(t, cfg.path)
	code, log := failMustExit(t, f, 60*time.Second, fmt.Sprintf("recording %d, which it had not finished, was purged", a.recordingID))
	if code != 1 {
		t.Fatalf("exit status %d, want 1; log:\n%s", code, log)
	}
	failMustContain(t, log, "ferry's output", "recording "+recording+" ", store.ForgetCommand(sc.Name, a.recordingID))

	code, out, errOut = ferryCommand(t, forget...)
	if code != 2 || !strings.Contains(errOut, "--yes") {
		t.Fatalf("forget without --yes: exit %d, stdout %q, stderr %q; want 2, asking for --yes", code, out, errOut)
	}
	expectCheckpoint(t, cfg, sc, a.recordingID, pa[nA-1], false)
	code, out, errOut = ferryCommand(t, append(forget, "--yes")...)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("recording %d forgotten at position %d", a.recordingID, pa[nA-1])) {
		t.Fatalf("forget: exit %d, stdout %q, stderr %q; want 0, naming the recording and its position", code, out, errOut)
	}
	if cp := cfg.checkpoint(t, sc, a.recordingID); cp.Position != pa[nA-1] || !cp.Completed || !cp.Forgotten {
		t.Fatalf("checkpoint of the forgotten recording: %+v; want completed and forgotten at %d", cp, pa[nA-1])
	}
	code, out, errOut = ferryCommand(t, "checkpoint", "show", "--config", cfg.path, "--stream", sc.Name)
	if code != 0 || !matches(recording+` +`+strconv.FormatInt(pa[nA-1], 10)+` +forgotten`, out) {
		t.Fatalf("checkpoint show: exit %d, stdout %q, stderr %q; want recording %s forgotten at %d", code, out, errOut, recording, pa[nA-1])
	}

	f = startFerry(t, cfg.path)
	w.waitAll(t, f, b.recordingID, pb, 90*time.Second)
	waitFor(t, f, 30*time.Second, "the status showing the forgotten recording", func() error {
		st, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
		if err != nil {
			return err
		}
		if r := recordingOf(st, a.recordingID); r == nil || !r.Forgotten || r.GetCommittedPosition() != pa[nA-1] {
			return fmt.Errorf("recording %d in the status: %v; want forgotten at %d", a.recordingID, r, pa[nA-1])
		}
		return nil
	})
	failMustContain(t, f.Log(), "ferry's log", "recording forgotten by `ferry checkpoint forget`", "recording="+recording)
	if line, ok := failLogLine(f.Log(), "stream failed"); ok {
		t.Fatalf("the stream failed after the recording was forgotten: %s", line)
	}
	f.mustStop()
	expectTopic(t, sc, a.published(0, pa), b.published(nA+100, pb))
	if w.has(a.recordingID, more[0]) {
		t.Fatalf("a record of the purged recording past its checkpoint was published")
	}
}

// TestForgetRefusesARecordingIDAReplacedArchiveReused: ferry published part of live
// recording A and stopped; the archive was then replaced (catalog and recordings deleted),
// and the new archive's first recording has A's id. `ferry checkpoint forget` of that id is
// refused: the archive has a recording under it, but not the one ferry checkpointed, and
// forgetting would not get the stream on (its next start fails on the replaced catalog). The
// refusal says so and names the way on, a new stream name; the checkpoint is unchanged.
func TestForgetRefusesARecordingIDAReplacedArchiveReused(t *testing.T) {
	const n, offsetB = 300, 1_000_000
	own := failOwnArchive(t, nil)
	sc := newStreamConfig(t, "")
	rs1 := failStreamOn(t, failConnectArchiveAt(t, own.AeronDir), sc.Channel, sc.StreamID)
	rs1.startRecording(t)
	a := rs1.newPublication(t)
	pa := a.publish(t, 0, n)
	w := watchTopic(t, sc.Topic)
	cfg := newFerryConfig(t, sc)
	cfg.Aeron.Dir = own.AeronDir
	f := startFerry(t, cfg.write(t))
	w.waitAll(t, f, a.recordingID, pa, 60*time.Second)
	f.mustStop()
	expectCheckpoint(t, cfg, sc, a.recordingID, pa[n-1], false) // A is live: not completed
	rs1.stopRecording(t, a)

	failReplaceArchive(t, own, sc, a.recordingID, offsetB, n)

	recording := strconv.FormatInt(a.recordingID, 10)
	code, out, errOut := ferryCommand(t, "checkpoint", "forget", "--config", cfg.path, "--stream", sc.Name, "--recording", recording, "--yes")
	if code != 1 || !strings.Contains(errOut, "the archive has a recording "+recording+", but not the one ferry checkpointed") || !strings.Contains(errOut, "give the stream a new name") {
		t.Fatalf("forget of a reused id: exit %d, stdout %q, stderr %q; want 1, saying the archive's recording %s is another one and naming a new stream name as the way on", code, out, errOut, recording)
	}
	if cp := cfg.checkpoint(t, sc, a.recordingID); cp.Position != pa[n-1] || cp.Completed || cp.Forgotten {
		t.Fatalf("checkpoint after the refused forget: %+v; want it unchanged, at %d, neither completed nor forgotten", cp, pa[n-1])
	}
}
