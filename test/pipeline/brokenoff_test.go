package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestLesson26_MessagesARecordingHoldsOnlyInPartAreSaid: a channel recorded unreliably
// (the archive's driver defaults to reliable=false) over a network that loses data frames
// (that driver drops 5% of what it receives) holds messages only in part: the driver fills a
// lost fragment's place instead of asking for it again. ferry publishes every whole message, byte for byte and in
// order, none of the broken ones, commits the recording to its end — there is nothing more
// of it to publish — and says in its log and the stream's failures that the recording
// holds messages only in part: a dropped message is not passed over in silence.
func TestLesson26_MessagesARecordingHoldsOnlyInPartAreSaid(t *testing.T) {
	const n, size = 400, 3 * maxPayload
	sc, own, rs, pub, stop := lossyRecording(t, n, size)

	cfg := newFerryConfig(t, sc)
	cfg.Aeron.Dir = own.AeronDir
	f := startFerry(t, cfg.write(t))
	failWaitLog(t, f, 60*time.Second, "recording published and acknowledged to its end", fmt.Sprintf("recording=%d ", pub.recordingID))
	line := failWaitLog(t, f, 10*time.Second, fmt.Sprintf("recording %d holds messages only in part", pub.recordingID))
	waitFor(t, f, 10*time.Second, "the stream's failures saying so", func() error {
		st, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
		if err != nil {
			return err
		}
		for _, fl := range st.Failures {
			if fl.Kind == "partial" && strings.Contains(fl.Message, "holds messages only in part") {
				return nil
			}
		}
		return fmt.Errorf("failures %v", st.Failures)
	})
	f.mustStop()
	expectCheckpoint(t, cfg, sc, pub.recordingID, stop, true)

	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, 0, 10*time.Second)
	last := -1
	for _, m := range msgs {
		i := indexOf(m.Payload())
		if i <= last || i >= n || !bytes.Equal(m.Payload(), sizedPayload(i, size)) {
			t.Fatalf("a message in Pulsar is not the next whole message sent: %d bytes, index %d after %d", len(m.Payload()), i, last)
		}
		last = i
	}
	if len(msgs) == 0 || len(msgs) == n {
		t.Fatalf("%d of %d messages in Pulsar: the loss the test depends on did not happen, or nothing was published", len(msgs), n)
	}

	// Every whole message the recording holds is in Pulsar: the whole ones found from the
	// fragments' flags and positions alone, not by the assembler ferry uses. (A fragment
	// lost in an unreliable recording leaves a gap the driver filled with padding, which a
	// poll steps over: the next fragment does not begin where the last one ended.)
	var whole []int
	replayFragments(t, rs.s, pub.recordingID, func(*aeron.Image) aeron.FragmentHandler {
		var parts []byte
		var begun bool
		var next int64
		return func(b []byte, h aeron.Header) {
			switch {
			case h.Flags().IsBegin():
				parts, begun = append(parts[:0], b...), true
			case begun && h.FramePosition() == next:
				parts = append(parts, b...)
			default:
				begun = false
			}
			next = h.Position()
			if begun && h.Flags().IsEnd() {
				if i := indexOf(parts); bytes.Equal(parts, sizedPayload(i, size)) {
					whole = append(whole, i)
				}
				begun = false
			}
		}
	})
	published := make([]int, len(msgs))
	for k, m := range msgs {
		published[k] = indexOf(m.Payload())
	}
	if !slices.Equal(published, whole) {
		t.Fatalf("Pulsar holds messages %v; the recording holds these whole: %v", published, whole)
	}
	t.Logf("%d messages sent, %d whole in the recording and in Pulsar; ferry said: %s", n, len(msgs), line)
}

