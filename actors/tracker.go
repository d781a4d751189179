package actors

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// tracker is the CommitTracker[r] actor: the shell of progress.CommitTracker for one
// recording. Every record passes through it before the publisher sees it (so that no
// outcome can arrive for a record it does not know), and every Pulsar outcome comes back to
// it. It returns credits to the replay as records leave the pending set, reports commits
// (one per burst of acknowledgements) and the recording's end to the checkpointer, and asks
// the replay for a re-delivery when a publish failed (lesson 4).
//
// Its mailbox holds the replay's batches and one outcome per record in flight, each bounded
// by the replay's credits, and one of each of its own self-messages. A replay restarted for
// a re-delivery starts with its credits anew while the failed epoch's outcomes may still be
// due (the publisher sends nothing of the new epoch before they are all in), and a tracker
// lagging behind restarts that follow each other closely may still hold batches of ended
// generations (dropped as it reaches them): its mailbox (spawnRecording: twice the credits
// and some) can fill, and then holds back whoever sends into it — the replay, the Pulsar
// client's callbacks — until the tracker catches up; nothing is dropped. The tracker itself
// never waits for room (it could not make any): it sends to itself with sendToSelf.
type tracker struct {
	env         *Env
	cfg         *StreamConfig
	rec         int64
	pids        *recordingPIDs
	incarnation int

	core *progress.CommitTracker
	gen  uint64
	// causeDue: the re-delivery began at a skipped record (NotSent), and the failed send
	// that stopped its epoch, still to arrive, is the cause to put in the status.
	causeDue bool
	// received counts the records and bytes of generation gen that reached the tracker;
	// reported, the released records and bytes the replay was last told of (Credits).
	receivedRecords, receivedBytes int64
	reportedRecords, reportedBytes int64
	finishedSent                   bool
	draining                       bool
	drainedSent                    bool
	hazardSent                     bool // HazardUndecided sent (hazardUndecided)
	// causes holds, for the last few epochs in which a send failed, the lowest failed send
	// (not a skip) and its error: a lesson-22 stop names it, as the record may fail again
	// for the same reason (too large for the broker, say) once it can be sent.
	causes map[progress.Epoch]failedSend
	// unreportedCommits counts the records committed since the last Committed sent to the
	// checkpointer; reportQueued says a flushCommits is in the tracker's own mailbox.
	unreportedCommits int64
	reportQueued      bool
	// topicRead says the publisher told what its first producer read back of the topic
	// (TopicRead), which the recording's finish waits for (awaitingTopicRead); held is the
	// furthest end a read found the topic to hold of the recording past its checkpoint
	// (0: none), heldBy the producer whose message ends there.
	topicRead bool
	held      int64
	heldBy    string

	// status is what the tracker pushes to the stream supervisor, at most every
	// statusInterval (a timer catches the last change); lastAckMs goes into it then.
	status    messages.RecordingStatus
	lastAckMs int64
	pushes    pushThrottle
}

// failedSend is a send that failed, and the client's error.
type failedSend struct {
	end int64
	err string
}

// causesKept is how many epochs' failures a tracker keeps (causes).
const causesKept = 16

// statusInterval is the most often a tracker or live reader pushes its status.
const statusInterval = 250 * time.Millisecond

// statusTick is a tracker's or live reader's self-message to push a status it held back.
type statusTick struct{}

// pushThrottle spaces an actor's status pushes at least statusInterval apart: a push due
// sooner is held back, and one timer sends the actor a statusTick once the interval is over.
type pushThrottle struct {
	lastMs  int64
	pending bool
}

// due reports whether a push may go now (noting it), or arms the timer; force always goes.
// now is the elapsed clock's (Env.Elapsed).
func (p *pushThrottle) due(ctx actor.Context, force bool, now int64) bool {
	if !force && now-p.lastMs < statusInterval.Milliseconds() {
		if !p.pending {
			p.pending = true
			self, system := ctx.Self(), ctx.ActorSystem()
			time.AfterFunc(statusInterval, func() { system.Root.Send(self, &statusTick{}) })
		}
		return false
	}
	p.lastMs = now
	return true
}

// ticked notes that the timer's statusTick arrived.
func (p *pushThrottle) ticked() { p.pending = false }

// flushCommits is the tracker's self-message to report the commits of the acknowledgements
// that were queued before it.
type flushCommits struct{}

