package progress

import (
	"fmt"
	"math"
)

// CheckpointConfig sets when a [CheckpointPolicy] persists. All durations
// are milliseconds.
type CheckpointConfig struct {
	// EveryRecords: persist once this many records were committed since
	// the last save was issued. Must be > 0.
	EveryRecords int
	// EveryMs: persist once the oldest unsaved commit is this old. Must be
	// > 0. This bounds how stale the store can be, even when no further
	// acknowledgement ever arrives (lesson 3).
	EveryMs int64
	// RetryMinMs is the wait after the first failed save; each further
	// consecutive failure doubles it. Must be > 0.
	RetryMinMs int64
	// RetryMaxMs caps the wait between attempts. Must be >= RetryMinMs.
	RetryMaxMs int64
}

// Validate returns an error wrapping [ErrInvalidConfig] if a field is out of
// range. Out-of-range values are rejected, never clamped (lesson 19).
func (c CheckpointConfig) Validate() error {
	switch {
	case c.EveryMs > maxPolicyMs || c.RetryMaxMs > maxPolicyMs:
		return fmt.Errorf("checkpoint EveryMs %d and RetryMaxMs %d must be at most a day (%d): %w", c.EveryMs, c.RetryMaxMs, maxPolicyMs, ErrInvalidConfig)
	case c.EveryRecords <= 0:
		return fmt.Errorf("checkpoint EveryRecords %d must be > 0: %w", c.EveryRecords, ErrInvalidConfig)
	case c.EveryMs <= 0:
		return fmt.Errorf("checkpoint EveryMs %d must be > 0: %w", c.EveryMs, ErrInvalidConfig)
	case c.RetryMinMs <= 0:
		return fmt.Errorf("checkpoint RetryMinMs %d must be > 0: %w", c.RetryMinMs, ErrInvalidConfig)
	case c.RetryMaxMs < c.RetryMinMs:
		return fmt.Errorf("checkpoint RetryMaxMs %d must be >= RetryMinMs %d: %w", c.RetryMaxMs, c.RetryMinMs, ErrInvalidConfig)
	}
	return nil
}

// maxPolicyMs bounds the policy's intervals, which it adds to the clock: a day.
const maxPolicyMs = 24 * 60 * 60 * 1000

// Save is one write the caller must carry out: persist (RecordingID,
// Position, Completed). Position is never beyond the committed position
// given to the policy, so the store never gets ahead of Pulsar (lesson 1).
type Save struct {
	RecordingID int64
	Position    int64
	// Completed marks the recording's final checkpoint: every record is
	// acknowledged and Position is its stop position (lesson 5).
	Completed bool
	// Seed marks a save of the starting position with nothing acknowledged
	// yet ([CheckpointPolicy.Seed]).
	Seed bool
}

// CheckpointFailure is the most recent failed save. It stays visible until a
// newer failure supersedes it, also after a retry succeeds (lesson 24).
type CheckpointFailure struct {
	Err  error
	AtMs int64 // on the caller's clock (see the package's doc)
	// Consecutive counts failures since the last successful save; 0 once a
	// save succeeded.
	Consecutive int
	// RetryAtMs is the earliest time of the next attempt; meaningful while
	// Consecutive > 0.
	RetryAtMs int64
}

// CheckpointPolicy decides when the committed position of one recording must
// be persisted. Saves are batched: one is issued once [CheckpointConfig]
// EveryRecords records were committed or the oldest unsaved commit is
// EveryMs old, whichever comes first, and at once after [CheckpointPolicy.Complete]
// (rotation) or [CheckpointPolicy.Shutdown]. At most one save is in flight.
// A failed save is retried with exponential backoff capped at RetryMaxMs,
// whatever forced it; the store is never hammered (lesson 3).
//
// A CheckpointPolicy is not safe for concurrent use; one actor owns it.
type CheckpointPolicy struct {
	cfg         CheckpointConfig
	recordingID int64

	start              int64 // the position the policy began at
	committed          int64
	completed          bool // committed is the final position
	persisted          int64
	persistedCompleted bool
	forced             bool
	seeding            bool // the starting position is to be saved although nothing was committed

	unsavedRecords int
	dirtySinceMs   int64 // valid if dirty
	dirty          bool  // a commit not covered by a save issued or done

	inFlight      bool
	flight        Save
	flightVoid    bool  // the save in flight is of the seed before a SeedAgain
	flightRecords int   // unsavedRecords at issue, restored on failure
	flightSinceMs int64 // dirtySinceMs at issue, restored on failure

	failure CheckpointFailure
}

