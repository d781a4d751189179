package logbuffer

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"testing"
)

// collector records fragments as "payload@position" strings.
type collector struct{ got []string }

func (c *collector) onFragment(payload []byte, h Header) {
	c.got = append(c.got, fmt.Sprintf("%s@%d", payload, h.Position()))
}

// offerAll appends each message as one frame and returns the appender.
func offerAll(tb testing.TB, l *Log, msgs ...string) *ExclusiveAppender {
	tb.Helper()
	a := newTestAppender(tb, l)
	for _, m := range msgs {
		if r := mustOffer(tb, a, openFlow, []byte(m)); !r.IsPosition() {
			tb.Fatalf("offer %q = %v", m, r)
		}
	}
	return a
}

func TestPollDeliversFragmentsWithHeaders(t *testing.T) {
	p := testParams()
	p.InitialTermID = -1
	l := newTestLog(t, p)
	offerAll(t, l, "a", "bb", "ccc")

	var headers []keptHeader
	var payloads []string
	n, next, err := l.Poll(0, noLimit, func(payload []byte, h Header) {
		headers = append(headers, keep(h))
		payloads = append(payloads, string(payload))
	})
	if err != nil || n != 3 || next != 192 {
		t.Fatalf("Poll = %d, %d, %v; want 3, 192", n, next, err)
	}
	if !slices.Equal(payloads, []string{"a", "bb", "ccc"}) {
		t.Errorf("payloads %q", payloads)
	}
	want := keptHeader{
		FrameHeader: FrameHeader{FrameLength: HeaderLength + 2, Flags: FlagsUnfragmented, Type: FrameTypeData,
			TermOffset: 64, SessionID: testSessionID, StreamID: testStreamID, TermID: -1},
		Position: 128,
	}
	if headers[1] != want {
		t.Errorf("second header %v, want %v", headers[1], want)
	}
}

// TestFramePositionIsWhereTheFrameBegins: each polled fragment's FramePosition is the
// position after the fragment before it — unfragmented, and the fragments of a message
// longer than the MTU, whose frames end unaligned.
func TestFramePositionIsWhereTheFrameBegins(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	for _, m := range [][]byte{[]byte("a"), make([]byte, 2*testMTU+5), []byte("bcd")} {
		mustOffer(t, a, openFlow, m)
	}
	var prev int64
	n, _, err := l.Poll(0, noLimit, func(_ []byte, h Header) {
		if h.FramePosition() != prev {
			t.Errorf("fragment ending at %d (length %d, flags %s): FramePosition %d, want %d", h.Position(), h.FrameLength(), h.Flags(), h.FramePosition(), prev)
		}
		prev = h.Position()
	})
	if err != nil || n < 5 {
		t.Fatalf("Poll = %d fragments, %v; want at least 5", n, err)
	}
}

func TestPollRespectsFragmentLimit(t *testing.T) {
	l := newTestLog(t, testParams())
	offerAll(t, l, "a", "b", "c")
	var c collector
	for _, step := range []struct {
		from  int64
		limit int
		n     int
		next  int64
	}{
		{0, 0, 0, 0},
		{0, -1, 0, 0},
		{0, 2, 2, 128},
		{128, 2, 1, 192},
		{192, 2, 0, 192},
	} {
		n, next, err := l.Poll(step.from, step.limit, c.onFragment)
		if err != nil || n != step.n || next != step.next {
			t.Errorf("Poll(%d, %d) = %d, %d, %v; want %d, %d", step.from, step.limit, n, next, err, step.n, step.next)
		}
	}
	if !slices.Equal(c.got, []string{"a@64", "b@128", "c@192"}) {
		t.Errorf("got %q", c.got)
	}
}

// A bounded poll reads no frame that begins at or after its limit, reads a frame that
// begins before it whole, and still stops at the fragment limit.
func TestBoundedPollStopsInFrontOfItsLimit(t *testing.T) {
	l := newTestLog(t, testParams())
	offerAll(t, l, "a", "b", "c") // frames at 0, 64 and 128
	var c collector
	for _, step := range []struct {
		from, limitPosition int64
		fragmentLimit       int
		n                   int
		next                int64
	}{
		{0, 0, noLimit, 0, 0},
		{0, -64, noLimit, 0, 0},
		{0, 1, noLimit, 1, 64},
		{64, 128, noLimit, 1, 128},
		{128, math.MaxInt64, 0, 0, 128},
		{128, math.MaxInt64, noLimit, 1, 192},
	} {
		n, next, err := l.BoundedPoll(step.from, step.limitPosition, step.fragmentLimit, c.onFragment, nil)
		if err != nil || n != step.n || next != step.next {
			t.Errorf("BoundedPoll(%d, %d, %d) = %d, %d, %v; want %d, %d", step.from, step.limitPosition,
				step.fragmentLimit, n, next, err, step.n, step.next)
		}
	}
	if !slices.Equal(c.got, []string{"a@64", "b@128", "c@192"}) {
		t.Errorf("got %q", c.got)
	}
}

