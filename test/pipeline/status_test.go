package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/observe"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/harness"
)

// Status, health and metrics (lessons 23–26), served by observe.Handler from what the
// pipeline pushes, against the real archive and broker.

// TestLesson24_PublishFailureStaysInTheStatusAfterRecovery: a publish fails, ferry
// re-delivers and catches up. The status shows the failure (kind publish, its time and
// message) and still shows it after the recovery; the stream is healthy again.
func TestLesson24_PublishFailureStaysInTheStatusAfterRecovery(t *testing.T) {
	const n, failed = 300, 100
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pos := pub.publish(t, 0, n)
	watchTopic(t, sc.Topic)
	var mu sync.Mutex
	highest, redelivering := int64(-1), false
	plan := func(k int, msg *pulsar.ProducerMessage) harness.Fault {
		mu.Lock()
		defer mu.Unlock()
		if *msg.SequenceID <= highest {
			redelivering = true
		}
		highest = max(highest, *msg.SequenceID)
		if k >= failed && !redelivering {
			return harness.Fail(nil)
		}
		return harness.Deliver()
	}
	before := time.Now().UnixMilli()
	ip := startInProcess(t, inProcessOptions{plan: plan}, sc)
	srv := httptest.NewServer(observe.Handler(ip.board, []string{sc.Name}))
	t.Cleanup(srv.Close)
	ip.waitCheckpoint(sc, pub.recordingID, pos[n-1], 60*time.Second)

	var st *messages.StreamStatus
	eventually.NoError(t, 10*time.Second, func() error {
		var err error
		if st, err = findStream(t, srv.URL, sc.Name); err != nil {
			return err
		}
		if r := recordingOf(st, pub.recordingID); r == nil || r.CommittedPosition == nil || *r.CommittedPosition != pos[n-1] {
			return fmt.Errorf("status not caught up yet: %v", st)
		}
		// The committed position and the state come from different pushes (the tracker's,
		// the stream's rule over all of them): wait for both.
		if !st.Healthy || st.State != "caught-up" {
			return fmt.Errorf("stream %s, healthy %t (%s), want caught-up and healthy after the recovery", st.State, st.Healthy, st.Reason)
		}
		return nil
	})
	f := failureOf(st, "publish")
	if f == nil || f.AtMs < before || f.AtMs > time.Now().UnixMilli() || !strings.Contains(f.Message, "injected") {
		t.Fatalf("the publish failure is not in the status after the recovery: %v", st.Failures)
	}
	if r := recordingOf(st, pub.recordingID); r.Failed == 0 || r.Acknowledged+r.Duplicates < n {
		t.Fatalf("counters: %v", r)
	}
}

// TestStalledStreamTurnsUnhealthyAndRecovers: the acknowledgements from message 50 on are
// held. With records pending and the committed position still for longer than the
// threshold (1 s here), /healthz answers 503 naming the stall; released, the stream
// catches up and /healthz answers 200.
func TestStalledStreamTurnsUnhealthyAndRecovers(t *testing.T) {
	const n = 200
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pos := pub.publish(t, 0, n)
	watchTopic(t, sc.Topic)
	plan := func(k int, _ *pulsar.ProducerMessage) harness.Fault {
		if k >= 50 && k < n {
			return harness.Hold()
		}
		return harness.Deliver()
	}
	ip := startInProcess(t, inProcessOptions{plan: plan, stallAfter: time.Second}, sc)
	srv := httptest.NewServer(observe.Handler(ip.board, []string{sc.Name}))
	t.Cleanup(srv.Close)
	ip.waitCheckpoint(sc, pub.recordingID, pos[49], 30*time.Second)

	eventually.NoError(t, 20*time.Second, func() error {
		code, body := get(t, srv.URL+"/healthz")
		if code != http.StatusServiceUnavailable || !strings.Contains(body, "stalled") || !strings.Contains(body, "committed_position") {
			return fmt.Errorf("/healthz %d %q, want 503 naming the stall", code, body)
		}
		return nil
	})
	// While stalled, the status says how far behind it is: the recorded position as the
	// archive reported it, and the lag from the committed position to it.
	eventually.NoError(t, 10*time.Second, func() error {
		r := recordingOf(streamStatusOf(t, srv.URL, sc.Name), pub.recordingID)
		if r == nil || r.GetRecordedPosition() != pos[n-1] || r.GetCommittedPosition() != pos[49] || r.LagBytes != pos[n-1]-pos[49] || r.Producer != "ready" {
			return fmt.Errorf("recording status %v, want recorded %d, committed %d, lag %d, producer ready", r, pos[n-1], pos[49], pos[n-1]-pos[49])
		}
		return nil
	})
	ip.releaseUntilCheckpoint(ip.producer(0), sc, pub.recordingID, pos[n-1], 30*time.Second)
	eventually.NoError(t, 10*time.Second, func() error {
		if code, body := get(t, srv.URL+"/healthz"); code != http.StatusOK {
			return fmt.Errorf("/healthz %d %q after the acknowledgements arrived", code, body)
		}
		return nil
	})
}