// NewCheckpointPolicy returns a policy for recordingID whose store holds
// persisted (the position read at start, or the resume position when the
// store had none). Committed starts at persisted.
func NewCheckpointPolicy(recordingID, persisted int64, cfg CheckpointConfig) (*CheckpointPolicy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if recordingID < 0 {
		return nil, fmt.Errorf("new checkpoint policy: recording %d: %w", recordingID, ErrInvalidRecordingID)
	}
	if persisted < 0 {
		return nil, fmt.Errorf("new checkpoint policy: position %d: %w", persisted, ErrInvalidPosition)
	}
	return &CheckpointPolicy{cfg: cfg, recordingID: recordingID, start: persisted, committed: persisted, persisted: persisted}, nil
}

// Committed tells the policy that the tracker's committed position is now
// position, after records newly committed records (see [AckResult]). It
// must be called with the tracker's [CommitTracker.Committed], never with a
// position that was not acknowledged. A lower position than before returns
// [ErrCommittedRegressed], a commit beyond the final position after
// [CheckpointPolicy.Complete] (a completed recording published on from its end
// has a policy of its own) [ErrRecordOrder]. Nothing is saved until [CheckpointPolicy.Tick].
func (p *CheckpointPolicy) Committed(position int64, records int, nowMs int64) error {
	if position < p.committed {
		return fmt.Errorf("recording %d committed %d after %d: %w", p.recordingID, position, p.committed, ErrCommittedRegressed)
	}
	if records < 0 {
		return fmt.Errorf("recording %d committed %d records: %w", p.recordingID, records, ErrInvalidPosition)
	}
	if position == p.committed && records == 0 {
		return nil
	}
	if p.completed {
		return fmt.Errorf("recording %d committed %d after it completed at %d: %w", p.recordingID, position, p.committed, ErrRecordOrder)
	}
	p.committed = position
	p.unsavedRecords += records
	if !p.dirty {
		p.dirty = true
		p.dirtySinceMs = nowMs
	}
	return nil
}

// Complete marks final as the recording's final position (its stop
// position, once [CommitTracker.Completed] holds) and forces a save with
// Completed set at the next [CheckpointPolicy.Tick]. final must not be below
// the committed position; it becomes the committed position.
func (p *CheckpointPolicy) Complete(final int64, nowMs int64) error {
	if err := p.Committed(final, 0, nowMs); err != nil {
		return err
	}
	if !p.completed {
		p.completed = true
		p.forced = true
		if !p.dirty {
			p.dirty = true
			p.dirtySinceMs = nowMs
		}
	}
	return nil
}

// Shutdown forces any unsaved commit to be saved at the next
// [CheckpointPolicy.Tick], and every later commit as soon as no save is in
// flight. Backoff still applies: a caller with a deadline waits at most until
// [CheckpointPolicy.NextDeadline] for the next attempt.
func (p *CheckpointPolicy) Shutdown() { p.forced = true }

// Seed has the starting position saved at the next [CheckpointPolicy.Tick] although
// nothing was committed yet, for a recording the store holds nothing of: the store then
// knows every recording ferry took on from the start, before its first acknowledgement.
// A failed seed is retried with backoff like any save.
func (p *CheckpointPolicy) Seed(nowMs int64) {
	p.seeding = true
	if !p.dirty {
		p.dirty = true
		p.dirtySinceMs = nowMs
	}
}

// Start returns the position the policy began at.
func (p *CheckpointPolicy) Start() int64 { return p.start }

