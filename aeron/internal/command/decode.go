package command

import (
	"encoding/binary"
	"fmt"
	"net/netip"
)

// Every decoder below reads a response payload copied out of the
// broadcast buffer. It first checks that the fixed-length fields are
// present, then reads them at their named offsets, then reads each string
// only after checking its length against the bytes that remain. Bytes
// after the last field are ignored (a newer driver may append fields). On
// error a decoder returns the zero value and a [*DecodeError]; note that a
// valid payload of zeros also decodes to the zero value, so callers must
// test the error, not the value.

// ErrorResponse is the payload of ON_ERROR: the driver rejected the
// command whose correlation id is OffendingCorrelationID.
type ErrorResponse struct {
	// OffendingCorrelationID is the failed command's correlation id, or a
	// channel-status counter id when Code is
	// ErrorCodeChannelEndpointError (§4.5).
	OffendingCorrelationID int64
	// Code is the driver's error code.
	Code ErrorCode
	// Message is the driver's error text.
	Message string
}

// Err returns the response as a [*DriverError].
func (r ErrorResponse) Err() *DriverError {
	return &DriverError{Code: r.Code, Message: r.Message, CorrelationID: r.OffendingCorrelationID}
}

// DecodeErrorResponse decodes an ON_ERROR payload.
func DecodeErrorResponse(payload []byte) (ErrorResponse, error) {
	d := decoder{b: payload, flyweight: "ErrorResponse"}
	d.fixed(errorMessageLengthOffset + stringLengthSize)
	r := ErrorResponse{
		OffendingCorrelationID: d.int64(errorOffendingCorrelationIDOffset),
		Code:                   ErrorCode(d.int32(errorCodeOffset)),
	}
	r.Message, _ = d.string("error message", errorMessageLengthOffset)
	if d.err != nil {
		return ErrorResponse{}, d.err
	}
	return r, nil
}

// PublicationBuffersReady is the payload of ON_PUBLICATION_READY and
// ON_EXCLUSIVE_PUBLICATION_READY: the driver created (or, for a shared
// publication, found) the publication.
type PublicationBuffersReady struct {
	// CorrelationID is the ADD_PUBLICATION / ADD_EXCLUSIVE_PUBLICATION
	// command's correlation id.
	CorrelationID int64
	// RegistrationID identifies the publication in REMOVE_PUBLICATION. For
	// a shared publication that already existed it is the original
	// registration id, not CorrelationID.
	RegistrationID int64
	// SessionID is the publication's session id.
	SessionID int32
	// StreamID is the publication's stream id.
	StreamID int32
	// PublicationLimitCounterID is the id of the pub-lmt counter that
	// bounds offers (§6.4).
	PublicationLimitCounterID int32
	// ChannelStatusCounterID is the id of the channel-status counter, or
	// NullCounterID if none was allocated.
	ChannelStatusCounterID int32
	// LogFileName is the path of the publication's log buffer file.
	LogFileName string
}

// DecodePublicationBuffersReady decodes an ON_PUBLICATION_READY or
// ON_EXCLUSIVE_PUBLICATION_READY payload.
func DecodePublicationBuffersReady(payload []byte) (PublicationBuffersReady, error) {
	d := decoder{b: payload, flyweight: "PublicationBuffersReady"}
	d.fixed(pubReadyLogFileNameLengthOffset + stringLengthSize)
	r := PublicationBuffersReady{
		CorrelationID:             d.int64(pubReadyCorrelationIDOffset),
		RegistrationID:            d.int64(pubReadyRegistrationIDOffset),
		SessionID:                 d.int32(pubReadySessionIDOffset),
		StreamID:                  d.int32(pubReadyStreamIDOffset),
		PublicationLimitCounterID: d.int32(pubReadyPublicationLimitCounterIDOffset),
		ChannelStatusCounterID:    d.int32(pubReadyChannelStatusCounterIDOffset),
	}
	r.LogFileName, _ = d.string("log file name", pubReadyLogFileNameLengthOffset)
	if d.err != nil {
		return PublicationBuffersReady{}, d.err
	}
	return r, nil
}

// SubscriptionReady is the payload of ON_SUBSCRIPTION_READY.
type SubscriptionReady struct {
	// CorrelationID is the ADD_SUBSCRIPTION command's correlation id (and
	// the subscription's registration id).
	CorrelationID int64
	// ChannelStatusCounterID is the id of the channel-status counter, or
	// NullCounterID if none was allocated (e.g. IPC). NullCounterID means
	// the channel is active, not that it failed.
	ChannelStatusCounterID int32
}

