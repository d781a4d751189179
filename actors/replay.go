package actors

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// Replay polling.
const (
	// fragmentLimit bounds the fragments one poll delivers, so one turn of the actor stays
	// short and its batch bounded.
	fragmentLimit = 1024
	// idlePollMin and idlePollMax bound the back-off between polls that found nothing.
	idlePollMin = 100 * time.Microsecond
	idlePollMax = 5 * time.Millisecond
	// imageJoinTimeout is how long the replay's image may take to appear.
	imageJoinTimeout = 15 * time.Second
)

// generations numbers replay incarnations across the process, so that a tracker can tell a
// batch of the current replay from one read before a restart.
var generations atomic.Uint64

// castagnoli is the table of the records' checksums (CRC-32C: the CPU computes it).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// replay is the Replay[r] actor: one continuous, open-ended replay (length -1; bounded only
// for a recording read again, see upTo) of one recording from the persisted watermark, read into RecordBatch messages for the commit
// tracker, never more than its credits allow (architecture §2).
//
// Its mailbox holds, at most: one poll self-message, one open result, the tracker's
// Credits and RedeliveryRequired messages (one per acknowledgement at worst, bounded by its
// credits), Watermark and Drain. Lifecycle: Started → WatermarkRequest → open (goroutine:
// describe, StartReplay, AddSubscription) → polling until end of stream.
//
// A replay resumed from a checkpoint that marks its last record starts where that record
// began and reads it again first (see check; fragments of a message the recording holds
// only in part may come before it): the archive must still hold it, byte for byte, before
// anything after the checkpoint is published.
//
// It fails (and is restarted from the persisted watermark by the stream's strategy) when
// the replay cannot be opened, its image closes before the recording's end, a poll fails,
// or the tracker reports a failed publish (lesson 4) — but not once ferry is stopping: from
// the first Drain on, no incarnation opens the recording again, and the next start
// re-delivers from the persisted watermark.
type replay struct {
	env  *Env
	cfg  *StreamConfig
	rec  *messages.RecordingInfo
	pids *recordingPIDs
	// latestFrom: with start_position latest and nothing stored, where the replay starts
	// instead of the configured start — the recording's live end (or, stopped, its stop) at
	// the listing that chose it, which its seed holds; -1: not so. Fixed then, so that no
	// incarnation starts later, whenever it opens and whether the seed is stored yet.
	latestFrom int64
	// upTo: a recording read again (the stream's rechecking) is read up to the end ferry
	// published it to and no further, whatever the archive holds beyond it: an extension
	// found meanwhile is the stream's to judge. -1: to the recording's end.
	upTo int64
	// stopping is shared by the recording's incarnations too: set at the first Drain, it
	// keeps an incarnation started after it (the supervisor restarting a failed one) from
	// opening the recording again and publishing into the shutdown.
	stopping *atomic.Bool

	gen     uint64
	opening bool // a Watermark was taken: one open per incarnation
	takenOn bool // the checkpointer's TakenOn came: reading may begin
	from    int64
	cancel  context.CancelFunc
	handoff *handoff[*openedReplay] // the open under way, until its result is taken
	opened  *openedReplay
	image   *aeron.Image
	joinBy  time.Time
	asm     *aeron.FragmentAssembler
	lastEnd int64
	batch   *messages.RecordBatch
	check   recordCheck

	// readFragment, checkFragments and firstFragments are the poll's fragment handlers,
	// made once: the assembler's; checkFragment while the check is pending; firstFragment
	// until the replay's first message, which begins at firstBegin, past fragments of one it
	// began inside of (a recording that began mid-message, lesson 8, or a start position
	// there): its record starts there, so that a replay from its start reads it first. Not
	// from a committed checkpoint (atRecordEnd): a record ended there, and fragments without
	// their beginning after it are of a message the recording holds only in part, said as
	// dropped (lesson 26).
	readFragment, checkFragments, firstFragments aeron.FragmentHandler
	firstUnread                                  bool
	firstBegin                                   int64
	// dropped are the messages the recording holds only in part, said so far.
	dropped dropped

	sentRecords, sentBytes int64
	relRecords, relBytes   int64

	pollPending bool
	idle        time.Duration
	ended       bool
}

// draining tells whether ferry is stopping: this incarnation or an earlier one saw a Drain.
func (r *replay) draining() bool { return r.stopping.Load() }

// recordingPIDs are the actors of one recording and its stream.
type recordingPIDs struct {
	stream, checkpointer, replay, tracker, publisher *actor.PID
}

// openedReplay is the result of opening a replay, on a task goroutine of its own.
type openedReplay struct {
	gen          uint64
	from         int64
	check        *messages.RecordMark // the record read again first (from its start), or nil
	sub          *aeron.Subscription
	session      int64
	replaying    bool  // the archive accepted the replay: it must be stopped
	stopPosition int64 // archive.NullPosition while the recording is live
	// recordedSession is the session the recording was recorded in when the replay began:
	// an extension (ExtendRecording) records it on in the extending publication's.
	recordedSession int32
	nothingLeft     bool // the recording stopped at or before the watermark
	// replayFrom is where the replay begins (from, or the start of the record read again),
	// where its image must join: see joinedAt.
	replayFrom int64
	// atRecordEnd: from is a committed checkpoint's, where a record ended, so no message
	// read from there began before it (see firstUnread).
	atRecordEnd bool
	err         error
	handoff     *handoff[*openedReplay]
}

