package logbuffer

import (
	"errors"
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Log is a validated log buffer: three term buffers and the metadata
// section (aeron-protocol.md §5.1-5.2). The configuration in the metadata
// (term length, page size, MTU, initial term id, registration id, default
// frame header) is read once by [Open] or [Wrap]; the append and stream
// state (tails, active term count, end of stream, is-connected) is read
// from shared memory on every call.
//
// Log is safe for concurrent use: it holds no mutable state of its own.
// The terms it exposes are shared memory, valid until [Log.Close].
type Log struct {
	source  string
	mapping *shm.Mapping // nil when wrapping caller memory

	terms [PartitionCount]shm.Buffer
	meta  shm.Buffer

	termLength          int
	positionBitsToShift int
	pageSize            int
	mtu                 int
	initialTermID       int32
	registrationID      int64
	defaultHeader       FrameHeader
	readOnly            bool
}

// Open maps the log file at path read-write and validates it as [Wrap]
// does. I/O errors are returned wrapped with the path.
func Open(path string) (*Log, error) {
	m, err := shm.Map(path, shm.ReadWrite)
	if err != nil {
		return nil, fmt.Errorf("logbuffer: open %s: %w", path, err)
	}
	l, err := wrap(m.Buffer(), path)
	if err != nil {
		return nil, errors.Join(err, m.Close())
	}
	l.mapping = m
	return l, nil
}

// Wrap validates a log held in b, for example one built in memory by
// [InitMetadata], without mapping anything; [Log.Close] then does
// nothing. It returns an error wrapping [ErrInvalidLog] if b is shorter
// than the metadata section or not 8-byte aligned, if the term length or
// page size in the metadata is invalid (also wrapping
// [ErrInvalidTermLength] or [ErrInvalidPageSize]), if b's length is not
// [LogLength] of them, or if the default frame header length is not
// [HeaderLength].
func Wrap(b shm.Buffer) (*Log, error) {
	return wrap(b, "log buffer")
}

func wrap(b shm.Buffer, source string) (*Log, error) {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidLog, source, fmt.Sprintf(format, args...))
	}
	if b.Len() < MetadataLength {
		return nil, invalid("%d bytes, shorter than the %d-byte metadata section", b.Len(), MetadataLength)
	}
	if err := b.CheckAlignment(atomicAlignment); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLog, source, err)
	}
	meta := b.Sub(b.Len()-MetadataLength, MetadataLength)

	// The configuration group is written by the driver before it announces
	// the log (PUBLICATION_READY / AVAILABLE_IMAGE). The client read that
	// announcement with an acquire load from the broadcast buffer, which
	// orders these plain loads after the driver's writes.
	termLength := int(meta.GetInt32(termLengthOffset))
	if err := CheckTermLength(termLength); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLog, source, err)
	}
	pageSize := int(meta.GetInt32(pageSizeOffset))
	if err := CheckPageSize(pageSize); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrInvalidLog, source, err)
	}
	if want := LogLength(termLength, pageSize); b.Len() != want {
		return nil, invalid("%d bytes, but term length %d and page size %d need %d", b.Len(), termLength, pageSize, want)
	}
	if n := meta.GetInt32(defaultFrameHeaderLengthOffset); n != HeaderLength {
		return nil, invalid("default frame header length %d, want %d", n, HeaderLength)
	}
	defaultHeader, err := DecodeFrameHeader(meta.Sub(defaultFrameHeaderOffset, HeaderLength).Bytes())
	if err != nil { // cannot happen: the view is HeaderLength bytes
		return nil, invalid("default frame header: %v", err)
	}

	l := &Log{
		source:              source,
		meta:                meta,
		termLength:          termLength,
		positionBitsToShift: PositionBitsToShift(termLength),
		pageSize:            pageSize,
		mtu:                 int(meta.GetInt32(mtuLengthOffset)),
		initialTermID:       meta.GetInt32(initialTermIDOffset),
		registrationID:      meta.GetInt64(registrationIDOffset),
		defaultHeader:       defaultHeader,
		readOnly:            b.ReadOnly(),
	}
	for i := range l.terms {
		l.terms[i] = b.Sub(i*termLength, termLength) // inside b: its length was checked above
	}
	return l, nil
}

