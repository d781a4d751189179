package broadcast

import (
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Transmitter is the single writer of a broadcast buffer: Agrona's
// BroadcastTransmitter, the media driver's side. ferry uses it in tests and
// in-process fakes of the driver; a client never transmits.
//
// A Transmitter is not safe for concurrent use, and there must be only one
// per buffer.
type Transmitter struct {
	buf shm.Buffer
	geometry
}

// NewTransmitter wraps buf (a data area of power-of-two capacity followed
// by the [TrailerLength]-byte trailer, 8-byte aligned), or returns an error
// wrapping [ErrInvalidBuffer].
func NewTransmitter(buf shm.Buffer) (*Transmitter, error) {
	g, err := newGeometry(buf)
	if err != nil {
		return nil, err
	}
	return &Transmitter{buf: buf, geometry: g}, nil
}

// Capacity returns the length of the data area in bytes.
func (t *Transmitter) Capacity() int { return int(t.capacity) }

// MaxPayloadLength returns the longest payload Transmit accepts:
// capacity/8.
func (t *Transmitter) MaxPayloadLength() int { return t.maxPayload }

// Transmit appends one message, overwriting the oldest ones if needed. If
// the record does not fit before the end of the data area, a padding record
// fills the end and the message goes to index 0. It returns
// [ErrInvalidTypeID] or [ErrMessageTooLong] for bad arguments and an error
// matching [ErrCorrupt] if the tail counter is not a record position.
func (t *Transmitter) Transmit(typeID int32, payload []byte) error {
	if typeID < 1 {
		return fmt.Errorf("%w: got %d", ErrInvalidTypeID, typeID)
	}
	if len(payload) > t.maxPayload {
		return fmt.Errorf("%w: %d bytes, maximum %d", ErrMessageTooLong, len(payload), t.maxPayload)
	}
	// The transmitter owns tail; the load is atomic only for symmetry.
	position := t.buf.LoadInt64(t.tail)
	if position&(RecordAlignment-1) != 0 {
		return &CorruptError{Position: position, Reason: "tail counter is not a record position"}
	}
	recordLength := int32(HeaderLength + len(payload)) // ≤ HeaderLength + capacity/8
	aligned := align(int64(recordLength), RecordAlignment)
	index := t.indexOf(position)
	toEnd := t.capacity - int64(index)

	// Announce the bytes about to be overwritten before writing any of
	// them. Every store below is atomic, so (sequential consistency) a
	// receiver that reads any of the new bytes, then loads the intent,
	// sees this intent or a later one: its Validate fails. The Java
	// driver gets the same effect from a release fence after this store.
	if toEnd < aligned {
		t.buf.StoreInt64(t.tailIntent, position+toEnd+aligned)
		t.buf.StoreInt32(index+RecordLengthOffset, int32(toEnd))
		t.buf.StoreInt32(index+TypeIDOffset, PaddingTypeID)
		position += toEnd
		index = 0
	} else {
		t.buf.StoreInt64(t.tailIntent, position+aligned)
	}

	t.buf.StoreInt32(index+RecordLengthOffset, recordLength)
	t.buf.StoreInt32(index+TypeIDOffset, typeID)
	t.buf.StoreWords(index+HeaderLength, payload)

	// Release: new receivers start at latest; the record is complete.
	t.buf.StoreInt64(t.latest, position)
	// Release: publishes the record; pairs with the receivers' acquire
	// load of tail in ReceiveNext.
	t.buf.StoreInt64(t.tail, position+aligned)
	return nil
}
