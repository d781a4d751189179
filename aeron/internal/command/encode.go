package command

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// Command is a client→driver command. Write the payload produced by
// AppendTo as one to-driver ring record whose type id is Type.
type Command interface {
	// Type is the ring record type id of the command.
	Type() CommandType
	// EncodedLength is the length of the payload AppendTo appends.
	EncodedLength() int
	// AppendTo validates the command and appends its payload to dst. On
	// error it returns dst unchanged and an [*EncodeError].
	AppendTo(dst []byte) ([]byte, error)
}

// AddPublication asks the driver for a concurrent (shared) publication on
// Channel and StreamID. The driver answers ON_PUBLICATION_READY or ON_ERROR
// with CorrelationID.
type AddPublication struct {
	ClientID      int64
	CorrelationID int64
	StreamID      int32
	// Channel is the channel URI: ASCII, at most MaxChannelLength bytes.
	Channel string
}

// Type returns CommandAddPublication.
func (c AddPublication) Type() CommandType { return CommandAddPublication }

// EncodedLength implements [Command].
func (c AddPublication) EncodedLength() int { return publicationChannelOffset + len(c.Channel) }

// AppendTo implements [Command].
func (c AddPublication) AppendTo(dst []byte) ([]byte, error) {
	return appendPublication(dst, c.Type(), c.ClientID, c.CorrelationID, c.StreamID, c.Channel)
}

// AddExclusivePublication asks the driver for an exclusive publication on
// Channel and StreamID. The driver answers ON_EXCLUSIVE_PUBLICATION_READY
// or ON_ERROR with CorrelationID.
type AddExclusivePublication struct {
	ClientID      int64
	CorrelationID int64
	StreamID      int32
	// Channel is the channel URI: ASCII, at most MaxChannelLength bytes.
	Channel string
}

// Type returns CommandAddExclusivePublication.
func (c AddExclusivePublication) Type() CommandType { return CommandAddExclusivePublication }

// EncodedLength implements [Command].
func (c AddExclusivePublication) EncodedLength() int {
	return publicationChannelOffset + len(c.Channel)
}

// AppendTo implements [Command].
func (c AddExclusivePublication) AppendTo(dst []byte) ([]byte, error) {
	return appendPublication(dst, c.Type(), c.ClientID, c.CorrelationID, c.StreamID, c.Channel)
}

func appendPublication(dst []byte, t CommandType, clientID, correlationID int64, streamID int32, channel string) ([]byte, error) {
	if err := checkChannel(t, channel); err != nil {
		return dst, err
	}
	out, msg := extend(dst, publicationChannelOffset+len(channel))
	putCorrelated(msg, clientID, correlationID)
	putInt32(msg, publicationStreamIDOffset, streamID)
	putString(msg, publicationChannelLengthOffset, channel)
	return out, nil
}

// AddSubscription asks the driver for a subscription to Channel and
// StreamID. The driver answers ON_SUBSCRIPTION_READY or ON_ERROR with
// CorrelationID, then ON_AVAILABLE_IMAGE for each image. The registration
// correlation id field is always [NullCorrelationID], as the Java client
// sends it.
type AddSubscription struct {
	ClientID      int64
	CorrelationID int64
	StreamID      int32
	// Channel is the channel URI: ASCII, at most MaxChannelLength bytes.
	Channel string
}

// Type returns CommandAddSubscription.
func (c AddSubscription) Type() CommandType { return CommandAddSubscription }

// EncodedLength implements [Command].
func (c AddSubscription) EncodedLength() int { return subscriptionChannelOffset + len(c.Channel) }

// AppendTo implements [Command].
func (c AddSubscription) AppendTo(dst []byte) ([]byte, error) {
	if err := checkChannel(c.Type(), c.Channel); err != nil {
		return dst, err
	}
	out, msg := extend(dst, c.EncodedLength())
	putCorrelated(msg, c.ClientID, c.CorrelationID)
	putInt64(msg, subscriptionRegistrationIDOffset, NullCorrelationID)
	putInt32(msg, subscriptionStreamIDOffset, c.StreamID)
	putString(msg, subscriptionChannelLengthOffset, c.Channel)
	return out, nil
}

// RemovePublication releases the publication registered as RegistrationID
// (the registration id from ON_PUBLICATION_READY). The driver answers
// ON_OPERATION_SUCCESS or ON_ERROR with CorrelationID.
type RemovePublication struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
}

