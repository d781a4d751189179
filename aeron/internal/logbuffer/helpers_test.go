package logbuffer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Test defaults: the smallest term, so that streams rotate often, and
// Aeron's default MTU.
const (
	testTermLength     = MinTermLength
	testMTU            = 1408
	testMaxPayload     = testMTU - HeaderLength
	testSessionID      = 0x5e55
	testStreamID       = 1001
	testRegistrationID = 77
)

func testParams() LogParams {
	return LogParams{
		TermLength:     testTermLength,
		PageSize:       MinPageSize,
		MTU:            testMTU,
		InitialTermID:  7,
		SessionID:      testSessionID,
		StreamID:       testStreamID,
		RegistrationID: testRegistrationID,
	}
}

// newTestLog builds a log in plain memory, initialised as the driver
// would, and wraps it.
func newTestLog(tb testing.TB, p LogParams) *Log {
	tb.Helper()
	b := shm.Alloc(LogLength(p.TermLength, p.PageSize))
	if err := InitMetadata(b, p); err != nil {
		tb.Fatalf("InitMetadata: %v", err)
	}
	l, err := Wrap(b)
	if err != nil {
		tb.Fatalf("Wrap: %v", err)
	}
	return l
}

func newTestAppender(tb testing.TB, l *Log) *ExclusiveAppender {
	tb.Helper()
	a, err := NewExclusiveAppender(l)
	if err != nil {
		tb.Fatalf("NewExclusiveAppender: %v", err)
	}
	return a
}

// The stream and recorder helpers run once per message or poll, so they
// call Helper only on their failure paths: it is costly under -race.

// stream couples an appender and a subscriber position on one log and
// plays the driver between them: the publication limit is the subscriber
// position plus a window, and term space behind the subscriber is zeroed
// before the limit lets the appender reuse it (IpcPublication.cleanBufferTo).
type stream struct {
	tb       testing.TB
	log      *Log
	pub      *ExclusiveAppender
	position int64 // subscriber position
	cleaned  int64 // term space below this position is zeroed
	window   int64
}

func newStream(tb testing.TB, p LogParams) *stream {
	tb.Helper()
	l := newTestLog(tb, p)
	return &stream{
		tb:       tb,
		log:      l,
		pub:      newTestAppender(tb, l),
		position: p.StartPosition,
		cleaned:  p.StartPosition,
		window:   int64(p.TermLength / 2), // Aeron's default term window
	}
}

func (s *stream) flow() Flow {
	return Flow{Limit: s.position + s.window, Connected: true}
}

// tryOffer offers msg once, retrying only on AdminAction.
func (s *stream) tryOffer(msg []byte) OfferResult {
	for {
		r, err := s.pub.Offer(s.flow(), msg)
		if err != nil {
			s.tb.Helper()
			s.tb.Fatalf("Offer(%d bytes): %v", len(msg), err)
		}
		if r != AdminAction {
			return r
		}
	}
}

// offer appends msg, polling with pollLimit and handler whenever the
// appender is back-pressured, and returns the position after msg.
func (s *stream) offer(msg []byte, pollLimit int, handler FragmentHandler) int64 {
	for {
		r := s.tryOffer(msg)
		if p, ok := r.Position(); ok {
			return p
		}
		if r != BackPressured {
			s.tb.Helper()
			s.tb.Fatalf("Offer(%d bytes) at position %d = %v", len(msg), s.pub.Position(), r)
		}
		s.poll(pollLimit, handler)
	}
}

// poll polls once from the subscriber position, then moves it and cleans
// behind it. It fails the test on any error.
func (s *stream) poll(fragmentLimit int, handler FragmentHandler) int {
	n, next, err := s.log.Poll(s.position, fragmentLimit, handler)
	if err != nil {
		s.tb.Helper()
		s.tb.Fatalf("Poll(%d, %d): %v", s.position, fragmentLimit, err)
	}
	s.advance(next)
	return n
}

