package logbuffer

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// FragmentHandler receives one fragment: its payload and header. The
// payload is a view of shared memory (or, from a [FragmentAssembler], of
// the assembler's buffer), valid only until the handler returns; a
// handler that keeps the bytes must copy them.
type FragmentHandler func(payload []byte, header Header)

// Action is what a [ControlledFragmentHandler] tells a controlled poll to
// do after a fragment. The zero Action is [Continue].
type Action int

// Controlled poll actions (ControlledFragmentHandler.Action).
const (
	// Continue consumes the fragment and goes on to the next one.
	Continue Action = iota
	// Abort leaves the fragment unconsumed and ends the poll: the next
	// poll delivers it again.
	Abort
	// Break consumes the fragment and ends the poll.
	Break
	// Commit consumes the fragment, reports the position after it to the
	// poll's commit function at once, and goes on.
	Commit
)

// String returns the Aeron name of the action.
func (a Action) String() string {
	switch a {
	case Continue:
		return "CONTINUE"
	case Abort:
		return "ABORT"
	case Break:
		return "BREAK"
	case Commit:
		return "COMMIT"
	default:
		return fmt.Sprintf("Action(%d)", int(a))
	}
}

// ControlledFragmentHandler is a [FragmentHandler] that steers the poll
// with its result.
type ControlledFragmentHandler func(payload []byte, header Header) Action

// Poll delivers up to fragmentLimit fragments that follow position, the
// subscriber's position, to handler, and returns how many it delivered and
// the position after everything it consumed (aeron-protocol.md §7.2). The
// caller stores that position in the subscriber-position counter with a
// release store, which lets the driver reuse the consumed space; until
// then every payload view stays valid.
//
// Poll reads only the term that holds position: it stops at the first
// frame not yet published, at the end of the term, or after fragmentLimit
// fragments. Padding frames are consumed (the position moves over them)
// without calling handler and without counting as fragments; a poll may
// therefore return 0 fragments and a new position, and callers must track
// the returned position, not the last header they saw. The next poll
// continues in the next term once the position has reached it.
//
// A position that cannot index the log yields an error wrapping
// [ErrInvalidPosition] and nothing is read. A corrupt frame yields a
// [*CorruptError] together with the fragments delivered before it and the
// position in front of it. If handler panics, the panic propagates and
// the fragments of this poll will be delivered again.
//
// Poll is safe for concurrent use with the publisher; concurrent polls of
// one image must be serialised by the caller, who owns the position.
func (l *Log) Poll(position int64, fragmentLimit int, handler FragmentHandler) (int, int64, error) {
	return l.BoundedPoll(position, l.MaxPossiblePosition(), fragmentLimit, handler, nil)
}

// BoundedPoll is [Log.Poll] that also stops at limitPosition: it reads no
// frame that begins at or after it. A frame that begins before it is read
// whole, so a poll may end past the limit by less than one frame; a limit
// at or below position reads nothing.
//
// It also stops in front of the next frame, padding included, once closed
// is set (nil: never): whoever unmaps the log sets it first, and a handler
// may cause the unmap, or outlast the delay before it, while the poll
// waits for it to return. The poll must then not read another frame.
func (l *Log) BoundedPoll(position, limitPosition int64, fragmentLimit int, handler FragmentHandler, closed *atomic.Bool) (int, int64, error) {
	t, err := l.termAt(position)
	if err != nil {
		return 0, position, err
	}
	t.bound(limitPosition)
	fragments := 0
	for fragments < fragmentLimit && !isSet(closed) {
		frame, err := t.next()
		if frame == nil {
			return fragments, t.position(), err
		}
		if isPadding(frame) {
			continue
		}
		fragments++
		handler(frame[HeaderLength:], t.header(frame))
	}
	return fragments, t.position(), nil
}

// ControlledPoll is [Log.Poll] with a handler that decides after each
// fragment whether to consume it and whether to go on (see [Action]).
// When the handler returns [Commit], ControlledPoll calls commit (if not
// nil) with the position after that fragment before it goes on, so that
// the caller can store the subscriber position at once; the returned
// position is never below a committed one. A handler result other than
// the four actions ends the poll after that fragment, as [Break] does,
// with an error wrapping [ErrInvalidAction]. Like [Log.BoundedPoll], it
// reads no frame once closed is set (nil: never).
func (l *Log) ControlledPoll(position int64, fragmentLimit int, handler ControlledFragmentHandler, commit func(position int64), closed *atomic.Bool) (int, int64, error) {
	t, err := l.termAt(position)
	if err != nil {
		return 0, position, err
	}
	fragments := 0
	for fragments < fragmentLimit && !isSet(closed) {
		before := t.offset
		frame, err := t.next()
		if frame == nil {
			return fragments, t.position(), err
		}
		if isPadding(frame) {
			continue
		}
		fragments++
		switch action := handler(frame[HeaderLength:], t.header(frame)); action {
		case Continue:
		case Commit:
			if commit != nil {
				commit(t.position())
			}
		case Break:
			return fragments, t.position(), nil
		case Abort:
			t.offset = before
			return fragments - 1, t.position(), nil
		default:
			return fragments, t.position(), fmt.Errorf("%w: %v after the fragment at position %d",
				ErrInvalidAction, action, t.begin+int64(before))
		}
	}
	return fragments, t.position(), nil
}