// Close unmaps the file if [Open] mapped it; for a wrapped buffer it does
// nothing. It is idempotent. The caller must ensure that no poll or offer
// is running and no payload view is still in use: after Close the memory
// is gone.
func (l *Log) Close() error {
	if l.mapping == nil {
		return nil
	}
	return l.mapping.Close()
}

// Source returns the path of the mapped file, or a description of the
// wrapped buffer.
func (l *Log) Source() string { return l.source }

// Term returns the term buffer of partition i, 0 ≤ i < [PartitionCount].
func (l *Log) Term(i int) shm.Buffer {
	mustPartition(i)
	return l.terms[i]
}

// TermLength returns the length of each term.
func (l *Log) TermLength() int { return l.termLength }

// PositionBitsToShift returns log2 of the term length.
func (l *Log) PositionBitsToShift() int { return l.positionBitsToShift }

// PageSize returns the file page size the log was sized with.
func (l *Log) PageSize() int { return l.pageSize }

// MTU returns the maximum frame length (header included) a publisher
// writes to this log.
func (l *Log) MTU() int { return l.mtu }

// InitialTermID returns the id of the stream's first term, the origin of
// positions.
func (l *Log) InitialTermID() int32 { return l.initialTermID }

// RegistrationID returns the registration (correlation) id of the
// publication or image that owns the log.
func (l *Log) RegistrationID() int64 { return l.registrationID }

// DefaultFrameHeader returns the header template publishers copy version,
// flags, type, session id and stream id from.
func (l *Log) DefaultFrameHeader() FrameHeader { return l.defaultHeader }

// MaxMessageLength returns [MaxMessageLength] of the term length.
func (l *Log) MaxMessageLength() int { return MaxMessageLength(l.termLength) }

// MaxPossiblePosition returns [MaxPossiblePosition] of the term length.
func (l *Log) MaxPossiblePosition() int64 { return MaxPossiblePosition(l.termLength) }

// RawTail returns the tail counter of partition i, 0 ≤ i < [PartitionCount].
func (l *Log) RawTail(i int) RawTail {
	mustPartition(i)
	// Acquire: pairs with the publisher's release store of the tail, so
	// a reader of the tail sees the term rotation that preceded it.
	return RawTail(l.meta.LoadInt64(tailCounterOffset(i)))
}

// ActiveTermCount returns the number of terms the publisher has rotated
// through since the initial term: the active partition is
// [PartitionIndexByTermCount] of it.
func (l *Log) ActiveTermCount() int32 {
	// Acquire: pairs with the publisher's release store after it has
	// initialised the next partition's tail (term rotation), so that tail
	// is visible once the new count is.
	return l.meta.LoadInt32(activeTermCountOffset)
}

// EndOfStreamPosition returns the position at which the stream ends, or
// math.MaxInt64 while the publisher is open.
func (l *Log) EndOfStreamPosition() int64 {
	// Acquire: pairs with the driver's release store when the publisher
	// closes (and as the last write of log initialisation).
	return l.meta.LoadInt64(endOfStreamPositionOffset)
}

// IsConnected reports whether the driver considers the publication
// connected to at least one subscriber.
func (l *Log) IsConnected() bool {
	// Acquire: pairs with the driver's release store of the flag. A stale
	// value only changes which back-pressure result an offer reports.
	return l.meta.LoadInt32(isConnectedOffset) == 1
}

// mustPartition panics with an assertion if i is not a partition index:
// partition indexes come from position arithmetic, never from input.
func mustPartition(i int) {
	if i < 0 || i >= PartitionCount {
		panic(fmt.Sprintf("assertion failed: logbuffer: no partition %d", i))
	}
}
