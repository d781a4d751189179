package actors

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

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
	onFailed func(name string, err error)

	schedule      *progress.Schedule
	scheduleClock time.Time // the schedule's listing times count from it (monotonic)
	known         map[int64]*messages.RecordingInfo
	skip          func(id int64) bool
	// latestFrom: with StartLatest, where each recording from the lowest live one at the
	// first listing on begins: a live one at its live end as read then (every live one, so
	// that no concurrent publisher is left out, lesson 11), a stopped one at its stop; each
	// is seeded there at once (see decideLatest).
	latestFrom      map[int64]int64
	latestDeferred  bool // the choice waited for a listing that could read the live ends
	storedCompleted map[int64]bool
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
	failed           error
	lastDiscovery    string

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
}

// streamFailed is the strategy's report that it gave up on a child.
type streamFailed struct {
	child *actor.PID
	err   error
}

func (s *streamSupervisor) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		s.status = s.env.statuses.take(s.cfg.Def.Name, s.env.nowMs())
		s.stopStatus = s.startStatus(ctx)
		s.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		if s.stopStatus != nil {
			s.stopStatus()
			s.stopStatus = nil
		}
		s.status.stopped = true
		s.pushStatus()
	case *statusPush:
		s.pushStatus()
	case *restarted:
		s.status.restarts++
	case *messages.RecordingProgress:
		// Only from this incarnation's actors: a restarted supervisor's status carries the
		// counts of the last one's already, and a late push of theirs would add them again.
		if s.running[msg.RecordingId] != nil {
			s.status.progress(msg, s.env.nowMs())
		}
	case *messages.FailureObserved:
		s.status.failure(msg.Failure)
	case *messages.StoreWritten:
		s.status.written(msg, s.env.nowMs())
	case *messages.ProducerChanged:
		s.status.recording(msg.RecordingId).Producer = msg.State
	case *messages.DeduplicationChecked:
		s.status.recording(msg.RecordingId).Deduplication = msg.State
	case *messages.RecordingsListed:
		s.status.listed = true
		s.listed(ctx, msg)
	case *messages.DiscoveryFailed:
		s.status.failure(&messages.Failure{AtMs: msg.AtMs, Kind: "archive", Message: "listing recordings: " + msg.Error})
		if msg.Error != s.lastDiscovery {
			s.lastDiscovery = msg.Error
			s.env.Logger.Warn("cannot list the stream's recordings; retrying", "stream", s.cfg.Def.Name, "error", msg.Error)
		}
	case *messages.CheckpointPersisted:
		s.status.persisted(msg, s.env.nowMs())
		if msg.Completed {
			s.recordingCompleted(ctx, msg)
		}
	case *streamFailed:
		if s.checkpointer != nil && msg.child.Id == s.checkpointer.Id {
			s.checkpointerGone = true
		}
		s.fail(ctx, msg.err)
	case *messages.Drain:
		s.drain(ctx, msg)
	case *drainDeadline:
		// Stop waiting for acknowledgements: the trackers report what is still in flight.
		for id := range s.drainWaiting {
			if pids := s.running[id]; pids != nil {
				ctx.Send(pids.tracker, &messages.Drain{Now: true})
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
	}
}

func (s *streamSupervisor) start(ctx actor.Context) {
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
	s.running = map[int64]*recordingPIDs{}
	s.latestFrom = map[int64]int64{}
	for _, cp := range s.cfg.Stored.Checkpoints {
		s.stored[cp.RecordingID] = true
		if cp.Completed {
			s.storedCompleted[cp.RecordingID] = true
			s.finalAt[cp.RecordingID] = cp.Position
		}
		s.status.stored(cp)
	}
	if s.cfg.Transport {
		s.startLive(ctx)
		return
	}
	s.skip = s.skipRule()
	var err error
	if s.checkpointer, err = ctx.SpawnNamed(actor.PropsFromProducer(newCheckpointer(s.env, s.cfg)), "checkpointer"); err != nil {
		panic(supervisor.Fail(supervisor.Bug, err))
	}
	if s.discovery, err = ctx.SpawnNamed(actor.PropsFromProducer(newDiscovery(s.env, s.cfg)), "discovery"); err != nil {
		panic(supervisor.Fail(supervisor.Bug, err))
	}
}

