package logbuffer

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fragment is one frame as a poll would deliver it.
type fragment struct {
	payload []byte
	header  Header
}

// split cuts msg into the fragments a publisher with maxPayload writes at
// termOffset of termID, with positions in a 64 KiB-term stream whose
// initial term id is 0.
func split(session, termID int32, termOffset int, maxPayload int, msg string) []fragment {
	var out []fragment
	flags := FlagBegin
	for rest := msg; ; {
		n := min(len(rest), maxPayload)
		if n == len(rest) {
			flags |= FlagEnd
		}
		frameLength := HeaderLength + n
		next := termOffset + align(frameLength, FrameAlignment)
		out = append(out, fragment{
			payload: []byte(rest[:n]),
			header: headerOf(
				FrameHeader{FrameLength: int32(frameLength), Flags: flags, Type: FrameTypeData,
					TermOffset: int32(termOffset), SessionID: session, StreamID: testStreamID, TermID: termID,
					ReservedValue: int64(termOffset)},
				ComputePosition(termID, next, PositionBitsToShift(testTermLength), 0),
			),
		})
		rest, termOffset, flags = rest[n:], next, 0
		if rest == "" {
			return out
		}
	}
}

// messageSink records whole messages as "payload@position" plus the
// headers.
type messageSink struct {
	got     []string
	headers []keptHeader
}

func (s *messageSink) onMessage(payload []byte, h Header) {
	s.got = append(s.got, fmt.Sprintf("%s@%d", payload, h.Position()))
	s.headers = append(s.headers, keep(h))
}

func feed(a *FragmentAssembler, frags ...[]fragment) {
	for _, fs := range frags {
		for _, f := range fs {
			a.OnFragment(f.payload, f.header)
		}
	}
}

func TestAssemblerReassemblesFragments(t *testing.T) {
	var sink messageSink
	a := NewFragmentAssembler(1024, sink.onMessage)
	frags := split(1, 3, 256, 4, "0123456789")
	if len(frags) != 3 {
		t.Fatalf("%d fragments", len(frags))
	}
	feed(a, frags, split(1, 3, 448, 4, "ok"))

	last := frags[2].header
	if !slices.Equal(sink.got, []string{fmt.Sprintf("0123456789@%d", last.Position()), fmt.Sprintf("ok@%d", 3*testTermLength+512)}) {
		t.Fatalf("got %q", sink.got)
	}
	want := keptHeader{
		FrameHeader: FrameHeader{FrameLength: HeaderLength + 10, Flags: FlagsUnfragmented, Type: FrameTypeData,
			TermOffset: 256, SessionID: 1, StreamID: testStreamID, TermID: 3, ReservedValue: 256},
		Position: last.Position(),
	}
	if sink.headers[0] != want {
		t.Errorf("assembled header %v, want %v", sink.headers[0], want)
	}
	if got := a.Stats(); got != (AssemblerStats{Delivered: 2}) {
		t.Errorf("stats %+v", got)
	}
}

// Sessions are reassembled independently, even interleaved.
func TestAssemblerKeepsSessionsApart(t *testing.T) {
	var sink messageSink
	a := NewFragmentAssembler(1024, sink.onMessage)
	x := split(1, 0, 0, 4, "xxxxyyyyzz")
	y := split(2, 0, 0, 4, "aaaabbbbcc")
	for i := range x {
		feed(a, x[i:i+1], y[i:i+1])
	}
	if len(sink.got) != 2 || !strings.HasPrefix(sink.got[0], "xxxxyyyyzz@") || !strings.HasPrefix(sink.got[1], "aaaabbbbcc@") {
		t.Errorf("got %q", sink.got)
	}
}

