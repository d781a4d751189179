package actors

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
)

// statusPushInterval is how often a stream supervisor pushes its status to the board.
const statusPushInterval = 500 * time.Millisecond

// defaultStallAfter is the health rule's default threshold.
const defaultStallAfter = 60 * time.Second

// streamStatus is the part of a stream supervisor that gathers what its actors push
// (RecordingProgress, FailureObserved, CheckpointPersisted, restarts) into the stream's
// status. It only ever reads state it was sent: never the archive, Pulsar or the store.
//
// Its times are milliseconds of the elapsed clock (Env.Elapsed), which the health rule and
// the rates measure intervals by, and 0 is never; only lastProgressMs is a time of day, to
// be shown. Measured by the time of day, a clock stepped back an hour (an NTP correction,
// an operator) would hide a stall for that hour, and one stepped forward would show one.
type streamStatus struct {
	recordings map[int64]*messages.RecordingStatus
	rates      map[int64]*rate
	failures   map[string]*messages.Failure
	restarts   uint64
	// lastProgressMs is the time of day of the last progress, and progressedAtMs its
	// moment by the elapsed clock; 0: never.
	lastProgressMs, progressedAtMs int64
	startedMs                      int64
	// idleAtMs is when a build last found nothing pending and nothing behind (0: never):
	// the stall clock of work that arrives after an idle spell runs from there, not from the
	// last progress before it.
	idleAtMs    int64
	storeWrites uint64
	lastWriteUs *int64
	// saveFailingSinceMs is when the checkpoint saves began to fail, every one since; 0
	// while the last one succeeded, or this incarnation has attempted none.
	// saveFailedSinceMs is that of the incarnations before, when their last save failed: a
	// failed save of this one goes on from there, so that a pipeline reconnecting more
	// often than stall_after, its every save failing, is still seen.
	saveFailingSinceMs, saveFailedSinceMs int64
	// listFailingSinceMs is when the listings of the stream's recordings began to fail,
	// every one since; 0 while the last one succeeded.
	listFailingSinceMs int64
	// recordedUnreadSinceMs is when the listings began to leave a live recording's recorded
	// position unread (the archive did not answer), every one since; 0 while the last one
	// read them all. Without it, a live recording's lag is not known: a replay that stopped
	// reading looks caught up.
	recordedUnreadSinceMs int64
	// lossSinceMs is when the transport mode's live reader counted the first message lost
	// (a failed publish, or one broken off) since its last acknowledgement, and lastLossMs
	// the last one; 0: none.
	lossSinceMs, lastLossMs int64
	// listed: a listing of the stream's recordings was acted on (start_position latest may
	// defer the first).
	listed bool
	// subscribed: the transport mode's live reader last pushed its status with its
	// subscription open (its publishers counted); unsubscribedAtMs is when a push last said
	// the subscription was gone after it had been open (0: never), from which the stall
	// rule's clock runs. A reader restarted in place pushes its counts without one.
	subscribed       bool
	unsubscribedAtMs int64
	stopped          bool
	// carried holds each recording's counts at the end of the previous incarnation (see
	// resume): a tracker counts from 0.
	carried map[int64]counts
	// forgotten are completed recordings no longer shown (shownCompleted).
	forgotten map[int64]bool
	// movedAtMs is, per recording, when its committed position last moved, or a build first
	// saw it or last found it waiting for another or with nothing pending and nothing behind:
	// the stall clock of one recording, so that one stuck while another moves is seen.
	movedAtMs map[int64]int64
}

// counts are a recording's counters.
type counts struct{ published, acknowledged, duplicates, failed uint64 }

func newStreamStatus(elapsedMs int64) *streamStatus {
	return &streamStatus{recordings: map[int64]*messages.RecordingStatus{}, rates: map[int64]*rate{}, failures: map[string]*messages.Failure{},
		carried: map[int64]counts{}, forgotten: map[int64]bool{}, movedAtMs: map[int64]int64{}, startedMs: elapsedMs}
}

// statusKeeper keeps each stream's status from one incarnation of its supervisor to the
// next: after a reconnect (a new pipeline) or a restart the status goes on with the last
// failures (lesson 24), what was committed and checkpointed (so that the first push of the
// new incarnation is not taken for progress), and counters that never go down.
type statusKeeper struct {
	mu sync.Mutex
	m  map[string]*streamStatus
}