func newTracker(env *Env, cfg *StreamConfig, rec int64, pids *recordingPIDs) actor.Producer {
	incarnations := 0
	return func() actor.Actor {
		incarnations++
		return &tracker{env: env, cfg: cfg, rec: rec, pids: pids, incarnation: incarnations}
	}
}

func (t *tracker) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if t.incarnation > 1 {
			// A restarted tracker knows nothing of what is in flight, while the publisher
			// and the checkpointer still hold the old epochs and positions: going on could
			// stall for good or lose the prefix. The stream stops, loudly, instead; a new
			// start resumes from the persisted checkpoint.
			refuseRestart(fmt.Sprintf("recording %d: the commit tracker", t.rec))
		}
	case *messages.ReplayStarted:
		t.replayStarted(msg)
		// Where this replay starts, at once: a recording committed up to where the archive
		// recorded it has nothing to move on to, which the restart strategy must learn
		// from each (re)start of a quiet live recording's replay (its failures now and then
		// are not a stuck stream).
		t.pushStatus(ctx, true)
	case *messages.RecordBatch:
		t.batch(ctx, msg)
	case *messages.PublishAcked:
		t.acked(ctx, msg)
	case *messages.PublishFailed:
		t.failed(ctx, msg)
	case *messages.TopicRead:
		t.topicReadBack(ctx, msg)
	case *messages.ReplayEnded:
		// Once draining, the end is not taken either: batches read before it were dropped
		// (see batch), and the core would take an end with nothing pending as acknowledged.
		if msg.Generation == t.gen && t.core != nil && !t.draining {
			t.finish(msg.StopPosition)
			t.progressed(ctx, 0, false)
		}
	case *statusTick:
		t.pushes.ticked()
		t.pushStatus(ctx, true)
	case *flushCommits:
		t.reportQueued = false
		t.reportCommits(ctx)
	case *actor.Stopping, *actor.Restarting:
		// Stopped with a report queued (the stream failed, or this tracker did): what was
		// committed is still reported, for the checkpointer to persist. Committed is the
		// acknowledged prefix, whatever went wrong after it. The status held back by the
		// push interval goes too, if the stream still takes it: its tick would come after
		// the stop. Restarting too, should a strategy ever restart a tracker (the stream's
		// does not: neverRestarted; a new incarnation would refuse to run, Started).
		t.reportCommits(ctx)
		t.pushStatus(ctx, true)
		if t.core != nil {
			// Outcomes arriving after the stop are lost with this tracker: lesson 22 may
			// never be seen. A stream that failed must not be started again as if it had
			// been ruled out.
			t.hazardUndecided(ctx)
		}
	case *messages.Drain:
		t.draining = true
		t.reportCommits(ctx)
		t.pushStatus(ctx, true) // the counts so far, while the stream listens
		if msg.Now && !t.drainedSent {
			t.drained(ctx)
			return
		}
		t.progressed(ctx, 0, false)
	}
}

func (t *tracker) replayStarted(msg *messages.ReplayStarted) {
	if t.core == nil {
		core, err := progress.NewCommitTracker(t.rec, msg.FromPosition)
		t.must(err)
		t.core = core
	} else {
		_, err := t.core.Reset(msg.FromPosition)
		t.must(err)
	}
	t.gen = msg.Generation
	t.receivedRecords, t.receivedBytes = 0, 0
	t.reportedRecords, t.reportedBytes = 0, 0
	t.finishedSent = false
}

func (t *tracker) batch(ctx actor.Context, b *messages.RecordBatch) {
	if b.Generation != t.gen || t.core == nil {
		return // read before a restart: the new replay reads it again
	}
	if t.draining {
		// Read by the replay before it saw its own Drain, arriving after the tracker's:
		// sent now, it would reach Pulsar after the recording reported drained and its
		// outcome after the final flush. The next start reads it again.
		return
	}
	if n := len(b.Records); n > 0 {
		t.receivedRecords += int64(n)
		t.receivedBytes += b.Records[n-1].End - b.Records[0].Start
	}
	// Records at or below the committed position were acknowledged in this process
	// already (a re-delivery starts at the persisted position, below it): they are emitted,
	// to keep the order, but not sent again.
	send := b.Records[:0:0]
	for _, r := range b.Records {
		committed := t.core.Committed()
		err := t.core.Emit(r.Start, r.End, r.Checksum)
		if errors.Is(err, progress.ErrStalled) {
			break // a failure awaits re-delivery; the rest is read again after it
		}
		t.unchanged(err)
		t.must(err)
		if r.End > committed {
			send = append(send, r)
		}
	}
	if len(send) > 0 {
		t.status.Published += uint64(len(send))
		t.status.ReplayPosition = proto.Int64(send[len(send)-1].End)
		t.status.LastReadMs = proto.Int64(t.env.nowMs())
		b.Records = send
		b.Epoch = uint64(t.core.Epoch())
		ctx.Send(t.pids.publisher, b)
	}
	t.progressed(ctx, 0, false)
}

