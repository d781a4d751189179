package codec

// StartRecordingRequest asks the archive to record every image of Channel
// and StreamID. The archive answers OK with RelevantID = the recording
// subscription's id, then sends a [RecordingSignalEvent] START (with this
// CorrelationID) per recorded image and STOP when each recording ends.
type StartRecordingRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	StreamID         int32
	SourceLocation   SourceLocation
	// Channel is the channel to record: ASCII, at most [MaxChannelLength]
	// bytes.
	Channel string
}

// TemplateID returns [TemplateStartRecordingRequest].
func (StartRecordingRequest) TemplateID() TemplateID { return TemplateStartRecordingRequest }

// EncodedLength implements [Request].
func (r StartRecordingRequest) EncodedLength() int {
	return HeaderLength + startRecordingBlockLength + varSize(len(r.Channel))
}

// AppendTo implements [Request].
func (r StartRecordingRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkSourceLocation(t, r.SourceLocation); err != nil {
		return dst, err
	}
	if err := checkChannel(t, "channel", r.Channel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, startRecordingBlockLength, varSize(len(r.Channel)))
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int32(startRecordingStreamIDOffset, r.StreamID)
	w.int32(startRecordingSourceLocationOffset, int32(r.SourceLocation))
	w.ascii(r.Channel)
	return out, nil
}

// StartRecordingRequest2 is [StartRecordingRequest] with AutoStop: when
// true, the archive stops the recording subscription once the recorded
// image ends. The archive answers as for StartRecordingRequest.
type StartRecordingRequest2 struct {
	ControlSessionID int64
	CorrelationID    int64
	StreamID         int32
	SourceLocation   SourceLocation
	AutoStop         bool
	// Channel is the channel to record: ASCII, at most [MaxChannelLength]
	// bytes.
	Channel string
}

// TemplateID returns [TemplateStartRecordingRequest2].
func (StartRecordingRequest2) TemplateID() TemplateID { return TemplateStartRecordingRequest2 }

// EncodedLength implements [Request].
func (r StartRecordingRequest2) EncodedLength() int {
	return HeaderLength + startRecording2BlockLength + varSize(len(r.Channel))
}

// AppendTo implements [Request].
func (r StartRecordingRequest2) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkSourceLocation(t, r.SourceLocation); err != nil {
		return dst, err
	}
	if err := checkChannel(t, "channel", r.Channel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, startRecording2BlockLength, varSize(len(r.Channel)))
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int32(startRecordingStreamIDOffset, r.StreamID)
	w.int32(startRecordingSourceLocationOffset, int32(r.SourceLocation))
	w.int32(startRecording2AutoStopOffset, encodeBoolean(r.AutoStop))
	w.ascii(r.Channel)
	return out, nil
}

// ExtendRecordingRequest2 asks the archive to record every image of Channel
// and StreamID as a continuation of the stopped recording RecordingID: an
// image must join at the recording's stop position, with its initial term
// id, term length and MTU (a publication created with those as its initial
// position). The archive answers OK with RelevantID = the recording
// subscription's id, then sends a [RecordingSignalEvent] EXTEND (with this
// CorrelationID) when an image extends the recording; with AutoStop, the
// recording subscription stops when that image ends.
type ExtendRecordingRequest2 struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	StreamID         int32
	SourceLocation   SourceLocation
	AutoStop         bool
	// Channel is the channel to record: ASCII, at most [MaxChannelLength]
	// bytes.
	Channel string
}

// TemplateID returns [TemplateExtendRecordingRequest2].
func (ExtendRecordingRequest2) TemplateID() TemplateID { return TemplateExtendRecordingRequest2 }

// EncodedLength implements [Request].
func (r ExtendRecordingRequest2) EncodedLength() int {
	return HeaderLength + extendRecording2BlockLength + varSize(len(r.Channel))
}

// AppendTo implements [Request].
func (r ExtendRecordingRequest2) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkSourceLocation(t, r.SourceLocation); err != nil {
		return dst, err
	}
	if err := checkChannel(t, "channel", r.Channel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, extendRecording2BlockLength, varSize(len(r.Channel)))
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int64(extendRecordingIDOffset, r.RecordingID)
	w.int32(extendRecordingStreamIDOffset, r.StreamID)
	w.int32(extendRecordingSourceLocationOffset, int32(r.SourceLocation))
	w.int32(extendRecordingAutoStopOffset, encodeBoolean(r.AutoStop))
	w.ascii(r.Channel)
	return out, nil
}

// StopRecordingRequest stops the recording started with the same Channel
// and StreamID (the archive matches its recording key, not the string).
// The archive answers OK, or ERROR UNKNOWN_SUBSCRIPTION.
type StopRecordingRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	StreamID         int32
	// Channel is the recorded channel: ASCII, at most [MaxChannelLength]
	// bytes.
	Channel string
}

// TemplateID returns [TemplateStopRecordingRequest].
func (StopRecordingRequest) TemplateID() TemplateID { return TemplateStopRecordingRequest }

// EncodedLength implements [Request].
func (r StopRecordingRequest) EncodedLength() int {
	return HeaderLength + stopRecordingBlockLength + varSize(len(r.Channel))
}

// AppendTo implements [Request].
func (r StopRecordingRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkChannel(t, "channel", r.Channel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, stopRecordingBlockLength, varSize(len(r.Channel)))
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int32(stopRecordingStreamIDOffset, r.StreamID)
	w.ascii(r.Channel)
	return out, nil
}

// StopRecordingSubscriptionRequest stops the recording subscription whose
// id a start request's OK carried. The archive answers OK, or ERROR
// UNKNOWN_SUBSCRIPTION.
type StopRecordingSubscriptionRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	SubscriptionID   int64
}

// TemplateID returns [TemplateStopRecordingSubscriptionRequest].
func (StopRecordingSubscriptionRequest) TemplateID() TemplateID {
	return TemplateStopRecordingSubscriptionRequest
}

// EncodedLength implements [Request].
func (StopRecordingSubscriptionRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r StopRecordingSubscriptionRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.SubscriptionID), nil
}

// StopRecordingByIdentityRequest stops the active recording RecordingID.
// The archive answers OK with RelevantID 1 if it stopped one, 0 if the
// recording was not active, or ERROR UNKNOWN_RECORDING.
type StopRecordingByIdentityRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateStopRecordingByIdentityRequest].
func (StopRecordingByIdentityRequest) TemplateID() TemplateID {
	return TemplateStopRecordingByIdentityRequest
}

// EncodedLength implements [Request].
func (StopRecordingByIdentityRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r StopRecordingByIdentityRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}