// pollReplay is the replay's self-message to poll once more.
type pollReplay struct{ gen uint64 }

func newReplay(env *Env, cfg *StreamConfig, rec *messages.RecordingInfo, pids *recordingPIDs, latestFrom, upTo int64) actor.Producer {
	stopping := &atomic.Bool{}
	return func() actor.Actor {
		return &replay{env: env, cfg: cfg, rec: rec, pids: pids, latestFrom: latestFrom, upTo: upTo, stopping: stopping}
	}
}

func (r *replay) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		r.gen = generations.Add(1)
		if r.draining() {
			return // restarted during a drain: nothing more to read
		}
		ctx.Request(r.pids.checkpointer, &messages.WatermarkRequest{RecordingId: r.rec.RecordingId, Generation: r.gen})
	case *messages.Watermark:
		// Mailbox and PID survive a restart: an answer to an earlier incarnation is ignored.
		if msg.Generation == r.gen && !r.opening {
			r.opening = true
			r.open(ctx, msg)
		}
	case *endChecked:
		r.onEndChecked(ctx, msg)
	case *openedReplay:
		r.onOpened(ctx, msg)
	case *messages.TakenOn:
		if msg.Generation == r.gen {
			r.onTakenOn(ctx)
		}
	case *pollReplay:
		if msg.gen == r.gen {
			r.pollPending = false
			r.poll(ctx)
		}
	case *messages.Credits:
		if msg.Generation == r.gen {
			r.relRecords = max(r.relRecords, msg.ReleasedRecords)
			r.relBytes = max(r.relBytes, msg.ReleasedBytes)
			r.schedulePoll(ctx, 0)
		}
	case *messages.RedeliveryRequired:
		if msg.Generation != r.gen {
			return // about records an earlier incarnation read: it was restarted already
		}
		if r.draining() {
			return // stopping: the next start re-delivers from the persisted watermark
		}
		panic(supervisor.Fail(supervisor.Transient, fmt.Errorf("recording %d: re-delivery from the persisted watermark: %s", r.rec.RecordingId, msg.Reason)))
	case *messages.Drain:
		r.stopping.Store(true)
		r.sayDroppedLeft(ctx)
		r.release()
	case *actor.Restarting, *actor.Stopping:
		r.sayDroppedLeft(ctx)
		r.release()
	}
}

// open starts opening the replay from the persisted watermark, or from the stream's start
// position when nothing is stored (a stored checkpoint outranks it, lesson 18).
func (r *replay) open(ctx actor.Context, w *messages.Watermark) {
	if r.draining() {
		return
	}
	from := r.startPosition(w)
	// A seed at the recording's start as the configuration takes it follows the archive's
	// start back, should it have moved (openReplay).
	followStart := w.Stored && w.Seed && w.FromStart
	var mark *messages.RecordMark
	if w.Stored && !w.Seed {
		mark = w.LastRecord // nil for a checkpoint of an older ferry, or with no record below it
	}
	callCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	self, system, gen, h := ctx.Self(), ctx.ActorSystem(), r.gen, &handoff[*openedReplay]{}
	r.handoff = h
	id, atRecordEnd := r.rec.RecordingId, w.Stored && !w.Seed
	started := r.env.tasks().Go(func() {
		res := r.openReplay(callCtx, gen, id, from, !atRecordEnd, followStart, mark)
		res.handoff, res.atRecordEnd = h, atRecordEnd
		if !h.offer(res) {
			r.closeOpened(res)
			return
		}
		system.Root.Send(self, res)
	})
	if !started {
		cancel()
	}
}

// startPosition is where this replay begins.
func (r *replay) startPosition(w *messages.Watermark) int64 {
	switch {
	case w.Stored:
		return w.Position
	case r.latestFrom >= 0:
		return r.latestFrom
	}
	return configuredStart(r.cfg, r.rec)
}

// configuredStart is where a recording the store holds nothing of begins by the
// configuration: start_position in the start_recording_id, its start otherwise (the
// latest-anchored recording begins at its live end instead: replay.open, stream.go).
func configuredStart(cfg *StreamConfig, rec *messages.RecordingInfo) int64 {
	if st := cfg.Start; st.Kind == config.StartAt && st.RecordingID == rec.RecordingId {
		return max(st.Position, rec.StartPosition)
	}
	return rec.StartPosition
}

