package actors

import (
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
)

// A stream's status taken again by its next incarnation (after a reconnect or a restart)
// keeps its last failures (lesson 24) and counters that never go down, and the new
// trackers' first report of an unchanged committed position is not progress.
func TestAStatusTakenAgainGoesOnFromTheLastIncarnation(t *testing.T) {
	k := &statusKeeper{}
	first := k.take("orders", 1_000)
	// The first push is the replay's start; the next one moved.
	first.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0)}}, at(1_500))
	first.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{
		CommittedPosition: proto.Int64(4096), Published: 10, Acknowledged: 9, Failed: 1}}, at(2_000))
	first.failure(&messages.Failure{Kind: "publish", AtMs: 1_500, Message: "broker gone"})
	first.stopped = true

	again := k.take("orders", 5_000)
	again.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{
		CommittedPosition: proto.Int64(4096), Published: 3, Acknowledged: 3}}, at(6_000))
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
	again.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(8192)}}, at(7_000))
	if st := again.build("orders", "archive", nil, nil, time.Minute, 7_000); st.GetLastProgressMs() != 7_000 {
		t.Errorf("last progress at %d after the committed position moved at 7000", st.GetLastProgressMs())
	}

	var none *statusKeeper
	if s := none.take("orders", 1); len(s.recordings) != 0 {
		t.Error("a nil keeper carried a status")
	}
}

// A recording moves on (the restart strategy's progress) only beyond the highest committed
// position pushed so far, in any incarnation: a restarted replay whose records are
// acknowledged again up to there has not moved on. One committed up to where the archive
// last listed it recorded has nothing to move on to, which counts the same: a quiet live
// recording's replay failing now and then is not stuck. In transport mode, which sends
// nothing twice, a new acknowledgement moves it on.
func TestARecordingMovesOnOnlyBeyondItsHighestCommittedPosition(t *testing.T) {
	k := &statusKeeper{}
	s := k.take("orders", 0)
	s.known(&messages.RecordingInfo{RecordingId: 7, StartPosition: 0, Live: true, StopPosition: -1, RecordedPosition: -1}, 0)
	push := func(s *streamStatus, committed int64) bool {
		return s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(committed)}}, at(1))
	}
	for i, step := range []struct {
		committed int64
		want      bool
	}{
		{1024, false}, // the first push: the replay's start (a seed above the recording's), nothing acknowledged
		{1024, false},
		{4096, true},
		{2048, false}, // a restarted replay, from the persisted checkpoint
		{4096, false}, // acknowledged again up to where it was
		{4160, true},
	} {
		if got := push(s, step.committed); got != step.want {
			t.Errorf("push %d (committed %d): moved on %v, want %v", i, step.committed, got, step.want)
		}
	}
	s.stopped = true
	again := k.take("orders", 2)
	if push(again, 4160) || push(again, 2048) || !push(again, 8192) {
		t.Error("the next incarnation did not go on from the highest position of the last")
	}
	again.known(&messages.RecordingInfo{RecordingId: 7, Live: true, StopPosition: -1, RecordedPosition: 8256}, 3)
	if push(again, 4096) || !push(again, 8256) || !push(again, 8256) {
		t.Error("want moved on exactly when committed up to where the archive recorded")
	}

	live := k.take("live", 0)
	ack := func(n uint64) bool {
		return live.progress(&messages.RecordingProgress{Status: &messages.RecordingStatus{Published: n + 1, Acknowledged: n, PendingRecords: 1}}, at(1))
	}
	if ack(0) || !ack(1) || ack(1) || !ack(5) {
		t.Error("transport mode, a record pending: want moved on exactly when acknowledged grows")
	}
	// Nothing pending is true of every new live reader, also of one that fails at every
	// message: not moving on.
	if live.progress(&messages.RecordingProgress{Status: &messages.RecordingStatus{Published: 6, Acknowledged: 5, Publishers: proto.Int32(1)}}, at(1)) {
		t.Error("transport mode, subscribed and nothing pending: moved on; want only new acknowledgements to move on")
	}
}

// A recording listed with records the replay has not reached is behind by them, so that a
// replay that never starts turns the stream stalled after the threshold instead of
// 'caught-up'; a stream whose recordings were never listed is stalled after it too; and a
// recording the store says is completed is done, not behind.
func TestTheStallRuleSeesRecordingsNotReachedAndStreamsNotStarted(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	if st := s.build("orders", "archive", nil, nil, stall, stall.Milliseconds()+1); st.State != "stalled" || st.Healthy || !strings.Contains(st.Reason, "no listing") {
		t.Errorf("never listed for longer than the threshold: %s, healthy %t, %q; want stalled, naming the listing", st.State, st.Healthy, st.Reason)
	}

	s = newStreamStatus(0)
	s.stored(store.Checkpoint{RecordingID: 1, Position: 9000, Completed: true})
	s.known(&messages.RecordingInfo{RecordingId: 1, StopPosition: 9000, RecordedPosition: 9000}, 0)
	s.known(&messages.RecordingInfo{RecordingId: 2, StartPosition: 0, Live: true, RecordedPosition: 10_000}, 0)
	s.listed = true
	st := s.build("orders", "archive", nil, nil, stall, 1_000)
	if st.State != "replaying" || st.Recordings[1].LagBytes != 10_000 || !st.Recordings[0].Completed || st.Recordings[0].LagBytes != 0 {
		t.Errorf("state %s, lags %d and %d, completed %t; want replaying, 0 (done) and 10000", st.State, st.Recordings[0].LagBytes, st.Recordings[1].LagBytes, st.Recordings[0].Completed)
	}
	if st := s.build("orders", "archive", nil, nil, stall, stall.Milliseconds()+1); st.State != "stalled" || st.Healthy {
		t.Errorf("no replay for longer than the threshold: %s, healthy %t; want stalled", st.State, st.Healthy)
	}
}

