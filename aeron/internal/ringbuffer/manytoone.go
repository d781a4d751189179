package ringbuffer

import (
	"fmt"
	"math/bits"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// ManyToOne is the producer's view of a many-to-one ring buffer. It holds
// no mutable state of its own: all state is in the shared buffer, so
// ManyToOne is safe for concurrent use by any number of goroutines (and
// processes) writing to the same ring.
type ManyToOne struct {
	buf        shm.Buffer
	capacity   int64
	maxPayload int

	// Absolute offsets of the trailer fields in buf.
	tail, headCache, head, correlation, heartbeat int
}

// New wraps buf, which must be a data area of a power-of-two capacity of at
// least [MinCapacity] bytes followed by the [TrailerLength]-byte trailer,
// starting 8-byte aligned. Otherwise it returns an error wrapping
// [ErrInvalidBuffer]. New reads and writes nothing.
func New(buf shm.Buffer) (*ManyToOne, error) {
	capacity := buf.Len() - TrailerLength
	if capacity < MinCapacity || capacity > maxCapacity || bits.OnesCount(uint(capacity)) != 1 {
		return nil, fmt.Errorf("%w: length %d is not a power of two in [%d, %d] plus the %d-byte trailer",
			ErrInvalidBuffer, buf.Len(), MinCapacity, maxCapacity, TrailerLength)
	}
	if err := buf.CheckAlignment(sizeofInt64); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidBuffer, err)
	}
	maxPayload := 0 // a MinCapacity ring holds only empty records
	if capacity > MinCapacity {
		maxPayload = max(HeaderLength, capacity/maxPayloadDivisor)
	}
	return &ManyToOne{
		buf:         buf,
		capacity:    int64(capacity),
		maxPayload:  maxPayload,
		tail:        capacity + TailPositionOffset,
		headCache:   capacity + HeadCachePositionOffset,
		head:        capacity + HeadPositionOffset,
		correlation: capacity + CorrelationCounterOffset,
		heartbeat:   capacity + ConsumerHeartbeatOffset,
	}, nil
}

// Capacity returns the length of the data area in bytes.
func (r *ManyToOne) Capacity() int { return int(r.capacity) }

// MaxPayloadLength returns the longest payload [ManyToOne.Write] accepts.
func (r *ManyToOne) MaxPayloadLength() int { return r.maxPayload }

// Write appends one record of type typeID carrying payload, and publishes
// it to the consumer. It returns [ErrInsufficientCapacity] when the ring is
// too full (the caller retries later), [ErrInvalidTypeID] or
// [ErrMessageTooLong] for bad arguments, and an error matching [ErrCorrupt]
// if the ring's tail is not record-aligned. It never blocks: competing
// producers only make it retry its compare-and-swap.
//
// payload is copied; the caller may reuse it when Write returns.
func (r *ManyToOne) Write(typeID int32, payload []byte) error {
	if typeID < 1 {
		return fmt.Errorf("%w: got %d", ErrInvalidTypeID, typeID)
	}
	if len(payload) > r.maxPayload {
		return fmt.Errorf("%w: %d bytes, maximum %d", ErrMessageTooLong, len(payload), r.maxPayload)
	}
	recordLength := int32(HeaderLength + len(payload)) // ≤ HeaderLength + capacity/8: fits int32
	index, err := r.claim(align(int64(recordLength), RecordAlignment))
	if err != nil {
		return err
	}

	// Mark the claimed record as "being written" before any other byte of
	// it. Agrona follows this store with a release fence so that no later
	// byte becomes visible first; Go has no fence, so the store is a swap,
	// a full barrier on amd64 and on arm64 with LSE atomics. The consumer
	// itself only stops at a length <= 0; the order matters to the
	// driver's recovery of a producer stalled mid-write (Agrona's unblock,
	// after a timeout), which scans for the first non-zero word and must
	// find this header, never our payload.
	r.buf.SwapInt32(index+RecordLengthOffset, -recordLength)
	copy(r.buf.Sub(index+HeaderLength, len(payload)).Bytes(), payload)
	r.buf.PutInt32(index+TypeIDOffset, typeID)
	// Publish: the release store of the positive length happens after the
	// plain stores of type and payload above; a consumer whose acquire
	// load sees it therefore sees the whole record (pairs with the load
	// in Read).
	r.buf.StoreInt32(index+RecordLengthOffset, recordLength)
	return nil
}

