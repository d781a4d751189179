package command

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzDecoder checks the decoder properties of P9 on arbitrary payloads:
// no panic; the input is not modified; err != nil implies the zero value
// and a *DecodeError matching ErrTruncated or ErrMalformed; a decoded
// value re-encodes within the payload's length and decodes to itself; and
// when the layout has no padding the re-encoding is exactly the payload's
// prefix.
func fuzzDecoder[T comparable](f *testing.F, decode func([]byte) (T, error), encode func([]byte, T) []byte, exactPrefix bool, seeds ...[]byte) {
	for _, s := range seeds {
		f.Add(s)
		for _, cut := range []int{0, 1, len(s) / 2, len(s) - 1} {
			if cut >= 0 && cut < len(s) {
				f.Add(s[:cut])
			}
		}
	}
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xFF}, 80))
	f.Fuzz(func(t *testing.T, payload []byte) {
		in := bytes.Clone(payload)
		got, err := decode(payload)
		if !bytes.Equal(in, payload) {
			t.Fatalf("decoder modified its input")
		}
		var zero T
		if err != nil {
			if got != zero {
				t.Fatalf("error %v with non-zero value %+v", err, got)
			}
			var de *DecodeError
			if !errors.As(err, &de) || !(errors.Is(err, ErrTruncated) || errors.Is(err, ErrMalformed)) {
				t.Fatalf("error %v is not a *DecodeError with a decode sentinel", err)
			}
			if de.Offset < 0 || de.PayloadLength != len(payload) {
				t.Fatalf("error %#v has a bad location", de)
			}
			return
		}
		b := encode(nil, got)
		if len(b) > len(payload) {
			t.Fatalf("decoded %+v from %d bytes but it encodes to %d", got, len(payload), len(b))
		}
		if exactPrefix && !bytes.Equal(b, payload[:len(b)]) {
			t.Fatalf("re-encoding\n% x\nis not the payload's prefix\n% x", b, payload[:len(b)])
		}
		again, err := decode(b)
		if err != nil || again != got {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, got)
		}
	})
}

func goldenSeed(f *testing.F, name string) []byte {
	for _, tc := range decodeCases() {
		if tc.name == name {
			return tc.golden
		}
	}
	f.Fatalf("no golden payload %q", name)
	return nil
}

func FuzzDecodeErrorResponse(f *testing.F) {
	fuzzDecoder(f, DecodeErrorResponse, appendErrorResponse, true, goldenSeed(f, "ErrorResponse"))
}

func FuzzDecodePublicationBuffersReady(f *testing.F) {
	fuzzDecoder(f, DecodePublicationBuffersReady, appendPublicationBuffersReady, true,
		goldenSeed(f, "PublicationBuffersReady"))
}

func FuzzDecodeSubscriptionReady(f *testing.F) {
	fuzzDecoder(f, DecodeSubscriptionReady, appendSubscriptionReady, true, goldenSeed(f, "SubscriptionReady"))
}

// The padding after the log file name is not carried in the value, so the
// re-encoding (zero padding) need not equal the payload's prefix.
func FuzzDecodeImageBuffersReady(f *testing.F) {
	fuzzDecoder(f, DecodeImageBuffersReady, appendImageBuffersReady, false,
		goldenSeed(f, "ImageBuffersReady"), goldenSeed(f, "ImageBuffersReady aligned name"))
}

func FuzzDecodeOperationSucceeded(f *testing.F) {
	fuzzDecoder(f, DecodeOperationSucceeded, appendOperationSucceeded, true, goldenSeed(f, "OperationSucceeded"))
}

func FuzzDecodeImageMessage(f *testing.F) {
	fuzzDecoder(f, DecodeImageMessage, appendImageMessage, true, goldenSeed(f, "ImageMessage"))
}

func FuzzDecodeCounterUpdate(f *testing.F) {
	fuzzDecoder(f, DecodeCounterUpdate, appendCounterUpdate, true, goldenSeed(f, "CounterUpdate"))
}

func FuzzDecodeClientTimeout(f *testing.F) {
	fuzzDecoder(f, DecodeClientTimeout, appendClientTimeout, true, goldenSeed(f, "ClientTimeout"))
}