func TestAssemblerDropsBrokenMessages(t *testing.T) {
	frags := split(1, 0, 0, 4, "0123456789ab") // BEGIN, middle, END at 0, 64, 128
	for _, tc := range []struct {
		name  string
		input [][]fragment
		got   []string
		stats AssemblerStats
	}{
		{"missing middle", [][]fragment{frags[:1], frags[2:]}, nil, AssemblerStats{Discarded: 1, Orphaned: 1}},
		{"joined mid-message", [][]fragment{frags[1:]}, nil, AssemblerStats{Orphaned: 2}},
		{"duplicate middle", [][]fragment{frags[:2], frags[1:]}, nil, AssemblerStats{Discarded: 1, Orphaned: 2}},
		{"begin again", [][]fragment{frags[:2], frags}, []string{"0123456789ab"}, AssemblerStats{Delivered: 1, Discarded: 1}},
		{"unfragmented interrupts", [][]fragment{frags[:2], split(1, 0, 128, 4, "u"), frags[2:]}, []string{"u"}, AssemblerStats{Delivered: 1, Discarded: 1, Orphaned: 1}},
		{"same offset, other term", [][]fragment{frags[:2], split(1, 3, 0, 4, "012345678")[2:]}, nil, AssemblerStats{Discarded: 1, Orphaned: 1}},
		{"other session's continuation", [][]fragment{frags[:1], split(2, 0, 0, 4, "0123456789ab")[1:], frags[1:]}, []string{"0123456789ab"}, AssemblerStats{Delivered: 1, Orphaned: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var sink messageSink
			a := NewFragmentAssembler(1024, sink.onMessage)
			feed(a, tc.input...)
			var got []string
			for _, g := range sink.got {
				got = append(got, g[:strings.IndexByte(g, '@')])
			}
			if !slices.Equal(got, tc.got) || a.Stats() != tc.stats {
				t.Errorf("got %q, stats %+v; want %q, %+v", got, a.Stats(), tc.got, tc.stats)
			}
		})
	}
}

// The buffer never grows beyond the maximum message length; a longer
// message is discarded and the next one is assembled.
func TestAssemblerBoundsBufferGrowth(t *testing.T) {
	var sink messageSink
	a := NewFragmentAssembler(10, sink.onMessage)
	feed(a, split(1, 0, 0, 4, "0123456789A"), split(1, 0, 128, 4, "0123456789"), split(1, 0, 256, 100, "a much longer single frame message"))
	if len(sink.got) != 2 || !strings.HasPrefix(sink.got[0], "0123456789@") {
		t.Errorf("got %q", sink.got)
	}
	if got := a.Stats(); got != (AssemblerStats{Delivered: 2, Discarded: 1, Orphaned: 0}) {
		t.Errorf("stats %+v", got)
	}
	if c := cap(a.r.partials[1].buf); c > 10 {
		t.Errorf("buffer capacity %d beyond the maximum 10", c)
	}
	// A BEGIN fragment that alone exceeds the maximum.
	feed(a, split(2, 0, 0, 16, "0123456789ABCDEFG"))
	if got := a.Stats(); got.Discarded != 2 || got.Orphaned != 1 {
		t.Errorf("stats %+v", got)
	}
}

func TestAssemblerFreeSessionAndReset(t *testing.T) {
	var sink messageSink
	a := NewFragmentAssembler(1024, sink.onMessage)
	m1 := split(1, 0, 0, 4, "0123456789")
	m2 := split(2, 0, 0, 4, "0123456789")
	feed(a, m1[:1], m2[:1])
	a.FreeSession(1)
	a.FreeSession(99)
	feed(a, m1[1:])
	if _, ok := a.r.partials[1]; ok {
		t.Error("FreeSession kept the session's buffer")
	}
	a.Reset()
	feed(a, m2[1:])
	if len(sink.got) != 0 || a.Stats() != (AssemblerStats{Discarded: 2, Orphaned: 4}) || len(a.r.partials) != 0 {
		t.Errorf("got %q, stats %+v, %d partials", sink.got, a.Stats(), len(a.r.partials))
	}
}

func TestNewFragmentAssemblerNeedsPositiveMax(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(fmt.Sprint(r), "assertion failed:") {
			t.Errorf("panic %v, want an assertion", r)
		}
	}()
	NewFragmentAssembler(0, func([]byte, Header) {})
}

