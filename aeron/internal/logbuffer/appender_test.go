package logbuffer

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

var openFlow = Flow{Limit: math.MaxInt64, Connected: true}

// frameAt decodes the header of the frame at off in term i.
func frameAt(tb testing.TB, l *Log, i, off int) FrameHeader {
	tb.Helper()
	h, err := DecodeFrameHeader(l.Term(i).Sub(off, HeaderLength).Bytes())
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

func mustOffer(tb testing.TB, a *ExclusiveAppender, flow Flow, payload []byte) OfferResult {
	tb.Helper()
	r, err := a.Offer(flow, payload)
	if err != nil {
		tb.Fatalf("Offer(%d bytes): %v", len(payload), err)
	}
	return r
}

func TestOfferWritesOneFrame(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	if r := mustOffer(t, a, openFlow, []byte("hello")); r != 64 {
		t.Fatalf("first offer = %v, want position 64", r)
	}
	r, err := a.OfferWithReservedValue(openFlow, []byte("world!"), 0x1122334455667788)
	if err != nil || r != 128 {
		t.Fatalf("second offer = %v, %v, want position 128", r, err)
	}

	first := frameAt(t, l, 0, 0)
	want := FrameHeader{FrameLength: 37, Flags: FlagsUnfragmented, Type: FrameTypeData,
		SessionID: testSessionID, StreamID: testStreamID, TermID: 7}
	if first != want {
		t.Errorf("first frame %+v, want %+v", first, want)
	}
	second := frameAt(t, l, 0, 64)
	want = FrameHeader{FrameLength: 38, Flags: FlagsUnfragmented, Type: FrameTypeData, TermOffset: 64,
		SessionID: testSessionID, StreamID: testStreamID, TermID: 7, ReservedValue: 0x1122334455667788}
	if second != want {
		t.Errorf("second frame %+v, want %+v", second, want)
	}
	if got := l.Term(0).Sub(HeaderLength, 5).Bytes(); string(got) != "hello" {
		t.Errorf("payload %q", got)
	}
	if got := l.RawTail(0); got != PackRawTail(7, 128) {
		t.Errorf("tail %v, want 7:128", got)
	}
	if a.Position() != 128 {
		t.Errorf("Position = %d, want 128", a.Position())
	}
}

func TestOfferFragmentsLongMessages(t *testing.T) {
	for _, tc := range []struct {
		name    string
		length  int
		lengths []int32 // frame lengths
		flags   []Flags
	}{
		{"max payload is one frame", testMaxPayload, []int32{testMTU}, []Flags{FlagsUnfragmented}},
		{"one byte more is two", testMaxPayload + 1, []int32{testMTU, HeaderLength + 1}, []Flags{FlagBegin, FlagEnd}},
		{"exact multiple", 3 * testMaxPayload, []int32{testMTU, testMTU, testMTU}, []Flags{FlagBegin, 0, FlagEnd}},
		{"with remainder", 3*testMaxPayload + 100, []int32{testMTU, testMTU, testMTU, HeaderLength + 100}, []Flags{FlagBegin, 0, 0, FlagEnd}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLog(t, testParams())
			a := newTestAppender(t, l)
			msg := make([]byte, tc.length)
			for i := range msg {
				msg[i] = byte(i * 7)
			}
			r := mustOffer(t, a, openFlow, msg)

			off := 0
			var got []byte
			for i, length := range tc.lengths {
				h := frameAt(t, l, 0, off)
				if h.FrameLength != length || h.Flags != tc.flags[i] || h.TermOffset != int32(off) || h.Type != FrameTypeData {
					t.Errorf("fragment %d: %+v, want length %d flags %v offset %d", i, h, length, tc.flags[i], off)
				}
				got = append(got, l.Term(0).Sub(off+HeaderLength, int(length)-HeaderLength).Bytes()...)
				off += align(int(length), FrameAlignment)
			}
			if !bytes.Equal(got, msg) {
				t.Error("fragments do not carry the message")
			}
			if r != OfferResult(off) {
				t.Errorf("offer = %v, want position %d", r, off)
			}
			if len(tc.lengths) > 1 && fragmentedFrameLength(tc.length, testMaxPayload) != off {
				t.Errorf("fragmentedFrameLength = %d, want %d", fragmentedFrameLength(tc.length, testMaxPayload), off)
			}
			if h := frameAt(t, l, 0, off); h.FrameLength != 0 {
				t.Errorf("frame after the message has length %d", h.FrameLength)
			}
		})
	}
}

