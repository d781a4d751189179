package logbuffer

import (
	"encoding/binary"
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// ExclusiveAppender is the core of an exclusive publication
// (aeron-protocol.md §6): the single writer of a log. It keeps the
// position of the next frame locally (term id, term offset, partition),
// so an offer needs no compare-and-swap, and publishes it through the
// active partition's tail for the driver.
//
// ExclusiveAppender is not safe for concurrent use: exactly one goroutine
// owns it, and no other appender may write to the same log.
type ExclusiveAppender struct {
	terms [PartitionCount]shm.Buffer
	tails [PartitionCount]shm.Int64Word // each partition's raw tail, in meta
	meta  shm.Buffer

	// Copied from the log's default frame header.
	version   uint8
	flags     Flags
	sessionID int32
	streamID  int32

	termLength          int
	positionBitsToShift int
	initialTermID       int32
	maxPayloadLength    int
	maxMessageLength    int
	maxPossiblePosition int64

	// Where the next frame goes. termOffset may equal termLength (the
	// last message ended exactly at the end of the term): the next offer
	// then rotates.
	partition         int
	termID            int32
	termOffset        int
	termBeginPosition int64
	closed            bool
}

// NewExclusiveAppender returns the appender of l, positioned where the
// log's active partition tail says the next frame goes. It returns an
// error wrapping [ErrReadOnly] for a read-only log, and one wrapping
// [ErrInvalidLog] if the MTU is unusable (also wrapping [ErrInvalidMTU])
// or the active term count and the tails disagree.
func NewExclusiveAppender(l *Log) (*ExclusiveAppender, error) {
	if l.readOnly {
		return nil, fmt.Errorf("%w: %s", ErrReadOnly, l.source)
	}
	if err := checkMTU(l.mtu, l.termLength); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLog, l.source, err)
	}
	termCount := l.ActiveTermCount()
	partition := PartitionIndexByTermCount(termCount)
	tail := l.RawTail(partition)
	if termCount < 0 || tail.TermID() != l.initialTermID+termCount {
		return nil, fmt.Errorf("%w: %s: active term count %d (initial term id %d), but partition %d's tail is %v",
			ErrInvalidLog, l.source, termCount, l.initialTermID, partition, tail)
	}
	termOffset := tail.TermOffset(l.termLength)
	if termOffset%FrameAlignment != 0 {
		return nil, fmt.Errorf("%w: %s: tail %v is not %d-byte aligned", ErrInvalidLog, l.source, tail, FrameAlignment)
	}
	h := l.defaultHeader
	var tails [PartitionCount]shm.Int64Word
	for i := range tails {
		tails[i] = l.meta.Int64Word(tailCounterOffset(i))
	}
	return &ExclusiveAppender{
		terms:               l.terms,
		tails:               tails,
		meta:                l.meta,
		version:             h.Version,
		flags:               h.Flags,
		sessionID:           h.SessionID,
		streamID:            h.StreamID,
		termLength:          l.termLength,
		positionBitsToShift: l.positionBitsToShift,
		initialTermID:       l.initialTermID,
		maxPayloadLength:    l.mtu - HeaderLength,
		maxMessageLength:    l.MaxMessageLength(),
		maxPossiblePosition: l.MaxPossiblePosition(),
		partition:           partition,
		termID:              tail.TermID(),
		termOffset:          termOffset,
		termBeginPosition:   TermBeginPosition(tail.TermID(), l.positionBitsToShift, l.initialTermID),
	}, nil
}

// Offer appends payload as one message and returns the stream position
// after it, or a status: [BackPressured] or [NotConnected] if the
// position has reached flow.Limit, [AdminAction] if the message did not
// fit in the current term (the term was padded and the appender moved to
// the next one: offer again at once), [MaxPositionExceeded] or [Closed].
// A payload longer than the MTU's payload is written as several
// fragments; one longer than [ExclusiveAppender.MaxMessageLength] is
// refused with an error wrapping [ErrMessageTooLong] and nothing else is
// ever returned as an error. The reserved value of every frame is 0.
func (a *ExclusiveAppender) Offer(flow Flow, payload []byte) (OfferResult, error) {
	return a.OfferWithReservedValue(flow, payload, 0)
}

// OfferWithReservedValue is [ExclusiveAppender.Offer] with reserved
// stored in the reserved value field of every frame of the message.
func (a *ExclusiveAppender) OfferWithReservedValue(flow Flow, payload []byte, reserved int64) (OfferResult, error) {
	if a.closed {
		return Closed, nil
	}
	if len(payload) > a.maxMessageLength {
		return 0, fmt.Errorf("%w: %d bytes, maximum %d", ErrMessageTooLong, len(payload), a.maxMessageLength)
	}
	position := a.termBeginPosition + int64(a.termOffset)
	if position >= flow.Limit {
		return a.backPressureStatus(position, len(payload), flow.Connected), nil
	}

	framedLength := align(HeaderLength+len(payload), FrameAlignment)
	if len(payload) > a.maxPayloadLength {
		framedLength = fragmentedFrameLength(len(payload), a.maxPayloadLength)
	}
	resultingOffset := a.termOffset + framedLength
	// The claim: the tail the driver reads to learn the producer position.
	// It is stored before the frames, and even when the message does not
	// fit (then past the end of the term), as Aeron's appenders do.
	tail := int64(PackRawTail(a.termID, resultingOffset))
	if resultingOffset > a.termLength {
		// Release, as in writeFrame: the claim before the padding frame.
		a.tails[a.partition].StoreRelease(tail)
		a.padToEndOfTerm()
		return a.rotate(), nil
	}
	if len(payload) <= a.maxPayloadLength {
		a.writeFrame(a.termOffset, a.flags, payload, reserved, tail)
	} else {
		a.writeFragments(payload, reserved, tail)
	}
	a.termOffset = resultingOffset
	return OfferResult(a.termBeginPosition + int64(resultingOffset)), nil
}

