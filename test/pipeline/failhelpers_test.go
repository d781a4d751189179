package pipeline

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"
	"go.etcd.io/bbolt"
	"go.yaml.in/yaml/v3"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// Helpers of the failure tests (failures_test.go). Their names start with fail so that
// they do not clash with helpers other files of the package add.

// failExitCode is the exit status exec reports in err: 0 for nil, -1 if the process did
// not exit normally (a signal).
func failExitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// failMustExit waits up to timeout for ferry to exit on its own and returns its exit
// status and log; the test fails if ferry is still running then.
func failMustExit(t *testing.T, f *ferryProc, timeout time.Duration, why string) (code int, log string) {
	t.Helper()
	began := time.Now()
	exitErr, ok := f.WaitExit(timeout)
	if !ok {
		t.Fatalf("ferry (pid %d) still runs %s after it started, but it must exit: %s; its log so far:\n%s", f.Pid(), timeout, why, f.LogTail(8000))
	}
	code = failExitCode(exitErr)
	t.Logf("ferry (pid %d) exited with status %d within %s of waiting (%v)", f.Pid(), code, time.Since(began).Round(time.Millisecond), exitErr)
	return code, f.Log()
}

// failWaitLog waits until one line of ferry's log contains every one of parts, failing at
// once if ferry exits meanwhile. It returns that line.
func failWaitLog(t *testing.T, f *ferryProc, timeout time.Duration, parts ...string) string {
	t.Helper()
	var found string
	waitFor(t, f, timeout, fmt.Sprintf("a log line with %q", parts), func() error {
		if line, ok := failLogLine(f.Log(), parts...); ok {
			found = line
			return nil
		}
		return errors.New("not logged yet")
	})
	return found
}

// failLogLine is the first line of log that contains every one of parts.
func failLogLine(log string, parts ...string) (string, bool) {
	for line := range strings.SplitSeq(log, "\n") {
		all := true
		for _, p := range parts {
			if !strings.Contains(line, p) {
				all = false
				break
			}
		}
		if all {
			return line, true
		}
	}
	return "", false
}

// failMustContain fails unless text contains every one of parts.
func failMustContain(t *testing.T, text, what string, parts ...string) {
	t.Helper()
	var missing []string
	for _, p := range parts {
		if !strings.Contains(text, p) {
			missing = append(missing, fmt.Sprintf("%q", p))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s does not mention %s:\n%s", what, strings.Join(missing, ", "), text)
	}
}

// failWriteConfig writes cfg with extra keys set on (or, with a nil value, removed from)
// its first stream, which the tests' streamConfig does not have (start_recording_id,
// reset, a numeric start_position). It returns the path.
func failWriteConfig(t *testing.T, cfg *ferryConfig, extra map[string]any) string {
	t.Helper()
	b, err := yaml.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	streams, ok := doc["streams"].([]any)
	if !ok || len(streams) == 0 {
		t.Fatalf("failWriteConfig: no streams in %s", b)
	}
	first := streams[0].(map[string]any)
	for k, v := range extra {
		if v == nil {
			delete(first, k)
		} else {
			first[k] = v
		}
	}
	if b, err = yaml.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg.path
}

// failCopyFile copies src to dst.
func failCopyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// failEditCheckpoint rewrites the stored value of one recording's checkpoint with bbolt
// directly, behind the store's back (as store/bolt's own tests damage values): the value
// becomes damage(a copy of the value).
func failEditCheckpoint(t *testing.T, path, stream string, recordingID int64, damage func(v []byte) []byte) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("bbolt.Open(%s): %v", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		streams := tx.Bucket([]byte("streams"))
		if streams == nil {
			return errors.New("no streams bucket")
		}
		sb := streams.Bucket([]byte(stream))
		if sb == nil {
			return fmt.Errorf("no bucket for stream %s", stream)
		}
		recs := sb.Bucket([]byte("recordings"))
		if recs == nil {
			return errors.New("no recordings bucket")
		}
		key := binary.BigEndian.AppendUint64(nil, uint64(recordingID))
		v := recs.Get(key)
		if v == nil {
			return fmt.Errorf("no checkpoint of recording %d", recordingID)
		}
		return recs.Put(key, damage(append([]byte(nil), v...)))
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("damage the checkpoint of recording %d in %s: %v", recordingID, path, err)
	}
}

