package progress

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// Epoch numbers the emissions of a [CommitTracker] between resets. Every
// outcome must carry the epoch its record was emitted in; outcomes of an
// older epoch are stale and never change the tracker.
type Epoch uint64

// AckOutcome says what an acknowledgement did. None of them is an error.
type AckOutcome uint8

const (
	// AckAdvanced: the acknowledgement closed the gap at the committed
	// position; Committed moved forward.
	AckAdvanced AckOutcome = iota + 1
	// AckBuffered: recorded above an unacknowledged record; Committed is
	// unchanged until the gap closes (lesson 2).
	AckBuffered
	// AckDuplicate: the record was already acknowledged or committed. No-op.
	AckDuplicate
	// AckStale: the acknowledgement belongs to an epoch before the last
	// [CommitTracker.Reset]. No-op; the record will be acknowledged again.
	AckStale
	// AckAboveFailure: Pulsar stored the record ([CommitTracker.Ack], not
	// [CommitTracker.AckDuplicate]) although it lies above a record of the
	// same epoch whose send failed, in this epoch or an earlier one, whichever
	// outcome came first. Committed cannot pass the failure. With broker
	// deduplication on, this means the failed record's re-delivery will be
	// dropped as a duplicate (lesson 22): the producer did not fail-stop.
	// Callers must surface it loudly ([CommitTracker.Hazard] names both
	// records); [TrackerStats.AckedAboveFailure] counts it.
	AckAboveFailure
	// AckConflicting: the record already failed in this epoch; the first
	// outcome wins and the re-delivery is still required. No-op.
	AckConflicting
)

var ackOutcomeNames = [...]string{"", "advanced", "buffered", "duplicate", "stale", "above-failure", "conflicting"}

// String returns the outcome's name, as used in logs and test scripts.
func (o AckOutcome) String() string {
	if int(o) < len(ackOutcomeNames) && o != 0 {
		return ackOutcomeNames[o]
	}
	return fmt.Sprintf("AckOutcome(%d)", uint8(o))
}

// FailOutcome says what a publish failure did. None of them is an error.
type FailOutcome uint8

const (
	// FailStalled: the first failure of this epoch. Committed stops below
	// the record and a re-delivery is required (lesson 4).
	FailStalled FailOutcome = iota + 1
	// FailAdditional: another failure in an epoch that already requires a
	// re-delivery. Recorded; nothing new to do.
	FailAdditional
	// FailStale: the failure belongs to an epoch before the last reset, or
	// to a record already committed. No-op.
	FailStale
	// FailConflicting: the record was already acknowledged in this epoch;
	// the first outcome wins. No-op.
	FailConflicting
	// FailBelowStored: the record lies below one of the same epoch that
	// Pulsar stored already, in this epoch or an earlier one: the other order
	// of [AckAboveFailure], the same hazard (lesson 22), recorded as a
	// failure. Callers must surface it loudly.
	FailBelowStored
)

var failOutcomeNames = [...]string{"", "stalled", "additional", "stale", "conflicting", "below-stored"}

// String returns the outcome's name, as used in logs and test scripts.
func (o FailOutcome) String() string {
	if int(o) < len(failOutcomeNames) && o != 0 {
		return failOutcomeNames[o]
	}
	return fmt.Sprintf("FailOutcome(%d)", uint8(o))
}

// AckResult is the effect of one [CommitTracker.Ack].
type AckResult struct {
	Outcome AckOutcome
	// Committed is the committed position after the acknowledgement.
	Committed int64
	// NewlyCommitted is how many records this acknowledgement committed;
	// pass it to [CheckpointPolicy.Committed].
	NewlyCommitted int
}

// Pending is what a [CommitTracker] holds above its committed position.
type Pending struct {
	// Records emitted in the current epoch and not yet committed, whatever
	// their outcome so far.
	Records int
	// Bytes is the sum of end-start over those records.
	Bytes int64
}