// Position returns the stream position the next message will be
// appended at.
func (a *ExclusiveAppender) Position() int64 {
	return a.termBeginPosition + int64(a.termOffset)
}

// MaxPayloadLength returns the longest message that fits in one frame:
// MTU − [HeaderLength].
func (a *ExclusiveAppender) MaxPayloadLength() int { return a.maxPayloadLength }

// MaxMessageLength returns the longest message an offer accepts.
func (a *ExclusiveAppender) MaxMessageLength() int { return a.maxMessageLength }

// SessionID returns the session id written into every frame.
func (a *ExclusiveAppender) SessionID() int32 { return a.sessionID }

// StreamID returns the stream id written into every frame.
func (a *ExclusiveAppender) StreamID() int32 { return a.streamID }

// Close makes every later offer return [Closed]. It touches no shared
// memory: telling the driver is the publication's job.
func (a *ExclusiveAppender) Close() { a.closed = true }

// IsClosed reports whether [ExclusiveAppender.Close] was called.
func (a *ExclusiveAppender) IsClosed() bool { return a.closed }

// backPressureStatus classifies an offer at or beyond the limit.
func (a *ExclusiveAppender) backPressureStatus(position int64, length int, connected bool) OfferResult {
	if position+int64(align(HeaderLength+length, FrameAlignment)) >= a.maxPossiblePosition {
		return MaxPositionExceeded
	}
	if connected {
		return BackPressured
	}
	return NotConnected
}

// writeFragments writes a message longer than the maximum payload as
// consecutive frames of maxPayloadLength bytes (the last one shorter),
// flagged BEGIN, none…, END, after storing tail, the message's claim. The
// caller has checked that they fit.
func (a *ExclusiveAppender) writeFragments(payload []byte, reserved, tail int64) {
	off := a.termOffset
	flags := FlagBegin
	for len(payload) > 0 {
		n := min(len(payload), a.maxPayloadLength)
		if n == len(payload) {
			flags |= FlagEnd
		}
		// The first frame's store of the tail is the claim; the others
		// store the same value again, which changes nothing the driver can
		// see and costs a store to a line the first one has just written.
		a.writeFrame(off, flags, payload[:n], reserved, tail)
		off += align(HeaderLength+n, FrameAlignment)
		payload = payload[n:]
		flags = 0
	}
}

// writeFrame stores tail, the claim, into the active partition's tail,
// then writes one data frame at off in the current term in the order of
// aeron-protocol.md §5.5, publishing it with the last store. It runs for
// every message, so it is straight-line code whose only calls are two into
// assembly (the claim with step 1, and step 4) and the payload's copy, and
// its arguments fit in registers; beginFrame and publishFrame say the same
// for the padding frame, with the reasons.
func (a *ExclusiveAppender) writeFrame(off int, flags Flags, payload []byte, reserved, tail int64) {
	frameLength := HeaderLength + len(payload)
	// One checked view of the whole frame for the stores below.
	frame := a.terms[a.partition].Sub(off, frameLength)
	b := frame.Bytes()
	// The claim, then steps 1 and 2 as in beginFrame. The tail and the
	// first header word are release stores back to back, made in one call
	// that also gets as much term space as this frame takes coming for
	// writing, a few lines ahead: without that, the stores to each new cache
	// line wait for it (docs/performance.md, "Aeron IPC").
	shm.StoreReleasePairAndPrefetch(a.tails[a.partition], tail,
		frame.Int64Word(FrameLengthOffset), firstHeaderWord(-int32(frameLength), a.version, flags, FrameTypeData),
		align(frameLength, FrameAlignment))
	a.putHeaderIDs(b, off)
	// Step 3: payload and reserved value, plain stores, published by the
	// release store of the length below.
	copy(b[HeaderLength:], payload)
	binary.LittleEndian.PutUint64(b[ReservedValueOffset:], uint64(reserved))
	// Step 4, as in publishFrame.
	frame.Int32Word(FrameLengthOffset).StoreRelease(int32(frameLength))
}

// padToEndOfTerm fills the rest of the current term with one padding
// frame, if any space is left (a message may have ended exactly at the
// end).
func (a *ExclusiveAppender) padToEndOfTerm() {
	if a.termOffset >= a.termLength {
		return
	}
	paddingLength := a.termLength - a.termOffset
	header := a.terms[a.partition].Sub(a.termOffset, HeaderLength) // the padding's payload is not written
	a.beginFrame(header, a.termOffset, paddingLength, a.flags, FrameTypePad)
	publishFrame(header, paddingLength)
}

