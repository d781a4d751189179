package actors

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// streamSupervisor is the StreamSupervisor of one stream: the parent of its Discovery,
// Checkpointer and per-recording actors, and the owner of its progress.Schedule. It starts
// the actors of every recording the schedule lets publish, stops them once the recording's
// final checkpoint is persisted (lesson 5), and fails the stream, loudly and for good, when
// its strategy gives up on a child or a recording vanished before it was published
// (lesson 14). Other streams keep running.
//
// Its mailbox holds discovery rounds (one at a time), checkpoint notices (one per save) and
// drain messages.
type streamSupervisor struct {
	env      *Env
	cfg      *StreamConfig
	onFailed func(name string, class supervisor.Class, err error)
	// crashed is set by the streamGuardian when this supervisor itself failed; the next
	// message it handles fails the stream.
	crashed *crash

	schedule      *progress.Schedule
	scheduleClock time.Time // the schedule's listing times count from it (monotonic)
	known         map[int64]*messages.RecordingInfo
	skip          func(id int64) bool
	// latestFrom: with StartLatest, where each recording from the lowest live one at the
	// first listing on begins: a live one at its live end as read then (every live one, so
	// that no concurrent publisher is left out, lesson 11), a stopped one at its stop; each
	// is seeded there at once (see decideLatest).
	latestFrom     map[int64]int64
	latestDeferred bool  // the choice waited for a listing that could read the live ends
	latestBegins   int64 // the recording the choice begins the stream at (skip leaves out those below)
	// leftOut: the live recordings the start position leaves out, each said once.
	leftOut         map[int64]bool
	storedCompleted map[int64]bool
	// listedStops is where each recording stopped when a listing first showed it stopped
	// (or, extended, stopped again further on), as its checkpoint keeps it or the
	// checkpointer was told (RecordingListedStopped) to store: at a run's first listing,
	// what tells a recording the archive truncated while ferry was down (checkTail).
	listedStops map[int64]stopMark
	// finalAt is where each recording ferry published to its end ended: its final
	// checkpoint, stored (storedCompleted) or persisted in this run (finished, completed).
	finalAt map[int64]int64
	// reopenings counts how often each recording was published again after an extension.
	reopenings map[int64]int
	// rechecking: read again from its last record, listed stopped at its end at another
	// time (reopen); its finalAt stays until that replay completes it again.
	rechecking map[int64]bool
	// recheckAgain: listed stopped at its end at yet another time while read again.
	recheckAgain map[int64]bool
	stored       map[int64]bool
	origins      storedOrigins // of the stored checkpoints that know their recording's origin
	completed    map[int64]bool
	finished     map[int64]bool // final checkpoint persisted, schedule not yet told
	startChecked bool           // the configured start recording was found
	running      map[int64]*recordingPIDs
	checkpointer *actor.PID
	// checkpointerGone: the strategy gave the checkpointer up (a corrupt store, or a
	// restart it refused); nothing more can be persisted, so a drain does not wait for
	// its flush.
	checkpointerGone bool
	discovery        *actor.PID
	// failed is why the stream failed (nil: it has not), failedClass what kind of failure
	// that was (see fail).
	failed      error
	failedClass supervisor.Class
	// ending holds the children a failure stopped (by PID id) until they have stopped: a
	// drain's flush waits for them.
	ending        map[string]bool
	lastDiscovery string

	// stopping is set by the first Drain and never cleared: a stream that drained stays
	// up until the pipeline stops it (other streams may still be draining), and must not
	// start a recording meanwhile.
	stopping    bool
	drainingFor *actor.PID
	// drainTimer sends drainDeadline; stopped once drained, so that it does not keep the
	// actor system reachable until the deadline.
	drainTimer     *time.Timer
	drainWaiting   map[int64]bool
	unacknowledged int64

	status     *streamStatus
	stopStatus func()
	// restarts is the strategy supervising the stream's actors: told when a recording's
	// actors make progress, and when they are stopped for good.
	restarts *supervisor.Strategy
}

// streamFailed is the strategy's report that it gave up on a child.
type streamFailed struct {
	child *actor.PID
	class supervisor.Class // of the child's failure
	err   error
}

