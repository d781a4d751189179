package actors

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
)

// A stream's status taken again by its next incarnation (after a reconnect or a restart)
// keeps its last failures (lesson 24) and counters that never go down, and the new
// trackers' first report of an unchanged committed position is not progress.
func TestAStatusTakenAgainGoesOnFromTheLastIncarnation(t *testing.T) {
	k := &statusKeeper{}
	first := k.take("orders", 1_000)
	first.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{
		CommittedPosition: proto.Int64(4096), Published: 10, Acknowledged: 9, Failed: 1}}, 2_000)
	first.failure(&messages.Failure{Kind: "publish", AtMs: 1_500, Message: "broker gone"})
	first.stopped = true

	again := k.take("orders", 5_000)
	again.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{
		CommittedPosition: proto.Int64(4096), Published: 3, Acknowledged: 3}}, 6_000)
	st := again.build("orders", "archive", nil, nil, time.Minute, 6_000)
	r := st.Recordings[0]
	if r.Published != 13 || r.Acknowledged != 12 || r.Failed != 1 {
		t.Errorf("published %d, acknowledged %d, failed %d; want 13, 12, 1 (counts carried over)", r.Published, r.Acknowledged, r.Failed)
	}
	if len(st.Failures) != 1 || st.Failures[0].Message != "broker gone" {
		t.Errorf("failures %v; want the publish failure of the last incarnation", st.Failures)
	}
	if st.GetLastProgressMs() != 2_000 {
		t.Errorf("last progress at %d; want 2000: the same committed position reported again is not progress", st.GetLastProgressMs())
	}
	if st.State == "stopped" {
		t.Errorf("state %q: the new incarnation is not stopped", st.State)
	}
	again.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(8192)}}, 7_000)
	if st := again.build("orders", "archive", nil, nil, time.Minute, 7_000); st.GetLastProgressMs() != 7_000 {
		t.Errorf("last progress at %d after the committed position moved at 7000", st.GetLastProgressMs())
	}

	var none *statusKeeper
	if s := none.take("orders", 1); len(s.recordings) != 0 {
		t.Error("a nil keeper carried a status")
	}
}
