package codec

// Layouts of the archive messages (aeron-archive-codecs.xml at Aeron
// 1.47.3, schema version 10; aeron-protocol.md §10.2–10.3). All integers
// are little-endian. A message is
//
//	| header (8) | block (blockLength bytes) | var field | var field | ...
//
// The block holds the fixed-size fields in schema order, packed without
// padding (so int64s may be unaligned, e.g. replayToken at 52 in
// BoundedReplayRequest). Offsets below are relative to the block's start,
// as in the schema; the block starts at HeaderLength. Each var field is a
// uint32 length and that many bytes, in schema order after the block.
// layout_test.go pins every value.

const (
	sizeofUint16 = 2
	sizeofInt32  = 4
	sizeofInt64  = 8

	// varLengthSize is the size of the uint32 length in front of each var
	// field (varAsciiEncoding, varDataEncoding).
	varLengthSize = sizeofInt32
)

// Message header (messageHeader composite):
//
//	0             2            4          6         8
//	| blockLength | templateId | schemaId | version |
const (
	headerBlockLengthOffset = 0
	headerTemplateIDOffset  = headerBlockLengthOffset + sizeofUint16
	headerSchemaIDOffset    = headerTemplateIDOffset + sizeofUint16
	headerVersionOffset     = headerSchemaIDOffset + sizeofUint16
	// HeaderLength is the length of the message header, the offset of the
	// block in every message.
	HeaderLength = headerVersionOffset + sizeofUint16
)

// Session prefix. Every request after connecting, and every
// control-session response, starts its block with:
//
//	0                  8               16
//	| controlSessionId | correlationId | ...
//
// KeepAliveRequest, ArchiveIdRequest and ChallengeResponse (+
// encodedCredentials) are just this prefix.
const (
	controlSessionIDOffset = 0
	correlationIDOffset    = controlSessionIDOffset + sizeofInt64
	sessionPrefixLength    = correlationIDOffset + sizeofInt64
)

// ID request: the session prefix and one int64 id. StopReplayRequest
// (replaySessionId), StopAllReplaysRequest (recordingId, NullValue = all),
// StopRecordingSubscriptionRequest (subscriptionId),
// StopRecordingByIdentityRequest, ListRecordingRequest,
// RecordingPositionRequest, StopPositionRequest, StartPositionRequest,
// MaxRecordedPositionRequest, PurgeRecordingRequest (recordingId):
//
//	16   24
//	| id |
const (
	idRequestIDOffset    = sessionPrefixLength
	idRequestBlockLength = idRequestIDOffset + sizeofInt64
)

// CloseSessionRequest:
//
//	0                  8
//	| controlSessionId |
const (
	closeSessionControlSessionIDOffset = 0
	closeSessionBlockLength            = closeSessionControlSessionIDOffset + sizeofInt64
)

// ConnectRequest and AuthConnectRequest, + responseChannel (+
// encodedCredentials for AuthConnectRequest):
//
//	0               8                  12        16
//	| correlationId | responseStreamId | version |
//
// In ConnectRequest, version is optional since schema version 2; in
// AuthConnectRequest it is always present.
const (
	connectCorrelationIDOffset    = 0
	connectResponseStreamIDOffset = connectCorrelationIDOffset + sizeofInt64
	connectVersionOffset          = connectResponseStreamIDOffset + sizeofInt32
	connectBlockLength            = connectVersionOffset + sizeofInt32

	connectVersionSinceVersion = 2
)

// StartRecordingRequest, + channel:
//
//	16         20               24
//	| streamId | sourceLocation |
//
// StartRecordingRequest2 appends autoStop (BooleanType):
//
//	24         28
//	| autoStop |
const (
	startRecordingStreamIDOffset       = sessionPrefixLength
	startRecordingSourceLocationOffset = startRecordingStreamIDOffset + sizeofInt32
	startRecordingBlockLength          = startRecordingSourceLocationOffset + sizeofInt32
	startRecording2AutoStopOffset      = startRecordingBlockLength
	startRecording2BlockLength         = startRecording2AutoStopOffset + sizeofInt32
)

