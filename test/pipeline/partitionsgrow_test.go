package pipeline

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// TestARecordingStaysInItsPartitionWhenThePartitionsGrowAcrossAKill: the stream's topic has
// two partitions; ferry publishes part of a live recording, is killed with kill -9, the
// topic grows to a count that would put the recording in another partition (its id modulo
// the new count), the recording goes on, and ferry starts again. Every message of the
// recording is in the partition it began in, once, in order — the records sent again from
// the checkpoint are answered as duplicates by that partition's deduplication — and none in
// the partition the new count points at: the recording's checkpoint keeps the count it is
// routed by.
func TestARecordingStaysInItsPartitionWhenThePartitionsGrowAcrossAKill(t *testing.T) {
	const before, after = 400, 400
	sc := newStreamConfig(t, "")
	adminMust(t, http.MethodPut, topicPath(sc.Topic)+"/partitions", "2")
	rs, p := newRecordedStream(t, sc.Channel, sc.StreamID)
	for p.recordingID < 2 {
		// Recordings 0 and 1 are in the same partition of any count: empty recordings
		// (published as nothing) move the recording's id on.
		rs.stopRecording(t, p)
		p.close(t)
		rs.startRecording(t)
		p = rs.newPublication(t)
	}
	rec := p.recordingID
	grown := int64(3)
	for rec%2 == rec%grown {
		grown++
	}
	partition := func(n int64) string { return fmt.Sprintf("%s-partition-%d", sc.Topic, rec%n) }
	positions := p.publish(t, 0, before)
	p.waitRecorded(t, positions[before-1])

	cfg := newFerryConfig(t, sc)
	path := cfg.write(t)
	f := startFerry(t, path)
	checkpointedTo := func(f *ferryProc, pos int64) {
		t.Helper()
		waitFor(t, f, 60*time.Second, fmt.Sprintf("recording %d checkpointed to %d", rec, pos), func() error {
			st, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
			if err != nil {
				return err
			}
			for _, r := range st.Recordings {
				if r.RecordingId == rec && r.GetCheckpointedPosition() >= pos {
					return nil
				}
			}
			return fmt.Errorf("not yet")
		})
	}
	checkpointedTo(f, positions[before/2])
	f.Kill()
	cps, _ := cfg.storedCheckpoints(t, sc)
	if cp := cps[rec]; cp.Partitions != 2 {
		t.Fatalf("after the kill, recording %d's checkpoint %+v; want it routed by the topic's 2 partitions", rec, cp)
	}
	t.Logf("kill -9: recording %d checkpointed at %d; the topic grows from 2 partitions to %d (partition %d -> %d)", rec, cps[rec].Position, grown, rec%2, rec%grown)

	adminMust(t, http.MethodPost, topicPath(sc.Topic)+"/partitions", strconv.FormatInt(grown, 10))
	// Until the broker's lookups tell the new count, a producer created meanwhile routes by
	// the old one, and the test would prove nothing.
	client := newPulsarClient(t, peers.Pulsar.ServiceURL)
	eventually.NoError(t, 30*time.Second, func() error {
		parts, err := client.TopicPartitions(sc.Topic)
		if err == nil && int64(len(parts)) != grown {
			err = fmt.Errorf("the broker tells %d partitions of %s, want %d", len(parts), sc.Topic, grown)
		}
		return err
	})
	positions = append(positions, p.publish(t, before, before+after)...)
	last := positions[len(positions)-1]
	p.waitRecorded(t, last)
	f = startFerry(t, path)
	checkpointedTo(f, last)
	f.mustStop()

	msgs := readTopic(t, peers.Pulsar.ServiceURL, partition(2), before+after, 60*time.Second)
	assertExactlyOnceInOrder(t, msgs, payloads(0, before+after))
	if n := storedEntries(t, partition(grown)); n != 0 {
		t.Fatalf("%s, where the grown count would put recording %d, holds %d messages; want none", partition(grown), rec, n)
	}
	if cps, _ := cfg.storedCheckpoints(t, sc); cps[rec].Partitions != 2 || cps[rec].Position != last {
		t.Fatalf("recording %d's checkpoint %+v at the end; want it at %d, routed by 2 partitions", rec, cps[rec], last)
	}
	if !strings.Contains(f.Log(), "the topic has more partitions than when the recording began") {
		t.Fatalf("the restarted ferry did not say that the topic has more partitions than when the recording began:\n%s", f.Log())
	}
}
