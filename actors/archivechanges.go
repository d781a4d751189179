package actors

// What the archive changed under ferry, told from its listings: a recording id reused by
// another recording (a replaced catalog), a recording truncated, extended, or stopped again
// at the same end, and records lost before ferry began them (lesson 14). The stream
// supervisor follows what it can follow in order, and stops the stream, saying what to do,
// where it cannot.

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
)

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
		return fmt.Errorf("recording %d in the archive began at %s, after recording %d, which has a higher id, began (at %s), and after ferry had checkpointed it (at %s), although the archive gives ids in the order it makes recordings: "+
			"its catalog was replaced or rebuilt and reuses recording ids, and ferry, which leaves out recordings below the first it took on, would skip this one; it stops the stream instead (lesson 14). %s. "+
			"If the archive was not replaced, its clock is ahead of this machine's by more than %s: set both clocks right, and start ferry again",
			r.RecordingId, formatMs(r.StartMs), cp.RecordingID, formatMs(cp.StartMs), formatMs(s.origins.oldestWrite), renameToGoOn, clockTolerance)
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
// to the same end, which only reading its last record again tells apart (reopen); at a run's
// first listing, the stop time its completed checkpoint keeps stands for the listing before
// (stopBefore), so that what the archive did while ferry was down is told too. (A recording
// extended before ferry finished it is followed as it is: its replay reads on, or starts
// again from the checkpoint.)
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
	case !r.Live && r.StopPosition == final && done:
		if before, seen := s.stopBefore(r); before != r.StopMs {
			return fmt.Sprintf("it stopped again at %d, at %s (%s): extended by nothing, or truncated and recorded again to the same end", r.StopPosition, formatMs(r.StopMs), seen), nil
		}
	case !r.Live && r.StopPosition < final:
		return "", fmt.Errorf("recording %d now stops at %d, before %d, where ferry published it to its end: the archive truncated it (TruncateRecording), and the records after %d that ferry published are no longer in the archive. %s",
			id, r.StopPosition, final, r.StopPosition, extensionDropped(final))
	}
	return "", nil
}

// stopBefore is the stop time of completed recording r (listed stopped at the end ferry
// published it to) before this listing, and how that was seen: at the listing before, or,
// at a run's first, as its checkpoint keeps it. A checkpoint that keeps no stop time at that
// end (ferry stopped before a listing showed the recording stopped; or a stop kept
// elsewhere, which checkTail tells) gives 0, which no stop time is: the recording is read
// again once, unless the checkpoint keeps no last record to compare (an older ferry's).
// A recording listed live before (its stop not listed yet) gives r's own: nothing to tell.
func (s *streamSupervisor) stopBefore(r *messages.RecordingInfo) (int64, string) {
	id := r.RecordingId
	if k := s.known[id]; k != nil {
		if k.Live {
			return r.StopMs, ""
		}
		return k.StopMs, "before, at " + formatMs(k.StopMs)
	}
	kept := s.listedStops[id]
	switch {
	case kept.position == r.StopPosition && kept.atMs != 0:
		return kept.atMs, "its checkpoint keeps a stop at " + formatMs(kept.atMs)
	case !s.origins.byRecording[id].LastRecord.Known():
		return r.StopMs, ""
	}
	return 0, "its checkpoint keeps no stop time at that end"
}

