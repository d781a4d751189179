package codec

// RecordingDescriptor describes one recording of the archive's catalog, in
// answer to a list request (it carries the list request's correlation id).
type RecordingDescriptor struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	// StartTimestamp and StopTimestamp are epoch milliseconds;
	// StopTimestamp is [NullTimestamp] while the recording is active.
	StartTimestamp int64
	StopTimestamp  int64
	// StartPosition is the image's join position: where the recording
	// starts, not necessarily 0.
	StartPosition int64
	// StopPosition is where the recording stopped, or [NullPosition] while
	// it is active.
	StopPosition      int64
	InitialTermID     int32
	SegmentFileLength int32
	TermBufferLength  int32
	MTULength         int32
	// SessionID and StreamID are the recorded image's.
	SessionID int32
	StreamID  int32
	// StrippedChannel is the recorded channel reduced to the parameters
	// that identify the stream.
	StrippedChannel string
	// OriginalChannel is the channel as the start recording request gave
	// it.
	OriginalChannel string
	// SourceIdentity is the recorded image's source (e.g. "aeron:ipc" or
	// the sender's address).
	SourceIdentity string
}

// TemplateID returns [TemplateRecordingDescriptor].
func (RecordingDescriptor) TemplateID() TemplateID { return TemplateRecordingDescriptor }

// DecodeRecordingDescriptor decodes a RecordingDescriptor message. The
// archive copies descriptors from its catalog, so the message may end in
// padding after SourceIdentity; it is ignored.
func DecodeRecordingDescriptor(msg []byte) (RecordingDescriptor, error) {
	r := openMessage(msg, TemplateRecordingDescriptor, descBlockLength)
	v := RecordingDescriptor{
		ControlSessionID:  r.int64(controlSessionIDOffset),
		CorrelationID:     r.int64(correlationIDOffset),
		RecordingID:       r.int64(descRecordingIDOffset),
		StartTimestamp:    r.int64(descStartTimestampOffset),
		StopTimestamp:     r.int64(descStopTimestampOffset),
		StartPosition:     r.int64(descStartPositionOffset),
		StopPosition:      r.int64(descStopPositionOffset),
		InitialTermID:     r.int32(descInitialTermIDOffset),
		SegmentFileLength: r.int32(descSegmentFileLengthOffset),
		TermBufferLength:  r.int32(descTermBufferLengthOffset),
		MTULength:         r.int32(descMTULengthOffset),
		SessionID:         r.int32(descSessionIDOffset),
		StreamID:          r.int32(descStreamIDOffset),
	}
	v.StrippedChannel = r.ascii("strippedChannel")
	v.OriginalChannel = r.ascii("originalChannel")
	v.SourceIdentity = r.ascii("sourceIdentity")
	if r.err != nil {
		return RecordingDescriptor{}, r.err
	}
	return v, nil
}

// RecordingSubscriptionDescriptor describes an active recording
// subscription, in answer to a ListRecordingSubscriptionsRequest. This
// package decodes it so that one arriving on a session's stream is not
// mistaken for an unknown message.
type RecordingSubscriptionDescriptor struct {
	ControlSessionID int64
	CorrelationID    int64
	SubscriptionID   int64
	StreamID         int32
	StrippedChannel  string
}

// TemplateID returns [TemplateRecordingSubscriptionDescriptor].
func (RecordingSubscriptionDescriptor) TemplateID() TemplateID {
	return TemplateRecordingSubscriptionDescriptor
}

// DecodeRecordingSubscriptionDescriptor decodes a
// RecordingSubscriptionDescriptor message.
func DecodeRecordingSubscriptionDescriptor(msg []byte) (RecordingSubscriptionDescriptor, error) {
	r := openMessage(msg, TemplateRecordingSubscriptionDescriptor, subDescBlockLength)
	v := RecordingSubscriptionDescriptor{
		ControlSessionID: r.int64(controlSessionIDOffset),
		CorrelationID:    r.int64(correlationIDOffset),
		SubscriptionID:   r.int64(subDescSubscriptionIDOffset),
		StreamID:         r.int32(subDescStreamIDOffset),
	}
	v.StrippedChannel = r.ascii("strippedChannel")
	if r.err != nil {
		return RecordingSubscriptionDescriptor{}, r.err
	}
	return v, nil
}
