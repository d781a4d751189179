package codec

// Decoders of the control-session messages an archive sends. Each takes a
// []byte holding exactly one whole message, header included (trailing
// bytes are ignored), and returns the zero value and a [*DecodeError] on
// failure. A valid message of zeros also decodes to a zero-valued
// struct, so callers test the error, not the value. Decoded strings and
// byte slices are copies: msg may be reused once the decoder returns.

// ControlResponse is the archive's answer to a request, its connect
// response, or (Aeron 1.47) its liveness ping.
type ControlResponse struct {
	ControlSessionID int64
	// CorrelationID is the request's correlation id; [NullValue] for a
	// ping.
	CorrelationID int64
	// RelevantID is the result: an id, a position or a count (see each
	// request) when Code is OK; an [ErrorCode] when Code is ERROR; the
	// recording or subscription id for the UNKNOWN codes.
	RelevantID int64
	Code       ControlResponseCode
	// Version is the archive's protocol version; zero if the message
	// predates schema version 4.
	Version SemanticVersion
	// ErrorMessage says what went wrong when Code is ERROR; empty
	// otherwise.
	ErrorMessage string
}

// TemplateID returns [TemplateControlResponse].
func (ControlResponse) TemplateID() TemplateID { return TemplateControlResponse }

// IsPing reports whether r is an Aeron 1.47 archive's liveness ping: OK
// with CorrelationID and RelevantID both [NullValue], sent every second
// once the session is active. It answers nothing; the client only has to
// keep draining its response stream. (Schema version 11 archives send a
// [Ping] instead.)
func (r ControlResponse) IsPing() bool {
	return r.Code == ResponseCodeOK && r.CorrelationID == NullValue && r.RelevantID == NullValue
}

// ErrorCode returns RelevantID as an [ErrorCode]. It is meaningful only
// when Code is [ResponseCodeError].
func (r ControlResponse) ErrorCode() ErrorCode { return ErrorCode(r.RelevantID) }

// DecodeControlResponse decodes a ControlResponse message.
func DecodeControlResponse(msg []byte) (ControlResponse, error) {
	r := openMessage(msg, TemplateControlResponse, responseVersionOffset)
	v := ControlResponse{
		ControlSessionID: r.int64(controlSessionIDOffset),
		CorrelationID:    r.int64(correlationIDOffset),
		RelevantID:       r.int64(responseRelevantIDOffset),
		Code:             ControlResponseCode(r.int32(responseCodeOffset)),
		Version: SemanticVersion(r.int32Since("version", responseVersionOffset,
			responseVersionSinceVersion, 0)),
	}
	v.ErrorMessage = r.ascii("errorMessage")
	if r.err != nil {
		return ControlResponse{}, r.err
	}
	return v, nil
}

// Challenge asks the client to authenticate: answer with a
// [ChallengeResponse] carrying credentials for EncodedChallenge.
type Challenge struct {
	ControlSessionID int64
	// CorrelationID is the connect request's correlation id.
	CorrelationID int64
	// Version is the archive's protocol version.
	Version SemanticVersion
	// EncodedChallenge is the authenticator's challenge; nil if empty.
	EncodedChallenge []byte
}

// TemplateID returns [TemplateChallenge].
func (Challenge) TemplateID() TemplateID { return TemplateChallenge }

// DecodeChallenge decodes a Challenge message.
func DecodeChallenge(msg []byte) (Challenge, error) {
	r := openMessage(msg, TemplateChallenge, challengeBlockLength)
	v := Challenge{
		ControlSessionID: r.int64(controlSessionIDOffset),
		CorrelationID:    r.int64(correlationIDOffset),
		Version:          SemanticVersion(r.int32(challengeVersionOffset)),
	}
	v.EncodedChallenge = r.data("encodedChallenge")
	if r.err != nil {
		return Challenge{}, r.err
	}
	return v, nil
}

// Ping is the liveness ping of archives of schema version 11 (Aeron 1.48)
// and later; an Aeron 1.47 archive pings with a [ControlResponse] (see
// [ControlResponse.IsPing]). It answers nothing.
type Ping struct {
	ControlSessionID int64
}

// TemplateID returns [TemplatePing].
func (Ping) TemplateID() TemplateID { return TemplatePing }

// DecodePing decodes a Ping message.
func DecodePing(msg []byte) (Ping, error) {
	r := openMessage(msg, TemplatePing, pingBlockLength)
	v := Ping{ControlSessionID: r.int64(pingControlSessionIDOffset)}
	if r.err != nil {
		return Ping{}, r.err
	}
	return v, nil
}

// RecordingSignalEvent reports what happened to a recording that this
// session started, extended, truncated or purged. Events arrive
// interleaved with the responses on the control response stream.
type RecordingSignalEvent struct {
	ControlSessionID int64
	// CorrelationID is the correlation id of the request that caused it
	// (e.g. the start recording request).
	CorrelationID int64
	RecordingID   int64
	// SubscriptionID is the recording subscription's id.
	SubscriptionID int64
	// Position is the recording's position at the event: the image's join
	// position for START, the stop position for STOP.
	Position int64
	Signal   RecordingSignal
}

// TemplateID returns [TemplateRecordingSignalEvent].
func (RecordingSignalEvent) TemplateID() TemplateID { return TemplateRecordingSignalEvent }

// DecodeRecordingSignalEvent decodes a RecordingSignalEvent message.
func DecodeRecordingSignalEvent(msg []byte) (RecordingSignalEvent, error) {
	r := openMessage(msg, TemplateRecordingSignalEvent, signalBlockLength)
	v := RecordingSignalEvent{
		ControlSessionID: r.int64(controlSessionIDOffset),
		CorrelationID:    r.int64(correlationIDOffset),
		RecordingID:      r.int64(signalRecordingIDOffset),
		SubscriptionID:   r.int64(signalSubscriptionIDOffset),
		Position:         r.int64(signalPositionOffset),
		Signal:           RecordingSignal(r.int32(signalSignalOffset)),
	}
	if r.err != nil {
		return RecordingSignalEvent{}, r.err
	}
	return v, nil
}