// SeedAgain has the seed saved again, at from, for a recording nothing of which was
// committed since the start: its start moved (the archive's start moved back, segments
// attached again, and the replay begins there), or what the seed says of it changed. A
// save in flight counts for nothing when it returns (it is of the seed before). It returns
// [ErrCommittedRegressed] if anything was committed since the start, or the recording
// completed, and [ErrInvalidPosition] for a negative from.
func (p *CheckpointPolicy) SeedAgain(from, nowMs int64) error {
	switch {
	case from < 0:
		return fmt.Errorf("recording %d: seed again at %d: %w", p.recordingID, from, ErrInvalidPosition)
	case p.committed != p.start || p.completed:
		return fmt.Errorf("recording %d: seed again at %d, committed %d since the start %d (completed %t): %w", p.recordingID, from, p.committed, p.start, p.completed, ErrCommittedRegressed)
	}
	p.start, p.committed, p.persisted, p.persistedCompleted = from, from, from, false
	p.flightVoid = p.inFlight
	p.Seed(nowMs)
	return nil
}

// Seeding reports whether a [CheckpointPolicy.Seed] is not saved yet: until then the store
// does not know the recording was taken on.
func (p *CheckpointPolicy) Seeding() bool { return p.seeding }

// TickSeed issues the save of an unsaved seed now, also while a failure's backoff lasts, for
// the caller to write in the same transaction as a save that goes out anyway: a later
// recording's checkpoint must not reach the store before an earlier recording's seed. It
// issues nothing while a save is in flight or if no seed is pending.
func (p *CheckpointPolicy) TickSeed() (Save, bool) {
	if !p.seeding || p.inFlight || !p.dirty {
		return Save{}, false
	}
	p.flight = Save{RecordingID: p.recordingID, Position: p.committed, Completed: p.completed, Seed: p.committed == p.start}
	p.inFlight = true
	p.flightRecords, p.flightSinceMs = p.unsavedRecords, p.dirtySinceMs
	p.unsavedRecords, p.dirty = 0, false
	return p.flight, true
}

// Tick is the only place a save is issued. It returns the save the caller
// must carry out now, if any, and marks it in flight; the caller must report
// the result with [CheckpointPolicy.Saved] or [CheckpointPolicy.SaveFailed].
// Tick must be called periodically even when nothing new was acknowledged,
// so that the last commits reach the store (lesson 3). It issues nothing
// while a save is in flight or before a retry is due.
func (p *CheckpointPolicy) Tick(nowMs int64) (Save, bool) {
	if p.inFlight || !p.dirty || nowMs < p.retryAtMs() {
		return Save{}, false
	}
	due := p.forced || p.seeding || p.failure.Consecutive > 0 ||
		p.unsavedRecords >= p.cfg.EveryRecords ||
		nowMs-p.dirtySinceMs >= p.cfg.EveryMs
	if !due {
		return Save{}, false
	}
	p.flight = Save{RecordingID: p.recordingID, Position: p.committed, Completed: p.completed, Seed: p.seeding && p.committed == p.start}
	p.inFlight = true
	p.flightRecords, p.flightSinceMs = p.unsavedRecords, p.dirtySinceMs
	p.unsavedRecords, p.dirty = 0, false
	return p.flight, true
}

func (p *CheckpointPolicy) retryAtMs() int64 {
	if p.failure.Consecutive == 0 {
		return math.MinInt64
	}
	return p.failure.RetryAtMs
}

// NextDeadline returns the earliest time at which [CheckpointPolicy.Tick]
// may issue a save, for the caller's timer (a time at or before now means
// at once); ok is false when no save is
// pending or one is in flight (its result comes first).
func (p *CheckpointPolicy) NextDeadline() (atMs int64, ok bool) {
	if p.inFlight || !p.dirty {
		return 0, false
	}
	at := p.dirtySinceMs + p.cfg.EveryMs
	if p.forced || p.seeding || p.failure.Consecutive > 0 || p.unsavedRecords >= p.cfg.EveryRecords {
		at = p.dirtySinceMs // due already
	}
	return max(at, p.retryAtMs()), true
}