// take returns stream name's status, resumed, or a new one; a nil keeper keeps nothing.
func (k *statusKeeper) take(name string, elapsedMs int64) *streamStatus {
	if k == nil {
		return newStreamStatus(elapsedMs)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*streamStatus{}
	}
	s := k.m[name]
	if s == nil {
		s = newStreamStatus(elapsedMs)
		k.m[name] = s
		return s
	}
	s.resume(elapsedMs)
	return s
}

// resume prepares a status for a new incarnation of the stream's actors: the counts so far
// become the base of the new trackers' counts, what was pending is the new trackers' to
// report, and the stall rule's clock starts again. What only the last incarnation's actors
// kept current — the commit rate, the producers' state, the publishers connected — is
// not known until the new ones report it.
func (s *streamStatus) resume(elapsedMs int64) {
	s.startedMs, s.stopped, s.listed, s.subscribed, s.unsubscribedAtMs = elapsedMs, false, false, false, 0
	if s.saveFailingSinceMs > 0 { // the new incarnation has saved nothing yet, nor failed to
		s.saveFailedSinceMs, s.saveFailingSinceMs = s.saveFailingSinceMs, 0
	}
	s.rates = map[int64]*rate{} // a new tracker may begin below the last committed position
	for id, r := range s.recordings {
		s.carried[id] = counts{r.Published, r.Acknowledged, r.Duplicates, r.Failed}
		r.PendingRecords, r.PendingBytes = 0, 0
		r.RateBytesPerS, r.Producer, r.Publishers = 0, "", nil
	}
}

// stop is the stream's stop (its stream failed, ferry drains, or the connection to Aeron was
// lost): nothing moves until a new incarnation reports, so no commit rate, ETA, producer or
// transport publishers are shown meanwhile (an outage's graphs would draw the last ones
// flat); positions and counts stay.
func (s *streamStatus) stop() {
	s.stopped = true
	s.rates = map[int64]*rate{}
	for _, r := range s.recordings {
		r.RateBytesPerS, r.Producer, r.Publishers = 0, "", nil
	}
}

// shownCompleted is how many completed recordings a stream's status keeps, the newest:
// a publisher that restarts every hour makes hundreds a month, each a dozen series in
// /metrics. Recordings not completed are always kept.
const shownCompleted = 10

func (s *streamStatus) recording(id int64) *messages.RecordingStatus {
	r := s.recordings[id]
	if r == nil {
		r = &messages.RecordingStatus{RecordingId: id}
		if s.forgotten[id] {
			return r // completed and past shownCompleted: taken and dropped
		}
		s.recordings[id] = r
	}
	return r
}

// forgetOldCompleted drops all but the newest shownCompleted completed recordings.
func (s *streamStatus) forgetOldCompleted() {
	var done []int64
	for id, r := range s.recordings {
		if r.Completed {
			done = append(done, id)
		}
	}
	if len(done) <= shownCompleted {
		return
	}
	slices.Sort(done)
	for _, id := range done[:len(done)-shownCompleted] {
		delete(s.recordings, id)
		delete(s.rates, id)
		delete(s.carried, id)
		delete(s.movedAtMs, id)
		s.forgotten[id] = true
	}
}

// recordedRead notes at elapsedMs whether a listing read the recorded position of every
// live recording the stream publishes (recordedUnreadSinceMs).
func (s *streamStatus) recordedRead(all bool, elapsedMs int64) {
	switch {
	case all:
		s.recordedUnreadSinceMs = 0
	case s.recordedUnreadSinceMs == 0:
		s.recordedUnreadSinceMs = elapsedMs
	}
}

// known records what discovery says of a recording at atMs.
func (s *streamStatus) known(info *messages.RecordingInfo, atMs int64) {
	r := s.recording(info.RecordingId)
	r.SessionId, r.StartPosition = info.SessionId, info.StartPosition
	r.StopPosition = nil // live (again, if extended)
	if !info.Live {
		r.StopPosition = proto.Int64(info.StopPosition)
	}
	if info.RecordedPosition >= 0 {
		r.RecordedPosition, r.RecordedAtMs = proto.Int64(info.RecordedPosition), proto.Int64(atMs)
	}
}

