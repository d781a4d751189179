package counters

import "math"

// Layouts of Agrona's CountersReader records (Agrona 2.0.1 as used by Aeron
// 1.47.3; aeron-protocol.md §8.1-8.2) and of the keys of the counters ferry
// reads (§8.4). layout_test.go pins every value.

const (
	sizeofInt32     = 4
	sizeofInt64     = 8
	cacheLineLength = 64
)

// Values record, one per counter at id × ValueLength in the values buffer:
//
//	0       8                 16         24             32 ... 128
//	| value | registration id | owner id | reference id | padding |
const (
	// ValueOffset is the offset of the int64 counter value.
	ValueOffset = 0
	// RegistrationIDOffset is the offset of the int64 registration id of
	// the entity the counter belongs to.
	RegistrationIDOffset = ValueOffset + sizeofInt64
	// OwnerIDOffset is the offset of the int64 owner id (the client id
	// for client-owned counters).
	OwnerIDOffset = RegistrationIDOffset + sizeofInt64
	// ReferenceIDOffset is the offset of the int64 reference id.
	ReferenceIDOffset = OwnerIDOffset + sizeofInt64
	// ValueLength is the length of a values record: two cache lines, so
	// that counters do not false-share.
	ValueLength = 2 * cacheLineLength
)

// Metadata record, one per counter at id × MetadataLength in the metadata
// buffer:
//
//	0       4         8                16           128            132 ... 512
//	| state | type id | free-for-reuse | key (112)  | label length | label (380) |
//	                  | deadline (ms)  |
const (
	// StateOffset is the offset of the int32 [RecordState].
	StateOffset = 0
	// TypeIDOffset is the offset of the int32 [TypeID].
	TypeIDOffset = StateOffset + sizeofInt32
	// FreeForReuseDeadlineOffset is the offset of the int64 epoch-ms
	// deadline after which a freed counter id may be reused.
	FreeForReuseDeadlineOffset = TypeIDOffset + sizeofInt32
	// KeyOffset is the offset of the key bytes, whose layout depends on
	// the type id.
	KeyOffset = FreeForReuseDeadlineOffset + sizeofInt64
	// LabelLengthOffset is the offset of the int32 label length.
	LabelLengthOffset = 2 * cacheLineLength
	// MaxKeyLength is the room for the key.
	MaxKeyLength = LabelLengthOffset - KeyOffset
	// LabelOffset is the offset of the label's ASCII bytes.
	LabelOffset = LabelLengthOffset + sizeofInt32
	// MetadataLength is the length of a metadata record: the key half
	// and six cache lines for the label.
	MetadataLength = LabelLengthOffset + 6*cacheLineLength
	// MaxLabelLength is the room for the label.
	MaxLabelLength = MetadataLength - LabelOffset
)

// NotFreeToReuse is the free-for-reuse deadline of a counter that is
// allocated (Long.MAX_VALUE in Agrona).
const NotFreeToReuse int64 = math.MaxInt64

// Key of the driver's stream counters (publisher limit, sender, receiver
// and subscriber positions, …):
//
//	0                 8            12          16               20
//	| registration id | session id | stream id | channel length | channel ASCII |
const (
	// StreamKeyRegistrationIDOffset is the offset of the int64
	// publication or subscription registration id.
	StreamKeyRegistrationIDOffset = 0
	// StreamKeySessionIDOffset is the offset of the int32 session id.
	StreamKeySessionIDOffset = StreamKeyRegistrationIDOffset + sizeofInt64
	// StreamKeyStreamIDOffset is the offset of the int32 stream id.
	StreamKeyStreamIDOffset = StreamKeySessionIDOffset + sizeofInt32
	// StreamKeyChannelLengthOffset is the offset of the int32 channel
	// length.
	StreamKeyChannelLengthOffset = StreamKeyStreamIDOffset + sizeofInt32
	// StreamKeyChannelOffset is the offset of the channel's ASCII bytes,
	// truncated to fit the key.
	StreamKeyChannelOffset = StreamKeyChannelLengthOffset + sizeofInt32
	// StreamKeyMaxChannelLength is the room for the channel.
	StreamKeyMaxChannelLength = MaxKeyLength - StreamKeyChannelOffset
)

// Key of the client heartbeat counter ([TypeClientHeartbeat]): the client
// id alone.
const (
	// HeartbeatKeyClientIDOffset is the offset of the int64 client id.
	HeartbeatKeyClientIDOffset = 0
)

// Key of the local socket address counter ([TypeLocalSocketAddressStatus]):
//
//	0                          4                8
//	| channel status counter id | address length | address ASCII |
const (
	// LocalSocketKeyChannelStatusIDOffset is the offset of the int32 id
	// of the channel status counter the address belongs to.
	LocalSocketKeyChannelStatusIDOffset = 0
	// LocalSocketKeyAddressLengthOffset is the offset of the int32
	// address length.
	LocalSocketKeyAddressLengthOffset = LocalSocketKeyChannelStatusIDOffset + sizeofInt32
	// LocalSocketKeyAddressOffset is the offset of the address ASCII.
	LocalSocketKeyAddressOffset = LocalSocketKeyAddressLengthOffset + sizeofInt32
)

// Key of the archive's recording position counter ([TypeRecordingPosition],
// "rec-pos"); the archive id follows the variable-length source identity:
//
//	0              8            12                       16                   16+L
//	| recording id | session id | source identity length | source identity (L) | archive id |
const (
	// RecordingPosKeyRecordingIDOffset is the offset of the int64
	// recording id.
	RecordingPosKeyRecordingIDOffset = 0
	// RecordingPosKeySessionIDOffset is the offset of the int32 session id
	// of the recorded image.
	RecordingPosKeySessionIDOffset = RecordingPosKeyRecordingIDOffset + sizeofInt64
	// RecordingPosKeySourceIdentityLengthOffset is the offset of the int32
	// source identity length L.
	RecordingPosKeySourceIdentityLengthOffset = RecordingPosKeySessionIDOffset + sizeofInt32
	// RecordingPosKeySourceIdentityOffset is the offset of the source
	// identity ASCII; the int64 archive id follows it at this offset + L.
	RecordingPosKeySourceIdentityOffset = RecordingPosKeySourceIdentityLengthOffset + sizeofInt32
	// RecordingPosKeyMaxSourceIdentityLength is the longest source
	// identity the archive stores (it truncates longer ones) so that the
	// archive id still fits in the key.
	RecordingPosKeyMaxSourceIdentityLength = MaxKeyLength - RecordingPosKeySourceIdentityOffset - sizeofInt64
	// recordingPosKeyFixedLength is the key length without the source
	// identity: the key is recordingPosKeyFixedLength + L bytes.
	recordingPosKeyFixedLength = RecordingPosKeySourceIdentityOffset + sizeofInt64
)