func FuzzDecodeStaticCounter(f *testing.F) {
	fuzzDecoder(f, DecodeStaticCounter, appendStaticCounter, true, goldenSeed(f, "StaticCounter"))
}

func FuzzDecodePublicationErrorFrame(f *testing.F) {
	fuzzDecoder(f, DecodePublicationErrorFrame, appendPublicationErrorFrame, true,
		goldenSeed(f, "PublicationErrorFrame"))
}

// FuzzEncode builds every command from arbitrary field values. Properties:
// no panic; an error iff a string is non-ASCII or over its limit, with
// nothing appended; otherwise the payload has EncodedLength bytes after
// dst's prefix and the driver-side decode gives the command back.
func FuzzEncode(f *testing.F) {
	f.Add(int64(1), int64(2), int64(3), int32(1001), "aeron:ipc", []byte{1, 2, 3}, "label", []byte("pre"))
	f.Add(int64(-1), int64(0), int64(-1), int32(-1), "aeron:udp?endpoint=h\xc3\xa9:1", []byte{}, "caf\xc3\xa9", []byte{})
	f.Fuzz(func(t *testing.T, clientID, correlationID, registrationID int64, streamID int32, channel string, key []byte, label string, dst []byte) {
		if len(key) == 0 {
			key = nil // the driver-side decode cannot tell nil from empty
		}
		channelOK := isASCII(channel) && len(channel) <= MaxChannelLength
		counterOK := len(key) <= MaxCounterKeyLength && isASCII(label) && len(label) <= MaxCounterLabelLength
		var token []byte
		if len(channel) > 0 {
			token = []byte(channel)
		}
		for _, tc := range []struct {
			cmd Command
			ok  bool
		}{
			{AddPublication{clientID, correlationID, streamID, channel}, channelOK},
			{AddExclusivePublication{clientID, correlationID, streamID, channel}, channelOK},
			{AddSubscription{clientID, correlationID, streamID, channel}, channelOK},
			{RemovePublication{clientID, correlationID, registrationID}, true},
			{RemoveSubscription{clientID, correlationID, registrationID}, true},
			{RemoveCounter{clientID, correlationID, registrationID}, true},
			{ClientKeepalive{clientID, correlationID}, true},
			{ClientClose{clientID}, true},
			{AddCounter{clientID, correlationID, streamID, key, label}, counterOK},
			{AddDestination{clientID, correlationID, registrationID, channel}, channelOK},
			{RemoveDestination{clientID, correlationID, registrationID, channel}, channelOK},
			{AddRcvDestination{clientID, correlationID, registrationID, channel}, channelOK},
			{RemoveRcvDestination{clientID, correlationID, registrationID, channel}, channelOK},
			{TerminateDriver{clientID, token}, true},
		} {
			prefix := bytes.Clone(dst)
			out, err := tc.cmd.AppendTo(prefix)
			if (err == nil) != tc.ok {
				t.Fatalf("%v: error %v, want ok=%v", tc.cmd.Type(), err, tc.ok)
			}
			if !bytes.Equal(out[:min(len(out), len(dst))], dst) {
				t.Fatalf("%v: prefix changed", tc.cmd.Type())
			}
			if err != nil {
				if len(out) != len(dst) {
					t.Fatalf("%v: appended on error", tc.cmd.Type())
				}
				continue
			}
			payload := out[len(dst):]
			if len(payload) != tc.cmd.EncodedLength() {
				t.Fatalf("%v: %d bytes, EncodedLength %d", tc.cmd.Type(), len(payload), tc.cmd.EncodedLength())
			}
			back, err := decodeCommand(tc.cmd.Type(), payload)
			if err != nil {
				t.Fatalf("%v: driver-side decode: %v", tc.cmd.Type(), err)
			}
			if !equalCommands(back, tc.cmd) {
				t.Fatalf("%v: round trip %#v, want %#v", tc.cmd.Type(), back, tc.cmd)
			}
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] > asciiMax {
			return false
		}
	}
	return true
}
