package codec

import "fmt"

// Decode decodes one whole message the archive sends, dispatching on its
// template id. It returns a value (not a pointer) of [ControlResponse],
// [RecordingDescriptor], [RecordingSubscriptionDescriptor],
// [RecordingSignalEvent], [Challenge], [Ping], [RecordingStarted],
// [RecordingProgress] or [RecordingStopped]; switch on its type.
//
// A well-framed message of any other template fails with
// [ErrUnknownTemplate]: the caller skips it. Any other error is a protocol
// failure of the stream (see the sentinels in errors.go).
func Decode(msg []byte) (Message, error) {
	h, err := PeekHeader(msg)
	if err != nil {
		return nil, err
	}
	switch h.TemplateID {
	case TemplateControlResponse:
		return box(DecodeControlResponse(msg))
	case TemplateRecordingDescriptor:
		return box(DecodeRecordingDescriptor(msg))
	case TemplateRecordingSubscriptionDescriptor:
		return box(DecodeRecordingSubscriptionDescriptor(msg))
	case TemplateRecordingSignalEvent:
		return box(DecodeRecordingSignalEvent(msg))
	case TemplateChallenge:
		return box(DecodeChallenge(msg))
	case TemplatePing:
		return box(DecodePing(msg))
	case TemplateRecordingStarted:
		return box(DecodeRecordingStarted(msg))
	case TemplateRecordingProgress:
		return box(DecodeRecordingProgress(msg))
	case TemplateRecordingStopped:
		return box(DecodeRecordingStopped(msg))
	}
	return nil, &DecodeError{Template: h.TemplateID, Field: "templateId", Offset: headerTemplateIDOffset,
		MessageLength: len(msg), Reason: fmt.Sprintf("no decoder for template %d", uint16(h.TemplateID)),
		Err: ErrUnknownTemplate}
}

// box returns v as a Message, or a nil Message on error.
func box[T Message](v T, err error) (Message, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