// openReplay runs on a task goroutine, not the actor's (so it reads none of the actor's
// mutable fields): it describes the recording, starts the replay and subscribes to it.
// With mark, the last record of the checkpoint at from, the replay starts at the record's
// start, to read it again (see check) — at the recording's start if retention purged the
// padding before the record — unless the archive no longer holds the record (nothing below
// the checkpoint is needed then: it goes unchecked).
//
// seeded: from is where ferry takes the recording on (a seed, or the start position), not
// the end of a record it published.
//
// followStart: from is a seed at the recording's start as it was listed first, and no
// replay of it has sent anything (store.Checkpoint.FromStart). If the archive's start has
// moved back since — its first segments were detached then and are attached again — the
// replay begins there, as it would have had they never been detached: skipping what the
// archive holds again would lose it without a word. (Once a replay sent a record, the
// checkpointer has cleared the seed's mark: see takeOn.)
func (r *replay) openReplay(ctx context.Context, gen uint64, id, from int64, seeded, followStart bool, mark *messages.RecordMark) *openedReplay {
	res := &openedReplay{gen: gen}
	call, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
	defer cancel()
	desc, err := r.env.Archive.Recording(call, id)
	if err != nil {
		res.err = r.gone(id, fmt.Errorf("describe recording %d: %w", id, err))
		return res
	}
	if followStart && desc.StartPosition < from {
		r.env.Logger.Info("the recording's start moved back in the archive (segments attached again) before ferry began it: publishing it from there", "stream", r.cfg.Def.Name, "recording", id, "seeded_at", from, "from", desc.StartPosition)
		from = desc.StartPosition
	}
	res.from = from
	res.stopPosition, res.recordedSession = desc.StopPosition, desc.SessionID
	switch {
	case from < desc.StartPosition:
		res.err = supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d starts at %d, after the position %d ferry must resume from: the archive lost records ferry never published (purged, detached or replaced); %s",
			id, desc.StartPosition, from, headCutToGoOn(r.cfg.Def.Name, id)))
		return res
	case desc.StopPosition != archive.NullPosition && from > desc.StopPosition:
		res.err = supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d stops at %d, before the committed position %d: it was truncated, or the archive is not the one ferry published from; if it was truncated, ferry has published more of it than the archive still holds, and `%s` publishes the stream again from its configured start_position. If the archive was replaced: %s", id, desc.StopPosition, from, store.ResetCommand(r.cfg.Def.Name), renameToGoOn))
		return res
	}
	replayFrom := from
	switch {
	case mark == nil:
	case mark.End <= desc.StartPosition:
		r.env.Logger.Warn("the last record before the checkpoint is no longer in the archive (purged): whether the archive changed the recording below the checkpoint is not checked", "stream", r.cfg.Def.Name, "recording", id, "record_end", mark.End, "recording_start", desc.StartPosition, "checkpoint", from)
	default:
		// A purge ends at a segment's start, a term's: never inside a frame.
		res.check, replayFrom = mark, max(mark.Start, desc.StartPosition)
	}
	if res.check == nil && (desc.StopPosition != archive.NullPosition && from == desc.StopPosition || from == r.upTo) {
		res.nothingLeft = true
		return res
	}
	length := int64(archive.ReplayToEnd)
	if r.upTo >= 0 {
		length = r.upTo - replayFrom
	}
	session, err := r.env.Archive.StartReplay(call, id, replayFrom, length, r.cfg.ReplayChannel.String(), r.cfg.ReplayStreamID)
	var refused *archive.Error
	switch {
	// The archive's words for a replay asked to start inside a frame (ReplaySession.init,
	// 1.47.3: before its OK, so StartReplay fails; docs/findings.md).
	// The archive refuses it again at every restart: the stream stops, naming why.
	case err != nil && errors.As(err, &refused) && strings.Contains(refused.Message, "not aligned to a data header"):
		switch {
		case res.check != nil:
			res.err = changedBelowCheckpoint(id, from, fmt.Sprintf("no frame begins at %d, where the last record ferry published began, or the padding before it (the archive: %s)", replayFrom, refused.Message))
		case seeded:
			res.err = supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d: no message begins at %d, where ferry was to take the recording on (the archive: %s): start_position must be where a message of recording %d begins — its start, %d, or a position `ferry recordings --config FILE` or a consumer's ferry.position property gives. "+
				"Correct it, then run `%s`: ferry stored %d as where it takes the recording on, and a stored position outranks the configuration (nothing of the recording was published)",
				id, from, refused.Message, id, desc.StartPosition, store.ResetCommand(r.cfg.Def.Name), from))
		default:
			res.err = changedBelowCheckpoint(id, from, fmt.Sprintf("no frame begins at %d, where ferry's checkpoint is (the archive: %s)", from, refused.Message))
		}
		return res
	case err != nil:
		res.err = r.gone(id, fmt.Errorf("start replay of recording %d at %d: %w", id, replayFrom, err))
		return res
	}
	res.session, res.replaying, res.replayFrom = session, true, replayFrom
	ch, err := r.cfg.ReplayChannel.WithSessionID(archive.ReplayImageSessionID(session))
	if err == nil && ch.Media() == channel.MediaUDP {
		// Whatever the driver's default (aeron.reliable.stream): an unreliable subscription
		// fills a lost datagram with padding, and the record in it would be skipped.
		ch, err = ch.With(channel.KeyReliable, "true")
	}
	if err == nil {
		res.sub, err = r.env.Aeron.AddSubscription(call, ch.String(), r.cfg.ReplayStreamID, aeron.ImageHandlers{})
	}
	if err != nil {
		stop, cancelStop := context.WithTimeout(context.Background(), r.cfg.CallTimeout)
		defer cancelStop()
		_ = r.env.Archive.StopReplay(stop, session)
		res.err = fmt.Errorf("subscribe to the replay of recording %d: %w", id, err)
	}
	return res
}