// A frame whose length is still negative (being written) or zero (clean
// space) ends the poll without an error; it is delivered once published.
func TestPollStopsAtUnpublishedFrame(t *testing.T) {
	l := newTestLog(t, testParams())
	a := offerAll(t, l, "a")
	frame := l.Term(0).Sub(64, HeaderLength+1)
	a.beginFrame(frame, 64, HeaderLength+1, FlagsUnfragmented, FrameTypeData)
	l.Term(0).PutUint8(64+HeaderLength, 'b')

	var c collector
	n, next, err := l.Poll(0, noLimit, c.onFragment)
	if err != nil || n != 1 || next != 64 {
		t.Fatalf("Poll = %d, %d, %v; want 1, 64", n, next, err)
	}
	publishFrame(frame, HeaderLength+1)
	n, next, err = l.Poll(next, noLimit, c.onFragment)
	if err != nil || n != 1 || next != 128 {
		t.Fatalf("Poll after publish = %d, %d, %v; want 1, 128", n, next, err)
	}
	if !slices.Equal(c.got, []string{"a@64", "b@128"}) {
		t.Errorf("got %q", c.got)
	}
}

// Padding is consumed without a fragment, and a poll never goes past the
// end of its term even when the next term has frames.
func TestPollSkipsPaddingAndStopsAtTermEnd(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	fillTo(t, a, testTermLength-128)
	mustOffer(t, a, openFlow, []byte("last"))
	if r := mustOffer(t, a, openFlow, make([]byte, 100)); r != AdminAction {
		t.Fatalf("offer = %v, want ADMIN_ACTION", r)
	}
	mustOffer(t, a, openFlow, []byte("next term"))

	var c collector
	n, next, err := l.Poll(testTermLength-128, noLimit, c.onFragment)
	if err != nil || n != 1 || next != testTermLength {
		t.Fatalf("Poll = %d, %d, %v; want 1 fragment and position %d", n, next, err, testTermLength)
	}
	// Padding alone: no fragment, but the position moves to the boundary.
	n, next, err = l.Poll(testTermLength-64, noLimit, c.onFragment)
	if err != nil || n != 0 || next != testTermLength {
		t.Fatalf("Poll(padding) = %d, %d, %v; want 0 fragments and position %d", n, next, err, testTermLength)
	}
	n, next, err = l.Poll(next, noLimit, c.onFragment)
	if err != nil || n != 1 || next != testTermLength+64 {
		t.Fatalf("Poll(next term) = %d, %d, %v", n, next, err)
	}
	want := []string{fmt.Sprintf("last@%d", testTermLength-64), fmt.Sprintf("next term@%d", testTermLength+64)}
	if !slices.Equal(c.got, want) {
		t.Errorf("got %q, want %q", c.got, want)
	}
}

func TestPollRejectsInvalidPositions(t *testing.T) {
	l := newTestLog(t, testParams())
	for _, pos := range []int64{-32, -1, 1, 33, MaxPossiblePosition(testTermLength), math.MaxInt64} {
		called := false
		n, next, err := l.Poll(pos, noLimit, func([]byte, Header) { called = true })
		if !errors.Is(err, ErrInvalidPosition) || n != 0 || next != pos || called {
			t.Errorf("Poll(%d) = %d, %d, %v", pos, n, next, err)
		}
		_, _, err = l.ControlledPoll(pos, noLimit, func([]byte, Header) Action { return Continue }, nil, nil)
		if !errors.Is(err, ErrInvalidPosition) {
			t.Errorf("ControlledPoll(%d) = %v", pos, err)
		}
	}
}

// Published lengths that no writer produces are typed errors: fragments
// before them are delivered and the position stops in front of them.
func TestPollReportsCorruptFrameLengths(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int
		length int32
		ok     bool
	}{
		{"shorter than a header", 64, 1, false},
		{"one byte short of a header", 64, HeaderLength - 1, false},
		{"header only", 64, HeaderLength, true},
		{"past the term end", testTermLength - 64, 65, false},
		{"exactly to the term end", testTermLength - 64, 64, true},
		{"unaligned to the term end", testTermLength - 64, 33, true},
		{"huge", 64, math.MaxInt32, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLog(t, testParams())
			a := newTestAppender(t, l)
			fillTo(t, a, tc.offset)
			term := l.Term(0)
			term.PutUint16(tc.offset+TypeOffset, uint16(FrameTypeData))
			term.StoreInt32(tc.offset, tc.length)

			var c collector
			n, next, err := l.Poll(0, noLimit, c.onFragment)
			before := tc.offset / testMTU
			if tc.offset%testMTU != 0 {
				before++
			}
			if tc.ok {
				if err != nil || n != before+1 || next != int64(tc.offset+align(int(tc.length), FrameAlignment)) {
					t.Errorf("Poll = %d, %d, %v", n, next, err)
				}
				return
			}
			ce := asCorrupt(t, err)
			if ce.Position != int64(tc.offset) || ce.FrameLength != tc.length || n != before || next != int64(tc.offset) {
				t.Errorf("Poll = %d, %d, %v", n, next, err)
			}
			if n, next2, err := l.ControlledPoll(next, noLimit, func([]byte, Header) Action { return Continue }, nil, nil); n != 0 || next2 != next || !errors.Is(err, ErrCorrupt) {
				t.Errorf("ControlledPoll at the corrupt frame = %d, %d, %v", n, next2, err)
			}
		})
	}
}