// recordedSoFar raises a live recording's recorded position, discovery's last look (up to a
// listing old), to what the replay read or Pulsar acknowledged since in this run, if
// further: the archive recorded that much, and a status never shows recorded behind what
// this run read or committed. recorded_at_ms goes with it to when that was read or
// acknowledged. A position from a checkpoint of an earlier run (no time of this run) does
// not raise it: above what the archive lists, it tells of a recording truncated or
// replaced (lesson 14), which the status must not hide. Nor is a stopped recording's raised
// (the listing's stop is exact), or one not listed yet's (how far, and whether live, is
// not known).
func recordedSoFar(r *messages.RecordingStatus) {
	if r.RecordedPosition == nil || r.StopPosition != nil {
		return
	}
	raise := func(p *int64, atMs ...*int64) {
		if p == nil || *p <= *r.RecordedPosition || !slices.ContainsFunc(atMs, func(at *int64) bool { return at != nil }) {
			return
		}
		r.RecordedPosition = proto.Int64(*p)
		for _, at := range atMs {
			if at != nil && *at > r.GetRecordedAtMs() {
				r.RecordedAtMs = proto.Int64(*at)
			}
		}
	}
	raise(r.ReplayPosition, r.LastReadMs)
	// Committed by an acknowledgement, or by a checkpoint persisted ahead of the tracker's push.
	raise(r.CommittedPosition, r.LastAckMs, r.LastCheckpointMs)
}

// rate is the committed position's speed, smoothed over time: each push's speed since the
// one before weighs by how long that was (a push soon after another says little), and while
// nothing moves the rate shown is at most the last step over the time since it (shown). A
// status build only reads it: sampled by the builds too, which run on their own clock, a
// push just after one would be measured over a few milliseconds, hundreds of times its speed.
type rate struct {
	position, atMs int64
	bytesPerS      float64
	// step is the last move of the position, and movedAtMs when it came.
	step, movedAtMs int64
}

const (
	// rateTauMs is the smoothing's time constant: a speed held for this long has about two
	// thirds of its weight in the rate.
	rateTauMs = 1_500.0
	// rateIdleMs: a rate whose position has not moved for this long is shown capped (shown);
	// rateStillMs: for this long, it is 0.
	rateIdleMs  = 1_000
	rateStillMs = 60_000
	// minEtaRate is the lowest rate shown, in bytes a second; below it the rate is 0 and
	// there is no ETA.
	minEtaRate = 1.0
	// maxEtaMs is the longest ETA shown (a year); a longer one is none.
	maxEtaMs = 365 * 24 * 3600 * 1000.0
)

func (x *rate) sample(position, atMs int64) {
	if x.atMs == 0 || atMs <= x.atMs {
		if x.atMs == 0 {
			x.position, x.atMs, x.movedAtMs = position, atMs, atMs
		}
		return
	}
	dt := float64(atMs - x.atMs)
	v := float64(position-x.position) * 1000 / dt
	weight := 1 - math.Exp(-dt/rateTauMs)
	x.bytesPerS = weight*v + (1-weight)*x.bytesPerS
	if position != x.position {
		x.step, x.movedAtMs = position-x.position, atMs
	}
	x.position, x.atMs = position, atMs
}

// shown is the rate at atMs: the smoothed one, and, once the position has not moved for
// rateIdleMs, no more than its last step over the time since (a commit now would show no
// more), so that it falls while nothing moves; 0 once nothing moved for rateStillMs.
func (x *rate) shown(atMs int64) float64 {
	switch idle := atMs - x.movedAtMs; {
	case idle >= rateStillMs:
		return 0
	case idle >= rateIdleMs:
		return min(x.bytesPerS, float64(x.step)*1000/float64(idle))
	}
	return x.bytesPerS
}