func (r *replay) onOpened(ctx actor.Context, res *openedReplay) {
	if _, ok := res.handoff.take(); !ok {
		return // its incarnation let go of it and closed it (release)
	}
	if res.gen != r.gen || r.draining() {
		// Opened by an earlier incarnation, or no longer wanted: release it.
		r.closeOpened(res)
		return
	}
	if res.err != nil {
		r.fail(ctx, "archive", supervisor.Classify(res.err), res.err)
	}
	r.opened = res
	r.from = res.from
	r.lastEnd = r.from
	if res.check != nil {
		r.check = recordCheck{mark: res.check, pending: true}
		r.lastEnd = res.check.Start
	}
	r.asm = aeron.NewFragmentAssembler(maxMessageLength, r.onMessage)
	r.asm.UsePool(r.env.Payloads)
	r.readFragment, r.checkFragments, r.firstFragments = r.asm.OnFragment, r.checkFragment, r.firstFragment
	r.firstUnread, r.firstBegin = res.check == nil && !res.atRecordEnd, -1
	// The tracker and checkpointer hear of the new incarnation before any of its batches;
	// it reads once the checkpointer has taken it on (TakenOn).
	started := &messages.ReplayStarted{RecordingId: r.rec.RecordingId, Generation: r.gen, FromPosition: r.from, StartMs: r.rec.StartMs, SessionId: r.rec.SessionId}
	ctx.Request(r.pids.checkpointer, started)
	ctx.Send(r.pids.tracker, started)
}

// onTakenOn starts reading once the checkpointer took the recording on: a seed that could
// still follow the recording's start back is stored as no longer doing so (checkpointer,
// takeOn).
func (r *replay) onTakenOn(ctx actor.Context) {
	if r.opened == nil || r.takenOn {
		return
	}
	r.takenOn = true
	if r.opened.nothingLeft {
		r.end(ctx, r.from)
		return
	}
	r.joinBy = time.Now().Add(imageJoinTimeout)
	r.schedulePoll(ctx, 0)
}

// fail reports the failure to the stream's status, then fails the actor with it.
func (r *replay) fail(ctx actor.Context, kind string, class supervisor.Class, err error) {
	ctx.Send(r.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: r.env.nowMs(), Kind: kind, Message: err.Error()}})
	panic(supervisor.Fail(class, err))
}

// joinedAt fails unless the replay's image joined at position, where the replay begins.
// The archive replays once anything subscribes to its publication: another program's
// subscription to replay.channel and replay.stream_id without a session (aeron:ipc, stream
// 101, is Aeron Cluster's default ingress, for one) has it start before ferry subscribes,
// and ferry's subscription then joins where that one has read to, past records it would
// never read: taken for the replay's start, they would be skipped without a word (or the
// record read again taken for changed).
func (r *replay) joinedAt(position int64) error {
	if position == r.opened.replayFrom {
		return nil
	}
	return fmt.Errorf("recording %d: the replay began at %d, but its image joined ferry's subscription at %d: something else subscribes to replay.channel %s stream %d on this media driver and read the replay first, and ferry does not skip what it read (the replay is started again). Give ferry a replay.stream_id that nothing else on the driver uses",
		r.rec.RecordingId, r.opened.replayFrom, position, r.cfg.ReplayChannel, r.cfg.ReplayStreamID)
}

// maxMessageLength bounds a reassembled message: Aeron's limit for the largest term length.
const maxMessageLength = 16 << 20

// poll reads what the credits allow and hands it to the tracker.
func (r *replay) poll(ctx actor.Context) {
	if r.opened == nil || !r.takenOn || r.ended || r.draining() {
		return
	}
	if r.image == nil {
		img := r.opened.sub.ImageBySessionID(archive.ReplayImageSessionID(r.opened.session))
		if img == nil {
			if time.Now().After(r.joinBy) {
				r.fail(ctx, "read", supervisor.Transient, fmt.Errorf("recording %d: the replay image did not join within %s: the archive accepted the replay (session %d), but nothing of it reached ferry's media driver on replay.channel %s stream %d. "+
					"If that channel does not lead from the archive's media driver to ferry's (aeron:ipc does only when they are the same driver; otherwise a UDP channel with an endpoint on ferry's host), every replay fails so; the archive's own error, if it sent one, is logged before this",
					r.rec.RecordingId, imageJoinTimeout, r.opened.session, r.cfg.ReplayChannel, r.cfg.ReplayStreamID))
			}
			r.schedulePoll(ctx, idlePollMax)
			return
		}
		if err := r.joinedAt(img.JoinPosition()); err != nil {
			r.fail(ctx, "read", supervisor.Transient, err)
		}
		r.image = img
	}
	window := progress.Window{Records: r.cfg.MaxInflightRecords, Bytes: r.cfg.MaxInflightBytes}
	credits := min(window.Readable(r.sentRecords-r.relRecords, r.sentBytes-r.relBytes), fragmentLimit)
	if credits == 0 {
		return // Credits from the tracker resume polling.
	}
	before := r.image.Position()
	r.batch = &messages.RecordBatch{RecordingId: r.rec.RecordingId, Generation: r.gen, SessionId: r.rec.SessionId}
	// The window's free bytes, counted from the end of the last whole message (the image
	// may be inside the next one), bound the read, so that the byte bound is overshot by
	// less than one message: the one whose fragments straddle it. A read takes at least a
	// frame, so that a message longer than the room left still arrives.
	limit := max(r.lastEnd+r.cfg.MaxInflightBytes-(r.sentBytes-r.relBytes), before+1)
	handler := r.readFragment
	switch {
	case r.check.pending:
		handler = r.checkFragments
	case r.firstUnread:
		handler = r.firstFragments
	}
	_, err := r.image.BoundedPoll(handler, limit, int(credits))
	batch := r.batch
	r.batch = nil
	if r.check.err != nil {
		r.fail(ctx, "archive", supervisor.Poison, r.check.err) // nothing was read after it
	}
	if n := len(batch.Records); n > 0 {
		r.sentRecords += int64(n)
		r.sentBytes += batch.Records[n-1].End - batch.Records[0].Start
		ctx.Send(r.pids.tracker, batch)
	}
	if err != nil {
		r.fail(ctx, "read", supervisor.Transient, fmt.Errorf("recording %d: replay poll: %w", r.rec.RecordingId, err))
	}
	r.sayDropped(ctx, r.image.Position(), false)
	moved := r.image.Position() != before
	switch {
	case r.image.IsEndOfStream():
		r.checkEnd(ctx, r.image.Position())
	case r.image.IsClosed():
		r.fail(ctx, "read", supervisor.Transient, fmt.Errorf("recording %d: the replay image closed at position %d before the recording's end (archive or driver gone?)", r.rec.RecordingId, r.image.Position()))
	case moved:
		r.idle = 0
		r.schedulePoll(ctx, 0)
	default:
		r.idle = min(max(2*r.idle, idlePollMin), idlePollMax)
		r.schedulePoll(ctx, r.idle)
	}
}