// TestLesson26_AResumeAtARecordAfterAMessageHeldOnlyInPartFindsItsRecord: ferry resumes a
// recording that holds messages only in part from a checkpoint whose last record follows
// one of them: the record's range begins where the whole message before it ended, so the
// replay, started there, delivers the broken message's fragments before the record's own.
// The resume check must still find the record (the archive is unchanged) and ferry publish
// every whole message after it — not stop the stream for good as if the recording had been
// changed below the checkpoint, which is what it did while the check wanted the record's
// first fragment to be the first one delivered. What it drops below the checkpoint was said
// by the run that read it first, and is not said again: the fragments without their
// beginning it says are those after the checkpoint, every one.
func TestLesson26_AResumeAtARecordAfterAMessageHeldOnlyInPartFindsItsRecord(t *testing.T) {
	const n, size = 400, 3 * maxPayload
	sc, own, rs, pub, stop := lossyRecording(t, n, size)

	wholes, trailing := wholeMessages(t, rs, pub.recordingID, size)
	// The first has no whole message before it.
	k := 1 + slices.IndexFunc(wholes[min(1, len(wholes)):], func(w wholeMessage) bool { return w.orphans > 0 })
	if k < 1 || k == len(wholes)-1 {
		t.Fatalf("no whole message after fragments without their beginning, with whole ones after it, among %d: the loss the test depends on did not happen", len(wholes))
	}
	mark := wholes[k]
	orphans := trailing // after the checkpoint
	for _, w := range wholes[k+1:] {
		orphans += w.orphans
	}
	t.Logf("checkpoint at message %d [%d, %d), after %d fragment(s) without their beginning; %d whole messages and %d such fragments after it", mark.index, mark.start, mark.end, mark.orphans, len(wholes)-k-1, orphans)

	cfg, f := resumeFrom(t, sc, own, store.Checkpoint{RecordingID: pub.recordingID, Position: mark.end, UpdatedAtMs: time.Now().UnixMilli(),
		LastRecord: store.RecordMark{Start: mark.start, End: mark.end, Checksum: mark.sum}})
	done := fmt.Sprintf("recording=%d ", pub.recordingID)
	waitFor(t, f, 60*time.Second, "the recording published to its end", func() error {
		if s, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name); err == nil && s.State == "failed" {
			t.Fatalf("the stream failed: %s", s.Reason)
		}
		if log := f.Log(); !strings.Contains(log, "recording published and acknowledged to its end") || !strings.Contains(log, done) {
			return errors.New("not yet")
		}
		return nil
	})
	failMustContain(t, f.Log(), "ferry's log", "the last record before the checkpoint is the one published")
	waitSaidHeadless(t, f, pub.recordingID, orphans, 10*time.Second)
	f.mustStop()
	expectCheckpoint(t, cfg, sc, pub.recordingID, stop, true)

	var want, got []int
	for _, w := range wholes[k+1:] {
		want = append(want, w.index)
	}
	for _, m := range readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, len(want), 10*time.Second) {
		if i := indexOf(m.Payload()); bytes.Equal(m.Payload(), sizedPayload(i, size)) {
			got = append(got, i)
		} else {
			t.Fatalf("a message in Pulsar is no whole message sent: %d bytes", len(m.Payload()))
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Pulsar holds messages %v; want the whole ones after message %d: %v", got, mark.index, want)
	}
}

// TestLesson26_FragmentsWithoutTheirBeginningAfterACheckpointAreSaid: ferry resumes a
// recording that holds messages only in part from a checkpoint without its last record (as
// an older ferry wrote them), right before fragments whose message's beginning was lost. A
// record ended at a checkpoint, so those fragments are not the tail of a message begun
// before the replay's start (lesson 8, passed over): they are dropped, and said, every one
// of them — as they were not, when a replay from a checkpoint took them for such a tail.
func TestLesson26_FragmentsWithoutTheirBeginningAfterACheckpointAreSaid(t *testing.T) {
	const n, size = 400, 3 * maxPayload
	sc, own, rs, pub, _ := lossyRecording(t, n, size)
	wholes, trailing := wholeMessages(t, rs, pub.recordingID, size)
	k := 1 + slices.IndexFunc(wholes[min(1, len(wholes)):], func(w wholeMessage) bool { return w.orphans > 0 })
	if k < 1 {
		t.Fatalf("no fragment without its beginning after a whole message among %d: the loss the test depends on did not happen", len(wholes))
	}
	orphans := trailing
	for _, w := range wholes[k:] {
		orphans += w.orphans
	}
	t.Logf("checkpoint at %d, the end of message %d, before %d fragment(s) without their beginning; %d from there to the recording's end", wholes[k].start, wholes[k-1].index, wholes[k].orphans, orphans)

	_, f := resumeFrom(t, sc, own, store.Checkpoint{RecordingID: pub.recordingID, Position: wholes[k].start, UpdatedAtMs: time.Now().UnixMilli()})
	waitSaidHeadless(t, f, pub.recordingID, orphans, 60*time.Second)
	f.mustStop()
}

