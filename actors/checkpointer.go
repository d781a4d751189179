package actors

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// checkpointTick is how often the checkpointer asks its policies whether a save is due
// (time-based saves and retries); count-based saves are issued at once.
const checkpointTick = 20 * time.Millisecond

// checkpointer is the Checkpointer actor of one stream: it owns one progress.CheckpointPolicy
// per recording and the store writes. One write (a batch of saves, one transaction) is in
// flight at a time, on a background task (Env.tasks), not the actor's goroutine; its result
// comes back as a message. It never writes a position the tracker did not report as
// committed (lesson 1), persists even when no new records arrive (lesson 3), and retries a
// failing store with back-off.
//
// Its mailbox holds commits (at most one per acknowledgement — the trackers send one per
// burst — bounded by the replays' credits), watermark requests, one write result and one tick.
type checkpointer struct {
	env         *Env
	cfg         *StreamConfig
	incarnation int

	// policies are the recordings' checkpoint policies, each from its seed or first replay
	// start until its completed checkpoint is persisted (then its persisted checkpoint is
	// all there is to know of it, until it is reopened).
	policies map[int64]*progress.CheckpointPolicy
	// lastRecords are the last records committed (the tracker's marks), or stored, per
	// recording: each goes with a save of its recording's committed position.
	lastRecords map[int64]store.RecordMark
	persisted   map[int64]store.Checkpoint
	// earlier are the recordings whose checkpoints the store held when the pipeline
	// started (Watermark.earlier).
	earlier map[int64]bool
	// origins are the recordings as listed, stored with every checkpoint so that a reused
	// recording id is recognised (stream.go, checkOrigin).
	origins map[int64]origin
	// fromStart are the recordings whose seed, not stored yet, is from their start
	// (SeedCheckpoint.from_start; store.Checkpoint.FromStart): saved saying so, until a
	// replay takes the recording on (takeOn).
	fromStart map[int64]bool
	// takingOn are the replay incarnations waiting to be taken on (TakenOn), by recording.
	takingOn map[int64][]takeOnWaiter
	// reopened are completed recordings published again from their end (extended): their
	// next replay start replaces the completed policy.
	reopened map[int64]bool
	// routes are how many partitions each recording is routed by, as stored or as its
	// first publisher asked for it to be (RouteRecording): every save of the recording
	// stores it. routeWaiters are the publishers waiting for theirs to be stored
	// (RecordingRouted).
	routes       map[int64]int32
	routeWaiters map[int64][]*actor.PID
	// listedStops is where each recording stopped when a listing last showed it stopped
	// somewhere new (RecordingListedStopped), as stored or to be: every save of the
	// recording stores it (store.Checkpoint.ListedStop). stopsDue are the stored
	// checkpoints that do not keep theirs yet.
	listedStops map[int64]stopMark
	stopsDue    map[int64]bool
	// amendFailure paces the writes made for routes, listed stops or the definition alone
	// (amendSaves) when they fail.
	amendFailure amendFailure
	// defined: the store holds the stream's definition (it did at start, or a write of
	// this incarnation succeeded); defining: it is to, for StartDecided, by a write of the
	// definition alone if no other goes first (paced by amendFailure when it fails).
	defined, defining bool
	writing           bool
	// writeStartMs is when the write in flight began; hungReported, that it was reported as
	// hung (it outlasted the longest pause between retries: see checkHung).
	writeStartMs int64
	hungReported bool
	flushing     bool
	ticker       *time.Ticker
	stop         chan struct{}
}

// saveResult is a finished store write.
type saveResult struct {
	saves  []progress.Save
	cps    []store.Checkpoint // what was written of each save
	amends []store.Checkpoint // checkpoints written again as stored, amended (amendSaves)
	define bool               // written for StartDecided, alone if nothing else
	err    error
	took   time.Duration
}

// checkpointTickMsg is the periodic self-message.
type checkpointTickMsg struct{}

