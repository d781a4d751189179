package progress

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// sentinels lets scripts name the error they expect.
var sentinels = []error{
	ErrInvalidPosition, ErrRecordOrder, ErrStalled, ErrFinished, ErrUnknownRecord,
	ErrUnknownEpoch, ErrResetBeyondCommitted, ErrCommittedRegressed, ErrSaveBeyondCommitted,
	ErrInvalidConfig, ErrUnknownRecording, ErrRecordingOrder, ErrRecordingConflict,
	ErrNotRunnable, ErrInvalidStreamName, ErrInvalidRecordingID, ErrInvalidProducerName,
	ErrFinishBelowCommitted, ErrRecordChanged,
}

func errName(err error) string {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return "err:" + strings.TrimPrefix(s.Error(), "progress: ")
		}
	}
	return "err:unexpected:" + err.Error()
}

func atoi(tb testing.TB, s string) int64 {
	tb.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		tb.Fatalf("bad number %q: %v", s, err)
	}
	return n
}

// runTracker runs a script against tr. Each line is "command args" optionally
// followed by "=> want"; when want is present the command's printed result
// must equal it. Commands:
//
//	emit START END [SUM]      -> ok | err:...     (SUM: the payload's checksum, END if absent)
//	ack EPOCH END             -> OUTCOME committed=C new=N | err:...   (Pulsar stored it)
//	dup EPOCH END             -> OUTCOME committed=C new=N | err:...   (answered as a duplicate)
//	hazard EPOCH              -> hazard=FAILED-STORED | hazard=none
//	fail EPOCH END            -> OUTCOME redeliver=B | err:...
//	reset FROM                -> epoch=E | err:...
//	finish STOP               -> ok | err:...
//	state                     -> committed=C pending=N/B redeliver=B completed=B
//	last                      -> last=START-END/SUM | last=none
func runTracker(t *testing.T, tr *CommitTracker, script string) {
	t.Helper()
	for n, line := range strings.Split(strings.TrimSpace(script), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, want, hasWant := strings.Cut(line, "=>")
		f := strings.Fields(cmd)
		var got string
		switch f[0] {
		case "emit":
			sum := atoi(t, f[2])
			if len(f) > 3 {
				sum = atoi(t, f[3])
			}
			got = okOr(tr.Emit(atoi(t, f[1]), atoi(t, f[2]), uint32(sum)))
		case "ack", "dup":
			ack := tr.Ack
			if f[0] == "dup" {
				ack = tr.AckDuplicate
			}
			r, err := ack(Epoch(atoi(t, f[1])), atoi(t, f[2]))
			got = fmt.Sprintf("%s committed=%d new=%d", r.Outcome, r.Committed, r.NewlyCommitted)
			if err != nil {
				got = errName(err)
			}
			if err == nil && r.Committed != tr.Committed() {
				t.Fatalf("line %d %q: result committed %d, tracker %d", n+1, line, r.Committed, tr.Committed())
			}
		case "fail":
			o, err := tr.Fail(Epoch(atoi(t, f[1])), atoi(t, f[2]))
			_, redeliver := tr.Redelivery()
			got = fmt.Sprintf("%s redeliver=%t", o, redeliver)
			if err != nil {
				got = errName(err)
			}
		case "reset":
			e, err := tr.Reset(atoi(t, f[1]))
			got = fmt.Sprintf("epoch=%d", e)
			if err != nil {
				got = errName(err)
			}
		case "finish":
			got = okOr(tr.Finish(atoi(t, f[1])))
		case "state":
			p := tr.Pending()
			_, redeliver := tr.Redelivery()
			got = fmt.Sprintf("committed=%d pending=%d/%d redeliver=%t completed=%t",
				tr.Committed(), p.Records, p.Bytes, redeliver, tr.Completed())
		case "hazard":
			got = "hazard=none"
			if failed, stored, ok := tr.Hazard(Epoch(atoi(t, f[1]))); ok {
				got = fmt.Sprintf("hazard=%d-%d", failed, stored)
			}
		case "earlier":
			got = fmt.Sprintf("earlier=%d", tr.EarlierUnanswered())
		case "last":
			got = "last=none"
			if m, ok := tr.LastCommitted(); ok {
				got = fmt.Sprintf("last=%d-%d/%d", m.Start, m.End, m.Checksum)
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

func okOr(err error) string {
	if err != nil {
		return errName(err)
	}
	return "ok"
}

func newTracker(tb testing.TB, resume int64) *CommitTracker {
	tb.Helper()
	tr, err := NewCommitTracker(7, resume)
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

func TestLesson01_HandingToProducerIsNotACommit(t *testing.T) {
	runTracker(t, newTracker(t, 0), `
		emit 0 100
		emit 100 200
		emit 200 300
		state => committed=0 pending=3/300 redeliver=false completed=false
		finish 300
		state => committed=0 pending=3/300 redeliver=false completed=false
		ack 0 100 => advanced committed=100 new=1
		state => committed=100 pending=2/200 redeliver=false completed=false
	`)
}

func TestLesson02_OutOfOrderAcksAdvanceOnlyTheContiguousPrefix(t *testing.T) {
	tests := []struct {
		name, script string
	}{
		{"reverse order", `
			emit 0 10
			emit 10 20
			emit 20 30
			ack 0 30 => buffered committed=0 new=0
			ack 0 20 => buffered committed=0 new=0
			ack 0 10 => advanced committed=30 new=3
			state => committed=30 pending=0/0 redeliver=false completed=false`},
		{"gap holds the prefix", `
			emit 0 10
			emit 10 20
			emit 20 30
			emit 30 40
			ack 0 10 => advanced committed=10 new=1
			ack 0 30 => buffered committed=10 new=0
			ack 0 40 => buffered committed=10 new=0
			state => committed=10 pending=3/30 redeliver=false completed=false
			ack 0 20 => advanced committed=40 new=3`},
		{"padding between records", `
			emit 0 96
			emit 128 224
			ack 0 224 => buffered committed=0 new=0
			ack 0 96 => advanced committed=224 new=2`},
		{"never-arriving ack stalls forever", `
			emit 0 10
			emit 10 20
			ack 0 20 => buffered committed=0 new=0
			state => committed=0 pending=2/20 redeliver=false completed=false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runTracker(t, newTracker(t, 0), tt.script) })
	}
}

func TestLesson02_DuplicateAndStaleAcksAreNoOps(t *testing.T) {
	runTracker(t, newTracker(t, 0), `
		emit 0 10
		emit 10 20
		emit 20 30
		ack 0 20 => buffered committed=0 new=0
		ack 0 20 => duplicate committed=0 new=0
		ack 0 10 => advanced committed=20 new=2
		ack 0 10 => duplicate committed=20 new=0
		ack 0 20 => duplicate committed=20 new=0
		# restart of the replay: records above committed are discarded
		reset 20 => epoch=1
		state => committed=20 pending=0/0 redeliver=false completed=false
		# the old epoch's ack for 30 lands late, before and after re-emission
		ack 0 30 => stale committed=20 new=0
		emit 20 30
		ack 0 30 => stale committed=20 new=0
		fail 0 30 => stale redeliver=false
		state => committed=20 pending=1/10 redeliver=false completed=false
		ack 1 30 => advanced committed=30 new=1
	`)
}

func TestLesson04_FailedPublishStallsAndRequiresRedelivery(t *testing.T) {
	runTracker(t, newTracker(t, 1000), `
		emit 1000 1040
		emit 1040 1080
		emit 1080 1120
		ack 0 1040 => advanced committed=1040 new=1
		fail 0 1080 => stalled redeliver=true
		ack 0 1120 => above-failure committed=1040 new=0
		state => committed=1040 pending=2/80 redeliver=true completed=false
		# fail-stop: nothing more is emitted until the replay restarts
		emit 1120 1160 => err:stalled by a publish failure; reset required
		fail 0 1080 => additional redeliver=true
		ack 0 1080 => conflicting committed=1040 new=0
		# the replay restarts from the persisted position, below committed
		reset 1000 => epoch=1
		state => committed=1040 pending=0/0 redeliver=false completed=false
		emit 1000 1040
		state => committed=1040 pending=0/0 redeliver=false completed=false
		ack 1 1040 => duplicate committed=1040 new=0
		emit 1040 1080
		emit 1080 1120
		emit 1120 1160
		finish 1160
		ack 1 1120 => buffered committed=1040 new=0
		ack 1 1080 => advanced committed=1120 new=2
		ack 1 1160 => advanced committed=1160 new=1
		state => committed=1160 pending=0/0 redeliver=false completed=true
	`)
}

func TestLesson22_AckAboveAFailureIsReportedAsADedupHazard(t *testing.T) {
	tr := newTracker(t, 0)
	runTracker(t, tr, `
		emit 0 10
		emit 10 20
		emit 20 30
		fail 0 20 => stalled redeliver=true
		ack 0 30 => above-failure committed=0 new=0
		ack 0 10 => advanced committed=10 new=1
		emit 30 40 => err:stalled by a publish failure; reset required
	`)
	if got := tr.Stats().AckedAboveFailure; got != 1 {
		t.Fatalf("AckedAboveFailure = %d, want 1", got)
	}
}

// A late acknowledgement of an epoch that ended in a failure, above the failed record,
// arrives after the reset: it is still the hazard, not a stale no-op (found by
// TestReplayFailureMidStreamRestartsFromThePersistedWatermark against the real broker:
// reported as stale, the re-delivery's duplicate receipt committed a record Pulsar never
// stored).
func TestLesson22_AckAboveAFailureOfAnEarlierEpochIsReported(t *testing.T) {
	tr := newTracker(t, 0)
	runTracker(t, tr, `
		emit 0 10
		emit 10 20
		emit 20 30
		ack 0 10 => advanced committed=10 new=1
		fail 0 20 => stalled redeliver=true
		reset 10 => epoch=1
		ack 0 30 => above-failure committed=10 new=0
		ack 0 15 => stale committed=10 new=0
	`)
	if got := tr.Stats().AckedAboveFailure; got != 1 {
		t.Fatalf("AckedAboveFailure = %d, want 1", got)
	}
}

// A record Pulsar stored above one of the same epoch whose send failed is the hazard
// whichever outcome comes first, also when a reset (a replay restarted for any reason)
// falls between the two: the failed record's re-send would be answered as a duplicate of
// the stored one and counted as acknowledged. Outcomes of earlier epochs are otherwise
// stale. A record answered as a duplicate was stored before, by an earlier send: never
// the hazard.
func TestLesson22_AStoredRecordAboveAFailureIsTheHazardInEveryOrder(t *testing.T) {
	emit := `
		emit 0 10
		emit 10 20
		emit 20 30
	`
	for _, tc := range []struct{ name, script string }{
		{"stored, then failed", emit + `
			ack 0 30 => buffered committed=0 new=0
			fail 0 20 => below-stored redeliver=true
			hazard 0 => hazard=20-30
		`},
		{"stored, reset, failed", emit + `
			ack 0 30 => buffered committed=0 new=0
			reset 0 => epoch=1
			fail 0 20 => below-stored redeliver=false
			hazard 0 => hazard=20-30
		`},
		{"reset, stored, failed", emit + `
			reset 0 => epoch=1
			ack 0 30 => stale committed=0 new=0
			fail 0 20 => below-stored redeliver=false
		`},
		{"reset, failed, stored", emit + `
			reset 0 => epoch=1
			fail 0 20 => stale redeliver=false
			ack 0 10 => stale committed=0 new=0
			ack 0 30 => above-failure committed=0 new=0
			hazard 0 => hazard=20-30
		`},
		{"failed, reset, stored", emit + `
			fail 0 20 => stalled redeliver=true
			reset 0 => epoch=1
			ack 0 30 => above-failure committed=0 new=0
		`},
		{"answered as duplicates, in either order and across a reset", emit + `
			dup 0 30 => buffered committed=0 new=0
			fail 0 20 => stalled redeliver=true
			dup 0 30 => duplicate committed=0 new=0
			reset 0 => epoch=1
			emit 0 10
			emit 10 20
			emit 20 30
			fail 1 10 => stalled redeliver=true
			dup 1 20 => buffered committed=0 new=0
			reset 0 => epoch=2
			dup 1 30 => stale committed=0 new=0
			hazard 0 => hazard=none
			hazard 1 => hazard=none
		`},
		{"stored below the failure", emit + `
			ack 0 10 => advanced committed=10 new=1
			fail 0 30 => stalled redeliver=true
			reset 10 => epoch=1
			ack 0 20 => stale committed=10 new=0
			hazard 0 => hazard=none
		`},
	} {
		t.Run(tc.name, func(t *testing.T) { runTracker(t, newTracker(t, 0), tc.script) })
	}

	// An epoch's outcomes are kept while some are still to come, however many resets
	// later: resets go on while a producer hangs on its sends (restarted replays that send
	// nothing), and a hazard seen only once the epoch was forgotten would let the failed
	// record's re-delivery be taken for a duplicate of one stored. Once every outcome has
	// come, the epoch is forgotten maxEarlierEpochs resets after it.
	tr := newTracker(t, 0)
	runTracker(t, tr, emit+`ack 0 30 => buffered committed=0 new=0`)
	for range 3 * maxEarlierEpochs {
		if _, err := tr.Reset(0); err != nil {
			t.Fatal(err)
		}
	}
	runTracker(t, tr, `
		fail 0 20 => below-stored redeliver=false
		hazard 0 => hazard=20-30
		ack 0 10 => stale committed=0 new=0
	`)
	if got := tr.EarlierUnanswered(); got != 0 {
		t.Fatalf("EarlierUnanswered = %d after every outcome came, want 0", got)
	}
	if _, err := tr.Reset(0); err != nil {
		t.Fatal(err)
	}
	runTracker(t, tr, `
		fail 0 20 => stale redeliver=false
		hazard 0 => hazard=none
	`)
	if n := len(tr.sends); n > maxEarlierEpochs+1 {
		t.Errorf("%d epochs' outcomes kept, want at most %d", n, maxEarlierEpochs+1)
	}
}

func TestLesson26_SkippedRecordsAreNeverReportedAsProgress(t *testing.T) {
	tr := newTracker(t, 0)
	runTracker(t, tr, `
		emit 0 10
		emit 10 20
		emit 20 30
		fail 0 10 => stalled redeliver=true
		ack 0 20 => above-failure committed=0 new=0
		ack 0 30 => above-failure committed=0 new=0
		reset 0 => epoch=1
		ack 0 20 => above-failure committed=0 new=0
		state => committed=0 pending=0/0 redeliver=false completed=false
	`)
	if got := tr.Stats().CommittedRecords; got != 0 {
		t.Fatalf("CommittedRecords = %d after only failed and discarded records, want 0", got)
	}
}

func TestLesson05_CompletedOnlyWhenEveryRecordIsAcknowledged(t *testing.T) {
	runTracker(t, newTracker(t, 64), `
		emit 64 128
		emit 128 192
		finish 256
		emit 256 300 => err:recording already finished
		ack 0 192 => buffered committed=64 new=0
		state => committed=64 pending=2/128 redeliver=false completed=false
		# trailing padding up to the stop position has nothing to acknowledge
		ack 0 128 => advanced committed=256 new=2
		state => committed=256 pending=0/0 redeliver=false completed=true
	`)
}

// TestCommitTrackerMarksTheLastCommittedRecord: the mark a checkpoint keeps is the record
// the committed position ends — not one above a gap, not the padding after it — and it
// survives a reset and re-emissions below the committed position.
func TestCommitTrackerMarksTheLastCommittedRecord(t *testing.T) {
	runTracker(t, newTracker(t, 64), `
		last => last=none
		emit 64 128 11
		emit 160 192 12
		emit 192 256 13
		ack 0 192 => buffered committed=64 new=0
		last => last=none
		ack 0 128 => advanced committed=192 new=2
		last => last=160-192/12
		fail 0 256 => stalled redeliver=true
		reset 128 => epoch=1
		# a re-emission up to the committed position is not tracked: the mark stays (the
		# replay counts the padding before a record to it: read again from 128, it starts there)
		emit 128 192 12 => ok
		last => last=160-192/12
		emit 192 256 13 => ok
		finish 320 => ok
		ack 1 256 => advanced committed=320 new=1
		# the padding after the last record is committed; the mark stays the record's
		last => last=192-256/13
	`)
}

// Records sent before a reset and still out are counted until their (stale) outcomes
// arrive, failures and not-sent reports included: a drain waits for them too.
func TestCommitTracker_EarlierUnansweredCountsSendsOutAcrossResets(t *testing.T) {
	runTracker(t, newTracker(t, 0), `
		emit 0 64
		emit 64 128
		emit 128 192
		ack 0 64 => advanced committed=64 new=1
		ack 0 192 => buffered committed=64 new=0
		earlier => earlier=0
		reset 64 => epoch=1
		# 128 is out; 192's outcome arrived before the reset
		earlier => earlier=1
		emit 64 128
		reset 64 => epoch=2
		earlier => earlier=2
		ack 0 128 => stale committed=64 new=0
		earlier => earlier=1
		fail 1 128 => stale redeliver=false
		earlier => earlier=0
		# an outcome beyond the count (a duplicate) does not go below zero
		ack 1 128 => stale committed=64 new=0
		earlier => earlier=0
	`)
}

func TestCommitTracker_ContractViolationsAreErrors(t *testing.T) {
	tests := []struct{ name, script string }{
		{"empty record", `emit 10 10 => err:invalid position`},
		{"negative start", `emit -5 10 => err:invalid position`},
		{"overlapping record", `
			emit 100 110 => ok
			emit 105 120 => err:record out of order`},
		{"below resume", `emit 90 110 => err:record out of order`},
		{"ack never emitted", `
			emit 100 110
			ack 0 105 => err:outcome for a record never emitted`},
		{"fail never emitted", `fail 0 500 => err:outcome for a record never emitted`},
		{"future epoch", `
			emit 100 110
			ack 1 110 => err:outcome from a future epoch
			fail 1 110 => err:outcome from a future epoch`},
		{"reset above committed", `reset 101 => err:reset position beyond committed`},
		{"reset negative", `reset -1 => err:invalid position`},
		{"finish below last end", `
			emit 100 110
			finish 105 => err:record out of order`},
		{"finish below committed", `finish 99 => err:record out of order`},
		// A replay started again from an older checkpoint that ends below what was
		// acknowledged: the archive truncated the recording, not a bug of the caller.
		{"finish below committed after a reset", `
			emit 100 110
			emit 110 120
			ack 0 120 => buffered committed=100 new=0
			ack 0 110 => advanced committed=120 new=2
			reset 100 => epoch=1
			emit 100 110
			finish 115 => err:recording ends below its committed position`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runTracker(t, newTracker(t, 100), tt.script) })
	}
	if _, err := NewCommitTracker(-1, 0); !errors.Is(err, ErrInvalidRecordingID) {
		t.Errorf("NewCommitTracker(-1, 0) = %v, want ErrInvalidRecordingID", err)
	}
	if _, err := NewCommitTracker(1, -1); !errors.Is(err, ErrInvalidPosition) {
		t.Errorf("NewCommitTracker(1, -1) = %v, want ErrInvalidPosition", err)
	}
}

// checkAgainstModel drives a tracker with the outcomes encoded in ops and
// checks, after every step, the invariants of lessons 1, 2, 4 and 26 against an
// independent model: committed is the end of the longest prefix of
// acknowledged records, so it never passes an unacknowledged or failed record,
// and it never moves backwards. Each op byte picks a record (high bits) and an
// action (low 2 bits): 0, 1 ack; 2 fail; 3 restart the replay (reset to
// committed and re-emit) if a re-delivery is required, else a stale ack.
func checkAgainstModel(t *testing.T, ops []byte) {
	t.Helper()
	const resume = 1 << 20
	const (
		unsettled = iota
		ackedM
		failedM
	)
	tr := newTracker(t, resume)
	n := 1 + len(ops)%40
	starts, ends := make([]int64, n), make([]int64, n)
	pos := int64(resume)
	for i := range n {
		size := int64(32 + 32*(i%5))
		starts[i], ends[i] = pos, pos+size
		pos += size + int64(32*(i%3)) // padding gap (lesson 9)
	}
	emitFrom := func(from int64) {
		for i := range n {
			if starts[i] >= from {
				if err := tr.Emit(starts[i], ends[i], uint32(i)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	emitFrom(resume)
	state := make([]int, n)
	failedEndOf := map[Epoch]int64{}
	prev := tr.Committed()
	var committedRecords uint64
	for step, b := range ops {
		i := int(b>>2) % n
		switch b & 3 {
		case 0, 1:
			r, err := tr.Ack(tr.Epoch(), ends[i])
			if err != nil {
				t.Fatalf("step %d: ack %d: %v", step, ends[i], err)
			}
			committedRecords += uint64(r.NewlyCommitted)
			if state[i] == unsettled {
				state[i] = ackedM
			}
		case 2:
			if _, err := tr.Fail(tr.Epoch(), ends[i]); err != nil {
				t.Fatalf("step %d: fail %d: %v", step, ends[i], err)
			}
			if state[i] == unsettled && ends[i] > tr.Committed() {
				state[i] = failedM
			}
		case 3:
			if from, required := tr.Redelivery(); required {
				lowest := int64(-1)
				for j := range n {
					if state[j] == failedM && (lowest < 0 || ends[j] < lowest) {
						lowest = ends[j]
					}
				}
				failedEndOf[tr.Epoch()] = lowest
				if _, err := tr.Reset(from); err != nil {
					t.Fatal(err)
				}
				emitFrom(from)
				for j := range n {
					if ends[j] > from {
						state[j] = unsettled
					}
				}
			} else if tr.Epoch() > 0 {
				// A late ack of the epoch before the reset: stale, unless it lies
				// above that epoch's failure (lesson 22).
				want := AckStale
				if fe, ok := failedEndOf[tr.Epoch()-1]; ok && fe >= 0 && ends[i] > fe {
					want = AckAboveFailure
				}
				r, err := tr.Ack(tr.Epoch()-1, ends[i])
				if err != nil || r.Outcome != want {
					t.Fatalf("step %d: stale ack = %v, %v; want %v", step, r.Outcome, err, want)
				}
			}
		}
		want, wantLast := int64(resume), -1
		failedAny := false
		prefix := true
		for j := range n {
			prefix = prefix && state[j] == ackedM
			if prefix {
				want, wantLast = ends[j], j
			}
			failedAny = failedAny || state[j] == failedM
		}
		got := tr.Committed()
		if got != want {
			t.Fatalf("step %d: committed %d, model %d (states %v)", step, got, want, state)
		}
		// The mark is the record ending at the committed position (its checksum: its index).
		if m, ok := tr.LastCommitted(); ok != (wantLast >= 0) || ok && m != (RecordMark{starts[wantLast], ends[wantLast], uint32(wantLast)}) {
			t.Fatalf("step %d: last committed %+v (%t), model record %d", step, m, ok, wantLast)
		}
		if got < prev {
			t.Fatalf("step %d: committed moved backwards %d -> %d", step, prev, got)
		}
		prev = got
		if _, req := tr.Redelivery(); req != failedAny {
			t.Fatalf("step %d: redelivery required %t, model %t", step, req, failedAny)
		}
		if s := tr.Stats().CommittedRecords; s != committedRecords {
			t.Fatalf("step %d: stats count %d committed records, results %d", step, s, committedRecords)
		}
	}
}

func TestLesson02_RandomAckOrdersNeverPassAnUnackedRecord(t *testing.T) {
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 0xfe77))
		ops := make([]byte, r.IntN(200))
		for i := range ops {
			ops[i] = byte(r.UintN(256))
		}
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) { checkAgainstModel(t, ops) })
	}
}

func FuzzLesson02_CommitTrackerMatchesModel(f *testing.F) {
	f.Add([]byte{0, 2, 4, 6})
	f.Add([]byte{6, 4, 2, 0, 1, 3, 5, 7, 9, 11})
	f.Fuzz(func(t *testing.T, ops []byte) { checkAgainstModel(t, ops) })
}

// TestLesson02_PermutationsOfAcksConvergeToTheLastEnd: every order of the
// acknowledgements of five records ends at the same committed position, and
// the committed position after each step is the contiguous prefix.
func TestLesson02_PermutationsOfAcksConvergeToTheLastEnd(t *testing.T) {
	perm := []int{0, 1, 2, 3, 4}
	var permute func(k int)
	count := 0
	permute = func(k int) {
		if k == len(perm) {
			count++
			tr := newTracker(t, 0)
			for i := range perm {
				if err := tr.Emit(int64(i*10), int64(i*10+10), 0); err != nil {
					t.Fatal(err)
				}
			}
			acked := make([]bool, len(perm))
			for _, i := range perm {
				if _, err := tr.Ack(0, int64(i*10+10)); err != nil {
					t.Fatal(err)
				}
				acked[i] = true
				want := int64(0)
				for j := 0; j < len(acked) && acked[j]; j++ {
					want = int64(j*10 + 10)
				}
				if tr.Committed() != want {
					t.Fatalf("order %v: committed %d, want %d", perm, tr.Committed(), want)
				}
			}
			if tr.Committed() != 50 || tr.Pending().Records != 0 {
				t.Fatalf("order %v: committed %d pending %+v", perm, tr.Committed(), tr.Pending())
			}
			return
		}
		for i := k; i < len(perm); i++ {
			perm[k], perm[i] = perm[i], perm[k]
			permute(k + 1)
			perm[k], perm[i] = perm[i], perm[k]
		}
	}
	permute(0)
	if count != 120 {
		t.Fatalf("ran %d permutations, want 120", count)
	}
}

// TestLesson22_NothingTheTopicLacksIsCommittedUnlessTheHazardIsReported drives the tracker
// as the tracker actor does, against a model of a topic with broker deduplication (a
// record is stored only above the highest sequence id stored; otherwise it is answered as
// a duplicate): sends fail at random, outcomes of an epoch arrive in any order, a reset
// follows a failure or comes for no reason (a replay restarted), and, as the publisher
// does, no send of an epoch goes out before every send of the one before it has its
// outcome, so outcomes of an epoch reach the tracker before any of the next. Whatever the
// order, the committed position never passes a record the topic lacks unless the tracker
// reported lesson 22's hazard.
func TestLesson22_NothingTheTopicLacksIsCommittedUnlessTheHazardIsReported(t *testing.T) {
	type sent struct {
		epoch      Epoch
		end        int64
		stored, ok bool // ok: acknowledged (stored, or a duplicate); else failed
	}
	const records = 6
	ends := func(i int) int64 { return int64(10 * (i + 1)) }
	for seed := range uint64(20_000) {
		r := rand.New(rand.NewPCG(seed, 0x22))
		tr := newTracker(t, 0)
		topic := map[int64]bool{}
		var highest int64
		var out []sent // outcomes not yet delivered
		next := 0      // the next record the replay reads
		var trace []string
		hazard := false
		for step := 0; step < 200 && !hazard; step++ {
			switch k := r.IntN(10); {
			case k < 4 && next < records && (len(out) == 0 || out[0].epoch == tr.Epoch()):
				end := ends(next)
				committed := tr.Committed()
				if tr.Emit(end-10, end, 0) != nil {
					continue // stalled by a failure: read again after the reset
				}
				next++
				if end <= committed {
					continue // committed in this process already: not sent again
				}
				s := sent{epoch: tr.Epoch(), end: end}
				if r.IntN(5) != 0 {
					s.ok = true
					if s.stored = end > highest; s.stored {
						highest, topic[end] = end, true
					}
				}
				out = append(out, s)
				trace = append(trace, fmt.Sprintf("send e%d %d ok=%t stored=%t", s.epoch, end, s.ok, s.stored))
			case k < 8 && len(out) > 0:
				oldest := out[0].epoch
				var of []int
				for i, s := range out {
					if s.epoch == oldest {
						of = append(of, i)
					}
				}
				i := of[r.IntN(len(of))]
				s := out[i]
				out = append(out[:i], out[i+1:]...)
				switch {
				case s.ok:
					ack := tr.AckDuplicate
					if s.stored {
						ack = tr.Ack
					}
					res, err := ack(s.epoch, s.end)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					hazard = res.Outcome == AckAboveFailure
					trace = append(trace, fmt.Sprintf("ack e%d %d: %s", s.epoch, s.end, res.Outcome))
				default:
					o, err := tr.Fail(s.epoch, s.end)
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					hazard = o == FailBelowStored
					trace = append(trace, fmt.Sprintf("fail e%d %d: %s", s.epoch, s.end, o))
				}
			case k == 8 || k == 9:
				if _, required := tr.Redelivery(); k == 8 && !required {
					continue
				}
				from := tr.Committed()
				if _, err := tr.Reset(from); err != nil {
					t.Fatal(err)
				}
				next = int(from / 10)
				trace = append(trace, fmt.Sprintf("reset %d", from))
			}
			for i := range records {
				if e := ends(i); e <= tr.Committed() && !topic[e] {
					t.Fatalf("seed %d: committed %d passes the record ending at %d, which the topic lacks, and no hazard was reported:\n%s",
						seed, tr.Committed(), e, strings.Join(trace, "\n"))
				}
			}
		}
	}
}

// A finished recording has one stop in an epoch: another is refused (it would commit bytes
// never read, nor acknowledged), the same one again changes nothing.
func TestCommitTracker_AFinishedRecordingKeepsItsStop(t *testing.T) {
	runTracker(t, newTracker(t, 0), `
		emit 0 100
		ack 0 100 => advanced committed=100 new=1
		finish 100
		emit 100 200 => err:recording already finished
		finish 500 => err:record out of order
		finish 100 => ok
		state => committed=100 pending=0/0 redeliver=false completed=true
	`)
	runTracker(t, newTracker(t, 0), `
		emit 0 100
		finish 100
		finish 900 => err:record out of order
		ack 0 100 => advanced committed=100 new=1
		state => committed=100 pending=0/0 redeliver=false completed=true
	`)
}

// Lesson 4 at a stopped recording's end: the stop is seen with records in flight, one of
// them fails. The replay restarts below the stop, the records after the committed position
// are read again, and only once they are acknowledged is the stop committed — not as soon
// as the first of them is.
func TestLesson04_AFailureAfterTheStopIsRedeliveredBeforeTheStopIsCommitted(t *testing.T) {
	runTracker(t, newTracker(t, 0), `
		emit 0 100
		emit 100 200
		emit 200 300
		finish 500
		ack 0 100 => advanced committed=100 new=1
		fail 0 200 => stalled redeliver=true
		ack 0 300 => above-failure committed=100 new=0
		reset 100 => epoch=1
		emit 100 200 => ok
		ack 1 200 => advanced committed=200 new=1
		state => committed=200 pending=0/0 redeliver=false completed=false
		emit 200 300 => ok
		finish 500
		ack 1 300 => advanced committed=500 new=1
		state => committed=500 pending=0/0 redeliver=false completed=true
	`)
}

// After a reset below the committed position, a record read again that straddles the
// committed position is refused: its bytes below were acknowledged, the ones above not. The
// tracker that committed the record there says that it changed; one that resumed there
// (a checkpoint of an earlier run) knows no record, only the order.
func TestCommitTracker_ARecordStraddlingTheCommittedPositionIsRefused(t *testing.T) {
	runTracker(t, newTracker(t, 0), `
		emit 0 100
		ack 0 100 => advanced committed=100 new=1
		reset 0 => epoch=1
		emit 0 50 => ok
		emit 50 150 => err:record changed since it was emitted
	`)
	runTracker(t, newTracker(t, 100), `
		reset 0 => epoch=1
		emit 0 50 => ok
		emit 50 150 => err:record out of order
	`)
}

// A replay restarted from the persisted checkpoint reads again what it read before, up to
// the committed position and past it: the archive may have truncated the recording and
// recorded on from there meanwhile (TruncateRecording, ExtendRecording). Below the committed
// position nothing is sent again, and above it Pulsar answers what it stored as duplicates,
// whatever the bytes: a record emitted before the reset must be emitted again as it was —
// the same end, the same checksum, none skipped — or the recording must stop after it.
// Records below the reset's position are the replay's to check (its checkpoint's mark), and
// a tracker keeps what it emitted across resets until it is emitted again.
func TestCommitTracker_ARecordReadAgainMustBeTheOneReadBefore(t *testing.T) {
	// Committed to 300, sent up to 500; the replay restarts from the persisted 100.
	before := `
		emit 0 100 1
		emit 100 200 2
		emit 200 300 3
		emit 300 400 4
		emit 400 500 5
		ack 0 100 => advanced committed=100 new=1
		ack 0 200 => advanced committed=200 new=1
		ack 0 300 => advanced committed=300 new=1
		ack 0 500 => buffered committed=300 new=0
		reset 100 => epoch=1
	`
	for _, c := range []struct{ name, again string }{
		{"read again as before", `
			emit 100 200 22 => ok
			emit 200 300 3 => ok
			emit 300 400 4 => ok
			emit 400 500 5 => ok
			emit 500 600 6 => ok
			finish 600 => ok`},
		{"the last record committed changed", `
			emit 100 200 22 => ok
			emit 200 300 33 => err:record changed since it was emitted`},
		{"a record sent and not committed changed", `
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			emit 400 500 55 => err:record changed since it was emitted`},
		{"a record ends past one read before", `
			emit 100 200 2
			emit 200 350 3 => err:record changed since it was emitted`},
		{"a record read again may begin elsewhere: the padding before it counts to it", `
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			emit 450 500 5 => ok
			emit 500 510 => ok`},
		{"the recording now stops before what was sent", `
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			finish 450 => err:record changed since it was emitted`},
		{"the recording now stops after padding where a record was", `
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			finish 500 => err:record changed since it was emitted`},
		{"a second reset before it is read again keeps it", `
			emit 100 200 2
			ack 1 200 => duplicate committed=300 new=0
			reset 100 => epoch=2
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			emit 400 500 55 => err:record changed since it was emitted`},
		{"read again, then a reset: they are checked once more", `
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			reset 100 => epoch=2
			emit 100 200 2
			emit 200 300 3
			emit 300 400 44 => err:record changed since it was emitted`},
		{"a failure stalls the epoch before it is read again: the end waits for the next", `
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			fail 1 400 => stalled redeliver=true
			emit 400 500 5 => err:stalled by a publish failure; reset required
			finish 500 => ok
			reset 100 => epoch=2
			emit 100 200 2
			emit 200 300 3
			emit 300 400 4
			finish 450 => err:record changed since it was emitted`},
		{"a reset to the committed position leaves the last record committed to the replay", `
			emit 100 200 2
			emit 200 300 3
			reset 300 => epoch=2
			emit 300 400 4
			emit 400 500 55 => err:record changed since it was emitted`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(t, 0)
			runTracker(t, tr, before)
			runTracker(t, tr, c.again)
		})
	}
	// What the error says.
	tr := newTracker(t, 0)
	runTracker(t, tr, before+"\nemit 100 200 2\nemit 200 300 3")
	err := tr.Emit(300, 400, 44)
	var changed *RecordChangedError
	if !errors.As(err, &changed) || changed.Before != (RecordMark{300, 400, 4}) || changed.Now != (RecordMark{300, 400, 44}) || changed.ReadTo != 500 || changed.Finished {
		t.Fatalf("Emit of a changed record: %#v (%v)", changed, err)
	}
	tr = newTracker(t, 0)
	runTracker(t, tr, before+"\nemit 100 200 2\nemit 200 300 3\nemit 300 400 4")
	err = tr.Finish(450)
	if !errors.As(err, &changed) || changed.Before != (RecordMark{400, 500, 5}) || !changed.Finished || changed.Stop != 450 || changed.ReadTo != 500 {
		t.Fatalf("Finish before a record read before: %#v (%v)", changed, err)
	}
}

// Lesson 22 is undecided while a failed send has sends above it of its epoch without an
// outcome (one stored would be the hazard), across resets too; decided once they are all
// in, whichever they are; never undecided without a failure.
func TestCommitTracker_UndecidedWhileSendsAboveAFailureAwaitTheirOutcome(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	undecided := func(tr *CommitTracker, wantEnd int64, wantDue int) {
		t.Helper()
		end, due, ok := tr.Undecided()
		if ok != (wantDue > 0) || ok && (end != wantEnd || due != wantDue) {
			t.Fatalf("Undecided() = %d, %d, %t; want %d, %d, %t", end, due, ok, wantEnd, wantDue, wantDue > 0)
		}
	}
	emit := func(tr *CommitTracker, ends ...int64) {
		t.Helper()
		start := tr.Committed()
		for _, end := range ends {
			must(tr.Emit(start, end, 0))
			start = end
		}
	}

	tr := newTracker(t, 0)
	emit(tr, 64, 128, 192, 256)
	undecided(tr, 0, 0) // no failure
	_, err := tr.Fail(0, 128)
	must(err)
	undecided(tr, 128, 2) // 192 and 256 may yet be stored
	_, err = tr.Ack(0, 64)
	must(err)
	undecided(tr, 128, 2) // below the failure: changes nothing
	_, err = tr.Fail(0, 192)
	must(err)
	undecided(tr, 128, 1)
	_, err = tr.Fail(0, 256)
	must(err)
	undecided(tr, 0, 0) // all failed: nothing stored above 128

	tr = newTracker(t, 0)
	emit(tr, 64, 128, 192)
	_, err = tr.Fail(0, 64)
	must(err)
	_, err = tr.Reset(0) // the re-delivery: 128 and 192 still out
	must(err)
	undecided(tr, 64, 2)
	_, err = tr.Ack(0, 128) // stored above the failure: the hazard, decided
	must(err)
	undecided(tr, 64, 1)
	_, err = tr.Fail(0, 192)
	must(err)
	undecided(tr, 0, 0)

	// A replay restarted without a failure (an image closed): the earlier epoch's records
	// the publisher had not sent yet are superseded, never sent. No failure of that epoch is
	// recorded, so the send of 64 still out is no undecided hazard; reported as failures, it
	// would be (an undecided hazard stops the stream at a drain).
	tr = newTracker(t, 0)
	emit(tr, 64, 128, 192)
	_, err = tr.Reset(0)
	must(err)
	must(tr.NotSentEarlier(0)) // 128
	must(tr.NotSentEarlier(0)) // 192
	undecided(tr, 0, 0)
	if n := tr.EarlierUnanswered(); n != 1 {
		t.Fatalf("EarlierUnanswered() = %d; want 1, the send of 64", n)
	}
	if err := tr.NotSentEarlier(1); !errors.Is(err, ErrUnknownEpoch) {
		t.Fatalf("NotSentEarlier of the current epoch = %v; want ErrUnknownEpoch", err)
	}
}

// InFlight counts the current epoch's records without an outcome, below a failure and above
// it; a reset leaves none (the earlier epoch's are EarlierUnanswered's).
func TestCommitTracker_InFlightCountsTheEpochsRecordsAwaitingTheirOutcome(t *testing.T) {
	tr := newTracker(t, 0)
	for _, r := range [][2]int64{{0, 64}, {64, 128}, {128, 192}} {
		if err := tr.Emit(r[0], r[1], 0); err != nil {
			t.Fatal(err)
		}
	}
	step := func(what string, err error, want int) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if got := tr.InFlight(); got != want {
			t.Fatalf("after %s: InFlight() = %d; want %d", what, got, want)
		}
	}
	step("three sends", nil, 3)
	_, err := tr.Fail(0, 128)
	step("the middle one failed", err, 2)
	_, err = tr.Ack(0, 192)
	step("the one above it acknowledged", err, 1)
	_, err = tr.Ack(0, 64)
	step("the one below it acknowledged and committed", err, 0)
	if err := tr.Emit(192, 256, 0); err == nil {
		t.Fatal("emitted after a failure")
	}
	_, err = tr.Reset(64)
	step("a reset", err, 0)
}