// Type returns CommandRemovePublication.
func (c RemovePublication) Type() CommandType { return CommandRemovePublication }

// EncodedLength implements [Command].
func (c RemovePublication) EncodedLength() int { return removeLength }

// AppendTo implements [Command]. It never fails.
func (c RemovePublication) AppendTo(dst []byte) ([]byte, error) {
	return appendRemove(dst, c.ClientID, c.CorrelationID, c.RegistrationID), nil
}

// RemoveSubscription releases the subscription registered as
// RegistrationID (its ADD_SUBSCRIPTION correlation id). The driver answers
// ON_OPERATION_SUCCESS or ON_ERROR with CorrelationID.
type RemoveSubscription struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
}

// Type returns CommandRemoveSubscription.
func (c RemoveSubscription) Type() CommandType { return CommandRemoveSubscription }

// EncodedLength implements [Command].
func (c RemoveSubscription) EncodedLength() int { return removeLength }

// AppendTo implements [Command]. It never fails.
func (c RemoveSubscription) AppendTo(dst []byte) ([]byte, error) {
	return appendRemove(dst, c.ClientID, c.CorrelationID, c.RegistrationID), nil
}

// RemoveCounter frees the counter registered as RegistrationID (its
// ADD_COUNTER correlation id). The driver answers ON_OPERATION_SUCCESS or
// ON_ERROR with CorrelationID, and ON_UNAVAILABLE_COUNTER to all clients.
type RemoveCounter struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
}

// Type returns CommandRemoveCounter.
func (c RemoveCounter) Type() CommandType { return CommandRemoveCounter }

// EncodedLength implements [Command].
func (c RemoveCounter) EncodedLength() int { return removeLength }

// AppendTo implements [Command]. It never fails.
func (c RemoveCounter) AppendTo(dst []byte) ([]byte, error) {
	return appendRemove(dst, c.ClientID, c.CorrelationID, c.RegistrationID), nil
}

func appendRemove(dst []byte, clientID, correlationID, registrationID int64) []byte {
	out, msg := extend(dst, removeLength)
	putCorrelated(msg, clientID, correlationID)
	putInt64(msg, removeRegistrationIDOffset, registrationID)
	return out
}

// ClientKeepalive refreshes the client's heartbeat counter (legacy, §9; the
// driver does not answer it, so CorrelationID is not matched and may be
// any value).
type ClientKeepalive struct {
	ClientID      int64
	CorrelationID int64
}

// Type returns CommandClientKeepalive.
func (c ClientKeepalive) Type() CommandType { return CommandClientKeepalive }

// EncodedLength implements [Command].
func (c ClientKeepalive) EncodedLength() int { return correlatedLength }

// AppendTo implements [Command]. It never fails.
func (c ClientKeepalive) AppendTo(dst []byte) ([]byte, error) {
	out, msg := extend(dst, correlatedLength)
	putCorrelated(msg, c.ClientID, c.CorrelationID)
	return out, nil
}

// ClientClose tells the driver that the client is closing: it frees the
// client's resources without counting a timeout. The correlation id is
// always [NullCorrelationID]; the driver does not answer.
type ClientClose struct {
	ClientID int64
}

// Type returns CommandClientClose.
func (c ClientClose) Type() CommandType { return CommandClientClose }

// EncodedLength implements [Command].
func (c ClientClose) EncodedLength() int { return correlatedLength }

// AppendTo implements [Command]. It never fails.
func (c ClientClose) AppendTo(dst []byte) ([]byte, error) {
	out, msg := extend(dst, correlatedLength)
	putCorrelated(msg, c.ClientID, NullCorrelationID)
	return out, nil
}

// AddCounter asks the driver to allocate a counter. The driver answers
// ON_COUNTER_READY (with the counter id) or ON_ERROR with CorrelationID.
type AddCounter struct {
	ClientID      int64
	CorrelationID int64
	// TypeID is the counter's type id.
	TypeID int32
	// Key is copied into the counter's key area: at most
	// MaxCounterKeyLength bytes.
	Key []byte
	// Label is the counter's label: ASCII, at most MaxCounterLabelLength
	// bytes.
	Label string
}

// Type returns CommandAddCounter.
func (c AddCounter) Type() CommandType { return CommandAddCounter }

