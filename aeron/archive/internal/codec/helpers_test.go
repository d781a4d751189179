package codec

import (
	"fmt"
	"testing"
)

// Test-only encoders of the messages an archive sends and decoders of the
// requests a client sends, so that every message round-trips. They use the
// layout constants; golden_test.go pins those and the bytes independently.

// appendResponse appends m, a message an archive sends, at SchemaVersion.
func appendResponse(dst []byte, m Message) []byte {
	switch v := m.(type) {
	case ControlResponse:
		out, w := appendMessage(dst, v.TemplateID(), responseBlockLength, varSize(len(v.ErrorMessage)))
		w.session(v.ControlSessionID, v.CorrelationID)
		w.int64(responseRelevantIDOffset, v.RelevantID)
		w.int32(responseCodeOffset, int32(v.Code))
		w.int32(responseVersionOffset, int32(v.Version))
		w.ascii(v.ErrorMessage)
		return out
	case Challenge:
		out, w := appendMessage(dst, v.TemplateID(), challengeBlockLength, varSize(len(v.EncodedChallenge)))
		w.session(v.ControlSessionID, v.CorrelationID)
		w.int32(challengeVersionOffset, int32(v.Version))
		w.data(v.EncodedChallenge)
		return out
	case Ping:
		out, w := appendMessage(dst, v.TemplateID(), pingBlockLength, 0)
		w.int64(pingControlSessionIDOffset, v.ControlSessionID)
		return out
	case RecordingSignalEvent:
		out, w := appendMessage(dst, v.TemplateID(), signalBlockLength, 0)
		w.session(v.ControlSessionID, v.CorrelationID)
		w.int64(signalRecordingIDOffset, v.RecordingID)
		w.int64(signalSubscriptionIDOffset, v.SubscriptionID)
		w.int64(signalPositionOffset, v.Position)
		w.int32(signalSignalOffset, int32(v.Signal))
		return out
	case RecordingDescriptor:
		out, w := appendMessage(dst, v.TemplateID(), descBlockLength,
			varSize(len(v.StrippedChannel))+varSize(len(v.OriginalChannel))+varSize(len(v.SourceIdentity)))
		w.session(v.ControlSessionID, v.CorrelationID)
		w.int64(descRecordingIDOffset, v.RecordingID)
		w.int64(descStartTimestampOffset, v.StartTimestamp)
		w.int64(descStopTimestampOffset, v.StopTimestamp)
		w.int64(descStartPositionOffset, v.StartPosition)
		w.int64(descStopPositionOffset, v.StopPosition)
		w.int32(descInitialTermIDOffset, v.InitialTermID)
		w.int32(descSegmentFileLengthOffset, v.SegmentFileLength)
		w.int32(descTermBufferLengthOffset, v.TermBufferLength)
		w.int32(descMTULengthOffset, v.MTULength)
		w.int32(descSessionIDOffset, v.SessionID)
		w.int32(descStreamIDOffset, v.StreamID)
		w.ascii(v.StrippedChannel)
		w.ascii(v.OriginalChannel)
		w.ascii(v.SourceIdentity)
		return out
	case RecordingSubscriptionDescriptor:
		out, w := appendMessage(dst, v.TemplateID(), subDescBlockLength, varSize(len(v.StrippedChannel)))
		w.session(v.ControlSessionID, v.CorrelationID)
		w.int64(subDescSubscriptionIDOffset, v.SubscriptionID)
		w.int32(subDescStreamIDOffset, v.StreamID)
		w.ascii(v.StrippedChannel)
		return out
	case RecordingStarted:
		out, w := appendMessage(dst, v.TemplateID(), startedBlockLength,
			varSize(len(v.Channel))+varSize(len(v.SourceIdentity)))
		w.int64(eventRecordingIDOffset, v.RecordingID)
		w.int64(eventStartPositionOffset, v.StartPosition)
		w.int32(startedSessionIDOffset, v.SessionID)
		w.int32(startedStreamIDOffset, v.StreamID)
		w.ascii(v.Channel)
		w.ascii(v.SourceIdentity)
		return out
	case RecordingProgress:
		out, w := appendMessage(dst, v.TemplateID(), eventBlockLength, 0)
		w.int64(eventRecordingIDOffset, v.RecordingID)
		w.int64(eventStartPositionOffset, v.StartPosition)
		w.int64(eventPositionOffset, v.Position)
		return out
	case RecordingStopped:
		out, w := appendMessage(dst, v.TemplateID(), eventBlockLength, 0)
		w.int64(eventRecordingIDOffset, v.RecordingID)
		w.int64(eventStartPositionOffset, v.StartPosition)
		w.int64(eventPositionOffset, v.StopPosition)
		return out
	}
	panic(fmt.Sprintf("assertion failed: appendResponse: %T is not a response", m))
}