// failUsedSize is the size bbolt says the file's data takes (the pages in use).
func failUsedSize(t *testing.T, path string) int64 {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 10 * time.Second, ReadOnly: true})
	if err != nil {
		t.Fatalf("bbolt.Open(%s): %v", path, err)
	}
	defer db.Close()
	var size int64
	if err := db.View(func(tx *bbolt.Tx) error { size = tx.Size(); return nil }); err != nil {
		t.Fatal(err)
	}
	return size
}

// failPurge purges a stopped recording and checks that the archive no longer knows it.
func failPurge(t *testing.T, s aeronSession, recordingID int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := s.archive.PurgeRecording(ctx, recordingID); err != nil {
		t.Fatalf("purge recording %d: %v", recordingID, err)
	}
	if _, err := s.archive.Recording(ctx, recordingID); !errors.Is(err, archive.ErrRecordingUnknown) {
		t.Fatalf("recording %d after the purge: %v, want ErrRecordingUnknown", recordingID, err)
	}
}

// failConnectArchiveAt is connectArchive for a media driver and archive of the test's own
// (in aeronDir). Errors that belong to no call (the driver dying under the client) are
// not logged: the tests that kill the driver expect them.
func failConnectArchiveAt(t testing.TB, aeronDir string) aeronSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ac, err := aeron.Connect(ctx, aeron.Options{Dir: aeronDir, OnError: func(error) {}})
	if err != nil {
		t.Fatalf("aeron connect to %s: %v", aeronDir, err)
	}
	t.Cleanup(func() { _ = ac.Close() })
	arc, err := archive.Connect(ctx, ac, archive.Options{ResponseStreamID: infra.UniqueStreamID(), OnError: func(error) {}})
	if err != nil {
		t.Fatalf("archive connect in %s: %v", aeronDir, err)
	}
	t.Cleanup(func() { _ = arc.Close() })
	return aeronSession{aeron: ac, archive: arc}
}

// failStreamOn is newStream on a session of the test's own (failConnectArchiveAt).
func failStreamOn(t *testing.T, s aeronSession, channel string, streamID int32) *recordedStream {
	t.Helper()
	rs := &recordedStream{s: s, channel: channel, streamID: streamID}
	t.Cleanup(func() {
		if rs.recording {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = rs.s.archive.StopRecordingSubscription(ctx, rs.subID)
		}
	})
	return rs
}

// failStopBackground stops a background publisher whose publication may have died (its
// driver was killed): it returns the end positions of every message offered successfully
// and the error that stopped it, if any, without failing the test.
func failStopBackground(t *testing.T, b *background) ([]int64, error) {
	t.Helper()
	select {
	case <-b.stopCh:
	default:
		close(b.stopCh)
	}
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the background publisher did not stop within 30 s")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int64(nil), b.positions...), b.err
}

// failBroker is a Pulsar broker of the test's own: its service and admin URLs.
type failBroker struct {
	serviceURL, adminURL string
}

// startOwnBroker starts a Pulsar standalone of the test's own (one the test may kill) on a
// free port.
func startOwnBroker(t *testing.T) (failBroker, *infra.Pulsar) {
	t.Helper()
	port := freePort(t)
	broker := startBrokerOn(t, port, freePort(t))
	return failBroker{serviceURL: fmt.Sprintf("pulsar://%s:%d", infra.Loopback, port), adminURL: broker.AdminURL}, broker
}

