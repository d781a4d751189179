package command

import (
	"fmt"
)

// Test-only encoders of the responses (what the driver writes) and
// decoders of the commands (what the driver reads). They use the layout
// constants; the golden tests pin those constants and the byte layouts
// independently.

func appendErrorResponse(dst []byte, r ErrorResponse) []byte { return r.AppendTo(dst) }

func appendPublicationBuffersReady(dst []byte, r PublicationBuffersReady) []byte {
	return r.AppendTo(dst)
}

func appendSubscriptionReady(dst []byte, r SubscriptionReady) []byte { return r.AppendTo(dst) }

func appendImageBuffersReady(dst []byte, r ImageBuffersReady) []byte { return r.AppendTo(dst) }

func appendOperationSucceeded(dst []byte, r OperationSucceeded) []byte { return r.AppendTo(dst) }

func appendImageMessage(dst []byte, r ImageMessage) []byte { return r.AppendTo(dst) }

func appendCounterUpdate(dst []byte, r CounterUpdate) []byte { return r.AppendTo(dst) }

func appendClientTimeout(dst []byte, r ClientTimeout) []byte { return r.AppendTo(dst) }

func appendStaticCounter(dst []byte, r StaticCounter) []byte { return r.AppendTo(dst) }

func appendPublicationErrorFrame(dst []byte, r PublicationErrorFrame) []byte { return r.AppendTo(dst) }

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
