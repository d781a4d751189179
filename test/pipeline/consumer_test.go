package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// The message properties ferry sets.
const (
	propRecordingID = "ferry.recording-id"
	propPosition    = "ferry.position"
	propSessionID   = "ferry.session-id"
	propStreamID    = "ferry.stream-id"
)

func newPulsarClient(t testing.TB, serviceURL string) pulsar.Client {
	t.Helper()
	return newPulsarClientLogging(t, serviceURL, os.Stderr)
}

// newPulsarClientLogging is newPulsarClient with the client's warnings written to log.
func newPulsarClientLogging(t testing.TB, serviceURL string, log io.Writer) pulsar.Client {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:              serviceURL,
		OperationTimeout: 30 * time.Second,
		Logger: pulsarlog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(log,
			&slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		t.Fatalf("pulsar client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// received is what the tests look at in a message ferry published.
type received struct {
	index       int   // payloadFor's index, -1 if none
	size        int   // payload length
	recordingID int64 // ferry.recording-id, -1 if absent or not a number
	position    int64 // ferry.position, -1 if absent or not a number
	producer    string
}

func describe(msg pulsar.Message) received {
	return received{
		index:       indexOf(msg.Payload()),
		size:        len(msg.Payload()),
		recordingID: intProperty(msg, propRecordingID),
		position:    intProperty(msg, propPosition),
		producer:    msg.ProducerName(),
	}
}

func intProperty(msg pulsar.Message, key string) int64 {
	v, ok := msg.Properties()[key]
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// topicWatcher reads a topic from its earliest message on a goroutine for as long as the
// test runs, so that tests can wait for progress while ferry runs, is killed, restarts.
// Final checks read the topic again with readTopic.
type topicWatcher struct {
	topic string

	mu     sync.Mutex
	got    []received
	seen   map[[2]int64]bool // (recording id, position) of each message seen
	maxPos map[int64]int64   // the highest position seen per recording
	err    error
}

// watchTopic creates the topic (by reading it), waits until the broker deduplicates on it
// (until then it would store every message as new), and starts watching it.
func watchTopic(t testing.TB, topic string) *topicWatcher {
	t.Helper()
	return watchPartitionedTopic(t, topic, 0)
}

// watchPartitionedTopic is watchTopic for a topic of n partitions (0: not partitioned): the
// broker deduplicates per partition, so each one is waited for.
func watchPartitionedTopic(t testing.TB, topic string, n int64) *topicWatcher {
	t.Helper()
	client := newPulsarClient(t, peers.Pulsar.ServiceURL)
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("reader on %s: %v", topic, err)
	}
	if n == 0 {
		waitDeduplicationEnabled(t, topic)
	}
	for k := range n {
		waitDeduplicationEnabled(t, fmt.Sprintf("%s-partition-%d", topic, k))
	}
	return watchReader(t, topic, reader)
}

// watchReader records every message reader delivers from topic until the test ends; the
// test's cleanup stops it and closes the reader.
func watchReader(t testing.TB, topic string, reader pulsar.Reader) *topicWatcher {
	w := &topicWatcher{topic: topic, seen: map[[2]int64]bool{}, maxPos: map[int64]int64{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			msg, err := reader.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					w.mu.Lock()
					w.err = err
					w.mu.Unlock()
				}
				return
			}
			r := describe(msg)
			w.mu.Lock()
			w.got = append(w.got, r)
			w.seen[[2]int64{r.recordingID, r.position}] = true
			if r.position > w.maxPos[r.recordingID] {
				w.maxPos[r.recordingID] = r.position
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		reader.Close()
	})
	return w
}

func (w *topicWatcher) check(t testing.TB) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		t.Fatalf("reading %s: %v", w.topic, w.err)
	}
}

// distinct is how many different messages (recording id and position) arrived.
func (w *topicWatcher) distinct() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.seen)
}