func newCheckpointer(env *Env, cfg *StreamConfig) actor.Producer {
	incarnations := 0
	return func() actor.Actor {
		incarnations++
		c := &checkpointer{env: env, cfg: cfg, incarnation: incarnations, defined: cfg.Stored.Stored,
			policies:     map[int64]*progress.CheckpointPolicy{},
			lastRecords:  map[int64]store.RecordMark{},
			persisted:    map[int64]store.Checkpoint{},
			earlier:      map[int64]bool{},
			origins:      map[int64]origin{},
			fromStart:    map[int64]bool{},
			takingOn:     map[int64][]takeOnWaiter{},
			reopened:     map[int64]bool{},
			routes:       map[int64]int32{},
			routeWaiters: map[int64][]*actor.PID{},
			listedStops:  map[int64]stopMark{},
			stopsDue:     map[int64]bool{},
		}
		for _, cp := range cfg.Stored.Checkpoints {
			c.persisted[cp.RecordingID] = cp
			c.earlier[cp.RecordingID] = true
			if cp.Partitions > 0 {
				c.routes[cp.RecordingID] = cp.Partitions
			}
			if cp.ListedStop > 0 {
				c.listedStops[cp.RecordingID] = keptStop(cp)
			}
		}
		return c
	}
}

func (c *checkpointer) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if c.incarnation > 1 {
			// A restarted checkpointer would have lost every policy and the commits not yet
			// persisted: the next commit would fail again, a replay restarted meanwhile
			// would resume from the positions stored at start, and a drain would report
			// flushed with nothing written. The stream stops, loudly, instead.
			refuseRestart(fmt.Sprintf("stream %s: the checkpointer", c.cfg.Def.Name))
		}
		c.startTicker(ctx)
	case *messages.WatermarkRequest:
		if len(c.takingOn[msg.RecordingId]) > 0 {
			// A replay is being taken on (takeOn): where it begins, seeded again, is where
			// the store's seed is about to be — no longer from the start, so that no later
			// incarnation follows the start back past where that one began.
			ctx.Respond(&messages.Watermark{RecordingId: msg.RecordingId, Generation: msg.Generation, Stored: true, Position: c.policies[msg.RecordingId].Start(), Seed: true, Partitions: c.persisted[msg.RecordingId].Partitions, ForgottenTo: c.persisted[msg.RecordingId].ForgottenTo})
			return
		}
		cp, ok := c.persisted[msg.RecordingId]
		w := &messages.Watermark{RecordingId: msg.RecordingId, Generation: msg.Generation, Stored: ok, Position: cp.Position, Completed: cp.Completed, Seed: cp.Seed, FromStart: cp.FromStart,
			Partitions: cp.Partitions, Earlier: c.earlier[msg.RecordingId], StoredAtMs: cp.UpdatedAtMs, ForgottenTo: cp.ForgottenTo}
		if m := cp.LastRecord; m.Known() {
			w.LastRecord = &messages.RecordMark{Start: m.Start, End: m.End, Checksum: m.Checksum}
		}
		ctx.Respond(w)
	case *messages.RouteRecording:
		c.route(ctx, msg)
	case *messages.StartDecided:
		// Its seeds in one write (or none: the definition alone).
		for _, sd := range msg.Seeds {
			c.seed(sd)
		}
		c.defining = !c.defined && len(msg.Seeds) == 0
		c.flush(ctx, c.env.elapsedMs())
	case *messages.SeedCheckpoint:
		c.seed(msg)
		c.flush(ctx, c.env.elapsedMs())
	case *messages.RecordingReopened:
		c.reopened[msg.RecordingId] = true
	case *messages.RecordingListedStopped:
		// A completed one too: extended since (reopened), it is checked against its stop
		// until a save of the extension is stored.
		c.listedStops[msg.RecordingId] = stopMark{msg.StopPosition, msg.StopMs}
		if _, stored := c.persisted[msg.RecordingId]; stored {
			c.stopsDue[msg.RecordingId] = true // one not stored yet has it with its seed
			c.flush(ctx, c.env.elapsedMs())
		}
	case *messages.ReplayStarted:
		// The stream seeds a recording before it spawns the replay; one it did not seed
		// has a stored checkpoint, or has its seed here.
		c.track(ctx, msg.RecordingId, msg.FromPosition, origin{msg.StartMs, msg.SessionId})
		c.takeOn(ctx, msg)
	case *messages.Committed:
		if msg.Records == 0 && c.letGoAt(msg.RecordingId, msg.Position) {
			return // nothing new of a completed recording: as its completed policy took it
		}
		p, now := c.policy(msg.RecordingId), c.env.elapsedMs()
		if err := p.Committed(msg.Position, int(msg.Records), now); err != nil {
			panic(supervisor.Fail(supervisor.Bug, err))
		}
		if m := msg.LastRecord; m != nil {
			c.lastRecords[msg.RecordingId] = store.RecordMark{Start: m.Start, End: m.End, Checksum: m.Checksum}
		}
		c.flush(ctx, now)
	case *messages.RecordingFinished:
		if c.letGoAt(msg.RecordingId, msg.FinalPosition) {
			return // finished again where it completed: as its completed policy took it
		}
		p, now := c.policy(msg.RecordingId), c.env.elapsedMs()
		if err := p.Complete(msg.FinalPosition, now); err != nil {
			panic(supervisor.Fail(supervisor.Bug, err))
		}
		c.flush(ctx, now)
	case *checkpointTickMsg:
		c.checkHung(ctx)
		c.flush(ctx, c.env.elapsedMs())
	case *saveResult:
		c.saved(ctx, msg)
	case *messages.Drain:
		c.flushing = true
		for _, p := range c.policies {
			p.Shutdown()
		}
		c.flush(ctx, c.env.elapsedMs())
	case *actor.Stopping, *actor.Restarting:
		if c.stop != nil {
			close(c.stop)
			c.stop = nil
		}
	}
}

