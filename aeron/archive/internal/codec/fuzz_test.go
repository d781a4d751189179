package codec

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// checkDecoded checks the decoder properties of P9 for one input:
//
//	(a) no panic (the fuzzer catches one) and the input is not modified;
//	(b) err != nil ⇔ nil result, and err is a *DecodeError matching a
//	    decoding sentinel, located inside the message;
//	(c) a decoded value re-encodes (canonically, at version 10) to bytes
//	    that decode to the same value;
//	(d) every strict prefix of that encoding is ErrTruncated.
//
// encode returns false for a decoded value the production encoder
// rejects (decoders are more lenient than encoders, e.g. about enums).
func checkDecoded(t *testing.T, in []byte, decode func([]byte) (Message, error),
	encode func(Message) ([]byte, bool)) {
	t.Helper()
	orig := bytes.Clone(in)
	got, err := decode(in)
	if !bytes.Equal(orig, in) {
		t.Fatalf("decoder modified its input")
	}
	if err != nil {
		if got != nil {
			t.Fatalf("error %v with a non-zero result %+v", err, got)
		}
		var de *DecodeError
		if !errors.As(err, &de) || !isDecodeSentinel(err) {
			t.Fatalf("error %v is not a *DecodeError with a decoding sentinel", err)
		}
		if de.MessageLength != len(in) || de.Offset < 0 || de.Offset > len(in) {
			t.Fatalf("error %+v is located outside the %d-byte message", de, len(in))
		}
		return
	}
	if got == nil {
		t.Fatalf("nil result without an error")
	}
	b, ok := encode(got)
	if !ok {
		return
	}
	again, err := decode(b)
	if err != nil || !reflect.DeepEqual(again, got) {
		t.Fatalf("round trip:\n got %+v, %v\nwant %+v", again, err, got)
	}
	for n := range len(b) {
		if v, err := decode(b[:n]); v != nil || !errors.Is(err, ErrTruncated) {
			t.Fatalf("prefix of %d of %d bytes: %+v, %v; want ErrTruncated", n, len(b), v, err)
		}
	}
}

func isDecodeSentinel(err error) bool {
	for _, s := range []error{ErrTruncated, ErrMalformed, ErrSchemaMismatch, ErrUnknownTemplate,
		ErrTemplateMismatch} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// typed adapts a typed decoder, passing a non-zero value returned with an
// error through so that checkDecoded sees it.
func typed[T Message](decode func([]byte) (T, error)) func([]byte) (Message, error) {
	return func(b []byte) (Message, error) {
		v, err := decode(b)
		if err != nil && reflect.ValueOf(&v).Elem().IsZero() {
			return nil, err
		}
		return v, err
	}
}

func encodeResponse(m Message) ([]byte, bool) { return appendResponse(nil, m), true }

func encodeRequest(m Message) ([]byte, bool) {
	b, err := m.(Request).AppendTo(nil)
	return b, err == nil
}

func decodeAnyRequest(b []byte) (Message, error) {
	r, err := decodeRequest(b)
	if r == nil {
		return nil, err
	}
	return r, err
}

// addSeeds adds the golden messages for which keep holds, and variants of
// them: truncated, padded, an older version, a longer block, a foreign
// schema.
func addSeeds(f *testing.F, keep func(wireCase) bool) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{0xFF}, 96))
	for _, tc := range wireCases() {
		if !keep(tc) {
			continue
		}
		g := tc.golden
		f.Add(g)
		f.Add(g[:len(g)/2])
		f.Add(g[:len(g)-1])
		f.Add(append(bytes.Clone(g), make([]byte, 64)...))
		f.Add(withVersion(g, 3))
		f.Add(withBlockDelta(g, 12))
		f.Add(withBlockDelta(g, -1))
		f.Add(withSchema(g, 102))
	}
}

func fuzzResponse[T Message](f *testing.F, template TemplateID, decode func([]byte) (T, error)) {
	addSeeds(f, func(tc wireCase) bool { return tc.msg.TemplateID() == template })
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoded(t, in, typed(decode), encodeResponse)
	})
}

