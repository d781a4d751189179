package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// Tests of the helpers themselves, against the real archive and broker. They need no
// `ferry run`, and they pin what the end-to-end tests take for granted: the positions the
// publisher returns are where the messages end in the recording, the ways a recording is
// stopped stop it at the publisher's position, and the broker counts duplicate receipts.

// TestRecordedStreamHelperRecordsWhatWasPublished: what publish returns is what the archive
// recorded — a replay of the recording gives payloadFor(i) ending at positions[i] — and each
// way the tests end or start a recording leaves it where they expect.
func TestRecordedStreamHelperRecordsWhatWasPublished(t *testing.T) {
	t.Run("stopRecording stops at the publisher's last position", func(t *testing.T) {
		sc := newStreamConfig(t, "")
		rs, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
		const n = 3000
		positions := pub.publish(t, 0, n)
		if len(positions) != n {
			t.Fatalf("publish returned %d positions for %d messages", len(positions), n)
		}
		for k := 1; k < n; k++ {
			if positions[k] <= positions[k-1] || positions[k]%32 != 0 {
				t.Fatalf("position %d after message %d does not follow %d (or is not frame-aligned)", positions[k], k, positions[k-1])
			}
		}
		if d := pub.descriptor(t); d.StartPosition != 0 || !d.IsLive() || d.SessionID != pub.pub.SessionID() || d.OriginalChannel != sc.Channel {
			t.Fatalf("descriptor of a recording started before its publication: %+v", d)
		}
		last := positions[n-1]
		pub.waitRecorded(t, last)
		rs.stopRecording(t, pub) // fails unless it stopped at the publisher's position
		assertReplayed(t, rs.s, pub.recordingID, 0, 0, positions)
	})

	t.Run("closing the publication stops its recording; the next one is a new recording", func(t *testing.T) {
		sc := newStreamConfig(t, "")
		rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
		pa := a.publish(t, 0, 500)
		a.close(t) // fails unless the recording stopped at a's last position
		if got := a.descriptor(t).StopPosition; got != pa[len(pa)-1] {
			t.Fatalf("recording A stopped at %d, want %d", got, pa[len(pa)-1])
		}
		b := rs.newPublication(t)
		if b.recordingID == a.recordingID {
			t.Fatalf("the second publication is recorded as %d, the first one's recording", b.recordingID)
		}
		pb := b.publish(t, 500, 900)
		if d := b.descriptor(t); d.StartPosition != 0 || !d.IsLive() {
			t.Fatalf("recording B: %+v; want live from 0", d)
		}
		b.waitRecorded(t, pb[len(pb)-1])
		rs.stopRecording(t, b)
		assertReplayed(t, rs.s, a.recordingID, 0, 0, pa)
		assertReplayed(t, rs.s, b.recordingID, 500, 500, pb)
	})

	t.Run("a recording started after publishing starts inside a message", func(t *testing.T) {
		sc := newStreamConfig(t, "")
		rs, pub, positions := newLateRecordedStream(t, sc.Channel, sc.StreamID, 40)
		d := pub.descriptor(t)
		cut := len(positions) - 1
		if d.StartPosition <= positions[cut-1] || d.StartPosition >= positions[cut] {
			t.Fatalf("recording starts at %d, not inside message %d (%d..%d)", d.StartPosition, cut, positions[cut-1], positions[cut])
		}
		positions = append(positions, pub.publish(t, cut+1, cut+200)...)
		pub.waitRecorded(t, positions[len(positions)-1])
		rs.stopRecording(t, pub)
		first := recordedFrom(positions, d.StartPosition)
		if first != cut+1 {
			t.Fatalf("recordedFrom = %d, want %d", first, cut+1)
		}
		t.Logf("recording starts at %d inside message %d; message %d is the first recorded whole", d.StartPosition, cut, first)
		// The replay drops the cut message whole and starts with the next one.
		assertReplayed(t, rs.s, pub.recordingID, first, 0, positions)
	})

	t.Run("two publications at once are two recordings", func(t *testing.T) {
		sc := newStreamConfig(t, "")
		rs, a := newRecordedStream(t, sc.Channel, sc.StreamID)
		b := rs.newPublication(t)
		if a.recordingID == b.recordingID || a.pub.SessionID() == b.pub.SessionID() {
			t.Fatalf("publications a (session %d, recording %d) and b (session %d, recording %d) share a session or recording",
				a.pub.SessionID(), a.recordingID, b.pub.SessionID(), b.recordingID)
		}
		var pa, pb []int64
		for k := 0; k < 1000; k += 100 {
			pa = append(pa, a.publish(t, k, k+100)...)
			pb = append(pb, b.publish(t, 1_000_000+k, 1_000_000+k+100)...)
		}
		rs.stopRecording(t, a, b)
		assertReplayed(t, rs.s, a.recordingID, 0, 0, pa)
		assertReplayed(t, rs.s, b.recordingID, 1_000_000, 1_000_000, pb)
	})

	t.Run("background publishing", func(t *testing.T) {
		sc := newStreamConfig(t, "")
		rs, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
		bg := pub.publishInBackground(t, 0, 20, 5*time.Millisecond)
		bg.waitCount(t, 1000, 20*time.Second)
		positions := bg.stop(t)
		pub.waitRecorded(t, positions[len(positions)-1])
		rs.stopRecording(t, pub)
		assertReplayed(t, rs.s, pub.recordingID, 0, 0, positions)
	})
}

