package codec

import (
	"encoding/binary"
	"testing"
)

// wireCase is one message with every field set to a distinct non-zero
// value, and its bytes built independently of layout.go: from the
// template ids, block lengths and field offsets of aeron-protocol.md §10.3
// (checked against aeron-archive-codecs.xml at 1.47.3), written here as
// literal numbers. A wrong const chain in layout.go changes the encoding
// and fails the golden tests.
type wireCase struct {
	name   string
	msg    Message
	golden []byte
}

// isRequest reports whether the case is a client → archive message.
func (c wireCase) isRequest() bool {
	_, ok := c.msg.(Request)
	return ok
}

// encode appends the case's message with the production encoder (a
// request) or the test-only one (a response).
func (c wireCase) encode(tb testing.TB, dst []byte) []byte {
	tb.Helper()
	if r, ok := c.msg.(Request); ok {
		return mustAppend(tb, dst, r)
	}
	return appendResponse(dst, c.msg)
}

// decode decodes b with the production decoder (a response) or the
// test-only one (a request).
func (c wireCase) decode(b []byte) (Message, error) {
	if c.isRequest() {
		r, err := decodeRequest(b)
		if err != nil {
			return nil, err
		}
		return r, nil
	}
	return Decode(b)
}

// gold builds a message from literal numbers.
type gold struct{ b []byte }

// newGold starts a message of the given template and block length at
// schema version 10, its block zeroed.
func newGold(template, blockLength uint16) *gold {
	b := make([]byte, 8+int(blockLength))
	binary.LittleEndian.PutUint16(b[0:], blockLength)
	binary.LittleEndian.PutUint16(b[2:], template)
	binary.LittleEndian.PutUint16(b[4:], 101)
	binary.LittleEndian.PutUint16(b[6:], 10)
	return &gold{b: b}
}

// i64 and i32 write a field at a block offset.
func (g *gold) i64(off int, v int64) *gold {
	binary.LittleEndian.PutUint64(g.b[8+off:], uint64(v))
	return g
}

func (g *gold) i32(off int, v int32) *gold {
	binary.LittleEndian.PutUint32(g.b[8+off:], uint32(v))
	return g
}

// v appends a var field.
func (g *gold) v(s string) *gold {
	g.b = binary.LittleEndian.AppendUint32(g.b, uint32(len(s)))
	g.b = append(g.b, s...)
	return g
}

// Distinct sample values.
const (
	cs       int64 = 0x0102030405060708
	corr     int64 = 0x1112131415161718
	id       int64 = 0x2122232425262728
	id2      int64 = -0x3132333435363738
	id3      int64 = 0x4142434445464748
	n32      int32 = 0x51525354
	m32      int32 = -0x61626364
	k32      int32 = 0x71727374
	channel        = "aeron:udp?endpoint=localhost:20121|session-id=7"
	channel2       = "aeron:ipc?term-length=64k"
	ident          = "127.0.0.1:39874"
	v1_11_0  int32 = 68352 // 1.11.0
)