// progress takes the fields a tracker (or the transport mode's live reader) owns from its
// push. A committed position beyond the highest one shown is progress, and is shown; one
// below it (a new tracker, resumed from the persisted checkpoint, its records acknowledged
// again) is neither: what Pulsar acknowledged does not go back. The live reader has no
// positions to commit, and there a new acknowledgement is progress. Its first push says it
// subscribed.
//
// It reports whether the recording moved on, or has nothing to move on to: progress, or its
// committed position at least where the archive last said it was recorded to (the restart
// strategy's progress, so that a quiet recording's replay failing now and then is not
// stuck). The live reader has only progress: in transport mode "nothing pending" is true of
// every new reader, also of one that fails at every message.
func (s *streamStatus) progress(p *messages.RecordingProgress, now moment) (movedOn bool) {
	r, t := s.recording(p.RecordingId), p.Status
	c := s.carried[p.RecordingId]
	switch {
	case t.CommittedPosition != nil:
		// The first push (a replay's start: where it resumes, or the seed of a start
		// position inside the recording) moves nothing; later ones move from it.
		if r.CommittedPosition != nil && *t.CommittedPosition > *r.CommittedPosition {
			movedOn = true
			s.progressed(p.RecordingId, now)
		}
		if r.CommittedPosition == nil || *t.CommittedPosition > *r.CommittedPosition {
			r.CommittedPosition = proto.Int64(*t.CommittedPosition)
		}
		movedOn = movedOn || r.RecordedPosition != nil && *t.CommittedPosition >= *r.RecordedPosition
	case c.acknowledged+t.Acknowledged > r.Acknowledged:
		movedOn = true
		s.progressed(p.RecordingId, now)
	}
	if t.CommittedPosition == nil {
		switch {
		case c.acknowledged+t.Acknowledged > r.Acknowledged:
			s.lossSinceMs = 0
		case c.failed+t.Failed > r.Failed:
			s.lastLossMs = now.elapsedMs
			if s.lossSinceMs == 0 {
				s.lossSinceMs = now.elapsedMs
			}
		}
	}
	if open := t.Publishers != nil; open != s.subscribed {
		// (Only the live reader counts publishers: a tracker's pushes leave it false.)
		s.subscribed = open
		if !open {
			s.unsubscribedAtMs = now.elapsedMs
		}
	}
	r.ReplayPosition = t.ReplayPosition
	r.PendingRecords, r.PendingBytes = t.PendingRecords, t.PendingBytes
	r.Published, r.Acknowledged = c.published+t.Published, c.acknowledged+t.Acknowledged
	r.Duplicates, r.Failed = c.duplicates+t.Duplicates, c.failed+t.Failed
	// A new tracker (a reconnect, a restart, a reopened recording) has read and seen
	// acknowledged nothing yet: the last ones of the one before are still the last.
	if t.LastReadMs != nil {
		r.LastReadMs = t.LastReadMs
	}
	if t.LastAckMs != nil {
		r.LastAckMs = t.LastAckMs
	}
	r.Publishers = t.Publishers
	if r.CommittedPosition != nil && t.CommittedPosition != nil {
		x := s.rates[p.RecordingId]
		if x == nil {
			x = &rate{}
			s.rates[p.RecordingId] = x
		}
		x.sample(*r.CommittedPosition, now.elapsedMs)
		r.RateBytesPerS = x.bytesPerS
	}
	return movedOn
}

// progressed notes that recording id moved on, now.
func (s *streamStatus) progressed(id int64, now moment) {
	s.lastProgressMs, s.progressedAtMs, s.movedAtMs[id] = now.wallMs, now.elapsedMs, now.elapsedMs
}

// persisted takes a checkpoint the store holds. Only committed positions are saved, so one
// beyond the committed position shown is the tracker's commit ahead of its push (commits go
// to the checkpointer at once, pushes at most every push interval): progress, as it would
// be in the push. A seed, saved before anything of the recording is committed, is where
// its committed position starts, also below one shown (a seed saved again lower: its start
// moved back); it is not progress. It reports whether the recording moved on (see progress).
func (s *streamStatus) persisted(c *messages.CheckpointPersisted, now moment) (movedOn bool) {
	r := s.recording(c.RecordingId)
	r.CheckpointedPosition = proto.Int64(c.Position)
	if c.Seed {
		r.CommittedPosition = proto.Int64(c.Position)
		delete(s.rates, c.RecordingId) // a rate from above the seed would be negative
	}
	if r.CommittedPosition != nil && *r.CommittedPosition < c.Position {
		movedOn = true
		s.progressed(c.RecordingId, now)
	}
	if r.CommittedPosition == nil || *r.CommittedPosition < c.Position {
		r.CommittedPosition = proto.Int64(c.Position)
	}
	r.LastCheckpointMs = proto.Int64(now.wallMs)
	if c.Completed {
		r.Completed = true
		r.PendingRecords, r.PendingBytes = 0, 0
	}
	return movedOn
}