func (s *streamSupervisor) Receive(ctx actor.Context) {
	if err := s.crashed.take(); err != nil {
		s.fail(ctx, supervisor.Bug, err)
	}
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.status = s.env.statuses.take(s.cfg.Def.Name, s.env.elapsedMs())
		s.stopStatus = s.startStatus(ctx)
		s.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		if s.stopStatus != nil {
			s.stopStatus()
			s.stopStatus = nil
		}
		s.status.stop()
		s.pushStatus()
	case *statusPush:
		s.pushStatus()
	case *restarted:
		s.status.restarts++
	case *messages.RecordingProgress:
		// Only from the recording's tracker now running: a restarted supervisor's status
		// carries the counts of the last one's already, and so does a reopened recording's
		// of its finished tracker (reopened), whose late push would add them again.
		if pids := s.running[msg.RecordingId]; pids != nil && pids.tracker.Equal(ctx.Sender()) {
			if s.status.progress(msg, s.env.now()) {
				s.restarts.Progressed(pids.replay, pids.tracker, pids.publisher)
			}
		}
	case *messages.FailureObserved:
		s.status.failure(msg.Failure)
	case *messages.HazardUndecided:
		s.hazardUndecided(ctx, msg)
	case *messages.StoreWritten:
		s.status.written(msg, s.env.elapsedMs())
	case *messages.ProducerChanged:
		s.producerChanged(msg)
	case *messages.DeduplicationChecked:
		s.status.recording(msg.RecordingId).Deduplication = msg.State
	case *messages.RecordingsListed:
		s.status.listFailingSinceMs = 0
		s.listed(ctx, msg)
	case *messages.DiscoveryFailed:
		s.status.failure(&messages.Failure{AtMs: msg.AtMs, Kind: "archive", Message: "listing recordings: " + msg.Error})
		if s.status.listFailingSinceMs == 0 {
			s.status.listFailingSinceMs = s.env.elapsedMs()
		}
		if msg.Error != s.lastDiscovery {
			s.lastDiscovery = msg.Error
			s.env.Logger.Warn("cannot list the stream's recordings; retrying", "stream", s.cfg.Def.Name, "error", msg.Error)
		}
	case *messages.CheckpointPersisted:
		if s.status.persisted(msg, s.env.now()) {
			if pids := s.running[msg.RecordingId]; pids != nil {
				s.restarts.Progressed(pids.replay, pids.tracker, pids.publisher)
			}
		}
		if msg.Completed {
			s.recordingCompleted(ctx, msg)
		}
	case *streamFailed:
		gone := s.checkpointer != nil && msg.child.Id == s.checkpointer.Id
		if gone {
			s.checkpointerGone = true
		}
		if s.failed != nil && gone && s.drainingFor != nil {
			// Failed already, so fail does nothing: the drain waiting for the checkpointer's
			// flush is answered here, or never.
			s.drainStep(ctx)
		}
		s.fail(ctx, msg.class, msg.err)
	case *messages.Drain:
		s.drain(ctx, msg)
	case *drainDeadline:
		// Stop waiting for acknowledgements: the trackers report what is still in flight.
		for id := range s.drainWaiting {
			if pids := s.running[id]; pids != nil {
				ctx.Send(pids.tracker, &messages.Drain{Now: true})
			}
		}
		if len(s.ending) > 0 {
			// Actors of a failed stream that have not stopped yet: what they would still
			// report is published again at the next start (deduplicated), not lost.
			s.env.Logger.Warn("drain deadline: not waiting any longer for the failed stream's actors to stop", "stream", s.cfg.Def.Name, "actors", len(s.ending))
			clear(s.ending)
			if s.drainingFor != nil {
				s.drainStep(ctx)
			}
		}
	case *messages.RecordingDrained:
		s.unacknowledged += msg.Unacknowledged
		if !s.drainWaiting[msg.RecordingId] {
			return // completed meanwhile (recordingCompleted), or the stream failed
		}
		delete(s.drainWaiting, msg.RecordingId)
		s.drainStep(ctx)
	case *messages.CheckpointsFlushed:
		s.drained(ctx)
	case *actor.Terminated:
		if s.ending[msg.Who.Id] {
			delete(s.ending, msg.Who.Id)
			if len(s.ending) == 0 && s.drainingFor != nil {
				s.drainStep(ctx)
			}
		}
	}
}

func (s *streamSupervisor) start(ctx actor.Context) {
	s.initState()
	if s.cfg.Transport {
		s.startLive(ctx)
		return
	}
	var err error
	if s.checkpointer, err = ctx.SpawnNamed(actor.PropsFromProducer(supervisor.KeepStack(newCheckpointer(s.env, s.cfg))), roleCheckpointer); err != nil {
		panic(supervisor.Fail(supervisor.Bug, err))
	}
	if s.discovery, err = ctx.SpawnNamed(actor.PropsFromProducer(supervisor.KeepStack(newDiscovery(s.env, s.cfg))), roleDiscovery); err != nil {
		panic(supervisor.Fail(supervisor.Bug, err))
	}
}

// initState sets the supervisor's state up from the store as loaded at start.
func (s *streamSupervisor) initState() {
	s.schedule = progress.NewSchedule(s.cfg.RestartGrace.Milliseconds())
	s.scheduleClock = time.Now()
	s.known = map[int64]*messages.RecordingInfo{}
	s.storedCompleted = map[int64]bool{}
	s.finalAt = map[int64]int64{}
	s.reopenings = map[int64]int{}
	s.rechecking = map[int64]bool{}
	s.recheckAgain = map[int64]bool{}
	s.stored = map[int64]bool{}
	s.origins = newStoredOrigins(s.cfg.Stored.Checkpoints)
	s.completed = map[int64]bool{}
	s.finished = map[int64]bool{}
	s.ending = map[string]bool{}
	s.running = map[int64]*recordingPIDs{}
	s.latestFrom = map[int64]int64{}
	s.listedStops = map[int64]stopMark{}
	for _, cp := range s.cfg.Stored.Checkpoints {
		s.stored[cp.RecordingID] = true
		if cp.ListedStop > 0 {
			s.listedStops[cp.RecordingID] = keptStop(cp)
		}
		if cp.Completed {
			s.storedCompleted[cp.RecordingID] = true
			s.finalAt[cp.RecordingID] = cp.Position
		}
		if cp.Forgotten {
			s.env.Logger.Warn("recording forgotten by `ferry checkpoint forget`: it vanished from the archive before ferry published all of it, and its records after the checkpoint were never published",
				"stream", s.cfg.Def.Name, "recording", cp.RecordingID, "checkpoint", cp.Position)
		}
		s.status.stored(cp)
	}
	s.skip = s.skipRule()
}

// startLive spawns the transport mode's live reader and its publisher.
func (s *streamSupervisor) startLive(ctx actor.Context) {
	pid := func(role string) *actor.PID { return actor.NewPID(ctx.ActorSystem().Address(), ctx.Self().Id+"/"+role) }
	pids := &recordingPIDs{stream: ctx.Self(), replay: pid(roleLive), tracker: pid(roleLive), publisher: pid(rolePublisher)}
	for role, p := range map[string]actor.Producer{rolePublisher: newPublisher(s.env, s.cfg, 0, pids), roleLive: newLive(s.env, s.cfg, pids)} {
		if _, err := ctx.SpawnNamed(actor.PropsFromProducer(supervisor.KeepStack(p), actor.WithMailbox(actor.Bounded(recordingMailbox(s.cfg)))), role); err != nil {
			panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("spawn %s: %w", role, err)))
		}
	}
	s.running[0] = pids
}