// EncodedLength implements [Command].
func (c AddCounter) EncodedLength() int {
	return counterLabelLengthOffset(len(c.Key)) + stringLengthSize + len(c.Label)
}

// AppendTo implements [Command]. The key padding is zeroed.
func (c AddCounter) AppendTo(dst []byte) ([]byte, error) {
	if len(c.Key) > MaxCounterKeyLength {
		return dst, &EncodeError{Command: c.Type(), Field: "key",
			Reason: fmt.Sprintf("%d bytes, at most %d allowed", len(c.Key), MaxCounterKeyLength), Err: ErrTooLong}
	}
	if err := checkASCII(c.Type(), "label", c.Label, MaxCounterLabelLength); err != nil {
		return dst, err
	}
	out, msg := extend(dst, c.EncodedLength())
	putCorrelated(msg, c.ClientID, c.CorrelationID)
	putInt32(msg, counterTypeIDOffset, c.TypeID)
	putBytes(msg, counterKeyLengthOffset, c.Key)
	putString(msg, counterLabelLengthOffset(len(c.Key)), c.Label)
	return out, nil
}

// AddDestination adds the destination Channel to the multi-destination
// publication registered as RegistrationID. The driver answers
// ON_OPERATION_SUCCESS or ON_ERROR with CorrelationID.
type AddDestination struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
	// Channel is the destination URI: ASCII, at most MaxChannelLength
	// bytes.
	Channel string
}

// Type returns CommandAddDestination.
func (c AddDestination) Type() CommandType { return CommandAddDestination }

// EncodedLength implements [Command].
func (c AddDestination) EncodedLength() int { return destinationChannelOffset + len(c.Channel) }

// AppendTo implements [Command].
func (c AddDestination) AppendTo(dst []byte) ([]byte, error) {
	return appendDestination(dst, c.Type(), c.ClientID, c.CorrelationID, c.RegistrationID, c.Channel)
}

// RemoveDestination removes the destination Channel from the
// multi-destination publication registered as RegistrationID. The driver
// answers ON_OPERATION_SUCCESS or ON_ERROR with CorrelationID.
type RemoveDestination struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
	// Channel is the destination URI: ASCII, at most MaxChannelLength
	// bytes.
	Channel string
}

// Type returns CommandRemoveDestination.
func (c RemoveDestination) Type() CommandType { return CommandRemoveDestination }

// EncodedLength implements [Command].
func (c RemoveDestination) EncodedLength() int { return destinationChannelOffset + len(c.Channel) }

// AppendTo implements [Command].
func (c RemoveDestination) AppendTo(dst []byte) ([]byte, error) {
	return appendDestination(dst, c.Type(), c.ClientID, c.CorrelationID, c.RegistrationID, c.Channel)
}

// AddRcvDestination adds the destination Channel to the multi-destination
// subscription registered as RegistrationID (what ReplayMerge uses). The
// driver answers ON_OPERATION_SUCCESS or ON_ERROR with CorrelationID.
type AddRcvDestination struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
	// Channel is the destination URI: ASCII, at most MaxChannelLength
	// bytes.
	Channel string
}

// Type returns CommandAddRcvDestination.
func (c AddRcvDestination) Type() CommandType { return CommandAddRcvDestination }

// EncodedLength implements [Command].
func (c AddRcvDestination) EncodedLength() int { return destinationChannelOffset + len(c.Channel) }

// AppendTo implements [Command].
func (c AddRcvDestination) AppendTo(dst []byte) ([]byte, error) {
	return appendDestination(dst, c.Type(), c.ClientID, c.CorrelationID, c.RegistrationID, c.Channel)
}

// RemoveRcvDestination removes the destination Channel from the
// multi-destination subscription registered as RegistrationID. The driver
// answers ON_OPERATION_SUCCESS or ON_ERROR with CorrelationID.
type RemoveRcvDestination struct {
	ClientID       int64
	CorrelationID  int64
	RegistrationID int64
	// Channel is the destination URI: ASCII, at most MaxChannelLength
	// bytes.
	Channel string
}

// Type returns CommandRemoveRcvDestination.
func (c RemoveRcvDestination) Type() CommandType { return CommandRemoveRcvDestination }

// EncodedLength implements [Command].
func (c RemoveRcvDestination) EncodedLength() int {
	return destinationChannelOffset + len(c.Channel)
}

