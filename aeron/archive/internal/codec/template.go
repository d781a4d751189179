package codec

import "strconv"

// TemplateID is the SBE template id in a message header: which message of
// the archive schema the block and var fields that follow belong to.
type TemplateID uint16

// Template ids of the messages this package encodes or decodes (the id
// attribute of each sbe:message in aeron-archive-codecs.xml).
const (
	// Archive → client: control-session responses and events.
	TemplateControlResponse                 TemplateID = 1
	TemplateRecordingDescriptor             TemplateID = 22
	TemplateRecordingSubscriptionDescriptor TemplateID = 23
	TemplateRecordingSignalEvent            TemplateID = 24
	TemplateChallenge                       TemplateID = 59
	// TemplatePing is the archive's liveness ping from schema version 11
	// (Aeron 1.48) on. An Aeron 1.47 archive pings with a
	// [ControlResponse] instead (see [ControlResponse.IsPing]).
	TemplatePing TemplateID = 106

	// Archive → client: the recording-events stream (off by default).
	TemplateRecordingStarted  TemplateID = 101
	TemplateRecordingProgress TemplateID = 102
	TemplateRecordingStopped  TemplateID = 103

	// Client → archive: session.
	TemplateConnectRequest      TemplateID = 2
	TemplateCloseSessionRequest TemplateID = 3
	TemplateAuthConnectRequest  TemplateID = 58
	TemplateChallengeResponse   TemplateID = 60
	TemplateKeepAliveRequest    TemplateID = 61
	TemplateArchiveIDRequest    TemplateID = 68

	// Client → archive: recording.
	TemplateStartRecordingRequest            TemplateID = 4
	TemplateStopRecordingRequest             TemplateID = 5
	TemplateStopRecordingSubscriptionRequest TemplateID = 14
	TemplateStartRecordingRequest2           TemplateID = 63
	TemplateStopRecordingByIdentityRequest   TemplateID = 65
	TemplateExtendRecordingRequest2          TemplateID = 64

	// Client → archive: catalog queries and maintenance.
	TemplateListRecordingsRequest       TemplateID = 8
	TemplateListRecordingsForURIRequest TemplateID = 9
	TemplateListRecordingRequest        TemplateID = 10
	TemplateRecordingPositionRequest    TemplateID = 12
	TemplateTruncateRecordingRequest    TemplateID = 13
	TemplateStopPositionRequest         TemplateID = 15
	TemplateStartPositionRequest        TemplateID = 52
	TemplateDetachSegmentsRequest       TemplateID = 53
	TemplatePurgeSegmentsRequest        TemplateID = 55
	TemplateAttachSegmentsRequest       TemplateID = 56
	TemplateMaxRecordedPositionRequest  TemplateID = 67
	TemplatePurgeRecordingRequest       TemplateID = 104

	// Client → archive: replay.
	TemplateReplayRequest         TemplateID = 6
	TemplateStopReplayRequest     TemplateID = 7
	TemplateBoundedReplayRequest  TemplateID = 18
	TemplateStopAllReplaysRequest TemplateID = 19
)

var templateNames = map[TemplateID]string{
	TemplateControlResponse:                  "ControlResponse",
	TemplateRecordingDescriptor:              "RecordingDescriptor",
	TemplateRecordingSubscriptionDescriptor:  "RecordingSubscriptionDescriptor",
	TemplateRecordingSignalEvent:             "RecordingSignalEvent",
	TemplateChallenge:                        "Challenge",
	TemplatePing:                             "Ping",
	TemplateRecordingStarted:                 "RecordingStarted",
	TemplateRecordingProgress:                "RecordingProgress",
	TemplateRecordingStopped:                 "RecordingStopped",
	TemplateConnectRequest:                   "ConnectRequest",
	TemplateCloseSessionRequest:              "CloseSessionRequest",
	TemplateAuthConnectRequest:               "AuthConnectRequest",
	TemplateChallengeResponse:                "ChallengeResponse",
	TemplateKeepAliveRequest:                 "KeepAliveRequest",
	TemplateArchiveIDRequest:                 "ArchiveIdRequest",
	TemplateStartRecordingRequest:            "StartRecordingRequest",
	TemplateStopRecordingRequest:             "StopRecordingRequest",
	TemplateStopRecordingSubscriptionRequest: "StopRecordingSubscriptionRequest",
	TemplateStartRecordingRequest2:           "StartRecordingRequest2",
	TemplateStopRecordingByIdentityRequest:   "StopRecordingByIdentityRequest",
	TemplateExtendRecordingRequest2:          "ExtendRecordingRequest2",
	TemplateListRecordingsRequest:            "ListRecordingsRequest",
	TemplateListRecordingsForURIRequest:      "ListRecordingsForUriRequest",
	TemplateListRecordingRequest:             "ListRecordingRequest",
	TemplateRecordingPositionRequest:         "RecordingPositionRequest",
	TemplateTruncateRecordingRequest:         "TruncateRecordingRequest",
	TemplateStopPositionRequest:              "StopPositionRequest",
	TemplateStartPositionRequest:             "StartPositionRequest",
	TemplateDetachSegmentsRequest:            "DetachSegmentsRequest",
	TemplatePurgeSegmentsRequest:             "PurgeSegmentsRequest",
	TemplateAttachSegmentsRequest:            "AttachSegmentsRequest",
	TemplateMaxRecordedPositionRequest:       "MaxRecordedPositionRequest",
	TemplatePurgeRecordingRequest:            "PurgeRecordingRequest",
	TemplateReplayRequest:                    "ReplayRequest",
	TemplateStopReplayRequest:                "StopReplayRequest",
	TemplateBoundedReplayRequest:             "BoundedReplayRequest",
	TemplateStopAllReplaysRequest:            "StopAllReplaysRequest",
}

// String returns the message name as the schema spells it, or
// "TemplateID(n)" for a template this package does not know.
func (t TemplateID) String() string {
	if name, ok := templateNames[t]; ok {
		return name
	}
	return "TemplateID(" + strconv.Itoa(int(t)) + ")"
}