// The status never shows a live recording recorded behind what the replay read or Pulsar
// acknowledged in this run (discovery's recorded position is up to a listing old, the replay's push may
// be older than the tracker's or a checkpoint persisted ahead of it), and recorded_at_ms is
// when it was read or acknowledged; JSON, /metrics and the table show the same. A recording
// not listed yet has no recorded position.
func TestTheRecordedPositionIsNeverBehindWhatWasReadOrCommitted(t *testing.T) {
	s := newStreamStatus(0)
	s.listed = true
	listedAt := int64(1795980000000)
	for id, recorded := range map[int64]int64{1: 419808, 2: 9000, 3: 4963648, 4: 1000} {
		s.known(&messages.RecordingInfo{RecordingId: id, Live: true, StopPosition: -1, RecordedPosition: recorded}, listedAt)
		s.progress(&messages.RecordingProgress{RecordingId: id, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0)}}, at(1))
	}
	push := func(id, replay, committed, readAt, ackAt int64) {
		s.progress(&messages.RecordingProgress{RecordingId: id, Status: &messages.RecordingStatus{ReplayPosition: proto.Int64(replay),
			CommittedPosition: proto.Int64(committed), LastReadMs: proto.Int64(readAt), LastAckMs: proto.Int64(ackAt)}}, at(2))
	}
	push(1, 440000, 439584, listedAt+100, listedAt+200) // read past the listing
	push(2, 4096, 4096, listedAt+100, listedAt+200)     // behind the listing
	// The replay's last push older than the tracker's (seen in make demo).
	push(3, 4963000, 4963000, listedAt+100, listedAt+200)
	s.persisted(&messages.CheckpointPersisted{RecordingId: 3, Position: 4970080}, moment{wallMs: listedAt + 300, elapsedMs: 3})
	// Committed by a checkpoint of an earlier run, above what the archive lists: shown as
	// the archive lists it (lesson 14's case, not hidden).
	s.stored(store.Checkpoint{RecordingID: 4, Position: 5000})
	s.stored(store.Checkpoint{RecordingID: 5, Position: 2048}) // not listed yet
	// Stopped: the listing's stop is exact, whatever was read (a truncation since, say).
	s.known(&messages.RecordingInfo{RecordingId: 6, StopPosition: 3000, RecordedPosition: 3000}, listedAt)
	push(6, 5000, 5000, listedAt+100, listedAt+200)
	st := s.build("orders", "archive", nil, nil, time.Minute, 4)
	want := map[int64]struct{ recorded, atMs, lag int64 }{
		1: {440000, listedAt + 100, 416},
		2: {9000, listedAt, 4904},
		3: {4970080, listedAt + 300, 0},
		4: {1000, listedAt, 0},
		6: {3000, listedAt, 0},
	}
	for _, r := range st.Recordings {
		w, listed := want[r.RecordingId]
		switch {
		case !listed && (r.RecordedPosition != nil || r.RecordedAtMs != nil):
			t.Errorf("recording %d, not listed: recorded %d at %d; want none", r.RecordingId, r.GetRecordedPosition(), r.GetRecordedAtMs())
		case listed && (r.GetRecordedPosition() != w.recorded || r.GetRecordedAtMs() != w.atMs || r.LagBytes != w.lag):
			t.Errorf("recording %d (replay %d, committed %d): recorded %d at %d, lag %d; want recorded %d at %d, lag %d", r.RecordingId, r.GetReplayPosition(), r.GetCommittedPosition(),
				r.GetRecordedPosition(), r.GetRecordedAtMs(), r.LagBytes, w.recorded, w.atMs, w.lag)
		}
	}
}

// A stream's status shows the newest completed recordings only (shownCompleted), and every
// recording not completed: recordings a publisher's restarts leave behind do not grow the
// status and /metrics for ever, nor come back with the next listing.
func TestTheStatusShowsTheNewestCompletedRecordingsOnly(t *testing.T) {
	s := newStreamStatus(0)
	for id := range int64(15) {
		s.stored(store.Checkpoint{RecordingID: id, Position: 64, Completed: true})
	}
	s.known(&messages.RecordingInfo{RecordingId: 15, Live: true, RecordedPosition: 128}, 0)
	s.listed = true
	st := s.build("orders", "archive", nil, nil, time.Minute, 1)
	var ids []int64
	for _, r := range st.Recordings {
		ids = append(ids, r.RecordingId)
	}
	if want := []int64{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}; !slices.Equal(ids, want) {
		t.Fatalf("recordings shown %v, want %v", ids, want)
	}
	s.known(&messages.RecordingInfo{RecordingId: 0, StopPosition: 64, RecordedPosition: 64}, 2)
	if st := s.build("orders", "archive", nil, nil, time.Minute, 3); len(st.Recordings) != 11 || st.Recordings[0].RecordingId != 5 {
		t.Fatalf("a listing brought back recording 0: %d shown, first %d", len(st.Recordings), st.Recordings[0].RecordingId)
	}
	// A forgotten checkpoint (ferry checkpoint forget) shows as such.
	forgotten := newStreamStatus(0)
	forgotten.stored(store.Checkpoint{RecordingID: 3, Position: 64, Completed: true, Forgotten: true})
	forgotten.listed = true
	if st := forgotten.build("orders", "archive", nil, nil, time.Minute, 1); len(st.Recordings) != 1 || !st.Recordings[0].Forgotten || !st.Recordings[0].Completed {
		t.Fatalf("a forgotten checkpoint's recording in the status: %v; want completed and forgotten", st.Recordings)
	}
	// Reopened (extended, or read again), a recording no longer shown is not completed: it
	// is shown again, with what its new tracker reports.
	s.reopened(1)
	s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(96)}}, at(4))
	st = s.build("orders", "archive", nil, nil, time.Minute, 5)
	if len(st.Recordings) != 12 || st.Recordings[0].RecordingId != 1 || st.Recordings[0].Completed || st.Recordings[0].GetCommittedPosition() != 96 {
		t.Fatalf("recording 1 reopened: %d shown, first %v; want 12, recording 1 publishing, committed at 96", len(st.Recordings), st.Recordings[0])
	}
}