// TestMetricsAreValidPrometheusText: /metrics parses as Prometheus text and has the
// documented series for the stream, its recording and its store writes.
func TestMetricsAreValidPrometheusText(t *testing.T) {
	const n = 50
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	pos := pub.publish(t, 0, n)
	ip := startInProcess(t, inProcessOptions{}, sc)
	srv := httptest.NewServer(observe.Handler(ip.board, []string{sc.Name}))
	t.Cleanup(srv.Close)
	ip.waitCheckpoint(sc, pub.recordingID, pos[n-1], 30*time.Second)
	want := []string{"ferry_stream_healthy", "ferry_stream_restarts_total", "ferry_recording_committed_position",
		"ferry_recording_checkpointed_position", "ferry_recording_replay_position", "ferry_recording_lag_bytes",
		"ferry_recording_pending_records", "ferry_recording_published_total", "ferry_recording_acknowledged_total",
		"ferry_recording_duplicates_total", "ferry_recording_failed_total", "ferry_recording_commit_rate_bytes_per_second",
		"ferry_recording_recorded_position", "ferry_store_writes_total", "ferry_store_last_write_seconds"}
	eventually.NoError(t, 10*time.Second, func() error {
		_, body := get(t, srv.URL+"/metrics")
		families, err := new(expfmt.TextParser).TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("/metrics is not Prometheus text: %v\n%s", err, body)
		}
		for _, name := range want {
			if _, ok := families[name]; !ok {
				return fmt.Errorf("/metrics lacks %s", name)
			}
		}
		return nil
	})
}

// TestStatusSaysStartingWhileArchiveAndBrokerHang: every archive call and producer
// creation hangs (as when both are down and connections time out). While a call hangs, the
// stream pushes its status, starting, and /status shows it. (observe.Handler serves only
// what was pushed, so that it answers at all is by construction, not asked here; that
// `ferry run` answers with its archive frozen is
// TestLesson23And16_FerryAnswersAndTurnsUnhealthyWhileItsArchiveIsFrozen's.)
func TestStatusSaysStartingWhileArchiveAndBrokerHang(t *testing.T) {
	sc := newStreamConfig(t, "")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hanging := &atomic.Int32{}
	ip := startInProcess(t, inProcessOptions{
		wrapArchive: func(a actors.Archive) actors.Archive { return hangingArchive{a, release, hanging} },
		createProducer: func(actors.ProducerFactory) actors.ProducerFactory {
			return func(pulsar.ProducerOptions) (pulsar.Producer, error) {
				<-release
				return nil, errors.New("released")
			}
		},
	}, sc)
	srv := httptest.NewServer(observe.Handler(ip.board, []string{sc.Name}))
	t.Cleanup(srv.Close)
	eventually.NoError(t, 10*time.Second, func() error {
		switch {
		case len(ip.board.Snapshot().Streams) == 0:
			return errors.New("no status pushed yet")
		case hanging.Load() == 0:
			return errors.New("no archive call hanging yet")
		}
		return nil
	})
	st := streamStatusOf(t, srv.URL, sc.Name)
	if hanging.Load() == 0 {
		t.Fatal("the archive call stopped hanging while /status was asked: the test proved nothing")
	}
	if st.State != "starting" {
		t.Fatalf("state %q while the archive hangs, want starting", st.State)
	}
}