// reopened takes a completed recording back to publishing (extended after it was completed,
// or read again): its new tracker counts from zero, on top of what the finished one counted.
// One past shownCompleted is shown again, from here on: it is no longer completed.
func (s *streamStatus) reopened(id int64) {
	delete(s.forgotten, id)
	r := s.recording(id)
	r.Completed = false
	s.carried[id] = counts{r.Published, r.Acknowledged, r.Duplicates, r.Failed}
}

// written takes the checkpointer's report of a store write. A failed one is a checkpoint
// failure, reported as such, and not counted.
func (s *streamStatus) written(w *messages.StoreWritten, elapsedMs int64) {
	s.lastWriteUs = proto.Int64(w.TookUs)
	switch {
	case !w.Failed:
		s.storeWrites++
		s.saveFailingSinceMs, s.saveFailedSinceMs = 0, 0
	case s.saveFailedSinceMs > 0:
		s.saveFailingSinceMs, s.saveFailedSinceMs = s.saveFailedSinceMs, 0
	case s.saveFailingSinceMs == 0:
		s.saveFailingSinceMs = max(elapsedMs-w.TookUs/1000, 1) // since the attempt began (a hung one, long ago)
	}
}

func (s *streamStatus) failure(f *messages.Failure) {
	s.failures[f.Kind] = f
}

// stored takes what the store held for a recording at start: its checkpoint is committed,
// and a completed one is done.
func (s *streamStatus) stored(cp store.Checkpoint) {
	r := s.recording(cp.RecordingID)
	if r.CheckpointedPosition == nil || *r.CheckpointedPosition < cp.Position { // a restart's snapshot may be older
		r.CheckpointedPosition = proto.Int64(cp.Position)
	}
	if r.CommittedPosition == nil || *r.CommittedPosition < cp.Position {
		r.CommittedPosition = proto.Int64(cp.Position)
	}
	if cp.Completed {
		r.Completed = true
	}
	r.Forgotten = cp.Forgotten
}