// The controlled assembler returns the handler's action for the fragment
// that completed a message; on Abort it forgets only that fragment, so
// its redelivery completes the message again.
func TestControlledAssemblerAbortAndRedelivery(t *testing.T) {
	var got []string
	actions := []Action{Abort, Break, Abort, Commit}
	a := NewControlledFragmentAssembler(1024, func(payload []byte, h Header) Action {
		got = append(got, string(payload))
		act := actions[0]
		actions = actions[1:]
		return act
	})
	frags := split(1, 0, 0, 4, "0123456789")
	for _, f := range frags[:2] {
		if act := a.OnFragment(f.payload, f.header); act != Continue {
			t.Fatalf("partial fragment returned %v", act)
		}
	}
	end := frags[2]
	for _, want := range []Action{Abort, Break} {
		if act := a.OnFragment(end.payload, end.header); act != want {
			t.Errorf("END fragment returned %v, want %v", act, want)
		}
	}
	u := split(1, 0, 64, 100, "u")[0]
	for _, want := range []Action{Abort, Commit} {
		if act := a.OnFragment(u.payload, u.header); act != want {
			t.Errorf("unfragmented returned %v, want %v", act, want)
		}
	}
	if !slices.Equal(got, []string{"0123456789", "0123456789", "u", "u"}) {
		t.Errorf("got %q", got)
	}
	if s := a.Stats(); s != (AssemblerStats{Delivered: 2}) {
		t.Errorf("stats %+v", s)
	}
	a.FreeSession(1)
	a.Reset()
}

// Through a real log: a message's fragments delivered one per poll are
// assembled across polls, and the assembled header's position is what
// the offer returned.
func TestAssemblerAcrossPolls(t *testing.T) {
	s := newStream(t, testParams())
	rec := &recorder{tb: t}
	a := NewFragmentAssembler(s.log.MaxMessageLength(), rec.onMessage)
	msg := make([]byte, 4*testMTU)
	for i := range msg {
		msg[i] = byte(i)
	}
	pos := s.offer(msg, 1, a.OnFragment)
	polls := 0
	for s.position < pos {
		if len(rec.msgs) != 0 {
			t.Fatalf("message delivered after %d polls, before its last fragment", polls)
		}
		s.poll(1, a.OnFragment)
		polls++
	}
	if polls != 5 {
		t.Errorf("%d polls, want 5", polls)
	}
	checkMessages(t, rec.msgs, []message{received(msg, pos)})
}