// TrackerStats counts outcomes since construction. Only CommittedRecords is
// progress; no other counter may be reported as progress (lesson 26).
type TrackerStats struct {
	CommittedRecords  uint64
	Duplicates        uint64
	Stale             uint64
	Failures          uint64
	AckedAboveFailure uint64
	Conflicting       uint64
	Resets            uint64
}

type recordState uint8

const (
	inFlight recordState = iota
	acked
	failed
)

type record struct {
	start, end int64
	checksum   uint32
	state      recordState
}

// RecordMark is one record as it was emitted: where it starts and ends, and the checksum of
// its payload (CRC-32C). The mark of the last record committed goes with a checkpoint, so that
// a replay resumed from it can check that the archive still holds that record.
type RecordMark struct {
	Start, End int64
	Checksum   uint32
}

// CommitTracker tracks the records of one recording from emission to Pulsar
// acknowledgement and maintains the committed position: the end position of
// the contiguous acknowledged prefix (lessons 1, 2). The committed position
// never passes a record that was not acknowledged and never moves backwards;
// acknowledgements move it, and so does [CommitTracker.Finish], to the stop,
// over the padding after the last record once nothing is pending.
//
// A CommitTracker is not safe for concurrent use; one actor owns it.
type CommitTracker struct {
	recordingID int64
	epoch       Epoch
	committed   int64
	lastEnd     int64    // end of the last record emitted in this epoch
	pending     []record // emitted above committed, ascending end
	bytes       int64
	failed      bool
	failedEnd   int64 // lowest failed end in this epoch, valid if failed
	// sends keeps, for this epoch, each earlier one with outcomes still to come, and the
	// last maxEarlierEpochs, the lowest failed end and the highest stored end of its
	// records: outcomes of an epoch arrive in any order and after resets, and a record
	// stored above a failed one of the same epoch is lesson 22's hazard whichever came
	// first. Epochs whose records had neither outcome, and none still to come, have no
	// entry.
	sends map[Epoch]*epochSends
	// earlierUnanswered counts the records emitted in earlier epochs whose outcome had not
	// arrived at the reset that ended their epoch, less the stale outcomes since.
	earlierUnanswered int
	finished          bool
	stop              int64 // valid if finished
	// last is the last record committed; valid if lastOK.
	last   RecordMark
	lastOK bool
	// readBefore are the records emitted before the last reset and above the position it
	// resumed from, ascending end, that this epoch has not emitted again yet: the last
	// record committed and every record emitted above it, in any earlier epoch. Emitted
	// again, each must be the same (ErrRecordChanged): a restarted replay checks only
	// the record before the persisted position it resumes from, and the records from there
	// up to the committed position are not sent again, nor compared by Pulsar, whose
	// deduplication answers those above it that it stored as duplicates.
	readBefore []RecordMark
	stats      TrackerStats
}

// RecordChangedError is the error of [ErrRecordChanged]: what a record emitted before the
// last reset (Before) and the one emitted again in its place, or the recording's stop,
// say of the recording.
type RecordChangedError struct {
	RecordingID int64
	// Before is the first record emitted before the reset that was not emitted again.
	Before RecordMark
	// Now is the record emitted instead, which ends past Before's start or at its end with
	// another checksum; or, Finished, nothing: the recording now stops at Stop, before it.
	Now      RecordMark
	Finished bool
	Stop     int64
	// ReadTo is the end of the last record emitted before the reset.
	ReadTo int64
}

func (e *RecordChangedError) Error() string {
	now := fmt.Sprintf("now [%d,%d) with checksum %08x", e.Now.Start, e.Now.End, e.Now.Checksum)
	if e.Finished {
		now = fmt.Sprintf("the recording now stops at %d", e.Stop)
	}
	return fmt.Sprintf("recording %d: the record [%d,%d) with checksum %08x, emitted before the reset, is not there again (%s; emitted up to %d before): %v",
		e.RecordingID, e.Before.Start, e.Before.End, e.Before.Checksum, now, e.ReadTo, ErrRecordChanged)
}

func (e *RecordChangedError) Unwrap() error { return ErrRecordChanged }

