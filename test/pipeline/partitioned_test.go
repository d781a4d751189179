package pipeline

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/store"
)

// TestAPartitionedTopicKeepsEachRecordingInOnePartitionAcrossAKill: the stream's topic has
// three partitions. Recording A (stopped) and B (live, with a backlog) are published; ferry
// is killed with kill -9 while it sends B at full speed, B goes on while ferry is down, and
// ferry starts again. Each recording's messages are in one partition — its id modulo three,
// the producer's router — once each, in order: the partition's order is the recording's,
// and the broker's deduplication, which is per partition, answers what is sent again as
// duplicates. The restarted ferry reads what the broker stored last in B's partition
// (lesson 21) and finds it past its checkpoint.
func TestAPartitionedTopicKeepsEachRecordingInOnePartitionAcrossAKill(t *testing.T) {
	const partitions, nA, backlog = 3, 500, 5000
	sc := newStreamConfig(t, "")
	adminMust(t, http.MethodPut, topicPath(sc.Topic)+"/partitions", strconv.Itoa(partitions))
	_, a, pa, b, pb := stoppedThenLive(t, sc, nA, backlog)
	partitionOf := func(p *publisher) string {
		return fmt.Sprintf("%s-partition-%d", sc.Topic, p.recordingID%partitions)
	}
	w := watchPartitionedTopic(t, sc.Topic, partitions)
	cfg := newFerryConfig(t, sc)
	path := cfg.write(t)

	bg := b.publishInBackground(t, nA+backlog, 5, 5*time.Millisecond) // ~1,000 messages a second
	f := startFerry(t, path)
	w.waitDistinct(t, f, nA+backlog/2, 60*time.Second)
	waitFor(t, f, 30*time.Second, "a persisted checkpoint of recording B", func() error {
		st, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
		if err != nil {
			return err
		}
		for _, r := range st.Recordings {
			if r.RecordingId == b.recordingID && r.GetCheckpointedPosition() > pb[0] {
				return nil
			}
		}
		return errors.New("no checkpoint of B persisted yet")
	})
	// What the broker stored last of B, read by the test on its own: the restarted ferry must
	// find the same, past its checkpoint. A kill while ferry sends nearly always leaves
	// acknowledgements the checkpoint (every 100 records or 200 ms here) has not caught up
	// with. Not one right after a save, before the next acknowledgement: the kill waits for
	// more of B than the save the status showed (killed at once, about one run in eight left
	// the checkpoint at the broker's last message), and one that still lands there is made
	// again after ferry has published more of B.
	var (
		cp        store.Checkpoint
		last      int64
		published int
	)
	for kill := 1; ; kill++ {
		w.waitDistinct(t, f, w.distinct()+200, 60*time.Second)
		f.Kill()
		published = bg.count()
		cps, _ := cfg.storedCheckpoints(t, sc)
		settledEntries(t, partitionOf(b)) // the broker may still take in what was on the wire
		stored := readTopic(t, peers.Pulsar.ServiceURL, partitionOf(b), 0, 30*time.Second)
		if len(stored) == 0 {
			t.Fatalf("B's partition %s holds nothing after the kill", partitionOf(b))
		}
		last, cp = intProperty(stored[len(stored)-1], propPosition), cps[b.recordingID]
		if !cp.Seed && cp.Position > last {
			t.Fatalf("after the kill, B's checkpoint %+v is past the broker's last message of it, at %d: a position was persisted before Pulsar acknowledged it (lesson 1)", cp, last)
		}
		if !cp.Seed && last > cp.Position {
			break
		}
		if kill == 3 {
			t.Fatalf("after %d kills, B's checkpoint %+v and the broker's last message of it at %d: no kill left the broker past the checkpoint, and the test would prove nothing about reading it", kill, cp, last)
		}
		t.Logf("kill -9 #%d left B's checkpoint at the broker's last message (%d): killing again after more of B is published", kill, last)
		f = startFerry(t, path)
	}
	t.Logf("kill -9: B checkpointed at %d, the broker has it up to %d", cp.Position, last)

	bg.waitCount(t, published+500, 30*time.Second) // published while ferry is down
	f = startFerry(t, path)
	failWaitLog(t, f, 60*time.Second, "resuming past what the broker stored", fmt.Sprintf("recording=%d ", b.recordingID),
		fmt.Sprintf("checkpoint=%d ", cp.Position), fmt.Sprintf("broker_last=%d", last))
	positions := slices.Concat(pb, bg.stop(t))
	b.waitRecorded(t, positions[len(positions)-1])
	w.waitAll(t, f, a.recordingID, pa, 60*time.Second)
	w.waitAll(t, f, b.recordingID, positions, 60*time.Second)
	f.mustStop()
	if line, found := failLogLine(f.Log(), "lesson 21"); found {
		t.Fatalf("the restarted ferry reported a deduplication problem: %s", line)
	}

	// Each partition holds its recordings' messages, in order, once; a recording's messages
	// in no other partition.
	for k := range int64(partitions) {
		var want [][]byte
		if a.recordingID%partitions == k {
			want = append(want, payloads(0, nA)...)
		}
		if b.recordingID%partitions == k {
			want = append(want, payloads(nA, nA+len(positions))...)
		}
		msgs := readTopic(t, peers.Pulsar.ServiceURL, fmt.Sprintf("%s-partition-%d", sc.Topic, k), len(want), 60*time.Second)
		assertExactlyOnceInOrder(t, msgs, want)
		t.Logf("partition %d: %d messages", k, len(msgs))
	}
}
