package observe

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
)

// A board whose streams last said they were fine is neither healthy nor ready while the
// connection to Aeron is down (lesson 16: nothing can progress then), and says why.
func TestBoardIsUnhealthyWhileDisconnected(t *testing.T) {
	b := NewBoard("test")
	b.SetStream(&messages.StreamStatus{Name: "orders", State: "replaying", Healthy: true})
	if ok, reasons := b.Healthy(); !ok {
		t.Fatalf("before any connection state: unhealthy %v; want healthy (the first attempt has not ended)", reasons)
	}
	b.SetConnection(&messages.Connection{SinceMs: 1795980000000, FailedAttempts: 3, Error: "no media driver in /dev/shm/aeron"})
	for name, check := range map[string]func() (bool, []string){
		"healthy": b.Healthy,
		"ready":   func() (bool, []string) { return b.Ready([]string{"orders"}) },
	} {
		ok, reasons := check()
		if ok || len(reasons) != 1 || !strings.Contains(reasons[0], "not connected to Aeron") ||
			!strings.Contains(reasons[0], "3 failed attempts") || !strings.Contains(reasons[0], "no media driver") {
			t.Errorf("%s while disconnected = %t, %q; want false, naming the connection, the attempts and the error", name, ok, reasons)
		}
	}
	b.SetConnection(&messages.Connection{Connected: true, SinceMs: 1795980001000})
	if ok, reasons := b.Healthy(); !ok {
		t.Fatalf("connected again: unhealthy %v", reasons)
	}
}