// maxEarlierEpochs bounds how many earlier epochs whose outcomes have all arrived a tracker
// remembers. An epoch with outcomes still to come is remembered until they have come,
// however many resets later: resets go on while a producer hangs on its sends (replays
// restarted after a failure, each of which may send nothing), and an outcome of a
// forgotten epoch could not tell a record stored above a failed one (lesson 22).
const maxEarlierEpochs = 16

// epochSends is what the outcomes of one epoch's sends said so far.
type epochSends struct {
	failed, stored          bool
	lowestFailed, topStored int64 // valid if failed, stored
	// unanswered are the epoch's records whose outcome had not arrived at the reset that
	// ended it, less the outcomes that arrived since.
	unanswered int
}

// hazard reports whether a record stored lies above one that failed.
func (e *epochSends) hazard() bool {
	return e.failed && e.stored && e.topStored > e.lowestFailed
}

// NewCommitTracker returns a tracker for recordingID whose committed position
// is resume: the persisted checkpoint, or the recording's start position when
// there is none. Positions need not start at 0 (lesson 8).
func NewCommitTracker(recordingID, resume int64) (*CommitTracker, error) {
	if recordingID < 0 {
		return nil, fmt.Errorf("new commit tracker: recording %d: %w", recordingID, ErrInvalidRecordingID)
	}
	if resume < 0 {
		return nil, fmt.Errorf("new commit tracker: resume %d: %w", resume, ErrInvalidPosition)
	}
	return &CommitTracker{recordingID: recordingID, committed: resume, lastEnd: resume}, nil
}

// RecordingID returns the recording this tracker belongs to.
func (t *CommitTracker) RecordingID() int64 { return t.recordingID }

// Epoch returns the current epoch. Records emitted now belong to it.
func (t *CommitTracker) Epoch() Epoch { return t.epoch }

// Committed returns the end position of the contiguous acknowledged prefix.
// It is the only position that may be checkpointed.
func (t *CommitTracker) Committed() int64 { return t.committed }

// LastCommitted returns the last record this tracker committed: it ends at the committed
// position, or below it where only padding follows. ok is false until a record is
// committed (what was committed before the tracker was made is not known to it).
func (t *CommitTracker) LastCommitted() (mark RecordMark, ok bool) { return t.last, t.lastOK }

// Pending returns the records held above the committed position. Callers
// bound it (credits, lesson P4): it only shrinks as the prefix advances.
func (t *CommitTracker) Pending() Pending {
	return Pending{Records: len(t.pending), Bytes: t.bytes}
}

// InFlight returns how many records of the current epoch await their outcome: an
// acknowledgement of one may still move the committed position (those below a failure), or
// tell lesson 22's hazard (those above it).
func (t *CommitTracker) InFlight() int {
	n := 0
	for _, r := range t.pending {
		if r.state == inFlight {
			n++
		}
	}
	return n
}

// Stats returns the outcome counters.
func (t *CommitTracker) Stats() TrackerStats { return t.stats }