// build is the stream's status now, with the health rule applied: unhealthy when the
// stream failed; when every checkpoint save failed for stallAfter (what Pulsar acknowledged
// meanwhile is not persisted, although the committed positions move); when records are
// pending, or recorded and not committed, and no committed position moved for stallAfter
// (since the last progress, the start, or the last build that found the stream idle,
// whichever is latest; records of a recording held back for the restart grace (quiet) are
// not counted, as they wait by design); or when it has not started (no listing of its recordings, in transport mode no
// subscription) for stallAfter. A recording the replay has not reached yet is behind by
// what was recorded past its checkpoint, or its start.
func (s *streamStatus) build(name, mode string, failed error, waits []progress.Wait, stallAfter time.Duration, elapsedMs int64) *messages.StreamStatus {
	st := &messages.StreamStatus{Name: name, Mode: mode, Restarts: s.restarts, Healthy: true,
		StoreWrites: s.storeWrites, LastStoreWriteUs: s.lastWriteUs}
	for _, w := range waits {
		st.WaitingRecordings = append(st.WaitingRecordings, w.ID)
		st.Waiting = append(st.Waiting, &messages.WaitingRecording{RecordingId: w.ID, Behind: w.Behind, Reason: w.Why.String()})
	}
	quiet := map[int64]bool{} // held back for the restart grace, by design
	for _, w := range waits {
		quiet[w.ID] = w.Why == progress.WaitQuiet
	}
	var pending, lag, overdue int64
	// stuck is the recording whose committed position has not moved for longest while it
	// had records pending, or behind and not waiting by design; stuckFor is for how long.
	var stuck *messages.RecordingStatus
	var stuckFor int64
	s.forgetOldCompleted()
	for _, id := range slices.Sorted(maps.Keys(s.recordings)) {
		r := proto.Clone(s.recordings[id]).(*messages.RecordingStatus)
		r.LagBytes, r.EtaMs = 0, nil
		recordedSoFar(r)
		if r.Completed {
			r.RateBytesPerS, r.Producer = 0, "closed"
		} else if mode != "transport" {
			base := r.StartPosition
			if r.CommittedPosition != nil {
				base = *r.CommittedPosition
			}
			r.LagBytes = max(r.GetRecordedPosition(), r.GetReplayPosition(), base) - base
			if x := s.rates[id]; x != nil {
				// Nothing committed for a while: the rate falls rather than stay at its last
				// value while nothing moves.
				r.RateBytesPerS = x.shown(elapsedMs)
				s.recordings[id].RateBytesPerS = r.RateBytesPerS
			}
			if r.RateBytesPerS < minEtaRate {
				r.RateBytesPerS = 0
				s.recordings[id].RateBytesPerS = 0
			}
			if eta := float64(r.LagBytes) / r.RateBytesPerS * 1000; r.LagBytes > 0 && r.RateBytesPerS > 0 && eta < maxEtaMs {
				r.EtaMs = proto.Int64(int64(eta))
			}
		}
		pending += r.PendingRecords
		lag += r.LagBytes
		if !quiet[id] {
			overdue += r.LagBytes
		}
		_, waiting := quiet[id]
		if _, seen := s.movedAtMs[id]; !seen {
			s.movedAtMs[id] = elapsedMs // first seen: its clock runs from here, not from the start
		}
		switch {
		case r.Completed:
		case waiting, r.PendingRecords == 0 && r.LagBytes == 0:
			// Waiting by design, or idle: the clock of work it takes up later runs from here.
			s.movedAtMs[id] = elapsedMs
		default:
			if f := elapsedMs - max(s.movedAtMs[id], s.startedMs); f > stuckFor {
				stuck, stuckFor = r, f
			}
		}
		st.Recordings = append(st.Recordings, r)
	}
	for _, kind := range slices.Sorted(maps.Keys(s.failures)) {
		st.Failures = append(st.Failures, proto.Clone(s.failures[kind]).(*messages.Failure))
	}
	if s.lastProgressMs > 0 {
		st.LastProgressMs = proto.Int64(s.lastProgressMs)
	}
	if pending == 0 && overdue == 0 {
		s.idleAtMs = elapsedMs
	}
	since := max(s.progressedAtMs, s.startedMs, s.idleAtMs)
	switch {
	case failed != nil:
		st.State, st.Healthy = "failed", false
		st.Reason = "failed: " + failed.Error()
	case s.stopped:
		st.State = "stopped"
	case s.saveFailingSinceMs > 0 && elapsedMs-s.saveFailingSinceMs > stallAfter.Milliseconds():
		st.State, st.Healthy = "stalled", false
		st.Reason = fmt.Sprintf("stalled: every checkpoint save failed for %s: what Pulsar acknowledged meanwhile is not persisted, and a restart would publish it again; see failures%s",
			time.Duration(elapsedMs-s.saveFailingSinceMs)*time.Millisecond, kinds(st.Failures))
	case s.listed && s.listFailingSinceMs > 0 && elapsedMs-s.listFailingSinceMs > stallAfter.Milliseconds():
		st.State, st.Healthy = "stalled", false
		st.Reason = fmt.Sprintf("stalled: every listing of the stream's recordings failed for %s: new recordings, and how far live ones have grown, are not seen; see failures%s",
			time.Duration(elapsedMs-s.listFailingSinceMs)*time.Millisecond, kinds(st.Failures))
	case s.listed && s.recordedUnreadSinceMs > 0 && elapsedMs-s.recordedUnreadSinceMs > stallAfter.Milliseconds():
		st.State, st.Healthy = "stalled", false
		st.Reason = fmt.Sprintf("stalled: how far the archive recorded the stream's live recordings could not be read for %s: how far behind them the stream is, is not known (lag_bytes counts only what was read), and a replay that stopped reading would look caught up; see failures%s",
			time.Duration(elapsedMs-s.recordedUnreadSinceMs)*time.Millisecond, kinds(st.Failures))
	case (pending > 0 || overdue > 0) && elapsedMs-since > stallAfter.Milliseconds():
		st.State, st.Healthy = "stalled", false
		where := "nothing pending: the replay reads nothing from the archive"
		if pending > 0 {
			where = "Pulsar acknowledges nothing (an unreachable broker, an expired token or a missing permission show in the Pulsar client's log lines, lib=pulsar; " +
				"so does a send the broker refused, \"Received send error from server\", after which the client calls none of the producer's sends back: ferry replaces a producer that answered nothing for twice stall_after)"
		}
		st.Reason = fmt.Sprintf("stalled: %d records pending, %d bytes behind, and no committed_position moved for %s; %s; see failures%s",
			pending, lag, time.Duration(elapsedMs-since)*time.Millisecond, where, kinds(st.Failures))
	case stuck != nil && stuckFor > stallAfter.Milliseconds():
		// Another recording of the stream moves: only this one is stuck.
		st.State, st.Healthy = "stalled", false
		st.Reason = fmt.Sprintf("stalled: recording %d has %d records pending and is %d bytes behind, and its committed_position has not moved for %s while the stream's others did; see failures%s",
			stuck.RecordingId, stuck.PendingRecords, stuck.LagBytes, time.Duration(stuckFor)*time.Millisecond, kinds(st.Failures))
	case mode == "transport" && !s.subscribed || mode != "transport" && !s.listed:
		st.State = "starting"
		if waited := elapsedMs - max(s.startedMs, s.unsubscribedAtMs); waited > stallAfter.Milliseconds() {
			what := "no listing of its recordings succeeded (or, with start_position latest, could read the live ends)"
			if mode == "transport" {
				what = "its live subscription is not open"
			}
			st.State, st.Healthy = "stalled", false
			st.Reason = fmt.Sprintf("stalled: not started after %s: %s; see failures%s", time.Duration(waited)*time.Millisecond, what, kinds(st.Failures))
			if mode == "transport" && s.unsubscribedAtMs > s.startedMs {
				st.Reason = fmt.Sprintf("stalled: its live subscription closed %s ago and is not open again (what is published meanwhile is not received: transport mode is at most once); see failures%s", time.Duration(waited)*time.Millisecond, kinds(st.Failures))
			}
		}
	case mode == "transport" && s.lossSinceMs > 0 && elapsedMs-s.lossSinceMs > stallAfter.Milliseconds() && elapsedMs-s.lastLossMs <= stallAfter.Milliseconds():
		// At most once: nothing pends, and the stall rule above never fires, while every
		// message is lost.
		st.State, st.Healthy = "stalled", false
		st.Reason = fmt.Sprintf("stalled: messages are lost and none was acknowledged for %s (transport mode, at most once); see failures%s",
			time.Duration(elapsedMs-s.lossSinceMs)*time.Millisecond, kinds(st.Failures))
	case mode == "transport":
		st.State = "live"
	case pending > 0 || lag > 0:
		st.State = "replaying"
	default:
		st.State = "caught-up"
	}
	return st
}