// beginFrame writes the header of a frame of frameLength bytes at term
// offset off, with the length negated: steps 1 and 2 of aeron-protocol.md
// §5.5. frame views the frame's first [HeaderLength] bytes or more.
func (a *ExclusiveAppender) beginFrame(frame shm.Buffer, off, frameLength int, flags Flags, typ FrameType) {
	// Step 1: length (negated: "being written"), version, flags and type
	// in one 64-bit release store, as Aeron's putLongRelease. Readers stop at
	// a length ≤ 0, so until step 4 nobody interprets the frame.
	frame.Int64Word(FrameLengthOffset).StoreRelease(firstHeaderWord(-int32(frameLength), a.version, flags, typ))
	// Step 2: the remaining header words, plain stores. No reader looks at
	// them before it has seen the positive length of step 4, whose release
	// store orders them before it; until then every reader stops at the
	// length ≤ 0. (Aeron puts a store-store fence here so that the driver,
	// unblocking a publisher that died mid-frame, never sees new ids
	// beside an old length: in Go that would cost two full fences per frame
	// on amd64, where atomic stores are XCHG, and the term space is zeroed
	// by the driver before reuse, so there is no old length to see.)
	a.putHeaderIDs(frame.Bytes(), off)
}

// putHeaderIDs is step 2: the header words after the first (term offset and
// session id, stream and term id), plain stores into h, a frame at term
// offset off. It is small enough to inline into writeFrame.
func (a *ExclusiveAppender) putHeaderIDs(h []byte, off int) {
	h = h[:HeaderLength]
	binary.LittleEndian.PutUint64(h[TermOffsetOffset:], uint64(int32Pair(int32(off), a.sessionID)))
	binary.LittleEndian.PutUint64(h[StreamIDOffset:], uint64(int32Pair(a.streamID, a.termID)))
}

// publishFrame is step 4 of aeron-protocol.md §5.5 for the frame whose
// first bytes frame views.
func publishFrame(frame shm.Buffer, frameLength int) {
	// Release: publishes the frame. Pairs with the reader's acquire load
	// of the length in Poll: everything written above (header, payload,
	// reserved value) is visible to a reader that sees the positive
	// length.
	frame.Int32Word(FrameLengthOffset).StoreRelease(int32(frameLength))
}

// rotate moves to the next term after an offer hit the end of the
// current one (exclusive-publication rotation, aeron-protocol.md §5.8,
// §6.2 step 6).
func (a *ExclusiveAppender) rotate() OfferResult {
	if a.termBeginPosition+int64(a.termLength) >= a.maxPossiblePosition {
		return MaxPositionExceeded
	}
	nextPartition := (a.partition + 1) % PartitionCount
	nextTermID := a.termID + 1
	// Aeron makes this a plain store: the single writer initialises the
	// tail before it announces the new term. It is atomic here because the
	// driver reads tails concurrently, which Go's memory model requires to
	// be atomic; the release store below orders it in any case.
	a.meta.StoreInt64(tailCounterOffset(nextPartition), int64(PackRawTail(nextTermID, 0)))
	// Release: announces the new term. Pairs with the acquire load in
	// [Log.ActiveTermCount]: whoever sees the new count sees the new tail.
	a.meta.StoreInt32(activeTermCountOffset, nextTermID-a.initialTermID)

	a.partition = nextPartition
	a.termID = nextTermID
	a.termOffset = 0
	a.termBeginPosition += int64(a.termLength)
	return AdminAction
}

// fragmentedFrameLength returns the term space a message of length bytes
// takes when split into frames of at most maxPayloadLength bytes: the full
// frames (maxPayloadLength + HeaderLength is the MTU, already aligned) and
// the aligned last frame.
func fragmentedFrameLength(length, maxPayloadLength int) int {
	full := length / maxPayloadLength
	framed := full * (maxPayloadLength + HeaderLength)
	if rest := length % maxPayloadLength; rest > 0 {
		framed += align(rest+HeaderLength, FrameAlignment)
	}
	return framed
}

// firstHeaderWord packs the first 8 header bytes (length, version, flags,
// type) into the int64 that a little-endian store writes as those bytes.
func firstHeaderWord(frameLength int32, version uint8, flags Flags, typ FrameType) int64 {
	return int64(uint64(uint32(frameLength))<<(FrameLengthOffset*bitsPerByte) |
		uint64(version)<<(VersionOffset*bitsPerByte) |
		uint64(flags)<<(FlagsOffset*bitsPerByte) |
		uint64(typ)<<(TypeOffset*bitsPerByte))
}

// int32Pair packs two adjacent int32 header fields, lo at the lower
// offset, into the int64 that a little-endian store writes as them.
func int32Pair(lo, hi int32) int64 {
	return int64(uint64(uint32(lo)) | uint64(uint32(hi))<<(sizeofInt32*bitsPerByte))
}