// Emit records that the record [start, end) of the recording, whose payload has
// checksum, is about to be handed to the producer in the current epoch. It must be called before the
// send, so that no outcome can arrive for an unknown record.
//
// Records must be emitted in position order: start must not be below the end
// of the previous record (gaps are padding, lesson 9) and end must exceed
// start. A record ending at or below the committed position is a re-emission
// after a [CommitTracker.Reset] to an older persisted position; it is accepted
// and not tracked (Pulsar deduplicates it; its outcome will be a duplicate).
//
// After a reset, a record emitted again must be the one emitted before in its place (its end
// and checksum), or Emit returns a [*RecordChangedError]: the records between the reset's
// position and the committed position are not sent again, and Pulsar answers those above it
// that it stored as duplicates, however their bytes changed.
//
// Emit returns [ErrStalled] after a failure until Reset, and [ErrFinished]
// after [CommitTracker.Finish].
func (t *CommitTracker) Emit(start, end int64, checksum uint32) error {
	switch {
	case t.failed:
		return fmt.Errorf("emit [%d,%d) of recording %d: %w", start, end, t.recordingID, ErrStalled)
	case t.finished:
		return fmt.Errorf("emit [%d,%d) of recording %d: %w", start, end, t.recordingID, ErrFinished)
	case start < 0 || end <= start:
		return fmt.Errorf("emit [%d,%d) of recording %d: %w", start, end, t.recordingID, ErrInvalidPosition)
	case start < t.lastEnd:
		return fmt.Errorf("emit [%d,%d) of recording %d after end %d: %w", start, end, t.recordingID, t.lastEnd, ErrRecordOrder)
	}
	if err := t.emittedAgain(RecordMark{Start: start, End: end, Checksum: checksum}); err != nil {
		return err
	}
	switch {
	case start < t.committed && end > t.committed:
		return fmt.Errorf("emit [%d,%d) of recording %d across committed %d: %w", start, end, t.recordingID, t.committed, ErrRecordOrder)
	}
	t.lastEnd = end
	if end <= t.committed {
		return nil
	}
	t.pending = append(t.pending, record{start: start, end: end, checksum: checksum})
	t.bytes += end - start
	return nil
}

// emittedAgain checks r, about to be emitted, against the records emitted before the reset
// up to its end (readBefore), and takes those off.
func (t *CommitTracker) emittedAgain(r RecordMark) error {
	for len(t.readBefore) > 0 && t.readBefore[0].End <= r.End {
		before := t.readBefore[0]
		if before.End < r.End || before.Checksum != r.Checksum {
			return &RecordChangedError{RecordingID: t.recordingID, Before: before, Now: r, ReadTo: t.readBefore[len(t.readBefore)-1].End}
		}
		t.readBefore = t.readBefore[1:]
	}
	if len(t.readBefore) == 0 {
		t.readBefore = nil
	}
	return nil
}

// readAgain is what a reset to from leaves to be emitted again: the records emitted before
// it above from (see readBefore).
func (t *CommitTracker) readAgain(from int64) []RecordMark {
	marks := slices.Clone(t.readBefore)
	if t.lastOK {
		marks = append(marks, t.last)
	}
	for _, r := range t.pending {
		marks = append(marks, RecordMark{Start: r.start, End: r.end, Checksum: r.checksum})
	}
	marks = slices.DeleteFunc(marks, func(m RecordMark) bool { return m.End <= from })
	slices.SortFunc(marks, func(a, b RecordMark) int { return cmp.Compare(a.End, b.End) })
	// The last record committed may be one not emitted again since an earlier reset.
	marks = slices.CompactFunc(marks, func(a, b RecordMark) bool { return a.End == b.End })
	if len(marks) == 0 {
		return nil
	}
	return marks
}

// find returns the index of the pending record ending at end.
func (t *CommitTracker) find(end int64) (int, bool) {
	return slices.BinarySearchFunc(t.pending, end, func(r record, e int64) int { return cmp.Compare(r.end, e) })
}

// Ack delivers Pulsar's acknowledgement of the record ending at end, emitted
// in epoch, which the broker stored. It is idempotent: late, out-of-order,
// duplicated and stale acknowledgements are outcomes, not errors. It returns
// an error only for a bug: an epoch from the future, or a current-epoch end
// position above the committed position that was never emitted
// ([ErrUnknownRecord]).
func (t *CommitTracker) Ack(epoch Epoch, end int64) (AckResult, error) {
	return t.ack(epoch, end, true)
}

// AckDuplicate is [CommitTracker.Ack] for a record the broker answered as a
// duplicate of one it had stored before (deduplication): acknowledged the
// same, but this send stored nothing, so it never lies above a failure.
func (t *CommitTracker) AckDuplicate(epoch Epoch, end int64) (AckResult, error) {
	return t.ack(epoch, end, false)
}