// onMessage is the assembler's handler: one whole message, into the batch. The payload is
// the assembler's to hand over (Detach): a reassembled message's buffer, or a copy of a
// message of one fragment, which is a view of the log.
func (r *replay) onMessage(_ []byte, h aeron.Header) {
	end := h.Position()
	payload := r.asm.Detach()
	if r.check.pending && !r.checked(end, payload) {
		r.env.Payloads.Put(payload) // read again to check, or after a mismatch: not published
		return
	}
	start := r.lastEnd
	if r.firstUnread {
		r.firstUnread, start = false, max(start, r.firstBegin)
		r.dropped.passOver(r.asm.Stats()) // the fragments of a message begun before the replay's start
	}
	sum := crc32.Checksum(payload, castagnoli)
	r.batch.Records = append(r.batch.Records, &messages.Record{Start: start, End: end, Payload: payload, Checksum: sum})
	r.lastEnd = end
}

// firstFragment notes where the replay's first message begins (see firstUnread).
func (r *replay) firstFragment(payload []byte, h aeron.Header) {
	if h.Flags().IsBegin() {
		r.firstBegin = h.FramePosition()
	}
	r.asm.OnFragment(payload, h)
}

// dropped keeps what a replay's assembler dropped unfinished, for the replay to say (lesson
// 26: nothing dropped is silent). The recording holds such a message only in part: a
// publisher gone in the middle of it, the recording stopped between its fragments, or a
// channel recorded unreliably, where the driver fills a lost fragment's place instead of
// asking for it again. Nothing of it can be published; the replay goes on past it, and its
// bytes are committed with the next record's. The first drop is said at once, later ones at
// most once per sayDroppedEvery, together, and what is left at the recording's end.
type dropped struct {
	discarded uint64 // the assembler's messages begun and dropped unfinished, taken
	orphaned  uint64 // its fragments without their message's beginning, taken or passed over
	unended   uint64 // taken and not said yet
	headless  uint64
	saidAtMs  int64 // when they were last said, by the elapsed clock; 0: never
}

// sayDroppedEvery is how often at most a replay says what it dropped.
const sayDroppedEvery = time.Second

// passOver takes the fragments without a beginning so far as those of a message begun
// before the replay's start (lesson 8), not dropped ones: called at the replay's first
// message.
func (d *dropped) passOver(st aeron.AssemblerStats) { d.orphaned = st.Orphaned }

// passOverBelow takes what the assembler dropped up to discarded and orphaned as said
// already: a resume's, below its checkpoint (see recordCheck.past).
func (d *dropped) passOverBelow(discarded, orphaned uint64) {
	d.discarded, d.orphaned = discarded, orphaned
}

// take adds what the assembler dropped since the last call: messages begun and not ended,
// and fragments without their message's beginning — none of those before the replay's
// first message (first false), which are the one begun before its start.
func (d *dropped) take(st aeron.AssemblerStats, first bool) {
	d.unended += st.Discarded - d.discarded
	d.discarded = st.Discarded
	if first {
		d.headless += st.Orphaned - d.orphaned
	}
	d.orphaned = st.Orphaned
}

// due returns what was taken and not said, if it is time to say it (or end: the
// recording's end), and counts it said.
func (d *dropped) due(nowMs int64, end bool) (unended, headless uint64, ok bool) {
	if d.unended == 0 && d.headless == 0 || !end && d.saidAtMs != 0 && nowMs-d.saidAtMs < sayDroppedEvery.Milliseconds() {
		return 0, 0, false
	}
	unended, headless = d.unended, d.headless
	d.unended, d.headless, d.saidAtMs = 0, 0, nowMs
	return unended, headless, true
}

// sayDroppedLeft says what was dropped and not said yet, as the incarnation stops reading
// (a drain, a restart, a stop): the next one may resume past it.
func (r *replay) sayDroppedLeft(ctx actor.Context) {
	if r.asm != nil && r.image != nil {
		r.sayDropped(ctx, r.image.Position(), true)
	}
}