// mustAppend appends a request that must encode.
func mustAppend(tb testing.TB, dst []byte, r Request) []byte {
	tb.Helper()
	out, err := r.AppendTo(dst)
	if err != nil {
		tb.Fatalf("%s.AppendTo: %v", r.TemplateID(), err)
	}
	return out
}

// requestDecoders decode each request as the archive does
// (ControlSessionAdapter): fields added after a request's first version
// read as absent when the header's version predates them, and absent
// fileIoMaxLength and replayToken become NullValue.
var requestDecoders = map[TemplateID]func([]byte) (Request, error){
	TemplateConnectRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateConnectRequest, connectVersionOffset)
		v := ConnectRequest{
			CorrelationID:    r.int64(connectCorrelationIDOffset),
			ResponseStreamID: r.int32(connectResponseStreamIDOffset),
			Version: SemanticVersion(r.int32Since("version", connectVersionOffset,
				connectVersionSinceVersion, 0)),
		}
		v.ResponseChannel = r.ascii("responseChannel")
		return finish(&r, v)
	},
	TemplateAuthConnectRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateAuthConnectRequest, connectBlockLength)
		v := AuthConnectRequest{
			CorrelationID:    r.int64(connectCorrelationIDOffset),
			ResponseStreamID: r.int32(connectResponseStreamIDOffset),
			Version:          SemanticVersion(r.int32(connectVersionOffset)),
		}
		v.ResponseChannel = r.ascii("responseChannel")
		v.Credentials = r.data("encodedCredentials")
		return finish(&r, v)
	},
	TemplateChallengeResponse: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateChallengeResponse, sessionPrefixLength)
		v := ChallengeResponse{ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID: r.int64(correlationIDOffset)}
		v.Credentials = r.data("encodedCredentials")
		return finish(&r, v)
	},
	TemplateCloseSessionRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateCloseSessionRequest, closeSessionBlockLength)
		return finish(&r, CloseSessionRequest{ControlSessionID: r.int64(closeSessionControlSessionIDOffset)})
	},
	TemplateKeepAliveRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateKeepAliveRequest, sessionPrefixLength)
		return finish(&r, KeepAliveRequest{ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID: r.int64(correlationIDOffset)})
	},
	TemplateArchiveIDRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateArchiveIDRequest, sessionPrefixLength)
		return finish(&r, ArchiveIDRequest{ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID: r.int64(correlationIDOffset)})
	},
	TemplateStartRecordingRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateStartRecordingRequest, startRecordingBlockLength)
		v := StartRecordingRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			StreamID:         r.int32(startRecordingStreamIDOffset),
			SourceLocation:   SourceLocation(r.int32(startRecordingSourceLocationOffset)),
		}
		v.Channel = r.ascii("channel")
		return finish(&r, v)
	},
	TemplateStartRecordingRequest2: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateStartRecordingRequest2, startRecording2BlockLength)
		v := StartRecordingRequest2{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			StreamID:         r.int32(startRecordingStreamIDOffset),
			SourceLocation:   SourceLocation(r.int32(startRecordingSourceLocationOffset)),
			AutoStop:         r.boolean("autoStop", startRecording2AutoStopOffset),
		}
		v.Channel = r.ascii("channel")
		return finish(&r, v)
	},
	TemplateExtendRecordingRequest2: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateExtendRecordingRequest2, extendRecording2BlockLength)
		v := ExtendRecordingRequest2{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			RecordingID:      r.int64(extendRecordingIDOffset),
			StreamID:         r.int32(extendRecordingStreamIDOffset),
			SourceLocation:   SourceLocation(r.int32(extendRecordingSourceLocationOffset)),
			AutoStop:         r.boolean("autoStop", extendRecordingAutoStopOffset),
		}
		v.Channel = r.ascii("channel")
		return finish(&r, v)
	},
	TemplateStopRecordingRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateStopRecordingRequest, stopRecordingBlockLength)
		v := StopRecordingRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			StreamID:         r.int32(stopRecordingStreamIDOffset),
		}
		v.Channel = r.ascii("channel")
		return finish(&r, v)
	},
	TemplateStopRecordingSubscriptionRequest: idRequestDecoder(TemplateStopRecordingSubscriptionRequest,
		func(cs, corr, id int64) Request {
			return StopRecordingSubscriptionRequest{ControlSessionID: cs, CorrelationID: corr, SubscriptionID: id}
		}),
	TemplateStopRecordingByIdentityRequest: idRequestDecoder(TemplateStopRecordingByIdentityRequest,
		func(cs, corr, id int64) Request {
			return StopRecordingByIdentityRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateListRecordingsRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateListRecordingsRequest, listRecordingsBlockLength)
		return finish(&r, ListRecordingsRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			FromRecordingID:  r.int64(listFromRecordingIDOffset),
			RecordCount:      r.int32(listRecordCountOffset),
		})
	},
	TemplateListRecordingsForURIRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateListRecordingsForURIRequest, listForURIBlockLength)
		v := ListRecordingsForURIRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			FromRecordingID:  r.int64(listFromRecordingIDOffset),
			RecordCount:      r.int32(listRecordCountOffset),
			StreamID:         r.int32(listForURIStreamIDOffset),
		}
		v.Channel = r.ascii("channel")
		return finish(&r, v)
	},
	TemplateListRecordingRequest: idRequestDecoder(TemplateListRecordingRequest,
		func(cs, corr, id int64) Request {
			return ListRecordingRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateRecordingPositionRequest: idRequestDecoder(TemplateRecordingPositionRequest,
		func(cs, corr, id int64) Request {
			return RecordingPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateStopPositionRequest: idRequestDecoder(TemplateStopPositionRequest,
		func(cs, corr, id int64) Request {
			return StopPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateStartPositionRequest: idRequestDecoder(TemplateStartPositionRequest,
		func(cs, corr, id int64) Request {
			return StartPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateMaxRecordedPositionRequest: idRequestDecoder(TemplateMaxRecordedPositionRequest,
		func(cs, corr, id int64) Request {
			return MaxRecordedPositionRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateTruncateRecordingRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateTruncateRecordingRequest, truncateBlockLength)
		return finish(&r, TruncateRecordingRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			RecordingID:      r.int64(truncateRecordingIDOffset),
			Position:         r.int64(truncatePositionOffset),
		})
	},
	TemplatePurgeSegmentsRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplatePurgeSegmentsRequest, truncateBlockLength)
		return finish(&r, PurgeSegmentsRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			RecordingID:      r.int64(truncateRecordingIDOffset),
			NewStartPosition: r.int64(truncatePositionOffset),
		})
	},
	TemplateDetachSegmentsRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateDetachSegmentsRequest, truncateBlockLength)
		return finish(&r, DetachSegmentsRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			RecordingID:      r.int64(truncateRecordingIDOffset),
			NewStartPosition: r.int64(truncatePositionOffset),
		})
	},
	TemplateAttachSegmentsRequest: idRequestDecoder(TemplateAttachSegmentsRequest,
		func(cs, corr, id int64) Request {
			return AttachSegmentsRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplatePurgeRecordingRequest: idRequestDecoder(TemplatePurgeRecordingRequest,
		func(cs, corr, id int64) Request {
			return PurgeRecordingRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
	TemplateReplayRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateReplayRequest, replayFileIOMaxLengthOffset)
		v := ReplayRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			RecordingID:      r.int64(replayRecordingIDOffset),
			Position:         r.int64(replayPositionOffset),
			Length:           r.int64(replayLengthOffset),
			ReplayStreamID:   r.int32(replayStreamIDOffset),
			FileIOMaxLength: r.int32Since("fileIoMaxLength", replayFileIOMaxLengthOffset,
				fileIOMaxLengthSinceVersion, NullValue),
			ReplayToken: r.int64Since("replayToken", replayTokenOffset, replayTokenSinceVersion, NullValue),
		}
		v.ReplayChannel = r.ascii("replayChannel")
		return finish(&r, v)
	},
	TemplateBoundedReplayRequest: func(msg []byte) (Request, error) {
		r := openMessage(msg, TemplateBoundedReplayRequest, boundedFileIOMaxLengthOffset)
		v := BoundedReplayRequest{
			ControlSessionID: r.int64(controlSessionIDOffset),
			CorrelationID:    r.int64(correlationIDOffset),
			RecordingID:      r.int64(replayRecordingIDOffset),
			Position:         r.int64(replayPositionOffset),
			Length:           r.int64(replayLengthOffset),
			LimitCounterID:   r.int32(boundedLimitCounterIDOffset),
			ReplayStreamID:   r.int32(boundedReplayStreamIDOffset),
			FileIOMaxLength: r.int32Since("fileIoMaxLength", boundedFileIOMaxLengthOffset,
				fileIOMaxLengthSinceVersion, NullValue),
			ReplayToken: r.int64Since("replayToken", boundedReplayTokenOffset, replayTokenSinceVersion, NullValue),
		}
		v.ReplayChannel = r.ascii("replayChannel")
		return finish(&r, v)
	},
	TemplateStopReplayRequest: idRequestDecoder(TemplateStopReplayRequest,
		func(cs, corr, id int64) Request {
			return StopReplayRequest{ControlSessionID: cs, CorrelationID: corr, ReplaySessionID: id}
		}),
	TemplateStopAllReplaysRequest: idRequestDecoder(TemplateStopAllReplaysRequest,
		func(cs, corr, id int64) Request {
			return StopAllReplaysRequest{ControlSessionID: cs, CorrelationID: corr, RecordingID: id}
		}),
}

// decodeRequest decodes any request, as the archive's adapter does.
func decodeRequest(msg []byte) (Request, error) {
	h, err := PeekHeader(msg)
	if err != nil {
		return nil, err
	}
	decode, ok := requestDecoders[h.TemplateID]
	if !ok {
		return nil, &DecodeError{Template: h.TemplateID, Field: "templateId", Offset: headerTemplateIDOffset,
			MessageLength: len(msg), Reason: "not a request", Err: ErrUnknownTemplate}
	}
	return decode(msg)
}

func idRequestDecoder(t TemplateID, build func(cs, corr, id int64) Request) func([]byte) (Request, error) {
	return func(msg []byte) (Request, error) {
		r := openMessage(msg, t, idRequestBlockLength)
		return finish(&r, build(r.int64(controlSessionIDOffset), r.int64(correlationIDOffset),
			r.int64(idRequestIDOffset)))
	}
}

func finish(r *reader, v Request) (Request, error) {
	if r.err != nil {
		return nil, r.err
	}
	return v, nil
}

// boolean reads a BooleanType field; a value other than FALSE or TRUE is
// malformed (the archive's SBE decoder throws on it).
func (r *reader) boolean(field string, off int) bool {
	v := r.int32(off)
	switch v {
	case booleanFalse:
		return false
	case booleanTrue:
		return true
	}
	r.fail(field, HeaderLength+off, ErrMalformed, "BooleanType %d", v)
	return false
}
