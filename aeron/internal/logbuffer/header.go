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

// Header is what a fragment handler learns about a fragment: its frame
// header and the stream position just after it.
type Header struct {
	FrameHeader

	// Position is the stream position just after the fragment (after its
	// aligned length): where a subscriber that has consumed it stands.
	// For a message assembled from fragments, the position after the last
	// one.
	Position int64
}

// String summarises the header for logs and test failures.
func (h Header) String() string {
	return fmt.Sprintf("{%v %v len=%d session=%d stream=%d term=%d offset=%d reserved=%d position=%d}",
		h.Type, h.Flags, h.FrameLength, h.SessionID, h.StreamID, h.TermID, h.TermOffset, h.ReservedValue, h.Position)
}

// PayloadLength returns FrameLength − HeaderLength: the length of the
// fragment's (or the assembled message's) payload.
func (h FrameHeader) PayloadLength() int { return int(h.FrameLength) - HeaderLength }

// DecodeFrameHeader decodes the first [HeaderLength] bytes of b. It
// checks only that they are there (else an error wrapping
// [ErrShortFrame]); whether the values make sense in a term is the
// reader's business.
//
// b must be a private copy: frames in shared memory are read through the
// log's atomic length word first (see [Log.Poll]).
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

// decodePublishedHeader decodes the header at the start of b (at least
// [HeaderLength] bytes) with the length the caller already loaded with an
// acquire load. The other fields are plain loads: the publisher wrote them
// before its release store of the positive length, which that load
// observed. Decoding from one checked view costs a fraction of a checked
// accessor per field.
func decodePublishedHeader(b []byte, frameLength int32) FrameHeader {
	b = b[:HeaderLength]
	le := binary.LittleEndian
	return FrameHeader{
		FrameLength:   frameLength,
		Version:       b[VersionOffset],
		Flags:         Flags(b[FlagsOffset]),
		Type:          FrameType(le.Uint16(b[TypeOffset:])),
		TermOffset:    int32(le.Uint32(b[TermOffsetOffset:])),
		SessionID:     int32(le.Uint32(b[SessionIDOffset:])),
		StreamID:      int32(le.Uint32(b[StreamIDOffset:])),
		TermID:        int32(le.Uint32(b[TermIDOffset:])),
		ReservedValue: int64(le.Uint64(b[ReservedValueOffset:])),
	}
}