// TestLesson26_DropsPastACheckpointBeyondItsLastRecordAreSaid: ferry resumes a recording
// that holds messages only in part from a checkpoint past its last record — a message held
// only in part lies between them, cut at the checkpoint (a recording's stop can be so) —
// and fragments without their beginning follow at the checkpoint. The resume's check finds
// the last record, and goes on reading until a record past the checkpoint; what is dropped
// below the checkpoint was said by the run that read it first, what is dropped from it on
// is said now, every fragment (it was not, while the check took everything it dropped as
// below the checkpoint).
func TestLesson26_DropsPastACheckpointBeyondItsLastRecordAreSaid(t *testing.T) {
	const n, size = 400, 3 * maxPayload
	sc, own, rs, pub, _ := lossyRecording(t, n, size)
	wholes, trailing := wholeMessages(t, rs, pub.recordingID, size)
	// Something (a message begun and cut short) lies between the last record and the first
	// fragment without its beginning, where the checkpoint is.
	k := 1 + slices.IndexFunc(wholes[min(1, len(wholes)):], func(w wholeMessage) bool { return w.orphans > 0 && w.firstOrphanAt > w.start })
	if k < 1 {
		t.Fatalf("no fragment without its beginning after a message cut short, after a whole message, among %d: the loss the test depends on did not happen", len(wholes))
	}
	last, at := wholes[k-1], wholes[k].firstOrphanAt
	orphans := trailing
	for _, w := range wholes[k:] {
		orphans += w.orphans
	}
	t.Logf("checkpoint at %d, past the last record [%d, %d) (message %d); %d fragments without their beginning from there to the recording's end", at, last.start, last.end, last.index, orphans)

	_, f := resumeFrom(t, sc, own, store.Checkpoint{RecordingID: pub.recordingID, Position: at, UpdatedAtMs: time.Now().UnixMilli(),
		LastRecord: store.RecordMark{Start: last.start, End: last.end, Checksum: last.sum}})
	waitSaidHeadless(t, f, pub.recordingID, orphans, 60*time.Second)
	failMustContain(t, f.Log(), "ferry's log", "the last record before the checkpoint is the one published")
	f.mustStop()
}

// waitSaidHeadless waits until ferry's log, over all it said, says recording id holds want
// fragments without their beginning.
func waitSaidHeadless(t *testing.T, f *ferryProc, id int64, want int, timeout time.Duration) {
	t.Helper()
	said := regexp.MustCompile(fmt.Sprintf(`recording %d holds messages only in part before position \d+: \d+ begun and not ended, (\d+) fragment`, id))
	waitFor(t, f, timeout, fmt.Sprintf("%d fragments without their beginning said", want), func() error {
		got := 0
		for _, m := range said.FindAllStringSubmatch(f.Log(), -1) {
			k, _ := strconv.Atoi(m[1])
			got += k
		}
		switch {
		case got > want && strings.Contains(f.Log(), "supervisor: restarting child"):
			// A replay started again re-delivers from the checkpoint and says what it drops
			// there again: not this test's count any more.
			return fmt.Errorf("%d said, and a child of the stream was restarted (its log: a replay started again says its drops again)", got)
		case got != want:
			return fmt.Errorf("%d said", got)
		}
		return nil
	})
}

// wholeMessage is a whole message of size bytes in a recording, as ferry takes it: its
// record begins where the whole message before it ended. broken: fragments of no whole
// message came before its own; orphans: how many of those had no beginning, counted as
// ferry's assembler counts them.
type wholeMessage struct {
	index      int
	start, end int64
	sum        uint32
	broken     bool
	orphans    int
	// firstOrphanAt is the frame position of the first of the orphans, -1 if none.
	firstOrphanAt int64
}