// has reports whether the message of recording at position arrived.
func (w *topicWatcher) has(recordingID, position int64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[[2]int64{recordingID, position}]
}

// maxPosition is the highest ferry.position seen for recording, 0 if none.
func (w *topicWatcher) maxPosition(recordingID int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.maxPos[recordingID]
}

// received is a copy of every message that arrived so far, in arrival order.
func (w *topicWatcher) received() []received {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.got)
}

func (w *topicWatcher) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return summarize(w.got)
}

// waitDistinct waits until at least n different messages arrived, failing at once if
// ferry exits.
func (w *topicWatcher) waitDistinct(t testing.TB, f *ferryProc, n int, timeout time.Duration) {
	t.Helper()
	waitFor(t, f, timeout, fmt.Sprintf("%d messages on %s", n, w.topic), func() error {
		w.check(t)
		if got := w.distinct(); got < n {
			return fmt.Errorf("%d arrived so far: %s", got, w.summary())
		}
		return nil
	})
}

// waitAll waits until every message of recording recordingID with an end position in
// positions arrived.
func (w *topicWatcher) waitAll(t testing.TB, f *ferryProc, recordingID int64, positions []int64, timeout time.Duration) {
	t.Helper()
	waitFor(t, f, timeout, fmt.Sprintf("%d messages of recording %d on %s", len(positions), recordingID, w.topic), func() error {
		w.check(t)
		w.mu.Lock()
		missing, first := 0, -1
		for k, p := range positions {
			if !w.seen[[2]int64{recordingID, p}] {
				missing++
				if first < 0 {
					first = k
				}
			}
		}
		w.mu.Unlock()
		if missing > 0 {
			return fmt.Errorf("%d missing, the first at position %d (message #%d of the %d); arrived: %s", missing, positions[first], first, len(positions), w.summary())
		}
		return nil
	})
}

// summarize lists what arrived as runs of consecutive indices per recording, in arrival
// order, e.g. "rec 3: [0..499] [450..999]": enough to see a gap, a duplicate or disorder.
func summarize(got []received) string {
	if len(got) == 0 {
		return "nothing"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d messages:", len(got))
	runs := 0
	for k := 0; k < len(got); {
		j := k + 1
		for j < len(got) && got[j].recordingID == got[k].recordingID && got[j].index == got[j-1].index+1 {
			j++
		}
		if runs++; runs > 40 {
			b.WriteString(" …")
			break
		}
		fmt.Fprintf(&b, " rec %d [%d..%d]", got[k].recordingID, got[k].index, got[j-1].index)
		k = j
	}
	return b.String()
}

func summarizeMessages(msgs []pulsar.Message) string {
	got := make([]received, len(msgs))
	for k, m := range msgs {
		got[k] = describe(m)
	}
	return summarize(got)
}

// readTopic reads topic from its earliest message with a reader of its own. It fails,
// listing what arrived, unless n messages arrive within timeout; any more messages the
// topic holds then are read too and returned, so the caller sees duplicates.
func readTopic(t testing.TB, serviceURL, topic string, n int, timeout time.Duration) []pulsar.Message {
	t.Helper()
	return readTopicWith(t, newPulsarClient(t, serviceURL), topic, n, timeout)
}

// readTopicWith is readTopic through client.
func readTopicWith(t testing.TB, client pulsar.Client, topic string, n int, timeout time.Duration) []pulsar.Message {
	t.Helper()
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("reader on %s: %v", topic, err)
	}
	defer reader.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	msgs := make([]pulsar.Message, 0, n)
	for len(msgs) < n {
		msg, err := reader.Next(ctx)
		if err != nil {
			t.Fatalf("read %s: %d of %d messages arrived within %s (%v); %s", topic, len(msgs), n, timeout, err, summarizeMessages(msgs))
		}
		msgs = append(msgs, msg)
	}
	// What else the topic holds (HasNext asks the broker for its last message id).
	for extra := 0; extra < 100_000 && reader.HasNext(); extra++ {
		ectx, ecancel := context.WithTimeout(context.Background(), 10*time.Second)
		msg, err := reader.Next(ectx)
		ecancel()
		if err != nil {
			t.Fatalf("read %s beyond the %d expected messages: %v", topic, n, err)
		}
		msgs = append(msgs, msg)
	}
	return msgs
}

