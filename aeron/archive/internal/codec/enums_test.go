package codec

import (
	"fmt"
	"testing"
)

// Enum values and names, from aeron-archive-codecs.xml (1.47.3) and
// ArchiveException.java; unknown values print their number.
func TestEnumValuesAndNames(t *testing.T) {
	for _, tc := range []struct {
		v    fmt.Stringer
		num  int64
		want string
	}{
		{ResponseCodeOK, int64(ResponseCodeOK), "OK"},
		{ResponseCodeError, int64(ResponseCodeError), "ERROR"},
		{ResponseCodeRecordingUnknown, int64(ResponseCodeRecordingUnknown), "RECORDING_UNKNOWN"},
		{ResponseCodeSubscriptionUnknown, int64(ResponseCodeSubscriptionUnknown), "SUBSCRIPTION_UNKNOWN"},
		{ControlResponseCode(4), 4, "ControlResponseCode(4)"},
		{ControlResponseCode(-1), -1, "ControlResponseCode(-1)"},

		{SignalStart, int64(SignalStart), "START"},
		{SignalStop, int64(SignalStop), "STOP"},
		{SignalExtend, int64(SignalExtend), "EXTEND"},
		{SignalReplicate, int64(SignalReplicate), "REPLICATE"},
		{SignalMerge, int64(SignalMerge), "MERGE"},
		{SignalSync, int64(SignalSync), "SYNC"},
		{SignalDelete, int64(SignalDelete), "DELETE"},
		{SignalReplicateEnd, int64(SignalReplicateEnd), "REPLICATE_END"},
		{RecordingSignal(8), 8, "RecordingSignal(8)"},

		{SourceLocal, int64(SourceLocal), "LOCAL"},
		{SourceRemote, int64(SourceRemote), "REMOTE"},
		{SourceLocation(2), 2, "SourceLocation(2)"},

		{ErrorCodeGeneric, int64(ErrorCodeGeneric), "GENERIC"},
		{ErrorCodeActiveListing, int64(ErrorCodeActiveListing), "ACTIVE_LISTING"},
		{ErrorCodeActiveRecording, int64(ErrorCodeActiveRecording), "ACTIVE_RECORDING"},
		{ErrorCodeActiveSubscription, int64(ErrorCodeActiveSubscription), "ACTIVE_SUBSCRIPTION"},
		{ErrorCodeUnknownSubscription, int64(ErrorCodeUnknownSubscription), "UNKNOWN_SUBSCRIPTION"},
		{ErrorCodeUnknownRecording, int64(ErrorCodeUnknownRecording), "UNKNOWN_RECORDING"},
		{ErrorCodeUnknownReplay, int64(ErrorCodeUnknownReplay), "UNKNOWN_REPLAY"},
		{ErrorCodeMaxReplays, int64(ErrorCodeMaxReplays), "MAX_REPLAYS"},
		{ErrorCodeMaxRecordings, int64(ErrorCodeMaxRecordings), "MAX_RECORDINGS"},
		{ErrorCodeInvalidExtension, int64(ErrorCodeInvalidExtension), "INVALID_EXTENSION"},
		{ErrorCodeAuthenticationRejected, int64(ErrorCodeAuthenticationRejected), "AUTHENTICATION_REJECTED"},
		{ErrorCodeStorageSpace, int64(ErrorCodeStorageSpace), "STORAGE_SPACE"},
		{ErrorCodeUnknownReplication, int64(ErrorCodeUnknownReplication), "UNKNOWN_REPLICATION"},
		{ErrorCodeUnauthorisedAction, int64(ErrorCodeUnauthorisedAction), "UNAUTHORISED_ACTION"},
		{ErrorCodeReplicationConnectionFailure, int64(ErrorCodeReplicationConnectionFailure),
			"REPLICATION_CONNECTION_FAILURE"},
		{ErrorCode(1 << 40), 1 << 40, "ErrorCode(1099511627776)"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("%T(%d).String() = %q, want %q", tc.v, tc.num, got, tc.want)
		}
	}
	// The numbers, pinned separately from the names.
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"OK", int64(ResponseCodeOK), 0}, {"ERROR", int64(ResponseCodeError), 1},
		{"RECORDING_UNKNOWN", int64(ResponseCodeRecordingUnknown), 2},
		{"SUBSCRIPTION_UNKNOWN", int64(ResponseCodeSubscriptionUnknown), 3},
		{"START", int64(SignalStart), 0}, {"STOP", int64(SignalStop), 1}, {"EXTEND", int64(SignalExtend), 2},
		{"REPLICATE", int64(SignalReplicate), 3}, {"MERGE", int64(SignalMerge), 4}, {"SYNC", int64(SignalSync), 5},
		{"DELETE", int64(SignalDelete), 6}, {"REPLICATE_END", int64(SignalReplicateEnd), 7},
		{"LOCAL", int64(SourceLocal), 0}, {"REMOTE", int64(SourceRemote), 1},
		{"FALSE", int64(booleanFalse), 0}, {"TRUE", int64(booleanTrue), 1},
		{"GENERIC", int64(ErrorCodeGeneric), 0}, {"UNKNOWN_RECORDING", int64(ErrorCodeUnknownRecording), 5},
		{"AUTHENTICATION_REJECTED", int64(ErrorCodeAuthenticationRejected), 10},
		{"REPLICATION_CONNECTION_FAILURE", int64(ErrorCodeReplicationConnectionFailure), 14},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}
