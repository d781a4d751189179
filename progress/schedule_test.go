package progress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func live(id, start int64) Recording          { return Recording{ID: id, StartMs: start, Live: true} }
func stopped(id, start, stop int64) Recording { return Recording{ID: id, StartMs: start, StopMs: stop} }

func mustAdd(tb testing.TB, s *Schedule, rs ...Recording) {
	tb.Helper()
	for _, r := range rs {
		if err := s.Add(r); err != nil {
			tb.Fatalf("Add(%+v): %v", r, err)
		}
	}
}

func wantIDs(tb testing.TB, what string, got []int64, want ...int64) {
	tb.Helper()
	if !slices.Equal(got, want) {
		tb.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func TestLesson05_NextRecordingWaitsUntilThePreviousIsCompleted(t *testing.T) {
	s := NewSchedule(0)
	mustAdd(t, s, stopped(3, 0, 100), live(8, 200))
	wantIDs(t, "Runnable", s.Runnable(), 3)
	wantIDs(t, "Waiting", s.Waiting(), 8)
	if err := s.Completed(8); !errors.Is(err, ErrNotRunnable) {
		t.Fatalf("Completed(8) before it was permitted = %v, want ErrNotRunnable", err)
	}
	// A refused Completed changes nothing. (That the caller calls Completed only once the
	// final checkpoint is persisted is the stream's, tested by
	// TestLesson05_TheSuccessorWaitsForThePredecessorsFinalCheckpoint.)
	wantIDs(t, "Runnable", s.Runnable(), 3)
	wantIDs(t, "Waiting", s.Waiting(), 8)
	if err := s.Completed(3); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "Runnable", s.Runnable(), 8)
	wantIDs(t, "Waiting", s.Waiting())
	if err := s.Completed(8); !errors.Is(err, ErrNotRunnable) {
		t.Fatalf("Completed(live 8) = %v, want ErrNotRunnable", err)
	}
	if err := s.Completed(3); err != nil {
		t.Fatalf("Completed is not idempotent: %v", err)
	}
}

// TestLesson05_PublisherRestartedBeforeItsRecordingStoppedIsPublishedInOrder: a publisher
// that crashed and restarted at once begins a new recording before the archive stops the
// old one (it does when it notices the publisher gone). The two overlap in time, but every
// record of the old one came first: the new one waits for it like any successor.
func TestLesson05_PublisherRestartedBeforeItsRecordingStoppedIsPublishedInOrder(t *testing.T) {
	s := NewSchedule(0)
	mustAdd(t, s, stopped(1, 0, 30), live(2, 20))
	wantIDs(t, "Runnable", s.Runnable(), 1)
	wantIDs(t, "Waiting", s.Waiting(), 2)
	if err := s.Completed(1); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "Runnable", s.Runnable(), 2)
}