// origin is a recording as listed: what tells it from another under the same id.
type origin struct {
	startMs int64
	session int32
}

// track gives recording id a checkpoint policy starting at from, unless it has one (not
// completed and reopened since); a recording the store holds nothing of is seeded (its
// start saved at once). The stream sends a seed before it spawns the replay, so that it is
// stored no later than its commits.
func (c *checkpointer) track(ctx actor.Context, id, from int64, o origin) {
	c.begin(id, from, o)
	c.flush(ctx, c.env.elapsedMs())
}

// seed begins the policy of a recording seeded (SeedCheckpoint), its save due; the caller
// flushes.
func (c *checkpointer) seed(sd *messages.SeedCheckpoint) {
	c.fromStart[sd.RecordingId] = sd.FromStart
	c.begin(sd.RecordingId, sd.Position, origin{sd.StartMs, sd.SessionId})
}

// begin is track without the flush.
func (c *checkpointer) begin(id, from int64, o origin) {
	c.origins[id] = o
	if _, ok := c.policies[id]; ok && !c.reopened[id] {
		return
	}
	delete(c.reopened, id)
	p, err := progress.NewCheckpointPolicy(id, from, c.cfg.Checkpoint)
	if err != nil {
		panic(supervisor.Fail(supervisor.Bug, err))
	}
	now := c.env.elapsedMs()
	if _, ok := c.lastRecords[id]; !ok {
		c.lastRecords[id] = c.persisted[id].LastRecord // what the replay resumes after (zero if none)
	}
	if _, stored := c.persisted[id]; !stored {
		p.Seed(now)
	}
	if c.flushing {
		p.Shutdown()
	}
	c.policies[id] = p
}