// startLive spawns the transport mode's live reader and its publisher.
func (s *streamSupervisor) startLive(ctx actor.Context) {
	pid := func(role string) *actor.PID { return actor.NewPID(ctx.ActorSystem().Address(), ctx.Self().Id+"/"+role) }
	pids := &recordingPIDs{stream: ctx.Self(), replay: pid("live"), tracker: pid("live"), publisher: pid("publisher")}
	bound := int(min(s.cfg.MaxInflightRecords, 1<<20))
	for role, p := range map[string]actor.Producer{"publisher": newPublisher(s.env, s.cfg, 0, pids), "live": newLive(s.env, s.cfg, pids)} {
		if _, err := ctx.SpawnNamed(actor.PropsFromProducer(p, actor.WithMailbox(actor.Bounded(2*bound+64))), role); err != nil {
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
			return
		}
	}
	if err := s.checkConfiguredStart(l); err != nil {
		s.fail(ctx, err)
		return
	}
	present := map[int64]bool{}
	listedAt := time.Since(s.scheduleClock).Milliseconds() // not l.ListedAtMs: a wall clock may step
	for i, r := range l.Recordings {
		present[r.RecordingId] = true
		if err := s.checkOrigin(r); err != nil {
			s.fail(ctx, err)
			return
		}
		extended, err := s.checkEnd(r)
		if err == nil && extended != "" {
			err = s.reopen(ctx, r, i == len(l.Recordings)-1, extended, listedAt)
		}
		if err != nil {
			s.fail(ctx, err)
			return
		}
		if err := s.checkStart(r); err != nil {
			s.fail(ctx, err)
			return
		}
		if s.skip(r.RecordingId) {
			continue
		}
		if s.endUnmoved(r) {
			s.known[r.RecordingId] = r
			s.status.known(r, l.ListedAtMs)
			continue
		}
		if err := s.schedule.Add(progress.Recording{ID: r.RecordingId, StartMs: r.StartMs, StopMs: r.StopMs, Live: r.Live, Recorded: r.RecordedPosition, ListedAtMs: listedAt}); err != nil {
			s.fail(ctx, fmt.Errorf("recording %d: %w", r.RecordingId, err))
			return
		}
		s.known[r.RecordingId] = r
		s.status.known(r, l.ListedAtMs)
	}
	// A recording ferry has not finished must not vanish (lesson 14).
	for id := range s.stored {
		if !present[id] && !s.storedCompleted[id] && !s.completed[id] {
			s.fail(ctx, fmt.Errorf("recording %d has a checkpoint but is no longer in the archive (purged by retention, or another archive): its unpublished records are lost; %s", id, resetToGoOn(s.cfg.Def.Name)))
			return
		}
	}
	for id := range s.known {
		if !present[id] && !s.completed[id] && !s.storedCompleted[id] {
			s.fail(ctx, fmt.Errorf("recording %d vanished from the archive before ferry published all of it: its unpublished records are lost; %s", id, resetToGoOn(s.cfg.Def.Name)))
			return
		}
	}
	s.completeFinished(ctx)
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
// publishes their history nor skips what was recorded meanwhile. false: a live end could
// not be read, and the next listing decides.
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
	from := map[int64]int64{}
	for _, r := range l.Recordings {
		switch {
		case lowestLive < 0 || r.RecordingId < lowestLive:
		case r.Live:
			from[r.RecordingId] = max(r.RecordedPosition, r.StartPosition)
		default:
			from[r.RecordingId] = r.StopPosition
		}
		if pos, ok := from[r.RecordingId]; ok {
			ctx.Send(s.checkpointer, &messages.SeedCheckpoint{RecordingId: r.RecordingId, Position: pos, StartMs: r.StartMs, SessionId: r.SessionId})
		}
	}
	s.latestFrom = from
	if lowestLive < 0 {
		s.skip = func(id int64) bool { return id <= newest }
	} else {
		s.skip = func(id int64) bool { return id < lowestLive }
	}
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

func (s *streamSupervisor) spawnRecording(ctx actor.Context, rec *messages.RecordingInfo) {
	id := rec.RecordingId
	name := func(role string) string { return fmt.Sprintf("r%d-%s", id, role) }
	if n := s.reopenings[id]; n > 0 {
		// Published again after an extension: new names, as the stopped actors of the
		// earlier run may not have let go of theirs yet.
		name = func(role string) string { return fmt.Sprintf("r%d.%d-%s", id, n, role) }
	}
	pid := func(role string) *actor.PID {
		return actor.NewPID(ctx.ActorSystem().Address(), ctx.Self().Id+"/"+name(role))
	}
	pids := &recordingPIDs{stream: ctx.Self(), checkpointer: s.checkpointer, replay: pid("replay"), tracker: pid("tracker"), publisher: pid("publisher")}
	bound := int(min(s.cfg.MaxInflightRecords, 1<<20))
	spawn := func(role string, p actor.Producer, mailbox int) {
		props := actor.PropsFromProducer(p, actor.WithMailbox(actor.Bounded(mailbox)))
		if _, err := ctx.SpawnNamed(props, name(role)); err != nil {
			panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("spawn %s: %w", name(role), err)))
		}
	}
	// Tracker: batches and one outcome per record in flight. Publisher: batches and one
	// failure notice per record in flight. Replay: at most one credit message per outcome.
	if !s.stored[id] {
		// Before the replay exists, so that the seed is stored no later than its commits.
		ctx.Send(s.checkpointer, &messages.SeedCheckpoint{RecordingId: id, Position: s.startingPosition(rec), StartMs: rec.StartMs, SessionId: rec.SessionId})
	}
	spawn("tracker", newTracker(s.env, s.cfg, id, pids), 2*bound+64)
	spawn("publisher", newPublisher(s.env, s.cfg, id, pids), 2*bound+64)
	latestFrom := int64(-1)
	if s.atLatest(id) {
		latestFrom = s.startingPosition(rec)
	}
	upTo := int64(-1)
	if s.rechecking[id] {
		upTo = s.finalAt[id]
	}
	spawn("replay", newReplay(s.env, s.cfg, rec, pids, latestFrom, upTo), 2*bound+64)
	s.running[id] = pids
	s.env.Logger.Info("publishing recording", "stream", s.cfg.Def.Name, "recording", id, "live", rec.Live, "start_position", rec.StartPosition)
}