func (t *tracker) acked(ctx actor.Context, a *messages.PublishAcked) {
	if t.core == nil {
		return
	}
	ack := t.core.Ack
	if a.Duplicate {
		ack = t.core.AckDuplicate
	}
	res, err := ack(progress.Epoch(a.Epoch), a.End)
	t.must(err)
	t.lastAckMs = t.env.nowMs()
	if a.Duplicate {
		t.status.Duplicates++
	} else {
		t.status.Acknowledged++
	}
	if res.Outcome == progress.AckAboveFailure {
		t.storedAboveFailure(progress.Epoch(a.Epoch))
	}
	t.progressed(ctx, res.NewlyCommitted, true)
}

// storedAboveFailure stops the stream: in epoch, Pulsar stored a record above one of the
// same producer whose send failed, whichever outcome arrived first and whether or not a
// replay restart came between them. With broker deduplication the failed record's
// re-delivery is dropped as a duplicate, so it can never reach the topic with its sequence
// id; going on would skip it silently (lessons 22, 26).
func (t *tracker) storedAboveFailure(epoch progress.Epoch) {
	failedEnd, storedEnd, _ := t.core.Hazard(epoch)
	cause := ""
	if c, ok := t.causes[epoch]; ok && c.end == failedEnd {
		cause = " (" + c.err + ")"
	}
	panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d: the record ending at %d was stored by Pulsar after the record ending at %d of the same producer failed%s; with deduplication the failed record cannot be re-published and would be lost silently, so the stream stops (lesson 22). %s", t.rec, storedEnd, failedEnd, cause, lesson22Recovery(t.cfg.Def.Name))))
}

// lesson22Recovery says how to publish a record that the topic lacks and whose re-send
// its deduplication answers as a duplicate of a later record (lesson 22).
func lesson22Recovery(stream string) string {
	return "The topic lacks it, and a reset alone does not bring it back: the topic's deduplication answers its re-send as a duplicate of the later one. " +
		"To recover it, turn deduplication off for the topic, run `" + store.ResetCommand(stream) + "` and start ferry (the stream is published again from its configured start_position, what is stored already a second time), then turn deduplication back on"
}

func (t *tracker) failed(ctx actor.Context, f *messages.PublishFailed) {
	if t.core == nil {
		return
	}
	if f.NotSent && progress.Epoch(f.Epoch) < t.core.Epoch() {
		// Superseded by a restarted replay (publisher.supersede), or skipped after a
		// failure of an epoch a reset has ended: never sent, no failure to weigh (as one,
		// it would count toward lesson 22's hazard of its epoch).
		t.must(t.core.NotSentEarlier(progress.Epoch(f.Epoch)))
		t.progressed(ctx, 0, false)
		return
	}
	out, err := t.core.Fail(progress.Epoch(f.Epoch), f.End)
	t.must(err)
	if !f.NotSent {
		t.keepCause(progress.Epoch(f.Epoch), failedSend{end: f.End, err: f.Error})
	}
	if out == progress.FailBelowStored {
		// A record above it stored already: the same as its acknowledgement arriving
		// after this failure (acked), in the other order.
		t.storedAboveFailure(progress.Epoch(f.Epoch))
	}
	if !f.NotSent {
		// A record skipped after its epoch's first failure did not fail: it is read and
		// sent again with the rest, and counting it would show one failure as a window of them.
		t.status.Failed++
	}
	switch {
	case out == progress.FailStalled:
		// The epoch's first failure to arrive: the re-delivery starts here. A record the
		// publisher skipped can arrive before the failure that stopped its epoch (that
		// send's callback tells the tracker after it stopped the epoch, and the publisher
		// reports its skips meanwhile): it is no cause, and the failure to come is said.
		t.causeDue = f.NotSent
		from, _ := t.core.Redelivery()
		t.env.Logger.Warn("publish failed; re-delivering from the persisted watermark", "stream", t.cfg.Def.Name, "recording", t.rec, "position", f.End, "committed", from, "error", f.Error)
		ctx.Send(t.pids.replay, &messages.RedeliveryRequired{RecordingId: t.rec, Generation: t.gen, Reason: fmt.Sprintf("publish of the record ending at %d failed: %s", f.End, f.Error)})
		if !f.NotSent {
			t.sayCause(ctx, f)
		}
	case t.causeDue && !f.NotSent:
		t.causeDue = false
		t.env.Logger.Warn("publish failed: the failure that stopped the sends re-delivered already", "stream", t.cfg.Def.Name, "recording", t.rec, "position", f.End, "error", f.Error)
		t.sayCause(ctx, f)
	}
	t.progressed(ctx, 0, false)
}