// Checkpoint saves that keep failing make the stream unhealthy after the threshold, while
// its committed positions move (records are acknowledged, caught up): what Pulsar
// acknowledged is not persisted. One save that succeeds ends it, and so does a new
// incarnation of the pipeline.
func TestCheckpointSavesFailingForTheThresholdAreUnhealthy(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	s.listed = true
	committed := int64(0)
	commit := func(nowMs int64) {
		committed += 100
		s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(committed)}}, at(nowMs))
	}
	s.written(&messages.StoreWritten{}, 500)
	s.written(&messages.StoreWritten{Failed: true}, 1_000)
	s.failure(&messages.Failure{AtMs: 1_000, Kind: "checkpoint", Message: "disk full"})
	for now := int64(1_000); now <= 1_000+stall.Milliseconds(); now += 10_000 {
		commit(now)
		s.written(&messages.StoreWritten{Failed: true}, now)
		if st := s.build("orders", "archive", nil, nil, stall, now); !st.Healthy {
			t.Fatalf("at %d ms, %d ms after the first failed save: unhealthy (%s) before the threshold", now, now-1_000, st.Reason)
		}
	}
	now := 1_000 + stall.Milliseconds() + 1
	commit(now)
	st := s.build("orders", "archive", nil, nil, stall, now)
	if st.Healthy || st.State != "stalled" || !strings.Contains(st.Reason, "checkpoint save failed") || !strings.Contains(st.Reason, "checkpoint") {
		t.Fatalf("saves failing for longer than the threshold: %s, healthy %t, %q; want stalled, naming the checkpoint saves", st.State, st.Healthy, st.Reason)
	}
	s.written(&messages.StoreWritten{}, now+1)
	if st := s.build("orders", "archive", nil, nil, stall, now+1); !st.Healthy || st.GetStoreWrites() != 2 {
		t.Fatalf("after a save that succeeded: healthy %t (%q), %d store writes; want healthy, 2", st.Healthy, st.Reason, st.GetStoreWrites())
	}
	s.written(&messages.StoreWritten{Failed: true}, now+2)
	s.resume(now + 3)
	s.listed = true
	if st := s.build("orders", "archive", nil, nil, stall, now+3+stall.Milliseconds()); !st.Healthy {
		t.Fatalf("a new incarnation that attempted no save inherited the failing saves: %q", st.Reason)
	}

	// Incarnations each shorter than the threshold, every save of each failing: the clock
	// runs from the first failure, not from each reconnect.
	now += 3 + stall.Milliseconds()
	s.written(&messages.StoreWritten{}, now)
	first := now + 1
	for end := first + 2*stall.Milliseconds(); now < end; now += stall.Milliseconds() / 3 {
		s.resume(now)
		s.listed = true
		s.written(&messages.StoreWritten{Failed: true}, now+1)
	}
	st = s.build("orders", "archive", nil, nil, stall, now)
	if st.Healthy || !strings.Contains(st.Reason, "checkpoint save failed for "+(time.Duration(now-first)*time.Millisecond).String()) {
		t.Fatalf("every save of every incarnation failing for %s: healthy %t, %q; want stalled since the first failure", time.Duration(now-first)*time.Millisecond, st.Healthy, st.Reason)
	}
}

// A stalled stream's reason says which side is still: records pending (sent, not
// acknowledged) point at Pulsar, a lag with nothing pending at the replay.
func TestTheStallReasonSaysWhichSideIsStill(t *testing.T) {
	const stall = time.Minute
	for _, tt := range []struct {
		name    string
		pending int64
		want    string
	}{
		{"pending", 10, "Pulsar acknowledges nothing"},
		{"behind, nothing pending", 0, "the replay reads nothing"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newStreamStatus(0)
			s.listed = true
			s.known(&messages.RecordingInfo{RecordingId: 1, Live: true, RecordedPosition: 4096}, 0)
			s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0), PendingRecords: tt.pending}}, at(0))
			st := s.build("orders", "archive", nil, nil, stall, stall.Milliseconds()+1)
			if st.State != "stalled" || !strings.Contains(st.Reason, tt.want) {
				t.Fatalf("%s, %q; want stalled, saying %q", st.State, st.Reason, tt.want)
			}
		})
	}
}

// A recording published again after an extension is no longer completed, and its counts go
// on from the finished tracker's: the new tracker counts from zero.
func TestAReopenedRecordingsCountsGoOn(t *testing.T) {
	s := newStreamStatus(0)
	s.progress(&messages.RecordingProgress{RecordingId: 3, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(640), Published: 10, Acknowledged: 10, Duplicates: 1}}, at(1))
	s.persisted(&messages.CheckpointPersisted{RecordingId: 3, Position: 640, Completed: true}, at(2))
	s.reopened(3)
	s.progress(&messages.RecordingProgress{RecordingId: 3, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(704), Published: 2, Acknowledged: 1}}, at(3))
	r := s.recording(3)
	if r.Completed || r.Published != 12 || r.Acknowledged != 11 || r.Duplicates != 1 {
		t.Fatalf("reopened recording's status %+v; want not completed, 12 published, 11 acknowledged, 1 duplicate", r)
	}
}