// Void reports whether s is the save in flight that a [CheckpointPolicy.SeedAgain] made
// count for nothing: persisted, it is of the seed before, which the store holds until the
// new one is saved.
func (p *CheckpointPolicy) Void(s Save) bool { return p.inFlight && p.flightVoid && s == p.flight }

// Saved reports that s was persisted. The persisted mark only moves forward:
// a slower, older save completing late never lowers it. It returns
// [ErrSaveBeyondCommitted] for a save this policy cannot have issued.
func (p *CheckpointPolicy) Saved(s Save, nowMs int64) error {
	if p.inFlight && p.flightVoid && s == p.flight {
		p.inFlight, p.flightVoid = false, false
		p.failure.Consecutive = 0
		return nil // of the seed before a SeedAgain: the new one is saved next
	}
	if s.RecordingID != p.recordingID || s.Position > p.committed {
		return fmt.Errorf("saved recording %d position %d, committed %d of recording %d: %w",
			s.RecordingID, s.Position, p.committed, p.recordingID, ErrSaveBeyondCommitted)
	}
	if s.Position > p.persisted || s.Position == p.persisted && s.Completed {
		p.persisted = s.Position
		p.persistedCompleted = p.persistedCompleted || s.Completed
	}
	if p.inFlight && s == p.flight {
		p.inFlight = false
		p.failure.Consecutive = 0
		p.seeding = false
	}
	return nil
}

// SaveFailed reports that s was not persisted because of err. The failure
// is kept visible ([CheckpointPolicy.Failure]); if s is the save in flight,
// its commits become unsaved again and the next attempt waits
// RetryMinMs·2^(n-1), capped at RetryMaxMs, after the n-th consecutive
// failure. A failure of an older save only updates the visible failure.
func (p *CheckpointPolicy) SaveFailed(s Save, err error, nowMs int64) {
	if err == nil {
		err = ErrSaveFailed
	}
	p.failure.Err = fmt.Errorf("save recording %d position %d: %w", s.RecordingID, s.Position, err)
	p.failure.AtMs = nowMs
	if !p.inFlight || s != p.flight {
		return
	}
	p.inFlight, p.flightVoid = false, false
	p.unsavedRecords += p.flightRecords
	if !p.dirty || p.flightSinceMs < p.dirtySinceMs {
		p.dirtySinceMs = p.flightSinceMs
	}
	p.dirty = true
	p.failure.Consecutive++
	p.failure.RetryAtMs = nowMs + p.backoff(p.failure.Consecutive)
}

func (p *CheckpointPolicy) backoff(n int) int64 {
	d := p.cfg.RetryMinMs
	for i := 1; i < n && d < p.cfg.RetryMaxMs; i++ { // RetryMaxMs is at most a day: no overflow
		d *= 2
	}
	return min(d, p.cfg.RetryMaxMs)
}

// Persisted returns the highest position known to be persisted, and whether
// that is the recording's final checkpoint.
func (p *CheckpointPolicy) Persisted() (position int64, completed bool) {
	return p.persisted, p.persistedCompleted
}

// FinalPersisted reports whether the final checkpoint of a completed
// recording is persisted: the condition, with [CommitTracker.Completed],
// for starting the next recording (lesson 5).
func (p *CheckpointPolicy) FinalPersisted() bool {
	return p.completed && p.persistedCompleted && p.persisted == p.committed
}

// Unsaved reports whether anything the policy was given — a commit, the recording's
// completion, a seed — is not known to be persisted yet: a save of it is pending, waiting
// out a failure's backoff, or in flight.
func (p *CheckpointPolicy) Unsaved() bool { return p.dirty || p.inFlight }

// InFlight returns the save in flight, if any.
func (p *CheckpointPolicy) InFlight() (Save, bool) { return p.flight, p.inFlight }

// Failure returns the most recent failed save; Err is nil if none ever
// failed.
func (p *CheckpointPolicy) Failure() CheckpointFailure { return p.failure }