// skipRule says which recordings the configured start position leaves out. A stored
// checkpoint outranks the configuration (lesson 18): once the store holds checkpoints,
// exactly the recordings below the lowest one stored are left out, as they were on the
// first start.
func (s *streamSupervisor) skipRule() func(int64) bool {
	if cps := s.cfg.Stored.Checkpoints; len(cps) > 0 {
		lowest := cps[0].RecordingID // ordered by recording id
		return func(id int64) bool { return id < lowest }
	}
	switch s.cfg.Start.Kind {
	case config.StartAt:
		first := s.cfg.Start.RecordingID
		return func(id int64) bool { return id < first }
	case config.StartLatest:
		if s.cfg.Stored.Stored {
			// The definition alone: decided by an earlier start, at a listing of an empty
			// archive (decideLatest), and every recording since is published in full.
			// Deciding again would begin one recorded while ferry was down at its live end.
			// Nothing ties the decision to that archive: one replaced or restored since,
			// with older recordings of the stream, has them published too (not left out:
			// nothing tells them from new ones, and leaving out would lose those).
			return func(int64) bool { return false }
		}
		// Decided at the first listing (decideLatest).
		return nil
	}
	return func(int64) bool { return false }
}

func (s *streamSupervisor) listed(ctx actor.Context, l *messages.RecordingsListed) {
	if s.failed != nil || s.stopping {
		return
	}
	if s.lastDiscovery != "" {
		s.lastDiscovery = ""
		s.env.Logger.Info("listing the stream's recordings works again", "stream", s.cfg.Def.Name)
	}
	if s.skip == nil { // StartLatest, first listing
		if !s.decideLatest(ctx, l) {
			return // not started yet, as the status says
		}
	}
	s.status.listed = true
	if err := s.checkConfiguredStart(l); err != nil {
		s.fail(ctx, supervisor.Poison, err)
		return
	}
	present := map[int64]bool{}
	listedAt := time.Since(s.scheduleClock).Milliseconds() // not l.ListedAtMs: a wall clock may step
	unread := false                                        // a live recording the stream publishes whose recorded position was not read
	defer func() { s.status.recordedRead(!unread, s.env.elapsedMs()) }()
	for i, r := range l.Recordings {
		present[r.RecordingId] = true
		if err := s.checkOrigin(r); err != nil {
			s.fail(ctx, supervisor.Poison, err)
			return
		}
		extended, err := s.checkEnd(r)
		if err == nil && extended != "" {
			err = s.reopen(ctx, r, i == len(l.Recordings)-1, extended, listedAt)
		}
		if err != nil {
			s.fail(ctx, supervisor.Poison, err)
			return
		}
		if err := s.checkStart(r); err != nil {
			s.fail(ctx, supervisor.Poison, err)
			return
		}
		if s.skip(r.RecordingId) {
			if r.Live {
				s.leftOutLive(r.RecordingId)
			}
			continue
		}
		unread = unread || r.Live && r.RecordedPosition < 0
		if err := s.checkTail(r); err != nil {
			s.fail(ctx, supervisor.Poison, err)
			return
		}
		s.noteStop(ctx, r)
		if s.endUnmoved(r) {
			s.remember(r)
			s.status.known(r, l.ListedAtMs)
			continue
		}
		if err := s.schedule.Add(progress.Recording{ID: r.RecordingId, StartMs: r.StartMs, StopMs: r.StopMs, Live: r.Live, Recorded: r.RecordedPosition, ListedAtMs: listedAt}); err != nil {
			s.fail(ctx, supervisor.Bug, fmt.Errorf("recording %d: %w", r.RecordingId, err))
			return
		}
		if s.known[r.RecordingId] == nil && !s.stored[r.RecordingId] && !s.atLatest(r.RecordingId) {
			// Seeded when first listed, not only when its turn comes: a restart then knows
			// where it began, and a recording retention purged whole, or cut the head of,
			// while it waited and ferry was down stops the stream (lesson 14, replay.go)
			// instead of being left out, or begun at its new start, without a word. (In a
			// run, checkStart and the listing see both; start_position latest seeds its
			// own at the first listing.) A seed at the recording's start (not at a
			// start_position above 0 the configuration gives in it) follows the archive's
			// start back, should it move back before a replay of the recording is taken on
			// (segments attached again: replay.go, openReplay; checkpointer.go, takeOn).
			st := s.cfg.Start
			inside := st.Kind == config.StartAt && st.RecordingID == r.RecordingId && st.Position > 0
			ctx.Send(s.checkpointer, &messages.SeedCheckpoint{RecordingId: r.RecordingId, Position: s.startingPosition(r), StartMs: r.StartMs, SessionId: r.SessionId, FromStart: !inside})
		}
		s.remember(r)
		s.status.known(r, l.ListedAtMs)
	}
	// A recording whose replay reached its end, but which a listing since showed recorded or
	// stopped beyond it (extended before its final checkpoint was persisted, so checkEnd saw
	// nothing), and which the archive then deleted, vanished with records ferry never
	// published: completed at its old end, or waited for, it would lose them without a word
	// (lesson 14).
	if err := s.finishedShort(present); err != nil {
		s.fail(ctx, supervisor.Poison, err)
		return
	}
	// A recording ferry published to its end (its final checkpoint persisted) that the
	// archive deleted before a listing showed it stopped did not vanish unpublished: it
	// stopped, and is done (completeFinished, below), not waited for as live.
	for _, id := range slices.Sorted(maps.Keys(s.finished)) {
		if k := s.known[id]; !present[id] && k != nil && k.Live {
			stopped := proto.Clone(k).(*messages.RecordingInfo)
			stopped.Live, stopped.StopPosition, stopped.StopMs = false, s.finalAt[id], l.ListedAtMs
			if err := s.schedule.Add(progress.Recording{ID: id, StartMs: stopped.StartMs, StopMs: stopped.StopMs, Recorded: stopped.StopPosition, ListedAtMs: listedAt}); err != nil {
				s.fail(ctx, supervisor.Bug, fmt.Errorf("recording %d, published to its end and gone from the archive: %w", id, err))
				return
			}
			s.known[id] = stopped
		}
	}
	// A recording read again to check its last record (listed stopped at its end at another
	// time, see reopen) had been published to its end: deleted meanwhile, it is done, the
	// check not made. It finishes where ferry had published it to (completeFinished, below);
	// its stored checkpoint still says so.
	for _, id := range slices.Sorted(maps.Keys(s.rechecking)) {
		if present[id] {
			continue
		}
		s.stopRecording(ctx, id)
		delete(s.recheckAgain, id)
		s.finished[id] = true
		s.env.Logger.Warn("recording deleted from the archive while ferry read its last record again: it had been published to its end; whether the archive had rewritten it is not checked",
			"stream", s.cfg.Def.Name, "recording", id, "end", s.finalAt[id])
	}
	// A recording ferry has not finished must not vanish (lesson 14). All of them are
	// named: retention that swept several waiting recordings is seen at once.
	var gone []int64
	for id := range s.stored {
		if !present[id] && s.unfinished(id) {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		s.fail(ctx, supervisor.Poison, s.vanished(gone, "has a checkpoint but is no longer in the archive (purged by retention, or another archive)",
			"have checkpoints but are no longer in the archive (purged by retention, or another archive)"))
		return
	}
	for id := range s.known {
		if !present[id] && s.unfinished(id) {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		s.fail(ctx, supervisor.Poison, s.vanished(gone, "vanished from the archive before ferry published all of it", "vanished from the archive before ferry published all of them"))
		return
	}
	s.completeFinished(ctx)
}

// remember keeps r as what the latest listing showed of its recording. A live recording
// whose recorded position the listing could not read (-1) keeps the one known: a live
// recording's only grows, and checkTail and finishedShort compare the next listing with it
// (one unread position would let a truncation below it go unsaid).
func (s *streamSupervisor) remember(r *messages.RecordingInfo) {
	if k := s.known[r.RecordingId]; r.Live && r.RecordedPosition < 0 && k != nil && k.Live && k.RecordedPosition >= 0 {
		r = proto.Clone(r).(*messages.RecordingInfo)
		r.RecordedPosition = k.RecordedPosition
	}
	s.known[r.RecordingId] = r
}

// finishedShort returns the stream's failure if a recording ferry finished (its final
// checkpoint persisted, its completion not yet taken) is gone from the listing (present)
// although the listing before had it recorded or stopped beyond where ferry finished it:
// the records in between were never published and the archive no longer has them.
func (s *streamSupervisor) finishedShort(present map[int64]bool) error {
	var lost, ranges []string
	for _, id := range slices.Sorted(maps.Keys(s.finished)) {
		k := s.known[id]
		if present[id] || k == nil {
			continue
		}
		end, how := k.StopPosition, "stopped at"
		if k.Live {
			end, how = k.RecordedPosition, "recorded to"
		}
		if final := s.finalAt[id]; end > final {
			lost = append(lost, fmt.Sprintf("recording %d, published to %d where its replay ended, was %s %d at the listing before (the archive extended it, or truncated it since)", id, final, how, end))
			ranges = append(ranges, fmt.Sprintf("recording %d's records from %d to %d", id, final, end))
		}
	}
	if len(lost) == 0 {
		return nil
	}
	gone := "it is no longer in the archive"
	if len(lost) > 1 {
		gone = "none of them is in the archive any more"
	}
	return fmt.Errorf("%s; %s (purged by retention, or another archive): %s were never published and are lost. "+
		"Its checkpoint is completed where its replay ended, so ferry, started again, goes on with the recordings after it without those records; or, %s",
		strings.Join(lost, "; "), gone, strings.Join(ranges, ", "), resetToGoOn(s.cfg.Def.Name))
}

// leftOutLive says, once per recording, that the start position leaves out a recording that
// is live: a concurrent publisher's (lesson 11), or one extended after it stopped, whose
// records, those recorded from now on too, ferry never publishes. A start position is the
// user's to choose, so the stream goes on; leaving a publisher out must not go unsaid. It
// names where the stream begins and why, and a way to publish the recording that is not
// the start the stream already has.
func (s *streamSupervisor) leftOutLive(id int64) {
	if s.leftOut == nil {
		s.leftOut = map[int64]bool{}
	}
	if s.leftOut[id] {
		return
	}
	s.leftOut[id] = true
	first, why := s.cfg.Start.RecordingID, "start_recording_id"
	switch cps := s.cfg.Stored.Checkpoints; {
	case len(cps) > 0:
		first, why = cps[0].RecordingID, "the lowest recording ferry keeps a checkpoint of"
	case s.cfg.Start.Kind == config.StartLatest:
		first, why = s.latestBegins, "start_position latest, decided at the stream's first start"
	}
	wayOn := fmt.Sprintf("to publish every live recording from its live end use start_position: latest (after `%s`)", store.ResetCommand(s.cfg.Def.Name))
	if s.cfg.Start.Kind == config.StartLatest {
		wayOn = fmt.Sprintf("to publish it, set start_position to a position in it with start_recording_id: %d (after `%s`: the stream is then published again from there)", id, store.ResetCommand(s.cfg.Def.Name))
	}
	msg := fmt.Sprintf("recording %d is live but below recording %d, where the stream begins (%s): a concurrent publisher's recording, or one extended after it stopped, of which ferry publishes nothing, also what it records from now on; %s",
		id, first, why, wayOn)
	s.env.Logger.Error(msg, "stream", s.cfg.Def.Name, "recording", id)
	s.status.failure(&messages.Failure{AtMs: s.env.nowMs(), Kind: "start", Message: msg})
}

// vanished is the stream's failure for the recordings gone that left the archive unfinished
// (lesson 14), all of them named, in order; one and many say what happened to one, or to
// several.
func (s *streamSupervisor) vanished(gone []int64, one, many string) error {
	slices.Sort(gone)
	what := fmt.Sprintf("recording %d %s", gone[0], one)
	if len(gone) > 1 {
		what = fmt.Sprintf("recordings %v %s", gone, many)
	}
	return fmt.Errorf("%s: their unpublished records are lost; %s", what, forgetToGoOn(s.cfg.Def.Name, gone))
}

// atLatest reports whether recording id is published from its live end (start_position
// latest).
func (s *streamSupervisor) atLatest(id int64) bool {
	_, ok := s.latestFrom[id]
	return ok
}

// decideLatest makes the skip rule of start_position latest at the first listing: every
// recording live then is published from its live end (concurrent publishers each have one,
// lesson 11), the stopped ones before the lowest live one are left out, and every later one
// is published in full. A stopped one after the lowest live one takes its turn in the
// schedule with nothing to publish (from its stop), so that the rule a restart applies —
// skip below the lowest recording stored — gives the same: each of them is seeded now, also
// those the schedule holds back for a while, so that a restart before their turn neither
// publishes their history nor skips what was recorded meanwhile. With none live, the newest
// takes its turn so, from its stop. The seeds go to the checkpointer together
// (StartDecided), stored in one write: a restart finds all of them or none. An empty
// archive has nothing to seed: the checkpointer stores the stream's definition instead,
// which tells a restart that the decision was made (skipRule). false: a live end could not
// be read, and the next listing decides.
func (s *streamSupervisor) decideLatest(ctx actor.Context, l *messages.RecordingsListed) bool {
	newest, lowestLive := int64(-1), int64(-1)
	for _, r := range l.Recordings {
		newest = max(newest, r.RecordingId)
		if !r.Live {
			continue
		}
		if r.RecordedPosition < 0 {
			// Where it is live now is not known: decided at a listing that reads it.
			if !s.latestDeferred {
				s.latestDeferred = true
				s.env.Logger.Warn("start_position latest: the live end of a live recording could not be read; deciding at the next listing", "stream", s.cfg.Def.Name, "recording", r.RecordingId)
			}
			return false
		}
		if lowestLive < 0 {
			lowestLive = r.RecordingId
		}
	}
	from, decided := map[int64]int64{}, &messages.StartDecided{}
	for _, r := range l.Recordings {
		switch {
		case lowestLive < 0 && r.RecordingId == newest:
			// Nothing live: the newest recording takes its turn from its stop, with nothing
			// to publish, so that the store says where ferry began. A restart then leaves out
			// only what is below it, and publishes whatever was recorded while ferry was down
			// (an extension of this one, or recordings after it), as this run would have.
			from[r.RecordingId] = r.StopPosition
		case lowestLive < 0 || r.RecordingId < lowestLive:
		case r.Live:
			from[r.RecordingId] = max(r.RecordedPosition, r.StartPosition)
		default:
			from[r.RecordingId] = r.StopPosition
		}
		if pos, ok := from[r.RecordingId]; ok {
			decided.Seeds = append(decided.Seeds, &messages.SeedCheckpoint{RecordingId: r.RecordingId, Position: pos, StartMs: r.StartMs, SessionId: r.SessionId})
		}
	}
	s.latestFrom = from
	ctx.Send(s.checkpointer, decided) // the seeds in one write
	s.latestBegins = lowestLive
	if lowestLive < 0 {
		s.latestBegins = newest
	}
	s.skip = func(id int64) bool { return id < s.latestBegins }
	return true
}

// checkConfiguredStart fails a stream whose configured start recording is not in the
// archive while nothing is stored (lesson 14): skipping up to it would silently drop what
// the operator asked for, or idle forever looking healthy.
func (s *streamSupervisor) checkConfiguredStart(l *messages.RecordingsListed) error {
	if s.cfg.Start.Kind != config.StartAt || len(s.cfg.Stored.Checkpoints) > 0 || s.startChecked {
		return nil
	}
	want := s.cfg.Start.RecordingID
	var ids []int64
	for _, r := range l.Recordings {
		if r.RecordingId == want {
			// Checked before it is stored (the seed): a stored position outranks the
			// configuration, so a wrong one could not be corrected there any more.
			if p := s.cfg.Start.Position; !r.Live && p > r.StopPosition {
				return fmt.Errorf("start_position %d is beyond the stop position %d of recording %d (start_recording_id): set start_position to a position in the recording", p, r.StopPosition, want)
			}
			s.startChecked = true
			return nil
		}
		ids = append(ids, r.RecordingId)
	}
	return fmt.Errorf("start_recording_id %d: recording %d is not in the archive (the stream's recordings: %v): it was purged, or belongs to another archive; set start_position and start_recording_id to a recording that exists", want, want, ids)
}

// markStoredCompleted tells the schedule about recordings the store says are completed.
func (s *streamSupervisor) markStoredCompleted() {
	for progressed := true; progressed; {
		progressed = false
		for _, id := range s.schedule.Runnable() {
			if s.storedCompleted[id] && !s.completed[id] {
				if err := s.schedule.Completed(id); err == nil {
					s.completed[id] = true
					progressed = true
				}
			}
		}
	}
}

func (s *streamSupervisor) startRunnable(ctx actor.Context) {
	for _, id := range s.schedule.Runnable() {
		if s.running[id] != nil || s.completed[id] || s.finished[id] {
			continue
		}
		s.spawnRecording(ctx, s.known[id])
	}
}

// recordingMailbox bounds the mailbox of a recording's actors (and of transport mode's): the
// tracker's holds batches and one outcome per record in flight, the publisher's batches and
// one failure notice per record in flight, the replay's at most one credit message per
// outcome; so twice the credits, and some. A mailbox that fills holds back whoever sends
// into it — never the actor itself, which sends to itself with sendToSelf.
func recordingMailbox(cfg *StreamConfig) int {
	return 2*int(min(cfg.MaxInflightRecords, 1<<20)) + 64
}

func (s *streamSupervisor) spawnRecording(ctx actor.Context, rec *messages.RecordingInfo) {
	id := rec.RecordingId
	name := func(role string) string { return fmt.Sprintf("r%d-%s", id, role) } // roleOf reads it back
	if n := s.reopenings[id]; n > 0 {
		// Published again after an extension: new names, as the stopped actors of the
		// earlier run may not have let go of theirs yet.
		name = func(role string) string { return fmt.Sprintf("r%d.%d-%s", id, n, role) }
	}
	pid := func(role string) *actor.PID {
		return actor.NewPID(ctx.ActorSystem().Address(), ctx.Self().Id+"/"+name(role))
	}
	pids := &recordingPIDs{stream: ctx.Self(), checkpointer: s.checkpointer, replay: pid(roleReplay), tracker: pid(roleTracker), publisher: pid(rolePublisher)}
	spawn := func(role string, p actor.Producer, mailbox int) {
		props := actor.PropsFromProducer(supervisor.KeepStack(p), actor.WithMailbox(actor.Bounded(mailbox)))
		if _, err := ctx.SpawnNamed(props, name(role)); err != nil {
			panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("spawn %s: %w", name(role), err)))
		}
	}
	// A recording not stored was seeded when first listed (listed; decideLatest), before
	// the replay exists, so that the seed is stored no later than its commits.
	spawn(roleTracker, newTracker(s.env, s.cfg, id, pids), recordingMailbox(s.cfg))
	spawn(rolePublisher, newPublisher(s.env, s.cfg, id, pids), recordingMailbox(s.cfg))
	latestFrom := int64(-1)
	if s.atLatest(id) {
		latestFrom = s.startingPosition(rec)
	}
	upTo := int64(-1)
	if s.rechecking[id] {
		upTo = s.finalAt[id]
	}
	spawn(roleReplay, newReplay(s.env, s.cfg, rec, pids, latestFrom, upTo), recordingMailbox(s.cfg))
	s.running[id] = pids
	s.env.Logger.Info("publishing recording", "stream", s.cfg.Def.Name, "recording", id, "live", rec.Live, "start_position", rec.StartPosition)
}

