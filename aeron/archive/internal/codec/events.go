package codec

// Messages of the archive's recording-events stream
// (aeron.archive.recording.events.enabled, off by default). They carry no
// control session id: every subscriber sees every recording.

// RecordingStarted reports that a recording started.
type RecordingStarted struct {
	RecordingID   int64
	StartPosition int64
	SessionID     int32
	StreamID      int32
	Channel       string
	// SourceIdentity is the recorded image's source.
	SourceIdentity string
}

// TemplateID returns [TemplateRecordingStarted].
func (RecordingStarted) TemplateID() TemplateID { return TemplateRecordingStarted }

// DecodeRecordingStarted decodes a RecordingStarted message.
func DecodeRecordingStarted(msg []byte) (RecordingStarted, error) {
	r := openMessage(msg, TemplateRecordingStarted, startedBlockLength)
	v := RecordingStarted{
		RecordingID:   r.int64(eventRecordingIDOffset),
		StartPosition: r.int64(eventStartPositionOffset),
		SessionID:     r.int32(startedSessionIDOffset),
		StreamID:      r.int32(startedStreamIDOffset),
	}
	v.Channel = r.ascii("channel")
	v.SourceIdentity = r.ascii("sourceIdentity")
	if r.err != nil {
		return RecordingStarted{}, r.err
	}
	return v, nil
}

// RecordingProgress reports how far a recording has got.
type RecordingProgress struct {
	RecordingID   int64
	StartPosition int64
	Position      int64
}

// TemplateID returns [TemplateRecordingProgress].
func (RecordingProgress) TemplateID() TemplateID { return TemplateRecordingProgress }

// DecodeRecordingProgress decodes a RecordingProgress message.
func DecodeRecordingProgress(msg []byte) (RecordingProgress, error) {
	r := openMessage(msg, TemplateRecordingProgress, eventBlockLength)
	v := RecordingProgress{
		RecordingID:   r.int64(eventRecordingIDOffset),
		StartPosition: r.int64(eventStartPositionOffset),
		Position:      r.int64(eventPositionOffset),
	}
	if r.err != nil {
		return RecordingProgress{}, r.err
	}
	return v, nil
}

// RecordingStopped reports that a recording stopped at StopPosition.
type RecordingStopped struct {
	RecordingID   int64
	StartPosition int64
	StopPosition  int64
}

// TemplateID returns [TemplateRecordingStopped].
func (RecordingStopped) TemplateID() TemplateID { return TemplateRecordingStopped }

// DecodeRecordingStopped decodes a RecordingStopped message.
func DecodeRecordingStopped(msg []byte) (RecordingStopped, error) {
	r := openMessage(msg, TemplateRecordingStopped, eventBlockLength)
	v := RecordingStopped{
		RecordingID:   r.int64(eventRecordingIDOffset),
		StartPosition: r.int64(eventStartPositionOffset),
		StopPosition:  r.int64(eventPositionOffset),
	}
	if r.err != nil {
		return RecordingStopped{}, r.err
	}
	return v, nil
}
