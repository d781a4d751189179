package codec

import "strconv"

// The schema's enums are int32 on the wire. Decoders keep a value the
// schema does not list (a newer archive may add one) as is; its String
// method then prints the type and the number. Encoders reject such values.

// ControlResponseCode is the code of a [ControlResponse].
type ControlResponseCode int32

// ControlResponseCode values.
const (
	// ResponseCodeOK: the request succeeded; RelevantID carries its result.
	ResponseCodeOK ControlResponseCode = 0
	// ResponseCodeError: the request failed; RelevantID is an [ErrorCode]
	// and ErrorMessage says why.
	ResponseCodeError ControlResponseCode = 1
	// ResponseCodeRecordingUnknown: the recording id is not in the catalog,
	// or a listing ended before it sent the number of descriptors asked
	// for; RelevantID is the recording id.
	ResponseCodeRecordingUnknown ControlResponseCode = 2
	// ResponseCodeSubscriptionUnknown: the subscription is not known to the
	// archive; RelevantID is the subscription id.
	ResponseCodeSubscriptionUnknown ControlResponseCode = 3
)

var controlResponseCodeNames = [...]string{
	ResponseCodeOK:                  "OK",
	ResponseCodeError:               "ERROR",
	ResponseCodeRecordingUnknown:    "RECORDING_UNKNOWN",
	ResponseCodeSubscriptionUnknown: "SUBSCRIPTION_UNKNOWN",
}

// String returns the schema's name of the code.
func (c ControlResponseCode) String() string {
	return enumName(controlResponseCodeNames[:], int64(c), "ControlResponseCode")
}

// RecordingSignal is what happened to a recording, in a
// [RecordingSignalEvent].
type RecordingSignal int32

// RecordingSignal values.
const (
	// SignalStart: a recording started for an image.
	SignalStart RecordingSignal = 0
	// SignalStop: a recording stopped; Position is its stop position.
	SignalStop RecordingSignal = 1
	// SignalExtend: a recording started being extended.
	SignalExtend RecordingSignal = 2
	// SignalReplicate: a recording descriptor was replicated from a
	// source archive.
	SignalReplicate RecordingSignal = 3
	// SignalMerge: a replicated recording merged with the live stream.
	SignalMerge RecordingSignal = 4
	// SignalSync: a recording synchronised with its source archive.
	SignalSync RecordingSignal = 5
	// SignalDelete: segments of a recording were deleted (truncate,
	// purge).
	SignalDelete RecordingSignal = 6
	// SignalReplicateEnd: a replication ended.
	SignalReplicateEnd RecordingSignal = 7
)

var recordingSignalNames = [...]string{
	SignalStart:        "START",
	SignalStop:         "STOP",
	SignalExtend:       "EXTEND",
	SignalReplicate:    "REPLICATE",
	SignalMerge:        "MERGE",
	SignalSync:         "SYNC",
	SignalDelete:       "DELETE",
	SignalReplicateEnd: "REPLICATE_END",
}

// String returns the schema's name of the signal.
func (s RecordingSignal) String() string {
	return enumName(recordingSignalNames[:], int64(s), "RecordingSignal")
}

// SourceLocation says where the archive finds a stream to record.
type SourceLocation int32

// SourceLocation values.
const (
	// SourceLocal: the publication is on the archive's own media driver
	// (the archive records it through a spy or IPC).
	SourceLocal SourceLocation = 0
	// SourceRemote: the publication is on another host; the archive
	// subscribes to it over the network.
	SourceRemote SourceLocation = 1
)

var sourceLocationNames = [...]string{
	SourceLocal:  "LOCAL",
	SourceRemote: "REMOTE",
}

// String returns the schema's name of the location.
func (l SourceLocation) String() string {
	return enumName(sourceLocationNames[:], int64(l), "SourceLocation")
}

// valid reports whether l is a value the schema lists.
func (l SourceLocation) valid() bool { return l == SourceLocal || l == SourceRemote }

// ErrorCode is the archive's error code (io.aeron.archive.client.
// ArchiveException) carried in RelevantID of a [ControlResponse] whose
// code is [ResponseCodeError].
type ErrorCode int64

// ErrorCode values of Aeron 1.47.3.
const (
	ErrorCodeGeneric                      ErrorCode = 0
	ErrorCodeActiveListing                ErrorCode = 1
	ErrorCodeActiveRecording              ErrorCode = 2
	ErrorCodeActiveSubscription           ErrorCode = 3
	ErrorCodeUnknownSubscription          ErrorCode = 4
	ErrorCodeUnknownRecording             ErrorCode = 5
	ErrorCodeUnknownReplay                ErrorCode = 6
	ErrorCodeMaxReplays                   ErrorCode = 7
	ErrorCodeMaxRecordings                ErrorCode = 8
	ErrorCodeInvalidExtension             ErrorCode = 9
	ErrorCodeAuthenticationRejected       ErrorCode = 10
	ErrorCodeStorageSpace                 ErrorCode = 11
	ErrorCodeUnknownReplication           ErrorCode = 12
	ErrorCodeUnauthorisedAction           ErrorCode = 13
	ErrorCodeReplicationConnectionFailure ErrorCode = 14
)

var errorCodeNames = [...]string{
	ErrorCodeGeneric:                      "GENERIC",
	ErrorCodeActiveListing:                "ACTIVE_LISTING",
	ErrorCodeActiveRecording:              "ACTIVE_RECORDING",
	ErrorCodeActiveSubscription:           "ACTIVE_SUBSCRIPTION",
	ErrorCodeUnknownSubscription:          "UNKNOWN_SUBSCRIPTION",
	ErrorCodeUnknownRecording:             "UNKNOWN_RECORDING",
	ErrorCodeUnknownReplay:                "UNKNOWN_REPLAY",
	ErrorCodeMaxReplays:                   "MAX_REPLAYS",
	ErrorCodeMaxRecordings:                "MAX_RECORDINGS",
	ErrorCodeInvalidExtension:             "INVALID_EXTENSION",
	ErrorCodeAuthenticationRejected:       "AUTHENTICATION_REJECTED",
	ErrorCodeStorageSpace:                 "STORAGE_SPACE",
	ErrorCodeUnknownReplication:           "UNKNOWN_REPLICATION",
	ErrorCodeUnauthorisedAction:           "UNAUTHORISED_ACTION",
	ErrorCodeReplicationConnectionFailure: "REPLICATION_CONNECTION_FAILURE",
}

// String returns ArchiveException's name of the code.
func (c ErrorCode) String() string {
	return enumName(errorCodeNames[:], int64(c), "ErrorCode")
}

// BooleanType values (the schema's language-independent boolean).
const (
	booleanFalse int32 = 0
	booleanTrue  int32 = 1
)

func encodeBoolean(b bool) int32 {
	if b {
		return booleanTrue
	}
	return booleanFalse
}

// enumName returns names[v], or "typeName(v)" when v is out of range.
func enumName(names []string, v int64, typeName string) string {
	if v >= 0 && v < int64(len(names)) {
		return names[v]
	}
	return typeName + "(" + strconv.FormatInt(v, 10) + ")"
}