// wholeMessages replays recording id and returns its whole messages of size bytes, found
// from the fragments' flags and positions alone (a fragment lost in an unreliable recording
// leaves a gap the driver filled with padding, which a poll steps over: the next fragment
// does not begin where the last one ended), and the fragments without a beginning after the
// last of them.
func wholeMessages(t *testing.T, rs *recordedStream, id int64, size int) ([]wholeMessage, int) {
	t.Helper()
	var wholes []wholeMessage
	var orphans int
	replayFragments(t, rs.s, id, func(*aeron.Image) aeron.FragmentHandler {
		var parts []byte
		var begun bool
		var next, lastEnd int64
		var fragments, own int // since the last whole message; of the message being assembled
		firstOrphanAt := int64(-1)
		return func(b []byte, h aeron.Header) {
			fragments++
			switch {
			case h.Flags().IsBegin():
				parts, begun, own = append(parts[:0], b...), true, 1
			case begun && h.FramePosition() == next:
				parts, own = append(parts, b...), own+1
			default:
				if begun = false; orphans == 0 {
					firstOrphanAt = h.FramePosition()
				}
				orphans++
			}
			next = h.Position()
			if begun && h.Flags().IsEnd() {
				if i := indexOf(parts); bytes.Equal(parts, sizedPayload(i, size)) {
					wholes = append(wholes, wholeMessage{i, lastEnd, h.Position(), crc32.Checksum(parts, crc32.MakeTable(crc32.Castagnoli)), fragments > own, orphans, firstOrphanAt})
					lastEnd, fragments, orphans, firstOrphanAt = h.Position(), 0, 0, -1
				}
				begun = false
			}
		}
	})
	return wholes, orphans
}

// resumeFrom starts ferry on stream sc of archive own, its store holding checkpoint cp, as
// a ferry would have left it, and returns its configuration and process.
func resumeFrom(t *testing.T, sc streamConfig, own *infra.Archive, cp store.Checkpoint) (*ferryConfig, *ferryProc) {
	t.Helper()
	cfg := newFerryConfig(t, sc)
	cfg.Aeron.Dir = own.AeronDir
	path := cfg.write(t)
	st, err := bolt.Open(cfg.Store.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save(sc.definition(), []store.Checkpoint{cp}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	return cfg, startFerry(t, path)
}

// lossyRecording records n messages of size bytes on a channel recorded unreliably (the
// archive's driver defaults to reliable=false) over a network that loses data frames (that
// driver drops 5% of what it receives), and stops the recording: it holds messages only in
// part, the driver having filled a lost fragment's place instead of asking for it again.
// It returns the stream, the archive, its recorded stream, the publication and the stop.
func lossyRecording(t *testing.T, n, size int) (streamConfig, *infra.Archive, *recordedStream, *publisher, int64) {
	t.Helper()
	props := lossyReceiver(26)
	// The archive strips reliable=false from the channel it records (1.47.3,
	// ArchiveConductor.strippedChannelBuilder): only the driver's default makes its
	// recording subscription fill gaps rather than ask for the lost frames again.
	props["aeron.reliable.stream"] = "false"
	own := failOwnArchive(t, props)
	sc := newStreamConfig(t, "")
	endpoint := fmt.Sprintf("aeron:udp?endpoint=%s:%d", infra.Loopback, freeUDPPort(t))
	sc.Channel = endpoint + "|reliable=false"
	rs := failStreamOn(t, failConnectArchiveAt(t, own.AeronDir), sc.Channel, sc.StreamID)
	// Recorded from the network (a remote source), not from the publication's log: the loss
	// is the receiving end's.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	subID, err := rs.s.archive.StartRecording(ctx, sc.Channel, sc.StreamID, archive.SourceRemote, false)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	rs.subID, rs.recording = subID, true
	pub := rs.newPublication(t)
	for i := range n {
		if _, err := pub.offer(sizedPayload(i, size), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	pub.waitRecorded(t, pub.pub.Position())
	rs.stopRecording(t)
	return sc, own, rs, pub, pub.descriptor(t).StopPosition
}