// sayDropped says, loudly, what the assembler dropped unfinished, before position at, when
// it is due (see dropped).
func (r *replay) sayDropped(ctx actor.Context, at int64, end bool) {
	if r.check.pending && !r.check.past {
		return // below the checkpoint: said by the replay that read them first
	}
	r.dropped.take(r.asm.Stats(), !r.firstUnread)
	unended, headless, ok := r.dropped.due(r.env.elapsedMs(), end)
	if !ok {
		return
	}
	msg := fmt.Sprintf("recording %d holds messages only in part before position %d: %d begun and not ended, %d fragment(s) that belong to no whole message (since this was last said). A publisher went away in the middle of a message, the recording was stopped between a message's fragments, or the channel is recorded unreliably and the network lost fragments: no whole message is there to publish, and ferry goes on past them",
		r.rec.RecordingId, at, unended, headless)
	r.env.Logger.Error(msg, "stream", r.cfg.Def.Name, "recording", r.rec.RecordingId)
	ctx.Send(r.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: r.env.nowMs(), Kind: "partial", Message: msg}})
}

// recordCheck is a replay's check of the last record its checkpoint covers (its mark),
// read again before anything after the checkpoint is published. The archive's
// TruncateRecording followed by ExtendRecording — Aeron Cluster does it to its log after an
// election — puts other records below a position ferry checkpointed, and a listing shows
// only the new stop: resumed from the checkpoint, the records from the truncation up to it
// would never be published. They are not the ones published if the record at the mark is
// not there, byte for byte, or if a record lies where the checkpoint saw only padding.
//
// A mark's start is where the whole message before it ended (Record.Start): padding at a
// term's end counts to the record after it, and the poll steps over padding without a
// fragment; the fragments of a message the recording holds only in part count to it too,
// and come before its own, and the assembler drops them (said once already, by the replay
// that read them first: not again). So the marked record is the first whole message read,
// and it ends at the mark's end with its checksum.
type recordCheck struct {
	mark    *messages.RecordMark
	pending bool // checking: no message before the checkpoint is published
	found   bool // the marked record was read, and matched
	// past: a fragment at or past the checkpoint was read, the marked record found (a
	// checkpoint past its last record: padding, or a message held only in part, between
	// them). What the assembler dropped before it lies below the checkpoint, said by the
	// replay that read it first; what it drops from it on is said.
	past  bool
	start int64 // where the message being assembled began (its first fragment's frame)
	err   error // the mismatch, once found
}

// checkFragment is the fragment handler while the check is pending: it notes where each
// message begins, which a reassembled message's header does not tell.
func (r *replay) checkFragment(payload []byte, h aeron.Header) {
	c := &r.check
	if c.pending && h.Flags().IsBegin() {
		c.start = h.FramePosition()
	}
	if c.pending && c.found && !c.past && h.FramePosition() >= r.from {
		// The first fragment at or past the checkpoint, the marked record found before it
		// (the baseline is taken here, or, when the record ends at the checkpoint, where the
		// check ends: once). Orphans are counted from it on, itself included; a message it
		// cuts short began below the checkpoint and is passed over, counted after it. (A
		// message begun below that it continues instead is said if it is cut short later:
		// again, as the run that stopped inside it said it at its end.)
		c.past = true
		orphaned := r.asm.Stats().Orphaned
		r.asm.OnFragment(payload, h)
		r.dropped.passOverBelow(r.asm.Stats().Discarded, orphaned)
		return
	}
	// Not checking, below the checkpoint, past it with the baseline taken, or past it with
	// the marked record not found (the check then fails at the next whole message: nothing
	// is published, and what such fragments drop is not said).
	r.asm.OnFragment(payload, h)
}

// checked takes one message read while the check is pending, ending at end, and reports
// whether it is to be published. The check ends with the marked record when that ends at the
// checkpoint, or else (padding, or a message held only in part, up to the checkpoint) with
// the first record after it; only a record beyond the checkpoint is published. A mismatch is kept in r.check.err; the poll
// fails the replay with it.
func (r *replay) checked(end int64, payload []byte) bool {
	c := &r.check
	m := c.mark
	switch {
	case c.err != nil:
		return false
	case !c.found:
		if sum := crc32.Checksum(payload, castagnoli); end != m.End || sum != m.Checksum {
			found := fmt.Sprintf("the record [%d, %d) with %08x", c.start, end, sum)
			c.err = changedBelowCheckpoint(r.rec.RecordingId, r.from, fmt.Sprintf(
				"where ferry published the record ending at %d with CRC-32C %08x (after what ended at %d), the archive now holds %s", m.End, m.Checksum, m.Start, found))
			return false
		}
		c.found = true
		if end < r.from {
			return false // padding or a broken message up to the checkpoint: no record may begin before it
		}
	case c.start < r.from:
		c.err = changedBelowCheckpoint(r.rec.RecordingId, r.from, fmt.Sprintf(
			"the archive now holds a record at [%d, %d), where ferry's checkpoint saw only padding after the record ending at %d", c.start, end, m.End))
		return false
	}
	c.pending = false
	if !c.past { // the marked record ends at the checkpoint: all dropped so far lies below
		st := r.asm.Stats()
		r.dropped.passOverBelow(st.Discarded, st.Orphaned)
	}
	r.lastEnd = r.from
	r.env.Logger.Info("the last record before the checkpoint is the one published; resuming after it", "stream", r.cfg.Def.Name,
		"recording", r.rec.RecordingId, "checkpoint", r.from, "record_start", m.Start, "record_end", m.End)
	return end > r.from
}

