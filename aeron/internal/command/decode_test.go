package command

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

// A decoder under test: decode a payload into a comparable value.
type decodeCase struct {
	name   string
	decode func([]byte) (any, error)
	// golden is a payload written out field by field from the layout in
	// aeron-protocol.md §4.4; want is what it decodes to.
	golden []byte
	want   any
	// encode is the test-only encoder, for round trips.
	encode func(any) []byte
	// lengthOffsets are the offsets of the int32 string lengths in golden,
	// for the negative-length cases.
	lengthOffsets []int
}

func wrap[T any](decode func([]byte) (T, error)) func([]byte) (any, error) {
	return func(b []byte) (any, error) { return decode(b) }
}

func enc[T any](encode func([]byte, T) []byte) func(any) []byte {
	return func(v any) []byte { return encode(nil, v.(T)) }
}

func decodeCases() []decodeCase {
	ipv6 := netip.MustParseAddr("2001:db8::1").As16()
	return []decodeCase{
		{
			name:   "ErrorResponse",
			decode: wrap(DecodeErrorResponse),
			golden: cat(le64(77), le32(1), le32(5), []byte("oops!")),
			want:   ErrorResponse{OffendingCorrelationID: 77, Code: ErrorCodeInvalidChannel, Message: "oops!"},
			encode: enc(appendErrorResponse), lengthOffsets: []int{12},
		},
		{
			name:   "PublicationBuffersReady",
			decode: wrap(DecodePublicationBuffersReady),
			golden: cat(le64(10), le64(9), le32(-123), le32(1001), le32(3), le32(-1), le32(12), []byte("/dev/shm/a/1")),
			want: PublicationBuffersReady{CorrelationID: 10, RegistrationID: 9, SessionID: -123, StreamID: 1001,
				PublicationLimitCounterID: 3, ChannelStatusCounterID: -1, LogFileName: "/dev/shm/a/1"},
			encode: enc(appendPublicationBuffersReady), lengthOffsets: []int{32},
		},
		{
			name:   "SubscriptionReady",
			decode: wrap(DecodeSubscriptionReady),
			golden: cat(le64(11), le32(-1)),
			want:   SubscriptionReady{CorrelationID: 11, ChannelStatusCounterID: NullCounterID},
			encode: enc(appendSubscriptionReady),
		},
		{
			name:   "ImageBuffersReady",
			decode: wrap(DecodeImageBuffersReady),
			golden: cat(le64(12), le32(-5), le32(1002), le64(11), le32(7), le32(5), []byte("/log1"), []byte{0, 0, 0},
				le32(9), []byte("aeron:ipc")),
			want: ImageBuffersReady{CorrelationID: 12, SessionID: -5, StreamID: 1002, SubscriptionRegistrationID: 11,
				SubscriberPositionCounterID: 7, LogFileName: "/log1", SourceIdentity: "aeron:ipc"},
			encode: enc(appendImageBuffersReady), lengthOffsets: []int{28, 40},
		},
		{
			name:   "ImageBuffersReady aligned name",
			decode: wrap(DecodeImageBuffersReady),
			golden: cat(le64(12), le32(1), le32(2), le64(3), le32(4), le32(4), []byte("/abc"),
				le32(14), []byte("127.0.0.1:4000")),
			want: ImageBuffersReady{CorrelationID: 12, SessionID: 1, StreamID: 2, SubscriptionRegistrationID: 3,
				SubscriberPositionCounterID: 4, LogFileName: "/abc", SourceIdentity: "127.0.0.1:4000"},
			encode: enc(appendImageBuffersReady), lengthOffsets: []int{28, 36},
		},
		{
			name:   "OperationSucceeded",
			decode: wrap(DecodeOperationSucceeded),
			golden: le64(13),
			want:   OperationSucceeded{CorrelationID: 13},
			encode: enc(appendOperationSucceeded),
		},
		{
			name:   "ImageMessage",
			decode: wrap(DecodeImageMessage),
			golden: cat(le64(14), le64(11), le32(1002), le32(9), []byte("aeron:ipc")),
			want:   ImageMessage{CorrelationID: 14, SubscriptionRegistrationID: 11, StreamID: 1002, Channel: "aeron:ipc"},
			encode: enc(appendImageMessage), lengthOffsets: []int{20},
		},
		{
			name:   "CounterUpdate",
			decode: wrap(DecodeCounterUpdate),
			golden: cat(le64(15), le32(8)),
			want:   CounterUpdate{CorrelationID: 15, CounterID: 8},
			encode: enc(appendCounterUpdate),
		},
		{
			name:   "ClientTimeout",
			decode: wrap(DecodeClientTimeout),
			golden: le64(16),
			want:   ClientTimeout{ClientID: 16},
			encode: enc(appendClientTimeout),
		},
		{
			name:   "StaticCounter",
			decode: wrap(DecodeStaticCounter),
			golden: cat(le64(17), le32(9)),
			want:   StaticCounter{CorrelationID: 17, CounterID: 9},
			encode: enc(appendStaticCounter),
		},
		{
			name:   "PublicationErrorFrame",
			decode: wrap(DecodePublicationErrorFrame),
			golden: cat(le64(18), le64(19), le32(20), le32(21), le64(22), le64(23), le16(2), le16(-1), ipv6[:],
				le32(13), le32(4), []byte("boom")),
			want: PublicationErrorFrame{RegistrationID: 18, DestinationRegistrationID: 19, SessionID: 20, StreamID: 21,
				ReceiverID: 22, GroupTag: 23, AddressType: AddressTypeIPv6, Port: 65535, Address: ipv6,
				ErrorCode: ErrorCodeImageRejected, Message: "boom"},
			encode: enc(appendPublicationErrorFrame), lengthOffsets: []int{64},
		},
	}
}