func (s *streamSupervisor) recordingCompleted(ctx actor.Context, p *messages.CheckpointPersisted) {
	id := p.RecordingId
	if s.completed[id] {
		return
	}
	if pids := s.running[id]; pids != nil {
		ctx.Stop(pids.replay)
		ctx.Stop(pids.tracker)
		ctx.Stop(pids.publisher)
		delete(s.running, id)
	}
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
			s.fail(ctx, fmt.Errorf("recording %d completed out of schedule: %w", id, err))
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
				s.fail(ctx, err)
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

// fail stops the stream for good and says why; the process and other streams go on.
func (s *streamSupervisor) fail(ctx actor.Context, err error) {
	if s.failed != nil {
		return
	}
	s.failed = err
	s.env.Logger.Error("stream failed; its other recordings stop, other streams go on", "stream", s.cfg.Def.Name, "error", err)
	for _, child := range ctx.Children() {
		if s.checkpointer == nil || child.Id != s.checkpointer.Id {
			ctx.Stop(child)
		}
	}
	s.running = map[int64]*recordingPIDs{}
	if s.onFailed != nil {
		s.onFailed(s.cfg.Def.Name, err)
	}
	s.pushStatus()
	if s.drainingFor != nil {
		s.drainWaiting = nil
		s.drainStep(ctx)
	}
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
		if pids.tracker.Id != pids.replay.Id {
			ctx.Send(pids.tracker, &messages.Drain{})
		}
	}
	s.drainStep(ctx)
}