// AppendTo implements [Command].
func (c RemoveRcvDestination) AppendTo(dst []byte) ([]byte, error) {
	return appendDestination(dst, c.Type(), c.ClientID, c.CorrelationID, c.RegistrationID, c.Channel)
}

func appendDestination(dst []byte, t CommandType, clientID, correlationID, registrationID int64, channel string) ([]byte, error) {
	if err := checkChannel(t, channel); err != nil {
		return dst, err
	}
	out, msg := extend(dst, destinationChannelOffset+len(channel))
	putCorrelated(msg, clientID, correlationID)
	putInt64(msg, destinationRegistrationIDOffset, registrationID)
	putString(msg, destinationChannelLengthOffset, channel)
	return out, nil
}

// TerminateDriver asks the driver to terminate, for tests. The driver
// ignores it unless its termination validator accepts Token (§12). The
// correlation id is always [NullCorrelationID], as the Java client sends
// it; the driver does not answer.
type TerminateDriver struct {
	ClientID int64
	// Token is passed to the driver's termination validator.
	Token []byte
}

// Type returns CommandTerminateDriver.
func (c TerminateDriver) Type() CommandType { return CommandTerminateDriver }

// EncodedLength implements [Command].
func (c TerminateDriver) EncodedLength() int { return terminateDriverTokenOffset + len(c.Token) }

// AppendTo implements [Command].
func (c TerminateDriver) AppendTo(dst []byte) ([]byte, error) {
	if len(c.Token) > math.MaxInt32-terminateDriverTokenOffset {
		return dst, &EncodeError{Command: c.Type(), Field: "token",
			Reason: fmt.Sprintf("%d bytes do not fit an int32 length", len(c.Token)), Err: ErrTooLong}
	}
	out, msg := extend(dst, c.EncodedLength())
	putCorrelated(msg, c.ClientID, NullCorrelationID)
	putBytes(msg, terminateDriverTokenLengthOffset, c.Token)
	return out, nil
}

// checkChannel rejects a channel the driver cannot receive.
func checkChannel(t CommandType, channel string) error {
	return checkASCII(t, "channel", channel, MaxChannelLength)
}

// checkASCII rejects s if it is longer than maxLength bytes or holds a
// byte outside 7-bit ASCII.
func checkASCII(t CommandType, field, s string, maxLength int) error {
	if len(s) > maxLength {
		return &EncodeError{Command: t, Field: field,
			Reason: fmt.Sprintf("%d bytes, at most %d allowed", len(s), maxLength), Err: ErrTooLong}
	}
	for i := 0; i < len(s); i++ {
		if s[i] > asciiMax {
			return &EncodeError{Command: t, Field: field,
				Reason: fmt.Sprintf("byte %#x at index %d", s[i], i), Err: ErrNonASCII}
		}
	}
	return nil
}

// asciiMax is the largest 7-bit ASCII byte.
const asciiMax = 0x7F

// extend grows dst by n zeroed bytes and returns the grown slice and the
// n new bytes. Zeroing keeps padding deterministic when dst's spare
// capacity held old bytes.
func extend(dst []byte, n int) (out, msg []byte) {
	out = slices.Grow(dst, n)[:len(dst)+n]
	msg = out[len(dst):]
	clear(msg)
	return out, msg
}

func putCorrelated(msg []byte, clientID, correlationID int64) {
	putInt64(msg, clientIDOffset, clientID)
	putInt64(msg, correlationIDOffset, correlationID)
}

func putInt64(b []byte, offset int, v int64) {
	binary.LittleEndian.PutUint64(b[offset:], uint64(v))
}

func putInt32(b []byte, offset int, v int32) {
	binary.LittleEndian.PutUint32(b[offset:], uint32(v))
}

// putString writes s as an ASCII string whose length prefix is at
// lengthOffset. The caller has checked that len(s) fits an int32.
func putString(b []byte, lengthOffset int, s string) {
	putInt32(b, lengthOffset, int32(len(s)))
	copy(b[lengthOffset+stringLengthSize:], s)
}

// putBytes writes p as a length-prefixed byte field whose length prefix is
// at lengthOffset. The caller has checked that len(p) fits an int32.
func putBytes(b []byte, lengthOffset int, p []byte) {
	putInt32(b, lengthOffset, int32(len(p)))
	copy(b[lengthOffset+stringLengthSize:], p)
}