// Work that arrives after an idle spell longer than the threshold is not stalled at once:
// the stall clock runs from the last time the stream was seen idle, not from the last
// progress before the spell (which would flap /healthz at every burst after a quiet minute).
// In transport mode too. Work that then does not move for the threshold is stalled.
func TestWorkArrivingAfterAnIdleSpellIsNotStalledAtOnce(t *testing.T) {
	const stall = time.Minute
	for _, mode := range []string{"archive", "transport"} {
		t.Run(mode, func(t *testing.T) {
			s := newStreamStatus(0)
			s.listed = true
			var publishers *int32 // the live reader's pushes count its publishers: it is subscribed
			if mode == "transport" {
				publishers = proto.Int32(1)
			}
			s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(4096), Acknowledged: 1, Publishers: publishers}}, at(1_000))
			for now := int64(1_000); now <= 600_000; now += 500 { // pushed every half second
				if st := s.build("orders", mode, nil, nil, stall, now); st.State == "stalled" {
					t.Fatalf("idle at %d ms: stalled: %s", now, st.Reason)
				}
			}
			s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(4096), Acknowledged: 1, PendingRecords: 1, Publishers: publishers}}, at(600_100))
			if st := s.build("orders", mode, nil, nil, stall, 600_400); !st.Healthy {
				t.Fatalf("one record pending for 400 ms after ten idle minutes: %s, %s", st.State, st.Reason)
			}
			if st := s.build("orders", mode, nil, nil, stall, 600_500+stall.Milliseconds()); st.State != "stalled" || st.Healthy {
				t.Fatalf("the record pending for longer than the threshold: %s, healthy %t; want stalled", st.State, st.Healthy)
			}
		})
	}
}

// A recording held back for the restart grace behind a quiet live one (a restarted
// publisher's) waits by design, however long the grace: it does not make the stream stalled.
// One held back behind a stopped recording not yet drained does, once nothing moved for the
// threshold.
func TestARecordingWaitingOutTheRestartGraceIsNotStalled(t *testing.T) {
	const stall = time.Minute
	for _, c := range []struct {
		why     progress.WaitReason
		stalled bool
	}{{progress.WaitQuiet, false}, {progress.WaitStopped, true}} {
		t.Run(c.why.String(), func(t *testing.T) {
			s := newStreamStatus(0)
			s.listed = true
			s.known(&messages.RecordingInfo{RecordingId: 1, Live: true, RecordedPosition: 4096}, 0)
			s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(4096)}}, at(0))
			s.known(&messages.RecordingInfo{RecordingId: 2, Live: true, RecordedPosition: 10_000}, 0)
			waits := []progress.Wait{{ID: 2, Behind: 1, Why: c.why}}
			st := s.build("orders", "archive", nil, waits, stall, 2*stall.Milliseconds())
			if (st.State == "stalled") != c.stalled || st.Healthy == c.stalled {
				t.Fatalf("recording 2 waiting (%s) for twice the threshold: %s, healthy %t, %q; want stalled %t", c.why, st.State, st.Healthy, st.Reason, c.stalled)
			}
		})
	}
}

// The health rule and the commit rate measure time by the elapsed clock, not the time of
// day: a clock stepped back an hour (an NTP correction, an operator) while a stream has
// records pending hid its stall for that hour, and froze its rate (one stepped forward past
// the threshold showed a moving stream stalled until its next push). The last progress shown
// is a time of day.
func TestTheHealthRuleDoesNotFollowTheTimeOfDay(t *testing.T) {
	const stall = time.Minute
	const day = int64(1_800_000_000_000) // a time of day, in ms
	pushed := func(s *streamStatus, pos int64, now moment) {
		s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos), PendingRecords: 10}}, now)
	}
	started := func() *streamStatus {
		s := newStreamStatus(1_000)
		s.listed = true
		s.known(&messages.RecordingInfo{RecordingId: 7, Live: true, RecordedPosition: 1 << 30}, day)
		pushed(s, 0, moment{wallMs: day, elapsedMs: 1_000})
		return s
	}

	t.Run("stepped back, then stuck", func(t *testing.T) {
		s := started()
		pushed(s, 4096, moment{wallMs: day + 1_000, elapsedMs: 2_000})
		elapsed := int64(2_000) + stall.Milliseconds() + 500 // and the time of day an hour back: no moment of it is taken
		st := s.build("orders", "archive", nil, nil, stall, elapsed)
		if st.State != "stalled" || st.Healthy {
			t.Fatalf("nothing committed for %s by the elapsed clock, the time of day an hour back: %s, healthy %t; want stalled", time.Duration(elapsed-2_000)*time.Millisecond, st.State, st.Healthy)
		}
		if st.GetLastProgressMs() != day+1_000 {
			t.Fatalf("last progress shown at %d; want the time of day it happened, %d", st.GetLastProgressMs(), day+1_000)
		}
	})

	t.Run("stepped back, moving on", func(t *testing.T) {
		s := started()
		wall := day - 3_600_000 // an hour back, from the first push on
		for i := int64(1); i <= 10; i++ {
			pushed(s, i<<20, moment{wallMs: wall + i*1_000, elapsedMs: 1_000 + i*1_000})
		}
		st := s.build("orders", "archive", nil, nil, stall, 11_000)
		if r := st.Recordings[0]; r.RateBytesPerS < 500_000 {
			t.Fatalf("1 MiB committed a second: rate %.0f B/s; want about %d", r.RateBytesPerS, 1<<20)
		}
		if st.GetLastProgressMs() != wall+10_000 {
			t.Fatalf("last progress shown at %d; want the time of day it happened, %d", st.GetLastProgressMs(), wall+10_000)
		}
	})
}