// checkTail fails if a recording ferry has not published to its end now stops before where
// an earlier listing had it stop, or had recorded it to: the archive truncated it
// (TruncateRecording, possible once it stopped) while it waited or between two replays of
// it. Replayed as it now is, it would end at the new stop and count as completed, its records
// after that never published, without a word (lessons 14 and 26). One published to its end is
// checkEnd's, unless a listing showed it extended since (its stop kept above its end); one
// taken up at latest, whose earlier records ferry leaves out, is not checked.
//
// The stop its checkpoint keeps (listedStops, written when a listing shows a new one) stands
// for a listing before this run's first: a recording stopped below it was truncated while
// ferry was down, or was when this run's predecessor stopped the stream over it. One live
// again, recorded to below it, or stopped below it at another time than the stop kept
// (TruncateRecording keeps the stop time), was also recorded again after the truncation: the
// archive extends a recording only from its stop. A checkpoint of an older ferry keeps no
// stop; a live recording whose recorded position was not read is not checked; nor is, at the
// first listing, a stop below the checkpoint, which the recording's replay refuses with its
// own way on (replay.go, openReplay).
//
// The way on for one only truncated keeps what the archive still has: `ferry checkpoint
// forget` lowers the stop the checkpoint keeps, and ferry then publishes the recording to its
// new end. One recorded again needs a new stream name: its new records take the old ones'
// positions, the sequence ids the topic's deduplication knows from its producer.
func (s *streamSupervisor) checkTail(r *messages.RecordingInfo) error {
	id := r.RecordingId
	if completed := s.completed[id] || s.storedCompleted[id]; completed && s.listedStops[id].position <= s.finalAt[id] || s.atLatest(id) {
		return nil
	}
	before, where := s.listedStops[id], "where a listing had it stop before this run of ferry (its checkpoint keeps that stop)"
	k := s.known[id]
	switch {
	case k != nil && !k.Live && k.StopPosition >= before.position:
		before, where = stopMark{k.StopPosition, k.StopMs}, "where an earlier listing had it stop"
	case k != nil && k.Live && k.RecordedPosition >= before.position:
		before, where = stopMark{k.RecordedPosition, 0}, "where an earlier listing had it recorded to" // -1: not read
	}
	now, nowHow, from := r.StopPosition, "stops at", fmt.Sprint(r.StopPosition)
	again := r.Live || before.atMs != 0 && r.StopMs != before.atMs
	switch {
	case r.Live:
		now, nowHow = r.RecordedPosition, "is recorded again (extended), recorded to" // -1: not read
		from = fmt.Sprintf("where it was truncated (at most %d)", now)
	case again:
		nowHow = fmt.Sprintf("stops, at %s (not at %s, when it stopped at %d: recorded again, extended, after a truncation), at", formatMs(r.StopMs), formatMs(before.atMs), before.position)
		from = fmt.Sprintf("where it was truncated (at most %d)", now)
	}
	if now < 0 || now >= before.position || k == nil && now < s.storedCheckpoint(id).Position {
		return nil
	}
	toGoOn := truncatedToGoOn(s.cfg.Def.Name, id)
	if again {
		// Its new records take the positions, so the sequence ids, of the old ones: those
		// the topic holds from the recording's producer would be dropped as duplicates.
		toGoOn = "Its new records have the positions of the old ones, which are the sequence ids of the recording's producer: the topic's deduplication would drop those it holds old records for as already stored. " +
			continueUnderANewName
	}
	return fmt.Errorf("recording %d now %s %d, before %d, %s: the archive truncated it (TruncateRecording) before ferry published it to its end, and its records from %s to %d, which ferry had not all published, are gone. %s",
		id, nowHow, now, before.position, where, from, before.position, toGoOn)
}

// stopMark is where, and when, a listing showed a recording stopped (atMs 0: not known).
type stopMark struct{ position, atMs int64 }

// keptStop is the stop checkpoint cp keeps (zero: none).
func keptStop(cp store.Checkpoint) stopMark { return stopMark{cp.ListedStop, cp.ListedStopMs} }

// truncatedToGoOn is the way on after the archive truncated recording id above where ferry
// had published it to: accept the loss and publish the recording to its new end, or publish
// the whole stream again.
func truncatedToGoOn(stream string, id int64) string {
	return fmt.Sprintf("To go on without them, stop ferry and run `%s`: ferry then publishes what the archive still has of the recording (when forget finds no stop above the new one in the checkpoint, or no checkpoint of it, it changes nothing, and ferry does so anyway); or %s",
		store.ForgetCommand(stream, id), resetAgain(stream))
}

