package logbuffer

// Layout of an Aeron log buffer file and of the data frames in its terms
// (Aeron 1.47.3 LogBufferDescriptor, FrameDescriptor, DataHeaderFlyweight;
// aeron-protocol.md §5.1-5.4). layout_test.go pins every value.

const (
	sizeofUint8     = 1
	sizeofUint16    = 2
	sizeofInt32     = 4
	sizeofInt64     = 8
	cacheLineLength = 64
	bitsPerByte     = 8
)

// Log file: three term partitions of termLength bytes each, then page
// padding if the page size exceeds the metadata length, then the metadata
// section, which is always the last MetadataLength bytes of the file.
//
//	0            L            2L           3L                len-4096      len
//	| term 0     | term 1     | term 2     | (page padding)  | metadata    |
const (
	// PartitionCount is the number of term buffers in a log. Term n of a
	// stream (counted from the initial term id) lives in partition n mod 3.
	PartitionCount = 3

	// MinPageSize is the smallest file page size a log may declare.
	MinPageSize = 4 << 10
	// MaxPageSize is the largest file page size a log may declare.
	MaxPageSize = 1 << 30
	// MinTermLength is the smallest term length.
	MinTermLength = 64 << 10
	// MaxTermLength is the largest term length.
	MaxTermLength = 1 << 30

	// MetadataLength is the length of the metadata section at the end of
	// every log file: one minimum page.
	MetadataLength = MinPageSize
)

// Metadata section, offsets from its start. Three groups, each starting on
// its own pair of cache lines so that the words the publisher writes on
// every message (the tails) do not share a line with the stream state the
// driver updates, nor with the configuration that everyone reads.
//
//	0      8      16     24           28
//	| tail0 | tail1 | tail2 | termCount |                                 group 1: append state
//	128                 136          140            144
//	| endOfStreamPos    | isConnected | transportCnt |                    group 2: stream state
//	256    264       268       272  276     280      284 ... 316   320            448
//	| regId | initTerm | hdrLen  | mtu | termLen | pageSize | tuning…  | default header |
//	448  456          464     472             480              488 … 495
//	| tag | respCorrId | linger | untetheredWin | untetheredRest | eight int8 flags |
//
// Only the fields this package reads or writes have accessors; the others
// are listed so that the layout is complete and pinned.
const (
	termTailCountersOffset = 0
	activeTermCountOffset  = termTailCountersOffset + PartitionCount*sizeofInt64

	endOfStreamPositionOffset  = 2 * cacheLineLength
	isConnectedOffset          = endOfStreamPositionOffset + sizeofInt64
	activeTransportCountOffset = isConnectedOffset + sizeofInt32

	registrationIDOffset           = 4 * cacheLineLength
	initialTermIDOffset            = registrationIDOffset + sizeofInt64
	defaultFrameHeaderLengthOffset = initialTermIDOffset + sizeofInt32
	mtuLengthOffset                = defaultFrameHeaderLengthOffset + sizeofInt32
	termLengthOffset               = mtuLengthOffset + sizeofInt32
	pageSizeOffset                 = termLengthOffset + sizeofInt32
	publicationWindowLengthOffset  = pageSizeOffset + sizeofInt32
	receiverWindowLengthOffset     = publicationWindowLengthOffset + sizeofInt32
	socketSndbufLengthOffset       = receiverWindowLengthOffset + sizeofInt32
	osDefaultSndbufLengthOffset    = socketSndbufLengthOffset + sizeofInt32
	osMaxSndbufLengthOffset        = osDefaultSndbufLengthOffset + sizeofInt32
	socketRcvbufLengthOffset       = osMaxSndbufLengthOffset + sizeofInt32
	osDefaultRcvbufLengthOffset    = socketRcvbufLengthOffset + sizeofInt32
	osMaxRcvbufLengthOffset        = osDefaultRcvbufLengthOffset + sizeofInt32
	maxResendOffset                = osMaxRcvbufLengthOffset + sizeofInt32
	defaultFrameHeaderOffset       = maxResendOffset + sizeofInt32
	defaultFrameHeaderMaxLength    = 2 * cacheLineLength

	entityTagOffset                    = defaultFrameHeaderOffset + defaultFrameHeaderMaxLength
	responseCorrelationIDOffset        = entityTagOffset + sizeofInt64
	lingerTimeoutOffset                = responseCorrelationIDOffset + sizeofInt64
	untetheredWindowLimitTimeoutOffset = lingerTimeoutOffset + sizeofInt64
	untetheredRestingTimeoutOffset     = untetheredWindowLimitTimeoutOffset + sizeofInt64
	isGroupOffset                      = untetheredRestingTimeoutOffset + sizeofInt64
	isResponseOffset                   = isGroupOffset + sizeofUint8
	isRejoinOffset                     = isResponseOffset + sizeofUint8
	isReliableOffset                   = isRejoinOffset + sizeofUint8
	isSparseOffset                     = isReliableOffset + sizeofUint8
	signalEOSOffset                    = isSparseOffset + sizeofUint8
	spiesSimulateConnectionOffset      = signalEOSOffset + sizeofUint8
	tetherOffset                       = spiesSimulateConnectionOffset + sizeofUint8
)