// drainStep flushes the checkpoints once every tracker has nothing in flight.
func (s *streamSupervisor) drainStep(ctx actor.Context) {
	switch {
	case len(s.drainWaiting) > 0:
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
	s.status.stopped = true
	s.pushStatus()
}

// streamProps builds the StreamSupervisor's props with its supervision strategy.
func streamProps(env *Env, cfg *StreamConfig, self *actor.PID, system *actor.ActorSystem, onFailed func(string, error)) (*actor.Props, error) {
	giveUp := func(child *actor.PID, class supervisor.Class, reason any) {
		err, ok := reason.(error)
		if !ok {
			err = fmt.Errorf("%v", reason)
		}
		system.Root.Send(self, &streamFailed{child: child, err: fmt.Errorf("%s failed (%s) and is not restarted: %w", child.Id, class, err)})
	}
	strategy, err := supervisor.NewStrategy(cfg.Restart, giveUp, env.Logger)
	if err != nil {
		return nil, err
	}
	producer := func() actor.Actor { return &streamSupervisor{env: env, cfg: cfg, onFailed: onFailed} }
	return actor.PropsFromProducer(producer, actor.WithSupervisor(strategy), actor.WithMailbox(actor.Bounded(4096))), nil
}

// refuseRestart fails the stream for good (Poison) when an actor that cannot be restarted in
// place starts again after a failure: its state is the bookkeeping of records in flight or
// of commits not yet persisted, which a new incarnation would not have. A new start of ferry
// resumes from the persisted checkpoint. who names the actor, e.g. "recording 7: the
// publisher".
func refuseRestart(who string) {
	panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("%s failed and cannot be restarted in place; restart ferry to resume from the persisted checkpoint", who)))
}

// checkOrigin fails if the archive lists under r's id another recording than the one ferry
// checkpointed, or listed before, under it. Another start time: the archive's catalog was
// replaced or rebuilt and its ids start again, so taking the new recording for the old would
// skip it where the old one was completed, and resume it from the old one's position
// otherwise (lesson 14); so it is too when a recording with a lower id than a checkpointed
// one began after it, as ids are given in start order. The same start in another session:
// the recording was extended (ExtendRecording) after it stopped, which ferry follows (see
// checkEnd).
func (s *streamSupervisor) checkOrigin(r *messages.RecordingInfo) error {
	was, sameStart := "", false
	if cp, ok := s.origins.byRecording[r.RecordingId]; ok && !cp.SameRecording(r.StartMs, r.SessionId) {
		was, sameStart = fmt.Sprintf("the one ferry checkpointed at %d began at %s in session %d", cp.Position, formatMs(cp.StartMs), cp.SessionID), cp.StartMs == r.StartMs
	} else if k, ok := s.known[r.RecordingId]; ok && (k.StartMs != r.StartMs || k.SessionId != r.SessionId) {
		was, sameStart = fmt.Sprintf("the one listed before began at %s in session %d", formatMs(k.StartMs), k.SessionId), k.StartMs == r.StartMs
	} else if cp, ok := s.laterCheckpointed(r); ok {
		return fmt.Errorf("recording %d in the archive began at %s, after recording %d, which ferry checkpointed, began at %s, although the archive gives ids in start order: "+
			"its catalog was replaced or rebuilt and reuses recording ids, and ferry, which leaves out recordings below the first it took on, would skip this one; it stops the stream instead (lesson 14). %s. "+
			"If the archive was not replaced (a recording replicated from another archive keeps its original start time, and the archive's clock may have stepped back), run `%s`: "+
			"the stream is published again from its configured start_position, and what the topic's deduplication remembers is not stored twice",
			r.RecordingId, formatMs(r.StartMs), cp.RecordingID, formatMs(cp.StartMs), renameToGoOn, store.ResetCommand(s.cfg.Def.Name))
	} else {
		return nil
	}
	if sameStart {
		return nil // extended: followed, or reopened (checkEnd)
	}
	return fmt.Errorf("recording %d in the archive is not the recording ferry published under that id: %s, the archive's begins at %s in session %d. "+
		"The archive's catalog was replaced or rebuilt and reuses recording ids; ferry stops the stream rather than take one recording for another (lesson 14). %s",
		r.RecordingId, was, formatMs(r.StartMs), r.SessionId, renameToGoOn)
}