func (t *CommitTracker) ack(epoch Epoch, end int64, stored bool) (AckResult, error) {
	res := AckResult{Committed: t.committed}
	if epoch > t.epoch {
		return res, fmt.Errorf("ack %d of recording %d in epoch %d, current %d: %w", end, t.recordingID, epoch, t.epoch, ErrUnknownEpoch)
	}
	if epoch < t.epoch {
		t.answeredEarlier(epoch)
		if stored && t.sent(epoch, end, false) {
			t.stats.AckedAboveFailure++
			res.Outcome = AckAboveFailure
			return res, nil
		}
		t.stats.Stale++
		res.Outcome = AckStale
		return res, nil
	}
	if end <= t.committed {
		t.stats.Duplicates++
		res.Outcome = AckDuplicate
		return res, nil
	}
	i, ok := t.find(end)
	if !ok {
		return res, fmt.Errorf("ack %d of recording %d in epoch %d: %w", end, t.recordingID, epoch, ErrUnknownRecord)
	}
	switch t.pending[i].state {
	case acked:
		t.stats.Duplicates++
		res.Outcome = AckDuplicate
		return res, nil
	case failed:
		t.stats.Conflicting++
		res.Outcome = AckConflicting
		return res, nil
	}
	t.pending[i].state = acked
	if i > 0 {
		if stored && t.sent(epoch, end, false) {
			t.stats.AckedAboveFailure++
			res.Outcome = AckAboveFailure
		} else {
			res.Outcome = AckBuffered
		}
		return res, nil
	}
	res.NewlyCommitted = t.advance()
	res.Outcome = AckAdvanced
	res.Committed = t.committed
	return res, nil
}

// advance pops the acknowledged prefix and moves committed to its end.
func (t *CommitTracker) advance() int {
	n := 0
	for n < len(t.pending) && t.pending[n].state == acked {
		r := t.pending[n]
		t.bytes -= r.end - r.start
		t.committed = r.end
		t.last, t.lastOK = RecordMark{Start: r.start, End: r.end, Checksum: r.checksum}, true
		n++
	}
	t.pending = t.pending[n:]
	if len(t.pending) == 0 {
		t.pending = nil // drop the consumed backing array
		if t.finished && t.stop > t.committed {
			t.committed = t.stop // trailing padding: nothing to acknowledge
		}
	}
	t.stats.CommittedRecords += uint64(n)
	return n
}

// Fail delivers a publish failure of the record ending at end, emitted in
// epoch. The committed position never passes a failed record; the first
// failure of an epoch makes [CommitTracker.Redelivery] required (lesson 4)
// and stops further emission (lesson 22). Like [CommitTracker.Ack] it is
// idempotent and returns an error only for a bug.
func (t *CommitTracker) Fail(epoch Epoch, end int64) (FailOutcome, error) {
	if epoch > t.epoch {
		return 0, fmt.Errorf("fail %d of recording %d in epoch %d, current %d: %w", end, t.recordingID, epoch, t.epoch, ErrUnknownEpoch)
	}
	if epoch < t.epoch || end <= t.committed {
		if epoch < t.epoch {
			t.answeredEarlier(epoch)
			if t.sent(epoch, end, true) {
				t.stats.Failures++
				return FailBelowStored, nil
			}
		}
		t.stats.Stale++
		return FailStale, nil
	}
	i, ok := t.find(end)
	if !ok {
		return 0, fmt.Errorf("fail %d of recording %d in epoch %d: %w", end, t.recordingID, epoch, ErrUnknownRecord)
	}
	switch t.pending[i].state {
	case acked:
		t.stats.Conflicting++
		return FailConflicting, nil
	case failed:
		t.stats.Duplicates++
		return FailAdditional, nil
	}
	t.pending[i].state = failed
	t.stats.Failures++
	hazard := t.sent(epoch, end, true)
	first := !t.failed
	if first || end < t.failedEnd {
		t.failedEnd = end
	}
	t.failed = true
	switch {
	case hazard:
		return FailBelowStored, nil
	case first:
		return FailStalled, nil
	}
	return FailAdditional, nil
}