// DecodeSubscriptionReady decodes an ON_SUBSCRIPTION_READY payload.
func DecodeSubscriptionReady(payload []byte) (SubscriptionReady, error) {
	d := decoder{b: payload, flyweight: "SubscriptionReady"}
	d.fixed(subReadyLength)
	r := SubscriptionReady{
		CorrelationID:          d.int64(subReadyCorrelationIDOffset),
		ChannelStatusCounterID: d.int32(subReadyChannelStatusCounterIDOffset),
	}
	if d.err != nil {
		return SubscriptionReady{}, d.err
	}
	return r, nil
}

// ImageBuffersReady is the payload of ON_AVAILABLE_IMAGE: a new image of a
// subscription is available. Every client receives it; ignore it unless
// SubscriptionRegistrationID is one of yours.
type ImageBuffersReady struct {
	// CorrelationID identifies the image (for IPC, the publication's
	// registration id).
	CorrelationID int64
	// SessionID is the publisher's session id (for an archive replay, the
	// low 32 bits of the replay session id).
	SessionID int32
	// StreamID is the image's stream id.
	StreamID int32
	// SubscriptionRegistrationID is the registration id of the
	// subscription that gets the image.
	SubscriptionRegistrationID int64
	// SubscriberPositionCounterID is the id of the counter that holds this
	// subscriber's position in the image.
	SubscriberPositionCounterID int32
	// LogFileName is the path of the image's log buffer file.
	LogFileName string
	// SourceIdentity is "aeron:ipc" for IPC or the sender's "ip:port".
	SourceIdentity string
}

// DecodeImageBuffersReady decodes an ON_AVAILABLE_IMAGE payload, including
// the source identity that follows the log file name padded to 4 bytes.
func DecodeImageBuffersReady(payload []byte) (ImageBuffersReady, error) {
	d := decoder{b: payload, flyweight: "ImageBuffersReady"}
	d.fixed(imageReadyLogFileNameLengthOffset + stringLengthSize)
	r := ImageBuffersReady{
		CorrelationID:               d.int64(imageReadyCorrelationIDOffset),
		SessionID:                   d.int32(imageReadySessionIDOffset),
		StreamID:                    d.int32(imageReadyStreamIDOffset),
		SubscriptionRegistrationID:  d.int64(imageReadySubscriptionRegIDOffset),
		SubscriberPositionCounterID: d.int32(imageReadySubscriberPositionIDOffset),
	}
	var nameLength int
	r.LogFileName, nameLength = d.string("log file name", imageReadyLogFileNameLengthOffset)
	if d.err == nil {
		r.SourceIdentity, _ = d.string("source identity", imageReadySourceIdentityLengthOffset(nameLength))
	}
	if d.err != nil {
		return ImageBuffersReady{}, d.err
	}
	return r, nil
}

// OperationSucceeded is the payload of ON_OPERATION_SUCCESS.
type OperationSucceeded struct {
	// CorrelationID is the successful command's correlation id.
	CorrelationID int64
}

// DecodeOperationSucceeded decodes an ON_OPERATION_SUCCESS payload.
func DecodeOperationSucceeded(payload []byte) (OperationSucceeded, error) {
	d := decoder{b: payload, flyweight: "OperationSucceeded"}
	d.fixed(opSucceededLength)
	r := OperationSucceeded{CorrelationID: d.int64(opSucceededCorrelationIDOffset)}
	if d.err != nil {
		return OperationSucceeded{}, d.err
	}
	return r, nil
}

// ImageMessage is the payload of ON_UNAVAILABLE_IMAGE: an image went away.
// Match it on both CorrelationID and SubscriptionRegistrationID.
type ImageMessage struct {
	// CorrelationID identifies the image (ImageBuffersReady.CorrelationID).
	CorrelationID int64
	// SubscriptionRegistrationID is the registration id of the
	// subscription that had the image.
	SubscriptionRegistrationID int64
	// StreamID is the image's stream id.
	StreamID int32
	// Channel is the subscription's channel.
	Channel string
}

// DecodeImageMessage decodes an ON_UNAVAILABLE_IMAGE payload.
func DecodeImageMessage(payload []byte) (ImageMessage, error) {
	d := decoder{b: payload, flyweight: "ImageMessage"}
	d.fixed(imageMsgChannelLengthOffset + stringLengthSize)
	r := ImageMessage{
		CorrelationID:              d.int64(imageMsgCorrelationIDOffset),
		SubscriptionRegistrationID: d.int64(imageMsgSubscriptionRegIDOffset),
		StreamID:                   d.int32(imageMsgStreamIDOffset),
	}
	r.Channel, _ = d.string("channel", imageMsgChannelLengthOffset)
	if d.err != nil {
		return ImageMessage{}, d.err
	}
	return r, nil
}