// checkEnd tells whether a recording ferry published to its end no longer ends there in
// the archive (lesson 14). Extended (the archive's ExtendRecording appends to a stopped
// recording under its id, in the extending publication's session or, if it gives its
// session id, the same one): it is live again, or recorded or stopped beyond the end, and
// checkEnd says how (for reopen); unnoticed, what was appended would never be published, as
// the recording is done. Truncated: it stops before the end, an error; records ferry
// published are gone from the archive, and an extension from there would reuse positions
// the topic's deduplication has seen. A recording finished in this run may still be listed
// live until the listing that reports its stop, so only growth beyond its end tells an
// extension there. Listed stopped at the end at another stop time than in the listing
// before, it was extended by nothing and stopped again, or truncated and recorded again up
// to the same end, which only reading its last record again tells apart (reopen); the first
// listing of a run has no stop time before it to compare. (A recording extended before ferry
// finished it is followed as it is: its replay reads on, or starts again from the checkpoint.)
func (s *streamSupervisor) checkEnd(r *messages.RecordingInfo) (extended string, err error) {
	id := r.RecordingId
	final, ok := s.finalAt[id]
	if !ok {
		return "", nil
	}
	done := s.completed[id] || s.storedCompleted[id] || s.rechecking[id] // its stop was listed
	switch {
	case !r.Live && r.StopPosition > final:
		return fmt.Sprintf("it now stops at %d", r.StopPosition), nil
	case r.Live && r.RecordedPosition > final:
		return fmt.Sprintf("it is recording again, at %d", r.RecordedPosition), nil
	case r.Live && done:
		return "it is recording again", nil
	case !r.Live && r.StopPosition == final && done && s.known[id] != nil && !s.known[id].Live && s.known[id].StopMs != r.StopMs:
		return fmt.Sprintf("it stopped again at %d, at %s (before, at %s): extended by nothing, or truncated and recorded again to the same end", r.StopPosition, formatMs(r.StopMs), formatMs(s.known[id].StopMs)), nil
	case !r.Live && r.StopPosition < final:
		return "", fmt.Errorf("recording %d now stops at %d, before %d, where ferry published it to its end: the archive truncated it (TruncateRecording), and the records after %d that ferry published are no longer in the archive. "+
			"If the recording is extended from there, the topic's deduplication drops the new records up to %d as already stored (their sequence ids are positions); ferry stops the stream rather than let that happen unseen. "+
			"Record a continuation as a new recording instead; to go on, give the stream a new name in the configuration (new producers, published from its start_position)",
			id, r.StopPosition, final, r.StopPosition, final)
	}
	return "", nil
}

// endUnmoved reports whether r is a recording the schedule has completed, listed stopped at
// the end ferry published it to: the schedule has nothing to learn from it. Its stop time
// changes when it was extended by nothing and stopped again between two listings, which
// checkEnd tells while it is listed (and reopen has the recording checked again); the
// schedule, which knows no positions, would take the new stop of a completed recording for
// a conflict.
func (s *streamSupervisor) endUnmoved(r *messages.RecordingInfo) bool {
	final, ok := s.finalAt[r.RecordingId]
	return ok && s.completed[r.RecordingId] && !r.Live && r.StopPosition == final
}

