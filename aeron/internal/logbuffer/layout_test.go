package logbuffer

import (
	"bytes"
	"testing"
)

// Golden values from Aeron 1.47.3 LogBufferDescriptor, FrameDescriptor,
// DataHeaderFlyweight and HeaderFlyweight, as listed in
// aeron-protocol.md §5.1-5.4. Change them only when the pinned Aeron
// version changes.
func TestLayoutGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"partition count", PartitionCount, 3},
		{"metadata length", MetadataLength, 4096},
		{"min term length", MinTermLength, 64 * 1024},
		{"max term length", MaxTermLength, 1024 * 1024 * 1024},
		{"min page size", MinPageSize, 4 * 1024},
		{"max page size", MaxPageSize, 1024 * 1024 * 1024},
		{"max message length limit", MaxMessageLengthLimit, 16 * 1024 * 1024},

		{"meta: tail counter 0", tailCounterOffset(0), 0},
		{"meta: tail counter 1", tailCounterOffset(1), 8},
		{"meta: tail counter 2", tailCounterOffset(2), 16},
		{"meta: active term count", activeTermCountOffset, 24},
		{"meta: end of stream position", endOfStreamPositionOffset, 128},
		{"meta: is connected", isConnectedOffset, 136},
		{"meta: active transport count", activeTransportCountOffset, 140},
		{"meta: registration id", registrationIDOffset, 256},
		{"meta: initial term id", initialTermIDOffset, 264},
		{"meta: default frame header length", defaultFrameHeaderLengthOffset, 268},
		{"meta: mtu", mtuLengthOffset, 272},
		{"meta: term length", termLengthOffset, 276},
		{"meta: page size", pageSizeOffset, 280},
		{"meta: publication window", publicationWindowLengthOffset, 284},
		{"meta: receiver window", receiverWindowLengthOffset, 288},
		{"meta: socket sndbuf", socketSndbufLengthOffset, 292},
		{"meta: os default sndbuf", osDefaultSndbufLengthOffset, 296},
		{"meta: os max sndbuf", osMaxSndbufLengthOffset, 300},
		{"meta: socket rcvbuf", socketRcvbufLengthOffset, 304},
		{"meta: os default rcvbuf", osDefaultRcvbufLengthOffset, 308},
		{"meta: os max rcvbuf", osMaxRcvbufLengthOffset, 312},
		{"meta: max resend", maxResendOffset, 316},
		{"meta: default frame header", defaultFrameHeaderOffset, 320},
		{"meta: default frame header max length", defaultFrameHeaderMaxLength, 128},
		{"meta: entity tag", entityTagOffset, 448},
		{"meta: response correlation id", responseCorrelationIDOffset, 456},
		{"meta: linger timeout", lingerTimeoutOffset, 464},
		{"meta: untethered window limit timeout", untetheredWindowLimitTimeoutOffset, 472},
		{"meta: untethered resting timeout", untetheredRestingTimeoutOffset, 480},
		{"meta: is group", isGroupOffset, 488},
		{"meta: is response", isResponseOffset, 489},
		{"meta: rejoin", isRejoinOffset, 490},
		{"meta: reliable", isReliableOffset, 491},
		{"meta: sparse", isSparseOffset, 492},
		{"meta: signal eos", signalEOSOffset, 493},
		{"meta: spies simulate connection", spiesSimulateConnectionOffset, 494},
		{"meta: tether", tetherOffset, 495},

		{"frame: length", FrameLengthOffset, 0},
		{"frame: version", VersionOffset, 4},
		{"frame: flags", FlagsOffset, 5},
		{"frame: type", TypeOffset, 6},
		{"frame: term offset", TermOffsetOffset, 8},
		{"frame: session id", SessionIDOffset, 12},
		{"frame: stream id", StreamIDOffset, 16},
		{"frame: term id", TermIDOffset, 20},
		{"frame: reserved value", ReservedValueOffset, 24},
		{"frame: header length", HeaderLength, 32},
		{"frame alignment", FrameAlignment, 32},
		{"version", int(CurrentVersion), 0},

		{"flag: begin", int(FlagBegin), 0x80},
		{"flag: end", int(FlagEnd), 0x40},
		{"flag: eos", int(FlagEOS), 0x20},
		{"flags: unfragmented", int(FlagsUnfragmented), 0xC0},

		{"type: pad", int(FrameTypePad), 0x00},
		{"type: data", int(FrameTypeData), 0x01},
		{"type: nak", int(FrameTypeNAK), 0x02},
		{"type: sm", int(FrameTypeStatusMessage), 0x03},
		{"type: err", int(FrameTypeError), 0x04},
		{"type: setup", int(FrameTypeSetup), 0x05},
		{"type: rttm", int(FrameTypeRTTMeasurement), 0x06},
		{"type: res", int(FrameTypeResolution), 0x07},
		{"type: rsp setup", int(FrameTypeResponseSetup), 0x0B},
		{"type: ext", int(FrameTypeExtension), 0xFFFF},

		{"result: not connected", int(NotConnected), -1},
		{"result: back pressured", int(BackPressured), -2},
		{"result: admin action", int(AdminAction), -3},
		{"result: closed", int(Closed), -4},
		{"result: max position exceeded", int(MaxPositionExceeded), -5},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// The metadata fields fit in the metadata section, and the atomically