// TestLesson05_ALiveRecordingThatStoppedGrowingHoldsALaterOneForTheGrace: while ferry
// runs, a crashed publisher's recording is still live, but no longer grows, when its
// restart's recording is first listed; the archive stops it seconds later. A live recording
// that has not grown since a later one was first listed holds that one back for the grace:
// if it stops meanwhile, the later one waits for it to complete; if it grows, or the grace
// ends, it is a concurrent publisher and the later one publishes beside it.
func TestLesson05_ALiveRecordingThatStoppedGrowingHoldsALaterOneForTheGrace(t *testing.T) {
	const grace = 20_000
	listed := func(id, recorded, at int64) Recording {
		return Recording{ID: id, StartMs: id, Live: true, Recorded: recorded, ListedAtMs: at}
	}
	stoppedAt := func(id, recorded, at int64) Recording {
		return Recording{ID: id, StartMs: id, StopMs: at, Recorded: recorded, ListedAtMs: at}
	}
	t.Run("it stops: a restart", func(t *testing.T) {
		s := NewSchedule(grace)
		mustAdd(t, s, listed(1, 100, 0))
		mustAdd(t, s, listed(1, 100, 1_000), listed(2, 10, 1_000))
		wantIDs(t, "Runnable", s.Runnable(), 1)
		mustAdd(t, s, listed(1, 100, 1_250), listed(2, 20, 1_250))
		wantIDs(t, "Runnable", s.Runnable(), 1)
		mustAdd(t, s, stoppedAt(1, 100, 11_000), listed(2, 500, 11_000))
		wantIDs(t, "Runnable", s.Runnable(), 1)
		if err := s.Completed(1); err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "Runnable", s.Runnable(), 2)
	})
	t.Run("it grows: a concurrent publisher", func(t *testing.T) {
		s := NewSchedule(grace)
		mustAdd(t, s, listed(1, 100, 0), listed(2, 10, 0)) // both at ferry's first listing
		wantIDs(t, "Runnable", s.Runnable(), 1)
		mustAdd(t, s, listed(1, 200, 250), listed(2, 20, 250))
		wantIDs(t, "Runnable", s.Runnable(), 1, 2)
	})
	t.Run("the grace ends: an idle concurrent publisher", func(t *testing.T) {
		s := NewSchedule(grace)
		mustAdd(t, s, listed(1, 100, 0), listed(2, 10, 1_000))
		mustAdd(t, s, listed(1, 100, 20_999), listed(2, 10, 20_999))
		wantIDs(t, "Runnable", s.Runnable(), 1)
		mustAdd(t, s, listed(1, 100, 21_000), listed(2, 10, 21_000))
		wantIDs(t, "Runnable", s.Runnable(), 1, 2)
		// A permission is never withdrawn: 1 stopping now changes nothing for 2.
		mustAdd(t, s, stoppedAt(1, 100, 22_000))
		wantIDs(t, "Runnable", s.Runnable(), 1, 2)
	})
	t.Run("it stops in the listing that ends the grace, after a concurrent publisher", func(t *testing.T) {
		// 0 is a concurrent publisher, adding each listing first: it must not end the
		// grace against what the listing before said of 1, which this one says stopped.
		s := NewSchedule(grace)
		mustAdd(t, s, listed(0, 100, 0), listed(1, 100, 0))
		mustAdd(t, s, listed(0, 200, 1_000), listed(1, 100, 1_000), listed(2, 10, 1_000))
		wantIDs(t, "Runnable", s.Runnable(), 0, 1)
		mustAdd(t, s, listed(0, 300, 21_000), stoppedAt(1, 100, 21_000), listed(2, 20, 21_000))
		wantIDs(t, "Runnable", s.Runnable(), 0, 1)
		if err := s.Completed(1); err != nil {
			t.Fatal(err)
		}
		wantIDs(t, "Runnable", s.Runnable(), 0, 2)
	})
	t.Run("a position not read is no growth", func(t *testing.T) {
		s := NewSchedule(grace)
		mustAdd(t, s, listed(1, -1, 0), listed(2, 10, 1_000))
		mustAdd(t, s, listed(1, 100, 1_250), listed(2, 20, 1_250)) // read for the first time
		mustAdd(t, s, listed(1, -1, 1_500), listed(2, 30, 1_500))
		wantIDs(t, "Runnable", s.Runnable(), 1)
		mustAdd(t, s, listed(1, 150, 1_750))
		wantIDs(t, "Runnable", s.Runnable(), 1, 2)
	})
	t.Run("growth seen across a failed read may be from before", func(t *testing.T) {
		// 1 was read at 0; its read failed at the listing where 2 first appeared; grown at
		// the next, it may have grown before 2 began (a crashed publisher's tail): no
		// concurrent publisher is told so, and 2 waits. Growth between two reads after
		// 2's first listing tells one.
		s := NewSchedule(grace)
		mustAdd(t, s, listed(1, 100, 0))
		mustAdd(t, s, listed(1, -1, 1_000), listed(2, 10, 1_000))
		mustAdd(t, s, listed(1, 150, 1_250), listed(2, 20, 1_250))
		wantIDs(t, "Runnable", s.Runnable(), 1)
		mustAdd(t, s, listed(1, 200, 1_500), listed(2, 30, 1_500))
		wantIDs(t, "Runnable", s.Runnable(), 1, 2)
	})
	t.Run("no grace", func(t *testing.T) {
		s := NewSchedule(0)
		mustAdd(t, s, listed(1, 100, 0), listed(2, 10, 1_000))
		wantIDs(t, "Runnable", s.Runnable(), 1, 2)
	})
}