// replayedMessage is one message read back through a replay, with its end position.
type replayedMessage struct {
	payload  []byte
	position int64
}

// replayRecording replays a stopped recording from its start to its end.
func replayRecording(t *testing.T, s aeronSession, recordingID int64) []replayedMessage {
	t.Helper()
	var got []replayedMessage
	replayFragments(t, s, recordingID, func(img *aeron.Image) aeron.FragmentHandler {
		return aeron.NewFragmentAssembler(img.MaxMessageLength(), func(b []byte, h aeron.Header) {
			got = append(got, replayedMessage{payload: bytes.Clone(b), position: h.Position()})
		}).OnFragment
	})
	return got
}

// replayFragments replays a stopped recording from its start to its end, each fragment to
// the handler made for the replay's image.
func replayFragments(t *testing.T, s aeronSession, recordingID int64, handler func(*aeron.Image) aeron.FragmentHandler) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream := infra.UniqueStreamID()
	replaySession, err := s.archive.StartReplay(ctx, recordingID, archive.NullPosition, archive.ReplayToEnd, "aeron:ipc", stream)
	if err != nil {
		t.Fatalf("replay recording %d: %v", recordingID, err)
	}
	sessionID := archive.ReplayImageSessionID(replaySession)
	sub, err := s.aeron.AddSubscription(ctx, fmt.Sprintf("aeron:ipc?session-id=%d", sessionID), stream, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var img *aeron.Image
	eventually.NoError(t, 10*time.Second, func() error {
		if img = sub.ImageBySessionID(sessionID); img == nil {
			return errors.New("the replay image has not joined")
		}
		return nil
	})
	handle := handler(img)
	eventually.NoError(t, 60*time.Second, func() error {
		for {
			n, err := img.Poll(handle, 100)
			if err != nil {
				t.Fatalf("poll the replay: %v", err)
			}
			if n == 0 {
				break
			}
		}
		if !img.IsEndOfStream() {
			return fmt.Errorf("replay of recording %d at %d, not at its end", recordingID, img.Position())
		}
		return nil
	})
}