func TestDecodeGolden(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.decode(tc.golden)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got != tc.want {
				t.Fatalf("decode = %+v, want %+v", got, tc.want)
			}
			// Round trip: the test-only encoder writes the same bytes.
			if b := tc.encode(got); string(b) != string(tc.golden) {
				t.Fatalf("encode =\n% x\nwant\n% x", b, tc.golden)
			}
			// Trailing bytes (fields a newer driver may append) are ignored.
			got, err = tc.decode(cat(tc.golden, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}))
			if err != nil || got != tc.want {
				t.Fatalf("with trailing bytes: %+v, %v", got, err)
			}
		})
	}
}

// Every strict prefix of a valid payload is ErrTruncated, with the zero
// value.
func TestDecodeTruncated(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			zero := zeroOf(tc.want)
			for n := range len(tc.golden) {
				got, err := tc.decode(tc.golden[:n])
				if !errors.Is(err, ErrTruncated) {
					t.Fatalf("prefix of %d bytes: error %v, want ErrTruncated", n, err)
				}
				var de *DecodeError
				if !errors.As(err, &de) || de.PayloadLength != n || de.Offset+de.Length <= n {
					t.Fatalf("prefix of %d bytes: %#v does not locate the missing bytes", n, err)
				}
				if got != zero {
					t.Fatalf("prefix of %d bytes: value %+v with error", n, got)
				}
			}
		})
	}
}

// A negative string length is ErrMalformed; one past the end is
// ErrTruncated.
func TestDecodeBadStringLength(t *testing.T) {
	for _, tc := range decodeCases() {
		for _, off := range tc.lengthOffsets {
			for _, bad := range []struct {
				length int32
				want   error
			}{
				{-1, ErrMalformed},
				{-1 << 31, ErrMalformed},
				{1 << 30, ErrTruncated},
				{1<<31 - 1, ErrTruncated},
			} {
				b := []byte(string(tc.golden))
				copy(b[off:], le32(bad.length))
				got, err := tc.decode(b)
				if !errors.Is(err, bad.want) || got != zeroOf(tc.want) {
					t.Errorf("%s: length %d at %d: %+v, %v; want %v", tc.name, bad.length, off, got, err, bad.want)
				}
				var de *DecodeError
				if errors.As(err, &de) && de.Flyweight == "" {
					t.Errorf("%s: error %v does not name the flyweight", tc.name, err)
				}
			}
		}
	}
}

func zeroOf(v any) any {
	switch v.(type) {
	case ErrorResponse:
		return ErrorResponse{}
	case PublicationBuffersReady:
		return PublicationBuffersReady{}
	case SubscriptionReady:
		return SubscriptionReady{}
	case ImageBuffersReady:
		return ImageBuffersReady{}
	case OperationSucceeded:
		return OperationSucceeded{}
	case ImageMessage:
		return ImageMessage{}
	case CounterUpdate:
		return CounterUpdate{}
	case ClientTimeout:
		return ClientTimeout{}
	case StaticCounter:
		return StaticCounter{}
	case PublicationErrorFrame:
		return PublicationErrorFrame{}
	}
	panic(fmt.Sprintf("assertion failed: no zero value for %T", v))
}

