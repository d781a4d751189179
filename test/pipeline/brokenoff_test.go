package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
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
	stop := pub.descriptor(t).StopPosition

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
			if fl.Kind == "read" && strings.Contains(fl.Message, "holds messages only in part") {
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
