package broadcast

import "fmt"

// Handler receives one message from [CopyReceiver.Receive]. payload is a
// private copy, reused by the next Receive: the handler must copy what it
// keeps.
type Handler func(typeID int32, payload []byte)

// CopyReceiver delivers broadcast messages only after copying them out of
// shared memory and checking that the copy is intact: Agrona's
// CopyBroadcastReceiver, which the Aeron client conductor uses.
//
// A CopyReceiver is not safe for concurrent use: one goroutine owns it.
type CopyReceiver struct {
	receiver *Receiver
	scratch  []byte

	// afterCopy, if set, runs between the copy and its re-validation. It
	// is a seam for tests that overwrite the buffer at that exact moment;
	// it is always nil outside tests.
	afterCopy func()
}

// NewCopyReceiver returns a CopyReceiver reading through r. It allocates
// one scratch buffer of r.MaxPayloadLength() bytes (128 KiB for Aeron's
// default 1 MiB buffer) and never allocates afterwards.
func NewCopyReceiver(r *Receiver) *CopyReceiver {
	return &CopyReceiver{receiver: r, scratch: make([]byte, r.MaxPayloadLength())}
}

// Receiver returns the underlying cursor.
func (c *CopyReceiver) Receiver() *Receiver { return c.receiver }

// Receive delivers at most one message to handle and reports whether it
// did. It returns an error wrapping [ErrLapped] if the transmitter
// overwrote messages before they were read, or overwrote the message while
// it was being copied (the handler is not called); the receiver has moved
// on and the caller may continue, at the cost of the lost messages. It
// returns an error matching [ErrCorrupt] if the buffer is corrupt.
func (c *CopyReceiver) Receive(handle Handler) (bool, error) {
	r := c.receiver
	lapped := r.LappedCount()
	ok, err := r.ReceiveNext()
	if err != nil {
		return false, err
	}
	if r.LappedCount() != lapped {
		return false, fmt.Errorf("%w: lap %d, resumed at position %d", ErrLapped, r.LappedCount(), r.next)
	}
	if !ok {
		return false, nil
	}
	typeID := r.TypeID()
	payload := r.CopyPayload(c.scratch)
	if c.afterCopy != nil {
		c.afterCopy()
	}
	if !r.Validate() {
		return false, fmt.Errorf("%w: message at position %d overwritten while being copied", ErrLapped, r.cursor)
	}
	handle(typeID, payload)
	return true, nil
}
