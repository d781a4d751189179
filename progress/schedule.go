package progress

import (
	"fmt"
	"slices"
)

// Recording is what discovery knows about one recording of a stream. Times
// are Unix epoch milliseconds as the archive reports them (start and stop
// timestamps of the recording descriptor). They do not order recordings —
// the ids and [Recording.Live] do (see [Schedule]) — but a recording reported
// again with other times means the archive was replaced.
type Recording struct {
	ID      int64
	StartMs int64
	// StopMs is the stop time; ignored while Live.
	StopMs int64
	// Live: the recording has no stop yet (lesson 7).
	Live bool
	// Recorded is how far the archive had recorded it (negative: not known), and
	// ListedAtMs when discovery listed these facts, on a clock that never steps back:
	// together they tell whether a live recording still grows (see [Schedule]).
	Recorded   int64
	ListedAtMs int64
}

type scheduled struct {
	Recording
	permitted bool
	completed bool
	// firstListedMs is when the recording was first listed; listedMs, the last listing
	// that reported it; extendedAtMs, the listing that last found it live again after a
	// stop (valid if extended: listing times start at 0). readAtMs is the last listing
	// that read its recorded position (-1: none did). grewAfterMs: its recorded position
	// last moved after this time — the read before the one that saw it move, which may
	// be listings earlier when a read failed in between: only growth known to come after
	// a recording's first listing tells a concurrent publisher (holds). -1: never seen
	// growing.
	firstListedMs, listedMs, extendedAtMs, readAtMs, grewAfterMs int64
	extended                                                     bool
}

// Schedule decides which recordings of one stream may publish now
// (architecture §3.2). The rule: recording r may publish once every
// recording with a lower id is completed, or live and not holding r back.
//
// A live recording with a lower id than r was recording when r began: a
// concurrent publisher (lesson 11). It may never stop, so r cannot wait for
// it; the two publish concurrently, each in its own order. Every other
// recording before r has stopped, and r waits until it is completed: every
// record acknowledged and the final checkpoint persisted (lesson 5; the
// caller must call [Schedule.Completed] only then). Publisher restarts are
// therefore published strictly in recording order, also when the old
// recording stopped after the new one began — which is what a crashed
// publisher's recording does: the archive stops it only when it notices the
// publisher gone, seconds after its restart began a new recording, although
// every record of the old one came first. A stopped recording is finite, so
// waiting for it costs time, never data; recordings of concurrent publishers
// that have both stopped are published one after the other.
//
// While the archive has not yet stopped a crashed publisher's recording, it
// is live but no longer grows. So a live recording holds r back while it has
// not grown since r was first listed, for at most the restart grace (given to
// [NewSchedule]; zero holds nothing): if it stops meanwhile, r waits for it as
// for any stopped recording; if it grows, or the grace ends, it is a
// concurrent publisher (an idle one, at worst delayed by the grace) and r
// publishes beside it. Time is the listings' (Recording.ListedAtMs), and the
// grace ends at the first listing after it that reports the live recording
// still live: a listing is added one recording at a time, and the recordings
// with lower ids added first must not end the grace against what the listing
// before said of the one that holds r.
//
// A stopped recording extended (the archive's ExtendRecording: listed live
// again), before it completed or after ([Schedule.Reopen]), holds back every
// recording not yet permitted and first listed while it was stopped, or in the
// listing that found it extended (it was stopped at the listing before, and
// they had not begun), however long its extension lasts: they waited for it as
// for any stopped recording, and its records, old and appended, come before
// theirs. The schedule lives in memory: after a restart a recording not yet
// completed is listed live from the first, and taken for a concurrent
// publisher's (the caller refuses to reopen a completed one then unless it is
// the newest).
//
// The lowest-id recording not completed may always publish, so the schedule
// never deadlocks, and no recording is ever dropped or removed.
//
// A permission, once given, is never withdrawn. The caller must therefore
// report a recording's stop (in [Schedule.Add] or [Schedule.Stopped])
// before, or in the same discovery round as, any recording with a higher id;
// listing recordings from the archive in id order does this. Otherwise a
// later recording is permitted beside an earlier one taken for live: order
// is relaxed, nothing is lost. So it is when a publisher's restart outlasts
// the grace before the archive stops its old recording, or a recording still
// grows after a later one began: the earlier one's last records may then be
// published among the later one's first.
//
// A Schedule is not safe for concurrent use; one actor owns it.
type Schedule struct {
	recs    []scheduled // ascending ID
	graceMs int64
}