func wireCases() []wireCase {
	return []wireCase{
		// Requests.
		{"ConnectRequest",
			ConnectRequest{CorrelationID: corr, ResponseStreamID: n32, Version: ProtocolSemanticVersion,
				ResponseChannel: channel},
			newGold(2, 16).i64(0, corr).i32(8, n32).i32(12, v1_11_0).v(channel).b},
		{"AuthConnectRequest",
			AuthConnectRequest{CorrelationID: corr, ResponseStreamID: n32, Version: ProtocolSemanticVersion,
				ResponseChannel: channel, Credentials: []byte("user:secret\x00\xff")},
			newGold(58, 16).i64(0, corr).i32(8, n32).i32(12, v1_11_0).v(channel).v("user:secret\x00\xff").b},
		{"AuthConnectRequest without credentials",
			AuthConnectRequest{CorrelationID: corr, ResponseStreamID: n32, Version: ProtocolSemanticVersion,
				ResponseChannel: channel2},
			newGold(58, 16).i64(0, corr).i32(8, n32).i32(12, v1_11_0).v(channel2).v("").b},
		{"ChallengeResponse",
			ChallengeResponse{ControlSessionID: cs, CorrelationID: corr, Credentials: []byte{1, 2, 3}},
			newGold(60, 16).i64(0, cs).i64(8, corr).v("\x01\x02\x03").b},
		{"CloseSessionRequest",
			CloseSessionRequest{ControlSessionID: cs},
			newGold(3, 8).i64(0, cs).b},
		{"KeepAliveRequest",
			KeepAliveRequest{ControlSessionID: cs, CorrelationID: NullValue},
			newGold(61, 16).i64(0, cs).i64(8, -1).b},
		{"ArchiveIdRequest",
			ArchiveIDRequest{ControlSessionID: cs, CorrelationID: corr},
			newGold(68, 16).i64(0, cs).i64(8, corr).b},
		{"StartRecordingRequest",
			StartRecordingRequest{ControlSessionID: cs, CorrelationID: corr, StreamID: n32,
				SourceLocation: SourceRemote, Channel: channel},
			newGold(4, 24).i64(0, cs).i64(8, corr).i32(16, n32).i32(20, 1).v(channel).b},
		{"StartRecordingRequest2",
			StartRecordingRequest2{ControlSessionID: cs, CorrelationID: corr, StreamID: n32,
				SourceLocation: SourceRemote, AutoStop: true, Channel: channel},
			newGold(63, 28).i64(0, cs).i64(8, corr).i32(16, n32).i32(20, 1).i32(24, 1).v(channel).b},
		{"ExtendRecordingRequest2",
			ExtendRecordingRequest2{ControlSessionID: cs, CorrelationID: corr, RecordingID: id, StreamID: n32,
				SourceLocation: SourceRemote, AutoStop: true, Channel: channel},
			newGold(64, 36).i64(0, cs).i64(8, corr).i64(16, id).i32(24, n32).i32(28, 1).i32(32, 1).v(channel).b},
		{"StopRecordingRequest",
			StopRecordingRequest{ControlSessionID: cs, CorrelationID: corr, StreamID: n32, Channel: channel},
			newGold(5, 20).i64(0, cs).i64(8, corr).i32(16, n32).v(channel).b},
		{"StopRecordingSubscriptionRequest",
			StopRecordingSubscriptionRequest{ControlSessionID: cs, CorrelationID: corr, SubscriptionID: id},
			newGold(14, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"StopRecordingByIdentityRequest",
			StopRecordingByIdentityRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(65, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"ListRecordingsRequest",
			ListRecordingsRequest{ControlSessionID: cs, CorrelationID: corr, FromRecordingID: id,
				RecordCount: n32},
			newGold(8, 28).i64(0, cs).i64(8, corr).i64(16, id).i32(24, n32).b},
		{"ListRecordingsForUriRequest",
			ListRecordingsForURIRequest{ControlSessionID: cs, CorrelationID: corr, FromRecordingID: id,
				RecordCount: n32, StreamID: m32, Channel: channel},
			newGold(9, 32).i64(0, cs).i64(8, corr).i64(16, id).i32(24, n32).i32(28, m32).v(channel).b},
		{"ListRecordingRequest",
			ListRecordingRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(10, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"RecordingPositionRequest",
			RecordingPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(12, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"StopPositionRequest",
			StopPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(15, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"StartPositionRequest",
			StartPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(52, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"MaxRecordedPositionRequest",
			MaxRecordedPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(67, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"TruncateRecordingRequest",
			TruncateRecordingRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id, Position: id2},
			newGold(13, 32).i64(0, cs).i64(8, corr).i64(16, id).i64(24, id2).b},
		{"PurgeSegmentsRequest",
			PurgeSegmentsRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id, NewStartPosition: id2},
			newGold(55, 32).i64(0, cs).i64(8, corr).i64(16, id).i64(24, id2).b},
		{"DetachSegmentsRequest",
			DetachSegmentsRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id, NewStartPosition: id2},
			newGold(53, 32).i64(0, cs).i64(8, corr).i64(16, id).i64(24, id2).b},
		{"AttachSegmentsRequest",
			AttachSegmentsRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(56, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"PurgeRecordingRequest",
			PurgeRecordingRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id},
			newGold(104, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"ReplayRequest",
			ReplayRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id, Position: id2,
				Length: id3, ReplayStreamID: n32, FileIOMaxLength: m32, ReplayToken: -id,
				ReplayChannel: channel2},
			newGold(6, 56).i64(0, cs).i64(8, corr).i64(16, id).i64(24, id2).i64(32, id3).
				i32(40, n32).i32(44, m32).i64(48, -id).v(channel2).b},
		{"BoundedReplayRequest",
			BoundedReplayRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id, Position: id2,
				Length: id3, LimitCounterID: k32, ReplayStreamID: n32, FileIOMaxLength: m32, ReplayToken: -id,
				ReplayChannel: channel2},
			newGold(18, 60).i64(0, cs).i64(8, corr).i64(16, id).i64(24, id2).i64(32, id3).
				i32(40, k32).i32(44, n32).i32(48, m32).i64(52, -id).v(channel2).b},
		{"StopReplayRequest",
			StopReplayRequest{ControlSessionID: cs, CorrelationID: corr, ReplaySessionID: id},
			newGold(7, 24).i64(0, cs).i64(8, corr).i64(16, id).b},
		{"StopAllReplaysRequest",
			StopAllReplaysRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: NullValue},
			newGold(19, 24).i64(0, cs).i64(8, corr).i64(16, -1).b},

		// Responses and events.
		{"ControlResponse",
			ControlResponse{ControlSessionID: cs, CorrelationID: corr, RelevantID: 5,
				Code: ResponseCodeError, Version: ProtocolSemanticVersion,
				ErrorMessage: "unknown recording id: 42"},
			newGold(1, 32).i64(0, cs).i64(8, corr).i64(16, 5).i32(24, 1).i32(28, v1_11_0).
				v("unknown recording id: 42").b},
		{"ControlResponse ping",
			ControlResponse{ControlSessionID: cs, CorrelationID: NullValue, RelevantID: NullValue,
				Code: ResponseCodeOK, Version: ProtocolSemanticVersion},
			newGold(1, 32).i64(0, cs).i64(8, -1).i64(16, -1).i32(24, 0).i32(28, v1_11_0).v("").b},
		{"Challenge",
			Challenge{ControlSessionID: cs, CorrelationID: corr, Version: ProtocolSemanticVersion,
				EncodedChallenge: []byte("nonce\x00\x01")},
			newGold(59, 20).i64(0, cs).i64(8, corr).i32(16, v1_11_0).v("nonce\x00\x01").b},
		{"Ping",
			Ping{ControlSessionID: cs},
			newGold(106, 8).i64(0, cs).b},
		{"RecordingSignalEvent",
			RecordingSignalEvent{ControlSessionID: cs, CorrelationID: corr, RecordingID: id,
				SubscriptionID: id2, Position: id3, Signal: SignalReplicateEnd},
			newGold(24, 44).i64(0, cs).i64(8, corr).i64(16, id).i64(24, id2).i64(32, id3).i32(40, 7).b},
		{"RecordingDescriptor",
			RecordingDescriptor{ControlSessionID: cs, CorrelationID: corr, RecordingID: id,
				StartTimestamp: 1_732_900_000_123, StopTimestamp: NullTimestamp, StartPosition: id2,
				StopPosition: id3, InitialTermID: n32, SegmentFileLength: 1 << 27, TermBufferLength: 1 << 16,
				MTULength: 1408, SessionID: m32, StreamID: k32, StrippedChannel: channel2,
				OriginalChannel: channel, SourceIdentity: ident},
			newGold(22, 80).i64(0, cs).i64(8, corr).i64(16, id).i64(24, 1_732_900_000_123).i64(32, -1).
				i64(40, id2).i64(48, id3).i32(56, n32).i32(60, 1<<27).i32(64, 1<<16).i32(68, 1408).
				i32(72, m32).i32(76, k32).v(channel2).v(channel).v(ident).b},
		{"RecordingSubscriptionDescriptor",
			RecordingSubscriptionDescriptor{ControlSessionID: cs, CorrelationID: corr, SubscriptionID: id,
				StreamID: n32, StrippedChannel: channel2},
			newGold(23, 28).i64(0, cs).i64(8, corr).i64(16, id).i32(24, n32).v(channel2).b},
		{"RecordingStarted",
			RecordingStarted{RecordingID: id, StartPosition: id2, SessionID: n32, StreamID: m32,
				Channel: channel, SourceIdentity: ident},
			newGold(101, 24).i64(0, id).i64(8, id2).i32(16, n32).i32(20, m32).v(channel).v(ident).b},
		{"RecordingProgress",
			RecordingProgress{RecordingID: id, StartPosition: id2, Position: id3},
			newGold(102, 24).i64(0, id).i64(8, id2).i64(16, id3).b},
		{"RecordingStopped",
			RecordingStopped{RecordingID: id, StartPosition: id2, StopPosition: id3},
			newGold(103, 24).i64(0, id).i64(8, id2).i64(16, id3).b},
	}
}