func FuzzDecodeControlResponse(f *testing.F) {
	fuzzResponse(f, TemplateControlResponse, DecodeControlResponse)
}

func FuzzDecodeChallenge(f *testing.F) { fuzzResponse(f, TemplateChallenge, DecodeChallenge) }

func FuzzDecodePing(f *testing.F) { fuzzResponse(f, TemplatePing, DecodePing) }

func FuzzDecodeRecordingSignalEvent(f *testing.F) {
	fuzzResponse(f, TemplateRecordingSignalEvent, DecodeRecordingSignalEvent)
}

func FuzzDecodeRecordingDescriptor(f *testing.F) {
	fuzzResponse(f, TemplateRecordingDescriptor, DecodeRecordingDescriptor)
}

func FuzzDecodeRecordingSubscriptionDescriptor(f *testing.F) {
	fuzzResponse(f, TemplateRecordingSubscriptionDescriptor, DecodeRecordingSubscriptionDescriptor)
}

func FuzzDecodeRecordingStarted(f *testing.F) {
	fuzzResponse(f, TemplateRecordingStarted, DecodeRecordingStarted)
}

func FuzzDecodeRecordingProgress(f *testing.F) {
	fuzzResponse(f, TemplateRecordingProgress, DecodeRecordingProgress)
}

func FuzzDecodeRecordingStopped(f *testing.F) {
	fuzzResponse(f, TemplateRecordingStopped, DecodeRecordingStopped)
}

// FuzzDecode checks the dispatcher on every kind of message, requests
// included (which it must report as unknown templates).
func FuzzDecode(f *testing.F) {
	addSeeds(f, func(wireCase) bool { return true })
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoded(t, in, Decode, encodeResponse)
		h, herr := PeekHeader(in)
		_, derr := Decode(in)
		if herr != nil && !reflect.DeepEqual(herr, derr) {
			t.Fatalf("PeekHeader failed with %v but Decode with %v", herr, derr)
		}
		if herr == nil && errors.Is(derr, ErrUnknownTemplate) {
			if _, known := templateNames[h.TemplateID]; known && !isRequestTemplate(h.TemplateID) {
				t.Fatalf("Decode does not know response template %s", h.TemplateID)
			}
		}
	})
}

func isRequestTemplate(t TemplateID) bool {
	_, ok := requestDecoders[t]
	return ok
}

// FuzzPeekHeader: a header is read from any 8 bytes with schema id 101,
// and re-written identically.
func FuzzPeekHeader(f *testing.F) {
	addSeeds(f, func(wireCase) bool { return true })
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := PeekHeader(in)
		if err != nil {
			if h != (Header{}) || !(errors.Is(err, ErrTruncated) || errors.Is(err, ErrSchemaMismatch)) {
				t.Fatalf("%+v, %v", h, err)
			}
			if len(in) >= HeaderLength && errors.Is(err, ErrTruncated) {
				t.Fatalf("%d bytes reported truncated", len(in))
			}
			return
		}
		out := make([]byte, HeaderLength)
		putHeader(out, h)
		if !bytes.Equal(out, in[:HeaderLength]) {
			t.Fatalf("header % x re-encoded as % x", in[:HeaderLength], out)
		}
	})
}

// FuzzDecodeRequest checks the archive-side request decoders the tests
// use against the production encoders.
func FuzzDecodeRequest(f *testing.F) {
	addSeeds(f, wireCase.isRequest)
	f.Fuzz(func(t *testing.T, in []byte) {
		checkDecoded(t, in, decodeAnyRequest, encodeRequest)
	})
}

