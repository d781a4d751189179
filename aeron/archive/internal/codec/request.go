package codec

// Message is an archive message: a [Request] a client sends, or what
// [Decode] returns for a message the archive sends (a [ControlResponse],
// [RecordingDescriptor], [RecordingSubscriptionDescriptor],
// [RecordingSignalEvent], [Challenge], [Ping], [RecordingStarted],
// [RecordingProgress] or [RecordingStopped] value).
type Message interface {
	// TemplateID is the template id of the message.
	TemplateID() TemplateID
}

// Request is a client → archive request. Each request type is a plain
// struct whose fields are the schema's fields; every request but
// [ConnectRequest], [AuthConnectRequest] and [CloseSessionRequest] carries
// the control session id from the connect response and a correlation id
// that the caller makes unique, which the archive's answers repeat.
type Request interface {
	Message
	// EncodedLength is the length of the message AppendTo appends: header,
	// block and var fields.
	EncodedLength() int
	// AppendTo validates the request and appends it, header included, at
	// [SchemaVersion] with that version's full block. On error it returns
	// dst unchanged and an [*EncodeError].
	AppendTo(dst []byte) ([]byte, error)
}

// session writes the session prefix.
func (w writer) session(controlSessionID, correlationID int64) {
	w.int64(controlSessionIDOffset, controlSessionID)
	w.int64(correlationIDOffset, correlationID)
}

// idRequestLength is the encoded length of every ID request.
const idRequestLength = HeaderLength + idRequestBlockLength

// appendIDRequest appends an ID request (layout.go) of template t.
func appendIDRequest(dst []byte, t TemplateID, controlSessionID, correlationID, id int64) []byte {
	out, w := appendMessage(dst, t, idRequestBlockLength, 0)
	w.session(controlSessionID, correlationID)
	w.int64(idRequestIDOffset, id)
	return out
}
