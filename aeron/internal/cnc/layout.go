package cnc

import "fmt"

// Layout of cnc.dat (Aeron 1.47.3 CncFileDescriptor; aeron-protocol.md
// §1.2-1.3). All integers are in the host's (little-endian) order.
// layout_test.go pins every value.

// FileName is the CnC file's name inside the Aeron directory.
const FileName = "cnc.dat"

const (
	sizeofInt32     = 4
	sizeofInt64     = 8
	cacheLineLength = 64
)

// Header ("metadata"), at the start of the file:
//
//	0         4          8           12          16         20          24                32             40      48 ... 128
//	| version | to-driver | to-clients | counters  | counters | error log | client liveness | driver start | driver |
//	|         | length    | length     | meta len  | vals len | length    | timeout (ns)    | time (ms)    | PID    |
//
// The driver writes the version last, with a release store: a non-zero
// version means the rest of the header is complete.
const (
	// VersionOffset is the offset of the int32 [SemanticVersion].
	VersionOffset = 0
	// ToDriverBufferLengthOffset is the offset of the int32 length of the
	// to-driver ring buffer section.
	ToDriverBufferLengthOffset = VersionOffset + sizeofInt32
	// ToClientsBufferLengthOffset is the offset of the int32 length of the
	// to-clients broadcast buffer section.
	ToClientsBufferLengthOffset = ToDriverBufferLengthOffset + sizeofInt32
	// CountersMetadataBufferLengthOffset is the offset of the int32 length
	// of the counters metadata section.
	CountersMetadataBufferLengthOffset = ToClientsBufferLengthOffset + sizeofInt32
	// CountersValuesBufferLengthOffset is the offset of the int32 length of
	// the counters values section.
	CountersValuesBufferLengthOffset = CountersMetadataBufferLengthOffset + sizeofInt32
	// ErrorLogBufferLengthOffset is the offset of the int32 length of the
	// error log section.
	ErrorLogBufferLengthOffset = CountersValuesBufferLengthOffset + sizeofInt32
	// ClientLivenessTimeoutOffset is the offset of the int64 client
	// liveness timeout in nanoseconds.
	ClientLivenessTimeoutOffset = ErrorLogBufferLengthOffset + sizeofInt32
	// StartTimestampOffset is the offset of the int64 driver start time in
	// epoch milliseconds.
	StartTimestampOffset = ClientLivenessTimeoutOffset + sizeofInt64
	// PIDOffset is the offset of the int64 driver process id.
	PIDOffset = StartTimestampOffset + sizeofInt64
	// MetadataLength is the length of the header fields.
	MetadataLength = PIDOffset + sizeofInt64

	// metadataAlignment: the sections start on a fresh pair of cache
	// lines.
	metadataAlignment = 2 * cacheLineLength
	// EndOfMetadataOffset is where the first section starts.
	EndOfMetadataOffset = (MetadataLength + metadataAlignment - 1) &^ (metadataAlignment - 1)
)

// Section names one of the five consecutive sections after the header, in
// file order.
type Section int

const (
	// ToDriver is the to-driver ManyToOneRingBuffer (client commands).
	ToDriver Section = iota
	// ToClients is the to-clients broadcast buffer (driver responses).
	ToClients
	// CountersMetadata is the counters metadata buffer.
	CountersMetadata
	// CountersValues is the counters values buffer.
	CountersValues
	// ErrorLog is the driver's distinct error log.
	ErrorLog

	sectionCount = iota
)

// String returns the section's name.
func (s Section) String() string {
	switch s {
	case ToDriver:
		return "to-driver buffer"
	case ToClients:
		return "to-clients buffer"
	case CountersMetadata:
		return "counters metadata buffer"
	case CountersValues:
		return "counters values buffer"
	case ErrorLog:
		return "error log buffer"
	default:
		return fmt.Sprintf("Section(%d)", int(s))
	}
}

// lengthOffset returns the header offset of the section's length field.
func (s Section) lengthOffset() int {
	switch s {
	case ToDriver:
		return ToDriverBufferLengthOffset
	case ToClients:
		return ToClientsBufferLengthOffset
	case CountersMetadata:
		return CountersMetadataBufferLengthOffset
	case CountersValues:
		return CountersValuesBufferLengthOffset
	case ErrorLog:
		return ErrorLogBufferLengthOffset
	default:
		panic(fmt.Sprintf("assertion failed: cnc: no length field for %v", s))
	}
}