// With ControlledPoll and a handler that aborts every message once and
// commits it the second time, every message is delivered exactly once, in
// order, and no commit runs ahead of the returned position.
func TestControlledAssemblerWithControlledPoll(t *testing.T) {
	s := newStream(t, testParams())
	var got []message
	aborted := map[int64]bool{}
	a := NewControlledFragmentAssembler(s.log.MaxMessageLength(), func(payload []byte, h Header) Action {
		if !aborted[h.Position()] {
			aborted[h.Position()] = true
			return Abort
		}
		got = append(got, received(payload, h.Position()))
		return Commit
	})
	poll := func() {
		var committed int64
		_, next, err := s.log.ControlledPoll(s.position, 3, a.OnFragment, func(p int64) { committed = p }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if committed > next {
			t.Fatalf("committed %d beyond the returned position %d", committed, next)
		}
		s.advance(next)
	}

	var want []message
	for i := range 40 {
		msg := []byte(strings.Repeat(string(rune('a'+i%26)), i*150))
		for {
			r := s.tryOffer(msg)
			if pos, ok := r.Position(); ok {
				want = append(want, received(msg, pos))
				break
			}
			poll()
		}
	}
	for guard := 0; s.position < s.pub.Position(); guard++ {
		if guard > 10000 {
			t.Fatal("no progress")
		}
		poll()
	}
	checkMessages(t, got, want)
	if st := a.Stats(); st.Delivered != uint64(len(want)) || st.Discarded != 0 || st.Orphaned != 0 {
		t.Errorf("stats %+v", st)
	}
}

// A handler that detaches payloads keeps them intact while the assembler
// reassembles the next messages: a reassembled message's buffer is handed
// over, a one-fragment message is copied out of the log.
func TestAssemblerDetachHandsOverPayloads(t *testing.T) {
	var kept [][]byte
	var logViews [][]byte
	var a *FragmentAssembler
	a = NewFragmentAssembler(1024, func(payload []byte, _ Header) {
		owned := a.Detach()
		if !bytes.Equal(owned, payload) {
			t.Errorf("Detach = %q, want the payload %q", owned, payload)
		}
		if again := a.Detach(); again != nil {
			t.Errorf("Detach a second time = %q, want nil", again)
		}
		if len(payload) <= 4 { // split's fragments carry 4 bytes: the message is one
			logViews = append(logViews, payload)
		}
		kept = append(kept, owned)
	})
	feed(a, split(1, 0, 0, 4, "0123456789"), split(1, 0, 192, 4, "ok"), split(1, 0, 256, 4, "abcdefghij"), split(1, 0, 448, 4, "ABCDEFGHIJKL"), split(1, 0, 640, 4, ""))
	for _, v := range logViews {
		for i := range v {
			v[i] = '#' // the log's bytes written again, as a later term would
		}
	}
	want := []string{"0123456789", "ok", "abcdefghij", "ABCDEFGHIJKL", ""}
	if len(kept) != len(want) {
		t.Fatalf("kept %d messages, want %d", len(kept), len(want))
	}
	for i, w := range want {
		if string(kept[i]) != w {
			t.Errorf("kept message %d = %q, want %q: a detached payload was written again", i, kept[i], w)
		}
		if kept[i] == nil {
			t.Errorf("kept message %d is nil, want an empty payload", i)
		}
	}
	if len(logViews) != 2 {
		t.Fatalf("%d one-fragment messages, want 2 (the test's premise)", len(logViews))
	}
	if got := a.Detach(); got != nil {
		t.Errorf("Detach outside a handler call = %q, want nil", got)
	}
	if got := a.Stats(); got != (AssemblerStats{Delivered: 5}) {
		t.Errorf("stats %+v", got)
	}
}

// A handler that detaches every one-fragment message costs the assembler a block per many
// messages, not an allocation per message.
func TestAssemblerCarvesDetachedOneFragmentMessages(t *testing.T) {
	frag := split(1, 0, 0, 1376, string(bytes.Repeat([]byte{'m'}, 1024)))
	var a *FragmentAssembler
	a = NewFragmentAssembler(carveMax, func([]byte, Header) { _ = a.Detach() })
	feed(a, frag)
	allocs := testing.AllocsPerRun(100, func() { feed(a, frag) })
	if allocs >= 1 {
		t.Errorf("%.2f allocations per detached 1 KiB message, want a block per %d messages", allocs, blockSize/1024)
	}
}

// Buffers after a detached one are carved from shared blocks; messages of every size
// around the carving limit, each larger or smaller than the one before, stay intact while
// the next ones are carved and grown next to them.
func TestAssemblerDetachedPayloadsStayIntactAcrossCarvedBlocks(t *testing.T) {
	lengths := []int{100, carveMax, carveMax + 1, 5000, carveMax, 7, 12000, carveMax - 1, 3 * carveMax, 1}
	var want, kept [][]byte
	var a *FragmentAssembler
	a = NewFragmentAssembler(4*carveMax, func(payload []byte, h Header) {
		kept = append(kept, a.Detach())
	})
	for i := range 8 * blockSize / carveMax { // enough to use up several blocks
		msg := make([]byte, lengths[i%len(lengths)])
		for j := range msg {
			msg[j] = byte(i*31 + j)
		}
		want = append(want, msg)
		feed(a, split(1, int32(i), 0, 1376, string(msg)))
	}
	if len(kept) != len(want) {
		t.Fatalf("kept %d messages, want %d", len(kept), len(want))
	}
	for i := range want {
		if !bytes.Equal(kept[i], want[i]) {
			t.Fatalf("kept message %d (%d bytes) differs from what was sent: a later message was written into its buffer", i, len(want[i]))
		}
	}
}

// A handler that detaches every message of a steady stream costs the assembler a block per
// many messages, not an allocation per message.
func TestAssemblerCarvesTheBuffersAfterADetachedOne(t *testing.T) {
	msg := string(bytes.Repeat([]byte{'m'}, 4096))
	termID := int32(0)
	var a *FragmentAssembler
	a = NewFragmentAssembler(carveMax, func([]byte, Header) { _ = a.Detach() })
	frags := func() []fragment { termID++; return split(1, termID, 0, 1376, msg) }
	feed(a, frags()) // the first message's buffer is allocated as it grows
	batch := make([][]fragment, 100)
	for i := range batch {
		batch[i] = frags()
	}
	i := 0
	allocs := testing.AllocsPerRun(len(batch)-1, func() { feed(a, batch[i]); i++ })
	if allocs >= 1 {
		t.Errorf("%.2f allocations per detached 4 KiB message, want a block per %d messages", allocs, blockSize/4096)
	}
}

// An image poll delivers again the fragment a handler panicked on (and only that one):
// when that fragment completed a message, its redelivery must complete the same message,
// for both assemblers, with nothing counted discarded. A handler that detached the buffer
// before it panicked has taken the message: the assembler cannot restore it, and counts it
// discarded (and the redelivered last fragment orphaned) rather than deliver its tail alone.
func TestAssemblersDeliverTheSameMessageAfterAHandlerPanicked(t *testing.T) {
	const msg = "0123456789"
	frags := split(1, 0, 0, 4, msg)
	end := frags[len(frags)-1]
	panicsOnce := func(payload []byte, got *[]string, panicked *bool) {
		*got = append(*got, string(payload))
		if !*panicked {
			*panicked = true
			panic("handler bug")
		}
	}
	// deliver calls onFragment and recovers the handler's panic.
	deliver := func(onFragment func()) {
		defer func() {
			if r := recover(); r != nil && r != "handler bug" {
				panic(r)
			}
		}()
		onFragment()
	}

	for _, detach := range []bool{false, true} {
		var got []string
		panicked := false
		var a *FragmentAssembler
		a = NewFragmentAssembler(1024, func(payload []byte, _ Header) {
			if detach && !panicked {
				payload = a.Detach()
			}
			panicsOnce(payload, &got, &panicked)
		})
		feed(a, frags[:len(frags)-1])
		deliver(func() { a.OnFragment(end.payload, end.header) })
		deliver(func() { a.OnFragment(end.payload, end.header) })
		wantGot, wantStats := []string{msg, msg}, AssemblerStats{Delivered: 1}
		if detach {
			wantGot, wantStats = []string{msg}, AssemblerStats{Discarded: 1, Orphaned: 1}
		}
		if !slices.Equal(got, wantGot) || a.Stats() != wantStats {
			t.Errorf("FragmentAssembler (detach %v): delivered %q, stats %+v; want %q, %+v", detach, got, a.Stats(), wantGot, wantStats)
		}
	}

	var got []string
	panicked := false
	a := NewControlledFragmentAssembler(1024, func(payload []byte, _ Header) Action {
		panicsOnce(payload, &got, &panicked)
		return Continue
	})
	for _, f := range frags[:len(frags)-1] {
		a.OnFragment(f.payload, f.header)
	}
	deliver(func() { a.OnFragment(end.payload, end.header) })
	deliver(func() { a.OnFragment(end.payload, end.header) })
	if !slices.Equal(got, []string{msg, msg}) || a.Stats() != (AssemblerStats{Delivered: 1}) {
		t.Errorf("ControlledFragmentAssembler: delivered %q, stats %+v; want the message twice, 1 delivered", got, a.Stats())
	}
}

// Reassembling costs no allocation per message once a session's buffer has grown, for
// either assembler: the guard that undoes a message's last fragment if the handler panics
// included.
func TestAssemblersReassembleWithoutAllocating(t *testing.T) {
	frags := split(1, 0, 0, 4, "0123456789")
	a := NewFragmentAssembler(1024, func([]byte, Header) {})
	feed(a, frags)
	if n := testing.AllocsPerRun(100, func() { feed(a, frags) }); n != 0 {
		t.Errorf("FragmentAssembler: %v allocations per message; want 0", n)
	}
	c := NewControlledFragmentAssembler(1024, func([]byte, Header) Action { return Continue })
	feedControlled := func() {
		for _, f := range frags {
			c.OnFragment(f.payload, f.header)
		}
	}
	feedControlled()
	if n := testing.AllocsPerRun(100, feedControlled); n != 0 {
		t.Errorf("ControlledFragmentAssembler: %v allocations per message; want 0", n)
	}
	if a.Stats().Delivered != 102 || c.Stats().Delivered != 102 {
		t.Fatalf("delivered %d and %d messages; want 102 each", a.Stats().Delivered, c.Stats().Delivered)
	}
}