// TestLesson11_ConcurrentPublishersAreNeverWaitedFor: a recording live when a later one
// began is a concurrent publisher, which may never stop: the later one publishes beside it.
// Once stopped, a recording is finite and is published first.
func TestLesson11_ConcurrentPublishersAreNeverWaitedFor(t *testing.T) {
	tests := []struct {
		name     string
		recs     []Recording
		runnable []int64
		complete int64 // then completed
		after    []int64
	}{
		{"two live", []Recording{live(1, 0), live(2, 5)}, []int64{1, 2}, -1, nil},
		{"live, then one that stopped", []Recording{live(1, 0), stopped(2, 5, 10)}, []int64{1, 2}, 2, []int64{1}},
		{"both stopped: one after the other", []Recording{stopped(1, 0, 10), stopped(2, 5, 20)}, []int64{1}, 1, []int64{2}},
		// P1 runs throughout; P2 crashed (2) and restarted (3).
		{"a restart beside a concurrent publisher", []Recording{live(1, 0), stopped(2, 5, 30), live(3, 20)}, []int64{1, 2}, 2, []int64{1, 3}},
		{"every live one, none behind a stopped one", []Recording{stopped(1, 0, 50), live(2, 10), live(3, 20)}, []int64{1}, 1, []int64{2, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSchedule(0)
			mustAdd(t, s, tt.recs...)
			wantIDs(t, "Runnable", s.Runnable(), tt.runnable...)
			if tt.complete < 0 {
				return
			}
			if err := s.Completed(tt.complete); err != nil {
				t.Fatal(err)
			}
			wantIDs(t, "Runnable after completing", s.Runnable(), tt.after...)
		})
	}
}

func TestSchedule_StopOfALiveRecordingIsReported(t *testing.T) {
	s := NewSchedule(0)
	mustAdd(t, s, live(1, 0))
	// Discovery reports the stop of 1 with the new recording 2 that started
	// after it: 2 must wait for 1.
	mustAdd(t, s, stopped(1, 0, 50), live(2, 60))
	wantIDs(t, "Runnable", s.Runnable(), 1)
	wantIDs(t, "Waiting", s.Waiting(), 2)
	// A permission is never withdrawn.
	s = NewSchedule(0)
	mustAdd(t, s, live(1, 0), live(2, 60))
	wantIDs(t, "Runnable", s.Runnable(), 1, 2)
	if err := s.Stopped(1, 50); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "Runnable", s.Runnable(), 1, 2)
}

func TestSchedule_ContractViolationsAreErrors(t *testing.T) {
	tests := []struct {
		name string
		run  func(*Schedule) error
		want error
	}{
		{"negative id", func(s *Schedule) error { return s.Add(live(-1, 0)) }, ErrInvalidRecordingID},
		{"ids out of order", func(s *Schedule) error {
			mustAdd(t, s, live(5, 0))
			return s.Add(live(4, 0))
		}, ErrRecordingOrder},
		{"other start time", func(s *Schedule) error {
			mustAdd(t, s, live(5, 0))
			return s.Add(live(5, 1))
		}, ErrRecordingConflict},
		{"completed, then live", func(s *Schedule) error {
			mustAdd(t, s, stopped(5, 0, 9))
			if err := s.Completed(5); err != nil {
				t.Fatal(err)
			}
			return s.Add(live(5, 0))
		}, ErrRecordingConflict},
		{"completed, then another stop time", func(s *Schedule) error {
			mustAdd(t, s, stopped(5, 0, 9))
			if err := s.Completed(5); err != nil {
				t.Fatal(err)
			}
			return s.Stopped(5, 10)
		}, ErrRecordingConflict},
		{"extended before completed: live again, stopped anew", func(s *Schedule) error {
			mustAdd(t, s, stopped(5, 0, 9))
			if err := s.Add(live(5, 0)); err != nil {
				return err
			}
			return s.Stopped(5, 12)
		}, nil},
		{"unknown stop", func(s *Schedule) error { return s.Stopped(1, 9) }, ErrUnknownRecording},
		{"unknown complete", func(s *Schedule) error { return s.Completed(1) }, ErrUnknownRecording},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(NewSchedule(0)); !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
		})
	}
	s := NewSchedule(0)
	mustAdd(t, s, stopped(5, 0, 9), stopped(5, 0, 9), live(6, 20), live(6, 20))
	if err := s.Stopped(5, 9); err != nil {
		t.Fatalf("repeated facts must be idempotent: %v", err)
	}
}