// noteStop has the checkpointer store where, and when, a listing shows recording r stopped,
// when that is not the stop its checkpoint keeps or the checkpointer was last told: once when
// it is first listed stopped, and again when it stops elsewhere or at another time (extended).
// A recording with a stored checkpoint has it written at once; one without has it written
// with its seed. A recording read again (stopped again at its end at another time, see
// reopen) has its new stop time stored only once that reading is done, by a listing after
// it: stored before, and ferry stopped meanwhile, the next run would find the stop time
// kept and never read it again (checkEnd). A stop below the checkpoint stored at start is
// not stored either: the recording was truncated below what ferry published, which its
// replay refuses (forget refuses it too; the way on is a reset); stored, it would replace
// the stop kept above, which checkTail compares a recording recorded again since with.
func (s *streamSupervisor) noteStop(ctx actor.Context, r *messages.RecordingInfo) {
	id := r.RecordingId
	mark := stopMark{r.StopPosition, r.StopMs}
	if r.Live || r.StopPosition <= 0 || s.listedStops[id] == mark || s.rechecking[id] || r.StopPosition < s.origins.byRecording[id].Position {
		return
	}
	s.listedStops[id] = mark
	ctx.Send(s.checkpointer, &messages.RecordingListedStopped{RecordingId: id, StopPosition: r.StopPosition, StopMs: r.StopMs})
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
		if err := s.mayPublishExtension(id, newest, how); err != nil {
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
		if err := s.mayPublishExtension(id, newest, how); err != nil {
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
// which ferry had published to its end, may be published (see reopen): no recording after
// it is in this listing (newest), or those that are wait for the extension (listedBefore).
func (s *streamSupervisor) mayPublishExtension(id int64, newest bool, how string) error {
	if !newest && !s.listedBefore(id) {
		return s.extendedError(id, how)
	}
	if !s.listedBefore(id) && s.origins.byRecording[id].StartMs == 0 {
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
	return fmt.Errorf("recording %d was extended after it stopped%s (the archive's ExtendRecording: %s), and recordings after it came first: ferry follows an extension only where no later recording can have been published "+
		"(the stream's newest recording, or, while ferry runs, one with no later recording listed before or checkpointed), and stops the stream rather than leave what was appended unpublished or put it among the later recordings. To publish the extension, run `%s`: the stream is then published again from its configured start_position. "+
		"Only what was appended is stored if that start includes recording %d (start_position earliest, or a start_recording_id at or below %d; from latest it would be skipped) "+
		"and the topic's deduplication still remembers the recording's producer %s (Pulsar forgets a producer idle for brokerDeduplicationProducerInactivityTimeoutMinutes, 6 hours by default): "+
		"records it no longer remembers are stored again. Better, record a continuation as a new recording.%s",
		id, end, how, store.ResetCommand(s.cfg.Def.Name), id, id, producer, unsure)
}

// renameToGoOn is the way on after the archive's catalog was replaced.
const renameToGoOn = "To publish the new archive's recordings, give the stream a new name in the configuration: its producers (ferry-<name>-<recording id>) are then new " +
	"to the topic's deduplication, which would otherwise drop the reused ids' records as duplicates of the old ones (a checkpoint reset alone would not do); " + dropOldName

// continueUnderANewName is the way on after the archive rewrote positions ferry had
// published (truncated, then recorded on): the new records would take the old ones'
// sequence ids, which the topic's deduplication drops under the same producers.
const continueUnderANewName = "Record a continuation as a new recording instead; to go on, give the stream a new name in the configuration (new producers, published from its start_position), " + dropOldName

// extensionDropped ends the failure of a recording the archive truncated below upTo, the
// end of what ferry published or read of it: what an extension from the truncation would
// meet, and the way on.
func extensionDropped(upTo int64) string {
	return fmt.Sprintf("If the recording is extended from there, the topic's deduplication drops the new records up to %d as already stored (their sequence ids are positions); ferry stops the stream rather than let that happen unseen. ", upTo) +
		continueUnderANewName
}

// dropOldName completes the advice to give a stream a new name: `ferry run` refuses a
// stream with nothing stored while another name's checkpoints are stored for its channel,
// stream id and topic (it looks like an accidental rename), so the old name's go first.
const dropOldName = "then drop the checkpoints stored under the old name with `ferry checkpoint reset --config FILE --stream OLD --yes` (ferry run refuses the new name while they are there, taking it for an accidental rename)"

// laterCheckpointed returns, for a recording the skip rule leaves out (an id below the
// lowest stored one), the stored checkpoint of the lowest recording that knows its origin,
// if r began after that recording began and after the oldest checkpoint write stored (by
// more than clockTolerance, this machine's clock against the archive's): the archive gives
// ids in the order it makes recordings, so every recording below the lowest stored one was
// made, and began, before any stored one was made, listed or checkpointed, and r is not of
// the archive ferry checkpointed; skipping it would drop a new archive's recording
// silently. The start times alone do not tell: a recording replicated into the archive
// keeps its source's start time, and one stored with an older start than the recordings
// below it would make them look like another archive's.
func (s *streamSupervisor) laterCheckpointed(r *messages.RecordingInfo) (store.Checkpoint, bool) {
	e, cps := s.origins.lowest, s.cfg.Stored.Checkpoints
	if e.StartMs == 0 || r.RecordingId >= cps[0].RecordingID || e.StartMs >= r.StartMs || r.StartMs <= s.origins.oldestWrite+clockTolerance.Milliseconds() {
		return store.Checkpoint{}, false
	}
	return e, true
}

// clockTolerance is how far ahead of this machine's clock the archive's may be before a
// recording's start time is taken to come after a checkpoint written here.
const clockTolerance = time.Minute

// storedOrigins are the stored checkpoints that know their recording's origin, by
// recording, the one of them with the lowest recording id, and when the oldest checkpoint
// stored was written.
type storedOrigins struct {
	byRecording map[int64]store.Checkpoint
	lowest      store.Checkpoint // StartMs 0: none
	oldestWrite int64            // the oldest UpdatedAtMs stored, Unix epoch ms (0: none)
}

func newStoredOrigins(cps []store.Checkpoint) storedOrigins {
	o := storedOrigins{byRecording: map[int64]store.Checkpoint{}}
	for _, cp := range cps {
		if cp.StartMs == 0 {
			continue
		}
		o.byRecording[cp.RecordingID] = cp
		if o.lowest.StartMs == 0 || cp.RecordingID < o.lowest.RecordingID {
			o.lowest = cp
		}
	}
	for _, cp := range cps {
		if cp.UpdatedAtMs > 0 && (o.oldestWrite == 0 || cp.UpdatedAtMs < o.oldestWrite) {
			o.oldestWrite = cp.UpdatedAtMs
		}
	}
	return o
}

// checkStart fails if a recording that ferry has not begun to publish lost records at its
// start since an earlier listing: the archive purged or detached its first segments
// (retention) while it waited for an earlier recording. Started at its new start, it would
// skip them silently. A running replay checks its own start (replay.go), and a recording
// ferry starts from a later position (a checkpoint, start_position) loses nothing it would
// have published.
//
// A recording with a stored checkpoint (a seed, as every recording gets when first listed)
// that the listing shows starting past it, and that ferry has not taken up in this run,
// lost records ferry never published while ferry was down: that fails at once, not only when
// its replay opens, which may be hours later behind the recordings it waits for.
func (s *streamSupervisor) checkStart(r *messages.RecordingInfo) error {
	id := r.RecordingId
	if s.stored[id] && s.running[id] == nil && !s.finished[id] && !s.completed[id] && s.reopenings[id] == 0 {
		if cp := s.storedCheckpoint(id); !cp.Completed && cp.Position < r.StartPosition {
			return fmt.Errorf("recording %d starts at %d, after the position %d ferry must resume from: the archive purged or detached its first segments (retention) while ferry was down, and ferry never published its records from %d to %d; %s",
				id, r.StartPosition, cp.Position, cp.Position, r.StartPosition, headCutToGoOn(s.cfg.Def.Name, id))
		}
	}
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
		id, k.StartPosition, r.StartPosition, headCutToGoOn(s.cfg.Def.Name, id))
}

// formatMs is a Unix epoch millisecond time as operators read it.
func formatMs(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

// forgetToGoOn is the way on after recordings ids vanished from the archive unfinished: the
// stream's other recordings go on once they are forgotten (or at once, for one ferry holds
// no checkpoint of: none of it was acknowledged), or everything from the start again.
func forgetToGoOn(stream string, ids []int64) string {
	cmds := make([]string, len(ids))
	for i, id := range ids {
		cmds[i] = "`" + store.ForgetCommand(stream, id) + "`"
	}
	return fmt.Sprintf("to go on with the recordings after them, stop ferry and run %s (for one `ferry checkpoint show` lists no checkpoint of, no record of it was acknowledged: start ferry again, and it goes on without it, not mentioning it again); or, %s",
		strings.Join(cmds, ", then "), resetToGoOn(stream))
}

// headCutToGoOn is the way on after the archive cut the head of recording id before ferry
// acknowledged anything of it (its checkpoint a seed), or in the middle of what it had not
// published yet.
func headCutToGoOn(stream string, id int64) string {
	return fmt.Sprintf("if ferry acknowledged none of it (`ferry checkpoint show`: taken on, nothing acknowledged yet), stop ferry and run `%s` to take it up at its new start (with no checkpoint of it listed, just start ferry again); otherwise, %s",
		store.ForgetCommand(stream, id), resetToGoOn(stream))
}

// resetToGoOn is the way on for a stream stopped over records the archive no longer has:
// accept the loss, and publish the stream again from its start position.
func resetToGoOn(stream string) string { return "to go on without them, " + resetAgain(stream) }

// resetAgain is the command that publishes a stream again from its start position, and
// what that costs.
func resetAgain(stream string) string {
	return fmt.Sprintf("run `%s`: the stream then publishes again from its configured start_position, and what it had published is %s", store.ResetCommand(stream), store.StoredTwice)
}