// Data frame header, little-endian, at the start of every frame in a term:
//
//	0        4   5    6      8            12          16         20       24               32
//	| length |ver|flags| type | termOffset | sessionId | streamId | termId | reservedValue  | payload…
//
// length = HeaderLength + payload length, unaligned. A length ≤ 0 means the
// frame has not been written (yet). The next frame starts at
// termOffset + align(length, FrameAlignment).
const (
	// FrameLengthOffset is the offset of the int32 frame length.
	FrameLengthOffset = 0
	// VersionOffset is the offset of the uint8 protocol version.
	VersionOffset = FrameLengthOffset + sizeofInt32
	// FlagsOffset is the offset of the uint8 [Flags].
	FlagsOffset = VersionOffset + sizeofUint8
	// TypeOffset is the offset of the uint16 [FrameType].
	TypeOffset = FlagsOffset + sizeofUint8
	// TermOffsetOffset is the offset of the int32 term offset of the frame.
	TermOffsetOffset = TypeOffset + sizeofUint16
	// SessionIDOffset is the offset of the int32 session id.
	SessionIDOffset = TermOffsetOffset + sizeofInt32
	// StreamIDOffset is the offset of the int32 stream id.
	StreamIDOffset = SessionIDOffset + sizeofInt32
	// TermIDOffset is the offset of the int32 term id.
	TermIDOffset = StreamIDOffset + sizeofInt32
	// ReservedValueOffset is the offset of the int64 reserved value.
	ReservedValueOffset = TermIDOffset + sizeofInt32
	// HeaderLength is the length of a data frame header; the payload
	// follows it.
	HeaderLength = ReservedValueOffset + sizeofInt64

	// FrameAlignment is the alignment of every frame in a term, and
	// therefore of every position a reader can stop at.
	FrameAlignment = HeaderLength
)

// CurrentVersion is the data frame protocol version this package writes.
const CurrentVersion uint8 = 0

// MaxMessageLengthLimit caps the message length on every term length:
// the largest message is min(termLength/8, MaxMessageLengthLimit).
const MaxMessageLengthLimit = 16 << 20

// maxMessageTermDivisor: one message never takes more than an eighth of a
// term.
const maxMessageTermDivisor = 8

// termCountBits is the number of bits of a position above the term offset
// that count terms: a stream can use at most 2^31 terms.
const termCountBits = 31

// atomicAlignment is the alignment the log's first byte needs so that
// every 64-bit word at an 8-aligned offset is valid for atomics.
const atomicAlignment = sizeofInt64

// tailCounterOffset returns the metadata offset of a partition's raw tail.
func tailCounterOffset(partition int) int {
	return termTailCountersOffset + partition*sizeofInt64
}

// align rounds n up to a multiple of alignment, a power of two.
func align(n, alignment int) int {
	return (n + alignment - 1) &^ (alignment - 1)
}