// ExtendRecordingRequest2, + channel:
//
//	16            24         28               32         36
//	| recordingId | streamId | sourceLocation | autoStop |
const (
	extendRecordingIDOffset             = sessionPrefixLength
	extendRecordingStreamIDOffset       = extendRecordingIDOffset + sizeofInt64
	extendRecordingSourceLocationOffset = extendRecordingStreamIDOffset + sizeofInt32
	extendRecordingAutoStopOffset       = extendRecordingSourceLocationOffset + sizeofInt32
	extendRecording2BlockLength         = extendRecordingAutoStopOffset + sizeofInt32
)

// StopRecordingRequest, + channel:
//
//	16         20
//	| streamId |
const (
	stopRecordingStreamIDOffset = sessionPrefixLength
	stopRecordingBlockLength    = stopRecordingStreamIDOffset + sizeofInt32
)

// ListRecordingsRequest:
//
//	16                24            28
//	| fromRecordingId | recordCount |
//
// ListRecordingsForUriRequest appends streamId, + channel:
//
//	28         32
//	| streamId |
const (
	listFromRecordingIDOffset = sessionPrefixLength
	listRecordCountOffset     = listFromRecordingIDOffset + sizeofInt64
	listRecordingsBlockLength = listRecordCountOffset + sizeofInt32
	listForURIStreamIDOffset  = listRecordingsBlockLength
	listForURIBlockLength     = listForURIStreamIDOffset + sizeofInt32
)

// TruncateRecordingRequest (position), PurgeSegmentsRequest (newStartPosition):
//
//	16            24         32
//	| recordingId | position |
const (
	truncateRecordingIDOffset = sessionPrefixLength
	truncatePositionOffset    = truncateRecordingIDOffset + sizeofInt64
	truncateBlockLength       = truncatePositionOffset + sizeofInt64
)

// Replay range, shared by ReplayRequest and BoundedReplayRequest:
//
//	16            24         32       40
//	| recordingId | position | length |
const (
	replayRecordingIDOffset = sessionPrefixLength
	replayPositionOffset    = replayRecordingIDOffset + sizeofInt64
	replayLengthOffset      = replayPositionOffset + sizeofInt64
	replayRangeEnd          = replayLengthOffset + sizeofInt64

	fileIOMaxLengthSinceVersion = 7
	replayTokenSinceVersion     = 10
)

// ReplayRequest, + replayChannel:
//
//	40               44                48            56
//	| replayStreamId | fileIoMaxLength | replayToken |
//	                   (since v7)        (since v10)
const (
	replayStreamIDOffset        = replayRangeEnd
	replayFileIOMaxLengthOffset = replayStreamIDOffset + sizeofInt32
	replayTokenOffset           = replayFileIOMaxLengthOffset + sizeofInt32
	replayBlockLength           = replayTokenOffset + sizeofInt64
)

// BoundedReplayRequest, + replayChannel (replayToken is unaligned):
//
//	40               44               48                52            60
//	| limitCounterId | replayStreamId | fileIoMaxLength | replayToken |
//	                                    (since v7)        (since v10)
const (
	boundedLimitCounterIDOffset  = replayRangeEnd
	boundedReplayStreamIDOffset  = boundedLimitCounterIDOffset + sizeofInt32
	boundedFileIOMaxLengthOffset = boundedReplayStreamIDOffset + sizeofInt32
	boundedReplayTokenOffset     = boundedFileIOMaxLengthOffset + sizeofInt32
	boundedReplayBlockLength     = boundedReplayTokenOffset + sizeofInt64
)