func kinds(fs []*messages.Failure) string {
	if len(fs) == 0 {
		return " (none recorded)"
	}
	var k []string
	for _, f := range fs {
		k = append(k, f.Kind)
	}
	return " (" + strings.Join(k, ", ") + ")"
}

// statusPush is the stream supervisor's timer message to push its status.
type statusPush struct{}

// restarted is a restart of one of the stream's actors, seen on the event stream.
type restarted struct{}

// startStatus starts the stream's status timer and counts its actors' restarts.
func (s *streamSupervisor) startStatus(ctx actor.Context) func() {
	self, system := ctx.Self(), ctx.ActorSystem()
	prefix := self.Id + "/"
	sub := system.EventStream.Subscribe(func(evt any) {
		if e, ok := evt.(*actor.SupervisorEvent); ok && e.Directive == actor.RestartDirective && strings.HasPrefix(e.Child.Id, prefix) {
			sendToSelf(system, self, &restarted{}) // published on the stream's goroutine
		}
	})
	stop := make(chan struct{})
	ticker := time.NewTicker(statusPushInterval)
	if !s.env.tasks().Go(func() {
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				system.Root.Send(self, &statusPush{})
			}
		}
	}) {
		ticker.Stop()
	}
	return func() {
		system.EventStream.Unsubscribe(sub)
		close(stop)
	}
}

// pushStatus hands the stream's status to the board.
func (s *streamSupervisor) pushStatus() {
	if s.env.Board == nil {
		return
	}
	mode := "archive"
	if s.cfg.Transport {
		mode = "transport"
	}
	var waits []progress.Wait
	if s.schedule != nil {
		waits = s.schedule.Waits()
	}
	stall := s.cfg.StallAfter
	if stall <= 0 {
		stall = defaultStallAfter
	}
	s.env.Board.SetStream(s.status.build(s.cfg.Def.Name, mode, s.failed, waits, stall, s.env.elapsedMs()))
}