// gone says what err, an archive call's about recording id, means when the archive no
// longer knows the recording (retention purged it or it was deleted between the listing
// that scheduled it and this call, or ferry is connected to another archive), and the way
// on, as the stream's listing would (lesson 14); any other err is returned as it is. A
// recording read again only to check it (upTo) was published to its end already: nothing
// of it is lost, and the failure is transient: the stream's listing, which sees it gone too,
// takes it for done (stream.go, rechecking), as it does when it is the first to see it. Not
// so, the stream would fail for good or go on depending on which of the two saw it first.
func (r *replay) gone(id int64, err error) error {
	switch {
	case !errors.Is(err, archive.ErrRecordingUnknown):
		return err
	case r.upTo >= 0:
		// The stream may have seen it extended past upTo meanwhile (reopen): the replay does
		// not know, and says both.
		return supervisor.Fail(supervisor.Transient, fmt.Errorf("recording %d, which ferry had published to its end at %d and was reading again to check it, is no longer in the archive (retention purged it, it was deleted, or this is another archive): nothing of it up to %d is unpublished, and had the archive extended it past %d, what ferry had not published of the extension is gone with it; the stream's next listing finds it gone and goes on without it (%w)", id, r.upTo, r.upTo, r.upTo, err))
	}
	return fmt.Errorf("recording %d is no longer in the archive before ferry published all of it (retention purged it, it was deleted, or this is not the archive ferry published it from: then connect ferry to that one): if it is gone, its unpublished records are lost; %s (%w)",
		id, forgetToGoOn(r.cfg.Def.Name, []int64{id}), err)
}

// changedBelowCheckpoint is the failure of a recording whose records below ferry's
// checkpoint are not the ones ferry published: how it tells (what), and the way on.
func changedBelowCheckpoint(id, checkpoint int64, what string) error {
	return changedRecording(id, fmt.Sprintf("ferry's checkpoint at %d", checkpoint), what, checkpoint, "resuming from the checkpoint would skip them")
}

// changedRecording is the failure of a recording whose records below a point ferry
// published up to (below) are not the ones it published: how it tells (what), up to where
// (upTo), what would become of the new records (fate), and the way on.
func changedRecording(id int64, below, what string, upTo int64, fate string) error {
	return supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d changed below %s: %s. "+
		"The archive truncated it (TruncateRecording) and recorded on from there (ExtendRecording, as Aeron Cluster does with its log after an election), or its files were replaced: "+
		"the records it now holds from the truncation up to %d were never published, and %s. "+
		"Their positions are sequence ids the topic's deduplication has seen, so they cannot be published under the stream's producers; "+
		"to publish what the archive holds now, give the stream a new name in the configuration (new producers, published from its start_position), "+dropOldName,
		id, below, what, upTo, fate))
}

// endChecked is the archive's description of the recording at an end of stream.
type endChecked struct {
	gen      uint64
	position int64
	stop     int64
	session  int32 // the session the recording is recorded in now
	// openedStop and openedSession are the recording's stop (NullPosition: live) and
	// session when the replay began.
	openedStop    int64
	openedSession int32
	err           error
}

// replayEnd is what an end of stream was, told from the recording as the archive describes
// it at the end (see endChecked.kind).
type replayEnd int

const (
	// endOfRecording: the recording stops where the replay ended.
	endOfRecording replayEnd = iota
	// endExtended: the recording was extended (ExtendRecording) past where the replay
	// ended. The archive ends the replay of a stopped recording at the stop it had when
	// the replay began; and the replay of a live recording where it stopped, which an
	// extension recording in another session has moved on since.
	endExtended
	// endCut: the replay ended before the recording's stop, the archive did not say why:
	// it aborted the replay (StopReplay, its shutdown, a read error), or, for a replay
	// begun live, the recording may have stopped there and been extended in the same
	// session since.
	endCut
	// endTruncated: the recording now stops before where the replay ended: records ferry
	// read, and may have published, are no longer in the archive.
	endTruncated
)

// kind tells what the end of stream c describes was.
func (c *endChecked) kind() replayEnd {
	beyond := c.stop == archive.NullPosition || c.stop > c.position
	switch {
	case c.stop == c.position:
		return endOfRecording
	case !beyond:
		return endTruncated
	case c.openedStop != archive.NullPosition && c.position == c.openedStop,
		c.openedStop == archive.NullPosition && c.session != c.openedSession:
		return endExtended
	}
	return endCut
}

// checkEnd takes an end of stream for the recording's end only if the archive says, now,
// that the recording stops exactly there. The archive also ends a replay it aborts
// (shutdown, StopReplay, a read error), and ends the replay of a recording stopped when the
// replay began at that stop even if the recording was extended since (ExtendRecording):
// taken for the end, the rest of the recording would be marked completed and skipped.
func (r *replay) checkEnd(ctx actor.Context, position int64) {
	r.ended = true // no more polls
	if r.upTo >= 0 && position == r.upTo {
		// Where it was asked to end: the recording's end as ferry published it, which
		// the stream compares with the listings.
		r.onEndChecked(ctx, &endChecked{gen: r.gen, position: position, stop: position, openedStop: position})
		return
	}
	self, system, gen, id, timeout := ctx.Self(), ctx.ActorSystem(), r.gen, r.rec.RecordingId, r.cfg.CallTimeout
	openedStop, openedSession := r.opened.stopPosition, r.opened.recordedSession
	r.env.tasks().Go(func() {
		call, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		desc, err := r.env.Archive.Recording(call, id)
		system.Root.Send(self, &endChecked{gen: gen, position: position, stop: desc.StopPosition, session: desc.SessionID, openedStop: openedStop, openedSession: openedSession, err: err})
	})
}

