package counters

import (
	"math"
	"testing"
)

// Golden values from Agrona 2.0.1 CountersReader and Aeron 1.47.3
// AeronCounters / RecordingPos / stream and socket-address counters, as
// listed in aeron-protocol.md §8. Change them only when the pinned
// Aeron/Agrona version changes.
func TestLayoutGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"values: value", ValueOffset, 0},
		{"values: registration id", RegistrationIDOffset, 8},
		{"values: owner id", OwnerIDOffset, 16},
		{"values: reference id", ReferenceIDOffset, 24},
		{"values: record length", ValueLength, 128},
		{"metadata: state", StateOffset, 0},
		{"metadata: type id", TypeIDOffset, 4},
		{"metadata: free-for-reuse deadline", FreeForReuseDeadlineOffset, 8},
		{"metadata: key", KeyOffset, 16},
		{"metadata: max key length", MaxKeyLength, 112},
		{"metadata: label length", LabelLengthOffset, 128},
		{"metadata: label", LabelOffset, 132},
		{"metadata: max label length", MaxLabelLength, 380},
		{"metadata: record length", MetadataLength, 512},
		{"stream key: registration id", StreamKeyRegistrationIDOffset, 0},
		{"stream key: session id", StreamKeySessionIDOffset, 8},
		{"stream key: stream id", StreamKeyStreamIDOffset, 12},
		{"stream key: channel length", StreamKeyChannelLengthOffset, 16},
		{"stream key: channel", StreamKeyChannelOffset, 20},
		{"stream key: max channel length", StreamKeyMaxChannelLength, 92},
		{"heartbeat key: client id", HeartbeatKeyClientIDOffset, 0},
		{"local socket key: channel status id", LocalSocketKeyChannelStatusIDOffset, 0},
		{"local socket key: address length", LocalSocketKeyAddressLengthOffset, 4},
		{"local socket key: address", LocalSocketKeyAddressOffset, 8},
		{"rec-pos key: recording id", RecordingPosKeyRecordingIDOffset, 0},
		{"rec-pos key: session id", RecordingPosKeySessionIDOffset, 8},
		{"rec-pos key: source identity length", RecordingPosKeySourceIdentityLengthOffset, 12},
		{"rec-pos key: source identity", RecordingPosKeySourceIdentityOffset, 16},
		{"rec-pos key: max source identity length", RecordingPosKeyMaxSourceIdentityLength, 88},
		{"rec-pos key: length without source identity", recordingPosKeyFixedLength, 24},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if NotFreeToReuse != math.MaxInt64 {
		t.Errorf("NotFreeToReuse = %d, want Long.MAX_VALUE", NotFreeToReuse)
	}
}

func TestEnumGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"state unused", int64(StateUnused), 0},
		{"state allocated", int64(StateAllocated), 1},
		{"state reclaimed", int64(StateReclaimed), -1},
		{"null counter id", int64(NullCounterID), -1},
		{"any archive", AnyArchive, -1},
		{"type system counter", int64(TypeSystemCounter), 0},
		{"type publisher limit", int64(TypePublisherLimit), 1},
		{"type sender position", int64(TypeSenderPosition), 2},
		{"type receiver HWM", int64(TypeReceiverHWM), 3},
		{"type subscriber position", int64(TypeSubscriberPosition), 4},
		{"type receiver position", int64(TypeReceiverPosition), 5},
		{"type send channel status", int64(TypeSendChannelStatus), 6},
		{"type receive channel status", int64(TypeReceiveChannelStatus), 7},
		{"type sender limit", int64(TypeSenderLimit), 9},
		{"type per image", int64(TypePerImage), 10},
		{"type client heartbeat", int64(TypeClientHeartbeat), 11},
		{"type publisher position", int64(TypePublisherPosition), 12},
		{"type sender BPE", int64(TypeSenderBPE), 13},
		{"type local socket address", int64(TypeLocalSocketAddressStatus), 14},
		{"type name resolver neighbors", int64(TypeNameResolverNeighbors), 15},
		{"type name resolver cache entries", int64(TypeNameResolverCacheEntries), 16},
		{"type flow control receivers", int64(TypeFlowControlReceivers), 17},
		{"type MDC destinations", int64(TypeMDCDestinations), 18},
		{"type recording position", int64(TypeRecordingPosition), 100},
		{"type archive error count", int64(TypeArchiveErrorCount), 101},
		{"type archive control sessions", int64(TypeArchiveControlSessions), 102},
		{"channel errored", int64(ChannelErrored), -1},
		{"channel initializing", int64(ChannelInitializing), 0},
		{"channel active", int64(ChannelActive), 1},
		{"channel closing", int64(ChannelClosing), 2},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestStringers(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{StateAllocated.String(), "allocated"},
		{StateReclaimed.String(), "reclaimed"},
		{StateUnused.String(), "unused"},
		{RecordState(5).String(), "RecordState(5)"},
		{TypeRecordingPosition.String(), "recording position"},
		{TypeClientHeartbeat.String(), "client heartbeat"},
		{TypeID(8).String(), "TypeID(8)"},
		{ChannelActive.String(), "active"},
		{ChannelErrored.String(), "errored"},
		{ChannelStatus(3).String(), "ChannelStatus(3)"},
	} {
		if tc.got != tc.want {
			t.Errorf("String() = %q, want %q", tc.got, tc.want)
		}
	}
}
