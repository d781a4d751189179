package codec

// ListRecordingsRequest lists up to RecordCount recordings from
// FromRecordingID (inclusive) on. The archive answers with one
// [RecordingDescriptor] per recording (this CorrelationID) and, only if it
// sent fewer than RecordCount, a RECORDING_UNKNOWN [ControlResponse] whose
// RelevantID is where the scan stopped.
type ListRecordingsRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	FromRecordingID  int64
	RecordCount      int32
}

// TemplateID returns [TemplateListRecordingsRequest].
func (ListRecordingsRequest) TemplateID() TemplateID { return TemplateListRecordingsRequest }

// EncodedLength implements [Request].
func (ListRecordingsRequest) EncodedLength() int { return HeaderLength + listRecordingsBlockLength }

// AppendTo implements [Request]. It never fails.
func (r ListRecordingsRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), listRecordingsBlockLength, 0)
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int64(listFromRecordingIDOffset, r.FromRecordingID)
	w.int32(listRecordCountOffset, r.RecordCount)
	return out, nil
}

// ListRecordingsForURIRequest is [ListRecordingsRequest] counting only
// recordings of StreamID whose original channel contains Channel. The
// archive answers as for ListRecordingsRequest.
type ListRecordingsForURIRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	FromRecordingID  int64
	RecordCount      int32
	StreamID         int32
	// Channel is matched as a substring of each recording's original
	// channel; empty matches all. ASCII, at most [MaxChannelLength] bytes.
	Channel string
}

// TemplateID returns [TemplateListRecordingsForURIRequest].
func (ListRecordingsForURIRequest) TemplateID() TemplateID {
	return TemplateListRecordingsForURIRequest
}

// EncodedLength implements [Request].
func (r ListRecordingsForURIRequest) EncodedLength() int {
	return HeaderLength + listForURIBlockLength + varSize(len(r.Channel))
}

// AppendTo implements [Request].
func (r ListRecordingsForURIRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkChannel(t, "channel", r.Channel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, listForURIBlockLength, varSize(len(r.Channel)))
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int64(listFromRecordingIDOffset, r.FromRecordingID)
	w.int32(listRecordCountOffset, r.RecordCount)
	w.int32(listForURIStreamIDOffset, r.StreamID)
	w.ascii(r.Channel)
	return out, nil
}

// ListRecordingRequest asks for the descriptor of RecordingID. The archive
// answers with one [RecordingDescriptor], or RECORDING_UNKNOWN.
type ListRecordingRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateListRecordingRequest].
func (ListRecordingRequest) TemplateID() TemplateID { return TemplateListRecordingRequest }

// EncodedLength implements [Request].
func (ListRecordingRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r ListRecordingRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}

// RecordingPositionRequest asks for the live recorded position of
// RecordingID. The archive answers OK with RelevantID = the position, or
// [NullPosition] if it is not being recorded.
type RecordingPositionRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateRecordingPositionRequest].
func (RecordingPositionRequest) TemplateID() TemplateID { return TemplateRecordingPositionRequest }

// EncodedLength implements [Request].
func (RecordingPositionRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r RecordingPositionRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}

// StopPositionRequest asks for the catalog stop position of RecordingID.
// The archive answers OK with RelevantID = the position ([NullPosition]
// while it is recorded).
type StopPositionRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateStopPositionRequest].
func (StopPositionRequest) TemplateID() TemplateID { return TemplateStopPositionRequest }

// EncodedLength implements [Request].
func (StopPositionRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r StopPositionRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}

// StartPositionRequest asks for the start position of RecordingID. The
// archive answers OK with RelevantID = the position.
type StartPositionRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateStartPositionRequest].
func (StartPositionRequest) TemplateID() TemplateID { return TemplateStartPositionRequest }

// EncodedLength implements [Request].
func (StartPositionRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r StartPositionRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}

// MaxRecordedPositionRequest asks for the live position of RecordingID if
// it is being recorded, else its stop position. The archive answers OK
// with RelevantID = the position.
type MaxRecordedPositionRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateMaxRecordedPositionRequest].
func (MaxRecordedPositionRequest) TemplateID() TemplateID { return TemplateMaxRecordedPositionRequest }