// NewSchedule returns an empty schedule with a restart grace of graceMs
// milliseconds (see [Schedule]; zero or less holds nothing back).
func NewSchedule(graceMs int64) *Schedule { return &Schedule{graceMs: max(graceMs, 0)} }

func (s *Schedule) find(id int64) (int, bool) {
	return slices.BinarySearchFunc(s.recs, id, func(e scheduled, id int64) int {
		switch {
		case e.ID < id:
			return -1
		case e.ID > id:
			return 1
		}
		return 0
	})
}

// Add registers a recording found by discovery. Adding a known id again is
// idempotent and may report its stop; new ids must be added in ascending
// order ([ErrRecordingOrder]). Another start time returns
// [ErrRecordingConflict]: the archive was replaced (lesson 14). A stopped
// recording turned live, or stopped at another time, was extended (the
// archive's ExtendRecording): a recording not yet completed is live again,
// or stopped anew, and keeps its permission; one completed returns
// [ErrRecordingConflict], as its end was final.
func (s *Schedule) Add(r Recording) error {
	if r.ID < 0 {
		return fmt.Errorf("add recording %d: %w", r.ID, ErrInvalidRecordingID)
	}
	if i, ok := s.find(r.ID); ok {
		e := &s.recs[i]
		listedBefore := e.listedMs
		e.listedMs = max(e.listedMs, r.ListedAtMs)
		switch {
		case e.StartMs != r.StartMs:
			return fmt.Errorf("add recording %d started at %d, known start %d: %w", r.ID, r.StartMs, e.StartMs, ErrRecordingConflict)
		case r.Live && !e.Live && e.completed:
			return fmt.Errorf("add recording %d as live, completed and stopped at %d: %w", r.ID, e.StopMs, ErrRecordingConflict)
		case r.Live:
			if !e.Live { // extended since the listing before: it grew after that one
				e.Live, e.StopMs, e.Recorded, e.grewAfterMs = true, 0, r.Recorded, listedBefore
				e.extended, e.extendedAtMs = true, r.ListedAtMs
				if r.Recorded >= 0 {
					e.readAtMs = r.ListedAtMs
				}
			}
			switch {
			case r.Recorded < 0: // not read at this listing: no news
			case e.Recorded < 0: // read for the first time: no growth seen yet
				e.Recorded, e.readAtMs = r.Recorded, r.ListedAtMs
			case r.Recorded > e.Recorded:
				// It grew after the last read, not necessarily after the last listing.
				e.Recorded, e.grewAfterMs, e.readAtMs = r.Recorded, e.readAtMs, r.ListedAtMs
			default:
				e.readAtMs = r.ListedAtMs
			}
			s.update()
			return nil
		}
		return s.Stopped(r.ID, r.StopMs)
	}
	if n := len(s.recs); n > 0 && r.ID < s.recs[n-1].ID {
		return fmt.Errorf("add recording %d after recording %d: %w", r.ID, s.recs[n-1].ID, ErrRecordingOrder)
	}
	readAt := int64(-1)
	if r.Recorded >= 0 {
		readAt = r.ListedAtMs
	}
	s.recs = append(s.recs, scheduled{Recording: r, firstListedMs: r.ListedAtMs, listedMs: r.ListedAtMs, readAtMs: readAt, grewAfterMs: -1})
	s.update()
	return nil
}

// Stopped records that a live recording stopped at stopMs. Reporting the
// same stop again is a no-op; another stop of a recording not yet completed
// is the stop of its extension.
func (s *Schedule) Stopped(id, stopMs int64) error {
	i, ok := s.find(id)
	if !ok {
		return fmt.Errorf("stop recording %d: %w", id, ErrUnknownRecording)
	}
	e := &s.recs[i]
	switch {
	case !e.Live && e.StopMs == stopMs:
		return nil
	case !e.Live && e.completed:
		return fmt.Errorf("stop completed recording %d at %d, known stop %d: %w", id, stopMs, e.StopMs, ErrRecordingConflict)
	}
	e.Live, e.StopMs = false, stopMs
	s.update()
	return nil
}