func (s *streamSupervisor) recordingCompleted(ctx actor.Context, p *messages.CheckpointPersisted) {
	id := p.RecordingId
	if s.completed[id] {
		return
	}
	s.stopRecording(ctx, id)
	s.env.Logger.Info("recording published and acknowledged to its end", "stream", s.cfg.Def.Name, "recording", id, "stop_position", p.Position)
	s.finished[id] = true
	s.finalAt[id] = p.Position
	s.completeFinished(ctx)
	if s.drainWaiting[id] {
		// A drain asked the tracker just stopped, which may never have seen the request:
		// the recording has nothing in flight, its final checkpoint is persisted.
		delete(s.drainWaiting, id)
		s.drainStep(ctx)
	}
}

// stopRecording stops a recording's actors, done with it; the strategy forgets their
// failures, so that actors spawned again for it (reopened) start with none.
func (s *streamSupervisor) stopRecording(ctx actor.Context, id int64) {
	pids := s.running[id]
	if pids == nil {
		return
	}
	ctx.Stop(pids.replay)
	ctx.Stop(pids.tracker)
	ctx.Stop(pids.publisher)
	s.restarts.Forget(pids.replay, pids.tracker, pids.publisher)
	delete(s.running, id)
}

// completeFinished tells the schedule about recordings whose final checkpoint is persisted.
// The replay can reach a recording's end before discovery has listed it as stopped: such a
// recording waits here until the listing that reports its stop, and is not started again
// meanwhile.
func (s *streamSupervisor) completeFinished(ctx actor.Context) {
	var again []int64
	for _, id := range slices.Sorted(maps.Keys(s.finished)) {
		if k := s.known[id]; k != nil && !k.Live && k.StopPosition > s.finalAt[id] {
			// Listed stopped beyond where the replay ended (extended meanwhile): not done;
			// the next listing's checkEnd takes the extension.
			continue
		}
		err := s.schedule.Completed(id)
		if errors.Is(err, progress.ErrNotRunnable) && s.known[id] != nil && s.known[id].Live {
			continue
		}
		if err != nil {
			s.fail(ctx, supervisor.Bug, fmt.Errorf("recording %d completed out of schedule: %w", id, err))
			return
		}
		delete(s.finished, id)
		s.completed[id] = true
		delete(s.rechecking, id)
		if s.recheckAgain[id] {
			delete(s.recheckAgain, id)
			again = append(again, id)
		}
	}
	for _, id := range again {
		// Stopped again at its end while it was read again: read again once more.
		if k := s.known[id]; k != nil && !k.Live && k.StopPosition == s.finalAt[id] {
			if err := s.reopen(ctx, k, false, "it stopped again at its end while ferry read it again", time.Since(s.scheduleClock).Milliseconds()); err != nil {
				s.fail(ctx, supervisor.Poison, err)
				return
			}
		}
	}
	// A recording completed before a restart may wait behind an earlier one that is not:
	// it is marked completed once it may run, and never replayed again.
	s.markStoredCompleted()
	if !s.stopping && s.failed == nil {
		s.startRunnable(ctx)
	}
}