// route has the count of partitions recording id is routed by stored, for a publisher
// about to send its first record, and answers once it is (RecordingRouted): with the count
// stored already, or the first one a publisher asked for (a second publisher of the
// recording in this run routes where the first did). The count goes with the recording's
// next save, made at once if none is due (flush).
func (c *checkpointer) route(ctx actor.Context, msg *messages.RouteRecording) {
	id := msg.RecordingId
	if _, ok := c.routes[id]; !ok {
		c.routes[id] = msg.Partitions
	}
	c.routeWaiters[id] = append(c.routeWaiters[id], ctx.Sender())
	c.routeStored(ctx, id)
	c.flush(ctx, c.env.elapsedMs())
}

// routeStored answers the publishers waiting for recording id's count once the store
// holds it.
func (c *checkpointer) routeStored(ctx actor.Context, id int64) {
	by := c.routes[id]
	if len(c.routeWaiters[id]) == 0 || c.persisted[id].Partitions != by {
		return
	}
	for _, w := range c.routeWaiters[id] {
		ctx.Send(w, &messages.RecordingRouted{RecordingId: id, Partitions: by})
	}
	delete(c.routeWaiters, id)
}

// amendSaves are the checkpoints to write again, as stored, with what no save of this write
// (saves) carries: the count of partitions their recording is routed by, for the publishers
// waiting for it (routeWaiters), and the stop a listing showed it at (stopsDue), which the
// next run checks the recording against (actors, checkTail). Only checkpoints the store
// holds: a seed not yet stored carries both when it is. Not while the last of them failed
// less than its back-off ago, unless the write goes out anyway.
func (c *checkpointer) amendSaves(saves []progress.Save, now int64) []store.Checkpoint {
	if len(c.routeWaiters) == 0 && len(c.stopsDue) == 0 || len(saves) == 0 && now < c.amendFailure.retryAtMs {
		return nil
	}
	var cps []store.Checkpoint
	for id := range c.routeWaiters {
		if !c.stopsDue[id] {
			cps = c.amend(cps, saves, id)
		}
	}
	for id := range c.stopsDue {
		cps = c.amend(cps, saves, id)
	}
	slices.SortFunc(cps, func(a, b store.Checkpoint) int { return cmp.Compare(a.RecordingID, b.RecordingID) })
	return cps
}

// amend appends recording id's checkpoint as stored, with its route and listed stop, to cps,
// unless the store holds none, a save of this write carries them, its seed is being saved
// again (takeOn), or a save of it is due or failed: that save carries them, under the
// recording's back-off, and a failed write may have reached the store after all (bbolt
// writes the meta page before the fsync that fails), which the checkpoint as persisted here
// would then move back. Its time stays when it was taken: for a seed, the publisher reads
// it as the time before which nothing of the recording was sent.
func (c *checkpointer) amend(cps []store.Checkpoint, saves []progress.Save, id int64) []store.Checkpoint {
	cp, stored := c.persisted[id]
	if p, tracked := c.policies[id]; !stored || tracked && p.Unsaved() || len(c.takingOn[id]) > 0 ||
		slices.ContainsFunc(saves, func(s progress.Save) bool { return s.RecordingID == id }) {
		return cps
	}
	cp.Partitions, cp.ListedStop, cp.ListedStopMs = c.routes[id], c.listedStops[id].position, c.listedStops[id].atMs
	return append(cps, cp)
}

// amendFailure is the back-off of writes made for routes, listed stops or the definition
// alone that failed.
type amendFailure struct {
	consecutive int
	retryAtMs   int64
}

// amendFailed counts a failed write that carried amended checkpoints or the definition (define),
// and returns how many failed in a row and when the next may go: checkpoint.retry_min_ms,
// doubled at each further failure up to checkpoint.retry_max_ms, as for any save.
func (c *checkpointer) amendFailed(res *saveResult, now int64) (consecutive int, retryAtMs int64) {
	if len(res.amends) == 0 && !res.define {
		return c.amendFailure.consecutive, c.amendFailure.retryAtMs
	}
	f := &c.amendFailure
	f.consecutive++
	wait := c.cfg.Checkpoint.RetryMinMs
	for i := 1; i < f.consecutive && wait < c.cfg.Checkpoint.RetryMaxMs; i++ {
		wait *= 2
	}
	f.retryAtMs = now + min(wait, c.cfg.Checkpoint.RetryMaxMs)
	return f.consecutive, f.retryAtMs
}