// Completed records that every record of the recording is acknowledged and
// its final checkpoint persisted. It is idempotent. It returns
// [ErrNotRunnable] if the recording was never permitted to publish or is
// still live: a live recording cannot have been read to its end.
func (s *Schedule) Completed(id int64) error {
	i, ok := s.find(id)
	if !ok {
		return fmt.Errorf("complete recording %d: %w", id, ErrUnknownRecording)
	}
	e := &s.recs[i]
	switch {
	case e.completed:
		return nil
	case !e.permitted:
		return fmt.Errorf("complete recording %d that was never permitted: %w", id, ErrNotRunnable)
	case e.Live:
		return fmt.Errorf("complete live recording %d: %w", id, ErrNotRunnable)
	}
	e.completed = true
	s.update()
	return nil
}

// Reopen takes back the completion of the newest recording, extended after it
// was completed (the archive's ExtendRecording): it may publish again, live
// again or stopped anew as r says (r.StartMs must be its start). Live again, it
// holds back the recordings not yet permitted and first listed up to this
// listing (r.ListedAtMs) until it completes, as any extended recording (see
// [Schedule]). It returns
// [ErrRecordingConflict] for another start, and [ErrNotRunnable] for a
// recording that is not the newest, which recordings after it may already
// have followed: publishing it again would put its extension among theirs.
// Reopening a recording not completed only updates it (as [Schedule.Add]).
func (s *Schedule) Reopen(r Recording) error { return s.reopen(r, false) }

// Recheck takes back the completion of a stopped recording whose end has not moved
// (stopped again at the same end at another time: extended by nothing, or truncated and
// recorded again up to there), so that it runs again to read its last record once more. It
// publishes nothing after it, so no order is at stake: any recording may be rechecked, not
// only the newest. Recheck of a live recording returns [ErrNotRunnable].
func (s *Schedule) Recheck(r Recording) error {
	if r.Live {
		return fmt.Errorf("recheck live recording %d: %w", r.ID, ErrNotRunnable)
	}
	return s.reopen(r, true)
}

func (s *Schedule) reopen(r Recording, anywhere bool) error {
	i, ok := s.find(r.ID)
	if !ok {
		return fmt.Errorf("reopen recording %d: %w", r.ID, ErrUnknownRecording)
	}
	e := &s.recs[i]
	switch {
	case e.StartMs != r.StartMs:
		return fmt.Errorf("reopen recording %d started at %d, known start %d: %w", r.ID, r.StartMs, e.StartMs, ErrRecordingConflict)
	case e.completed && i != len(s.recs)-1 && !anywhere:
		return fmt.Errorf("reopen recording %d with recording %d after it: %w", r.ID, s.recs[len(s.recs)-1].ID, ErrNotRunnable)
	}
	if !e.Live && r.Live {
		// Extended after it stopped (Recheck never takes a live recording): it holds
		// back the recordings not yet permitted, first listed up to now, as [Schedule.Add]
		// does.
		e.extended, e.extendedAtMs = true, r.ListedAtMs
	}
	if e.completed { // permitted before it completed
		e.completed, e.permitted = false, true
	}
	e.Live, e.StopMs, e.Recorded = r.Live, r.StopMs, r.Recorded
	if r.Live { // extended since the listing before
		e.grewAfterMs = e.listedMs
		e.readAtMs = -1
		if r.Recorded >= 0 {
			e.readAtMs = r.ListedAtMs
		}
	}
	e.listedMs = max(e.listedMs, r.ListedAtMs)
	s.update()
	return nil
}

// update grants every permission the rule allows.
func (s *Schedule) update() {
	open := s.firstOpen()
	for i := open; i < len(s.recs); i++ {
		r := &s.recs[i]
		if r.permitted || r.completed {
			continue
		}
		_, _, held := s.heldBy(open, i)
		r.permitted = !held
	}
}

