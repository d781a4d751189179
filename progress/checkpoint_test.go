package progress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

var testCheckpointConfig = CheckpointConfig{EveryRecords: 3, EveryMs: 1000, RetryMinMs: 100, RetryMaxMs: 1000}

func newPolicy(tb testing.TB, persisted int64) *CheckpointPolicy {
	tb.Helper()
	p, err := NewCheckpointPolicy(7, persisted, testCheckpointConfig)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

var errDiskFull = errors.New("disk full")

// runPolicy runs a script against p (see runTracker for the syntax).
// Commands:
//
//	commit POS RECORDS NOW   -> ok | err:...
//	complete POS NOW         -> ok | err:...
//	shutdown
//	seed NOW
//	again POS NOW            -> ok | err:...   (SeedAgain)
//	tick NOW                 -> save POS [final] [seed] | none
//	tickseed                 -> the same, for TickSeed
//	saved POS [final] [seed] -> ok | err:...   (the save (7, POS, final, seed))
//	failed POS NOW [final] [seed] -> the store failed with errDiskFull
//	state -> persisted=P final=B done=B failures=N deadline=D|none
func runPolicy(t *testing.T, p *CheckpointPolicy, script string) {
	t.Helper()
	for n, line := range strings.Split(strings.TrimSpace(script), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, want, hasWant := strings.Cut(line, "=>")
		f := strings.Fields(cmd)
		final, seed := slices.Contains(f[1:], "final"), slices.Contains(f[1:], "seed")
		var got string
		switch f[0] {
		case "commit":
			got = okOr(p.Committed(atoi(t, f[1]), int(atoi(t, f[2])), atoi(t, f[3])))
		case "complete":
			got = okOr(p.Complete(atoi(t, f[1]), atoi(t, f[2])))
		case "shutdown":
			p.Shutdown()
			got = "ok"
		case "seed":
			p.Seed(atoi(t, f[1]))
			got = "ok"
		case "again":
			got = okOr(p.SeedAgain(atoi(t, f[1]), atoi(t, f[2])))
		case "tick", "tickseed":
			var s Save
			var ok bool
			if f[0] == "tick" {
				s, ok = p.Tick(atoi(t, f[1]))
			} else {
				s, ok = p.TickSeed()
			}
			got = "none"
			if ok {
				got = fmt.Sprintf("save %d", s.Position)
				if s.Completed {
					got += " final"
				}
				if s.Seed {
					got += " seed"
				}
				if s.RecordingID != 7 {
					t.Fatalf("line %d: save for recording %d", n+1, s.RecordingID)
				}
			}
		case "saved":
			got = okOr(p.Saved(Save{RecordingID: 7, Position: atoi(t, f[1]), Completed: final, Seed: seed}, 0))
		case "failed":
			p.SaveFailed(Save{RecordingID: 7, Position: atoi(t, f[1]), Completed: final, Seed: seed}, errDiskFull, atoi(t, f[2]))
			got = "ok"
		case "state":
			pos, fin := p.Persisted()
			fl := p.Failure()
			got = fmt.Sprintf("persisted=%d final=%t done=%t failures=%d deadline=", pos, fin, p.FinalPersisted(), fl.Consecutive)
			if at, ok := p.NextDeadline(); ok {
				got += fmt.Sprint(at)
			} else {
				got += "none"
			}
		default:
			t.Fatalf("line %d: unknown command %q", n+1, f[0])
		}
		if hasWant && got != strings.TrimSpace(want) {
			t.Fatalf("line %d %q:\n got  %s\n want %s", n+1, line, got, strings.TrimSpace(want))
		}
		if !hasWant && strings.HasPrefix(got, "err:") {
			// A step the script takes for granted failed: what follows tests something else.
			t.Fatalf("line %d %q: %s (a line without => must succeed)", n+1, line, got)
		}
	}
}

func TestLesson03_TickWithoutNewAcksPersistsAcksThatLandedAfterTheLastSave(t *testing.T) {
	runPolicy(t, newPolicy(t, 0), `
		commit 100 1 5000
		tick 5000 => none
		tick 5999 => none
		state => persisted=0 final=false done=false failures=0 deadline=6000
		# no acknowledgement arrives any more; time alone must persist it
		tick 6000 => save 100
		tick 6001 => none
		saved 100 => ok
		state => persisted=100 final=false done=false failures=0 deadline=none
		tick 99999 => none
	`)
}

func TestLesson03_SavesAreBatchedByCountOrTimeWhicheverFirst(t *testing.T) {
	tests := []struct{ name, script string }{
		{"count first", `
			commit 10 1 0
			commit 20 1 1
			tick 2 => none
			commit 30 1 3
			tick 3 => save 30`},
		{"time first", `
			commit 10 1 0
			commit 20 1 999
			tick 999 => none
			tick 1000 => save 20`},
		{"one commit many records", `
			commit 50 5 0
			tick 0 => save 50`},
		{"commits during a save start a new window", `
			commit 30 3 0
			tick 0 => save 30
			commit 40 1 10
			commit 50 1 20
			commit 60 1 30
			# the save in flight comes first: no second concurrent write
			tick 30 => none
			saved 30 => ok
			tick 31 => save 60`},
		{"time window starts at the oldest unsaved commit", `
			commit 30 3 0
			tick 0 => save 30
			commit 40 1 500
			saved 30 => ok
			tick 1499 => none
			tick 1500 => save 40`},
		{"nothing committed nothing saved", `
			commit 0 0 0
			tick 1000000 => none
			state => persisted=0 final=false done=false failures=0 deadline=none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runPolicy(t, newPolicy(t, 0), tt.script) })
	}
}

func TestLesson03_FailingStoreIsRetriedWithCappedBackoffNotHammered(t *testing.T) {
	p := newPolicy(t, 0)
	runPolicy(t, p, `
		commit 30 3 0
		tick 0 => save 30
		failed 30 0
		state => persisted=0 final=false done=false failures=1 deadline=100
		tick 99 => none
		tick 100 => save 30
		failed 30 100
		# forcing does not bypass the backoff
		shutdown
		tick 299 => none
		tick 300 => save 30
		failed 30 300
		tick 700 => save 30
		failed 30 700
		tick 1500 => save 30
		failed 30 1500
		state => persisted=0 final=false done=false failures=5 deadline=2500
		commit 40 1 1600
		tick 2499 => none
		tick 2500 => save 40
		saved 40 => ok
		state => persisted=40 final=false done=false failures=0 deadline=none
	`)
	// The failure stays visible after the retry succeeded (lesson 24).
	if f := p.Failure(); !errors.Is(f.Err, errDiskFull) || f.AtMs != 1500 {
		t.Fatalf("Failure() = %+v, want the last disk-full failure at 1500", f)
	}
}

func TestCheckpointPolicy_BackoffDoublesUpToTheCap(t *testing.T) {
	cfg := CheckpointConfig{EveryRecords: 1, EveryMs: 1, RetryMinMs: 3, RetryMaxMs: 20}
	p, err := NewCheckpointPolicy(1, 0, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Committed(10, 1, 0); err != nil {
		t.Fatal(err)
	}
	now := int64(0)
	for i, want := range []int64{3, 6, 12, 20, 20, 20} {
		s, ok := p.Tick(now)
		if !ok {
			t.Fatalf("attempt %d at %d: no save issued", i, now)
		}
		p.SaveFailed(s, nil, now)
		if got := p.Failure().RetryAtMs - now; got != want {
			t.Fatalf("attempt %d: wait %d, want %d", i, got, want)
		}
		if _, ok := p.Tick(p.Failure().RetryAtMs - 1); ok {
			t.Fatalf("attempt %d: retried before the backoff elapsed", i)
		}
		now = p.Failure().RetryAtMs
	}
	if !errors.Is(p.Failure().Err, ErrSaveFailed) {
		t.Fatalf("nil store error not kept visible: %v", p.Failure().Err)
	}
	// However many failures, the backoff stays at its cap.
	if d := p.backoff(1 << 20); d != 20 {
		t.Fatalf("backoff(2^20) = %d, want cap 20", d)
	}
}

func TestCheckpointPolicy_LateOlderSaveNeverMovesPersistedBackwards(t *testing.T) {
	runPolicy(t, newPolicy(t, 0), `
		commit 30 3 0
		tick 0 => save 30
		# the checkpointer gave up on the save of 30 and reported a failure
		failed 30 0
		commit 60 3 50
		tick 100 => save 60
		saved 60 => ok
		# the write of 30 completes after all
		saved 30 => ok
		state => persisted=60 final=false done=false failures=0 deadline=none
	`)
}

func TestLesson01_SaveIsNeverBeyondCommitted(t *testing.T) {
	runPolicy(t, newPolicy(t, 100), `
		commit 90 1 0 => err:committed position moved backwards
		commit 99 1 0 => err:committed position moved backwards
		commit 100 0 0
		saved 101 => err:save beyond committed position
		commit 200 1 0
		saved 201 => err:save beyond committed position
	`)
	// Property: whatever the interleaving, every issued save is at or below
	// the committed position at the time it is issued, and persisted never
	// decreases.
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 3))
		p := newPolicy(t, 0)
		var committed, now, lastPersisted int64
		var issued []Save
		for range 300 {
			now += int64(r.IntN(400))
			switch r.IntN(4) {
			case 0:
				k := r.IntN(3)
				committed += int64(10 * k)
				if err := p.Committed(committed, k, now); err != nil {
					t.Fatal(err)
				}
			case 1:
				if s, ok := p.Tick(now); ok {
					if s.Position > committed {
						t.Fatalf("seed %d: save %d beyond committed %d", seed, s.Position, committed)
					}
					issued = append(issued, s)
				}
			case 2, 3:
				if len(issued) == 0 {
					continue
				}
				i := r.IntN(len(issued)) // results in any order, repeated
				if r.IntN(2) == 0 {
					if err := p.Saved(issued[i], now); err != nil {
						t.Fatal(err)
					}
				} else {
					p.SaveFailed(issued[i], errDiskFull, now)
				}
			}
			pos, _ := p.Persisted()
			if pos < lastPersisted || pos > committed {
				t.Fatalf("seed %d: persisted %d after %d, committed %d", seed, pos, lastPersisted, committed)
			}
			lastPersisted = pos
		}
	}
}

func TestLesson05_RotationForcesTheFinalSave(t *testing.T) {
	runPolicy(t, newPolicy(t, 0), `
		commit 10 1 0
		# the recording completed: no batching, save now, marked final
		complete 20 0
		tick 0 => save 20 final
		state => persisted=0 final=false done=false failures=0 deadline=none
		failed 20 0 final
		state => persisted=0 final=false done=false failures=1 deadline=100
		tick 100 => save 20 final
		saved 20 final => ok
		state => persisted=20 final=true done=true failures=0 deadline=none
	`)
	// Completing at an already-persisted position still writes the final
	// flag: the next recording waits for it.
	runPolicy(t, newPolicy(t, 50), `
		complete 50 0
		state => persisted=50 final=false done=false failures=0 deadline=0
		tick 0 => save 50 final
		saved 50 final => ok
		state => persisted=50 final=true done=true failures=0 deadline=none
		complete 40 0 => err:committed position moved backwards
	`)
}

func TestCheckpointPolicy_ShutdownForcesUnsavedCommits(t *testing.T) {
	runPolicy(t, newPolicy(t, 0), `
		shutdown
		tick 0 => none
		commit 10 1 0
		tick 0 => save 10
		commit 20 1 1
		tick 1 => none
		saved 10 => ok
		tick 1 => save 20
	`)
}

// A seeded policy saves its starting position at once, though nothing was committed; a
// failed seed is retried with backoff; once saved, nothing more until a commit.
func TestCheckpointPolicy_SeedSavesTheStartingPositionOnce(t *testing.T) {
	runPolicy(t, newPolicy(t, 64), `
		tick 0 => none
		tickseed => none
		seed 5
		tick 5 => save 64 seed
		failed 64 6 seed
		tick 50 => none
		tick 106 => save 64 seed
		saved 64 seed => ok
		state => persisted=64 final=false done=false failures=0 deadline=none
		tick 2000 => none
		commit 128 1 2000
		tick 2000 => none
		tick 3000 => save 128
	`)
}

// A seed waiting out a failure's backoff is issued by TickSeed at once (to go in the same
// transaction as another recording's save); a seed with commits after it is a plain save.
func TestCheckpointPolicy_TickSeedIgnoresTheBackoff(t *testing.T) {
	runPolicy(t, newPolicy(t, 64), `
		seed 0
		tick 0 => save 64 seed
		failed 64 0 seed
		tick 10 => none
		tickseed => save 64 seed
		tickseed => none
		saved 64 seed => ok
		tickseed => none
	`)
	runPolicy(t, newPolicy(t, 64), `
		seed 0
		commit 128 1 0
		tick 0 => save 128
		saved 128 => ok
		tickseed => none
	`)
}

// A recording's start moved back before anything of it was committed (segments attached
// again): the seed is saved again at the earlier start, and the seed save of the later
// start still in flight counts for nothing — neither as persisted (a drain must wait for
// the new seed) nor as a reason to refuse the commits below it that follow.
func TestCheckpointPolicy_SeedAgainAtAnEarlierStart(t *testing.T) {
	runPolicy(t, newPolicy(t, 1024), `
		seed 0
		tick 0 => save 1024 seed
		again 0 5 => ok
		state => persisted=0 final=false done=false failures=0 deadline=none
		tickseed => none
		saved 1024 seed => ok
		state => persisted=0 final=false done=false failures=0 deadline=5
		tick 5 => save 0 seed
		commit 512 1 6
		saved 0 seed => ok
		state => persisted=0 final=false done=false failures=0 deadline=1006
		tick 1006 => save 512
		saved 512 => ok
		state => persisted=512 final=false done=false failures=0 deadline=none
	`)
	// Its failure retries the seed at the earlier start, after the backoff.
	runPolicy(t, newPolicy(t, 1024), `
		seed 0
		tick 0 => save 1024 seed
		again 64 0 => ok
		failed 1024 0 seed
		tick 1 => none
		tick 100 => save 64 seed
		saved 64 seed => ok
		state => persisted=64 final=false done=false failures=0 deadline=none
	`)
	// Saved already, the seed is saved again; twice in a row, the last one counts.
	runPolicy(t, newPolicy(t, 1024), `
		seed 0
		tick 0 => save 1024 seed
		saved 1024 seed => ok
		again 0 1 => ok
		tick 1 => save 0 seed
		again 1024 2 => ok
		again 512 2 => ok
		saved 0 seed => ok
		tickseed => save 512 seed
		saved 512 seed => ok
		state => persisted=512 final=false done=false failures=0 deadline=none
	`)
	// At the same position (what the seed says of the recording changed): saved again.
	runPolicy(t, newPolicy(t, 1024), `
		seed 0
		tick 0 => save 1024 seed
		again 1024 0 => ok
		saved 1024 seed => ok
		tick 0 => save 1024 seed
		saved 1024 seed => ok
		tick 0 => none
	`)
}

// Only a seed nothing was committed since is saved again.
func TestCheckpointPolicy_SeedAgainRefusesWhatWasCommitted(t *testing.T) {
	runPolicy(t, newPolicy(t, 1024), `
		again -1 0 => err:invalid position
		commit 2048 1 0
		again 0 0 => err:committed position moved backwards
		again 2048 0 => err:committed position moved backwards
	`)
	runPolicy(t, newPolicy(t, 1024), `
		complete 1024 0
		again 1024 0 => err:committed position moved backwards
	`)
}

func TestCheckpointConfig_OutOfRangeValuesAreRejected(t *testing.T) {
	ok := testCheckpointConfig
	tests := []struct {
		name   string
		mutate func(*CheckpointConfig)
	}{
		{"zero records", func(c *CheckpointConfig) { c.EveryRecords = 0 }},
		{"negative records", func(c *CheckpointConfig) { c.EveryRecords = -1 }},
		{"zero interval", func(c *CheckpointConfig) { c.EveryMs = 0 }},
		{"zero retry", func(c *CheckpointConfig) { c.RetryMinMs = 0 }},
		{"cap below min", func(c *CheckpointConfig) { c.RetryMaxMs = c.RetryMinMs - 1 }},
		// Added to the clock, a larger one would wrap negative: a retry or flush every tick.
		{"interval over a day", func(c *CheckpointConfig) { c.EveryMs = maxPolicyMs + 1 }},
		{"cap over a day", func(c *CheckpointConfig) { c.RetryMaxMs = maxPolicyMs + 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			if _, err := NewCheckpointPolicy(1, 0, c); !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("NewCheckpointPolicy(%+v) = %v, want ErrInvalidConfig", c, err)
			}
		})
	}
	if _, err := NewCheckpointPolicy(-1, 0, ok); !errors.Is(err, ErrInvalidRecordingID) {
		t.Fatalf("negative recording: %v", err)
	}
	if _, err := NewCheckpointPolicy(1, -1, ok); !errors.Is(err, ErrInvalidPosition) {
		t.Fatalf("negative position: %v", err)
	}
}

// At most one save is in flight: the failure of an older save, reported late, leaves the
// save in flight where it is, and nothing else is issued until it is answered.
func TestCheckpointPolicy_AnOlderSavesFailureKeepsTheOneInFlight(t *testing.T) {
	runPolicy(t, newPolicy(t, 0), `
		commit 30 3 0
		tick 0 => save 30
		# the checkpointer gave up on the save of 30 and reported a failure
		failed 30 0
		commit 60 3 50
		tick 100 => save 60
		# the write of 30 reports its failure again, late: 60 is still in flight
		failed 30 120
		commit 90 3 130
		tick 130 => none
		tick 5000 => none
		saved 60 => ok
		tick 5000 => save 90
	`)
}

// A completed recording's final checkpoint is its last: a commit beyond the final position
// afterwards is refused (a recording published on from its end gets a policy of its own),
// and no completed checkpoint is ever written beyond its final position.
func TestCheckpointPolicy_NothingIsCommittedAfterTheFinalPosition(t *testing.T) {
	runPolicy(t, newPolicy(t, 0), `
		complete 100 0
		tick 0 => save 100 final
		saved 100 final => ok
		commit 100 0 1
		commit 200 1 1 => err:record out of order
		complete 200 1 => err:record out of order
		tick 2 => none
		state => persisted=100 final=true done=true failures=0 deadline=none
	`)
}