// unfinished reports whether ferry has not yet published recording id to its end: neither
// completed (in this run, or stored so) nor finished (published to its end, its completion
// not yet scheduled).
func (s *streamSupervisor) unfinished(id int64) bool {
	return !s.completed[id] && !s.storedCompleted[id] && !s.finished[id]
}

// fail stops the stream and says why; the process and other streams go on. class is what
// kind of failure stopped it: a Transient one is started again when ferry reconnects to
// Aeron (see Run); any other stays failed until ferry is restarted.
//
// A stream failed of a transient failure may fail again, for good, while its actors stop
// (a commit tracker finding lesson 22's record stored above a failed one, a checkpointer
// refused by the store): that failure replaces the first, in the status and for Run,
// which then does not start the stream again.
//
// The status keeps it as the stream's last failure of kind stream too, with when: a stream
// started again after a reconnect is no longer failed, and lesson 24 has its last failures
// stay until superseded.
func (s *streamSupervisor) fail(ctx actor.Context, class supervisor.Class, err error) {
	if s.failed != nil {
		if s.failedClass == supervisor.Transient && class != supervisor.Transient {
			s.failed, s.failedClass = err, class
			s.status.failure(&messages.Failure{AtMs: s.env.nowMs(), Kind: "stream", Message: err.Error()})
			s.env.Logger.Error("stream failed again, for good: not started again before ferry is restarted", "stream", s.cfg.Def.Name, "class", class.String(), "error", err)
			if s.onFailed != nil {
				s.onFailed(s.cfg.Def.Name, class, err)
			}
			s.pushStatus()
		}
		return
	}
	s.failed, s.failedClass = err, class
	s.status.failure(&messages.Failure{AtMs: s.env.nowMs(), Kind: "stream", Message: err.Error()})
	s.env.Logger.Error("stream failed; its other recordings stop, other streams go on", "stream", s.cfg.Def.Name, "error", err)
	for _, child := range ctx.Children() {
		if s.checkpointer == nil || child.Id != s.checkpointer.Id {
			ctx.Stop(child)
			s.ending[child.Id] = true
		}
	}
	s.running = map[int64]*recordingPIDs{}
	// Its actors' last pushes are not taken (running is empty): what only they kept
	// current goes from the status now, as at a stop.
	s.status.stop()
	if s.onFailed != nil {
		s.onFailed(s.cfg.Def.Name, class, err)
	}
	s.pushStatus()
	if s.drainingFor != nil {
		s.drainWaiting = nil
		s.drainStep(ctx)
	}
}