// firstOpen is the index of the first recording not completed (len(s.recs): none). The
// completed ones before it hold nothing back: heldBy starts there, so that a stream with
// thousands of recordings completed (a restart's first listing completes every one its
// store holds, one by one) is not walked from its first for each recording at each change.
func (s *Schedule) firstOpen() int {
	for i := range s.recs {
		if !s.recs[i].completed {
			return i
		}
	}
	return len(s.recs)
}

// heldBy returns the first recording before s.recs[i], from s.recs[open] (firstOpen), that
// holds it back, and why.
func (s *Schedule) heldBy(open, i int) (int64, WaitReason, bool) {
	r := s.recs[i]
	for _, q := range s.recs[open:i] {
		switch {
		case q.completed:
		case !q.Live:
			return q.ID, WaitStopped, true
		case q.extended && q.extendedAtMs >= r.firstListedMs:
			return q.ID, WaitExtended, true
		case s.holds(q, r):
			return q.ID, WaitQuiet, true
		}
	}
	return 0, WaitDue, false
}

// holds reports whether the live recording q holds r back: it has not been seen growing
// after r was first listed (growth seen across a listing whose read of q failed may have
// come before: it does not count), and the grace since then was not over at the last
// listing that reported q (not the latest listing's time: in the middle of a listing, q
// may not be added yet, and what the listing says of it — stopped, perhaps — is still to
// come).
func (s *Schedule) holds(q, r scheduled) bool {
	return q.grewAfterMs < r.firstListedMs && max(q.listedMs, r.firstListedMs)-r.firstListedMs < s.graceMs
}

// Runnable returns, in ascending order, the ids of the recordings that may
// publish now and are not completed. The caller must publish each of them
// (and nothing else); a recording stays in the list until completed.
func (s *Schedule) Runnable() []int64 {
	var ids []int64
	for _, r := range s.recs {
		if r.permitted && !r.completed {
			ids = append(ids, r.ID)
		}
	}
	return ids
}

// Waiting returns, in ascending order, the ids of the recordings known but
// not yet permitted, for status: they are never dropped.
func (s *Schedule) Waiting() []int64 {
	var ids []int64
	for _, w := range s.Waits() {
		ids = append(ids, w.ID)
	}
	return ids
}

// WaitReason is why a recording may not publish yet: what the recording it waits for is.
type WaitReason int

const (
	// WaitDue: nothing holds the recording back any more; the next listing permits it.
	// (Every call that changes the schedule grants what it allows; one that failed may
	// still have moved the listings' time on.)
	WaitDue WaitReason = iota
	// WaitStopped: the earlier recording stopped and is not completed (lesson 5).
	WaitStopped
	// WaitExtended: the earlier recording was extended (listed live again) after it
	// stopped, and the waiting one was first listed while it was stopped, or in the
	// listing that found it extended: the extension comes first, however long it lasts.
	WaitExtended
	// WaitQuiet: the earlier recording is live and has not grown since the waiting one was
	// first listed, perhaps a restarted publisher's old recording the archive has not
	// stopped yet: held for the restart grace at most.
	WaitQuiet
)

func (w WaitReason) String() string {
	switch w {
	case WaitDue:
		return "due"
	case WaitStopped:
		return "stopped"
	case WaitExtended:
		return "extended"
	case WaitQuiet:
		return "quiet"
	}
	return fmt.Sprintf("WaitReason(%d)", int(w))
}

// Wait is a recording that may not publish yet, and the first earlier recording that
// holds it back.
type Wait struct {
	ID, Behind int64
	Why        WaitReason
}

// Waits returns, in ascending order of ID, the recordings known but not yet permitted,
// each with the first recording that holds it back, for status.
func (s *Schedule) Waits() []Wait {
	var ws []Wait
	open := s.firstOpen()
	for i := open; i < len(s.recs); i++ {
		r := s.recs[i]
		if r.permitted || r.completed {
			continue
		}
		behind, why, _ := s.heldBy(open, i) // held by nothing (WaitDue): a call that failed moved the time
		ws = append(ws, Wait{ID: r.ID, Behind: behind, Why: why})
	}
	return ws
}
