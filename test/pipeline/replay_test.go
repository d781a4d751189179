package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/test/harness"
	"github.com/ferry-bridge/ferry/test/infra"
)

// Lessons 9 and 10 through the pipeline, in process: how the replay reads the log.

// TestLesson09_ACheckpointAtAPaddingFrameResumesPastIt: with 64 KiB terms and 1,000-byte
// messages, each term ends with a padding frame that no handler sees. The acknowledgement
// of the first message after one is held, so the checkpoint stays at the end of the message
// before it: the position of the padding frame. The next start resumes from there: the
// replay begins with the padding, skips it, and sends the held message first; every message
// reaches the topic once, and the checkpoint reaches the recording's end (lesson 9: the
// image's position, not the last delivered header, is where the replay stands). Held one
// message later instead, the checkpoint is the end of the message after the padding: the
// replay reads that message again first (it is the checkpoint's last record, which counts
// the padding before it), finds it unchanged, and goes on.
func TestLesson09_ACheckpointAtAPaddingFrameResumesPastIt(t *testing.T) {
	for _, c := range []struct {
		name  string
		after int // the message held is the gap's message + after
	}{
		{"checkpoint at the padding", 1},
		{"checkpoint at the message after the padding", 2},
	} {
		t.Run(c.name, func(t *testing.T) { checkpointAroundPadding(t, c.after) })
	}
}

func checkpointAroundPadding(t *testing.T, after int) {
	const n, size = 200, 1000
	sc := newStreamConfig(t, "")
	sc.Channel += "|term-length=64k"
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	want := make([][]byte, n)
	pos := make([]int64, n)
	for i := range want {
		want[i] = sizedPayload(i, size)
		p, err := pub.offer(want[i], 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		pos[i] = p
	}
	// The first padding: the one step between two messages' ends longer than a frame.
	frame, gap := pos[1]-pos[0], -1
	for i := 1; i+1 < n; i++ {
		if pos[i+1]-pos[i] != frame {
			gap = i
			break
		}
	}
	if gap < 0 || pos[gap]%(64<<10) == 0 {
		t.Fatalf("no padding frame among %d messages of %d bytes in 64 KiB terms (positions %d, %d, …)", n, size, pos[0], pos[1])
	}
	t.Logf("message %d ends at %d, a padding frame of %d bytes follows; message %d ends at %d",
		gap, pos[gap], pos[gap+1]-pos[gap]-frame, gap+1, pos[gap+1])
	watchTopic(t, sc.Topic)

	storePath := t.TempDir() + "/checkpoints.db"
	held := gap + after
	hold := harness.Faults(map[int]harness.Fault{held: harness.Hold()})
	ip := startInProcess(t, inProcessOptions{plan: hold, storePath: storePath}, sc)
	ip.waitCheckpoint(sc, pub.recordingID, pos[held-1], 30*time.Second)
	_, _ = ip.stop() // the held acknowledgement keeps the drain from completing (5 s)
	st, err := bolt.Open(storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	state, err := st.Load(sc.definition())
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil || len(state.Checkpoints) != 1 || state.Checkpoints[0].Position != pos[held-1] {
		t.Fatalf("stored after the first run: %+v, %v; want the checkpoint at message %d's end, %d", state.Checkpoints, err, held-1, pos[held-1])
	}

	resend, first := firstSequenceID()
	again := startInProcess(t, inProcessOptions{plan: resend, storePath: storePath}, sc)
	again.waitCheckpoint(sc, pub.recordingID, pos[n-1], 30*time.Second)
	if got := first(); got != pos[held] {
		t.Fatalf("resumed at %d, the first send carried sequence id %d, want %d (message %d)", pos[held-1], got, pos[held], held)
	}
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second), want)
}

// TestLesson10_OneContinuousReplayFollowsALiveRecording: a live recording of messages of
// one to four frames (payloadFor), published while ferry follows it, is read by one replay
// from its start to the end, never cut and reopened (where reassembly state would have to
// survive the cut), and every message arrives whole, once, in order.
func TestLesson10_OneContinuousReplayFollowsALiveRecording(t *testing.T) {
	const n = 3000
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	watchTopic(t, sc.Topic)
	starts := &replayStarts{}
	ip := startInProcess(t, inProcessOptions{wrapArchive: starts.wrap}, sc)
	head := pub.publish(t, 0, 100)
	ip.waitCheckpoint(sc, pub.recordingID, head[99], 30*time.Second) // following it live
	bg := pub.publishInBackground(t, 100, 10, 5*time.Millisecond)    // ~2,000 messages a second
	bg.waitCount(t, n-100, 30*time.Second)
	positions := append(head, bg.stop(t)...)
	ip.waitCheckpoint(sc, pub.recordingID, positions[len(positions)-1], 60*time.Second)

	if calls := starts.get(); len(calls) != 1 {
		t.Fatalf("%d replays of the live recording were started (%v), want one", len(calls), calls)
	}
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, len(positions), 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, len(positions)))
	if fragmented := countFragmented(len(positions)); fragmented == 0 {
		t.Fatal("no message longer than one frame: the test proved nothing about reassembly")
	} else {
		t.Logf("%d messages, %d of them fragmented, one replay", len(positions), fragmented)
	}
}

// countFragmented is how many of payloadFor(0..n-1) take more than one frame.
func countFragmented(n int) int {
	k := 0
	for i := range n {
		if payloadSize(i) > maxPayload {
			k++
		}
	}
	return k
}

