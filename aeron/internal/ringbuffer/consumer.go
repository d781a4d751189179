package ringbuffer

import "fmt"

// The consumer side of the ring, as the media driver performs it. A client
// never reads its to-driver ring; tests and in-process driver fakes do.

// Handler receives one record from [ManyToOne.Read]. payload aliases the
// ring and is zeroed once Read returns: the handler must copy what it keeps.
type Handler func(typeID int32, payload []byte)

// Read delivers up to limit records, in ring order, to handle, skipping
// padding, then zeroes the bytes it consumed and advances the head. It
// reads only up to the end of the data area: records past the wrap are read
// by the next call. It returns the number of records delivered.
//
// Read must be called by one goroutine at a time (there is one consumer).
// It stops at the first record not yet published (length <= 0). A record
// whose length does not fit the ring stops the read with an error matching
// [ErrCorrupt]; the records before it are still delivered and consumed.
func (r *ManyToOne) Read(limit int, handle Handler) (int, error) {
	// The consumer owns head; the atomic load is for symmetry with the
	// producers' loads, not for ordering.
	head := r.buf.LoadInt64(r.head)
	if head&(RecordAlignment-1) != 0 {
		return 0, &CorruptError{Position: head, Reason: "head position is not record-aligned"}
	}
	headIndex := int(head & (r.capacity - 1))
	blockLength := int(r.capacity) - headIndex // records never span the wrap

	var (
		delivered int
		consumed  int
		err       error
	)
	for delivered < limit && consumed < blockLength {
		index := headIndex + consumed
		// Acquire: pairs with the producer's release store of the positive
		// length, which it made after writing the type and payload.
		length := r.buf.LoadInt32(index + RecordLengthOffset)
		if length <= 0 {
			break // not yet claimed (0) or being written (< 0)
		}
		aligned := int(align(int64(length), RecordAlignment))
		if length < HeaderLength || aligned > blockLength-consumed {
			err = &CorruptError{
				Position: head + int64(consumed),
				Reason:   fmt.Sprintf("record length %d does not fit the %d bytes before the wrap", length, blockLength-consumed),
			}
			break
		}
		consumed += aligned

		typeID := r.buf.GetInt32(index + TypeIDOffset) // published by the length load above
		if typeID == PaddingTypeID {
			continue
		}
		handle(typeID, r.buf.Sub(index+HeaderLength, int(length)-HeaderLength).Bytes())
		delivered++
	}

	if consumed > 0 {
		clear(r.buf.Sub(headIndex, consumed).Bytes())
		// Release: the zeroing above happens before the producers' acquire
		// load of head (in claim) that lets them reuse these bytes, so a
		// producer never sees our stale records under its claim.
		r.buf.StoreInt64(r.head, head+int64(consumed))
	}
	return delivered, err
}

// SetConsumerHeartbeatTime stores the consumer's heartbeat, epoch
// milliseconds, as the driver does on every duty cycle.
func (r *ManyToOne) SetConsumerHeartbeatTime(epochMillis int64) {
	// Release: pairs with the acquire load in ConsumerHeartbeatTime.
	r.buf.StoreInt64(r.heartbeat, epochMillis)
}
