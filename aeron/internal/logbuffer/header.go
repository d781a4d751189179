package logbuffer

import (
	"encoding/binary"
	"fmt"
)

// FrameHeader is a decoded data frame header (aeron-protocol.md §5.4).
type FrameHeader struct {
	FrameLength   int32     // header + payload, unaligned; ≤ 0 while unpublished
	Version       uint8     // protocol version, [CurrentVersion]
	Flags         Flags     // fragmentation and end-of-stream flags
	Type          FrameType // [FrameTypeData] or [FrameTypePad] in a log
	TermOffset    int32     // offset of the frame in its term
	SessionID     int32     // the publication's session id
	StreamID      int32     // the stream id
	TermID        int32     // the id of the term holding the frame
	ReservedValue int64     // application-defined, 0 unless the publisher set it
}

// Header is what a fragment handler learns about a fragment: a view of its
// frame header in the log (for a message reassembled by an assembler, of
// the assembler's header) and the stream position just after it.
//
// Like the payload, a Header is valid only during the handler call: the
// bytes it views are the publisher's to overwrite once the poll has moved
// the subscriber position past them. A handler that keeps anything keeps
// values: [Header.Frame] decodes a copy of the whole frame header. Only a
// poll or an assembler makes a Header; the zero Header views nothing, and
// its accessors panic.
//
// A view instead of a decoded copy is what lets a poll hand a fragment on
// for the cost of a pointer: most handlers read one field or none, and
// decoding all nine for each of tens of millions of fragments a second was
// a quarter of a subscriber's time. The fields are plain loads, published
// by the poll's acquire load of the frame length.
type Header struct {
	frame    *[HeaderLength]byte
	position int64
}

// FrameLength is the frame's length, header included, unaligned; for a
// reassembled message, HeaderLength + the message length.
func (h Header) FrameLength() int32 {
	return int32(binary.LittleEndian.Uint32(h.frame[FrameLengthOffset:]))
}

// Version is the protocol version of the frame, [CurrentVersion].
func (h Header) Version() uint8 { return h.frame[VersionOffset] }

// Flags are the frame's fragmentation and end-of-stream flags; BEGIN|END
// for a reassembled message.
func (h Header) Flags() Flags { return Flags(h.frame[FlagsOffset]) }

// Type is the frame type: [FrameTypeData] for every fragment a handler sees.
func (h Header) Type() FrameType {
	return FrameType(binary.LittleEndian.Uint16(h.frame[TypeOffset:]))
}

// TermOffset is the offset of the frame in its term (of the first fragment
// of a reassembled message).
func (h Header) TermOffset() int32 {
	return int32(binary.LittleEndian.Uint32(h.frame[TermOffsetOffset:]))
}

// SessionID is the publication's session id.
func (h Header) SessionID() int32 {
	return int32(binary.LittleEndian.Uint32(h.frame[SessionIDOffset:]))
}

// StreamID is the stream id.
func (h Header) StreamID() int32 {
	return int32(binary.LittleEndian.Uint32(h.frame[StreamIDOffset:]))
}

// TermID is the id of the term that holds the frame.
func (h Header) TermID() int32 {
	return int32(binary.LittleEndian.Uint32(h.frame[TermIDOffset:]))
}

// ReservedValue is the application-defined value the publisher stored, 0
// unless it set one.
func (h Header) ReservedValue() int64 {
	return int64(binary.LittleEndian.Uint64(h.frame[ReservedValueOffset:]))
}

// Position is the stream position just after the fragment (after its
// aligned length): where a subscriber that has consumed it stands. For a
// reassembled message, the position after its last fragment.
func (h Header) Position() int64 { return h.position }

// FramePosition is the stream position of the fragment's frame, where its
// header begins: Position less the frame's aligned length. Of a fragment as
// polled only; a reassembled message's header does not tell where it began.
func (h Header) FramePosition() int64 {
	return h.position - int64(align(int(h.FrameLength()), FrameAlignment))
}

// PayloadLength is FrameLength − HeaderLength: the length of the
// fragment's (or the reassembled message's) payload.
func (h Header) PayloadLength() int { return int(h.FrameLength()) - HeaderLength }

// Frame returns a decoded copy of the frame header, to keep beyond the
// handler call.
func (h Header) Frame() FrameHeader {
	f, _ := DecodeFrameHeader(h.frame[:]) // HeaderLength bytes: it cannot fail
	return f
}

// String summarises the header for logs and test failures.
func (h Header) String() string {
	f := h.Frame()
	return fmt.Sprintf("{%v %v len=%d session=%d stream=%d term=%d offset=%d reserved=%d position=%d}",
		f.Type, f.Flags, f.FrameLength, f.SessionID, f.StreamID, f.TermID, f.TermOffset, f.ReservedValue, h.position)
}

// PayloadLength returns FrameLength − HeaderLength: the length of the
// fragment's (or the assembled message's) payload.
func (h FrameHeader) PayloadLength() int { return int(h.FrameLength) - HeaderLength }

// DecodeFrameHeader decodes the first [HeaderLength] bytes of b. It
// checks only that they are there (else an error wrapping
// [ErrShortFrame]); whether the values make sense in a term is the
// reader's business.
//
// b must be a private copy, or a frame whose positive length a poll has
// loaded with an acquire load ([Header.Frame]): frames in shared memory are
// read through the log's atomic length word first (see [Log.Poll]).
func DecodeFrameHeader(b []byte) (FrameHeader, error) {
	if len(b) < HeaderLength {
		return FrameHeader{}, fmt.Errorf("%w: %d bytes, need %d", ErrShortFrame, len(b), HeaderLength)
	}
	le := binary.LittleEndian
	return FrameHeader{
		FrameLength:   int32(le.Uint32(b[FrameLengthOffset:])),
		Version:       b[VersionOffset],
		Flags:         Flags(b[FlagsOffset]),
		Type:          FrameType(le.Uint16(b[TypeOffset:])),
		TermOffset:    int32(le.Uint32(b[TermOffsetOffset:])),
		SessionID:     int32(le.Uint32(b[SessionIDOffset:])),
		StreamID:      int32(le.Uint32(b[StreamIDOffset:])),
		TermID:        int32(le.Uint32(b[TermIDOffset:])),
		ReservedValue: int64(le.Uint64(b[ReservedValueOffset:])),
	}, nil
}

// AppendTo appends the [HeaderLength]-byte encoding of h to b and returns
// the extended slice.
func (h FrameHeader) AppendTo(b []byte) []byte {
	var f [HeaderLength]byte
	le := binary.LittleEndian
	le.PutUint32(f[FrameLengthOffset:], uint32(h.FrameLength))
	f[VersionOffset] = h.Version
	f[FlagsOffset] = uint8(h.Flags)
	le.PutUint16(f[TypeOffset:], uint16(h.Type))
	le.PutUint32(f[TermOffsetOffset:], uint32(h.TermOffset))
	le.PutUint32(f[SessionIDOffset:], uint32(h.SessionID))
	le.PutUint32(f[StreamIDOffset:], uint32(h.StreamID))
	le.PutUint32(f[TermIDOffset:], uint32(h.TermID))
	le.PutUint64(f[ReservedValueOffset:], uint64(h.ReservedValue))
	return append(b, f[:]...)
}