// A new tracker (a reconnect, a restarted replay, a reopened recording) has read and seen
// acknowledged nothing yet: the last read and the last acknowledgement stay those of the
// tracker before it, not "never" (lesson 25), until it has its own.
func TestTheLastReadAndAckOutliveTheirTracker(t *testing.T) {
	s := newStreamStatus(0)
	s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(4096),
		LastReadMs: proto.Int64(1_500), LastAckMs: proto.Int64(1_600)}}, at(2_000))
	s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(4096)}}, at(3_000))
	r := s.build("orders", "archive", nil, nil, time.Minute, 3_000).Recordings[0]
	if r.GetLastReadMs() != 1_500 || r.GetLastAckMs() != 1_600 {
		t.Fatalf("after a new tracker's first push: last read %v, last ack %v; want 1500, 1600", r.LastReadMs, r.LastAckMs)
	}
	s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(8192),
		LastReadMs: proto.Int64(3_500), LastAckMs: proto.Int64(3_600)}}, at(4_000))
	if r := s.build("orders", "archive", nil, nil, time.Minute, 4_000).Recordings[0]; r.GetLastReadMs() != 3_500 || r.GetLastAckMs() != 3_600 {
		t.Fatalf("the new tracker's own: last read %v, last ack %v; want 3500, 3600", r.LastReadMs, r.LastAckMs)
	}
}

// A recording's rate falls while nothing is committed, pushes or not, and its ETA is never
// negative nor absurd: at a rate below a byte a second there is none.
func TestTheRateFallsWhileNothingMovesAndTheEtaStaysSane(t *testing.T) {
	s := newStreamStatus(0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 7, Live: true, RecordedPosition: 10_000_000}, 0)
	for i, pos := range []int64{0, 1_000_000, 2_000_000} {
		s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos)}}, at(int64(i)*1_000))
	}
	busy := s.build("orders", "archive", nil, nil, time.Minute, 2_000).Recordings[0]
	if busy.RateBytesPerS <= 0 || busy.EtaMs == nil {
		t.Fatalf("moving: rate %.0f B/s, ETA %v; want both", busy.RateBytesPerS, busy.EtaMs)
	}
	var last float64 = busy.RateBytesPerS
	for now := int64(2_500); now <= 3_600_000; now += 500 { // an hour of builds, no push
		r := s.build("orders", "archive", nil, nil, time.Minute, now).Recordings[0]
		if r.RateBytesPerS > last || r.GetEtaMs() < 0 || (r.EtaMs != nil && float64(*r.EtaMs) > maxEtaMs) {
			t.Fatalf("at %d ms: rate %.3g B/s (before %.3g), ETA %v", now, r.RateBytesPerS, last, r.EtaMs)
		}
		last = r.RateBytesPerS
	}
	if r := s.build("orders", "archive", nil, nil, time.Minute, 3_600_500).Recordings[0]; r.RateBytesPerS != 0 || r.EtaMs != nil {
		t.Fatalf("after an hour without a commit: rate %.3g B/s, ETA %v; want 0 and none", r.RateBytesPerS, r.EtaMs)
	}
}

// A trickling recording's rate is its speed, whenever the status builds (every 500 ms, on
// their own clock) fall between its pushes: a push just after a build is not measured over
// the few milliseconds since that build. Here 1,000 bytes are committed every 2.5 s
// (400 B/s), each push 3 ms after a build.
func TestATricklingRecordsRateIsItsSpeed(t *testing.T) {
	s := newStreamStatus(0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 7, Live: true, RecordedPosition: 100_000_000}, 0)
	const every, step = 2_500, 1_000
	pushed, pos := int64(3), int64(0)
	s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos)}}, at(pushed))
	for now := int64(500); now <= 120_000; now += 500 {
		r := s.build("orders", "archive", nil, nil, time.Minute, now).Recordings[0]
		if now > 10_000 && (r.RateBytesPerS < 200 || r.RateBytesPerS > 800) {
			t.Fatalf("at %d ms, committing %d bytes every %d ms (400 B/s): rate shown %.0f B/s", now, step, every, r.RateBytesPerS)
		}
		if now+3 >= pushed+every {
			pushed, pos = now+3, pos+step
			s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos)}}, at(pushed))
		}
	}
}

