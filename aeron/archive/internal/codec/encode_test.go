package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// Invalid inputs are rejected with an *EncodeError naming the field, and
// nothing is appended.
func TestEncodeRejectsInvalidInput(t *testing.T) {
	long := "aeron:ipc?alias=" + strings.Repeat("x", MaxChannelLength-len("aeron:ipc?alias=")+1)
	for _, tc := range []struct {
		name  string
		req   Request
		field string
		want  error
	}{
		{"non-ASCII response channel", ConnectRequest{Version: ProtocolSemanticVersion,
			ResponseChannel: "aeron:udp?endpoint=hôst:1"}, "responseChannel", ErrNonASCII},
		{"response channel too long", AuthConnectRequest{Version: ProtocolSemanticVersion,
			ResponseChannel: long}, "responseChannel", ErrTooLong},
		{"negative version", ConnectRequest{Version: -1}, "version", ErrInvalidValue},
		{"version beyond version_t", AuthConnectRequest{Version: 1 << 24}, "version", ErrInvalidValue},
		{"non-ASCII channel", StartRecordingRequest{Channel: "aeron:ipc\x80"}, "channel", ErrNonASCII},
		{"invalid source location", StartRecordingRequest{SourceLocation: 2, Channel: "aeron:ipc"},
			"sourceLocation", ErrInvalidValue},
		{"invalid source location 2", StartRecordingRequest2{SourceLocation: -1}, "sourceLocation",
			ErrInvalidValue},
		{"stop channel too long", StopRecordingRequest{Channel: long}, "channel", ErrTooLong},
		{"list channel non-ASCII", ListRecordingsForURIRequest{Channel: "\xff"}, "channel", ErrNonASCII},
		{"replay channel too long", ReplayRequest{ReplayChannel: long}, "replayChannel", ErrTooLong},
		{"bounded replay channel non-ASCII", BoundedReplayRequest{ReplayChannel: "é"}, "replayChannel",
			ErrNonASCII},
	} {
		dst := []byte("prefix")
		out, err := tc.req.AppendTo(dst)
		var ee *EncodeError
		if !errors.Is(err, tc.want) || !errors.As(err, &ee) || ee.Field != tc.field ||
			ee.Template != tc.req.TemplateID() {
			t.Errorf("%s: err = %v; want %v on %s", tc.name, err, tc.want, tc.field)
		}
		if !bytes.Equal(out, []byte("prefix")) {
			t.Errorf("%s: appended % x", tc.name, out[len(dst):])
		}
	}
}

// The limits themselves are accepted; an empty channel is too.
func TestEncodeAcceptsLimits(t *testing.T) {
	longest := "aeron:ipc?alias=" + strings.Repeat("x", MaxChannelLength-len("aeron:ipc?alias="))
	for _, req := range []Request{
		ReplayRequest{ReplayChannel: longest},
		ListRecordingsForURIRequest{},
		ConnectRequest{Version: 0, ResponseChannel: "\x00\x7f"},
		AuthConnectRequest{Version: maxSemanticVersion},
		StartRecordingRequest2{SourceLocation: SourceLocal},
	} {
		b, err := req.AppendTo(nil)
		if err != nil || len(b) != req.EncodedLength() {
			t.Errorf("%s: %d bytes, %v; want %d", req.TemplateID(), len(b), err, req.EncodedLength())
		}
	}
}

func TestErrorStrings(t *testing.T) {
	_, err := StartRecordingRequest{SourceLocation: 9}.AppendTo(nil)
	if got, want := err.Error(),
		"codec: encode StartRecordingRequest: sourceLocation: SourceLocation(9) is not LOCAL or REMOTE: "+
			"codec: invalid field value"; got != want {
		t.Errorf("EncodeError = %q\nwant %q", got, want)
	}
	_, err = DecodeControlResponse(newGold(1, 32).b)
	if got, want := err.Error(),
		"codec: decode ControlResponse: errorMessage at offset 40 of 40-byte message: "+
			"length needs 4 bytes, 0 remain: codec: message truncated"; got != want {
		t.Errorf("DecodeError = %q\nwant %q", got, want)
	}
}