// startBrokerOn starts a Pulsar standalone of the test's own with its broker service on
// port and its web service (the admin API) on webPort, stopped when the test ends; its logs
// and data are kept if the test failed.
func startBrokerOn(t *testing.T, port, webPort int) *infra.Pulsar {
	t.Helper()
	runDir, err := infra.NewRunDir()
	if err != nil {
		t.Fatal(err)
	}
	broker, err := infra.StartPulsar(context.Background(), infra.PulsarOptions{
		Dir:    filepath.Join(runDir, "pulsar"),
		Config: map[string]string{"brokerServicePort": strconv.Itoa(port), "webServicePort": strconv.Itoa(webPort)},
	})
	if err != nil {
		t.Fatalf("%v\n(logs kept in %s)", err, runDir)
	}
	t.Cleanup(func() {
		_ = broker.Stop()
		if t.Failed() {
			t.Logf("the test's broker: logs and data kept in %s; log tail:\n%s", runDir, broker.LogTail())
			return
		}
		_ = os.RemoveAll(runDir)
	})
	return broker
}

func (b failBroker) adminGet(path string, into any) error {
	resp, err := adminClient.Get(b.adminURL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return errors.Join(fmt.Errorf("GET %s: decode %s", path, body), err)
	}
	return nil
}

// storedEntries is storedEntries on this broker; it waits (the broker may be restarting).
func (b failBroker) storedEntries(t *testing.T, topic string) int64 {
	t.Helper()
	var stats struct {
		NumberOfEntries int64 `json:"numberOfEntries"`
	}
	eventually.NoError(t, 60*time.Second, func() error { return b.adminGet(topicPath(topic)+"/internalStats", &stats) })
	return stats.NumberOfEntries
}

// watch is watchTopic on this broker. The reader reconnects by itself across a restart of
// the broker.
func (b failBroker) watch(t *testing.T, topic string) *topicWatcher {
	t.Helper()
	client := newPulsarClient(t, b.serviceURL)
	var reader pulsar.Reader
	eventually.NoError(t, 60*time.Second, func() error {
		var err error
		reader, err = client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
		return err
	})
	waitDeduplicationStatus(t, b.adminGet, topic, "Enabled", 60*time.Second)
	return watchReader(t, topic, reader)
}

// serves reports whether the broker stores a message: it creates a topic of its own
// (which needs a ledger, so a working bookie) and sends one message, retrying until
// timeout. A broker whose admin API answers (what infra waits for) can still be unable to
// store anything after a kill -9 (its embedded bookie not registered): that is the
// broker's failure, not ferry's.
func (b failBroker) serves(timeout time.Duration) error {
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               b.serviceURL,
		OperationTimeout:  10 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		Logger:            pulsarlog.DefaultNopLogger(),
	})
	if err != nil {
		return err
	}
	defer client.Close()
	topic := fmt.Sprintf("persistent://public/default/fail-probe-%d", time.Now().UnixNano())
	deadline := time.Now().Add(timeout)
	for {
		err := func() error {
			p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, SendTimeout: 10 * time.Second})
			if err != nil {
				return err
			}
			defer p.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err = p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("probe")})
			return err
		}()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond) // the back-off of a retry loop
	}
}

// lossyReceiver is the properties of a driver that drops 5% of the data frames it receives
// (Aeron's own DebugReceiveChannelEndpoint), chosen by seed, for failOwnArchive.
func lossyReceiver(seed int) map[string]string {
	return map[string]string{
		"aeron.ReceiveChannelEndpoint.supplier": "io.aeron.driver.ext.DebugReceiveChannelEndpointSupplier",
		"aeron.debug.receive.data.loss.rate":    "0.05",
		"aeron.debug.receive.data.loss.seed":    strconv.Itoa(seed),
	}
}

