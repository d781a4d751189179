package command

import (
	"encoding/binary"
	"fmt"
)

// Test-only encoders of the responses (what the driver writes) and
// decoders of the commands (what the driver reads). They use the layout
// constants; the golden tests pin those constants and the byte layouts
// independently.

func appendErrorResponse(dst []byte, r ErrorResponse) []byte {
	out, msg := extend(dst, errorMessageOffset+len(r.Message))
	putInt64(msg, errorOffendingCorrelationIDOffset, r.OffendingCorrelationID)
	putInt32(msg, errorCodeOffset, int32(r.Code))
	putString(msg, errorMessageLengthOffset, r.Message)
	return out
}

func appendPublicationBuffersReady(dst []byte, r PublicationBuffersReady) []byte {
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

func appendSubscriptionReady(dst []byte, r SubscriptionReady) []byte {
	out, msg := extend(dst, subReadyLength)
	putInt64(msg, subReadyCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, subReadyChannelStatusCounterIDOffset, r.ChannelStatusCounterID)
	return out
}

func appendImageBuffersReady(dst []byte, r ImageBuffersReady) []byte {
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

func appendOperationSucceeded(dst []byte, r OperationSucceeded) []byte {
	out, msg := extend(dst, opSucceededLength)
	putInt64(msg, opSucceededCorrelationIDOffset, r.CorrelationID)
	return out
}

func appendImageMessage(dst []byte, r ImageMessage) []byte {
	out, msg := extend(dst, imageMsgChannelOffset+len(r.Channel))
	putInt64(msg, imageMsgCorrelationIDOffset, r.CorrelationID)
	putInt64(msg, imageMsgSubscriptionRegIDOffset, r.SubscriptionRegistrationID)
	putInt32(msg, imageMsgStreamIDOffset, r.StreamID)
	putString(msg, imageMsgChannelLengthOffset, r.Channel)
	return out
}

func appendCounterUpdate(dst []byte, r CounterUpdate) []byte {
	out, msg := extend(dst, counterUpdateLength)
	putInt64(msg, counterUpdateCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, counterUpdateCounterIDOffset, r.CounterID)
	return out
}

func appendClientTimeout(dst []byte, r ClientTimeout) []byte {
	out, msg := extend(dst, clientTimeoutLength)
	putInt64(msg, clientTimeoutClientIDOffset, r.ClientID)
	return out
}

func appendStaticCounter(dst []byte, r StaticCounter) []byte {
	out, msg := extend(dst, staticCounterLength)
	putInt64(msg, staticCounterCorrelationIDOffset, r.CorrelationID)
	putInt32(msg, staticCounterCounterIDOffset, r.CounterID)
	return out
}

func appendPublicationErrorFrame(dst []byte, r PublicationErrorFrame) []byte {
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

// decodeCommand is the driver's side of the encoders: it parses a command
// payload strictly (exact length, valid string lengths), the way the
// driver validates it, and rebuilds the command.
func decodeCommand(t CommandType, b []byte) (Command, error) {
	d := decoder{b: b, flyweight: t.String()}
	d.fixed(correlatedLength)
	clientID, correlationID := d.int64(clientIDOffset), d.int64(correlationIDOffset)
	var c Command
	var end int
	str := func(lengthOffset int) string {
		s, n := d.string("string", lengthOffset)
		end = lengthOffset + stringLengthSize + n
		return s
	}
	switch t {
	case CommandAddPublication, CommandAddExclusivePublication:
		d.fixed(publicationChannelOffset)
		streamID := d.int32(publicationStreamIDOffset)
		channel := str(publicationChannelLengthOffset)
		if t == CommandAddPublication {
			c = AddPublication{clientID, correlationID, streamID, channel}
		} else {
			c = AddExclusivePublication{clientID, correlationID, streamID, channel}
		}
	case CommandAddSubscription:
		d.fixed(subscriptionChannelOffset)
		if reg := d.int64(subscriptionRegistrationIDOffset); d.err == nil && reg != NullCorrelationID {
			return nil, fmt.Errorf("registration correlation id %d, want -1", reg)
		}
		streamID := d.int32(subscriptionStreamIDOffset)
		c = AddSubscription{clientID, correlationID, streamID, str(subscriptionChannelLengthOffset)}
	case CommandRemovePublication, CommandRemoveSubscription, CommandRemoveCounter:
		d.fixed(removeLength)
		reg := d.int64(removeRegistrationIDOffset)
		end = removeLength
		switch t {
		case CommandRemovePublication:
			c = RemovePublication{clientID, correlationID, reg}
		case CommandRemoveSubscription:
			c = RemoveSubscription{clientID, correlationID, reg}
		default:
			c = RemoveCounter{clientID, correlationID, reg}
		}
	case CommandClientKeepalive:
		c, end = ClientKeepalive{clientID, correlationID}, correlatedLength
	case CommandClientClose:
		if d.err == nil && correlationID != NullCorrelationID {
			return nil, fmt.Errorf("client close correlation id %d, want -1", correlationID)
		}
		c, end = ClientClose{clientID}, correlatedLength
	case CommandAddDestination, CommandRemoveDestination, CommandAddRcvDestination, CommandRemoveRcvDestination:
		d.fixed(destinationChannelOffset)
		reg := d.int64(destinationRegistrationIDOffset)
		channel := str(destinationChannelLengthOffset)
		switch t {
		case CommandAddDestination:
			c = AddDestination{clientID, correlationID, reg, channel}
		case CommandRemoveDestination:
			c = RemoveDestination{clientID, correlationID, reg, channel}
		case CommandAddRcvDestination:
			c = AddRcvDestination{clientID, correlationID, reg, channel}
		default:
			c = RemoveRcvDestination{clientID, correlationID, reg, channel}
		}
	case CommandAddCounter:
		d.fixed(counterKeyOffset)
		typeID := d.int32(counterTypeIDOffset)
		key := str(counterKeyLengthOffset)
		label := str(counterLabelLengthOffset(len(key)))
		var k []byte
		if key != "" {
			k = []byte(key)
		}
		c = AddCounter{clientID, correlationID, typeID, k, label}
	case CommandTerminateDriver:
		if d.err == nil && correlationID != NullCorrelationID {
			return nil, fmt.Errorf("terminate driver correlation id %d, want -1", correlationID)
		}
		token := str(terminateDriverTokenLengthOffset)
		var tok []byte
		if token != "" {
			tok = []byte(token)
		}
		c = TerminateDriver{clientID, tok}
	default:
		return nil, fmt.Errorf("no test decoder for %v", t)
	}
	if d.err != nil {
		return nil, d.err
	}
	if end != len(b) {
		return nil, fmt.Errorf("%v: payload is %d bytes, fields end at %d", t, len(b), end)
	}
	return c, nil
}