// TestSchedule_TimesDoNotOrder: the archive's clock may step back (NTP) during a recording or
// between two: a stop before the start is taken as reported, and the order is the ids'.
func TestSchedule_TimesDoNotOrder(t *testing.T) {
	s := NewSchedule(0)
	mustAdd(t, s, stopped(1, 100, 90), live(2, 50))
	wantIDs(t, "Runnable", s.Runnable(), 1)
	mustAdd(t, s, live(3, 40))
	if err := s.Stopped(3, 30); err != nil {
		t.Fatalf("a stop before the start: %v", err)
	}
	if err := s.Completed(1); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "Runnable", s.Runnable(), 2, 3)
}

// TestLesson11_NoRecordingIsEverDropped: for random sets of recordings, live
// ones stopping at random, completing whatever is runnable in random order
// completes every recording, never violates the order rule, and always
// leaves the lowest unfinished recording runnable.
func TestLesson11_NoRecordingIsEverDropped(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			s := NewSchedule(0)
			n := 1 + r.IntN(12)
			recs := make([]Recording, n)
			start := int64(0)
			for i := range recs {
				start += int64(r.IntN(20))
				recs[i] = Recording{ID: int64(i * (1 + r.IntN(3))), StartMs: start, Live: r.IntN(3) == 0}
				if i > 0 && recs[i].ID <= recs[i-1].ID {
					recs[i].ID = recs[i-1].ID + 1
				}
				if !recs[i].Live {
					recs[i].StopMs = start + int64(r.IntN(40))
				}
			}
			mustAdd(t, s, recs...)
			done, permitted := map[int64]bool{}, map[int64]bool{}
			for steps := 0; len(done) < n; steps++ {
				if steps > 10*n+10 {
					t.Fatalf("not converging: done %v of %+v", done, recs)
				}
				run := s.Runnable()
				if len(run) == 0 {
					t.Fatalf("nothing runnable, done %v of %+v", done, recs)
				}
				// The order rule, checked when a permission is given: every earlier
				// recording is completed or live then.
				for _, id := range run {
					if permitted[id] {
						continue
					}
					permitted[id] = true
					for _, q := range recs {
						if q.ID < id && !done[q.ID] && !q.Live {
							t.Fatalf("%d runnable before the stopped %d completed", id, q.ID)
						}
					}
				}
				// Every waiting recording is held by an earlier one not completed.
				for _, w := range s.Waits() {
					if w.Why == WaitDue || w.Behind >= w.ID || done[w.Behind] {
						t.Fatalf("%+v: not held back by an earlier recording not completed (done %v)", w, done)
					}
				}
				id := run[r.IntN(len(run))]
				i := slices.IndexFunc(recs, func(x Recording) bool { return x.ID == id })
				if recs[i].Live {
					// Stop it no earlier than any later recording started, so
					// the stop is consistent with what was permitted.
					recs[i].Live, recs[i].StopMs = false, recs[n-1].StartMs+1
					if err := s.Stopped(id, recs[i].StopMs); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := s.Completed(id); err != nil {
					t.Fatal(err)
				}
				done[id] = true
			}
			wantIDs(t, "Runnable", s.Runnable())
			wantIDs(t, "Waiting", s.Waiting())
		})
	}
}