// keepCause keeps f if it is the lowest failed send of epoch, for the last causesKept
// epochs.
func (t *tracker) keepCause(epoch progress.Epoch, f failedSend) {
	if c, ok := t.causes[epoch]; ok && c.end <= f.end {
		return
	}
	if t.causes == nil {
		t.causes = map[progress.Epoch]failedSend{}
	}
	t.causes[epoch] = f
	if len(t.causes) > causesKept {
		delete(t.causes, slices.Min(slices.Collect(maps.Keys(t.causes))))
	}
}

// sayCause puts a failed send in the status, as the cause of its epoch's re-delivery: the
// records skipped after it would only hide it there.
func (t *tracker) sayCause(ctx actor.Context, f *messages.PublishFailed) {
	ctx.Send(t.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: t.env.nowMs(), Kind: "publish",
		Message: fmt.Sprintf("recording %d: the record ending at %d: %s", t.rec, f.End, f.Error)}})
}

// progressed sends what changed: commits, credits, the recording's end, and the drain.
// After an acknowledgement (ack), the replay is told of released room only when
// progress.Window.ReportDue says it is worth a message (one per acknowledgement woke the
// replay, nearly always for a poll its window did not allow); after anything else, always.
func (t *tracker) progressed(ctx actor.Context, newlyCommitted int, ack bool) {
	if t.core == nil { // no replay started yet: nothing in flight
		if t.draining && !t.drainedSent {
			t.drained(ctx)
		}
		return
	}
	t.unreportedCommits += int64(newlyCommitted)
	switch {
	case t.unreportedCommits == 0:
	case ack && !t.core.Completed() && !t.draining:
		// Acknowledgements come in bursts (a hundred per wake-up of the tracker is usual):
		// one commit for the burst, sent once the acknowledgements queued now are handled.
		// It waits for nothing but this mailbox, so the checkpoint's interval still holds.
		if !t.reportQueued {
			t.reportQueued = true
			sendToSelf(ctx.ActorSystem(), ctx.Self(), &flushCommits{})
		}
	default:
		t.reportCommits(ctx) // before the recording's end, a drain or a failure is reported
	}
	p := t.core.Pending()
	released, releasedBytes := t.receivedRecords-int64(p.Records), t.receivedBytes-p.Bytes
	window := progress.Window{Records: t.cfg.MaxInflightRecords, Bytes: t.cfg.MaxInflightBytes}
	if !ack || window.ReportDue(released-t.reportedRecords, releasedBytes-t.reportedBytes, p.Records) {
		t.reportedRecords, t.reportedBytes = released, releasedBytes
		ctx.Send(t.pids.replay, &messages.Credits{
			RecordingId:     t.rec,
			Generation:      t.gen,
			ReleasedRecords: released,
			ReleasedBytes:   releasedBytes,
		})
	}
	if t.core.Completed() && !t.finishedSent && !t.awaitingTopicRead() {
		t.checkHeld(t.core.Committed())
		t.finishedSent = true
		ctx.Send(t.pids.checkpointer, &messages.RecordingFinished{RecordingId: t.rec, FinalPosition: t.core.Committed()})
	}
	t.pushStatus(ctx, t.core.Completed())
	// Drained once nothing is pending and no send of an earlier replay is out (after a
	// restart for any reason, its sends may still reach Pulsar), or when a failed send needs
	// a re-delivery, which a drain does not make — but not while a send of this replay is
	// still out: one below the failure may yet be acknowledged and committed (the stream
	// flushes the checkpoints once every recording drained), one above it stored (lesson 22
	// undecided, of this replay's or an earlier one's). Their outcomes are waited for, up to
	// the drain's deadline (Drain{Now}). Asked only while draining: Undecided and InFlight
	// walk the records pending, and after a failure every one of a full window answers.
	if !t.draining || t.drainedSent {
		return
	}
	_, redeliver := t.core.Redelivery()
	if t.unacknowledged() == 0 || redeliver && !t.undecided() && t.core.InFlight() == 0 {
		t.drained(ctx)
	}
}