func (r *replay) onEndChecked(ctx actor.Context, c *endChecked) {
	if c.gen != r.gen || r.draining() {
		return // an earlier incarnation's; or stopping, which needs no end (the tracker drains)
	}
	switch {
	case c.err != nil:
		err := r.gone(r.rec.RecordingId, fmt.Errorf("recording %d: describe at the replay's end: %w", r.rec.RecordingId, c.err))
		r.fail(ctx, "archive", supervisor.Classify(err), err)
	case c.kind() == endExtended:
		// Not a failure (supervisor.Restart: not counted against the stream's restarts
		// within their window, however often a publisher extends the recording): the
		// replay starts again from the persisted watermark over the recording as it is
		// now (its records in flight are sent again, and deduplicated).
		// The archive may also have truncated the recording under the tail just read
		// before extending it: the tracker compares what is read again with what it sent
		// (progress.ErrRecordChanged).
		now := fmt.Sprintf("now stops at %d", c.stop)
		if c.stop == archive.NullPosition {
			now = fmt.Sprintf("is recording again, in session %d", c.session)
		}
		r.env.Logger.Info("recording extended while ferry replayed it: reading on from the checkpoint", "stream", r.cfg.Def.Name, "recording", r.rec.RecordingId, "replayed_to", c.position, "now", now)
		panic(supervisor.Restart(fmt.Errorf("recording %d was extended while ferry replayed it (ExtendRecording): the replay ended at %d, where the recording stopped, and it %s; the replay starts again from the checkpoint", r.rec.RecordingId, c.position, now)))
	case c.kind() == endCut:
		maybe := ""
		if c.openedStop == archive.NullPosition {
			maybe = ", or the recording stopped there and was extended in the same session since"
		}
		r.fail(ctx, "read", supervisor.Transient, fmt.Errorf("recording %d: the replay ended at %d, but the recording stops at %d (live: %t): the archive aborted the replay (StopReplay, its shutdown or a read error)%s; the replay starts again from the checkpoint", r.rec.RecordingId, c.position, c.stop, c.stop == archive.NullPosition, maybe))
	case c.kind() == endTruncated:
		r.fail(ctx, "archive", supervisor.Poison, fmt.Errorf("recording %d now stops at %d, before %d, where ferry's replay of it ended: the archive truncated it (TruncateRecording) while ferry published it, and the records after %d that ferry read, some of which the topic may hold, are no longer in the archive. %s",
			r.rec.RecordingId, c.stop, c.position, c.stop, extensionDropped(c.position)))
	case r.check.pending && !r.check.found:
		m := r.check.mark
		r.fail(ctx, "archive", supervisor.Poison, changedBelowCheckpoint(r.rec.RecordingId, r.from,
			fmt.Sprintf("the recording ends at %d, and the replay from %d read no record [%d, %d) there", c.position, m.Start, m.Start, m.End)))
	default:
		r.end(ctx, c.position)
	}
}

// end reports the end of the stopped recording to the tracker.
func (r *replay) end(ctx actor.Context, stop int64) {
	r.ended = true
	if r.asm != nil && r.image != nil {
		// A message begun and not ended at the recording's stop never ends: an extension
		// is a new publication's, which begins messages of its own.
		r.asm.FreeSession(r.image.SessionID())
		r.sayDropped(ctx, stop, true)
	}
	ctx.Send(r.pids.tracker, &messages.ReplayEnded{RecordingId: r.rec.RecordingId, Generation: r.gen, StopPosition: stop})
	r.release()
}

// schedulePoll arranges one poll after d (at once if d is 0); at most one is pending.
func (r *replay) schedulePoll(ctx actor.Context, d time.Duration) {
	if r.pollPending || r.opened == nil || !r.takenOn || r.ended || r.draining() {
		return
	}
	r.pollPending = true
	msg := &pollReplay{gen: r.gen}
	if d == 0 {
		sendToSelf(ctx.ActorSystem(), ctx.Self(), msg)
		return
	}
	self, system := ctx.Self(), ctx.ActorSystem()
	time.AfterFunc(d, func() { system.Root.Send(self, msg) })
}

// release stops the replay and closes its subscription, on a goroutine.
func (r *replay) release() {
	if r.cancel != nil {
		r.cancel()
	}
	if r.handoff != nil {
		if res, ok := r.handoff.abandon(); ok {
			r.closeOpened(res) // offered, and its news not taken yet
		}
		r.handoff = nil
	}
	if r.opened != nil {
		r.closeOpened(r.opened)
		r.opened = nil
	}
	r.image = nil
}

func (r *replay) closeOpened(res *openedReplay) {
	if res.sub == nil && !res.replaying {
		return
	}
	timeout := r.cfg.CallTimeout
	r.env.tasks().Go(func() {
		var errs []error
		if res.sub != nil {
			errs = append(errs, res.sub.Close())
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if res.replaying {
			errs = append(errs, r.env.Archive.StopReplay(ctx, res.session))
		}
		if err := errors.Join(errs...); err != nil {
			r.env.Logger.Debug("closing a replay", "recording", r.rec.RecordingId, "error", err)
		}
	})
}
