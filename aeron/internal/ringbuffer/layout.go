package ringbuffer

// Layout of Agrona's ManyToOneRingBuffer (RingBufferDescriptor and
// RecordDescriptor, Agrona 2.0.1 as used by Aeron 1.47.3;
// aeron-protocol.md §2). layout_test.go pins every value.

const (
	sizeofInt32     = 4
	sizeofInt64     = 8
	cacheLineLength = 64

	// trailerSlotLength keeps each trailer field on its own pair of cache
	// lines, so producers and the consumer do not false-share.
	trailerSlotLength = 2 * cacheLineLength
)

// Trailer, after the data area, at the offset equal to the capacity. Each
// field is an int64 at the start of its slot; the first slot is padding.
//
//	capacity +0    +128   +256        +384   +512          +640       +768
//	| padding | tail | head cache | head | correlation | heartbeat |
const (
	// TailPositionOffset holds the producers' position: the end of the
	// last claimed record. Producers advance it with compare-and-swap.
	TailPositionOffset = trailerSlotLength
	// HeadCachePositionOffset holds a producer-maintained copy of the
	// consumer position, refreshed only when the ring looks full, so that
	// producers rarely touch the consumer's cache line.
	HeadCachePositionOffset = TailPositionOffset + trailerSlotLength
	// HeadPositionOffset holds the consumer's (driver's) position.
	HeadPositionOffset = HeadCachePositionOffset + trailerSlotLength
	// CorrelationCounterOffset holds the counter behind
	// [ManyToOne.NextCorrelationID].
	CorrelationCounterOffset = HeadPositionOffset + trailerSlotLength
	// ConsumerHeartbeatOffset holds the consumer's heartbeat, epoch
	// milliseconds, written by the driver.
	ConsumerHeartbeatOffset = CorrelationCounterOffset + trailerSlotLength
	// TrailerLength is the length of the trailer; a ring's buffer is
	// capacity + TrailerLength bytes.
	TrailerLength = ConsumerHeartbeatOffset + trailerSlotLength
)

// Record header, at the start of every record in the data area:
//
//	0        4         8
//	| length | type id | payload ...
//
// length = HeaderLength + payload length. Producers write it negated while
// the record is being written and publish the record by storing it
// positive. Records start at multiples of RecordAlignment.
const (
	// RecordLengthOffset is the offset of the int32 record length.
	RecordLengthOffset = 0
	// TypeIDOffset is the offset of the int32 message type id.
	TypeIDOffset = RecordLengthOffset + sizeofInt32
	// HeaderLength is the length of the record header; the payload
	// follows it.
	HeaderLength = TypeIDOffset + sizeofInt32
	// RecordAlignment is the alignment of every record.
	RecordAlignment = HeaderLength
)

// PaddingTypeID marks a padding record: it fills the end of the data area
// when a record does not fit there, and the consumer skips it.
const PaddingTypeID int32 = -1

// MinCapacity is the smallest data area: room for one empty record.
const MinCapacity = HeaderLength

// maxCapacity bounds the data area so that every record length fits in
// the int32 length field. Agrona indexes buffers with int32, so no real
// ring is larger.
const maxCapacity = 1 << 30

// maxPayloadDivisor: the largest payload is capacity/8 (but at least
// HeaderLength), so that one command never takes more than an eighth of
// the ring.
const maxPayloadDivisor = 8

func align(n, alignment int64) int64 {
	return (n + alignment - 1) &^ (alignment - 1)
}