// What a status carries across a reconnect is what stays true without the last
// incarnation's actors: the committed position does not go back when the new tracker starts
// from the persisted checkpoint below it (nor the lag up), and the commit rate and ETA, the
// producers' state and the publishers connected are not shown until the new actors report
// them — not frozen at what they were before the loss.
func TestAReconnectShowsNothingOnlyTheLastActorsKnew(t *testing.T) {
	k := &statusKeeper{}
	s := k.take("orders", 0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 7, Live: true, StopPosition: -1, RecordedPosition: 100 << 20}, 0)
	for i, pos := range []int64{0, 1 << 20, 2 << 20, 3 << 20} {
		s.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos)}}, at(int64(i)*1_000))
	}
	s.recording(7).Producer = "ready"
	s.persisted(&messages.CheckpointPersisted{RecordingId: 7, Position: 2 << 20}, at(3_000))
	before := s.build("orders", "archive", nil, nil, time.Hour, 3_000).Recordings[0]
	if before.RateBytesPerS == 0 || before.EtaMs == nil {
		t.Fatalf("before the loss: rate %.0f, ETA %v; the test needs both", before.RateBytesPerS, before.EtaMs)
	}
	s.stop()
	stopped := s.build("orders", "archive", nil, nil, time.Hour, 3_500).Recordings[0]
	if stopped.RateBytesPerS != 0 || stopped.EtaMs != nil || stopped.Producer != "" || stopped.GetCommittedPosition() != before.GetCommittedPosition() {
		t.Errorf("stopped (the connection lost): rate %.0f, ETA %v ms, producer %q, committed %d; want 0, none, unknown, and the position kept", stopped.RateBytesPerS, stopped.GetEtaMs(), stopped.Producer, stopped.GetCommittedPosition())
	}

	again := k.take("orders", 4_000)
	again.listed = true
	r := again.build("orders", "archive", nil, nil, time.Hour, 3_600_000).Recordings[0]
	if r.RateBytesPerS != 0 || r.EtaMs != nil || r.Producer != "" {
		t.Errorf("an hour after the reconnect, nothing pushed: rate %.0f, ETA %v ms, producer %q; want 0, none, unknown", r.RateBytesPerS, r.GetEtaMs(), r.Producer)
	}
	again.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(2 << 20)}}, at(3_600_500))
	r = again.build("orders", "archive", nil, nil, time.Hour, 3_600_500).Recordings[0]
	if r.GetCommittedPosition() != before.GetCommittedPosition() || r.LagBytes != before.LagBytes {
		t.Errorf("the new tracker resumed below: committed %d -> %d, lag %d -> %d; want neither to move", before.GetCommittedPosition(), r.GetCommittedPosition(), before.LagBytes, r.LagBytes)
	}

	live := k.take("ticks", 0)
	live.progress(&messages.RecordingProgress{Status: &messages.RecordingStatus{Publishers: proto.Int32(2), Published: 5, Acknowledged: 5}}, at(1_000))
	live.stopped = true
	st := k.take("ticks", 2_000).build("ticks", "transport", nil, nil, time.Hour, 3_000)
	if st.State != "starting" || st.Recordings[0].Publishers != nil {
		t.Errorf("transport, not subscribed again: %s, publishers %v; want starting, not known", st.State, st.Recordings[0].Publishers)
	}
}

// One recording of a stream stuck (its records pending, never acknowledged) while a
// concurrent publisher's recording moves is a stalled stream, naming the recording; one
// held back by design (waiting for an earlier recording) is not.
func TestOneStuckRecordingStallsTheStreamWhileAnotherMoves(t *testing.T) {
	const stall = time.Minute
	for _, waiting := range []bool{false, true} {
		s := newStreamStatus(0)
		s.listed = true
		s.known(&messages.RecordingInfo{RecordingId: 1, Live: true, StopPosition: -1, RecordedPosition: 1 << 40}, 0)
		s.known(&messages.RecordingInfo{RecordingId: 2, Live: true, StopPosition: -1, RecordedPosition: 1 << 20}, 0)
		var waits []progress.Wait
		if waiting {
			waits = []progress.Wait{{ID: 2, Behind: 1, Why: progress.WaitExtended}}
		} else {
			s.progress(&messages.RecordingProgress{RecordingId: 2, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0), PendingRecords: 100}}, at(0))
		}
		var st *messages.StreamStatus
		for now := int64(500); now <= 2*stall.Milliseconds(); now += 500 {
			s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(now * 10)}}, at(now))
			st = s.build("orders", "archive", nil, waits, stall, now)
		}
		switch {
		case waiting && !st.Healthy:
			t.Errorf("recording 2 waiting by design: %s, %q; want healthy", st.State, st.Reason)
		case !waiting && (st.Healthy || !strings.Contains(st.Reason, "recording 2 has 100 records pending")):
			t.Errorf("recording 2 stuck for two minutes while recording 1 moves: %s, healthy %t, %q; want stalled, naming it", st.State, st.Healthy, st.Reason)
		}
	}
}

// A recording first listed long after the stream started (a publisher's new recording,
// behind by what it recorded before the listing) is not stalled at once: its own clock runs
// from when it was first seen.
func TestANewRecordingLongAfterTheStartIsNotStalledAtOnce(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 1, Live: true, StopPosition: -1, RecordedPosition: 0}, 0)
	s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0)}}, at(0))
	for now := int64(0); now <= 10*stall.Milliseconds(); now += 500 {
		if st := s.build("orders", "archive", nil, nil, stall, now); !st.Healthy {
			t.Fatalf("recording 1 idle at %d ms: %s, %q", now, st.State, st.Reason)
		}
	}
	at := 10*stall.Milliseconds() + 500
	s.known(&messages.RecordingInfo{RecordingId: 2, Live: true, StopPosition: -1, RecordedPosition: 1 << 20}, at)
	if st := s.build("orders", "archive", nil, nil, stall, at); !st.Healthy {
		t.Fatalf("recording 2 first seen, behind: %s, %q; want healthy until the threshold", st.State, st.Reason)
	}
	if st := s.build("orders", "archive", nil, nil, stall, at+stall.Milliseconds()+1); st.Healthy {
		t.Fatalf("recording 2 behind for the threshold, nothing committed: %s; want stalled", st.State)
	}
}

