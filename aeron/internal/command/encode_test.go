package command

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// Literal little-endian builders for golden byte layouts, independent of
// the layout constants.
func le64(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
func le32(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
func le16(v int16) []byte { return binary.LittleEndian.AppendUint16(nil, uint16(v)) }
func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

const (
	testClientID      int64 = 0x0102030405060708
	testCorrelationID int64 = 0x1112131415161718
)

// TestEncodeGolden pins each command's bytes to the layout in
// aeron-protocol.md §4.2, written out field by field.
func TestEncodeGolden(t *testing.T) {
	prefix := cat(le64(testClientID), le64(testCorrelationID))
	for _, tc := range []struct {
		cmd  Command
		want []byte
	}{
		{
			AddPublication{testClientID, testCorrelationID, 1001, "aeron:ipc"},
			cat(prefix, le32(1001), le32(9), []byte("aeron:ipc")),
		},
		{
			AddExclusivePublication{testClientID, testCorrelationID, -7, "aeron:udp?endpoint=localhost:40123"},
			cat(prefix, le32(-7), le32(34), []byte("aeron:udp?endpoint=localhost:40123")),
		},
		{
			AddSubscription{testClientID, testCorrelationID, 1001, "aeron:ipc"},
			cat(prefix, le64(-1), le32(1001), le32(9), []byte("aeron:ipc")),
		},
		{RemovePublication{testClientID, testCorrelationID, 42}, cat(prefix, le64(42))},
		{RemoveSubscription{testClientID, testCorrelationID, 43}, cat(prefix, le64(43))},
		{RemoveCounter{testClientID, testCorrelationID, 44}, cat(prefix, le64(44))},
		{ClientKeepalive{testClientID, testCorrelationID}, prefix},
		{ClientClose{testClientID}, cat(le64(testClientID), le64(-1))},
		{
			AddCounter{testClientID, testCorrelationID, 1002, []byte{1, 2, 3, 4, 5}, "ferry"},
			cat(prefix, le32(1002), le32(5), []byte{1, 2, 3, 4, 5, 0, 0, 0}, le32(5), []byte("ferry")),
		},
		{
			AddCounter{testClientID, testCorrelationID, 1003, nil, "x"},
			cat(prefix, le32(1003), le32(0), le32(1), []byte("x")),
		},
		{
			AddCounter{testClientID, testCorrelationID, 1004, []byte{9, 9, 9, 9}, ""},
			cat(prefix, le32(1004), le32(4), []byte{9, 9, 9, 9}, le32(0)),
		},
		{
			AddDestination{testClientID, testCorrelationID, 55, "aeron:udp?endpoint=h:1"},
			cat(prefix, le64(55), le32(22), []byte("aeron:udp?endpoint=h:1")),
		},
		{
			RemoveDestination{testClientID, testCorrelationID, 56, "aeron:udp?endpoint=h:1"},
			cat(prefix, le64(56), le32(22), []byte("aeron:udp?endpoint=h:1")),
		},
		{
			AddRcvDestination{testClientID, testCorrelationID, 57, "aeron:udp?endpoint=h:2"},
			cat(prefix, le64(57), le32(22), []byte("aeron:udp?endpoint=h:2")),
		},
		{
			RemoveRcvDestination{testClientID, testCorrelationID, 58, "aeron:udp?endpoint=h:2"},
			cat(prefix, le64(58), le32(22), []byte("aeron:udp?endpoint=h:2")),
		},
		{
			TerminateDriver{testClientID, []byte("tok")},
			cat(le64(testClientID), le64(-1), le32(3), []byte("tok")),
		},
	} {
		t.Run(tc.cmd.Type().String(), func(t *testing.T) {
			got, err := tc.cmd.AppendTo(nil)
			if err != nil {
				t.Fatalf("AppendTo: %v", err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("AppendTo =\n% x\nwant\n% x", got, tc.want)
			}
			if n := tc.cmd.EncodedLength(); n != len(got) {
				t.Fatalf("EncodedLength = %d, encoded %d bytes", n, len(got))
			}
			back, err := decodeCommand(tc.cmd.Type(), got)
			if err != nil {
				t.Fatalf("driver-side decode: %v", err)
			}
			if !equalCommands(back, tc.cmd) {
				t.Fatalf("round trip = %#v, want %#v", back, tc.cmd)
			}
		})
	}
}

func equalCommands(a, b Command) bool {
	if a.Type() != b.Type() {
		return false
	}
	ea, errA := a.AppendTo(nil)
	eb, errB := b.AppendTo(nil)
	return errA == nil && errB == nil && bytes.Equal(ea, eb)
}

func TestEncodeTypes(t *testing.T) {
	for _, tc := range []struct {
		cmd  Command
		want CommandType
	}{
		{AddPublication{}, CommandAddPublication},
		{AddExclusivePublication{}, CommandAddExclusivePublication},
		{AddSubscription{}, CommandAddSubscription},
		{RemovePublication{}, CommandRemovePublication},
		{RemoveSubscription{}, CommandRemoveSubscription},
		{RemoveCounter{}, CommandRemoveCounter},
		{ClientKeepalive{}, CommandClientKeepalive},
		{ClientClose{}, CommandClientClose},
		{AddCounter{}, CommandAddCounter},
		{AddDestination{}, CommandAddDestination},
		{RemoveDestination{}, CommandRemoveDestination},
		{AddRcvDestination{}, CommandAddRcvDestination},
		{RemoveRcvDestination{}, CommandRemoveRcvDestination},
		{TerminateDriver{}, CommandTerminateDriver},
	} {
		if got := tc.cmd.Type(); got != tc.want {
			t.Errorf("%T.Type() = %v, want %v", tc.cmd, got, tc.want)
		}
	}
}

// AppendTo keeps what dst held and zeroes the padding even when dst's
// spare capacity holds old bytes.
func TestAppendToPreservesPrefixAndZeroesPadding(t *testing.T) {
	buf := bytes.Repeat([]byte{0xEE}, 128)
	dst := buf[:3]
	cmd := AddCounter{testClientID, testCorrelationID, 1, []byte{1}, "l"}
	got, err := cmd.AppendTo(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:3], []byte{0xEE, 0xEE, 0xEE}) {
		t.Fatalf("prefix overwritten: % x", got[:3])
	}
	want := cat(le64(testClientID), le64(testCorrelationID), le32(1), le32(1), []byte{1, 0, 0, 0}, le32(1), []byte("l"))
	if !bytes.Equal(got[3:], want) {
		t.Fatalf("payload =\n% x\nwant\n% x", got[3:], want)
	}
}

func TestEncodeRejects(t *testing.T) {
	nonASCII := "aeron:udp?endpoint=h\u00e9:1"
	longChannel := "aeron:ipc?alias=" + strings.Repeat("a", MaxChannelLength-len("aeron:ipc?alias=")+1)
	for _, tc := range []struct {
		name  string
		cmd   Command
		want  error
		field string
	}{
		{"publication non-ASCII", AddPublication{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"exclusive publication non-ASCII", AddExclusivePublication{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"subscription non-ASCII", AddSubscription{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"destination non-ASCII", AddDestination{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"remove destination non-ASCII", RemoveDestination{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"rcv destination non-ASCII", AddRcvDestination{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"remove rcv destination non-ASCII", RemoveRcvDestination{Channel: nonASCII}, ErrNonASCII, "channel"},
		{"publication too long", AddPublication{Channel: longChannel}, ErrTooLong, "channel"},
		{"subscription too long", AddSubscription{Channel: longChannel}, ErrTooLong, "channel"},
		{"destination too long", AddRcvDestination{Channel: longChannel}, ErrTooLong, "channel"},
		{"counter key too long", AddCounter{Key: make([]byte, MaxCounterKeyLength+1)}, ErrTooLong, "key"},
		{"counter label too long", AddCounter{Label: strings.Repeat("l", MaxCounterLabelLength+1)}, ErrTooLong, "label"},
		{"counter label non-ASCII", AddCounter{Label: "caf\u00e9"}, ErrNonASCII, "label"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := []byte{1, 2, 3}
			got, err := tc.cmd.AppendTo(dst)
			if !errors.Is(err, tc.want) {
				t.Fatalf("AppendTo error = %v, want %v", err, tc.want)
			}
			var ee *EncodeError
			if !errors.As(err, &ee) || ee.Field != tc.field || ee.Command != tc.cmd.Type() {
				t.Fatalf("error %#v, want an *EncodeError for field %q of %v", err, tc.field, tc.cmd.Type())
			}
			if !bytes.Equal(got, dst) || len(got) != len(dst) {
				t.Fatalf("dst changed on error: % x", got)
			}
		})
	}
}

func TestEncodeLimitsAccepted(t *testing.T) {
	channel := "aeron:ipc?alias=" + strings.Repeat("a", MaxChannelLength-len("aeron:ipc?alias="))
	allASCII := make([]byte, asciiMax+1)
	for i := range allASCII {
		allASCII[i] = byte(i)
	}
	for _, cmd := range []Command{
		AddPublication{Channel: channel},
		AddSubscription{Channel: channel},
		AddDestination{Channel: channel},
		AddPublication{Channel: string(allASCII)},
		AddCounter{Key: make([]byte, MaxCounterKeyLength), Label: strings.Repeat("l", MaxCounterLabelLength)},
	} {
		got, err := cmd.AppendTo(nil)
		if err != nil {
			t.Fatalf("%v: %v", cmd.Type(), err)
		}
		if len(got) != cmd.EncodedLength() {
			t.Fatalf("%v: %d bytes, EncodedLength %d", cmd.Type(), len(got), cmd.EncodedLength())
		}
	}
}

func TestEncodeErrorMessage(t *testing.T) {
	_, err := AddSubscription{Channel: "aeron:ipc\xff"}.AppendTo(nil)
	const want = "command: encode ADD_SUBSCRIPTION: channel: byte 0xff at index 9: command: string is not ASCII"
	if err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %q", err, want)
	}
}