// undecided reports whether lesson 22 is undecided for the recording (see hazardUndecided).
func (t *tracker) undecided() bool {
	_, _, undecided := t.core.Undecided()
	return undecided
}

// drained answers the stream's drain (once): what is still out, and before it, when
// lesson 22 is undecided, that too (hazardUndecided).
func (t *tracker) drained(ctx actor.Context) {
	t.drainedSent = true
	var out int64
	if t.core != nil {
		out = t.unacknowledged()
		t.hazardUndecided(ctx)
	}
	ctx.Send(t.pids.stream, &messages.RecordingDrained{RecordingId: t.rec, Unacknowledged: out})
}

// hazardUndecided tells the stream, once, when lesson 22 cannot be ruled out for the
// recording as the tracker stops or drains: the outcomes that would decide it are lost
// with the tracker, and a new start from the checkpoint would take the failed record's
// re-send, answered as a duplicate, for published.
func (t *tracker) hazardUndecided(ctx actor.Context) {
	if failedEnd, unanswered, undecided := t.core.Undecided(); undecided && !t.hazardSent {
		t.hazardSent = true
		ctx.Send(t.pids.stream, &messages.HazardUndecided{RecordingId: t.rec, FailedEnd: failedEnd, Unanswered: int64(unanswered)})
	}
}

// unacknowledged is what a drain reports still out: the records pending in this epoch (not
// committed: not acknowledged, or acknowledged after one that was not) and those sent in
// earlier ones whose outcome has not arrived.
func (t *tracker) unacknowledged() int64 {
	return int64(t.core.Pending().Records + t.core.EarlierUnanswered())
}

// reportCommits tells the checkpointer of the records committed since it was last told.
// The committed position never moves back (a re-delivery starts below it and re-commits
// nothing already committed), so a report sent late is still one the checkpointer accepts.
func (t *tracker) reportCommits(ctx actor.Context) {
	if t.unreportedCommits == 0 || t.core == nil {
		return
	}
	c := &messages.Committed{RecordingId: t.rec, Position: t.core.Committed(), Records: t.unreportedCommits}
	if m, ok := t.core.LastCommitted(); ok {
		c.LastRecord = &messages.RecordMark{Start: m.Start, End: m.End, Checksum: m.Checksum}
	}
	ctx.Send(t.pids.checkpointer, c)
	t.unreportedCommits = 0
}

// pushStatus sends the tracker's status to the stream supervisor, unless it sent one
// within statusInterval; then a timer sends the latest once the interval is over.
func (t *tracker) pushStatus(ctx actor.Context, force bool) {
	if t.core == nil {
		return
	}
	if !t.pushes.due(ctx, force, t.env.elapsedMs()) {
		return
	}
	p := t.core.Pending()
	st := proto.Clone(&t.status).(*messages.RecordingStatus)
	st.RecordingId = t.rec
	st.CommittedPosition = proto.Int64(t.core.Committed())
	st.PendingRecords, st.PendingBytes = int64(p.Records), p.Bytes
	if t.lastAckMs != 0 {
		st.LastAckMs = proto.Int64(t.lastAckMs)
	}
	// As a request, so that the stream knows the sender (see its RecordingProgress).
	ctx.Request(t.pids.stream, &messages.RecordingProgress{RecordingId: t.rec, Status: st})
}

// topicReadBack takes what a producer of the publisher read back of the topic. The first
// lets a completed recording finish (progressed); a read that comes after it finished (an
// answer after its timeout let the sends go) is still checked against its stop.
func (t *tracker) topicReadBack(ctx actor.Context, r *messages.TopicRead) {
	first := !t.topicRead
	t.topicRead = true
	if r.HoldsEnd > t.held {
		t.held, t.heldBy = r.HoldsEnd, r.Producer
	}
	switch {
	case t.finishedSent:
		t.checkHeld(t.core.Committed())
	case first:
		t.progressed(ctx, 0, false)
	}
}

// awaitingTopicRead reports whether the recording's finish waits for the publisher's first
// read of the topic: in archive mode, where the publisher reads it (Env.LastStored).
func (t *tracker) awaitingTopicRead() bool {
	return !t.topicRead && !t.cfg.Transport && t.env.LastStored != nil
}

