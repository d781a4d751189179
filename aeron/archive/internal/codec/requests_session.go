package codec

// ConnectRequest opens a control session without credentials. The archive
// answers on ResponseChannel/ResponseStreamID with a [ControlResponse]
// carrying CorrelationID (OK: its ControlSessionID is the new session's),
// or a [Challenge]. The Java client sends [AuthConnectRequest] instead;
// both are accepted.
type ConnectRequest struct {
	CorrelationID    int64
	ResponseStreamID int32
	// Version is the client's protocol version: [ProtocolSemanticVersion].
	// The archive rejects a major version other than its own.
	Version SemanticVersion
	// ResponseChannel is where the archive publishes its answers: ASCII,
	// at most [MaxChannelLength] bytes.
	ResponseChannel string
}

// TemplateID returns [TemplateConnectRequest].
func (ConnectRequest) TemplateID() TemplateID { return TemplateConnectRequest }

// EncodedLength implements [Request].
func (r ConnectRequest) EncodedLength() int {
	return HeaderLength + connectBlockLength + varSize(len(r.ResponseChannel))
}

// AppendTo implements [Request].
func (r ConnectRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkVersion(t, r.Version); err != nil {
		return dst, err
	}
	if err := checkChannel(t, "responseChannel", r.ResponseChannel); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, connectBlockLength, varSize(len(r.ResponseChannel)))
	w.int64(connectCorrelationIDOffset, r.CorrelationID)
	w.int32(connectResponseStreamIDOffset, r.ResponseStreamID)
	w.int32(connectVersionOffset, int32(r.Version))
	w.ascii(r.ResponseChannel)
	return out, nil
}

// AuthConnectRequest opens a control session, presenting Credentials to
// the archive's authenticator (empty for the default one, which accepts
// everyone). The archive answers as for [ConnectRequest].
type AuthConnectRequest struct {
	CorrelationID    int64
	ResponseStreamID int32
	// Version is the client's protocol version: [ProtocolSemanticVersion].
	Version SemanticVersion
	// ResponseChannel is where the archive publishes its answers: ASCII,
	// at most [MaxChannelLength] bytes.
	ResponseChannel string
	// Credentials are the encoded credentials, at most [MaxVarDataLength]
	// bytes; nil for none.
	Credentials []byte
}

// TemplateID returns [TemplateAuthConnectRequest].
func (AuthConnectRequest) TemplateID() TemplateID { return TemplateAuthConnectRequest }

// EncodedLength implements [Request].
func (r AuthConnectRequest) EncodedLength() int {
	return HeaderLength + connectBlockLength + varSize(len(r.ResponseChannel)) + varSize(len(r.Credentials))
}

// AppendTo implements [Request].
func (r AuthConnectRequest) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkVersion(t, r.Version); err != nil {
		return dst, err
	}
	if err := checkChannel(t, "responseChannel", r.ResponseChannel); err != nil {
		return dst, err
	}
	if err := checkData(t, "encodedCredentials", r.Credentials); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, connectBlockLength,
		varSize(len(r.ResponseChannel))+varSize(len(r.Credentials)))
	w.int64(connectCorrelationIDOffset, r.CorrelationID)
	w.int32(connectResponseStreamIDOffset, r.ResponseStreamID)
	w.int32(connectVersionOffset, int32(r.Version))
	w.ascii(r.ResponseChannel)
	w.data(r.Credentials)
	return out, nil
}

// ChallengeResponse answers a [Challenge] with credentials. The archive
// then answers as for [AuthConnectRequest], or challenges again.
type ChallengeResponse struct {
	ControlSessionID int64
	CorrelationID    int64
	// Credentials are the encoded credentials, at most [MaxVarDataLength]
	// bytes.
	Credentials []byte
}

// TemplateID returns [TemplateChallengeResponse].
func (ChallengeResponse) TemplateID() TemplateID { return TemplateChallengeResponse }

// EncodedLength implements [Request].
func (r ChallengeResponse) EncodedLength() int {
	return HeaderLength + sessionPrefixLength + varSize(len(r.Credentials))
}

// AppendTo implements [Request].
func (r ChallengeResponse) AppendTo(dst []byte) ([]byte, error) {
	t := r.TemplateID()
	if err := checkData(t, "encodedCredentials", r.Credentials); err != nil {
		return dst, err
	}
	out, w := appendMessage(dst, t, sessionPrefixLength, varSize(len(r.Credentials)))
	w.session(r.ControlSessionID, r.CorrelationID)
	w.data(r.Credentials)
	return out, nil
}

// CloseSessionRequest closes the control session. The archive does not
// answer.
type CloseSessionRequest struct {
	ControlSessionID int64
}

// TemplateID returns [TemplateCloseSessionRequest].
func (CloseSessionRequest) TemplateID() TemplateID { return TemplateCloseSessionRequest }

// EncodedLength implements [Request].
func (CloseSessionRequest) EncodedLength() int { return HeaderLength + closeSessionBlockLength }

// AppendTo implements [Request]. It never fails.
func (r CloseSessionRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), closeSessionBlockLength, 0)
	w.int64(closeSessionControlSessionIDOffset, r.ControlSessionID)
	return out, nil
}

// KeepAliveRequest tells the archive the client is alive; the first
// request after the connect response also activates the session (the Java
// client sends this one with CorrelationID [NullValue]). The archive does
// not answer.
type KeepAliveRequest struct {
	ControlSessionID int64
	CorrelationID    int64
}

// TemplateID returns [TemplateKeepAliveRequest].
func (KeepAliveRequest) TemplateID() TemplateID { return TemplateKeepAliveRequest }

// EncodedLength implements [Request].
func (KeepAliveRequest) EncodedLength() int { return HeaderLength + sessionPrefixLength }

// AppendTo implements [Request]. It never fails.
func (r KeepAliveRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), sessionPrefixLength, 0)
	w.session(r.ControlSessionID, r.CorrelationID)
	return out, nil
}

// ArchiveIDRequest asks for the archive's id (archives of protocol 1.11.0
// and later). The archive answers OK with RelevantID = the archive id.
type ArchiveIDRequest struct {
	ControlSessionID int64
	CorrelationID    int64
}

// TemplateID returns [TemplateArchiveIDRequest].
func (ArchiveIDRequest) TemplateID() TemplateID { return TemplateArchiveIDRequest }

// EncodedLength implements [Request].
func (ArchiveIDRequest) EncodedLength() int { return HeaderLength + sessionPrefixLength }

// AppendTo implements [Request]. It never fails.
func (r ArchiveIDRequest) AppendTo(dst []byte) ([]byte, error) {
	out, w := appendMessage(dst, r.TemplateID(), sessionPrefixLength, 0)
	w.session(r.ControlSessionID, r.CorrelationID)
	return out, nil
}