// CounterUpdate is the payload of ON_COUNTER_READY and
// ON_UNAVAILABLE_COUNTER.
type CounterUpdate struct {
	// CorrelationID is the ADD_COUNTER correlation id (ready) or the
	// counter's registration id (unavailable). An ON_COUNTER_READY whose
	// id is not a pending command announces a counter, e.g. the client
	// heartbeat counter, announced with the client id (§4.5, §9).
	CorrelationID int64
	// CounterID is the counter's id.
	CounterID int32
}

// DecodeCounterUpdate decodes an ON_COUNTER_READY or
// ON_UNAVAILABLE_COUNTER payload.
func DecodeCounterUpdate(payload []byte) (CounterUpdate, error) {
	d := decoder{b: payload, flyweight: "CounterUpdate"}
	d.fixed(counterUpdateLength)
	r := CounterUpdate{
		CorrelationID: d.int64(counterUpdateCorrelationIDOffset),
		CounterID:     d.int32(counterUpdateCounterIDOffset),
	}
	if d.err != nil {
		return CounterUpdate{}, d.err
	}
	return r, nil
}

// ClientTimeout is the payload of ON_CLIENT_TIMEOUT. It is fatal only for
// the client whose id is ClientID.
type ClientTimeout struct {
	// ClientID is the id of the client the driver timed out.
	ClientID int64
}

// DecodeClientTimeout decodes an ON_CLIENT_TIMEOUT payload.
func DecodeClientTimeout(payload []byte) (ClientTimeout, error) {
	d := decoder{b: payload, flyweight: "ClientTimeout"}
	d.fixed(clientTimeoutLength)
	r := ClientTimeout{ClientID: d.int64(clientTimeoutClientIDOffset)}
	if d.err != nil {
		return ClientTimeout{}, d.err
	}
	return r, nil
}

// StaticCounter is the payload of ON_STATIC_COUNTER.
type StaticCounter struct {
	// CorrelationID is the ADD_STATIC_COUNTER command's correlation id.
	CorrelationID int64
	// CounterID is the static counter's id.
	CounterID int32
}

// DecodeStaticCounter decodes an ON_STATIC_COUNTER payload.
func DecodeStaticCounter(payload []byte) (StaticCounter, error) {
	d := decoder{b: payload, flyweight: "StaticCounter"}
	d.fixed(staticCounterLength)
	r := StaticCounter{
		CorrelationID: d.int64(staticCounterCorrelationIDOffset),
		CounterID:     d.int32(staticCounterCounterIDOffset),
	}
	if d.err != nil {
		return StaticCounter{}, d.err
	}
	return r, nil
}

// AddressType says which kind of address a [PublicationErrorFrame]
// carries.
type AddressType int16

// Address types of a publication error frame.
const (
	// AddressTypeIPv4: the first 4 bytes of the address are an IPv4
	// address.
	AddressTypeIPv4 AddressType = 1
	// AddressTypeIPv6: the 16 bytes of the address are an IPv6 address.
	AddressTypeIPv6 AddressType = 2
)

// String returns "IPv4", "IPv6" or "AddressType(n)".
func (t AddressType) String() string {
	switch t {
	case AddressTypeIPv4:
		return "IPv4"
	case AddressTypeIPv6:
		return "IPv6"
	default:
		return fmt.Sprintf("AddressType(%d)", int16(t))
	}
}

// PublicationErrorFrame is the payload of ON_PUBLICATION_ERROR: a receiver
// sent an error frame for a publication.
type PublicationErrorFrame struct {
	// RegistrationID is the publication's registration id.
	RegistrationID int64
	// DestinationRegistrationID is the destination's registration id (for
	// multi-destination publications).
	DestinationRegistrationID int64
	// SessionID is the publication's session id.
	SessionID int32
	// StreamID is the publication's stream id.
	StreamID int32
	// ReceiverID identifies the receiver that sent the error frame.
	ReceiverID int64
	// GroupTag is the receiver's group tag.
	GroupTag int64
	// AddressType says how to read Address.
	AddressType AddressType
	// Port is the receiver's UDP port.
	Port uint16
	// Address is the receiver's address, IPv4 in the first 4 bytes.
	Address [16]byte
	// ErrorCode is the error the receiver reported.
	ErrorCode ErrorCode
	// Message is the receiver's error text.
	Message string
}

