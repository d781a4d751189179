package pipeline

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// TestLesson21_ATopicWithoutDeduplicationIsReportedFromTheFirstStart: effectively-once
// needs the broker to deduplicate, and a first start has no checkpoint to compare what the
// broker stored against, so ferry asks the broker's admin API when it creates a producer.
// Two streams in one process: "off" publishes to a partitioned topic (three partitions) of
// a namespace with deduplication off, "on" to a plain topic of the default namespace (on,
// broker-wide). ferry publishes both in full (at least once needs no deduplication), and
// says of "off" that it does not hold effectively-once — in the recording's status, as a
// deduplication failure naming the topic and the fix, and in the log — and nothing of the
// sort of "on". The partitioned topic's own stats do not report deduplication (404): the
// answer "disabled" shows the recording's partition was asked.
func TestLesson21_ATopicWithoutDeduplicationIsReportedFromTheFirstStart(t *testing.T) {
	const n, partitions = 200, 3
	ns := dedupOffNamespace(t)
	off, on := newStreamConfig(t, "off"), newStreamConfig(t, "on")
	off.Topic = fmt.Sprintf("persistent://public/%s/%s", ns, off.Name)
	adminMust(t, http.MethodPut, topicPath(off.Topic)+"/partitions", strconv.Itoa(partitions))
	_, pubOff := newRecordedStream(t, off.Channel, off.StreamID)
	_, pubOn := newRecordedStream(t, on.Channel, on.StreamID)
	posOff, posOn := pubOff.publish(t, 0, n), pubOn.publish(t, 0, n)
	watchTopic(t, on.Topic)

	ip := startInProcess(t, inProcessOptions{}, off, on)
	ip.waitCheckpoint(off, pubOff.recordingID, posOff[n-1], 60*time.Second)
	ip.waitCheckpoint(on, pubOn.recordingID, posOn[n-1], 60*time.Second)

	eventually.NoError(t, 10*time.Second, func() error {
		for _, c := range []struct {
			sc   streamConfig
			rec  int64
			want string
		}{{off, pubOff.recordingID, "disabled"}, {on, pubOn.recordingID, "enabled"}} {
			if got, err := ip.deduplication(c.sc.Name, c.rec); err != nil || got != c.want {
				return fmt.Errorf("stream %s: deduplication %q (%v), want %q", c.sc.Name, got, err, c.want)
			}
		}
		return nil
	})
	f := ip.failure(t, off.Name, "deduplication")
	if f == nil || !strings.Contains(f.Message, off.Topic) || !strings.Contains(f.Message, "at least once") || !strings.Contains(f.Message, "set-deduplication --enable") {
		t.Errorf("stream off: deduplication failure %v; want one naming %s, at least once and the fix", f, off.Topic)
	}
	if f := ip.failure(t, on.Name, "deduplication"); f != nil {
		t.Errorf("stream on: deduplication failure %q, on a topic the broker deduplicates", f.Message)
	}
	if !ip.logs.contains("level=WARN msg=\"the broker does not deduplicate " + off.Topic) {
		t.Errorf("no warning that %s is not deduplicated", off.Topic)
	}

	partition := fmt.Sprintf("%s-partition-%d", off.Topic, pubOff.recordingID%partitions)
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, partition, n, 30*time.Second), payloads(0, n))
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, on.Topic, n, 30*time.Second), payloads(0, n))
}

// TestADeduplicationCheckThatCannotAskSaysSoAndPublishes: the admin API unreachable (a
// port nothing listens on), the status says unknown and a warning why; without an admin
// URL, unchecked. Neither holds anything back: every message is published.
func TestADeduplicationCheckThatCannotAskSaysSoAndPublishes(t *testing.T) {
	const n = 100
	for _, c := range []struct {
		name string
		opts inProcessOptions
		want string
		log  string
	}{
		{"unreachable", inProcessOptions{adminURL: fmt.Sprintf("http://127.0.0.1:%d", freePort(t))}, "unknown", "cannot ask the broker's admin API whether it deduplicates the topic"},
		{"not configured", inProcessOptions{noAdmin: true}, "unchecked", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			sc := newStreamConfig(t, "")
			_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
			pos := pub.publish(t, 0, n)
			watchTopic(t, sc.Topic)
			ip := startInProcess(t, c.opts, sc)
			ip.waitCheckpoint(sc, pub.recordingID, pos[n-1], 60*time.Second)
			eventually.NoError(t, 20*time.Second, func() error {
				if got, err := ip.deduplication(sc.Name, pub.recordingID); err != nil || got != c.want {
					return fmt.Errorf("deduplication %q (%v), want %q", got, err, c.want)
				}
				return nil
			})
			if c.log != "" && !ip.logs.contains(c.log) {
				t.Errorf("no warning %q", c.log)
			}
			if f := ip.failure(t, sc.Name, "deduplication"); f != nil {
				t.Errorf("a deduplication failure %q, where nothing was learnt", f.Message)
			}
			assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second), payloads(0, n))
		})
	}
}

// deduplication is what the status says of recording rec's deduplication.
func (ip *inProcess) deduplication(stream string, rec int64) (string, error) {
	st, err := ip.status(stream)
	if err != nil {
		return "", err
	}
	if r := recordingOf(st, rec); r != nil {
		return r.Deduplication, nil
	}
	return "", fmt.Errorf("no status of recording %d", rec)
}

// failure is the stream's last failure of kind in its status, or nil.
func (ip *inProcess) failure(t *testing.T, stream, kind string) *messages.Failure {
	t.Helper()
	st, err := ip.status(stream)
	if err != nil {
		t.Fatal(err)
	}
	return failureOf(st, kind)
}
