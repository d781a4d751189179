package counters

import (
	"fmt"
	"iter"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Reader reads the counters of one media driver. It holds no mutable state,
// so it is safe for concurrent use; the counters themselves change under it
// (see [Counter]).
type Reader struct {
	metadata shm.Buffer
	values   shm.Buffer
	count    int // counter records present in both buffers
}

// NewReader reads counters from a metadata and a values buffer, both 8-byte
// aligned (else an error wrapping [ErrInvalidBuffer]). The number of
// counters is what both buffers have room for; in a CnC file the metadata
// buffer is four times the values buffer, so both agree.
func NewReader(metadata, values shm.Buffer) (*Reader, error) {
	if err := metadata.CheckAlignment(sizeofInt64); err != nil {
		return nil, fmt.Errorf("%w: metadata: %w", ErrInvalidBuffer, err)
	}
	if err := values.CheckAlignment(sizeofInt64); err != nil {
		return nil, fmt.Errorf("%w: values: %w", ErrInvalidBuffer, err)
	}
	return &Reader{
		metadata: metadata,
		values:   values,
		count:    min(metadata.Len()/MetadataLength, values.Len()/ValueLength),
	}, nil
}

// MaxCounterID returns the largest counter id the buffers hold, or
// [NullCounterID] if they hold none.
func (r *Reader) MaxCounterID() CounterID { return CounterID(r.count - 1) }

// Counter returns the counter with the given id, whatever its state, or an
// error wrapping [ErrCounterIDOutOfRange]. Use it for ids received from
// the driver.
func (r *Reader) Counter(id CounterID) (Counter, error) {
	if id < 0 || int(id) >= r.count {
		return Counter{}, fmt.Errorf("%w: id %d, buffers hold ids 0..%d", ErrCounterIDOutOfRange, id, r.count-1)
	}
	return r.counter(id), nil
}

// counter returns the counter for an id already known to be in range.
func (r *Reader) counter(id CounterID) Counter {
	return Counter{
		id:       id,
		metadata: r.metadata.Sub(int(id)*MetadataLength, MetadataLength),
		value:    r.values.Sub(int(id)*ValueLength, ValueLength),
	}
}

// Allocated yields the allocated counters in ascending id order, stopping
// at the first never-used record (the driver allocates ids in order) and
// skipping reclaimed ones, as Agrona's CountersReader.forEach does. Each
// counter's state is read once, when it is reached.
func (r *Reader) Allocated() iter.Seq[Counter] {
	return func(yield func(Counter) bool) {
		for id := range CounterID(r.count) {
			c := r.counter(id)
			switch c.State() {
			case StateUnused:
				return
			case StateAllocated:
				if !yield(c) {
					return
				}
			}
		}
	}
}

// Find returns the allocated counter with the lowest id whose type id is
// typeID and whose key satisfies match, and whether there is one. match
// receives the key in shared memory (MaxKeyLength bytes) and must not keep
// it.
func (r *Reader) Find(typeID TypeID, match func(key []byte) bool) (Counter, bool) {
	for c := range r.Allocated() {
		if c.TypeID() == typeID && match(c.key()) {
			return c, true
		}
	}
	return Counter{}, false
}