// EncodedLength implements [Request].
func (MaxRecordedPositionRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r MaxRecordedPositionRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}

// TruncateRecordingRequest deletes the stopped recording RecordingID from
// Position (frame-aligned, within its start and stop positions) on. The
// archive answers OK with RelevantID = the number of segment files it
// deletes, then a [RecordingSignalEvent] DELETE.
type TruncateRecordingRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	Position         int64
}

// TemplateID returns [TemplateTruncateRecordingRequest].
func (TruncateRecordingRequest) TemplateID() TemplateID { return TemplateTruncateRecordingRequest }

// EncodedLength implements [Request].
func (TruncateRecordingRequest) EncodedLength() int { return HeaderLength + truncateBlockLength }

// AppendTo implements [Request]. It never fails.
func (r TruncateRecordingRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), truncateBlockLength, 0)
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int64(truncateRecordingIDOffset, r.RecordingID)
	w.int64(truncatePositionOffset, r.Position)
	return out, nil
}

// PurgeSegmentsRequest deletes the segment files of recording RecordingID
// below NewStartPosition, which becomes its start position (retention). It
// must be a segment boundary at or after the start, below the segment being
// written. The archive answers OK with RelevantID = the number of segment
// files it deletes.
type PurgeSegmentsRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	NewStartPosition int64
}

// TemplateID returns [TemplatePurgeSegmentsRequest].
func (PurgeSegmentsRequest) TemplateID() TemplateID { return TemplatePurgeSegmentsRequest }

// EncodedLength implements [Request].
func (PurgeSegmentsRequest) EncodedLength() int { return HeaderLength + truncateBlockLength }

// AppendTo implements [Request]. It never fails.
func (r PurgeSegmentsRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), truncateBlockLength, 0)
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int64(truncateRecordingIDOffset, r.RecordingID)
	w.int64(truncatePositionOffset, r.NewStartPosition)
	return out, nil
}

// DetachSegmentsRequest detaches the segments of recording RecordingID
// below NewStartPosition, which becomes its start position; the segment
// files stay on disk (see [AttachSegmentsRequest]). It must be a segment
// boundary at or after the start, below the segment being written. The
// archive answers OK.
type DetachSegmentsRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
	NewStartPosition int64
}

// TemplateID returns [TemplateDetachSegmentsRequest].
func (DetachSegmentsRequest) TemplateID() TemplateID { return TemplateDetachSegmentsRequest }

// EncodedLength implements [Request].
func (DetachSegmentsRequest) EncodedLength() int { return HeaderLength + truncateBlockLength }

// AppendTo implements [Request]. It never fails.
func (r DetachSegmentsRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), truncateBlockLength, 0)
	w.session(r.ControlSessionID, r.CorrelationID)
	w.int64(truncateRecordingIDOffset, r.RecordingID)
	w.int64(truncatePositionOffset, r.NewStartPosition)
	return out, nil
}

// AttachSegmentsRequest attaches the segment files found on disk just
// below the start of recording RecordingID (detached by a
// [DetachSegmentsRequest]) back to it, moving its start position down. The
// archive answers OK with RelevantID = the number of segments attached.
type AttachSegmentsRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplateAttachSegmentsRequest].
func (AttachSegmentsRequest) TemplateID() TemplateID { return TemplateAttachSegmentsRequest }

// EncodedLength implements [Request].
func (AttachSegmentsRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r AttachSegmentsRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}

// PurgeRecordingRequest deletes the stopped recording RecordingID and
// removes it from the catalog. The archive answers as for
// [TruncateRecordingRequest].
type PurgeRecordingRequest struct {
	ControlSessionID int64
	CorrelationID    int64
	RecordingID      int64
}

// TemplateID returns [TemplatePurgeRecordingRequest].
func (PurgeRecordingRequest) TemplateID() TemplateID { return TemplatePurgeRecordingRequest }

// EncodedLength implements [Request].
func (PurgeRecordingRequest) EncodedLength() int { return idRequestLength }

// AppendTo implements [Request]. It never fails.
func (r PurgeRecordingRequest) AppendTo(dst []byte) ([]byte, error) {
	return appendIDRequest(dst, r.TemplateID(), r.ControlSessionID, r.CorrelationID, r.RecordingID), nil
}