func TestControlledPollActions(t *testing.T) {
	type step struct {
		from      int64
		actions   []Action // per delivered fragment, Continue after the end
		n         int
		next      int64
		commits   []int64
		delivered int
		err       error
	}
	for _, tc := range []struct {
		name string
		step step
	}{
		{"continue", step{0, nil, 5, 320, nil, 5, nil}},
		{"abort first", step{0, []Action{Abort}, 0, 0, nil, 1, nil}},
		{"abort third", step{0, []Action{Continue, Continue, Abort}, 2, 128, nil, 3, nil}},
		{"break second", step{0, []Action{Continue, Break}, 2, 128, nil, 2, nil}},
		{"commit", step{0, []Action{Commit, Continue, Commit}, 5, 320, []int64{64, 192}, 5, nil}},
		{"commit then abort", step{64, []Action{Commit, Continue, Abort}, 2, 192, []int64{128}, 3, nil}},
		{"invalid", step{0, []Action{Continue, Action(42)}, 2, 128, nil, 2, ErrInvalidAction}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLog(t, testParams())
			offerAll(t, l, "0", "1", "2", "3", "4")
			s := tc.step
			var commits []int64
			delivered := 0
			n, next, err := l.ControlledPoll(s.from, noLimit, func(payload []byte, h Header) Action {
				delivered++
				if i := delivered - 1; i < len(s.actions) {
					return s.actions[i]
				}
				return Continue
			}, func(pos int64) { commits = append(commits, pos) }, nil)
			if n != s.n || next != s.next || !errors.Is(err, s.err) || (s.err == nil) != (err == nil) {
				t.Errorf("ControlledPoll = %d, %d, %v; want %d, %d, %v", n, next, err, s.n, s.next, s.err)
			}
			if !slices.Equal(commits, s.commits) || delivered != s.delivered {
				t.Errorf("commits %v, delivered %d; want %v, %d", commits, delivered, s.commits, s.delivered)
			}
		})
	}
}

// Aborting redelivers the same fragment on the next poll; a nil commit
// function is allowed.
func TestControlledPollAbortRedelivers(t *testing.T) {
	l := newTestLog(t, testParams())
	offerAll(t, l, "x", "y")
	var seen []string
	abortNext := true
	pos := int64(0)
	for range 4 {
		_, next, err := l.ControlledPoll(pos, 1, func(payload []byte, h Header) Action {
			seen = append(seen, string(payload))
			if abortNext {
				abortNext = false
				return Abort
			}
			abortNext = true
			return Commit
		}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		pos = next
	}
	if !slices.Equal(seen, []string{"x", "x", "y", "y"}) || pos != 128 {
		t.Errorf("seen %q, position %d", seen, pos)
	}
}

// A poll whose stop flag is set by a handler (the image closed under it) reads no frame
// after that one: it returns the fragments delivered and the position after them. A flag
// already set reads nothing.
func TestPollsStopBeforeTheNextFrameOnceClosed(t *testing.T) {
	l := newTestLog(t, testParams())
	offerAll(t, l, "a", "b", "c")
	var closed atomic.Bool
	var seen []string
	n, next, err := l.BoundedPoll(0, l.MaxPossiblePosition(), noLimit, func(payload []byte, _ Header) {
		seen = append(seen, string(payload))
		closed.Store(true)
	}, &closed)
	if n != 1 || next != 64 || err != nil || !slices.Equal(seen, []string{"a"}) {
		t.Errorf("BoundedPoll = %d, %d, %v, delivering %q; want 1, 64, nil, delivering a", n, next, err, seen)
	}
	if n, next, err := l.BoundedPoll(next, l.MaxPossiblePosition(), noLimit, func([]byte, Header) { t.Error("delivered after the close") }, &closed); n != 0 || next != 64 || err != nil {
		t.Errorf("BoundedPoll once closed = %d, %d, %v; want 0, 64, nil", n, next, err)
	}

	closed.Store(false)
	seen = nil
	n, next, err = l.ControlledPoll(64, noLimit, func(payload []byte, _ Header) Action {
		seen = append(seen, string(payload))
		closed.Store(true)
		return Continue
	}, nil, &closed)
	if n != 1 || next != 128 || err != nil || !slices.Equal(seen, []string{"b"}) {
		t.Errorf("ControlledPoll = %d, %d, %v, delivering %q; want 1, 128, nil, delivering b", n, next, err, seen)
	}
	if n, next, err := l.ControlledPoll(next, noLimit, func([]byte, Header) Action { t.Error("delivered after the close"); return Continue }, nil, &closed); n != 0 || next != 128 || err != nil {
		t.Errorf("ControlledPoll once closed = %d, %d, %v; want 0, 128, nil", n, next, err)
	}
}