// claim reserves required bytes (already aligned) and returns the index of
// the reserved record in the data area. When the record does not fit
// before the end of the data area it goes to index 0 and the end is filled
// with a padding record; when it fits neither there nor at the start, only
// the padding is claimed and ErrInsufficientCapacity is returned (the next
// claim starts at index 0).
func (r *ManyToOne) claim(required int64) (int, error) {
	mask := r.capacity - 1

	// Acquire: pairs with the release store of the head cache by another
	// producer, which had loaded it from the consumer's head.
	head := r.buf.LoadInt64(r.headCache)
	for {
		// Acquire: pairs with other producers' compare-and-swap of the
		// tail. (Our own compare-and-swap below is what keeps claims
		// disjoint: it fails if anyone moved the tail since this load.)
		tail := r.buf.LoadInt64(r.tail)
		if tail&(RecordAlignment-1) != 0 {
			return 0, &CorruptError{Position: tail, Reason: "tail position is not record-aligned"}
		}

		if required > r.capacity-(tail-head) {
			// Acquire: pairs with the consumer's release store of head
			// after it zeroed the bytes it consumed, so any space seen as
			// free here is zeroed before we write to it.
			head = r.buf.LoadInt64(r.head)
			if required > r.capacity-(tail-head) {
				return 0, ErrInsufficientCapacity
			}
			// Release: share the fresher head with the other producers.
			r.buf.StoreInt64(r.headCache, head)
		}

		tailIndex := tail & mask
		toEnd := r.capacity - tailIndex
		writeIndex := tailIndex
		newTail := tail + required
		padding := int64(0)
		insufficient := false
		if required > toEnd {
			// The record goes at index 0, behind a padding record that
			// fills [tailIndex, capacity). It needs [0, required) free:
			// the consumer's head must already be past it.
			writeIndex = 0
			padding = toEnd
			if headIndex := head & mask; required > headIndex {
				head = r.buf.LoadInt64(r.head) // acquire, as above
				if required > head&mask {
					insufficient = true
					newTail = tail // claim only the padding
				}
				r.buf.StoreInt64(r.headCache, head) // release, as above
			}
			newTail += padding
		}

		// The compare-and-swap orders our claim with every other
		// producer's: whoever moves the tail from this value owns
		// [tail, newTail).
		if !r.buf.CompareAndSwapInt64(r.tail, tail, newTail) {
			continue
		}
		if padding != 0 {
			r.writePadding(int(tailIndex), int32(padding))
		}
		if insufficient {
			return 0, ErrInsufficientCapacity
		}
		return int(writeIndex), nil
	}
}

// writePadding publishes a padding record of length bytes at index, with
// the same negative-length-first protocol as a real record.
func (r *ManyToOne) writePadding(index int, length int32) {
	r.buf.SwapInt32(index+RecordLengthOffset, -length) // full barrier, see Write
	r.buf.PutInt32(index+TypeIDOffset, PaddingTypeID)
	r.buf.StoreInt32(index+RecordLengthOffset, length) // release: publishes the padding
}

// NextCorrelationID returns a ring-wide unique id: the correlation counter
// in the trailer, incremented atomically (get-and-add 1). Aeron takes the
// client id and every command's correlation id from it, so ids are unique
// across all clients of one driver.
func (r *ManyToOne) NextCorrelationID() int64 {
	// The add is atomic with respect to every other client's add, in any
	// process; that, not ordering, is what uniqueness needs.
	return r.buf.AddInt64(r.correlation, 1) - 1
}

// ConsumerHeartbeatTime returns the consumer's (driver's) last heartbeat in
// epoch milliseconds. 0 means the driver has not yet started its duty
// cycle; -1 means it has shut down.
func (r *ManyToOne) ConsumerHeartbeatTime() int64 {
	// Acquire: pairs with the driver's release store of each heartbeat.
	return r.buf.LoadInt64(r.heartbeat)
}
