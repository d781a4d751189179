package codec

// ReplayRequest replays Length bytes of RecordingID from Position to
// ReplayChannel/ReplayStreamID. The archive answers OK with RelevantID =
// the replay session id (its low 32 bits are the replay image's session
// id), or ERROR; an ERROR with the same CorrelationID may follow an OK if
// the replay fails later.
type ReplayRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	// Position is where to start: a multiple of 32 within the recording,
	// or [NullPosition] for its start.
	Position int64
	// Length is how many bytes to replay, or [NullLength] for all of them
	// (following the recording while it is live).
	Length         int64
	ReplayStreamID int32
	// FileIOMaxLength bounds the archive's file reads for this replay;
	// [NullValue] (or any value ≤ 0) for the archive's default.
	FileIOMaxLength int32
	// ReplayToken is the token from a ReplayTokenRequest, used only with a
	// control-mode=response ReplayChannel; otherwise it must be
	// [NullValue].
	ReplayToken int64
	// ReplayChannel is the channel to replay to: ASCII, at most
	// [MaxChannelLength] bytes.
	ReplayChannel string
}

// TemplateID returns [TemplateReplayRequest].
func (ReplayRequest) TemplateID() TemplateID { return TemplateReplayRequest }

// EncodedLength implements [Request].
func (r ReplayRequest) EncodedLength() int {
	return HeaderLength + replayBlockLength + varSize(len(r.ReplayChannel))
}

// AppendTo implements [Request].
func (r ReplayRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkChannel(t, "replayChannel", r.ReplayChannel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, replayBlockLength, varSize(len(r.ReplayChannel)))
	w.replayRange(r.ControlSessionID, r.CorrelationID, r.RecordingID, r.Position, r.Length)
	w.int32(replayStreamIDOffset, r.ReplayStreamID)
	w.int32(replayFileIOMaxLengthOffset, r.FileIOMaxLength)
	w.int64(replayTokenOffset, r.ReplayToken)
	w.ascii(r.ReplayChannel)
	return out, nil
}

// BoundedReplayRequest is [ReplayRequest] that never replays past the
// value of the counter LimitCounterID (any counter of the media driver,
// e.g. one the client allocated, or a recording's rec-pos counter). The
// archive answers as for ReplayRequest.
type BoundedReplayRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	// Position is where to start: a multiple of 32 within the recording,
	// or [NullPosition] for its start.
	Position int64
	// Length is how many bytes to replay, or [NullLength] for all of them.
	Length         int64
	LimitCounterID int32
	ReplayStreamID int32
	// FileIOMaxLength bounds the archive's file reads for this replay;
	// [NullValue] (or any value ≤ 0) for the archive's default.
	FileIOMaxLength int32
	// ReplayToken is the token from a ReplayTokenRequest, used only with a
	// control-mode=response ReplayChannel; otherwise it must be
	// [NullValue].
	ReplayToken int64
	// ReplayChannel is the channel to replay to: ASCII, at most
	// [MaxChannelLength] bytes.
	ReplayChannel string
}

// TemplateID returns [TemplateBoundedReplayRequest].
func (BoundedReplayRequest) TemplateID() TemplateID { return TemplateBoundedReplayRequest }

// EncodedLength implements [Request].
func (r BoundedReplayRequest) EncodedLength() int {
	return HeaderLength + boundedReplayBlockLength + varSize(len(r.ReplayChannel))
}

// AppendTo implements [Request].
func (r BoundedReplayRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkChannel(t, "replayChannel", r.ReplayChannel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, boundedReplayBlockLength, varSize(len(r.ReplayChannel)))
	w.replayRange(r.ControlSessionID, r.CorrelationID, r.RecordingID, r.Position, r.Length)
	w.int32(boundedLimitCounterIDOffset, r.LimitCounterID)
	w.int32(boundedReplayStreamIDOffset, r.ReplayStreamID)
	w.int32(boundedFileIOMaxLengthOffset, r.FileIOMaxLength)
	w.int64(boundedReplayTokenOffset, r.ReplayToken)
	w.ascii(r.ReplayChannel)
	return out, nil
}

// replayRange writes the session prefix and the replay range.
func (w writer) replayRange(controlSessionID, correlationID, recordingID, position, length int64) {
	w.session(controlSessionID, correlationID)
	w.int64(replayRecordingIDOffset, recordingID)
	w.int64(replayPositionOffset, position)
	w.int64(replayLengthOffset, length)
}

// StopReplayRequest stops the replay ReplaySessionID (from a replay
// request's OK). The archive answers OK, even for an unknown replay.
type StopReplayRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	ReplaySessionID  int64
}

// TemplateID returns [TemplateStopReplayRequest].
func (StopReplayRequest) TemplateID() TemplateID { return TemplateStopReplayRequest }

// EncodedLength implements [Request].
func (StopReplayRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r StopReplayRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.ReplaySessionID), nil
}

// StopAllReplaysRequest stops every replay of RecordingID, or every replay
// if RecordingID is [NullValue]. The archive answers OK.
type StopAllReplaysRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateStopAllReplaysRequest].
func (StopAllReplaysRequest) TemplateID() TemplateID { return TemplateStopAllReplaysRequest }

// EncodedLength implements [Request].
func (StopAllReplaysRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r StopAllReplaysRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}