// A recording that waited its turn (behind an earlier one) is not stalled as soon as its
// turn comes: its clock runs from when it stopped waiting.
func TestARecordingWhoseTurnComesIsNotStalledAtOnce(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 1, StopMs: 1, StopPosition: 1 << 30, RecordedPosition: 1 << 30}, 0)
	s.known(&messages.RecordingInfo{RecordingId: 2, Live: true, StopPosition: -1, RecordedPosition: 1 << 20}, 0)
	s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0)}}, at(0))
	waits := []progress.Wait{{ID: 2, Behind: 1, Why: progress.WaitStopped}}
	end := 10 * stall.Milliseconds()
	for now := int64(500); now <= end; now += 500 {
		s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(now)}}, at(now))
		if st := s.build("orders", "archive", nil, waits, stall, now); !st.Healthy {
			t.Fatalf("recording 2 waiting at %d ms: %s, %q", now, st.State, st.Reason)
		}
	}
	s.persisted(&messages.CheckpointPersisted{RecordingId: 1, Position: 1 << 30, Completed: true}, at(end))
	if st := s.build("orders", "archive", nil, nil, stall, end+500); !st.Healthy {
		t.Fatalf("recording 2, 500 ms into its turn: %s, %q; want healthy until the threshold", st.State, st.Reason)
	}
	if st := s.build("orders", "archive", nil, nil, stall, end+stall.Milliseconds()+1); st.Healthy {
		t.Fatalf("recording 2 behind for the threshold after its turn came: %s; want stalled", st.State)
	}
}

// A checkpoint saved before the tracker's push that carries its position (commits reach the
// checkpointer at once, pushes at most every push interval) is progress: a recording whose
// every commit is saved first, pushed after, is not stalled while it moves.
func TestACommitSavedBeforeItsPushIsProgress(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 1, Live: true, StopPosition: -1, RecordedPosition: 1 << 40}, 0)
	s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0), PendingRecords: 5}}, at(0))
	for now := int64(250); now <= 2*stall.Milliseconds(); now += 250 {
		pos := now * 4
		if moved := s.persisted(&messages.CheckpointPersisted{RecordingId: 1, Position: pos}, at(now)); !moved {
			t.Fatalf("the checkpoint at %d, beyond the committed position shown, is not progress", pos)
		}
		s.progress(&messages.RecordingProgress{RecordingId: 1, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos), PendingRecords: 5}}, at(now))
		if st := s.build("orders", "archive", nil, nil, stall, now); !st.Healthy {
			t.Fatalf("at %d ms, committed %d and moving: %s, %q; want healthy", now, pos, st.State, st.Reason)
		}
	}
	if moved := s.persisted(&messages.CheckpointPersisted{RecordingId: 1, Position: 1000}, at(2*stall.Milliseconds()+250)); moved {
		t.Fatal("a checkpoint below the committed position shown is progress")
	}
}

// In transport mode nothing pends while messages are lost (at most once), so the stall rule
// never fires: a stream whose every message for stall_after is lost, none acknowledged, is
// unhealthy, saying so; one whose losses stopped, or that has acknowledgements among them,
// is live.
func TestATransportStreamLosingEveryMessageIsUnhealthy(t *testing.T) {
	const stall = time.Minute
	push := func(s *streamStatus, acked, failed uint64, now int64) {
		s.progress(&messages.RecordingProgress{RecordingId: 0, Status: &messages.RecordingStatus{Published: acked + failed, Acknowledged: acked, Failed: failed, Publishers: proto.Int32(1)}}, at(now))
	}
	s := newStreamStatus(0)
	push(s, 0, 0, 0) // subscribed
	for now := int64(1000); now <= 2*stall.Milliseconds(); now += 1000 {
		push(s, 0, uint64(now/1000), now)
		st := s.build("live", "transport", nil, nil, stall, now)
		lost := now-1000 > stall.Milliseconds() // the first loss at 1 s
		if lost == st.Healthy || lost && !strings.Contains(st.Reason, "messages are lost and none was acknowledged") {
			t.Fatalf("at %d ms, every message lost: %s, healthy %t, %q", now, st.State, st.Healthy, st.Reason)
		}
	}
	if st := s.build("live", "transport", nil, nil, stall, 3*stall.Milliseconds()+1); !st.Healthy {
		t.Fatalf("no loss for a stall_after: %s, %q; want live", st.State, st.Reason)
	}

	// A first loss after a long quiet spell is not a minute of losses.
	s = newStreamStatus(0)
	push(s, 0, 0, 0)
	push(s, 0, 1, 5*stall.Milliseconds())
	if st := s.build("live", "transport", nil, nil, stall, 5*stall.Milliseconds()+1000); !st.Healthy {
		t.Fatalf("one loss after a quiet spell: %s, %q; want live", st.State, st.Reason)
	}

	s = newStreamStatus(0)
	push(s, 0, 0, 0)
	for now := int64(1000); now <= 2*stall.Milliseconds(); now += 1000 {
		push(s, uint64(now/1000), uint64(now/1000), now) // half lost, half acknowledged
		if st := s.build("live", "transport", nil, nil, stall, now); !st.Healthy {
			t.Fatalf("at %d ms, half the messages acknowledged: %s, %q; want live", now, st.State, st.Reason)
		}
	}
}

// at is the moment ms by both clocks.
func at(ms int64) moment { return moment{wallMs: ms, elapsedMs: ms} }