// producerChanged shows a publisher's producer state, unless the stream's status stopped (it
// failed, or drains): a producer created as the failure stops its publisher would show
// ready for as long as the stream stays failed.
func (s *streamSupervisor) producerChanged(msg *messages.ProducerChanged) {
	if !s.status.stopped {
		s.status.recording(msg.RecordingId).Producer = msg.State
	}
}

// hazardUndecided takes a commit tracker's word, as it stopped or drained, that lesson 22
// was not ruled out for its recording. A stream that failed (its trackers stopped by the
// failure) or drains (for a reconnect, or ferry's stop: the drain waited for the outcomes
// up to its deadline) then fails for good: it is not started again at a reconnect (fail),
// which would take the failed record's re-send, answered as a duplicate, for published,
// and its failure names the record to check before ferry is started again. (The lesson-21
// resume check cannot tell: a duplicate is what it expects below the broker's last.) Each
// recording's word is logged, also when the stream failed for good already (of another
// cause, or of another recording's word): every record to check is named.
//
// A stream still running when the word comes fails for good on it too: nothing but a
// failure stops a tracker with outcomes outstanding (a completed recording has none), and
// the strategy's notice that the tracker was given up goes through another goroutine
// (streamProps), so the tracker's word can come first.
func (s *streamSupervisor) hazardUndecided(ctx actor.Context, h *messages.HazardUndecided) {
	err := fmt.Errorf("recording %d: the send of the record ending at %d failed while %d sends above it had no outcome yet, and the stream stopped without them: if Pulsar stored one of them, that record's re-send from the checkpoint is answered as a duplicate and lost (lesson 22). Not started again before ferry is restarted: check first that the topic holds the record ending at %d (its message with ferry.position %d)",
		h.RecordingId, h.FailedEnd, h.Unanswered, h.FailedEnd, h.FailedEnd)
	if s.failed != nil && s.failedClass != supervisor.Transient {
		s.env.Logger.Error("stream failed already; lesson 22 undecided for one more record too", "stream", s.cfg.Def.Name, "error", err)
		return
	}
	s.fail(ctx, supervisor.Poison, err)
}

