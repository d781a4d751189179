package progress

import "errors"

// Errors returned by this package. Callers test with [errors.Is]; every
// returned error wraps exactly one of these with context. Unless its comment
// says otherwise, an error means the caller broke a contract (a bug): the
// supervisor should fail the owning actor and restart it from the persisted
// checkpoint, which is always safe. Conditions that are expected in
// production (late, duplicate or stale acknowledgements) are never errors;
// they are reported as outcomes ([AckOutcome], [FailOutcome]).
var (
	// ErrInvalidPosition: a position is negative, or a record is empty
	// (end <= start).
	ErrInvalidPosition = errors.New("progress: invalid position")

	// ErrRecordOrder: a record was emitted that does not start at or after
	// the end of the previous one, or that straddles the committed position.
	// End positions must be strictly increasing within an epoch.
	ErrRecordOrder = errors.New("progress: record out of order")

	// ErrStalled: a record was emitted after a publish failure and before
	// [CommitTracker.Reset]. Sends for one producer must fail-stop in order
	// (lesson 22): emitting past a failure is what turns its re-delivery into
	// a silent dedup drop.
	ErrStalled = errors.New("progress: stalled by a publish failure; reset required")

	// ErrFinishBelowCommitted: [CommitTracker.Finish] was given a stop below the
	// committed position, which a replay started again from an older persisted
	// position reaches when the archive truncated the recording below records
	// already acknowledged. Not a bug: the archive changed the recording under
	// ferry, whose acknowledged records past the stop it no longer holds.
	ErrFinishBelowCommitted = errors.New("progress: recording ends below its committed position")

	// ErrRecordChanged: after a [CommitTracker.Reset], a record was emitted, or the
	// recording finished, where the records emitted before it say otherwise: another record
	// ends where one emitted before ended, or none does, or the recording now ends before
	// it. Not a bug: the archive changed the recording under ferry (truncated and recorded
	// on) between two replays of it. The error is a [*RecordChangedError].
	ErrRecordChanged = errors.New("progress: record changed since it was emitted")

	// ErrFinished: a record was emitted after [CommitTracker.Finish].
	ErrFinished = errors.New("progress: recording already finished")

	// ErrUnknownRecord: an acknowledgement or failure of the current epoch
	// names an end position above the committed position that was never
	// emitted in this epoch. The producer invented a sequence id.
	ErrUnknownRecord = errors.New("progress: outcome for a record never emitted")

	// ErrUnknownEpoch: an outcome carries an epoch newer than the tracker's.
	ErrUnknownEpoch = errors.New("progress: outcome from a future epoch")

	// ErrResetBeyondCommitted: [CommitTracker.Reset] was asked to resume
	// above the committed position, which would skip unacknowledged records.
	ErrResetBeyondCommitted = errors.New("progress: reset position beyond committed")

	// ErrCommittedRegressed: [CheckpointPolicy.Committed] was given a
	// position lower than one it was given before.
	ErrCommittedRegressed = errors.New("progress: committed position moved backwards")

	// ErrSaveBeyondCommitted: a save result names a position beyond the
	// committed position, or another recording: a save this policy never
	// issued.
	ErrSaveBeyondCommitted = errors.New("progress: save beyond committed position")

	// ErrSaveFailed stands in for a nil error passed to
	// [CheckpointPolicy.SaveFailed], so that the failure stays visible.
	ErrSaveFailed = errors.New("progress: checkpoint save failed")

	// ErrInvalidConfig: a [CheckpointConfig] field is out of range.
	ErrInvalidConfig = errors.New("progress: invalid configuration")

	// ErrUnknownRecording: a [Schedule] call names a recording never added.
	ErrUnknownRecording = errors.New("progress: unknown recording")

	// ErrRecordingOrder: [Schedule.Add] was given a new recording whose id
	// is not above every id added before. Discovery pages in id order
	// (lesson 6), so this is a discovery bug.
	ErrRecordingOrder = errors.New("progress: recording added out of id order")

	// ErrRecordingConflict: a recording was re-added or stopped with facts
	// that contradict what is known (another start time, another stop time,
	// a stop before its start).
	ErrRecordingConflict = errors.New("progress: conflicting recording facts")

	// ErrNotRunnable: [Schedule.Completed] named a recording that was never
	// permitted to publish, or that is still live.
	ErrNotRunnable = errors.New("progress: recording cannot be completed")

	// ErrInvalidStreamName: a stream name is empty, too long, or contains a
	// character outside [A-Za-z0-9._-].
	ErrInvalidStreamName = errors.New("progress: invalid stream name")

	// ErrInvalidRecordingID: a recording id is negative.
	ErrInvalidRecordingID = errors.New("progress: invalid recording id")

	// ErrInvalidProducerName: a string is not a name made by [ProducerName].
	ErrInvalidProducerName = errors.New("progress: invalid producer name")
)
