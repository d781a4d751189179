package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestTransportModePublishesLiveMessages: in transport mode ferry subscribes to the stream
// itself, with no archive and no store, and publishes every whole message it receives —
// small ones and ones of several fragments, reassembled — once, in order and intact, with
// the position, session and stream id properties and no recording id (there is none); its
// start-up log says that delivery is at most once.
func TestTransportModePublishesLiveMessages(t *testing.T) {
	const n = 3000
	sc := newStreamConfig(t, "")
	sc.StartPosition = "" // an archive-mode key
	cfg := newFerryConfig(t, sc)
	cfg.Mode = "transport"
	cfg.Archive, cfg.Replay, cfg.Store, cfg.Checkpoint = archiveSection{}, replaySection{}, storeSection{}, checkpointConfig{}

	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t) // not recorded
	f := startFerry(t, cfg.write(t))
	waitFor(t, f, 30*time.Second, "ferry's subscription to the stream", func() error {
		if !pub.pub.IsConnected() {
			return errors.New("the publication has no subscriber")
		}
		return nil
	})
	positions := pub.publish(t, 0, n)
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 60*time.Second)
	f.mustStop()

	want := payloads(0, n)
	fragmented := 0
	for _, p := range want {
		if len(p) > maxPayload {
			fragmented++
		}
	}
	if fragmented == 0 {
		t.Fatal("no message of several fragments: the test does not cover reassembly")
	}
	assertExactlyOnceInOrder(t, msgs, want)
	if stored := storedEntries(t, sc.Topic); stored != n {
		t.Fatalf("the broker stored %d entries, want %d", stored, n)
	}
	var bad []string
	for k, m := range msgs {
		props := m.Properties()
		for key, v := range map[string]string{
			propPosition:  strconv.FormatInt(positions[k], 10),
			propSessionID: strconv.FormatInt(int64(pub.pub.SessionID()), 10),
			propStreamID:  strconv.FormatInt(int64(sc.StreamID), 10),
		} {
			if props[key] != v {
				bad = append(bad, fmt.Sprintf("message %d: %s = %q, want %q", k, key, props[key], v))
			}
		}
		if v, ok := props[propRecordingID]; ok {
			bad = append(bad, fmt.Sprintf("message %d: %s = %q in transport mode, which has no recording", k, propRecordingID, v))
		}
		if len(bad) >= 10 {
			break
		}
	}
	if len(bad) > 0 {
		t.Fatalf("properties of the published messages (%d of them fragmented):\n%s", fragmented, strings.Join(bad, "\n"))
	}
	if log := f.Log(); !strings.Contains(log, "at most once") {
		t.Fatalf("the start-up log does not say that transport mode delivers at most once:\n%s", f.LogTail(30))
	}
}
