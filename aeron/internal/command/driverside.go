package command

import "encoding/binary"

// The driver side of the responses: what a media driver writes to the to-clients buffer.
// ferry's client never sends these; in-process fake drivers in tests do, and the round-trip
// tests use them. Each appends the response's payload (no broadcast record header) to dst.

// AppendTo appends the ErrorResponse payload as the driver writes it.
func (r ErrorResponse) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, errorMessageOffset+len(r.Message))
	putInt64(msg, errorOffendingCorrelationIDOffset, r.OffendingCorrelationID)
	putInt32(msg, errorCodeOffset, int32(r.Code))
	putString(msg, errorMessageLengthOffset, r.Message)
	return out
}

// AppendTo appends the PublicationBuffersReady payload as the driver writes it.
func (r PublicationBuffersReady) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, pubReadyLogFileNameOffset+len(r.LogFileName))
	putInt64(msg, pubReadyCorrelationIDOffset, r.CorrelationID)
	putInt64(msg, pubReadyRegistrationIDOffset, r.RegistrationID)
	putInt32(msg, pubReadySessionIDOffset, r.SessionID)
	putInt32(msg, pubReadyStreamIDOffset, r.StreamID)
	putInt32(msg, pubReadyPublicationLimitCounterIDOffset, r.PublicationLimitCounterID)
	putInt32(msg, pubReadyChannelStatusCounterIDOffset, r.ChannelStatusCounterID)
	putString(msg, pubReadyLogFileNameLengthOffset, r.LogFileName)
	return out
}

// AppendTo appends the SubscriptionReady payload as the driver writes it.
func (r SubscriptionReady) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, subReadyLength)
	putInt64(msg, subReadyCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, subReadyChannelStatusCounterIDOffset, r.ChannelStatusCounterID)
	return out
}

// AppendTo appends the ImageBuffersReady payload as the driver writes it.
func (r ImageBuffersReady) AppendTo(dst []byte) []byte {
	identityLengthOffset := imageReadySourceIdentityLengthOffset(len(r.LogFileName))
	out, msg := extend(dst, identityLengthOffset+stringLengthSize+len(r.SourceIdentity))
	putInt64(msg, imageReadyCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, imageReadySessionIDOffset, r.SessionID)
	putInt32(msg, imageReadyStreamIDOffset, r.StreamID)
	putInt64(msg, imageReadySubscriptionRegIDOffset, r.SubscriptionRegistrationID)
	putInt32(msg, imageReadySubscriberPositionIDOffset, r.SubscriberPositionCounterID)
	putString(msg, imageReadyLogFileNameLengthOffset, r.LogFileName)
	putString(msg, identityLengthOffset, r.SourceIdentity)
	return out
}

// AppendTo appends the OperationSucceeded payload as the driver writes it.
func (r OperationSucceeded) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, opSucceededLength)
	putInt64(msg, opSucceededCorrelationIDOffset, r.CorrelationID)
	return out
}

// AppendTo appends the ImageMessage payload as the driver writes it.
func (r ImageMessage) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, imageMsgChannelOffset+len(r.Channel))
	putInt64(msg, imageMsgCorrelationIDOffset, r.CorrelationID)
	putInt64(msg, imageMsgSubscriptionRegIDOffset, r.SubscriptionRegistrationID)
	putInt32(msg, imageMsgStreamIDOffset, r.StreamID)
	putString(msg, imageMsgChannelLengthOffset, r.Channel)
	return out
}

// AppendTo appends the CounterUpdate payload as the driver writes it.
func (r CounterUpdate) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, counterUpdateLength)
	putInt64(msg, counterUpdateCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, counterUpdateCounterIDOffset, r.CounterID)
	return out
}

// AppendTo appends the ClientTimeout payload as the driver writes it.
func (r ClientTimeout) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, clientTimeoutLength)
	putInt64(msg, clientTimeoutClientIDOffset, r.ClientID)
	return out
}

// AppendTo appends the StaticCounter payload as the driver writes it.
func (r StaticCounter) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, staticCounterLength)
	putInt64(msg, staticCounterCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, staticCounterCounterIDOffset, r.CounterID)
	return out
}

// AppendTo appends the PublicationErrorFrame payload as the driver writes it.
func (r PublicationErrorFrame) AppendTo(dst []byte) []byte {
	out, msg := extend(dst, pubErrorMessageOffset+len(r.Message))
	putInt64(msg, pubErrorRegistrationIDOffset, r.RegistrationID)
	putInt64(msg, pubErrorDestinationRegIDOffset, r.DestinationRegistrationID)
	putInt32(msg, pubErrorSessionIDOffset, r.SessionID)
	putInt32(msg, pubErrorStreamIDOffset, r.StreamID)
	putInt64(msg, pubErrorReceiverIDOffset, r.ReceiverID)
	putInt64(msg, pubErrorGroupTagOffset, r.GroupTag)
	putInt16(msg, pubErrorAddressTypeOffset, int16(r.AddressType))
	putInt16(msg, pubErrorPortOffset, int16(r.Port))
	copy(msg[pubErrorAddressOffset:], r.Address[:])
	putInt32(msg, pubErrorErrorCodeOffset, int32(r.ErrorCode))
	putString(msg, pubErrorMessageLengthOffset, r.Message)
	return out
}

func putInt16(b []byte, offset int, v int16) {
	binary.LittleEndian.PutUint16(b[offset:], uint16(v))
}