// assertExactlyOnceInOrder fails unless msgs are want, byte for byte, each once, in order.
func assertExactlyOnceInOrder(t testing.TB, msgs []pulsar.Message, want [][]byte) {
	t.Helper()
	n := min(len(msgs), len(want))
	for k := range n {
		if !bytes.Equal(msgs[k].Payload(), want[k]) {
			t.Fatalf("message #%d: got message %d (%d bytes), want message %d (%d bytes): lost, duplicated, out of order or damaged; %s",
				k, indexOf(msgs[k].Payload()), len(msgs[k].Payload()), indexOf(want[k]), len(want[k]), summarizeMessages(msgs))
		}
	}
	if len(msgs) != len(want) {
		t.Fatalf("%d messages arrived, want exactly %d; %s", len(msgs), len(want), summarizeMessages(msgs))
	}
}

// assertInOrderNoGaps is the at-least-once check: msgs are want in order, where a message
// may repeat an earlier one (a re-delivery) but none may be missing, damaged or early. It
// returns the number of repeats.
func assertInOrderNoGaps(t testing.TB, msgs []pulsar.Message, want [][]byte) (repeats int) {
	t.Helper()
	at := make(map[int]int, len(want)) // payload index → place in want
	for k, w := range want {
		at[indexOf(w)] = k
	}
	next := 0
	for k, m := range msgs {
		idx := indexOf(m.Payload())
		place, ok := at[idx]
		if !ok {
			t.Fatalf("message #%d is message %d, which was not expected; %s", k, idx, summarizeMessages(msgs))
		}
		if !bytes.Equal(m.Payload(), want[place]) {
			t.Fatalf("message #%d (message %d) is damaged: %d bytes, want %d", k, idx, len(m.Payload()), len(want[place]))
		}
		switch {
		case place == next:
			next++
		case place < next:
			repeats++
		default:
			t.Fatalf("message #%d is message %d but message %d has not arrived: a gap; %s", k, idx, indexOf(want[next]), summarizeMessages(msgs))
		}
	}
	if next != len(want) {
		t.Fatalf("only the first %d of %d messages arrived; %s", next, len(want), summarizeMessages(msgs))
	}
	return repeats
}

// published is how ferry must have published a range of one publication's messages:
// payloadFor(from…) at the end positions in positions, from its recording.
type published struct {
	from        int
	positions   []int64
	recordingID int64
	sessionID   int32
}

func (p *publisher) published(from int, positions []int64) published {
	return published{from: from, positions: positions, recordingID: p.recordingID, sessionID: p.pub.SessionID()}
}

func (p published) payloads() [][]byte { return payloads(p.from, p.from+len(p.positions)) }

// assertMetadata checks the producer name and the ferry.* properties of msgs, which must be
// the messages of parts, in order (check the payloads first).
func assertMetadata(t testing.TB, msgs []pulsar.Message, s streamConfig, parts ...published) {
	t.Helper()
	k := 0
	var bad []string
	for _, part := range parts {
		for j, pos := range part.positions {
			if k >= len(msgs) {
				t.Fatalf("%d messages arrived; more expected", len(msgs))
			}
			m := msgs[k]
			k++
			want := map[string]string{
				propRecordingID: strconv.FormatInt(part.recordingID, 10),
				propPosition:    strconv.FormatInt(pos, 10),
				propSessionID:   strconv.FormatInt(int64(part.sessionID), 10),
				propStreamID:    strconv.FormatInt(int64(s.StreamID), 10),
			}
			for key, v := range want {
				if got, ok := m.Properties()[key]; !ok || got != v {
					bad = append(bad, fmt.Sprintf("message %d: %s = %q, want %q", part.from+j, key, got, v))
				}
			}
			if name := fmt.Sprintf("ferry-%s-%d", s.Name, part.recordingID); m.ProducerName() != name {
				bad = append(bad, fmt.Sprintf("message %d: producer %q, want %q", part.from+j, m.ProducerName(), name))
			}
			if len(bad) >= 10 {
				break
			}
		}
	}
	if len(bad) > 0 {
		t.Fatalf("metadata of the published messages:\n%s", strings.Join(bad, "\n"))
	}
}