// /metrics says whether ferry is connected, no stream is healthy while it is not (the
// streams' last values are from before the loss), its lag is the status's lag_bytes:
// behind what was recorded, not only behind what the replay read, and it says whether the
// broker deduplicates a recording's topic.
func TestMetricsExportConnectionAndTheStatusLag(t *testing.T) {
	b := NewBoard("test")
	b.SetConnection(&messages.Connection{SinceMs: 1795980000000, Error: "connection lost"})
	b.SetStream(&messages.StreamStatus{Name: "orders", Healthy: true, Failures: []*messages.Failure{{Kind: "publish", AtMs: 1795980000500}}, Recordings: []*messages.RecordingStatus{{
		RecordingId: 7, CommittedPosition: proto.Int64(1000), ReplayPosition: proto.Int64(1000), LagBytes: 5000, Deduplication: "disabled", RateBytesPerS: 2048,
	}, {RecordingId: 6, Completed: true, CommittedPosition: proto.Int64(64), Deduplication: "disabled"}}})
	b.SetStream(&messages.StreamStatus{Name: "ticks", Mode: "transport", Healthy: true, Recordings: []*messages.RecordingStatus{{Publishers: proto.Int32(2)}}})
	srv := httptest.NewServer(Handler(b, []string{"orders", "ticks"}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"ferry_aeron_connected 0", `ferry_stream_healthy{stream="orders"} 0`, `ferry_recording_lag_bytes{recording="7",stream="orders"} 5000`, `ferry_transport_publishers{stream="ticks"} 2`, `ferry_recording_deduplication{recording="7",state="disabled",stream="orders"} 1`,
		`ferry_stream_last_failure_timestamp_seconds{kind="publish",stream="orders"} 1.7959800005e+09`, `ferry_recording_commit_rate_bytes_per_second{recording="7",stream="orders"} 2048`} {
		if !strings.Contains(string(body), line+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", line, body)
		}
	}
	if strings.Contains(string(body), `ferry_transport_publishers{stream="orders"}`) {
		t.Errorf("/metrics has a publisher count for an archive stream:\n%s", body)
	}
	// A completed recording publishes nothing more: an alert on its deduplication state
	// would not clear once the broker is fixed.
	if strings.Contains(string(body), `ferry_recording_deduplication{recording="6"`) {
		t.Errorf("/metrics has the deduplication state of a completed recording:\n%s", body)
	}
}

// Every configured stream is on the board from ferry's start, before its actors report
// (they start once ferry is connected to Aeron, which may take long): /status lists it,
// starting; while ferry has not connected it is not healthy, and says it waits for the
// connection; a stream's own report replaces it, and Expect does not replace a report.
func TestExpectedStreamsAreOnTheBoardBeforeTheyReport(t *testing.T) {
	b := NewBoard("test")
	b.SetStream(&messages.StreamStatus{Name: "fills", State: "replaying", Healthy: true})
	b.Expect("archive", "orders", "fills")
	snap := b.Snapshot()
	if len(snap.Streams) != 2 || snap.Streams[0].Name != "fills" || snap.Streams[0].State != "replaying" ||
		snap.Streams[1].Name != "orders" || snap.Streams[1].State != "starting" || snap.Streams[1].Mode != "archive" {
		t.Fatalf("streams %v; want fills as it reported, then orders starting", snap.Streams)
	}
	if ok, reasons := b.Healthy(); !ok {
		t.Fatalf("during the first connection attempt: unhealthy %v", reasons)
	}
	b.SetConnection(&messages.Connection{SinceMs: 1795980000000, FailedAttempts: 1, Error: "no media driver"})
	orders := b.Snapshot().Streams[1]
	if orders.Healthy || orders.Reason != notConnectedYet {
		t.Fatalf("orders while ferry never connected: healthy %t, %q; want unhealthy, waiting for the connection", orders.Healthy, orders.Reason)
	}
	if ok, reasons := b.Healthy(); ok || len(reasons) != 1 || !strings.Contains(reasons[0], "not connected to Aeron") {
		t.Fatalf("healthy %t, %q; want false, the connection's reason alone", ok, reasons)
	}
	b.SetStream(&messages.StreamStatus{Name: "orders", State: "caught-up", Healthy: true})
	b.SetConnection(&messages.Connection{Connected: true})
	if orders := b.Snapshot().Streams[1]; orders.State != "caught-up" {
		t.Fatalf("orders after its report: %s", orders.State)
	}
}

// A stream that stopped pushing its status is not shown healthy and ready for ever on what
// it last said: after staleAfter without a push (while ferry is connected) it is unhealthy
// and not ready, saying since when its status is stale, and /status says when it pushed.
// A stream only expected (it never pushed) is so staleAfter after the connection was made
// (its actors are stuck before their first push); one whose actors start again after a
// reconnect is not, until staleAfter after it; one unhealthy keeps its own reason; and
// while the connection is down the reason is the connection's.
func TestAStreamThatStoppedPushingIsStale(t *testing.T) {
	b := NewBoard("test")
	now := time.UnixMilli(1795980000000)
	b.now = func() time.Time { return now }
	b.SetConnection(&messages.Connection{Connected: true, SinceMs: now.UnixMilli()})
	b.Expect("archive", "orders", "fills", "quotes")
	b.SetStream(&messages.StreamStatus{Name: "orders", State: "replaying", Healthy: true})
	b.SetStream(&messages.StreamStatus{Name: "quotes", State: "failed", Reason: "failed: a bug"})
	pushed := now
	now = now.Add(staleAfter)
	if ok, reasons := b.Healthy(); ok || len(reasons) != 1 {
		t.Fatalf("pushed %s ago: healthy %t, %q; want quotes' failure alone", staleAfter, ok, reasons)
	}
	now = now.Add(time.Hour)
	ok, reasons := b.Healthy()
	if ok || len(reasons) != 3 || !strings.HasPrefix(reasons[0], "orders: its status is stale: not pushed since 2026-11-29T19:20:00Z (1h0m10s ago") ||
		!strings.HasPrefix(reasons[1], "fills: it has not pushed its status since ferry connected to Aeron at 2026-11-29T19:20:00Z (1h0m10s ago") || reasons[2] != "quotes: failed: a bug" {
		t.Errorf("an hour without a push: healthy %t, %q; want orders stale since its push, fills never pushed since the connection, quotes failed", ok, reasons)
	}
	if ready, not := b.Ready([]string{"orders"}); ready || len(not) != 1 || !strings.Contains(not[0], "stale") {
		t.Errorf("an hour without a push: ready %t, %q; want not ready, stale", ready, not)
	}
	if st := b.Snapshot().Streams[0]; st.GetPushedAtMs() != pushed.UnixMilli() || st.State != "replaying" {
		t.Errorf("status %v; want pushed_at_ms %d, the state it last pushed", st, pushed.UnixMilli())
	}

	b.SetConnection(&messages.Connection{SinceMs: now.UnixMilli(), Error: "connection lost"})
	if st := b.Snapshot().Streams[0]; st.Reason != notConnected {
		t.Errorf("disconnected: %q; want the connection's reason", st.Reason)
	}
	b.SetConnection(&messages.Connection{Connected: true, SinceMs: now.UnixMilli()})
	if ok, reasons := b.Healthy(); ok || len(reasons) != 1 {
		t.Errorf("just reconnected: healthy %t, %q; want quotes' failure alone (the others' actors start again)", ok, reasons)
	}
	now = now.Add(staleAfter + time.Millisecond)
	if ok, reasons := b.Healthy(); ok || len(reasons) != 3 {
		t.Errorf("%s after the reconnect without a push: healthy %t, %q; want orders and fills stale, quotes failed", staleAfter, ok, reasons)
	}
	b.SetStream(&messages.StreamStatus{Name: "orders", State: "replaying", Healthy: true})
	if ready, not := b.Ready([]string{"orders"}); !ready {
		t.Errorf("pushed again: not ready, %q", not)
	}
	// Unhealthy for what it says itself, and pushing: the status is then stalled (or
	// failed), which is not ready, saying why.
	const why = "stalled: 5 records pending, 0 bytes behind, and no committed_position moved for 2m0s; Pulsar acknowledges nothing"
	b.SetStream(&messages.StreamStatus{Name: "orders", State: "stalled", Reason: why})
	if ready, not := b.Ready([]string{"orders"}); ready || len(not) != 1 || not[0] != "orders: "+why {
		t.Errorf("stalled, not stale: ready %t, %q; want not ready, with the stall's reason", ready, not)
	}
	b.SetStream(&messages.StreamStatus{Name: "orders", State: "starting"})
	if ready, not := b.Ready([]string{"orders"}); ready || len(not) != 1 || not[0] != "orders: starting" {
		t.Errorf("starting: ready %t, %q; want not ready, starting", ready, not)
	}
}