// takeOnWaiter is a replay incarnation waiting for its TakenOn.
type takeOnWaiter struct {
	pid *actor.PID
	gen uint64
}

// takeOn answers a replay incarnation that started (ReplayStarted) once it may send: at once,
// unless the recording's seed — stored, or on its way to the store — is from its start
// (store.Checkpoint.FromStart), which a replay may still follow back to an earlier start
// (replay.go, openReplay). The seed is then saved again, where this replay begins and no
// longer from_start, and the replay waits for that: from its first record sent on, Pulsar
// may hold records of the recording from the seed on, and records below them sent later
// would be dropped as duplicates by their sequence ids (positions). So no replay ever
// follows a start back past a record sent, in this run or after a restart.
//
// A replay taken on at once still has nothing sent before its recording's checkpoint is
// stored: the publisher's first send waits for the count of partitions stored with it
// (route, RecordingRouted), which a seed not yet stored carries once it is. A start decided
// by start_position latest, which a restart would decide again elsewhere, is so stored
// before anything of it is published.
func (c *checkpointer) takeOn(ctx actor.Context, msg *messages.ReplayStarted) {
	id := msg.RecordingId
	taken := &messages.TakenOn{RecordingId: id, Generation: msg.Generation}
	if !c.fromStart[id] && !c.persisted[id].FromStart {
		ctx.Respond(taken)
		return
	}
	c.takingOn[id] = append(c.takingOn[id], takeOnWaiter{ctx.Sender(), msg.Generation})
	c.fromStart[id] = false
	now := c.env.elapsedMs()
	if err := c.policy(id).SeedAgain(msg.FromPosition, now); err != nil {
		panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("checkpointer: a recording whose seed is from its start was committed before a replay took it on: %w", err)))
	}
	c.flush(ctx, now)
}

// takenOn answers the replays waiting for recording id once its checkpoint as stored, cp,
// is no longer a seed from its start.
func (c *checkpointer) takenOn(ctx actor.Context, cp store.Checkpoint) {
	if cp.FromStart {
		return
	}
	for _, w := range c.takingOn[cp.RecordingID] {
		ctx.Send(w.pid, &messages.TakenOn{RecordingId: cp.RecordingID, Generation: w.gen})
	}
	delete(c.takingOn, cp.RecordingID)
}

// checkpoint is what the store keeps of a save.
func (c *checkpointer) checkpoint(s progress.Save) store.Checkpoint {
	o := c.origins[s.RecordingID] // a save follows the recording's seed or replay start
	cp := store.Checkpoint{RecordingID: s.RecordingID, Position: s.Position, Completed: s.Completed, UpdatedAtMs: c.env.nowMs(),
		StartMs: o.startMs, SessionID: o.session, Seed: s.Seed, FromStart: s.Seed && c.fromStart[s.RecordingID], Partitions: c.routes[s.RecordingID],
		ListedStop: c.listedStops[s.RecordingID].position, ListedStopMs: c.listedStops[s.RecordingID].atMs,
		ForgottenTo: c.persisted[s.RecordingID].ForgottenTo} // only forget writes it, offline
	// A save is of the committed position the last mark came with (Tick saves the latest,
	// and a recording's end only adds padding): a mark beyond it is a bug, which would store
	// a checkpoint the next start cannot check.
	if m := c.lastRecords[s.RecordingID]; !s.Seed {
		if m.End > s.Position {
			panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("checkpointer: recording %d: the last record committed [%d, %d) ends beyond the position %d saved", s.RecordingID, m.Start, m.End, s.Position)))
		}
		cp.LastRecord = m
	}
	return cp
}