// accessed ones are naturally aligned.
func TestMetadataFieldsAlignedAndInside(t *testing.T) {
	if tetherOffset >= MetadataLength {
		t.Errorf("last metadata field at %d, outside %d bytes", tetherOffset, MetadataLength)
	}
	for _, off := range []int{tailCounterOffset(0), tailCounterOffset(1), tailCounterOffset(2), endOfStreamPositionOffset} {
		if off%sizeofInt64 != 0 {
			t.Errorf("64-bit atomic field at %d is not 8-byte aligned", off)
		}
	}
	for _, off := range []int{activeTermCountOffset, isConnectedOffset} {
		if off%sizeofInt32 != 0 {
			t.Errorf("32-bit atomic field at %d is not 4-byte aligned", off)
		}
	}
	// The appender stores the header as three 64-bit words.
	for _, off := range []int{FrameLengthOffset, TermOffsetOffset, StreamIDOffset, ReservedValueOffset} {
		if off%sizeofInt64 != 0 {
			t.Errorf("header word at %d is not 8-byte aligned", off)
		}
	}
}

// A frame header as the Java client writes it for a 5-byte unfragmented
// message: length 37, version 0, flags 0xC0, type DATA, term offset 0x40,
// session 0x5e55, stream 1001, term id 7, reserved value 0x1122334455667788.
var goldenHeaderBytes = []byte{
	0x25, 0x00, 0x00, 0x00, 0x00, 0xC0, 0x01, 0x00,
	0x40, 0x00, 0x00, 0x00, 0x55, 0x5e, 0x00, 0x00,
	0xE9, 0x03, 0x00, 0x00, 0x07, 0x00, 0x00, 0x00,
	0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11,
}

var goldenHeader = FrameHeader{
	FrameLength:   37,
	Version:       0,
	Flags:         FlagsUnfragmented,
	Type:          FrameTypeData,
	TermOffset:    0x40,
	SessionID:     testSessionID,
	StreamID:      testStreamID,
	TermID:        7,
	ReservedValue: 0x1122334455667788,
}

func TestFrameHeaderGolden(t *testing.T) {
	h, err := DecodeFrameHeader(goldenHeaderBytes)
	if err != nil {
		t.Fatal(err)
	}
	if h != goldenHeader {
		t.Errorf("DecodeFrameHeader = %+v, want %+v", h, goldenHeader)
	}
	if got := goldenHeader.AppendTo([]byte{0xAA}); !bytes.Equal(got[1:], goldenHeaderBytes) || got[0] != 0xAA {
		t.Errorf("AppendTo = % x, want AA % x", got, goldenHeaderBytes)
	}
	if h.PayloadLength() != 5 {
		t.Errorf("PayloadLength = %d, want 5", h.PayloadLength())
	}
	if _, err := DecodeFrameHeader(goldenHeaderBytes[:HeaderLength-1]); err == nil {
		t.Error("DecodeFrameHeader of 31 bytes succeeded")
	}
}

// The appender's packed header words are the bytes of the golden header.
func TestHeaderWordsGolden(t *testing.T) {
	word0 := firstHeaderWord(goldenHeader.FrameLength, goldenHeader.Version, goldenHeader.Flags, goldenHeader.Type)
	word1 := int32Pair(goldenHeader.TermOffset, goldenHeader.SessionID)
	word2 := int32Pair(goldenHeader.StreamID, goldenHeader.TermID)
	var b [3 * sizeofInt64]byte
	for i, w := range []int64{word0, word1, word2} {
		for j := range sizeofInt64 {
			b[i*sizeofInt64+j] = byte(uint64(w) >> (bitsPerByte * j))
		}
	}
	if !bytes.Equal(b[:], goldenHeaderBytes[:ReservedValueOffset]) {
		t.Errorf("header words = % x, want % x", b, goldenHeaderBytes[:ReservedValueOffset])
	}
	// A negative length (frame being written) fills the low 32 bits only.
	if got, want := firstHeaderWord(-37, 0, FlagsUnfragmented, FrameTypeData), int64(0x0001C000FFFFFFDB); got != want {
		t.Errorf("firstHeaderWord(-37) = %#x, want %#x", got, want)
	}
}

func TestStrings(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{FrameTypePad.String(), "PAD"},
		{FrameTypeData.String(), "DATA"},
		{FrameTypeResponseSetup.String(), "RSP_SETUP"},
		{FrameTypeExtension.String(), "EXT"},
		{FrameType(0x42).String(), "FrameType(0x42)"},
		{FlagsUnfragmented.String(), "BEGIN|END"},
		{FlagBegin.String(), "BEGIN"},
		{(FlagEnd | FlagEOS).String(), "END|EOS"},
		{Flags(0).String(), "0"},
		{(FlagBegin | 0x03).String(), "BEGIN|0x3"},
		{NotConnected.String(), "NOT_CONNECTED"},
		{BackPressured.String(), "BACK_PRESSURED"},
		{AdminAction.String(), "ADMIN_ACTION"},
		{Closed.String(), "CLOSED"},
		{MaxPositionExceeded.String(), "MAX_POSITION_EXCEEDED"},
		{OfferResult(4096).String(), "position 4096"},
		{OfferResult(-9).String(), "OfferResult(-9)"},
		{Continue.String(), "CONTINUE"},
		{Abort.String(), "ABORT"},
		{Break.String(), "BREAK"},
		{Commit.String(), "COMMIT"},
		{Action(9).String(), "Action(9)"},
		{PackRawTail(-2, 96).String(), "-2:96"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestFlagPredicates(t *testing.T) {
	for _, tc := range []struct {
		f                             Flags
		begin, end, unfragmented, eos bool
	}{
		{FlagsUnfragmented, true, true, true, false},
		{FlagBegin, true, false, false, false},
		{FlagEnd | FlagEOS, false, true, false, true},
		{0, false, false, false, false},
	} {
		if tc.f.IsBegin() != tc.begin || tc.f.IsEnd() != tc.end || tc.f.IsUnfragmented() != tc.unfragmented || tc.f.IsEOS() != tc.eos {
			t.Errorf("%v: predicates wrong", tc.f)
		}
	}
}
