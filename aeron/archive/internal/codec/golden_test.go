package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"runtime"
	"testing"
)

// Every case encodes to its golden bytes, and the golden bytes decode to
// the case: requests through the production encoders, responses through
// the production decoders.
func TestGoldenBytes(t *testing.T) {
	for _, tc := range wireCases() {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.encode(t, nil); !bytes.Equal(got, tc.golden) {
				t.Errorf("encoding\n got % x\nwant % x", got, tc.golden)
			}
			got, err := tc.decode(tc.golden)
			if err != nil {
				t.Fatalf("decode golden: %v", err)
			}
			if !reflect.DeepEqual(got, tc.msg) {
				t.Errorf("decoded\n got %+v\nwant %+v", got, tc.msg)
			}
			if r, ok := tc.msg.(Request); ok && r.EncodedLength() != len(tc.golden) {
				t.Errorf("EncodedLength = %d, want %d", r.EncodedLength(), len(tc.golden))
			}
		})
	}
}

// The header of every golden message is read back by PeekHeader.
func TestPeekHeader(t *testing.T) {
	for _, tc := range wireCases() {
		h, err := PeekHeader(tc.golden)
		want := Header{BlockLength: binary.LittleEndian.Uint16(tc.golden), TemplateID: tc.msg.TemplateID(),
			SchemaID: 101, Version: 10}
		if err != nil || h != want {
			t.Errorf("%s: PeekHeader = %+v, %v; want %+v", tc.name, h, err, want)
		}
	}
}

// AppendTo appends after dst's bytes and zeroes dirty spare capacity.
func TestAppendKeepsPrefixAndZeroes(t *testing.T) {
	for _, tc := range wireCases() {
		dirty := bytes.Repeat([]byte{0xEE}, 3+len(tc.golden)+16)
		got := tc.encode(t, dirty[:3])
		if !bytes.Equal(got[:3], dirty[:3]) || !bytes.Equal(got[3:], tc.golden) {
			t.Errorf("%s: appended\n got % x\nwant ee ee ee % x", tc.name, got, tc.golden)
		}
	}
}

// Every strict prefix of a message is ErrTruncated with a zero result;
// nothing panics.
func TestTruncatedAtEveryLength(t *testing.T) {
	for _, tc := range wireCases() {
		for n := range len(tc.golden) {
			got, err := tc.decode(tc.golden[:n])
			if got != nil || !errors.Is(err, ErrTruncated) {
				t.Errorf("%s cut to %d of %d bytes: %+v, %v; want ErrTruncated", tc.name, n, len(tc.golden), got, err)
			}
			var de *DecodeError
			if errors.As(err, &de) && (de.MessageLength != n || de.Offset < 0 || de.Offset > n) {
				t.Errorf("%s cut to %d: bad location %+v", tc.name, n, de)
			}
		}
	}
}

// Bytes after the last var field (catalog padding, newer var fields) are
// ignored.
func TestTrailingBytesIgnored(t *testing.T) {
	for _, tc := range wireCases() {
		padded := append(bytes.Clone(tc.golden), make([]byte, 1024-len(tc.golden)%1024)...)
		padded[len(padded)-1] = 0x5A
		got, err := tc.decode(padded)
		if err != nil || !reflect.DeepEqual(got, tc.msg) {
			t.Errorf("%s padded: %+v, %v; want %+v", tc.name, got, err, tc.msg)
		}
	}
}

// withBlockDelta returns msg with its block grown by delta bytes of 0xAB
// (delta > 0, a newer archive's block) or shrunk by -delta bytes.
func withBlockDelta(msg []byte, delta int) []byte {
	bl := int(binary.LittleEndian.Uint16(msg))
	end := HeaderLength + bl
	out := bytes.Clone(msg[:HeaderLength])
	binary.LittleEndian.PutUint16(out, uint16(bl+delta))
	if delta >= 0 {
		out = append(out, msg[HeaderLength:end]...)
		out = append(out, bytes.Repeat([]byte{0xAB}, delta)...)
	} else {
		out = append(out, msg[HeaderLength:end+delta]...)
	}
	return append(out, msg[end:]...)
}

// A longer block than this schema version's (a newer archive) is skipped
// to reach the var fields.
func TestLongerBlockSkipped(t *testing.T) {
	for _, tc := range wireCases() {
		got, err := tc.decode(withBlockDelta(tc.golden, 12))
		if err != nil || !reflect.DeepEqual(got, tc.msg) {
			t.Errorf("%s with 12 more block bytes: %+v, %v; want %+v", tc.name, got, err, tc.msg)
		}
	}
}