// forget lets go of what the checkpointer keeps of recording id beyond its persisted
// checkpoint, once that is its completed one: nothing is committed of a completed recording
// until it is reopened, whose replay start (track) builds its policy again from the stored
// checkpoint. Kept, every completed recording of a long run would be walked at every tick.
func (c *checkpointer) forget(id int64) {
	delete(c.policies, id)
	delete(c.lastRecords, id)
	delete(c.origins, id)
	delete(c.fromStart, id)
}

// letGoAt reports whether recording id was let go of (forget) at its completed checkpoint,
// at position.
func (c *checkpointer) letGoAt(id, position int64) bool {
	_, tracked := c.policies[id]
	cp := c.persisted[id]
	return !tracked && cp.Completed && cp.Position == position
}

func (c *checkpointer) policy(rec int64) *progress.CheckpointPolicy {
	p, ok := c.policies[rec]
	if !ok {
		panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("checkpointer: recording %d committed before its replay started", rec)))
	}
	return p
}

func (c *checkpointer) startTicker(ctx actor.Context) {
	self, system := ctx.Self(), ctx.ActorSystem()
	stop := make(chan struct{})
	c.stop = stop
	ticker := time.NewTicker(checkpointTick)
	c.env.tasks().Go(func() {
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ticker.C:
				system.Root.Send(self, &checkpointTickMsg{})
			}
		}
	})
}

// flush issues the saves that are due at now, as one store transaction, unless one is in
// flight.
func (c *checkpointer) flush(ctx actor.Context, now int64) {
	if c.writing {
		c.reportFlushed(ctx)
		return
	}
	var saves []progress.Save
	for _, p := range c.policies {
		if s, ok := p.Tick(now); ok {
			saves = append(saves, s)
		}
	}
	if len(saves) > 0 {
		// No recording's checkpoint reaches the store before an earlier recording's seed:
		// the skip rule keeps recordings from the lowest one stored on (stream.go), so a
		// seed left behind (waiting out a failure's backoff) goes in this transaction too.
		highest := slices.MaxFunc(saves, func(a, b progress.Save) int { return cmp.Compare(a.RecordingID, b.RecordingID) }).RecordingID
		for id, p := range c.policies {
			if id < highest && p.Seeding() {
				if s, ok := p.TickSeed(); ok {
					saves = append(saves, s)
				}
			}
		}
	}
	amends := c.amendSaves(saves, now)
	define := c.defining && (len(saves) > 0 || len(amends) > 0 || now >= c.amendFailure.retryAtMs)
	if len(saves) == 0 && len(amends) == 0 && !define {
		c.reportFlushed(ctx)
		return
	}
	c.writing, c.writeStartMs, c.hungReported = true, now, false
	cps := make([]store.Checkpoint, len(saves))
	for i, s := range saves {
		cps[i] = c.checkpoint(s)
	}
	self, system, def, st := ctx.Self(), ctx.ActorSystem(), c.cfg.Def, c.env.Store
	if !c.env.tasks().Go(func() {
		start := time.Now()
		err := st.Save(def, slices.Concat(cps, amends))
		system.Root.Send(self, &saveResult{saves: saves, cps: cps, amends: amends, define: define, err: err, took: time.Since(start)})
	}) {
		c.writing = false
	}
}