// reopen publishes the extension of recording r, which ferry had published to its end
// (checkEnd says how it was extended), from that end on: under the same producer, whose
// sequence ids (positions) go on from there, so the topic's deduplication stores each
// record once. Only the newest recording of the stream is reopened so (newest: the last of
// this listing), or one listed at an earlier listing of this run, no recording after which
// was listed before or stored: the recordings after it in this listing wait for its
// extension (listedBefore). Recordings after it may already be
// published, and its extension would land among theirs, out of the order the schedule
// keeps; for one of those the stream stops and says what to do; so it does for a recording
// whose checkpoint, of an older ferry, does not tell it from another archive's.
//
// A recording ferry finished in this run that was extended before the schedule took its
// completion (the listing saw it live again first) is followed, newest or not: the
// recordings after it wait for it. A recording stopped again at the end ferry published it
// to, at another time, is rechecked, whichever recordings follow it: its replay reads the
// last record ferry published again and publishes nothing after it, as nothing was
// appended. That tells an extension by nothing from a recording truncated and recorded
// again up to the same end.
//
// A recording truncated and then extended beyond ferry's end between two listings (or while
// ferry was down) shows only the new stop here; its replay tells it, reading the last record
// ferry published again before it publishes anything after it (replay.go, recordCheck).
func (s *streamSupervisor) reopen(ctx actor.Context, r *messages.RecordingInfo, newest bool, how string, listedAt int64) error {
	id := r.RecordingId
	final := s.finalAt[id]
	sameEnd := !r.Live && r.StopPosition == final
	rec := progress.Recording{ID: id, StartMs: r.StartMs, StopMs: r.StopMs, Live: r.Live, Recorded: r.RecordedPosition, ListedAtMs: listedAt}
	if s.rechecking[id] {
		// Read again up to its end and no further (replay.go, upTo); grown meanwhile, it is a
		// done recording extended.
		if sameEnd {
			s.recheckAgain[id] = true // once this reading is done (completeFinished)
			return nil
		}
		if err := s.mayPublishExtension(id, newest || s.listedBefore(id), how); err != nil {
			return err
		}
		delete(s.rechecking, id)
		delete(s.recheckAgain, id) // the next reading reads on, to the extension's end
		if s.running[id] != nil {
			// Completed at the end it was read to, it waits for the listing that shows it
			// extended beyond (completeFinished), which publishes the extension (checkEnd).
			if err := s.schedule.Reopen(rec); err != nil {
				return fmt.Errorf("recording %d was extended while ferry read it again: %w", id, err)
			}
			s.env.Logger.Info("recording extended while ferry read it again: its extension is published once the reading is done", "stream", s.cfg.Def.Name, "recording", id, "from", final, "extension", how)
			return nil
		}
		// Not running (read and completed already, or not started yet): published on
		// below.
	}
	what := "recording extended after ferry published it to its end: publishing the extension"
	var err error
	switch {
	case sameEnd:
		err = s.schedule.Recheck(rec)
		if cp := s.storedCheckpoint(id); s.storedCompleted[id] && s.reopenings[id] == 0 && !cp.LastRecord.Known() {
			s.env.Logger.Warn("the recording's checkpoint, written by an older ferry, does not keep its last record: whether it was rewritten up to the same end cannot be checked", "stream", s.cfg.Def.Name, "recording", id)
		}
		what = "recording stopped again at the end ferry published it to: reading its last record again"
	case s.completed[id] || s.storedCompleted[id]:
		if err := s.mayPublishExtension(id, newest || s.listedBefore(id), how); err != nil {
			return err
		}
		fallthrough
	default:
		// Completed and allowed (above); or finished in this run but extended before the
		// schedule completed it: recordings listed while it was stopped still wait for it
		// (Schedule), so it is followed wherever it stands. One let go beside it (it was live when they began: a
		// concurrent publisher's) publishes beside its extension too, as beside its growth.
		err = s.schedule.Reopen(rec)
	}
	if err != nil && !errors.Is(err, progress.ErrUnknownRecording) { // unknown: not scheduled yet (a restart)
		return fmt.Errorf("recording %d was extended after ferry published it to its end: %w", id, err)
	}
	s.env.Logger.Info(what, "stream", s.cfg.Def.Name, "recording", id, "from", final, "extension", how)
	delete(s.completed, id)
	delete(s.finished, id)
	delete(s.storedCompleted, id)
	if sameEnd {
		// Its end stays where ferry published it to, until the replay has read it again: an
		// extension meanwhile is a done recording's (checkEnd).
		s.rechecking[id] = true
	} else {
		delete(s.finalAt, id)
	}
	s.stored[id] = true // its completed checkpoint is where the replay resumes, no seed
	s.reopenings[id]++
	ctx.Send(s.checkpointer, &messages.RecordingReopened{RecordingId: id})
	s.status.reopened(id)
	return nil
}

