package broadcast

// Layout of Agrona's broadcast buffer (BroadcastBufferDescriptor and
// RecordDescriptor, Agrona 2.0.1 as used by Aeron 1.47.3;
// aeron-protocol.md §3.1). layout_test.go pins every value.

const (
	sizeofInt32     = 4
	sizeofInt64     = 8
	cacheLineLength = 64
)

// Trailer, after the data area, at the offset equal to the capacity. All
// three are int64 positions (unbounded byte counts), written only by the
// transmitter.
//
//	capacity +0            +8      +16      +24 ...        +128
//	| tail intent | tail | latest | padding |
const (
	// TailIntentCounterOffset holds the tail the transmitter is about to
	// reach; it is raised before any byte of a message is written, so a
	// receiver compares its cursor with it to detect being overwritten.
	TailIntentCounterOffset = 0
	// TailCounterOffset holds the end of the last complete message.
	TailCounterOffset = TailIntentCounterOffset + sizeofInt64
	// LatestCounterOffset holds the start of the most recent message; new
	// receivers start there.
	LatestCounterOffset = TailCounterOffset + sizeofInt64
	// TrailerLength is the length of the trailer: two cache lines.
	TrailerLength = 2 * cacheLineLength
)

// Record header, at the start of every record in the data area:
//
//	0        4         8
//	| length | type id | payload ...
//
// length = HeaderLength + payload length (positive; unaligned). Records
// start at multiples of RecordAlignment.
const (
	// RecordLengthOffset is the offset of the int32 record length.
	RecordLengthOffset = 0
	// TypeIDOffset is the offset of the int32 message type id.
	TypeIDOffset = RecordLengthOffset + sizeofInt32
	// HeaderLength is the length of the record header.
	HeaderLength = TypeIDOffset + sizeofInt32
	// RecordAlignment is the alignment of every record.
	RecordAlignment = HeaderLength
)

// PaddingTypeID marks the padding record that fills the end of the data
// area when a message does not fit there; the message follows at index 0.
const PaddingTypeID int32 = -1

// maxPayloadDivisor: the largest payload is capacity/8.
const maxPayloadDivisor = 8

// MinCapacity is the smallest data area accepted: the smallest power of two
// in which a maximal record (HeaderLength + capacity/8, aligned) fits.
// Agrona only requires a power of two; smaller buffers cannot carry every
// message their maximum allows.
const MinCapacity = 2 * RecordAlignment

// maxCapacity bounds the data area so that record lengths fit in int32, as
// in Agrona, whose buffers are indexed by int32.
const maxCapacity = 1 << 30

func align(n, alignment int64) int64 {
	return (n + alignment - 1) &^ (alignment - 1)
}