// Reopen takes back the completion of the newest recording, extended after it was
// completed: it may publish again (and complete again once stopped), live or stopped as the
// extension is. An older recording, another start or an unknown id is refused.
func TestReopenTheNewestCompletedRecording(t *testing.T) {
	s := NewSchedule(0)
	mustAdd(t, s, stopped(1, 10, 11), stopped(2, 20, 21))
	for _, id := range []int64{1, 2} {
		if err := s.Completed(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Runnable(); len(got) != 0 {
		t.Fatalf("Runnable() = %v with both completed", got)
	}
	if err := s.Reopen(live(1, 10)); !errors.Is(err, ErrNotRunnable) {
		t.Errorf("reopening recording 1 with recording 2 after it: %v, want ErrNotRunnable", err)
	}
	if err := s.Reopen(live(2, 99)); !errors.Is(err, ErrRecordingConflict) {
		t.Errorf("reopening recording 2 with another start: %v, want ErrRecordingConflict", err)
	}
	if err := s.Reopen(live(3, 30)); !errors.Is(err, ErrUnknownRecording) {
		t.Errorf("reopening an unknown recording: %v, want ErrUnknownRecording", err)
	}
	if err := s.Reopen(live(2, 20)); err != nil {
		t.Fatal(err)
	}
	if got := s.Runnable(); !slices.Equal(got, []int64{2}) {
		t.Fatalf("Runnable() = %v after reopening recording 2, want [2]", got)
	}
	if err := s.Completed(2); !errors.Is(err, ErrNotRunnable) {
		t.Errorf("completing recording 2 while its extension is live: %v, want ErrNotRunnable", err)
	}
	mustAdd(t, s, stopped(2, 20, 25))
	if err := s.Completed(2); err != nil {
		t.Fatalf("completing recording 2 once its extension stopped: %v", err)
	}
	mustAdd(t, s, live(4, 40))
	if got := s.Runnable(); !slices.Equal(got, []int64{4}) {
		t.Fatalf("Runnable() = %v, want [4]", got)
	}
}

// Recheck takes back the completion of any stopped recording, not only the newest (it reads
// its last record again and publishes nothing after it); a recording after it that runs
// goes on.
func TestRecheckAnyStoppedRecording(t *testing.T) {
	s := NewSchedule(0)
	mustAdd(t, s, stopped(1, 10, 11), stopped(2, 20, 21), stopped(3, 30, 31))
	for _, id := range []int64{1, 2} {
		if err := s.Completed(id); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.Runnable(); !slices.Equal(got, []int64{3}) {
		t.Fatalf("Runnable() = %v, want [3]", got)
	}
	if err := s.Recheck(live(1, 10)); !errors.Is(err, ErrNotRunnable) {
		t.Errorf("rechecking a live recording: %v, want ErrNotRunnable", err)
	}
	if err := s.Recheck(stopped(1, 99, 12)); !errors.Is(err, ErrRecordingConflict) {
		t.Errorf("rechecking with another start: %v, want ErrRecordingConflict", err)
	}
	if err := s.Recheck(stopped(1, 10, 12)); err != nil {
		t.Fatalf("rechecking recording 1 with recordings after it: %v", err)
	}
	if got := s.Runnable(); !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("Runnable() = %v after rechecking recording 1, want [1 3]", got)
	}
	mustAdd(t, s, stopped(1, 10, 12)) // listed again as rechecked: no conflict
	if err := s.Completed(1); err != nil {
		t.Fatalf("completing recording 1 again: %v", err)
	}
	mustAdd(t, s, stopped(4, 40, 41))
	if got := s.Runnable(); !slices.Equal(got, []int64{3}) {
		t.Fatalf("Runnable() = %v, want [3]: 4 waits for 3", got)
	}
}

// A stopped recording extended before it completed (listed live again) keeps holding back
// the recordings first listed while it was stopped, while it grows and until it completes;
// one first listed after the extension began is concurrent with it, as with any live
// recording.
func TestAnExtendedRecordingHoldsBackThoseListedWhileItWasStopped(t *testing.T) {
	at := func(r Recording, ms, recorded int64) Recording { r.ListedAtMs, r.Recorded = ms, recorded; return r }
	s := NewSchedule(0)
	mustAdd(t, s, at(stopped(1, 10, 11), 10, 100), at(stopped(2, 20, 21), 20, 200))
	wantIDs(t, "Runnable", s.Runnable(), 1)
	mustAdd(t, s, at(live(1, 10), 30, 100))
	wantIDs(t, "Runnable after recording 1 is extended", s.Runnable(), 1)
	mustAdd(t, s, at(live(1, 10), 40, 150))
	wantIDs(t, "Runnable while recording 1's extension grows", s.Runnable(), 1)
	mustAdd(t, s, at(stopped(1, 10, 45), 50, 150))
	wantIDs(t, "Runnable after the extension stopped", s.Runnable(), 1)
	if err := s.Completed(1); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "Runnable after recording 1 completed", s.Runnable(), 2)

	s = NewSchedule(0)
	mustAdd(t, s, at(stopped(1, 10, 11), 10, 100), at(live(1, 10), 30, 100), at(live(3, 35), 40, 10))
	wantIDs(t, "Runnable with a recording first listed after the extension began", s.Runnable(), 1, 3)

	// Extended, and the next recording begun, between the same two listings: it waits.
	s = NewSchedule(0)
	mustAdd(t, s, at(stopped(1, 10, 11), 10, 100), at(live(1, 10), 30, 100), at(live(2, 25), 30, 10), at(live(1, 10), 40, 150))
	wantIDs(t, "Runnable with a recording first listed in the listing that found the extension", s.Runnable(), 1)

	// The same at listing time 0, where the stream supervisor's listing clock starts: the
	// extension holds recording 2 back for as long as it lasts, not for the grace only.
	s = NewSchedule(100)
	mustAdd(t, s, at(stopped(1, 5, 9), 0, 64), at(live(2, 10), 0, 0), at(live(1, 5), 0, 64), at(live(2, 10), 0, 0),
		at(live(1, 5), 500, 64), at(live(2, 10), 500, 128))
	wantIDs(t, "Runnable with recording 1 extended at listing time 0", s.Runnable(), 1)
}

// TestWaitsSayWhatHoldsEachRecordingBack: for status, each waiting recording comes with the
// first earlier recording that holds it back, and why: stopped and not completed, extended
// while it waited, or live and quiet within the restart grace.
func TestWaitsSayWhatHoldsEachRecordingBack(t *testing.T) {
	at := func(r Recording, ms, recorded int64) Recording { r.ListedAtMs, r.Recorded = ms, recorded; return r }
	wantWaits := func(t *testing.T, s *Schedule, want ...Wait) {
		t.Helper()
		if got := s.Waits(); !slices.Equal(got, want) {
			t.Fatalf("Waits = %+v, want %+v", got, want)
		}
	}
	t.Run("stopped", func(t *testing.T) {
		s := NewSchedule(0)
		mustAdd(t, s, stopped(1, 0, 10), stopped(2, 20, 30), live(3, 40))
		wantWaits(t, s, Wait{ID: 2, Behind: 1, Why: WaitStopped}, Wait{ID: 3, Behind: 1, Why: WaitStopped})
		if err := s.Completed(1); err != nil {
			t.Fatal(err)
		}
		wantWaits(t, s, Wait{ID: 3, Behind: 2, Why: WaitStopped})
	})
	t.Run("extended", func(t *testing.T) {
		s := NewSchedule(0)
		mustAdd(t, s, at(stopped(1, 10, 11), 10, 100), at(stopped(2, 20, 21), 20, 200), at(live(1, 10), 30, 100))
		wantWaits(t, s, Wait{ID: 2, Behind: 1, Why: WaitExtended})
	})
	t.Run("quiet", func(t *testing.T) {
		s := NewSchedule(20_000)
		mustAdd(t, s, at(live(1, 10), 0, 100), at(live(2, 20), 1_000, 10))
		wantWaits(t, s, Wait{ID: 2, Behind: 1, Why: WaitQuiet})
		mustAdd(t, s, at(live(1, 10), 21_000, 100))
		wantWaits(t, s)
		wantIDs(t, "Runnable after the grace", s.Runnable(), 1, 2)
	})
	t.Run("due after a failed call", func(t *testing.T) {
		s := NewSchedule(20_000)
		mustAdd(t, s, at(live(1, 10), 0, 100), at(live(2, 20), 1_000, 10))
		if err := s.Add(at(live(1, 11), 21_000, 100)); !errors.Is(err, ErrRecordingConflict) {
			t.Fatalf("Add of recording 1 with another start = %v, want ErrRecordingConflict", err)
		}
		wantWaits(t, s, Wait{ID: 2, Why: WaitDue})
	})
}

// TestAReopenedRecordingHoldsBackThoseListedWithItsExtension: the newest recording,
// completed, is listed extended, live, with a recording that began while it was stopped:
// that one waits for the extension, which comes first. One first listed at a later listing
// began while the extension was recorded: a concurrent publisher's, published beside it. So
// for a recording reopened live before it completed.
func TestAReopenedRecordingHoldsBackThoseListedWithItsExtension(t *testing.T) {
	at := func(r Recording, ms, recorded int64) Recording { r.ListedAtMs, r.Recorded = ms, recorded; return r }
	s := NewSchedule(0)
	mustAdd(t, s, at(stopped(1, 10, 11), 10, 100))
	if err := s.Completed(1); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(at(live(1, 10), 20, 150)); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, at(live(2, 15), 20, 10))
	wantIDs(t, "Runnable with recording 2 listed with 1's extension", s.Runnable(), 1)
	if w := s.Waits(); len(w) != 1 || w[0] != (Wait{ID: 2, Behind: 1, Why: WaitExtended}) {
		t.Fatalf("Waits = %+v, want 2 behind 1, extended", w)
	}
	mustAdd(t, s, at(live(1, 10), 30, 200), at(live(2, 15), 30, 20), at(live(3, 25), 30, 10))
	wantIDs(t, "Runnable with recording 3 first listed after the extension", s.Runnable(), 1, 3)
	mustAdd(t, s, at(stopped(1, 10, 35), 40, 200))
	if err := s.Completed(1); err != nil {
		t.Fatal(err)
	}
	wantIDs(t, "Runnable after the extension completed", s.Runnable(), 2, 3)

	// Not completed yet: recording 1's replay ended at its first stop, a listing showed it
	// stopped further on (with 2 first listed), and the next live again. 2 waits for it.
	s = NewSchedule(0)
	mustAdd(t, s, at(stopped(1, 10, 11), 10, 100))
	mustAdd(t, s, at(stopped(1, 10, 12), 20, 150), at(live(2, 15), 20, 10))
	if err := s.Reopen(at(live(1, 10), 30, 150)); err != nil {
		t.Fatal(err)
	}
	mustAdd(t, s, at(live(2, 15), 30, 20))
	wantIDs(t, "Runnable with recording 1 live again before it completed", s.Runnable(), 1)
}