// TestLesson23And16_FerryAnswersAndTurnsUnhealthyWhileItsArchiveIsFrozen: `ferry run`'s own
// HTTP server, while the archive (media driver included) is stopped with SIGSTOP, so that
// every call to it hangs: /status, /healthz, /readyz and /metrics each answer within 2 s,
// again and again, for longer than a listing's interval (status comes from local state only,
// lesson 23); and since nothing can be read any more, /healthz turns 503 (a poll loop that
// cannot progress never leaves a process that reports itself healthy, lesson 16), and 200
// again once an archive runs again.
func TestLesson23And16_FerryAnswersAndTurnsUnhealthyWhileItsArchiveIsFrozen(t *testing.T) {
	own := failOwnArchive(t, nil)
	sc := newStreamConfig(t, "")
	cfg := newFerryConfig(t, sc)
	cfg.Aeron.Dir = own.AeronDir
	f := startFerry(t, cfg.write(t))
	url := "http://" + cfg.HTTP.Listen
	waitFor(t, f, 60*time.Second, "the stream to be listed", func() error {
		st, err := findStream(t, url, sc.Name)
		if err == nil && st.State != "caught-up" {
			err = fmt.Errorf("state %s", st.State)
		}
		return err
	})

	if err := syscall.Kill(own.Pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	frozen := true
	thaw := func() {
		if frozen {
			frozen = false
			if err := syscall.Kill(own.Pid(), syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)
	client := &http.Client{Timeout: 2 * time.Second}
	asked := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); asked++ {
		for _, path := range []string{"/status", "/healthz", "/readyz", "/metrics"} {
			resp, err := client.Get(url + path)
			if err != nil {
				t.Fatalf("%s with the archive frozen (request %d): %v", path, asked, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	t.Logf("asked %d rounds of /status, /healthz, /readyz and /metrics with the archive frozen", asked)
	health := func(want int) func() error {
		return func() error {
			resp, err := client.Get(url + "/healthz")
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != want {
				return fmt.Errorf("/healthz %s: %s", resp.Status, body)
			}
			return nil
		}
	}
	waitFor(t, f, 60*time.Second, "/healthz to answer 503 with the archive frozen", health(http.StatusServiceUnavailable))
	// Frozen past its own clients' liveness timeouts, the Java archive does not come back
	// to life (its client to its media driver times out once it runs again): replaced, as a
	// supervisor would replace it, the stream is healthy again.
	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	frozen = false
	if err := own.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, f, 90*time.Second, "/healthz to answer 200 once the archive runs again", health(http.StatusOK))
	f.mustStop()
}

// hangingArchive is the real archive client whose listings hang until released; hanging
// counts those in progress.
type hangingArchive struct {
	actors.Archive
	release chan struct{}
	hanging *atomic.Int32
}

// hang waits, counted as hanging, until the call's context ends or the test releases it.
func (h hangingArchive) hang(ctx context.Context) error {
	h.hanging.Add(1)
	defer h.hanging.Add(-1)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-h.release:
		return errors.New("released")
	}
}

func (h hangingArchive) RecordingsOfChannel(ctx context.Context, _ channel.URI, _ int32, _ int32) ([]archive.RecordingDescriptor, error) {
	return nil, h.hang(ctx)
}

// ChannelRecordings is RecordingsOfChannel's listing, with no recordings the channel does
// not select.
func (h hangingArchive) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error) {
	selected, err = h.RecordingsOfChannel(ctx, uri, streamID, pageSize)
	return selected, nil, err
}

func (h hangingArchive) Recording(ctx context.Context, _ int64) (archive.RecordingDescriptor, error) {
	return archive.RecordingDescriptor{}, h.hang(ctx)
}

func (h hangingArchive) MaxRecordedPosition(ctx context.Context, _ int64) (int64, error) {
	return 0, h.hang(ctx)
}

func (h hangingArchive) StartReplay(ctx context.Context, _, _, _ int64, _ string, _ int32) (int64, error) {
	return 0, h.hang(ctx)
}

func (h hangingArchive) StopReplay(ctx context.Context, _ int64) error { return h.hang(ctx) }

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

func streamStatusOf(t *testing.T, url, name string) *messages.StreamStatus {
	t.Helper()
	st, err := findStream(t, url, name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// findStream reads /status and returns the stream's part; ferry may not serve it yet, or
// the stream may not have pushed its first status yet (an error, not a failure).
func findStream(t testing.TB, url, name string) (*messages.StreamStatus, error) {
	t.Helper()
	// Bounded: a ferry that stopped answering must fail the wait, not hang the suite.
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/status")
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	code, body := resp.StatusCode, string(b)
	if code != http.StatusOK {
		t.Fatalf("/status %d: %s", code, body)
	}
	st := &messages.Status{}
	if err := protojson.Unmarshal([]byte(body), st); err != nil {
		t.Fatalf("/status is not the Status message: %v\n%s", err, body)
	}
	for _, s := range st.Streams {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("/status has no stream %s yet: %s", name, body)
}

func recordingOf(st *messages.StreamStatus, id int64) *messages.RecordingStatus {
	for _, r := range st.Recordings {
		if r.RecordingId == id {
			return r
		}
	}
	return nil
}

// waitOf says what recording id waits for in st: "extended behind 5", or "not waiting".
func waitOf(st *messages.StreamStatus, id int64) string {
	for _, w := range st.Waiting {
		if w.RecordingId == id {
			return fmt.Sprintf("%s behind %d", w.Reason, w.Behind)
		}
	}
	return "not waiting"
}

// failureOf is the stream's last failure of kind (archive, read, publish, producer,
// checkpoint, deduplication), or nil.
func failureOf(st *messages.StreamStatus, kind string) *messages.Failure {
	for _, f := range st.Failures {
		if f.Kind == kind {
			return f
		}
	}
	return nil
}

// TestLesson25_WhatWasNeverObservedHasNoTime: a recording ferry has read and sent, none of
// it acknowledged yet, has no time of a last acknowledgement, nor its stream one of a last
// progress: null (absent), not 0, which is 1970 (lesson 25). Once the acknowledgements
// come, both are the time they came at.
func TestLesson25_WhatWasNeverObservedHasNoTime(t *testing.T) {
	const n = 10
	sc := newStreamConfig(t, "")
	_, pub := newRecordedStream(t, sc.Channel, sc.StreamID)
	var holding atomic.Bool
	holding.Store(true)
	began := time.Now().UnixMilli()
	ip := startInProcess(t, inProcessOptions{plan: holdAcksOf(pub.recordingID, &holding)}, sc)
	t.Cleanup(func() { holding.Store(false); ip.producer(0).ReleaseAll() }) // before the pipeline's stop (LIFO)
	pub.publish(t, 0, n)
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		if r := recordingOf(st, pub.recordingID); r == nil || r.Published < n || r.LastReadMs == nil {
			return fmt.Errorf("recording %d: %v; want its %d records read and sent", pub.recordingID, r, n)
		}
		return nil
	})
	st, err := ip.status(sc.Name)
	if err != nil {
		t.Fatal(err)
	}
	r := recordingOf(st, pub.recordingID)
	if r.LastAckMs != nil || st.LastProgressMs != nil {
		t.Fatalf("nothing acknowledged yet: recording %d's last acknowledgement set %t (%d), the stream's last progress set %t (%d); want both null", pub.recordingID, r.LastAckMs != nil, r.GetLastAckMs(), st.LastProgressMs != nil, st.GetLastProgressMs())
	}

	holding.Store(false)
	ip.producer(0).ReleaseAll()
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		r := recordingOf(st, pub.recordingID)
		if r == nil || r.GetLastAckMs() < began || st.GetLastProgressMs() < began {
			return fmt.Errorf("recording %d: last acknowledgement at %d, the stream's last progress at %d; want both since %d", pub.recordingID, r.GetLastAckMs(), st.GetLastProgressMs(), began)
		}
		return nil
	})
}