// A transport stream is live only while its reader's subscription is open: a reader that
// fails to subscribe, restarted in place, pushes its counts without one, and the stream
// stays starting, then stalls once stall_after passed (its messages are not received
// meanwhile). A subscription lost after it was open starts the stall clock again.
func TestATransportStreamIsLiveOnlyWhileSubscribed(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	unsubscribed := &messages.RecordingProgress{Status: &messages.RecordingStatus{}}
	subscribed := &messages.RecordingProgress{Status: &messages.RecordingStatus{Publishers: proto.Int32(1)}}

	s.progress(unsubscribed, at(1_000)) // a restarted reader's counts, no subscription
	if st := s.build("ticks", "transport", nil, nil, stall, 2_000); st.State != "starting" || !st.Healthy {
		t.Errorf("never subscribed, within stall_after: %s, healthy %v; want starting, healthy", st.State, st.Healthy)
	}
	s.progress(unsubscribed, at(50_000))
	if st := s.build("ticks", "transport", nil, nil, stall, stall.Milliseconds()+1); st.State != "stalled" || st.Healthy || !strings.Contains(st.Reason, "not started") {
		t.Errorf("never subscribed, past stall_after: %s, healthy %v, %q; want stalled, not healthy, not started", st.State, st.Healthy, st.Reason)
	}

	s.progress(subscribed, at(70_000))
	if st := s.build("ticks", "transport", nil, nil, stall, 70_000); st.State != "live" || !st.Healthy {
		t.Errorf("subscribed: %s, healthy %v; want live, healthy", st.State, st.Healthy)
	}
	s.progress(unsubscribed, at(100_000)) // the subscription lost: its reader restarted
	if st := s.build("ticks", "transport", nil, nil, stall, 100_000+stall.Milliseconds()); st.State != "starting" || !st.Healthy {
		t.Errorf("subscription lost, within stall_after of it: %s, healthy %v; want starting, healthy", st.State, st.Healthy)
	}
	if st := s.build("ticks", "transport", nil, nil, stall, 100_001+stall.Milliseconds()); st.State != "stalled" || st.Healthy || !strings.Contains(st.Reason, "subscription closed") {
		t.Errorf("subscription lost, past stall_after: %s, healthy %v, %q; want stalled, not healthy, saying the subscription closed", st.State, st.Healthy, st.Reason)
	}
}

// A checkpoint failure stays listed, with its time, after a save succeeds (lesson 24:
// failures persist until superseded by one of their kind): the success ends the
// unhealthiness the failing saves caused, not the record of them.
func TestACheckpointFailureOutlivesTheSaveThatSucceedsAfterIt(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	s.listed = true
	s.written(&messages.StoreWritten{Failed: true}, 1_000)
	s.failure(&messages.Failure{AtMs: 1_000, Kind: "checkpoint", Message: "disk full"})
	now := 1_000 + stall.Milliseconds() + 1
	if st := s.build("orders", "archive", nil, nil, stall, now); st.Healthy {
		t.Fatalf("every save failed for longer than the threshold: healthy; want stalled")
	}
	s.written(&messages.StoreWritten{}, now+1)
	st := s.build("orders", "archive", nil, nil, stall, now+1)
	if !st.Healthy {
		t.Fatalf("after a save that succeeded: unhealthy (%q); want healthy", st.Reason)
	}
	if len(st.Failures) != 1 || st.Failures[0].Kind != "checkpoint" || st.Failures[0].AtMs != 1_000 || st.Failures[0].Message != "disk full" {
		t.Fatalf("failures after a save that succeeded: %v; want the checkpoint failure at 1000 ms, disk full", st.Failures)
	}
}

// A seed saved again lower (the recording's start moved back in the archive, segments
// attached again, before ferry began it: takeOn) is where what is committed of it starts:
// the status shows the committed position from there, and its moving as progress, not the
// first seed's position until the tracker passes it (shown stalled meanwhile).
func TestASeedSavedAgainLowerIsWhereTheCommittedPositionStarts(t *testing.T) {
	const stall = time.Minute
	s := newStreamStatus(0)
	s.listed = true
	s.known(&messages.RecordingInfo{RecordingId: 4, Live: true, StopPosition: -1, RecordedPosition: 1 << 30}, 0)
	s.persisted(&messages.CheckpointPersisted{RecordingId: 4, Position: 1 << 20, Seed: true}, at(0))
	// The tracker's first push, from the replay's start, may come before the seed is saved
	// again there.
	s.progress(&messages.RecordingProgress{RecordingId: 4, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(0), PendingRecords: 5}}, at(50))
	if moved := s.persisted(&messages.CheckpointPersisted{RecordingId: 4, Position: 0, Seed: true}, at(100)); moved {
		t.Fatal("a seed saved again is progress")
	}
	st := s.build("orders", "archive", nil, nil, stall, 100)
	if r := st.Recordings[0]; r.GetCommittedPosition() != 0 || r.GetCheckpointedPosition() != 0 {
		t.Fatalf("the seed saved again at 0: committed %d, checkpointed %d; want 0 and 0", r.GetCommittedPosition(), r.GetCheckpointedPosition())
	}
	for now := int64(1000); now <= 2*stall.Milliseconds(); now += 1000 {
		pos := now * 8 // below the first seed until the end
		if moved := s.progress(&messages.RecordingProgress{RecordingId: 4, Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(pos), PendingRecords: 5}}, at(now)); !moved {
			t.Fatalf("at %d ms, committed %d from the seed at 0: not progress", now, pos)
		}
		st := s.build("orders", "archive", nil, nil, stall, now)
		if r := st.Recordings[0]; !st.Healthy || r.GetCommittedPosition() != pos || now > 1000 && r.RateBytesPerS <= 0 {
			t.Fatalf("at %d ms, committed %d and moving: %s, %q, committed %d shown, rate %f", now, pos, st.State, st.Reason, r.GetCommittedPosition(), r.RateBytesPerS)
		}
	}
}