// TestLesson09_ARecordingThatEndsWithPaddingCompletesAndTheNextFollows: recording A's
// publication offers until its term is full, so that its last frame is a padding frame (the
// offer that finds no room pads the term and answers "admin action"), and A stops right
// there: its stop position lies beyond its last message's end. ferry completes A at its stop
// position — the image's position, not the last message's end (lesson 9), or it would wait
// for a message that never comes — and publishes the next recording B after it: every
// message once, in order.
func TestLesson09_ARecordingThatEndsWithPaddingCompletesAndTheNextFollows(t *testing.T) {
	const nB = 100
	sc := newStreamConfig(t, "")
	sc.Channel += "|term-length=64k"
	rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
	var pa []int64
	for i := 0; ; {
		pos, err := a.pub.Offer(payloadFor(i))
		switch {
		case err == nil:
			pa = append(pa, pos)
			i++
			continue
		case errors.Is(err, aeron.ErrAdminAction):
		case retryable(err):
			continue
		default:
			t.Fatal(err)
		}
		break // the term is padded to its end
	}
	nA := len(pa)
	rs.stopRecording(t, a) // at the publication's position: the term's end, past the padding
	stop := a.descriptor(t).StopPosition
	if stop <= pa[nA-1] || stop%(64<<10) != 0 {
		t.Fatalf("recording A stops at %d, its last message ends at %d: the test needs a padding frame at the end of a term", stop, pa[nA-1])
	}
	t.Logf("recording A: %d messages, the last ending at %d, then %d bytes of padding to its stop at %d", nA, pa[nA-1], stop-pa[nA-1], stop)
	a.close(t)
	rs.startRecording(t)
	b := rs.newPublication(t)
	pb := b.publish(t, nA, nA+nB)
	b.waitRecorded(t, pb[nB-1])
	watchTopic(t, sc.Topic)

	ip := startInProcess(t, inProcessOptions{}, sc)
	ip.waitCheckpoint(sc, b.recordingID, pb[nB-1], 60*time.Second)
	if cp := ip.checkpoint(sc, a.recordingID); cp.Position != stop || !cp.Completed {
		t.Fatalf("A's checkpoint %+v, want completed at its stop position %d", cp, stop)
	}
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, nA+nB, 30*time.Second), payloads(0, nA+nB))
}

// TestAReplayOverUDPDeliversEveryMessage: with replay.channel a UDP endpoint on loopback, the
// real driver takes the subscription ferry makes of it (the replay's session, and
// reliable=true whatever the configuration says, or when it says so itself), and with 64 KiB
// terms (the archive replays in the recording's term length) the receiver's window holds the
// archive back while ferry's credits hold its reading back: every message of one to four
// frames arrives once, in order.
func TestAReplayOverUDPDeliversEveryMessage(t *testing.T) {
	for _, c := range []struct{ name, params string }{
		{"reliable as ferry asks", ""},
		{"reliable=true in the configuration too", "|reliable=true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 2000
			sc := newStreamConfig(t, "")
			sc.Channel += "|term-length=64k"
			_, a := newRecordedStream(t, sc.Channel, sc.StreamID)
			pa := a.publish(t, 0, n)
			w := watchTopic(t, sc.Topic)
			cfg := newFerryConfig(t, sc)
			cfg.Replay.Channel = fmt.Sprintf("aeron:udp?endpoint=127.0.0.1:%d|term-length=64k%s", freeUDPPort(t), c.params)
			f := startFerry(t, cfg.write(t))
			w.waitAll(t, f, a.recordingID, pa, 90*time.Second)
			assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second), payloads(0, n))
			if fragmented := countFragmented(n); fragmented == 0 {
				t.Fatal("no message longer than one frame")
			}
		})
	}
}

// TestAReplayReadFirstByAnotherSubscriberIsNotSkipped: another program on ferry's media
// driver subscribes to aeron:ipc on the stream id ferry replays on, with no session, and
// reads eagerly. The archive starts a replay once anything subscribes to it, so that one
// reads the replay before ferry's subscription joins, which then joins where it has read
// to (here every time: the archive's answer to StartReplay is held back 300 ms; without
// that, about two replays in five against the real driver). Before, the records in between
// were skipped without a word. Now a replay whose image joins past where it began is
// started again, saying so, and the stream is given up on as that goes on, naming
// replay.stream_id; nothing is counted as published.
func TestAReplayReadFirstByAnotherSubscriberIsNotSkipped(t *testing.T) {
	const n = 20_000
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pos := pub.publish(t, 0, n)
	pub.waitRecorded(t, pos[n-1])

	replayStreamID := infra.UniqueStreamID()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	other, err := connectArchive(t).aeron.AddSubscription(ctx, "aeron:ipc", replayStreamID, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	read := readEagerly(t, other)

	ip := startInProcess(t, inProcessOptions{replayStreamID: replayStreamID, wrapArchive: func(a actors.Archive) actors.Archive {
		return lateReplayAnswers{Archive: a, by: 300 * time.Millisecond}
	}}, sc)
	ip.waitFailed(sc.Name, 2*time.Minute, "but its image joined ferry's subscription at", "replay.stream_id")
	t.Logf("the other subscriber read %d fragments", read.Load())
	if cp := ip.checkpoint(sc, pub.recordingID); cp.Position != 0 || !cp.Seed {
		t.Fatalf("checkpoint %+v; want the seed at 0: nothing published", cp)
	}
	if got := receivedMessages(t, sc.Topic); got != 0 {
		t.Fatalf("the broker received %d messages; want none", got)
	}
}

// lateReplayAnswers is the real archive client whose StartReplay returns by later than the
// archive answered it (the replay under way meanwhile).
type lateReplayAnswers struct {
	actors.Archive
	by time.Duration
}

func (l lateReplayAnswers) StartReplay(ctx context.Context, recordingID, position, length int64, replayChannel string, replayStreamID int32) (int64, error) {
	session, err := l.Archive.StartReplay(ctx, recordingID, position, length, replayChannel, replayStreamID)
	time.Sleep(l.by)
	return session, err
}
