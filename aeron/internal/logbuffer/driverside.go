package logbuffer

import (
	"fmt"
	"math"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// The media driver's side of a log: creating its metadata and setting
// the stream state. A client never does this to a driver's log; tests and
// in-process fakes of the driver do, to build logs in plain memory.

// LogParams describes a log for [InitMetadata].
type LogParams struct {
	TermLength     int   // a valid term length ([CheckTermLength])
	PageSize       int   // a valid page size ([CheckPageSize])
	MTU            int   // maximum frame length: a multiple of FrameAlignment in (HeaderLength, TermLength]
	InitialTermID  int32 // term id at position 0
	StartPosition  int64 // position of the first frame: a multiple of FrameAlignment, usually 0
	SessionID      int32 // stored in the default frame header
	StreamID       int32 // stored in the default frame header
	RegistrationID int64 // the publication's registration id
}

// InitMetadata writes the metadata of a fresh log into b, which must be
// zeroed and exactly [LogLength](p.TermLength, p.PageSize) bytes, as the
// driver does when it creates a publication: configuration, default frame
// header, tails positioned at p.StartPosition, not connected, and last the
// end-of-stream position math.MaxInt64. Invalid parameters yield an error
// wrapping [ErrInvalidLog] and leave b untouched.
func InitMetadata(b shm.Buffer, p LogParams) error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: init metadata: %s", ErrInvalidLog, fmt.Sprintf(format, args...))
	}
	if err := CheckTermLength(p.TermLength); err != nil {
		return fmt.Errorf("%w: init metadata: %w", ErrInvalidLog, err)
	}
	if err := CheckPageSize(p.PageSize); err != nil {
		return fmt.Errorf("%w: init metadata: %w", ErrInvalidLog, err)
	}
	if want := LogLength(p.TermLength, p.PageSize); b.Len() != want {
		return invalid("buffer of %d bytes, need %d", b.Len(), want)
	}
	if err := checkMTU(p.MTU, p.TermLength); err != nil {
		return fmt.Errorf("%w: init metadata: %w", ErrInvalidLog, err)
	}
	if p.StartPosition < 0 || p.StartPosition%FrameAlignment != 0 || p.StartPosition >= MaxPossiblePosition(p.TermLength) {
		return invalid("start position %d is negative, unaligned or beyond the maximum", p.StartPosition)
	}
	if err := b.CheckAlignment(atomicAlignment); err != nil {
		return fmt.Errorf("%w: init metadata: %w", ErrInvalidLog, err)
	}

	meta := b.Sub(b.Len()-MetadataLength, MetadataLength)
	meta.PutInt64(registrationIDOffset, p.RegistrationID)
	meta.PutInt32(initialTermIDOffset, p.InitialTermID)
	meta.PutInt32(defaultFrameHeaderLengthOffset, HeaderLength)
	meta.PutInt32(mtuLengthOffset, int32(p.MTU))
	meta.PutInt32(termLengthOffset, int32(p.TermLength))
	meta.PutInt32(pageSizeOffset, int32(p.PageSize))
	defaultHeader := FrameHeader{
		Version:   CurrentVersion,
		Flags:     FlagsUnfragmented,
		Type:      FrameTypeData,
		SessionID: p.SessionID,
		StreamID:  p.StreamID,
		TermID:    p.InitialTermID,
	}
	copy(meta.Sub(defaultFrameHeaderOffset, HeaderLength).Bytes(), defaultHeader.AppendTo(nil))

	// The active partition's tail holds the start; each other partition
	// holds the term that last used it (PartitionCount terms before the
	// one that will use it next), at offset 0, so that rotating into it is
	// a plain overwrite.
	shift := PositionBitsToShift(p.TermLength)
	termID := TermIDFromPosition(p.StartPosition, shift, p.InitialTermID)
	termCount := termID - p.InitialTermID
	active := PartitionIndexByTermCount(termCount)
	for i := range int32(PartitionCount) {
		tail := PackRawTail(termID+i-PartitionCount, 0)
		if i == 0 {
			tail = PackRawTail(termID, TermOffsetFromPosition(p.StartPosition, p.TermLength))
		}
		partition := (active + int(i)) % PartitionCount
		// Atomic: the tails are the words publishers and the driver access
		// atomically; ordered before the end-of-stream store below.
		meta.StoreInt64(tailCounterOffset(partition), int64(tail))
	}
	meta.StoreInt32(activeTermCountOffset, termCount)         // atomic: as the tails
	meta.StoreInt32(isConnectedOffset, 0)                     // atomic: the driver's flag
	meta.StoreInt64(endOfStreamPositionOffset, math.MaxInt64) // release: the last write of initialisation, as the driver's
	return nil
}

// SetIsConnected sets the is-connected flag, as the driver does when the
// first subscriber arrives or the last one leaves. Driver side: a client
// never calls it on a driver's log. It panics on a read-only log.
func (l *Log) SetIsConnected(connected bool) {
	var v int32
	if connected {
		v = 1
	}
	// Release: pairs with the acquire load in [Log.IsConnected].
	l.meta.StoreInt32(isConnectedOffset, v)
}

// SetEndOfStreamPosition sets the end-of-stream position, as the driver
// does when the publisher closes. Driver side: a client never calls it on
// a driver's log. It panics on a read-only log.
func (l *Log) SetEndOfStreamPosition(position int64) {
	// Release: pairs with the acquire load in [Log.EndOfStreamPosition];
	// everything the driver did before (the final publisher limit) is
	// visible to a subscriber that sees the end of the stream.
	l.meta.StoreInt64(endOfStreamPositionOffset, position)
}

// checkMTU returns nil if an appender can fragment messages with mtu in a
// term of termLength bytes, otherwise an error wrapping [ErrInvalidMTU].
func checkMTU(mtu, termLength int) error {
	if mtu <= HeaderLength || mtu%FrameAlignment != 0 || mtu > termLength {
		return fmt.Errorf("%w: %d is not a multiple of %d in (%d, %d]", ErrInvalidMTU, mtu, FrameAlignment, HeaderLength, termLength)
	}
	return nil
}