func (c *checkpointer) saved(ctx actor.Context, res *saveResult) {
	c.writing = false
	ctx.Send(ctx.Parent(), &messages.StoreWritten{TookUs: res.took.Microseconds(), Failed: res.err != nil})
	now := c.env.elapsedMs()
	for i, s := range res.saves {
		p := c.policies[s.RecordingID]
		if res.err != nil {
			p.SaveFailed(s, res.err, now)
			continue
		}
		void := p.Void(s) // of a seed saved again since (takeOn): the new one is still to come
		if err := p.Saved(s, now); err != nil {
			panic(supervisor.Fail(supervisor.Bug, err))
		}
		c.persisted[s.RecordingID] = res.cps[i] // as written: marks may have moved on since
		if keptStop(res.cps[i]) != c.listedStops[s.RecordingID] {
			c.stopsDue[s.RecordingID] = true // listed while this write was under way
		}
		if void {
			continue
		}
		c.takenOn(ctx, res.cps[i])
		c.routeStored(ctx, s.RecordingID)
		ctx.Send(ctx.Parent(), &messages.CheckpointPersisted{RecordingId: s.RecordingID, Position: s.Position, Completed: s.Completed, Seed: s.Seed})
		if s.Completed && !p.Unsaved() {
			c.forget(s.RecordingID)
		}
	}
	if res.err == nil {
		c.defined, c.defining = true, false // every write stores the definition
		c.amendFailure = amendFailure{}
		for _, cp := range res.amends {
			c.persisted[cp.RecordingID] = cp
			c.routeStored(ctx, cp.RecordingID)
		}
		for id := range c.stopsDue {
			if cp, stored := c.persisted[id]; !stored || keptStop(cp) == c.listedStops[id] {
				delete(c.stopsDue, id)
			}
		}
	}
	if res.err != nil {
		// Only a transient failure is worth a retry: a save the store refuses as it stands
		// (corrupt data, a later checkpoint than ferry's, a call it cannot take) is refused
		// again, and would hold back every recording's checkpoint of the stream for good.
		if class := supervisor.Classify(res.err); class != supervisor.Transient {
			panic(supervisor.Fail(class, res.err))
		}
		consecutive, retryAt := c.amendFailed(res, now)
		if len(res.saves) > 0 {
			f := c.policies[res.saves[0].RecordingID].Failure()
			consecutive, retryAt = f.Consecutive, f.RetryAtMs
		}
		ctx.Send(ctx.Parent(), &messages.FailureObserved{Failure: &messages.Failure{AtMs: c.env.nowMs(), Kind: "checkpoint", Message: res.err.Error()}})
		c.env.Logger.Warn("checkpoint save failed; retrying with back-off", "stream", c.cfg.Def.Name, "consecutive", consecutive, "retry_in", time.Duration(retryAt-now)*time.Millisecond, "error", res.err)
	}
	c.flush(ctx, now)
}

// checkHung reports a write that has not returned for longer than the longest pause between
// retries (checkpoint.RetryMaxMs) as a failed one: a disk or network file system that hangs
// loses the checkpoints as surely as one that fails, and the health rule must see it. Its
// late result is reported as usual.
func (c *checkpointer) checkHung(ctx actor.Context) {
	now := c.env.elapsedMs()
	if !c.writing || c.hungReported || now-c.writeStartMs <= c.cfg.Checkpoint.RetryMaxMs {
		return
	}
	c.hungReported = true
	took := time.Duration(now-c.writeStartMs) * time.Millisecond
	ctx.Send(ctx.Parent(), &messages.StoreWritten{TookUs: took.Microseconds(), Failed: true})
	ctx.Send(ctx.Parent(), &messages.FailureObserved{Failure: &messages.Failure{AtMs: c.env.nowMs(), Kind: "checkpoint",
		Message: fmt.Sprintf("a checkpoint save has not returned for %s: the store's disk (or network file system) hangs", took)}})
	c.env.Logger.Warn("a checkpoint save has not returned; waiting for it", "stream", c.cfg.Def.Name, "for", took)
}

// reportFlushed tells the stream, while it drains, once everything its policies were
// given is persisted: every commit, every completion (a position persisted is not yet the
// recording done, which the next recording waits for), every seed, every listed stop, and
// the definition StartDecided asked for.
func (c *checkpointer) reportFlushed(ctx actor.Context) {
	if !c.flushing || c.writing || c.defining || len(c.stopsDue) > 0 {
		return
	}
	for _, p := range c.policies {
		if p.Unsaved() {
			return
		}
	}
	c.flushing = false
	ctx.Send(ctx.Parent(), &messages.CheckpointsFlushed{})
}