// sent records the outcome of the send of the record ending at end in epoch — failed, or
// else stored — and reports whether it is lesson 22's hazard: a record stored above one
// of the epoch that failed, or a failed one below one stored. Outcomes of earlier epochs
// no longer remembered (see maxEarlierEpochs) are not kept.
func (t *CommitTracker) sent(epoch Epoch, end int64, failed bool) (hazard bool) {
	e := t.sends[epoch]
	if e == nil {
		if epoch < t.epoch {
			return false // an earlier epoch whose outcomes had all arrived: forgotten
		}
		e = t.epochSends(epoch)
	}
	if failed {
		if !e.failed || end < e.lowestFailed {
			e.failed, e.lowestFailed = true, end
		}
		return e.stored && e.topStored > end
	}
	if !e.stored || end > e.topStored {
		e.stored, e.topStored = true, end
	}
	return e.failed && end > e.lowestFailed
}

// epochSends returns the entry of epoch, made if it has none.
func (t *CommitTracker) epochSends(epoch Epoch) *epochSends {
	e := t.sends[epoch]
	if e == nil {
		if t.sends == nil {
			t.sends = map[Epoch]*epochSends{}
		}
		e = &epochSends{}
		t.sends[epoch] = e
	}
	return e
}

// Hazard returns, for an epoch in which a record Pulsar stored lies above one whose send
// failed (lesson 22: [AckAboveFailure], [FailBelowStored]), the lowest failed end and the
// highest stored end; ok is false for an epoch without it, or one no longer remembered.
func (t *CommitTracker) Hazard(epoch Epoch) (failedEnd, storedEnd int64, ok bool) {
	if e := t.sends[epoch]; e != nil && e.hazard() {
		return e.lowestFailed, e.topStored, true
	}
	return 0, 0, false
}

// Undecided reports whether lesson 22 cannot be ruled out yet: in some epoch a send failed
// while sends of that epoch above it still await their outcome, one of which Pulsar may
// store (the hazard). It returns the lowest such failed end and how many outcomes are due
// (of an earlier epoch, all it still awaits: which records they are is not kept). A caller
// that stops without those outcomes cannot tell whether the failed record's re-send will be
// answered as a duplicate of a later one.
func (t *CommitTracker) Undecided() (failedEnd int64, unanswered int, undecided bool) {
	if t.failed {
		for _, r := range t.pending {
			if r.state == inFlight && r.end > t.failedEnd {
				unanswered++
			}
		}
		if unanswered > 0 {
			return t.failedEnd, unanswered, true
		}
	}
	for _, epoch := range slices.Sorted(maps.Keys(t.sends)) {
		if e := t.sends[epoch]; epoch < t.epoch && e.failed && e.unanswered > 0 {
			return e.lowestFailed, e.unanswered, true
		}
	}
	return 0, 0, false
}

// Redelivery reports whether a publish failure requires the replay to be
// restarted, and the committed position it may restart from at the highest.
// Stalling without re-delivery would lose the record while looking healthy
// (lesson 4): while required is true the caller must restart the replay
// (from the persisted position, which is at or below from) and call
// [CommitTracker.Reset].
func (t *CommitTracker) Redelivery() (from int64, required bool) {
	return t.committed, t.failed
}

// Reset starts a new epoch after the replay was restarted at position from,
// which must not exceed the committed position (usually it is the persisted
// one). Every record above the committed position is discarded, whatever its
// outcome (those without one yet are counted in [CommitTracker.EarlierUnanswered]);
// outcomes of earlier epochs become stale. Committed is unchanged. The records
// emitted before, above from, are kept to check the new epoch's against (see
// [CommitTracker.Emit]).
// Reset returns the new epoch.
func (t *CommitTracker) Reset(from int64) (Epoch, error) {
	if from < 0 {
		return t.epoch, fmt.Errorf("reset recording %d to %d: %w", t.recordingID, from, ErrInvalidPosition)
	}
	if from > t.committed {
		return t.epoch, fmt.Errorf("reset recording %d to %d above committed %d: %w", t.recordingID, from, t.committed, ErrResetBeyondCommitted)
	}
	unanswered := 0
	for _, r := range t.pending {
		if r.state == inFlight {
			unanswered++
		}
	}
	if unanswered > 0 {
		t.epochSends(t.epoch).unanswered = unanswered
		t.earlierUnanswered += unanswered
	}
	t.epoch++
	for epoch, e := range t.sends {
		if e.unanswered == 0 && t.epoch-epoch > maxEarlierEpochs {
			delete(t.sends, epoch)
		}
	}
	t.readBefore = t.readAgain(from)
	t.pending = nil
	t.bytes = 0
	t.failed = false
	t.finished = false
	t.lastEnd = from
	t.stats.Resets++
	return t.epoch, nil
}