// drain polls until the subscriber has caught up with the appender.
func (s *stream) drain(fragmentLimit int, handler FragmentHandler) {
	for guard := 0; s.position < s.pub.Position(); guard++ {
		if guard > 1<<24 {
			s.tb.Helper()
			s.tb.Fatalf("drain: stuck at %d, appender at %d", s.position, s.pub.Position())
		}
		s.poll(fragmentLimit, handler)
	}
}

func (s *stream) advance(next int64) {
	if next < s.position || next%FrameAlignment != 0 {
		s.tb.Helper()
		s.tb.Fatalf("position moved from %d to %d", s.position, next)
	}
	s.position = next
	s.clean()
}

// clean zeroes the term space between the cleaned mark and the
// subscriber position.
func (s *stream) clean() {
	zeroTerms(s.log, s.cleaned, s.position)
	s.cleaned = s.position
}

// zeroTerms zeroes the term space of positions [from, to), partition by
// partition, as the driver cleans behind the slowest subscriber.
func zeroTerms(l *Log, from, to int64) {
	termLength := l.TermLength()
	for from < to {
		off := TermOffsetFromPosition(from, termLength)
		n := int(min(to-from, int64(termLength-off)))
		term := l.Term(PartitionIndexByPosition(from, l.PositionBitsToShift()))
		clear(term.Sub(off, n).Bytes())
		from += int64(n)
	}
}

// message is what a test expects to receive: a message's length and
// checksum, and the position after it.
type message struct {
	length   int
	crc      uint32
	position int64
}

func (m message) String() string {
	return fmt.Sprintf("{len %d crc %#08x position %d}", m.length, m.crc, m.position)
}

func received(payload []byte, position int64) message {
	return message{length: len(payload), crc: crc32.ChecksumIEEE(payload), position: position}
}

// headerOf returns a Header viewing its own encoding of f, as a poll hands
// a fragment's on.
func headerOf(f FrameHeader, position int64) Header {
	return Header{frame: (*[HeaderLength]byte)(f.AppendTo(nil)), position: position}
}

// keptHeader is what a test keeps of a Header beyond the handler call.
type keptHeader struct {
	FrameHeader
	Position int64
}

func keep(h Header) keptHeader { return keptHeader{h.Frame(), h.Position()} }

// recorder collects whole messages and checks each header's session,
// stream and length.
type recorder struct {
	tb   testing.TB
	msgs []message
}

func (r *recorder) onMessage(payload []byte, h Header) {
	if h.SessionID() != testSessionID || h.StreamID() != testStreamID || h.Type() != FrameTypeData {
		r.tb.Helper()
		r.tb.Fatalf("unexpected header %v", h)
	}
	if h.PayloadLength() != len(payload) {
		r.tb.Helper()
		r.tb.Fatalf("header %v says %d payload bytes, got %d", h, h.PayloadLength(), len(payload))
	}
	r.msgs = append(r.msgs, received(payload, h.Position()))
}

// patterned returns n bytes that differ between messages: a sequence
// number followed by pseudo-random bytes.
func patterned(rng *rand.Rand, seq, n int) []byte {
	b := make([]byte, n+sizeofInt64)
	for i := 0; i < n; i += sizeofInt64 {
		binary.LittleEndian.PutUint64(b[i:], rng.Uint64())
	}
	binary.LittleEndian.PutUint64(b, uint64(seq))
	return b[:n:n]
}

func checkMessages(tb testing.TB, got, want []message) {
	tb.Helper()
	if len(got) != len(want) {
		tb.Errorf("received %d messages, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			tb.Fatalf("message %d = %v, want %v", i, got[i], want[i])
		}
	}
}

// asCorrupt returns err as a *CorruptError, failing the test otherwise.
func asCorrupt(tb testing.TB, err error) *CorruptError {
	tb.Helper()
	var ce *CorruptError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
		tb.Fatalf("error %v is not a *CorruptError matching ErrCorrupt", err)
	}
	return ce
}

// noLimit is a fragment limit that never stops a poll.
const noLimit = math.MaxInt