// checkHeld stops the stream if the recording, completed at stop, stops before the end of
// a record the topic holds of it: the archive truncated it below records ferry published.
// Past the checkpoint, or no read would have reported them; a recording whose checkpoint
// keeps a listed stop is stopped on before (checkTail), one truncated below its checkpoint
// by the replay (checkEnd): this is the one only ever listed live before ferry stopped, so
// that nothing but the topic says how far it went. Checked once every record sent again
// was acknowledged, so that a record recorded again in other bytes is told as that by the
// publisher's compare first.
func (t *tracker) checkHeld(stop int64) {
	if t.held <= stop {
		return
	}
	panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d stops at %d, before the end of its record ending at %d, which the topic holds (the last message of producer %s that ferry read back from the topic): the archive truncated the recording (TruncateRecording) below records ferry had published, after it sent them and before it persisted their commit. The topic keeps the records from %d to %d, but whatever the archive had recorded after %d, which ferry had not published, is no longer in the archive. To go on without it, stop ferry and run `%s`: ferry then publishes the recording to its new end. (A continuation belongs in a new recording: extended from %d, the recording's new records would take positions, the sequence ids of its producer, that the topic's deduplication holds up to %d.)",
		t.rec, stop, t.held, t.heldBy, stop, t.held, t.held, store.ForgetHeldCommand(t.cfg.Def.Name, t.rec, t.held), stop, t.held)))
}

// finish takes the replay's end at stop. A replay started again from a persisted checkpoint
// below what was acknowledged (a send failed after the first replay had reached the end) can
// reach an end below it: the archive truncated the recording in between (or is not the one
// ferry published from), and the stream
// stops, as for the other truncations (archivechanges.go, checkEnd), not as for a bug.
func (t *tracker) finish(stop int64) {
	err := t.core.Finish(stop)
	if errors.Is(err, progress.ErrFinishBelowCommitted) {
		acked := t.core.Committed()
		panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d ends at %d, below %d, which ferry had already seen acknowledged: it was truncated in the archive (TruncateRecording), or the archive is not the one ferry published from, and its records from %d to %d, which the topic holds, are no longer in the archive. %s",
			t.rec, stop, acked, stop, acked, extensionDropped(acked))))
	}
	t.unchanged(err)
	t.must(err)
}

// unchanged stops the stream if err says that the replay, started again, read other records
// than it read before where the records before were sent (progress.ErrRecordChanged): the
// archive truncated the recording and recorded on from there while ferry read it (during
// the replay's tail, once the archive had offered its last block; or between a replay and
// the next). Those up to the committed position would not be sent again, and Pulsar answers
// those above it that it stored as duplicates: the records the archive holds there now would
// be counted as published.
func (t *tracker) unchanged(err error) {
	var changed *progress.RecordChangedError
	if !errors.As(err, &changed) {
		return
	}
	b, readTo := changed.Before, changed.ReadTo
	if changed.Finished && changed.Stop < b.End {
		panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d now stops at %d, before the end of the record [%d, %d) that ferry read when it replayed it before (up to %d): the archive truncated it (TruncateRecording) while ferry published it, and the records after %d that ferry read, some of which the topic may hold, are no longer in the archive. %s",
			t.rec, changed.Stop, b.Start, b.End, readTo, changed.Stop, extensionDropped(readTo))))
	}
	found := fmt.Sprintf("the record [%d, %d) with %08x", changed.Now.Start, changed.Now.End, changed.Now.Checksum)
	if changed.Finished {
		found = fmt.Sprintf("no record ending there (it stops at %d)", changed.Stop)
	}
	panic(changedRecording(t.rec, fmt.Sprintf("what ferry had read of it when its replay started again (up to %d)", readTo),
		fmt.Sprintf("ferry read the record ending at %d with CRC-32C %08x (after what ended at %d), and the archive now holds %s", b.End, b.Checksum, b.Start, found),
		readTo, "read again, those up to what Pulsar acknowledged are not sent again, and the others are answered as duplicates of the old records and dropped"))
}

// must turns an error of the core, which is always a bug in the caller, into a failure
// of the stream: a commit tracker is never restarted in place (neverRestarted).
func (t *tracker) must(err error) {
	if err != nil {
		panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("recording %d: commit tracker: %w (a bug: the stream stops rather than risk its checkpoint)", t.rec, err)))
	}
}