// EarlierUnanswered returns how many records emitted in earlier epochs have had no outcome
// yet: sent before a reset and still out (a drain waits for them too, although their
// outcomes change nothing). An outcome can be lost (lesson 2), so it may never reach zero.
func (t *CommitTracker) EarlierUnanswered() int { return t.earlierUnanswered }

// answeredEarlier counts the arrival of an outcome of earlier epoch.
// NotSentEarlier records that a record of an earlier epoch than the current one was never
// sent (its replay restarted before it was): it has no outcome to weigh — nothing of its
// epoch above it was sent — and is one fewer outcome that epoch awaits. A later epoch than
// the current one is an error, as for [CommitTracker.Fail]; the current one has no such
// record (a skip after a failure of the current epoch is a failure: Fail).
func (t *CommitTracker) NotSentEarlier(epoch Epoch) error {
	if epoch >= t.epoch {
		return fmt.Errorf("not sent in epoch %d of recording %d, current %d: %w", epoch, t.recordingID, t.epoch, ErrUnknownEpoch)
	}
	t.answeredEarlier(epoch)
	t.stats.Stale++
	return nil
}

func (t *CommitTracker) answeredEarlier(epoch Epoch) {
	if e := t.sends[epoch]; e != nil && e.unanswered > 0 {
		e.unanswered--
		t.earlierUnanswered--
	}
}

// Finish records that the replay reached the end of the stopped recording at
// stop, the recording's stop position. No record may be emitted afterwards in
// this epoch, nor another stop given (the same one again changes nothing). A stop
// below the committed position returns [ErrFinishBelowCommitted]: the recording was
// truncated below records already acknowledged; a stop before the end of a record
// emitted before the last reset, or with one of them not emitted again (unless a failure
// stalled the epoch: its records are emitted again after the next reset), a
// [*RecordChangedError].
// Once every record is acknowledged, Committed becomes stop.
func (t *CommitTracker) Finish(stop int64) error {
	if t.finished && stop != t.stop {
		return fmt.Errorf("finish recording %d at %d, finished at %d in this epoch: %w", t.recordingID, stop, t.stop, ErrRecordOrder)
	}
	if stop < t.lastEnd {
		return fmt.Errorf("finish recording %d at %d below last end %d: %w", t.recordingID, stop, t.lastEnd, ErrRecordOrder)
	}
	if stop < t.committed {
		return fmt.Errorf("finish recording %d at %d below committed %d: %w", t.recordingID, stop, t.committed, ErrFinishBelowCommitted)
	}
	if len(t.readBefore) > 0 && !t.failed {
		// (Stalled, the epoch stopped emitting at the failure: the records after it are read
		// again, and checked, after the next reset.)
		return &RecordChangedError{RecordingID: t.recordingID, Before: t.readBefore[0], Finished: true, Stop: stop, ReadTo: t.readBefore[len(t.readBefore)-1].End}
	}
	t.finished = true
	t.stop = stop
	if len(t.pending) == 0 && stop > t.committed {
		t.committed = stop
	}
	return nil
}

// Completed reports whether the recording is finished and every record up to
// its stop position is acknowledged. It says nothing about persistence: the
// next recording may start only once the final checkpoint is saved too
// (lesson 5: the checkpointer's CheckpointPersisted, completed, tells the stream).
func (t *CommitTracker) Completed() bool {
	return t.finished && !t.failed && len(t.pending) == 0 && t.committed == t.stop
}
