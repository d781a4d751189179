package codec

import "testing"

// Golden values copied once from aeron-protocol.md §10.1–10.3 and checked
// against aeron-archive-codecs.xml and AeronArchive.Configuration at tag
// 1.47.3 (73548bbd82514a7e1a654adad9da9b5ab9705c04) of real-logic/aeron;
// Ping from the same file at 1.48.0 (schema version 11). Change them only
// when the protocol version changes.

func TestSchemaConstants(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"schema id", int64(SchemaID), 101},
		{"schema version", int64(SchemaVersion), 10},
		{"protocol semantic version", int64(ProtocolSemanticVersion), 68352},
		{"NewSemanticVersion(1, 11, 0)", int64(NewSemanticVersion(1, 11, 0)), 68352},
		{"max channel length", MaxChannelLength, 4095},
		{"max var data length", MaxVarDataLength, 1073741824},
		{"null value", NullValue, -1},
		{"null position", NullPosition, -1},
		{"null length", NullLength, -1},
		{"null timestamp", NullTimestamp, -1},
		{"max version_t", int64(maxSemanticVersion), 16777215},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if got := ProtocolSemanticVersion.String(); got != "1.11.0" {
		t.Errorf("ProtocolSemanticVersion = %s, want 1.11.0", got)
	}
	v := NewSemanticVersion(255, 254, 253)
	if v.Major() != 255 || v.Minor() != 254 || v.Patch() != 253 || v.String() != "255.254.253" {
		t.Errorf("NewSemanticVersion(255, 254, 253) = %s", v)
	}
}

func TestTemplateIDs(t *testing.T) {
	for _, tc := range []struct {
		got  TemplateID
		want uint16
		name string
	}{
		{TemplateControlResponse, 1, "ControlResponse"},
		{TemplateConnectRequest, 2, "ConnectRequest"},
		{TemplateCloseSessionRequest, 3, "CloseSessionRequest"},
		{TemplateStartRecordingRequest, 4, "StartRecordingRequest"},
		{TemplateStopRecordingRequest, 5, "StopRecordingRequest"},
		{TemplateReplayRequest, 6, "ReplayRequest"},
		{TemplateStopReplayRequest, 7, "StopReplayRequest"},
		{TemplateListRecordingsRequest, 8, "ListRecordingsRequest"},
		{TemplateListRecordingsForURIRequest, 9, "ListRecordingsForUriRequest"},
		{TemplateListRecordingRequest, 10, "ListRecordingRequest"},
		{TemplateRecordingPositionRequest, 12, "RecordingPositionRequest"},
		{TemplateTruncateRecordingRequest, 13, "TruncateRecordingRequest"},
		{TemplateStopRecordingSubscriptionRequest, 14, "StopRecordingSubscriptionRequest"},
		{TemplateStopPositionRequest, 15, "StopPositionRequest"},
		{TemplateBoundedReplayRequest, 18, "BoundedReplayRequest"},
		{TemplateStopAllReplaysRequest, 19, "StopAllReplaysRequest"},
		{TemplateRecordingDescriptor, 22, "RecordingDescriptor"},
		{TemplateRecordingSubscriptionDescriptor, 23, "RecordingSubscriptionDescriptor"},
		{TemplateRecordingSignalEvent, 24, "RecordingSignalEvent"},
		{TemplateStartPositionRequest, 52, "StartPositionRequest"},
		{TemplateDetachSegmentsRequest, 53, "DetachSegmentsRequest"},
		{TemplatePurgeSegmentsRequest, 55, "PurgeSegmentsRequest"},
		{TemplateAttachSegmentsRequest, 56, "AttachSegmentsRequest"},
		{TemplateAuthConnectRequest, 58, "AuthConnectRequest"},
		{TemplateChallenge, 59, "Challenge"},
		{TemplateChallengeResponse, 60, "ChallengeResponse"},
		{TemplateKeepAliveRequest, 61, "KeepAliveRequest"},
		{TemplateStartRecordingRequest2, 63, "StartRecordingRequest2"},
		{TemplateStopRecordingByIdentityRequest, 65, "StopRecordingByIdentityRequest"},
		{TemplateExtendRecordingRequest2, 64, "ExtendRecordingRequest2"},
		{TemplateMaxRecordedPositionRequest, 67, "MaxRecordedPositionRequest"},
		{TemplateArchiveIDRequest, 68, "ArchiveIdRequest"},
		{TemplateRecordingStarted, 101, "RecordingStarted"},
		{TemplateRecordingProgress, 102, "RecordingProgress"},
		{TemplateRecordingStopped, 103, "RecordingStopped"},
		{TemplatePurgeRecordingRequest, 104, "PurgeRecordingRequest"},
		{TemplatePing, 106, "Ping"},
	} {
		if uint16(tc.got) != tc.want || tc.got.String() != tc.name {
			t.Errorf("%s: template %d (%s), want %d", tc.name, uint16(tc.got), tc.got, tc.want)
		}
	}
	if got := TemplateID(11).String(); got != "TemplateID(11)" {
		t.Errorf("TemplateID(11) = %s", got)
	}
	if len(templateNames) != 37 {
		t.Errorf("%d named templates; a new one needs a golden row above", len(templateNames))
	}
}

func TestLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"header.blockLength", headerBlockLengthOffset, 0},
		{"header.templateId", headerTemplateIDOffset, 2},
		{"header.schemaId", headerSchemaIDOffset, 4},
		{"header.version", headerVersionOffset, 6},
		{"header length", HeaderLength, 8},
		{"var length prefix", varLengthSize, 4},

		{"controlSessionId", controlSessionIDOffset, 0},
		{"correlationId", correlationIDOffset, 8},
		{"KeepAliveRequest, ArchiveIdRequest, ChallengeResponse block", sessionPrefixLength, 16},
		{"ID request id", idRequestIDOffset, 16},
		{"ID request block", idRequestBlockLength, 24},

		{"CloseSessionRequest.controlSessionId", closeSessionControlSessionIDOffset, 0},
		{"CloseSessionRequest block", closeSessionBlockLength, 8},

		{"ConnectRequest.correlationId", connectCorrelationIDOffset, 0},
		{"ConnectRequest.responseStreamId", connectResponseStreamIDOffset, 8},
		{"ConnectRequest.version", connectVersionOffset, 12},
		{"ConnectRequest block", connectBlockLength, 16},
		{"ConnectRequest.version sinceVersion", connectVersionSinceVersion, 2},

		{"StartRecordingRequest.streamId", startRecordingStreamIDOffset, 16},
		{"StartRecordingRequest.sourceLocation", startRecordingSourceLocationOffset, 20},
		{"StartRecordingRequest block", startRecordingBlockLength, 24},
		{"StartRecordingRequest2.autoStop", startRecording2AutoStopOffset, 24},
		{"StartRecordingRequest2 block", startRecording2BlockLength, 28},
		{"ExtendRecordingRequest2.recordingId", extendRecordingIDOffset, 16},
		{"ExtendRecordingRequest2.streamId", extendRecordingStreamIDOffset, 24},
		{"ExtendRecordingRequest2.sourceLocation", extendRecordingSourceLocationOffset, 28},
		{"ExtendRecordingRequest2.autoStop", extendRecordingAutoStopOffset, 32},
		{"ExtendRecordingRequest2 block", extendRecording2BlockLength, 36},
		{"StopRecordingRequest.streamId", stopRecordingStreamIDOffset, 16},
		{"StopRecordingRequest block", stopRecordingBlockLength, 20},

		{"ListRecordingsRequest.fromRecordingId", listFromRecordingIDOffset, 16},
		{"ListRecordingsRequest.recordCount", listRecordCountOffset, 24},
		{"ListRecordingsRequest block", listRecordingsBlockLength, 28},
		{"ListRecordingsForUriRequest.streamId", listForURIStreamIDOffset, 28},
		{"ListRecordingsForUriRequest block", listForURIBlockLength, 32},
		{"TruncateRecordingRequest.recordingId", truncateRecordingIDOffset, 16},
		{"TruncateRecordingRequest.position", truncatePositionOffset, 24},
		{"TruncateRecordingRequest block", truncateBlockLength, 32},

		{"Replay*.recordingId", replayRecordingIDOffset, 16},
		{"Replay*.position", replayPositionOffset, 24},
		{"Replay*.length", replayLengthOffset, 32},
		{"ReplayRequest.replayStreamId", replayStreamIDOffset, 40},
		{"ReplayRequest.fileIoMaxLength", replayFileIOMaxLengthOffset, 44},
		{"ReplayRequest.replayToken", replayTokenOffset, 48},
		{"ReplayRequest block", replayBlockLength, 56},
		{"BoundedReplayRequest.limitCounterId", boundedLimitCounterIDOffset, 40},
		{"BoundedReplayRequest.replayStreamId", boundedReplayStreamIDOffset, 44},
		{"BoundedReplayRequest.fileIoMaxLength", boundedFileIOMaxLengthOffset, 48},
		{"BoundedReplayRequest.replayToken (unaligned)", boundedReplayTokenOffset, 52},
		{"BoundedReplayRequest block", boundedReplayBlockLength, 60},
		{"fileIoMaxLength sinceVersion", fileIOMaxLengthSinceVersion, 7},
		{"replayToken sinceVersion", replayTokenSinceVersion, 10},

		{"ControlResponse.relevantId", responseRelevantIDOffset, 16},
		{"ControlResponse.code", responseCodeOffset, 24},
		{"ControlResponse.version", responseVersionOffset, 28},
		{"ControlResponse block", responseBlockLength, 32},
		{"ControlResponse.version sinceVersion", responseVersionSinceVersion, 4},
		{"Challenge.version", challengeVersionOffset, 16},
		{"Challenge block", challengeBlockLength, 20},
		{"Ping.controlSessionId", pingControlSessionIDOffset, 0},
		{"Ping block", pingBlockLength, 8},

		{"RecordingDescriptor.recordingId", descRecordingIDOffset, 16},
		{"RecordingDescriptor.startTimestamp", descStartTimestampOffset, 24},
		{"RecordingDescriptor.stopTimestamp", descStopTimestampOffset, 32},
		{"RecordingDescriptor.startPosition", descStartPositionOffset, 40},
		{"RecordingDescriptor.stopPosition", descStopPositionOffset, 48},
		{"RecordingDescriptor.initialTermId", descInitialTermIDOffset, 56},
		{"RecordingDescriptor.segmentFileLength", descSegmentFileLengthOffset, 60},
		{"RecordingDescriptor.termBufferLength", descTermBufferLengthOffset, 64},
		{"RecordingDescriptor.mtuLength", descMTULengthOffset, 68},
		{"RecordingDescriptor.sessionId", descSessionIDOffset, 72},
		{"RecordingDescriptor.streamId", descStreamIDOffset, 76},
		{"RecordingDescriptor block", descBlockLength, 80},
		{"RecordingSubscriptionDescriptor.subscriptionId", subDescSubscriptionIDOffset, 16},
		{"RecordingSubscriptionDescriptor.streamId", subDescStreamIDOffset, 24},
		{"RecordingSubscriptionDescriptor block", subDescBlockLength, 28},
		{"RecordingSignalEvent.recordingId", signalRecordingIDOffset, 16},
		{"RecordingSignalEvent.subscriptionId", signalSubscriptionIDOffset, 24},
		{"RecordingSignalEvent.position", signalPositionOffset, 32},
		{"RecordingSignalEvent.signal", signalSignalOffset, 40},
		{"RecordingSignalEvent block", signalBlockLength, 44},

		{"Recording*.recordingId", eventRecordingIDOffset, 0},
		{"Recording*.startPosition", eventStartPositionOffset, 8},
		{"RecordingProgress.position, RecordingStopped.stopPosition", eventPositionOffset, 16},
		{"RecordingProgress, RecordingStopped block", eventBlockLength, 24},
		{"RecordingStarted.sessionId", startedSessionIDOffset, 16},
		{"RecordingStarted.streamId", startedStreamIDOffset, 20},
		{"RecordingStarted block", startedBlockLength, 24},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
