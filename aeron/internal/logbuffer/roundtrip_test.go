package logbuffer

import (
	"math"
	"math/rand/v2"
	"testing"
)

// messageSize draws a message length between 0 and 4×MTU, favouring the
// boundaries where fragmentation changes.
func messageSize(rng *rand.Rand) int {
	boundaries := []int{0, 1, testMaxPayload - 1, testMaxPayload, testMaxPayload + 1,
		2 * testMaxPayload, 2*testMaxPayload + 1, 4*testMTU - 1, 4 * testMTU}
	switch rng.IntN(4) {
	case 0:
		return rng.IntN(64)
	case 1:
		return boundaries[rng.IntN(len(boundaries))]
	default:
		return 1 + rng.IntN(4*testMTU)
	}
}

// Many messages of mixed sizes go through a 64 KiB-term log, rotating
// terms dozens of times: every one arrives exactly once, in order, with
// its checksum, and with the position its offer returned.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name          string
		initialTermID int32
		start         int64
		fragmentLimit int
	}{
		{"fragment limit 1", 0, 0, 1},
		{"fragment limit 3, term ids wrap", math.MaxInt32 - 20, 0, 3},
		{"unlimited, mid-stream start", -5, 7*testTermLength + 4096, noLimit},
		{"fragment limit 10, start near a term end", 1000, 3*testTermLength - 64, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams()
			p.InitialTermID = tc.initialTermID
			p.StartPosition = tc.start
			s := newStream(t, p)
			rec := &recorder{tb: t}
			a := NewFragmentAssembler(s.log.MaxMessageLength(), rec.onMessage)
			handler := a.OnFragment

			rng := rand.New(rand.NewPCG(1, uint64(tc.fragmentLimit)))
			const count = 3000
			want := make([]message, 0, count)
			for i := range count {
				msg := patterned(rng, i, messageSize(rng))
				pos := s.offer(msg, tc.fragmentLimit, handler)
				want = append(want, received(msg, pos))
			}
			s.drain(tc.fragmentLimit, handler)

			checkMessages(t, rec.msgs, want)
			if st := a.Stats(); st != (AssemblerStats{Delivered: count}) {
				t.Errorf("assembler stats %+v", st)
			}
			if terms := (s.position - tc.start) / testTermLength; terms < 50 {
				t.Errorf("only %d terms used; the test should rotate many times", terms)
			}
			if got := TermIDFromPosition(s.pub.Position(), s.log.PositionBitsToShift(), tc.initialTermID); got != s.pub.termID {
				t.Errorf("appender in term %d, its position says %d", s.pub.termID, got)
			}
		})
	}
}

// The assembled messages are the same whatever the fragment limit: one
// poll per term or one fragment per poll.
func TestRoundTripSplitEquivalence(t *testing.T) {
	run := func(fragmentLimit int) []message {
		s := newStream(t, testParams())
		rec := &recorder{tb: t}
		a := NewFragmentAssembler(s.log.MaxMessageLength(), rec.onMessage)
		rng := rand.New(rand.NewPCG(2, 2))
		for i := range 500 {
			s.offer(patterned(rng, i, messageSize(rng)), fragmentLimit, a.OnFragment)
		}
		s.drain(fragmentLimit, a.OnFragment)
		return rec.msgs
	}
	whole := run(noLimit)
	for _, limit := range []int{1, 2, 7} {
		checkMessages(t, run(limit), whole)
	}
}