// At version 10, a block one byte short of the fields is malformed, not a
// misread of the var fields.
func TestShorterBlockMalformed(t *testing.T) {
	for _, tc := range wireCases() {
		got, err := tc.decode(withBlockDelta(tc.golden, -1))
		if got != nil || !errors.Is(err, ErrMalformed) {
			t.Errorf("%s with a block 1 byte short: %+v, %v; want ErrMalformed", tc.name, got, err)
		}
	}
}

// withVersion returns msg with its header's schema version set to v.
func withVersion(msg []byte, v uint16) []byte {
	out := bytes.Clone(msg)
	binary.LittleEndian.PutUint16(out[6:], v)
	return out
}

// Fields newer than the header's version read as null whether or not the
// block still holds them; fields the version must have must be in the
// block.
func TestVersionGating(t *testing.T) {
	golden := map[string]wireCase{}
	for _, tc := range wireCases() {
		golden[tc.name] = tc
	}
	replay := golden["ReplayRequest"].msg.(ReplayRequest)
	bounded := golden["BoundedReplayRequest"].msg.(BoundedReplayRequest)
	response := golden["ControlResponse"].msg.(ControlResponse)
	connect := golden["ConnectRequest"].msg.(ConnectRequest)

	oldReplay, oldReplay7, oldBounded, oldBounded9 := replay, replay, bounded, bounded
	oldReplay.FileIOMaxLength, oldReplay.ReplayToken = NullValue, NullValue
	oldReplay7.ReplayToken = NullValue
	oldBounded.FileIOMaxLength, oldBounded.ReplayToken = NullValue, NullValue
	oldBounded9.ReplayToken = NullValue
	oldResponse, oldConnect := response, connect
	oldResponse.Version = 0
	oldConnect.Version = 0

	for _, tc := range []struct {
		name    string
		msg     []byte
		want    Message
		wantErr error
	}{
		{"ReplayRequest v6, 44-byte block", withVersion(withBlockDelta(golden["ReplayRequest"].golden, -12), 6),
			oldReplay, nil},
		{"ReplayRequest v6, full block", withVersion(golden["ReplayRequest"].golden, 6), oldReplay, nil},
		{"ReplayRequest v7, 48-byte block", withVersion(withBlockDelta(golden["ReplayRequest"].golden, -8), 7),
			oldReplay7, nil},
		{"ReplayRequest v9, full block", withVersion(golden["ReplayRequest"].golden, 9), oldReplay7, nil},
		{"ReplayRequest v10, 48-byte block", withBlockDelta(golden["ReplayRequest"].golden, -8), nil, ErrMalformed},
		{"ReplayRequest v7, 44-byte block", withVersion(withBlockDelta(golden["ReplayRequest"].golden, -12), 7),
			nil, ErrMalformed},
		{"ReplayRequest v6, 43-byte block", withVersion(withBlockDelta(golden["ReplayRequest"].golden, -13), 6),
			nil, ErrMalformed},
		{"BoundedReplayRequest v6, 48-byte block",
			withVersion(withBlockDelta(golden["BoundedReplayRequest"].golden, -12), 6), oldBounded, nil},
		{"BoundedReplayRequest v9, 52-byte block",
			withVersion(withBlockDelta(golden["BoundedReplayRequest"].golden, -8), 9), oldBounded9, nil},
		{"BoundedReplayRequest v10, 59-byte block",
			withBlockDelta(golden["BoundedReplayRequest"].golden, -1), nil, ErrMalformed},
		{"ControlResponse v3, 28-byte block", withVersion(withBlockDelta(golden["ControlResponse"].golden, -4), 3),
			oldResponse, nil},
		{"ControlResponse v3, full block", withVersion(golden["ControlResponse"].golden, 3), oldResponse, nil},
		{"ControlResponse v4, 28-byte block", withVersion(withBlockDelta(golden["ControlResponse"].golden, -4), 4),
			nil, ErrMalformed},
		{"ControlResponse v0, 27-byte block", withVersion(withBlockDelta(golden["ControlResponse"].golden, -5), 0),
			nil, ErrMalformed},
		{"ControlResponse v11", withVersion(golden["ControlResponse"].golden, 11), response, nil},
		{"ConnectRequest v1, 12-byte block", withVersion(withBlockDelta(golden["ConnectRequest"].golden, -4), 1),
			oldConnect, nil},
		{"ConnectRequest v2, 12-byte block", withVersion(withBlockDelta(golden["ConnectRequest"].golden, -4), 2),
			nil, ErrMalformed},
	} {
		decode := Decode
		if isRequestBytes(tc.msg) {
			decode = decodeAnyRequest
		}
		got, err := decode(tc.msg)
		if tc.wantErr != nil {
			if got != nil || !errors.Is(err, tc.wantErr) {
				t.Errorf("%s: %+v, %v; want %v", tc.name, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v, %v\nwant %+v", tc.name, got, err, tc.want)
		}
	}
}

func isRequestBytes(msg []byte) bool {
	h, err := PeekHeader(msg)
	_, ok := requestDecoders[h.TemplateID]
	return err == nil && ok
}

func TestDecodeRejections(t *testing.T) {
	ping := appendResponse(nil, ControlResponse{CorrelationID: NullValue, RelevantID: NullValue})
	extend := newGold(11, 32).i64(0, cs).v(channel).b // ExtendRecordingRequest
	foreign := withSchema(ping, 111)
	for _, tc := range []struct {
		name         string
		err          error
		want         error
		wantTemplate TemplateID
	}{
		{"unknown template", second(Decode(extend)), ErrUnknownTemplate, 11},
		{"unknown template 999", second(Decode(newGold(999, 0).b)), ErrUnknownTemplate, 999},
		{"foreign schema", second(Decode(foreign)), ErrSchemaMismatch, TemplateControlResponse},
		{"foreign schema peek", second(PeekHeader(foreign)), ErrSchemaMismatch, TemplateControlResponse},
		{"wrong decoder", second(DecodeRecordingDescriptor(ping)), ErrTemplateMismatch, TemplateControlResponse},
		{"empty", second(Decode(nil)), ErrTruncated, 0},
		{"short header", second(PeekHeader(ping[:7])), ErrTruncated, 0},
	} {
		var de *DecodeError
		if !errors.Is(tc.err, tc.want) || !errors.As(tc.err, &de) || de.Template != tc.wantTemplate {
			t.Errorf("%s: %v; want %v for template %d", tc.name, tc.err, tc.want, tc.wantTemplate)
		}
	}
}

func withSchema(msg []byte, schema uint16) []byte {
	out := bytes.Clone(msg)
	binary.LittleEndian.PutUint16(out[4:], schema)
	return out
}

func second[T any](_ T, err error) error { return err }

// A var length is checked against the schema maximum and the bytes present
// before anything is sliced or allocated.
func TestVarLengthChecked(t *testing.T) {
	base := newGold(1, 32).i64(8, corr).i32(24, 1).i32(28, v1_11_0).b // ControlResponse, errorMessage follows
	for _, tc := range []struct {
		name   string
		length uint32
		extra  int
		want   error
	}{
		{"4 GiB - 1", 0xFFFFFFFF, 16, ErrMalformed},
		{"just above the maximum", MaxVarDataLength + 1, 16, ErrMalformed},
		{"the maximum, bytes missing", MaxVarDataLength, 16, ErrTruncated},
		{"one byte missing", 17, 16, ErrTruncated},
		{"exact", 16, 16, nil},
	} {
		msg := binary.LittleEndian.AppendUint32(bytes.Clone(base), tc.length)
		msg = append(msg, bytes.Repeat([]byte{'x'}, tc.extra)...)
		allocated := bytesAllocated(func() { _, _ = DecodeControlResponse(msg) })
		v, err := DecodeControlResponse(msg)
		if !errors.Is(err, tc.want) || (err == nil) != (v.ErrorMessage != "") {
			t.Errorf("%s: %+v, %v; want %v", tc.name, v, err, tc.want)
		}
		// A decoder trusting the length would allocate it (≥ 16 bytes here,
		// ≥ 1 GiB for the large ones); 1 MiB leaves room for the runtime's
		// own allocations, which the measurement cannot exclude.
		if allocated > 1<<20 {
			t.Errorf("%s: a decode allocated %d bytes", tc.name, allocated)
		}
	}
}

// bytesAllocated returns the fewest bytes any of five runs of f allocated.
// Each figure is an upper bound (other goroutines' allocations count too);
// the minimum discards most of that noise.
func bytesAllocated(f func()) uint64 {
	least := uint64(math.MaxUint64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// Pings are recognised; error codes are read from RelevantID.
func TestControlResponseHelpers(t *testing.T) {
	ping := ControlResponse{ControlSessionID: cs, CorrelationID: -1, RelevantID: -1, Code: ResponseCodeOK}
	if !ping.IsPing() {
		t.Errorf("%+v is a ping", ping)
	}
	for _, notPing := range []ControlResponse{
		{CorrelationID: corr, RelevantID: -1},
		{CorrelationID: -1, RelevantID: 0},
		{CorrelationID: -1, RelevantID: -1, Code: ResponseCodeError},
	} {
		if notPing.IsPing() {
			t.Errorf("%+v is not a ping", notPing)
		}
	}
	r := ControlResponse{Code: ResponseCodeError, RelevantID: 5}
	if r.ErrorCode() != ErrorCodeUnknownRecording || r.ErrorCode().String() != "UNKNOWN_RECORDING" {
		t.Errorf("ErrorCode() = %v", r.ErrorCode())
	}
}