// byRecording groups msgs by ferry.recording-id, keeping their order.
func byRecording(msgs []pulsar.Message) map[int64][]pulsar.Message {
	out := map[int64][]pulsar.Message{}
	for _, m := range msgs {
		id := intProperty(m, propRecordingID)
		out[id] = append(out[id], m)
	}
	return out
}

// positionsOf returns the positions of recording id's messages among msgs, in their order.
func positionsOf(msgs []pulsar.Message, id int64) []int64 {
	var out []int64
	for _, m := range msgs {
		if d := describe(m); d.recordingID == id {
			out = append(out, d.position)
		}
	}
	return out
}

// The broker's own view of a topic, through its admin REST API.

var adminClient = &http.Client{Timeout: 15 * time.Second}

// waitDeduplicationEnabled waits until the broker reports deduplication active on the topic.
func waitDeduplicationEnabled(t testing.TB, topic string) {
	t.Helper()
	waitDeduplicationStatus(t, adminGet, topic, "Enabled", 30*time.Second)
}

// waitDeduplicationStatus waits until get (an admin GET on the topic's broker) reports the
// topic's deduplicationStatus as want.
func waitDeduplicationStatus(t testing.TB, get func(path string, into any) error, topic, want string, timeout time.Duration) {
	t.Helper()
	eventually.NoError(t, timeout, func() error {
		var stats struct {
			DeduplicationStatus string `json:"deduplicationStatus"`
		}
		if err := get(topicPath(topic)+"/stats", &stats); err != nil {
			return err
		}
		if stats.DeduplicationStatus != want {
			return fmt.Errorf("%s: deduplicationStatus = %q, want %s", topic, stats.DeduplicationStatus, want)
		}
		return nil
	})
}

// storedEntries is the number of entries the broker holds for a non-partitioned topic:
// a duplicate the broker recognised is not among them.
func storedEntries(t testing.TB, topic string) int64 {
	t.Helper()
	var stats struct {
		NumberOfEntries int64 `json:"numberOfEntries"`
	}
	if err := adminGet(topicPath(topic)+"/internalStats", &stats); err != nil {
		t.Fatal(err)
	}
	return stats.NumberOfEntries
}

// receivedMessages is the broker's count of messages producers sent to the topic since it
// was loaded (msgInCounter), duplicates included: each duplicate is one more than
// storedEntries counts. TestBrokerCountsDuplicateReceipts pins that.
func receivedMessages(t testing.TB, topic string) int64 {
	t.Helper()
	var stats struct {
		MsgInCounter int64 `json:"msgInCounter"`
	}
	if err := adminGet(topicPath(topic)+"/stats", &stats); err != nil {
		t.Fatal(err)
	}
	return stats.MsgInCounter
}

// topicPath turns persistent://tenant/ns/topic into the admin API's path for it.
func topicPath(topic string) string {
	return "/admin/v2/persistent/" + strings.TrimPrefix(topic, "persistent://")
}

func adminGet(path string, into any) error {
	resp, err := adminClient.Get(peers.Pulsar.AdminURL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return errors.Join(fmt.Errorf("GET %s: decode %s", path, body), err)
	}
	return nil
}