// failOwnArchive starts an archive of the test's own (with properties added to test/infra's
// defaults), stopped when the test ends; a failed test logs the tail of its log.
func failOwnArchive(t *testing.T, properties map[string]string) *infra.Archive {
	t.Helper()
	own, err := infra.StartArchive(context.Background(), infra.ArchiveOptions{Dir: filepath.Join(t.TempDir(), "archive"), Properties: properties})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the test's archive log %s:\n%s", own.Log(), own.LogTail())
		}
		_ = own.Stop()
	})
	return own
}

// failRecordAThenBOfSegments records on an archive of the test's own, with segments of
// 1 MiB, recording A of 100 messages and, once A stopped, recording B of a little over
// two and a half segments (so that B's first segment can be purged, or detached, with
// records of it left beyond). It returns the archive, the stream, its recorded stream, and
// each publisher with the positions after its messages.
func failRecordAThenBOfSegments(t *testing.T) (own *infra.Archive, sc streamConfig, rs *recordedStream, a *publisher, pa []int64, b *publisher, pb []int64) {
	t.Helper()
	const segment = 1 << 20
	own = failOwnArchive(t, map[string]string{"aeron.archive.segment.file.length": "1m"})
	sc = newStreamConfig(t, "")
	rs = failStreamOn(t, failConnectArchiveAt(t, own.AeronDir), sc.Channel, sc.StreamID)
	rs.startRecording(t)
	a = rs.newPublication(t)
	pa = a.publish(t, 0, 100)
	a.close(t)
	b = rs.newPublication(t)
	for len(pb) == 0 || pb[len(pb)-1] < 2*segment+segment/2 {
		pb = append(pb, b.publish(t, 100+len(pb), 100+len(pb)+500)...)
	}
	b.close(t)
	return own, sc, rs, a, pa, b, pb
}

// failReplaceArchive replaces the test's own archive: stopped, its catalog and recordings
// deleted, started again. The new archive's first recording, of sc's stream, gets the id
// reused, as the new archive numbers from 0 again; it holds payloadFor(from..from+n-1),
// recorded, and stays live.
func failReplaceArchive(t *testing.T, own *infra.Archive, sc streamConfig, reused int64, from, n int) {
	t.Helper()
	if err := own.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(own.ArchiveDir); err != nil {
		t.Fatal(err)
	}
	if err := own.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	rs := failStreamOn(t, failConnectArchiveAt(t, own.AeronDir), sc.Channel, sc.StreamID)
	rs.startRecording(t)
	b := rs.newPublication(t)
	if b.recordingID != reused {
		t.Fatalf("the new archive's first recording is %d, not the reused id %d: the test is about a reused id", b.recordingID, reused)
	}
	b.waitRecorded(t, b.publish(t, from, from+n)[n-1])
}

// publishedToItsEnd publishes messages from..to-1 on p, stops the stream's recording, and
// waits until the running ferry f has published the recording to its end; it returns the
// messages' positions.
func publishedToItsEnd(t *testing.T, f *ferryProc, w *topicWatcher, p *publisher, from, to int) []int64 {
	t.Helper()
	positions := p.publish(t, from, to)
	p.rs.stopRecording(t, p)
	w.waitAll(t, f, p.recordingID, positions, 90*time.Second)
	failWaitLog(t, f, 60*time.Second, "recording published and acknowledged to its end", fmt.Sprintf("recording=%d ", p.recordingID))
	return positions
}

// gate holds the calls that pass it while closed (hold) until it is opened again (release);
// it is open at first. waiting counts the calls it holds.
type gate struct {
	mu      sync.Mutex
	closed  chan struct{} // nil: open
	waiting atomic.Int32
}

// hold closes the gate until release (at the latest when the test ends).
func (g *gate) hold(t *testing.T) {
	g.mu.Lock()
	g.closed = make(chan struct{})
	g.mu.Unlock()
	t.Cleanup(g.release)
}

// release opens the gate and lets the calls it holds go.
func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

// pass returns once the gate is open, or with ctx's error if ctx ends first.
func (g *gate) pass(ctx context.Context) error {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed == nil {
		return nil
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-closed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
