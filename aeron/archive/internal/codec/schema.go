package codec

import "fmt"

// The archive codecs' SBE schema (aeron-archive-codecs.xml at Aeron 1.47.3:
// id="101" version="10") and the archive client protocol version
// (AeronArchive.Configuration.PROTOCOL_*_VERSION). layout_test.go pins them.
const (
	// SchemaID is the SBE schema id every archive message carries in its
	// header. A message with another schema id is not an archive message.
	SchemaID uint16 = 101
	// SchemaVersion is the SBE schema version this package encodes (every
	// request's header carries it) and the newest whose fields it knows.
	// Messages of older versions decode with their newer fields set to
	// their null values; messages of newer versions decode with the fields
	// this version does not know skipped.
	SchemaVersion uint16 = 10

	// ProtocolMajorVersion is the major part of [ProtocolSemanticVersion].
	// The archive accepts a client only if its major version equals this.
	ProtocolMajorVersion = 1
	// ProtocolMinorVersion is the minor part of [ProtocolSemanticVersion].
	ProtocolMinorVersion = 11
	// ProtocolPatchVersion is the patch part of [ProtocolSemanticVersion].
	ProtocolPatchVersion = 0
	// ProtocolSemanticVersion is the archive client protocol version
	// 1.11.0, the Version a client sends in [ConnectRequest] and
	// [AuthConnectRequest]. Archives answer with their own in
	// [ControlResponse.Version].
	ProtocolSemanticVersion = SemanticVersion(ProtocolMajorVersion<<16 | ProtocolMinorVersion<<8 | ProtocolPatchVersion)
)

// SemanticVersion is Aeron's version_t: major, minor and patch packed into
// the low three bytes of an int32 (Agrona SemanticVersion.compose). Zero is
// the null value: the field was absent (a message of a schema version that
// predates it).
type SemanticVersion int32

// maxSemanticVersion is version_t's maxValue in the schema (0xFFFFFF).
const maxSemanticVersion SemanticVersion = 1<<24 - 1

// NewSemanticVersion composes a version from its parts.
func NewSemanticVersion(major, minor, patch uint8) SemanticVersion {
	return SemanticVersion(int32(major)<<16 | int32(minor)<<8 | int32(patch))
}

// Major returns the major version.
func (v SemanticVersion) Major() uint8 { return uint8(v >> 16) }

// Minor returns the minor version.
func (v SemanticVersion) Minor() uint8 { return uint8(v >> 8) }

// Patch returns the patch version.
func (v SemanticVersion) Patch() uint8 { return uint8(v) }

// String returns "major.minor.patch".
func (v SemanticVersion) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch())
}

// Null values and protocol limits.
const (
	// NullValue is Aeron.NULL_VALUE: "none" for ids, positions, lengths,
	// timestamps, counter ids and replay tokens. A request field documented
	// as optional must be NullValue, not zero, when unused.
	NullValue = -1
	// NullPosition is AeronArchive.NULL_POSITION: as a replay position,
	// "from the start of the recording"; as a stop position, "still
	// recording".
	NullPosition int64 = NullValue
	// NullLength is AeronArchive.NULL_LENGTH: as a replay length, "to the
	// end of the recording, following it while it is live".
	NullLength int64 = NullValue
	// NullTimestamp is AeronArchive.NULL_TIMESTAMP: a stop timestamp of a
	// recording that has not stopped.
	NullTimestamp int64 = NullValue

	// MaxChannelLength is the longest channel URI an encoder accepts: the
	// archive parses every channel with ChannelUri.parse, which rejects
	// URIs longer than ChannelUri.MAX_URI_LENGTH (4095) in Aeron 1.47.3.
	MaxChannelLength = 4095
	// MaxVarDataLength is the largest length of a variable-length field
	// (the maxValue of the length in varAsciiEncoding and varDataEncoding).
	// Encoders reject longer credentials; decoders reject longer lengths
	// before looking at the bytes.
	MaxVarDataLength = 1 << 30
)