// ControlResponse, + errorMessage:
//
//	16           24     28        32
//	| relevantId | code | version |
//	                      (since v4)
const (
	responseRelevantIDOffset = sessionPrefixLength
	responseCodeOffset       = responseRelevantIDOffset + sizeofInt64
	responseVersionOffset    = responseCodeOffset + sizeofInt32
	responseBlockLength      = responseVersionOffset + sizeofInt32

	responseVersionSinceVersion = 4
)

// Challenge, + encodedChallenge:
//
//	16        20
//	| version |
const (
	challengeVersionOffset = sessionPrefixLength
	challengeBlockLength   = challengeVersionOffset + sizeofInt32
)

// RecordingDescriptor, + strippedChannel, originalChannel, sourceIdentity.
// The archive copies it from its catalog entry, so the message may end in
// zero padding after sourceIdentity.
//
//	16            24               32              40              48             56
//	| recordingId | startTimestamp | stopTimestamp | startPosition | stopPosition |
//	56              60                  64                 68          72          76         80
//	| initialTermId | segmentFileLength | termBufferLength | mtuLength | sessionId | streamId |
const (
	descRecordingIDOffset       = sessionPrefixLength
	descStartTimestampOffset    = descRecordingIDOffset + sizeofInt64
	descStopTimestampOffset     = descStartTimestampOffset + sizeofInt64
	descStartPositionOffset     = descStopTimestampOffset + sizeofInt64
	descStopPositionOffset      = descStartPositionOffset + sizeofInt64
	descInitialTermIDOffset     = descStopPositionOffset + sizeofInt64
	descSegmentFileLengthOffset = descInitialTermIDOffset + sizeofInt32
	descTermBufferLengthOffset  = descSegmentFileLengthOffset + sizeofInt32
	descMTULengthOffset         = descTermBufferLengthOffset + sizeofInt32
	descSessionIDOffset         = descMTULengthOffset + sizeofInt32
	descStreamIDOffset          = descSessionIDOffset + sizeofInt32
	descBlockLength             = descStreamIDOffset + sizeofInt32
)

// RecordingSubscriptionDescriptor, + strippedChannel:
//
//	16               24         28
//	| subscriptionId | streamId |
const (
	subDescSubscriptionIDOffset = sessionPrefixLength
	subDescStreamIDOffset       = subDescSubscriptionIDOffset + sizeofInt64
	subDescBlockLength          = subDescStreamIDOffset + sizeofInt32
)

// RecordingSignalEvent:
//
//	16            24               32         40       44
//	| recordingId | subscriptionId | position | signal |
const (
	signalRecordingIDOffset    = sessionPrefixLength
	signalSubscriptionIDOffset = signalRecordingIDOffset + sizeofInt64
	signalPositionOffset       = signalSubscriptionIDOffset + sizeofInt64
	signalSignalOffset         = signalPositionOffset + sizeofInt64
	signalBlockLength          = signalSignalOffset + sizeofInt32
)

// Ping (schema version 11 on):
//
//	0                  8
//	| controlSessionId |
const (
	pingControlSessionIDOffset = 0
	pingBlockLength            = pingControlSessionIDOffset + sizeofInt64
)

// Recording events. RecordingStarted, + channel, sourceIdentity:
//
//	0             8               16          20         24
//	| recordingId | startPosition | sessionId | streamId |
//
// RecordingProgress (position) and RecordingStopped (stopPosition):
//
//	0             8               16                       24
//	| recordingId | startPosition | position / stopPosition |
const (
	eventRecordingIDOffset   = 0
	eventStartPositionOffset = eventRecordingIDOffset + sizeofInt64
	eventPositionOffset      = eventStartPositionOffset + sizeofInt64
	eventBlockLength         = eventPositionOffset + sizeofInt64

	startedSessionIDOffset = eventPositionOffset
	startedStreamIDOffset  = startedSessionIDOffset + sizeofInt32
	startedBlockLength     = startedStreamIDOffset + sizeofInt32
)