// listedBefore reports whether recording id was listed at an earlier listing of this run
// (s.known is updated after reopen). Then so was every recording the archive held at that
// listing: one after id that is neither known nor stored began since, so no run published
// any of it, and the schedule holds it behind id's extension (Schedule.Reopen: behind a
// stopped recording as behind any, behind one live again as behind an extended one). At a
// run's first listing a later recording without a checkpoint may have been published by an
// earlier run: its first checkpoint is stored no later than its commits, not before its
// sends.
func (s *streamSupervisor) listedBefore(id int64) bool { return s.known[id] != nil }

// mayPublishExtension returns the stream's failure unless the extension of recording id,
// which ferry had published to its end, may be published (see reopen). held: no recording
// after it is in this listing, or those that are wait for the extension.
func (s *streamSupervisor) mayPublishExtension(id int64, held bool, how string) error {
	if !held {
		return s.extendedError(id, how)
	}
	if _, listed := s.known[id]; !listed && s.origins.byRecording[id].StartMs == 0 {
		// A checkpoint of an older ferry, which stored no start time: the recording may be
		// another archive's under a reused id (checkOrigin cannot tell), whose records up to
		// ferry's end would be skipped. The stream stops and says both.
		return s.extendedError(id, how)
	}
	for k := range s.known {
		if k > id {
			return s.extendedError(id, how)
		}
	}
	for k := range s.stored {
		if k > id {
			return s.extendedError(id, how)
		}
	}
	return nil
}

// storedCheckpoint is recording id's checkpoint as the store held it at start (zero: none).
func (s *streamSupervisor) storedCheckpoint(id int64) store.Checkpoint {
	for _, cp := range s.cfg.Stored.Checkpoints {
		if cp.RecordingID == id {
			return cp
		}
	}
	return store.Checkpoint{}
}

// extendedError is the stream's failure when a recording ferry published to its end was
// extended; how names what shows it.
func (s *streamSupervisor) extendedError(id int64, how string) error {
	end := ""
	if final, ok := s.finalAt[id]; ok {
		end = fmt.Sprintf(", where ferry published it to its end at %d", final)
	}
	producer, err := progress.ProducerName(s.cfg.Def.Name, id)
	if err != nil {
		producer = "of the recording"
	}
	unsure := ""
	if _, known := s.known[id]; !known && s.origins.byRecording[id].StartMs == 0 {
		// A checkpoint of an older ferry, which stored no start time: an archive that
		// reuses recording ids looks the same.
		unsure = fmt.Sprintf(" (If the archive was replaced and reuses recording ids instead, the reset would not do: %s.)", renameToGoOn)
	}
	return fmt.Errorf("recording %d was extended after it stopped%s (the archive's ExtendRecording: %s), and recordings after it came first: ferry follows the extension of the stream's newest recording only, "+
		"and stops the stream rather than leave what was appended unpublished or put it among the later recordings. To publish the extension, run `%s`: the stream is then published again from its configured start_position. "+
		"Only what was appended is stored if that start includes recording %d (start_position earliest, or a start_recording_id at or below %d; from latest it would be skipped) "+
		"and the topic's deduplication still remembers the recording's producer %s (Pulsar forgets a producer idle for brokerDeduplicationProducerInactivityTimeoutMinutes, 6 hours by default): "+
		"records it no longer remembers are stored again. Better, record a continuation as a new recording.%s",
		id, end, how, store.ResetCommand(s.cfg.Def.Name), id, id, producer, unsure)
}