// TestLesson11_ExtendedRecordingsNeverWedgeTheSchedule: random runs of listings in which
// recordings begin, stop, complete, are extended before they complete (listed live again)
// and after (Reopen of the newest, Recheck of any): a permission is never withdrawn, the
// lowest recording not completed may always publish, every waiting recording is held by an
// earlier one not completed, and once every recording has stopped for good all complete.
func TestLesson11_ExtendedRecordingsNeverWedgeTheSchedule(t *testing.T) {
	for seed := range uint64(300) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 14))
			s := NewSchedule(int64(r.IntN(3)) * 10)
			now := int64(0)
			recs := map[int64]*Recording{}
			var ids []int64
			completed, permitted := map[int64]bool{}, map[int64]bool{}
			listing := func(rec Recording) Recording { rec.ListedAtMs, rec.Recorded = now, now; return rec }
			check := func(step int) {
				t.Helper()
				run := s.Runnable()
				for id := range permitted {
					if !completed[id] && !slices.Contains(run, id) {
						t.Fatalf("step %d: recording %d was permitted and is not runnable now (runnable %v)", step, id, run)
					}
				}
				for _, id := range run {
					permitted[id] = true
				}
				for _, id := range ids {
					if !completed[id] {
						if !slices.Contains(run, id) {
							t.Fatalf("step %d: the lowest recording not completed, %d, may not publish (runnable %v, waits %+v)", step, id, run, s.Waits())
						}
						break
					}
				}
				for _, w := range s.Waits() {
					if w.Why == WaitDue || w.Behind >= w.ID || completed[w.Behind] {
						t.Fatalf("step %d: %+v is not held by an earlier recording not completed", step, w)
					}
				}
			}
			for step := range 60 {
				now += int64(1 + r.IntN(10))
				switch op := r.IntN(6); {
				case op == 0 || len(ids) == 0: // a new recording
					id := int64(len(ids) + 1)
					rec := Recording{ID: id, StartMs: id, Live: true}
					if r.IntN(2) == 0 {
						rec.Live, rec.StopMs = false, now
					}
					recs[id], ids = &rec, append(ids, id)
					mustAdd(t, s, listing(rec))
				default:
					id := ids[r.IntN(len(ids))]
					rec := recs[id]
					switch {
					case rec.Live && op <= 2: // it grows, or stops
						if op == 2 {
							rec.Live, rec.StopMs = false, now
						}
						mustAdd(t, s, listing(*rec))
					case !rec.Live && !completed[id] && op <= 3 && slices.Contains(s.Runnable(), id):
						if err := s.Completed(id); err != nil {
							t.Fatalf("step %d: %v", step, err)
						}
						completed[id] = true
					case !rec.Live && !completed[id]: // extended before it completed
						rec.Live = true
						mustAdd(t, s, listing(*rec))
					case completed[id] && id == ids[len(ids)-1] && op == 4: // the newest, extended
						rec.Live, completed[id] = true, false
						if err := s.Reopen(listing(*rec)); err != nil {
							t.Fatalf("step %d: %v", step, err)
						}
					case completed[id] && op == 5: // stopped again at its end: read again
						rec.StopMs, completed[id] = now, false
						if err := s.Recheck(listing(*rec)); err != nil {
							t.Fatalf("step %d: %v", step, err)
						}
					}
				}
				check(step)
			}
			// Every recording stops for good; what may publish is completed until all are.
			for _, id := range ids {
				if rec := recs[id]; rec.Live {
					now++
					rec.Live, rec.StopMs = false, now
					mustAdd(t, s, listing(*rec))
				}
			}
			for rounds := 0; len(completed) < len(ids) || slices.ContainsFunc(ids, func(id int64) bool { return !completed[id] }); rounds++ {
				if rounds > len(ids)+1 {
					t.Fatalf("not converging: runnable %v, waits %+v", s.Runnable(), s.Waits())
				}
				for _, id := range s.Runnable() {
					if err := s.Completed(id); err != nil {
						t.Fatal(err)
					}
					completed[id] = true
				}
				check(-1)
			}
			wantIDs(t, "Waiting", s.Waiting())
		})
	}
}

// BenchmarkScheduleCompletingStoredRecordings is a restart's first listing over a stream
// with n completed recordings still in the archive: each is added, then completed from its
// stored checkpoint, one by one (actors, markStoredCompleted).
func BenchmarkScheduleCompletingStoredRecordings(b *testing.B) {
	for _, n := range []int{1_000, 4_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for range b.N {
				s := NewSchedule(0)
				for id := range int64(n) {
					if err := s.Add(Recording{ID: id, StartMs: id + 1, StopMs: id + 2, Recorded: -1, ListedAtMs: 1}); err != nil {
						b.Fatal(err)
					}
				}
				for id := range int64(n) {
					if err := s.Completed(id); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