func TestOfferRefusesMessagesLongerThanMax(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	if a.MaxMessageLength() != testTermLength/8 || a.MaxPayloadLength() != testMaxPayload {
		t.Fatalf("max message %d, max payload %d", a.MaxMessageLength(), a.MaxPayloadLength())
	}
	if r := mustOffer(t, a, openFlow, make([]byte, a.MaxMessageLength())); !r.IsPosition() {
		t.Fatalf("max-length offer = %v", r)
	}
	before := a.Position()
	r, err := a.Offer(openFlow, make([]byte, a.MaxMessageLength()+1))
	if !errors.Is(err, ErrMessageTooLong) || r != 0 || a.Position() != before {
		t.Errorf("too long offer = %v, %v; position %d → %d", r, err, before, a.Position())
	}
}

// When a message does not fit, the appender pads the rest of the term,
// rotates and returns AdminAction; the retry lands at the start of the
// next term.
func TestOfferPadsAndRotatesAtTermEnd(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	fillTo(t, a, testTermLength-96)

	if r := mustOffer(t, a, openFlow, make([]byte, 100)); r != AdminAction {
		t.Fatalf("offer at term end = %v, want ADMIN_ACTION", r)
	}
	pad := frameAt(t, l, 0, testTermLength-96)
	want := FrameHeader{FrameLength: 96, Flags: FlagsUnfragmented, Type: FrameTypePad, TermOffset: testTermLength - 96,
		SessionID: testSessionID, StreamID: testStreamID, TermID: 7}
	if pad != want {
		t.Errorf("padding %+v, want %+v", pad, want)
	}
	if got, want := l.RawTail(0), PackRawTail(7, testTermLength-96+160); got != want {
		t.Errorf("old tail %v, want %v (bumped past the end)", got, want)
	}
	if got, want := l.RawTail(1), PackRawTail(8, 0); got != want {
		t.Errorf("next tail %v, want %v", got, want)
	}
	if got := l.ActiveTermCount(); got != 1 {
		t.Errorf("active term count %d, want 1", got)
	}
	if a.Position() != testTermLength {
		t.Errorf("Position = %d, want %d", a.Position(), testTermLength)
	}

	if r := mustOffer(t, a, openFlow, make([]byte, 100)); r != testTermLength+160 {
		t.Fatalf("retry = %v, want position %d", r, testTermLength+160)
	}
	if h := frameAt(t, l, 1, 0); h.FrameLength != 132 || h.TermID != 8 || h.TermOffset != 0 {
		t.Errorf("first frame of the next term: %+v", h)
	}
}

// A fragmented message may end exactly at the end of the term: it is
// appended without padding, and the next offer rotates without writing
// any.
func TestFragmentedMessageEndingExactlyAtTermEnd(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	const length = 3*testMaxPayload + 100
	framed := fragmentedFrameLength(length, testMaxPayload)
	fillTo(t, a, testTermLength-framed)

	if r := mustOffer(t, a, openFlow, make([]byte, length)); r != testTermLength {
		t.Fatalf("offer = %v, want position %d", r, testTermLength)
	}
	last := frameAt(t, l, 0, testTermLength-align(HeaderLength+100, FrameAlignment))
	if last.Flags != FlagEnd || last.FrameLength != HeaderLength+100 {
		t.Errorf("last fragment %+v", last)
	}
	if got := l.RawTail(0); got != PackRawTail(7, testTermLength) {
		t.Errorf("tail %v", got)
	}

	if r := mustOffer(t, a, openFlow, []byte{1}); r != AdminAction {
		t.Fatalf("offer after a full term = %v, want ADMIN_ACTION", r)
	}
	if last2 := frameAt(t, l, 0, testTermLength-align(HeaderLength+100, FrameAlignment)); last2 != last {
		t.Errorf("last fragment overwritten: %+v", last2)
	}
	if r := mustOffer(t, a, openFlow, []byte{1}); r != testTermLength+2*FrameAlignment {
		t.Errorf("offer in the next term = %v", r)
	}
}

func TestOfferBackPressureStatus(t *testing.T) {
	l := newTestLog(t, testParams())
	a := newTestAppender(t, l)
	mustOffer(t, a, openFlow, make([]byte, 10))
	pos := a.Position()

	if r := mustOffer(t, a, Flow{Limit: pos, Connected: true}, []byte{1}); r != BackPressured {
		t.Errorf("offer at the limit, connected = %v", r)
	}
	if r := mustOffer(t, a, Flow{Limit: pos - 32, Connected: false}, []byte{1}); r != NotConnected {
		t.Errorf("offer beyond the limit, not connected = %v", r)
	}
	if a.Position() != pos || l.RawTail(0) != PackRawTail(7, int(pos)) {
		t.Error("a refused offer moved the position or the tail")
	}
	// One byte below the limit is enough to append a whole message.
	if r := mustOffer(t, a, Flow{Limit: pos + 1, Connected: false}, make([]byte, 1000)); r != OfferResult(pos+1056) {
		t.Errorf("offer just below the limit = %v, want position %d", r, pos+1056)
	}
}