// drainDeadline is the stream's self-message at its drain deadline.
type drainDeadline struct{}

func (s *streamSupervisor) drain(ctx actor.Context, d *messages.Drain) {
	s.stopping = true
	s.drainingFor = ctx.Sender()
	if s.failed != nil && !s.cfg.Transport && s.checkpointerGone {
		// A failed stream whose checkpointer is gone too (a corrupt store): nothing to wait for.
		s.drained(ctx)
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	s.drainTimer = time.AfterFunc(time.Until(time.UnixMilli(d.DeadlineMs)), func() { system.Root.Send(self, &drainDeadline{}) })
	if s.discovery != nil {
		ctx.Stop(s.discovery)
	}
	s.drainWaiting = map[int64]bool{}
	for id, pids := range s.running {
		s.drainWaiting[id] = true
		ctx.Send(pids.replay, &messages.Drain{})
		if !s.cfg.Transport { // (transport mode's live reader is its own tracker)
			ctx.Send(pids.tracker, &messages.Drain{})
		}
	}
	s.drainStep(ctx)
}

// drainStep flushes the checkpoints once every tracker has nothing in flight, and every
// actor a failure stopped has stopped: a tracker reports its last commits as it stops, and
// a flush before they reach the checkpointer would leave them unsaved.
func (s *streamSupervisor) drainStep(ctx actor.Context) {
	switch {
	case len(s.drainWaiting) > 0, len(s.ending) > 0:
	case s.cfg.Transport:
		s.drained(ctx) // nothing to persist
	case s.checkpointerGone:
		s.drained(ctx) // nothing can be persisted any more; the stream's failure says why
	default:
		ctx.Send(s.checkpointer, &messages.Drain{})
	}
}

func (s *streamSupervisor) drained(ctx actor.Context) {
	if s.drainingFor == nil {
		return
	}
	ctx.Send(s.drainingFor, &messages.Drained{Stream: s.cfg.Def.Name, Unacknowledged: s.unacknowledged})
	s.drainingFor = nil
	if s.drainTimer != nil {
		s.drainTimer.Stop()
	}
	s.status.stop()
	s.pushStatus()
}

// streamProps builds the StreamSupervisor's props with its supervision strategy.
func streamProps(env *Env, cfg *StreamConfig, self *actor.PID, system *actor.ActorSystem, onFailed func(string, supervisor.Class, error)) (*actor.Props, error) {
	giveUp := func(child *actor.PID, class supervisor.Class, reason any) {
		class = givenUpAs(child, class)
		err := fmt.Errorf("%s failed (%s) and is not restarted: %w", child.Id, class, failureError(reason))
		if class != supervisor.Transient && onFailed != nil {
			// Reported from here too (on the stream's goroutine, at once): the notice
			// below may land after the stream stopped (a pipeline stopping), and Run must
			// still know the stream is failed for good.
			onFailed(cfg.Def.Name, class, err)
		}
		sendToSelf(system, self, &streamFailed{child: child, class: class, err: err})
	}
	strategy, err := supervisor.NewStrategy(cfg.Restart, giveUp, env.Logger, supervisor.WithNeverRestarted(neverRestarted))
	if err != nil {
		return nil, err
	}
	crashed := &crash{}
	guardian := &streamGuardian{stream: cfg.Def.Name, logger: env.Logger, crashed: crashed, onFailed: onFailed}
	producer := func() actor.Actor {
		return &streamSupervisor{env: env, cfg: cfg, onFailed: onFailed, crashed: crashed, restarts: strategy}
	}
	return actor.PropsFromProducer(producer, actor.WithSupervisor(strategy), actor.WithGuardian(guardian),
		actor.WithMailbox(actor.Bounded(4096))), nil
}

// sendToSelf sends msg to self, an actor with a bounded mailbox, from the actor's own
// goroutine — its Receive, or the stream supervisor's supervision strategy, guardian and
// event stream subscriber — without waiting there: a send into a bounded mailbox waits
// (spinning) while the mailbox is full, and only the goroutine sending could make room. The
// message may come after others sent later.
func sendToSelf(system *actor.ActorSystem, self *actor.PID, msg any) {
	go system.Root.Send(self, msg)
}

// crash is a stream supervisor's own failure, handed by its guardian to the next message
// it handles.
type crash struct {
	mu       sync.Mutex
	err      error
	failures int
}

// record keeps err for take and returns how often the supervisor has failed.
func (c *crash) record(err error) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failures++
	c.err = err
	return c.failures
}