func TestDecodeErrorMessages(t *testing.T) {
	_, err := DecodePublicationBuffersReady(cat(le64(1), le64(2), le32(3), le32(4), le32(5), le32(6), le32(20), []byte("/short")))
	const truncated = "command: decode PublicationBuffersReady: log file name needs 20 bytes at offset 36, payload has 42: command: response truncated"
	if err == nil || err.Error() != truncated {
		t.Errorf("error = %v, want %q", err, truncated)
	}
	_, err = DecodeErrorResponse(cat(le64(1), le32(1), le32(-3)))
	const malformed = "command: decode ErrorResponse: error message length: invalid length -3 at offset 12 (payload 16 bytes): command: response malformed"
	if err == nil || err.Error() != malformed {
		t.Errorf("error = %v, want %q", err, malformed)
	}
	_, err = DecodeSubscriptionReady(le64(1))
	const short = "command: decode SubscriptionReady: fixed-length fields needs 12 bytes at offset 0, payload has 8: command: response truncated"
	if err == nil || err.Error() != short {
		t.Errorf("error = %v, want %q", err, short)
	}
}

func TestPublicationErrorFrameSource(t *testing.T) {
	var addr [16]byte
	copy(addr[:], []byte{127, 0, 0, 1})
	for _, tc := range []struct {
		frame PublicationErrorFrame
		want  string
		ok    bool
	}{
		{PublicationErrorFrame{AddressType: AddressTypeIPv4, Port: 40123, Address: addr}, "127.0.0.1:40123", true},
		{PublicationErrorFrame{AddressType: AddressTypeIPv6, Port: 1, Address: netip.MustParseAddr("::1").As16()}, "[::1]:1", true},
		{PublicationErrorFrame{AddressType: 0}, "invalid AddrPort", false},
		{PublicationErrorFrame{AddressType: 3}, "invalid AddrPort", false},
	} {
		got, ok := tc.frame.Source()
		if ok != tc.ok || got.String() != tc.want {
			t.Errorf("Source(%v) = %v, %v; want %v, %v", tc.frame.AddressType, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDriverError(t *testing.T) {
	r := ErrorResponse{OffendingCorrelationID: 42, Code: ErrorCodeInvalidChannel, Message: "unknown media: tcp"}
	var err error = r.Err()
	if !errors.Is(err, ErrDriver) || !errors.Is(err, ErrInvalidChannel) {
		t.Fatalf("%v does not match ErrDriver and ErrInvalidChannel", err)
	}
	if errors.Is(err, ErrUnknownHost) || errors.Is(err, ErrTruncated) {
		t.Fatalf("%v matches an unrelated sentinel", err)
	}
	var de *DriverError
	if !errors.As(err, &de) || de.Code != ErrorCodeInvalidChannel || de.CorrelationID != 42 || de.Message != r.Message {
		t.Fatalf("errors.As = %+v", de)
	}
	const want = "command: driver error INVALID_CHANNEL (code 1), correlation id 42: unknown media: tcp"
	if err.Error() != want {
		t.Fatalf("Error() = %q, want %q", err.Error(), want)
	}
	endpoint := (&DriverError{Code: ErrorCodeChannelEndpointError, CorrelationID: 3, Message: "bind"}).Error()
	if !strings.Contains(endpoint, "channel-status counter id 3") {
		t.Fatalf("endpoint error %q does not name the channel-status counter id", endpoint)
	}

	// Every defined code has its own sentinel; UNUSED and unknown codes
	// match only ErrDriver.
	seen := map[error]ErrorCode{}
	for code := range errorCodeNames {
		e := &DriverError{Code: code}
		sentinel, ok := codeSentinels[code]
		if code == ErrorCodeUnused {
			if ok {
				t.Errorf("UNUSED has a sentinel")
			}
			continue
		}
		if !ok || !errors.Is(e, sentinel) || !errors.Is(e, ErrDriver) {
			t.Errorf("%v: sentinel %v, ok %v", code, sentinel, ok)
		}
		if other, dup := seen[sentinel]; dup {
			t.Errorf("%v and %v share a sentinel", code, other)
		}
		seen[sentinel] = code
		if !strings.Contains(sentinel.Error(), code.String()) {
			t.Errorf("sentinel %q does not name %v", sentinel, code)
		}
	}
	unknown := &DriverError{Code: 99}
	if !errors.Is(unknown, ErrDriver) || errors.Is(unknown, ErrGeneric) {
		t.Errorf("unknown code matches wrongly")
	}
}