// Source returns the receiver's address and port, or false if AddressType
// is not one this package knows.
func (r PublicationErrorFrame) Source() (netip.AddrPort, bool) {
	switch r.AddressType {
	case AddressTypeIPv4:
		return netip.AddrPortFrom(netip.AddrFrom4([pubErrorIPv4AddressLength]byte(r.Address[:pubErrorIPv4AddressLength])), r.Port), true
	case AddressTypeIPv6:
		return netip.AddrPortFrom(netip.AddrFrom16(r.Address), r.Port), true
	default:
		return netip.AddrPort{}, false
	}
}

// DecodePublicationErrorFrame decodes an ON_PUBLICATION_ERROR payload. An
// unknown address type is not an error (see
// [PublicationErrorFrame.Source]).
func DecodePublicationErrorFrame(payload []byte) (PublicationErrorFrame, error) {
	d := decoder{b: payload, flyweight: "PublicationErrorFrame"}
	d.fixed(pubErrorMessageLengthOffset + stringLengthSize)
	r := PublicationErrorFrame{
		RegistrationID:            d.int64(pubErrorRegistrationIDOffset),
		DestinationRegistrationID: d.int64(pubErrorDestinationRegIDOffset),
		SessionID:                 d.int32(pubErrorSessionIDOffset),
		StreamID:                  d.int32(pubErrorStreamIDOffset),
		ReceiverID:                d.int64(pubErrorReceiverIDOffset),
		GroupTag:                  d.int64(pubErrorGroupTagOffset),
		AddressType:               AddressType(d.int16(pubErrorAddressTypeOffset)),
		Port:                      uint16(d.int16(pubErrorPortOffset)),
		ErrorCode:                 ErrorCode(d.int32(pubErrorErrorCodeOffset)),
	}
	if d.err == nil {
		copy(r.Address[:], payload[pubErrorAddressOffset:pubErrorAddressOffset+ipv6AddressLength])
	}
	r.Message, _ = d.string("error message", pubErrorMessageLengthOffset)
	if d.err != nil {
		return PublicationErrorFrame{}, d.err
	}
	return r, nil
}

// decoder reads fields of one payload with a sticky error: after the first
// failure every read returns zero and err keeps the first failure, so a
// decoder checks once at the end and never returns a half-filled value.
type decoder struct {
	b         []byte
	flyweight string
	err       error
}

// fixed checks that the fixed-length fields, the first n bytes, are
// present. Reads of fixed fields after it cannot fail.
func (d *decoder) fixed(n int) {
	d.need("fixed-length fields", 0, n)
}

// need checks that n bytes are present at offset, without overflowing.
func (d *decoder) need(field string, offset, n int) bool {
	if d.err != nil {
		return false
	}
	if offset < 0 || n < 0 || offset > len(d.b) || n > len(d.b)-offset {
		d.err = &DecodeError{Flyweight: d.flyweight, Field: field, Offset: offset, Length: n,
			PayloadLength: len(d.b), Err: ErrTruncated}
		return false
	}
	return true
}

func (d *decoder) int64(offset int) int64 {
	if !d.need("int64 field", offset, sizeofInt64) {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(d.b[offset:]))
}

func (d *decoder) int32(offset int) int32 {
	if !d.need("int32 field", offset, sizeofInt32) {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(d.b[offset:]))
}

func (d *decoder) int16(offset int) int16 {
	if !d.need("int16 field", offset, sizeofInt16) {
		return 0
	}
	return int16(binary.LittleEndian.Uint16(d.b[offset:]))
}

// string reads the ASCII string whose int32 length is at lengthOffset and
// returns it with its length. The length is checked against the bytes
// that remain before anything is sliced or copied.
func (d *decoder) string(field string, lengthOffset int) (string, int) {
	if !d.need(field+" length", lengthOffset, stringLengthSize) {
		return "", 0
	}
	n := int(int32(binary.LittleEndian.Uint32(d.b[lengthOffset:])))
	offset := lengthOffset + stringLengthSize
	if n < 0 {
		d.err = &DecodeError{Flyweight: d.flyweight, Field: field + " length", Offset: lengthOffset, Length: n,
			PayloadLength: len(d.b), Err: ErrMalformed}
		return "", 0
	}
	if !d.need(field, offset, n) {
		return "", 0
	}
	return string(d.b[offset : offset+n]), n
}