// take returns the failure recorded since the last take, if any. A nil crash has none.
func (c *crash) take() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

// streamGuardian supervises a StreamSupervisor, which is spawned from the actor system's
// root. It never restarts one in place: a new incarnation would start from the store as
// loaded at ferry's start, without what its recordings' actors held, and protoactor's
// default strategy would restart it up to ten times in ten seconds and then stop it
// without a word — a stream gone while the process runs on. Instead the first failure
// fails the stream, loudly and for good, as a child the stream's strategy gave up on
// does: the supervisor is resumed, and the next message it handles fails it (its
// recordings' actors stop, its checkpointer stays to persist what was acknowledged and to
// answer a drain, its status says why). A supervisor that fails again is stopped. The
// process and other streams go on.
type streamGuardian struct {
	stream   string
	logger   *slog.Logger
	crashed  *crash
	onFailed func(name string, class supervisor.Class, err error)
}

var _ actor.SupervisorStrategy = (*streamGuardian)(nil)

// HandleFailure runs on the failed supervisor's goroutine, inside its recovery, so that
// the stack logged is the one that failed.
func (g *streamGuardian) HandleFailure(system *actor.ActorSystem, sup actor.Supervisor, child *actor.PID,
	_ *actor.RestartStatistics, reason any, message any,
) {
	err := fmt.Errorf("the stream's supervisor failed handling %T (%w) and cannot be restarted in place; restart ferry to resume from the persisted checkpoint", message, failureError(reason))
	attrs := []any{"stream", g.stream, "class", supervisor.Classify(reason).String(), "reason", reason, "stack", string(debug.Stack())}
	if g.crashed.record(err) > 1 {
		g.logger.Error("stream supervisor failed again, while failing: stopped", attrs...)
		// Resumed after the stop, so that what waits in its mailbox goes (to a stopped actor:
		// dropped) and nothing sending to it waits for room for ever.
		sup.StopChildren(child)
		sup.ResumeChildren(child)
		if g.onFailed != nil {
			g.onFailed(g.stream, supervisor.Bug, err)
		}
		return
	}
	g.logger.Error("stream supervisor failed: the stream fails, other streams go on", attrs...)
	// The notice makes sure a next message comes; whichever comes first fails the stream.
	sendToSelf(system, child, &streamFailed{child: child, class: supervisor.Bug, err: err})
	sup.ResumeChildren(child)
}

// failureError is a panic's reason as an error.
func failureError(reason any) error {
	if err, ok := reason.(error); ok {
		return err
	}
	return fmt.Errorf("%v", reason)
}

// The roles of a stream's actors, the end of their names: the stream's checkpointer and
// discovery; a recording's replay, commit tracker and publisher, named "r<id>-<role>"
// ("r<id>.<n>-<role>" when it is published again after an extension, spawnRecording);
// transport mode's live reader and publisher.
const (
	roleCheckpointer = "checkpointer"
	roleDiscovery    = "discovery"
	roleReplay       = "replay"
	roleTracker      = "tracker"
	rolePublisher    = "publisher"
	roleLive         = "live"
)

// roleOf returns the role of the stream's child, read from its name.
func roleOf(child *actor.PID) string {
	name := child.Id[strings.LastIndex(child.Id, "/")+1:]
	return name[strings.LastIndex(name, "-")+1:]
}

// neverRestarted reports whether the stream's child is one that cannot be restarted in place
// (see refuseRestart): the checkpointer, a recording's commit tracker and publisher, the
// transport mode's publisher. Its failure fails the stream with its own class and reason.
func neverRestarted(child *actor.PID) bool {
	switch roleOf(child) {
	case roleCheckpointer, roleTracker, rolePublisher:
		return true
	}
	return false
}

// givenUpAs is the class a failure of child the stream's strategy gave up on fails the
// stream with: its own, but Bug for a transient failure of a child never restarted. None
// of them fails transiently by design (their failures are classed): one that does (an
// error panicked bare) is unforeseen, and what it held is lost; a reconnect must not start
// the stream again as if a replay had only failed too often.
func givenUpAs(child *actor.PID, class supervisor.Class) supervisor.Class {
	if class == supervisor.Transient && neverRestarted(child) {
		return supervisor.Bug
	}
	return class
}

// refuseRestart fails the stream for good (Poison) when an actor that cannot be restarted in
// place starts again after a failure (a backstop: the stream's strategy never restarts them,
// neverRestarted): its state is the bookkeeping of records in flight or
// of commits not yet persisted, which a new incarnation would not have. A new start of ferry
// resumes from the persisted checkpoint. who names the actor, e.g. "recording 7: the
// publisher".
func refuseRestart(who string) {
	panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("%s failed and cannot be restarted in place; restart ferry to resume from the persisted checkpoint", who)))
}

// startingPosition is where the replay of a recording the store holds nothing of begins:
// in one live at start_position latest's first listing, the live end when it was chosen
// (its replay begins there or later); otherwise where the configuration says.
func (s *streamSupervisor) startingPosition(rec *messages.RecordingInfo) int64 {
	if from, ok := s.latestFrom[rec.RecordingId]; ok {
		return from
	}
	return configuredStart(s.cfg, rec)
}