// renameToGoOn is the way on after the archive's catalog was replaced.
const renameToGoOn = "To publish the new archive's recordings, give the stream a new name in the configuration: its producers (ferry-<name>-<recording id>) are then new " +
	"to the topic's deduplication, which would otherwise drop the reused ids' records as duplicates of the old ones (a checkpoint reset alone would not do)"

// laterCheckpointed returns, for a recording the skip rule leaves out (an id below the
// lowest stored one), a stored checkpoint of a recording that began before it: the archive
// gives ids in start order, so the recording is not of the archive ferry checkpointed, and
// skipping it would drop a new archive's recording silently.
func (s *streamSupervisor) laterCheckpointed(r *messages.RecordingInfo) (store.Checkpoint, bool) {
	e, cps := s.origins.earliest, s.cfg.Stored.Checkpoints
	if e.StartMs == 0 || r.RecordingId >= cps[0].RecordingID || e.StartMs >= r.StartMs {
		return store.Checkpoint{}, false
	}
	return e, true
}

// storedOrigins are the stored checkpoints that know their recording's origin, by
// recording, and the one of them whose recording began first.
type storedOrigins struct {
	byRecording map[int64]store.Checkpoint
	earliest    store.Checkpoint // StartMs 0: none
}

func newStoredOrigins(cps []store.Checkpoint) storedOrigins {
	o := storedOrigins{byRecording: map[int64]store.Checkpoint{}}
	for _, cp := range cps {
		if cp.StartMs == 0 {
			continue
		}
		o.byRecording[cp.RecordingID] = cp
		if o.earliest.StartMs == 0 || cp.StartMs < o.earliest.StartMs {
			o.earliest = cp
		}
	}
	return o
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

// checkStart fails if a recording that ferry has not begun to publish lost records at its
// start since an earlier listing: the archive purged or detached its first segments
// (retention) while it waited for an earlier recording. Started at its new start, it would
// skip them silently. A running replay checks its own start (replay.go), and a recording
// ferry starts from a later position (a checkpoint, start_position) loses nothing it would
// have published.
func (s *streamSupervisor) checkStart(r *messages.RecordingInfo) error {
	id := r.RecordingId
	k, ok := s.known[id]
	if !ok || r.StartPosition <= k.StartPosition || s.running[id] != nil || s.completed[id] || s.finished[id] || s.storedCompleted[id] || s.reopenings[id] > 0 || s.atLatest(id) {
		return nil
	}
	for _, cp := range s.cfg.Stored.Checkpoints {
		if cp.RecordingID == id && cp.Position >= r.StartPosition {
			return nil
		}
	}
	if st := s.cfg.Start; st.Kind == config.StartAt && st.RecordingID == id && st.Position >= r.StartPosition {
		return nil
	}
	return fmt.Errorf("recording %d lost its records from position %d to %d before ferry published them: the archive purged or detached its first segments (retention) while it waited for an earlier recording; %s",
		id, k.StartPosition, r.StartPosition, resetToGoOn(s.cfg.Def.Name))
}

// formatMs is a Unix epoch millisecond time as operators read it.
func formatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// resetToGoOn is the way on for a stream stopped over records the archive no longer has:
// accept the loss, and publish the stream again from its start position.
func resetToGoOn(stream string) string {
	return fmt.Sprintf("to go on without them, run `%s`: the stream then publishes again from its configured start_position, and what it had published is stored again unless the topic's deduplication still remembers its producers", store.ResetCommand(stream))
}