// FuzzEncodeRequests builds every request from fuzzed field values: each
// either encodes to EncodedLength bytes that decode to it, or fails with an
// *EncodeError and appends nothing.
func FuzzEncodeRequests(f *testing.F) {
	f.Add(cs, corr, id, id2, n32, m32, k32, channel, []byte("creds"), true)
	f.Add(int64(0), int64(-1), int64(-1), int64(0), int32(0), int32(2), int32(-1), "", []byte(nil), false)
	f.Add(int64(1), int64(2), int64(3), int64(4), int32(5), int32(1<<24), int32(7), "aeron:ipc\xc3\xa9", []byte{0},
		true)
	f.Fuzz(func(t *testing.T, a, b, c, d int64, i, j, k int32, s string, data []byte, flag bool) {
		for _, req := range []Request{
			ConnectRequest{CorrelationID: a, ResponseStreamID: i, Version: SemanticVersion(j), ResponseChannel: s},
			AuthConnectRequest{CorrelationID: a, ResponseStreamID: i, Version: SemanticVersion(j),
				ResponseChannel: s, Credentials: data},
			ChallengeResponse{ControlSessionID: a, CorrelationID: b, Credentials: data},
			CloseSessionRequest{ControlSessionID: a},
			KeepAliveRequest{ControlSessionID: a, CorrelationID: b},
			ArchiveIDRequest{ControlSessionID: a, CorrelationID: b},
			StartRecordingRequest{ControlSessionID: a, CorrelationID: b, StreamID: i,
				SourceLocation: SourceLocation(j), Channel: s},
			StartRecordingRequest2{ControlSessionID: a, CorrelationID: b, StreamID: i,
				SourceLocation: SourceLocation(j), AutoStop: flag, Channel: s},
			ExtendRecordingRequest2{ControlSessionID: a, CorrelationID: b, RecordingID: c, StreamID: i,
				SourceLocation: SourceLocation(j), AutoStop: flag, Channel: s},
			StopRecordingRequest{ControlSessionID: a, CorrelationID: b, StreamID: i, Channel: s},
			StopRecordingSubscriptionRequest{ControlSessionID: a, CorrelationID: b, SubscriptionID: c},
			StopRecordingByIdentityRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			ListRecordingsRequest{ControlSessionID: a, CorrelationID: b, FromRecordingID: c, RecordCount: i},
			ListRecordingsForURIRequest{ControlSessionID: a, CorrelationID: b, FromRecordingID: c,
				RecordCount: i, StreamID: j, Channel: s},
			ListRecordingRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			RecordingPositionRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			StopPositionRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			StartPositionRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			MaxRecordedPositionRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			TruncateRecordingRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c, Position: d},
			PurgeRecordingRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			PurgeSegmentsRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c, NewStartPosition: d},
			DetachSegmentsRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c, NewStartPosition: d},
			AttachSegmentsRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
			ReplayRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c, Position: d, Length: -d,
				ReplayStreamID: i, FileIOMaxLength: j, ReplayToken: a ^ d, ReplayChannel: s},
			BoundedReplayRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c, Position: d, Length: -d,
				LimitCounterID: k, ReplayStreamID: i, FileIOMaxLength: j, ReplayToken: a ^ d, ReplayChannel: s},
			StopReplayRequest{ControlSessionID: a, CorrelationID: b, ReplaySessionID: c},
			StopAllReplaysRequest{ControlSessionID: a, CorrelationID: b, RecordingID: c},
		} {
			prefix := []byte{0xEE}
			out, err := req.AppendTo(prefix)
			if err != nil {
				var ee *EncodeError
				if !errors.As(err, &ee) || len(out) != 1 {
					t.Fatalf("%s: %v, %d bytes", req.TemplateID(), err, len(out))
				}
				continue
			}
			if len(out) != 1+req.EncodedLength() || out[0] != 0xEE {
				t.Fatalf("%s: appended %d bytes, EncodedLength %d", req.TemplateID(), len(out)-1, req.EncodedLength())
			}
			got, err := decodeRequest(out[1:])
			if err != nil || !reflect.DeepEqual(got, normalise(req)) {
				t.Fatalf("%s round trip:\n got %+v, %v\nwant %+v", req.TemplateID(), got, err, req)
			}
		}
	})
}

// normalise maps empty credentials to nil, as decoders return them.
func normalise(r Request) Request {
	switch v := r.(type) {
	case AuthConnectRequest:
		if len(v.Credentials) == 0 {
			v.Credentials = nil
		}
		return v
	case ChallengeResponse:
		if len(v.Credentials) == 0 {
			v.Credentials = nil
		}
		return v
	}
	return r
}