// assertReplayed replays a stopped recording and fails unless it holds exactly messages
// from, from+1, … of a publication whose messages first.. ended at positions.
func assertReplayed(t *testing.T, s aeronSession, recordingID int64, from, first int, positions []int64) {
	t.Helper()
	got := replayRecording(t, s, recordingID)
	want := len(positions) - (from - first)
	if len(got) != want {
		t.Fatalf("recording %d replays %d messages, want %d", recordingID, len(got), want)
	}
	for k, r := range got {
		i := from + k
		if !equalPayload(r.payload, i) || r.position != positions[i-first] {
			t.Fatalf("recording %d, replayed message #%d: message %d (%d bytes) ending at %d; want message %d (%d bytes) ending at %d",
				recordingID, k, indexOf(r.payload), len(r.payload), r.position, i, len(payloadFor(i)), positions[i-first])
		}
	}
}

// TestPayloadSizesCoverFragmentation: the payloads range from a few bytes to four MTUs and
// include messages of one, two, three and four fragments.
func TestPayloadSizesCoverFragmentation(t *testing.T) {
	fragments := map[int]int{}
	lo, hi, total := 1<<30, 0, 0
	const n = 20_000
	for i := range n {
		b := payloadFor(i)
		if indexOf(b) != i {
			t.Fatalf("payloadFor(%d) decodes as %d", i, indexOf(b))
		}
		lo, hi, total = min(lo, len(b)), max(hi, len(b)), total+len(b)
		fragments[(len(b)+maxPayload-1)/maxPayload]++
	}
	t.Logf("%d payloads: %d..%d bytes, %d on average; by fragments: %v", n, lo, hi, total/n, fragments)
	if lo > 16 || hi != maxMessage {
		t.Errorf("sizes %d..%d, want a few bytes up to %d", lo, hi, maxMessage)
	}
	for f := 1; f <= 4; f++ {
		if fragments[f] == 0 {
			t.Errorf("no message of %d fragments", f)
		}
	}
}

// TestBrokerCountsDuplicateReceipts pins what TestGracefulStopHasNoDuplicates relies on: a
// message the broker answers as a duplicate is counted in the topic's msgInCounter but not
// stored, so msgInCounter - numberOfEntries counts the duplicates a producer sent. It also
// pins that a producer created again does not learn its last sequence id (lesson 21).
func TestBrokerCountsDuplicateReceipts(t *testing.T) {
	topic := newStreamConfig(t, "").Topic
	watchTopic(t, topic) // creates the topic and waits for deduplication
	client := newPulsarClient(t, peers.Pulsar.ServiceURL)
	send := func(name string, from, to int64) {
		var p pulsar.Producer
		eventually.NoError(t, 30*time.Second, func() error {
			var err error
			p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true, SendTimeout: -1})
			if err != nil && !strings.Contains(err.Error(), "ProducerBusy") {
				t.Fatalf("create producer: %v", err)
			}
			return err
		})
		defer p.Close()
		for seq := from; seq < to; seq++ {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			_, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: payloadFor(int(seq)), SequenceID: &seq})
			cancel()
			if err != nil {
				t.Fatalf("send %d: %v", seq, err)
			}
		}
	}
	send("dup-check", 0, 10)
	// pulsar-client-go v0.19.0 does not tell a producer created again the broker's last
	// sequence id for its name (it seeds only its private generator with it):
	// LastSequenceID is -1 until a receipt, so lesson 21 is checked on the receipts.
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "dup-check", DisableBatching: true, SendTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	if last := p.LastSequenceID(); last != -1 {
		t.Errorf("LastSequenceID of a producer created again after sequence id 9 = %d; the client now tells it (lesson 21 could use it)", last)
	}
	p.Close()
	send("dup-check", 5, 10) // five duplicates
	eventually.NoError(t, 10*time.Second, func() error {
		if stored, in := storedEntries(t, topic), receivedMessages(t, topic); stored != 10 || in != 15 {
			return fmt.Errorf("numberOfEntries %d, msgInCounter %d; want 10 and 15", stored, in)
		}
		return nil
	})
	msgs := readTopic(t, peers.Pulsar.ServiceURL, topic, 10, 30*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, 10))
}