func TestOfferMaxPositionExceeded(t *testing.T) {
	p := testParams()
	maxPosition := MaxPossiblePosition(p.TermLength)
	p.StartPosition = maxPosition - 96 // in the last possible term
	l := newTestLog(t, p)
	a := newTestAppender(t, l)
	if a.Position() != p.StartPosition {
		t.Fatalf("Position = %d, want %d", a.Position(), p.StartPosition)
	}

	// Back-pressured, but the message could never fit anyway.
	if r := mustOffer(t, a, Flow{Limit: p.StartPosition}, make([]byte, 64)); r != MaxPositionExceeded {
		t.Errorf("back-pressured offer past the maximum = %v", r)
	}
	if r := mustOffer(t, a, Flow{Limit: p.StartPosition}, make([]byte, 32)); r != NotConnected {
		t.Errorf("back-pressured offer that would fit = %v", r)
	}
	// Still fits: ends one frame before the maximum.
	if r := mustOffer(t, a, openFlow, make([]byte, 32)); r != OfferResult(maxPosition-32) {
		t.Errorf("offer = %v, want position %d", r, maxPosition-32)
	}
	// Does not fit in the last term: padded, but no rotation, every time.
	for range 2 {
		if r := mustOffer(t, a, openFlow, make([]byte, 1)); r != MaxPositionExceeded {
			t.Errorf("offer past the last term = %v, want MAX_POSITION_EXCEEDED", r)
		}
	}
	term := PartitionIndexByPosition(maxPosition-32, l.PositionBitsToShift())
	if h := frameAt(t, l, term, testTermLength-32); h.Type != FrameTypePad || h.FrameLength != 32 {
		t.Errorf("last frame %+v, want 32 bytes of padding", h)
	}
}

func TestOfferAfterCloseReturnsClosed(t *testing.T) {
	a := newTestAppender(t, newTestLog(t, testParams()))
	a.Close()
	if !a.IsClosed() {
		t.Error("IsClosed = false after Close")
	}
	if r := mustOffer(t, a, openFlow, []byte{1}); r != Closed {
		t.Errorf("offer after Close = %v", r)
	}
	if r, err := a.Offer(openFlow, make([]byte, 1<<20)); r != Closed || err != nil {
		t.Errorf("too-long offer after Close = %v, %v; want CLOSED", r, err)
	}
}

// The appender picks up where the log's active tail says, including after
// term ids wrapped.
func TestAppenderResumesFromTail(t *testing.T) {
	p := testParams()
	p.InitialTermID = math.MaxInt32 - 1
	p.StartPosition = 4*int64(p.TermLength) + 1024
	l := newTestLog(t, p)
	a := newTestAppender(t, l)
	if a.Position() != p.StartPosition || a.SessionID() != testSessionID || a.StreamID() != testStreamID {
		t.Fatalf("Position %d, session %d, stream %d", a.Position(), a.SessionID(), a.StreamID())
	}
	mustOffer(t, a, openFlow, []byte{1, 2, 3})
	h := frameAt(t, l, 1, 1024)
	if h.TermID != math.MinInt32+2 || h.TermOffset != 1024 || h.FrameLength != HeaderLength+3 {
		t.Errorf("frame %+v, want term id %d at 1024", h, math.MinInt32+2)
	}
}

func TestNewExclusiveAppenderRejectsInconsistentLogs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(l *Log)
		also   error
	}{
		{"mtu", func(l *Log) { l.mtu = 1000 }, ErrInvalidMTU},
		{"tail of another term", func(l *Log) { l.meta.StoreInt64(tailCounterOffset(0), int64(PackRawTail(9, 0))) }, nil},
		{"negative term count", func(l *Log) { l.meta.StoreInt32(activeTermCountOffset, -3) }, nil},
		{"unaligned tail", func(l *Log) { l.meta.StoreInt64(tailCounterOffset(0), int64(PackRawTail(7, 40))) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newTestLog(t, testParams())
			tc.modify(l)
			_, err := NewExclusiveAppender(l)
			if !errors.Is(err, ErrInvalidLog) || (tc.also != nil && !errors.Is(err, tc.also)) {
				t.Errorf("NewExclusiveAppender = %v", err)
			}
		})
	}
}

// fillTo offers messages until the appender is at term offset target in
// its current term (a multiple of FrameAlignment).
func fillTo(tb testing.TB, a *ExclusiveAppender, target int) {
	tb.Helper()
	for a.termOffset < target {
		framed := min(target-a.termOffset, testMTU)
		if r := mustOffer(tb, a, openFlow, make([]byte, framed-HeaderLength)); !r.IsPosition() {
			tb.Fatalf("fill offer = %v", r)
		}
	}
	if a.termOffset != target {
		tb.Fatalf("filled to %d, want %d", a.termOffset, target)
	}
}