// isSet reports whether closed, a poll's stop flag, is set. It is loaded
// before every frame. The store that sets it comes before the unmap, on the
// goroutine that unmaps: a poll that sees it clear reads the frame before
// the unmap if the close ran on its own goroutine (a handler's), and within
// the resource linger the conductor waits after the store otherwise. One
// load per frame (a plain MOV on amd64, LDAR on arm64), no allocation.
func isSet(closed *atomic.Bool) bool { return closed != nil && closed.Load() }

// termReader walks the published frames of one term from a poll's
// position: a few words a poll keeps at hand, where it used to copy cursor
// and frame structs for every fragment.
type termReader struct {
	term   shm.Buffer
	begin  int64 // position of the term's first byte
	offset int   // offset of the next frame
	end    int   // offset at which reading stops: the term's length, or a poll's bound
}

func (l *Log) termAt(position int64) (termReader, error) {
	if position < 0 || position%FrameAlignment != 0 || position >= l.MaxPossiblePosition() {
		return termReader{}, fmt.Errorf("%w: %d (must be a multiple of %d in [0, %d))",
			ErrInvalidPosition, position, FrameAlignment, l.MaxPossiblePosition())
	}
	offset := TermOffsetFromPosition(position, l.termLength)
	term := l.terms[PartitionIndexByPosition(position, l.positionBitsToShift)]
	return termReader{term: term, begin: position - int64(offset), offset: offset, end: term.Len()}, nil
}

// bound stops the reader in front of the first frame that begins at or
// after limitPosition.
func (t *termReader) bound(limitPosition int64) {
	t.end = int(min(int64(t.end), max(limitPosition-t.begin, int64(t.offset))))
}

// next returns the published frame at the reader's offset, header and
// payload (frameLength bytes), and consumes it: the offset moves past its
// aligned length. It returns nil at the end of the term, in front of a
// frame not yet published, and in front of a corrupt frame, which err then
// describes; none of those is consumed.
func (t *termReader) next() (frame []byte, err error) {
	if t.offset >= t.end {
		return nil, nil
	}
	// Acquire: pairs with the publisher's release store of the positive
	// length (publishFrame), so the header and payload it wrote before are
	// visible below. The length is loaded once and everything after works
	// on this snapshot.
	frameLength := int(t.term.LoadInt32(t.offset + FrameLengthOffset))
	if frameLength <= 0 {
		// Not yet written, not corruption: a publisher stores the length
		// negated while it writes the frame, and the driver zeroes term
		// space before a publisher may reuse it, so the stream simply ends
		// here for now. The frame appears when the length turns positive.
		return nil, nil
	}
	if frameLength < HeaderLength {
		return nil, t.corrupt(frameLength, fmt.Sprintf("shorter than the %d-byte header", HeaderLength))
	}
	alignedLength := align(frameLength, FrameAlignment)
	if alignedLength > t.term.Len()-t.offset {
		return nil, t.corrupt(frameLength, fmt.Sprintf("runs past the end of the term (offset %d, term length %d)", t.offset, t.term.Len()))
	}
	// One view of the whole frame: the header fields, the type and the
	// payload are read from it. Its capacity ends with it, so that a
	// handler appending to the payload copies instead of writing into the
	// log.
	frame = t.term.Sub(t.offset, frameLength).Bytes()
	t.offset += alignedLength
	return frame, nil
}

// position returns the stream position of the reader: after the frames it
// consumed.
func (t *termReader) position() int64 { return t.begin + int64(t.offset) }

// header returns the handler's view of frame, the frame next returned.
func (t *termReader) header(frame []byte) Header {
	return Header{
		frame:    (*[HeaderLength]byte)(frame), // frame holds at least the header: checked in next
		position: t.position(),
	}
}

func (t *termReader) corrupt(frameLength int, reason string) error {
	return &CorruptError{Position: t.position(), FrameLength: int32(frameLength), Reason: reason}
}

// isPadding reports whether frame is a padding frame. The type is a plain
// load, published by the acquire load of the length in next.
func isPadding(frame []byte) bool {
	return FrameType(binary.LittleEndian.Uint16(frame[TypeOffset:])) == FrameTypePad
}
