package logbuffer

import (
	"encoding/binary"
	"fmt"

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
	c, err := l.cursorAt(position)
	if err != nil {
		return 0, position, err
	}
	fragments := 0
	for fragments < fragmentLimit {
		f, ok, err := c.next()
		if !ok {
			return fragments, c.position(), err
		}
		c.consume(f)
		if f.isPadding() {
			continue
		}
		fragments++
		handler(f.payload(), c.header(f))
	}
	return fragments, c.position(), nil
}

// ControlledPoll is [Log.Poll] with a handler that decides after each
// fragment whether to consume it and whether to go on (see [Action]).
// When the handler returns [Commit], ControlledPoll calls commit (if not
// nil) with the position after that fragment before it goes on, so that
// the caller can store the subscriber position at once; the returned
// position is never below a committed one. A handler result other than
// the four actions ends the poll after that fragment, as [Break] does,
// with an error wrapping [ErrInvalidAction].
func (l *Log) ControlledPoll(position int64, fragmentLimit int, handler ControlledFragmentHandler, commit func(position int64)) (int, int64, error) {
	c, err := l.cursorAt(position)
	if err != nil {
		return 0, position, err
	}
	fragments := 0
	for fragments < fragmentLimit {
		f, ok, err := c.next()
		if !ok {
			return fragments, c.position(), err
		}
		c.consume(f)
		if f.isPadding() {
			continue
		}
		fragments++
		switch action := handler(f.payload(), c.header(f)); action {
		case Continue:
		case Commit:
			if commit != nil {
				commit(c.position())
			}
		case Break:
			return fragments, c.position(), nil
		case Abort:
			c.unconsume(f)
			return fragments - 1, c.position(), nil
		default:
			return fragments, c.position(), fmt.Errorf("%w: %v after the fragment at position %d",
				ErrInvalidAction, action, c.termBegin+int64(f.offset))
		}
	}
	return fragments, c.position(), nil
}

// termCursor walks the published frames of one term.
type termCursor struct {
	term       shm.Buffer
	termLength int
	termBegin  int64 // position of the term's first byte
	offset     int   // offset of the next frame
}

// termFrame is a published frame found by [termCursor.next].
type termFrame struct {
	bytes         []byte // the frame: header and payload, frameLength bytes
	offset        int
	frameLength   int32
	alignedLength int
}

func (l *Log) cursorAt(position int64) (termCursor, error) {
	if position < 0 || position%FrameAlignment != 0 || position >= l.MaxPossiblePosition() {
		return termCursor{}, fmt.Errorf("%w: %d (must be a multiple of %d in [0, %d))",
			ErrInvalidPosition, position, FrameAlignment, l.MaxPossiblePosition())
	}
	offset := TermOffsetFromPosition(position, l.termLength)
	return termCursor{
		term:       l.terms[PartitionIndexByPosition(position, l.positionBitsToShift)],
		termLength: l.termLength,
		termBegin:  position - int64(offset),
		offset:     offset,
	}, nil
}

// next returns the frame at the cursor. ok is false at the end of the
// term, in front of a frame not yet published, and in front of a corrupt
// frame, which err then describes.
func (c *termCursor) next() (f termFrame, ok bool, err error) {
	if c.offset >= c.termLength {
		return termFrame{}, false, nil
	}
	// Acquire: pairs with the publisher's release store of the positive
	// length (publishFrame), so the header and payload it wrote before are
	// visible below. The length is loaded once and everything after works
	// on this snapshot.
	frameLength := c.term.LoadInt32(c.offset + FrameLengthOffset)
	if frameLength <= 0 {
		// Not yet written, not corruption: a publisher stores the length
		// negated while it writes the frame, and the driver zeroes term
		// space before a publisher may reuse it, so the stream simply ends
		// here for now. The frame appears when the length turns positive.
		return termFrame{}, false, nil
	}
	if frameLength < HeaderLength {
		return termFrame{}, false, c.corrupt(frameLength, fmt.Sprintf("shorter than the %d-byte header", HeaderLength))
	}
	alignedLength := align(int(frameLength), FrameAlignment)
	if alignedLength > c.termLength-c.offset {
		return termFrame{}, false, c.corrupt(frameLength, fmt.Sprintf("runs past the end of the term (offset %d, term length %d)", c.offset, c.termLength))
	}
	// One view of the whole frame, checked here against the term: the header
	// fields, the type and the payload are read from it without a check each.
	frame := c.term.Sub(c.offset, int(frameLength)).Bytes()
	return termFrame{bytes: frame, offset: c.offset, frameLength: frameLength, alignedLength: alignedLength}, true, nil
}

func (c *termCursor) consume(f termFrame)   { c.offset = f.offset + f.alignedLength }
func (c *termCursor) unconsume(f termFrame) { c.offset = f.offset }

// position returns the stream position of the cursor.
func (c *termCursor) position() int64 { return c.termBegin + int64(c.offset) }

// header returns the handler's view of f, which the cursor has consumed.
func (c *termCursor) header(f termFrame) Header {
	return Header{
		FrameHeader: decodePublishedHeader(f.bytes, f.frameLength),
		Position:    c.termBegin + int64(f.offset+f.alignedLength),
	}
}

func (c *termCursor) corrupt(frameLength int32, reason string) error {
	return &CorruptError{Position: c.position(), FrameLength: frameLength, Reason: reason}
}

// isPadding reports whether f is a padding frame. The type is a plain
// load, published by the acquire load of the length in next.
func (f termFrame) isPadding() bool {
	return FrameType(binary.LittleEndian.Uint16(f.bytes[TypeOffset:])) == FrameTypePad
}

// payload returns the view of f's payload in the term.
func (f termFrame) payload() []byte { return f.bytes[HeaderLength:] }
