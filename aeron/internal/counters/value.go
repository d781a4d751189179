package counters

import (
	"encoding/binary"
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Value is one counter's value slot, kept by the code that reads it on a hot path (a
// publication reading its limit) or owns its writes (a client refreshing its heartbeat, a
// subscriber storing its position), so that neither pays a metadata lookup per access.
//
// It does not follow the counter's life: if the driver frees the counter, the slot may be
// given to another one. Owners must stop writing once they learn their counter is gone.
// A Value is safe for concurrent use.
type Value struct {
	id   CounterID
	word shm.Int64Word // the value in the counter's values record
}

// Value returns the value slot of counter id.
func (r *Reader) Value(id CounterID) (Value, error) {
	if id < 0 || int(id) >= r.count {
		return Value{}, fmt.Errorf("%w: id %d, buffers hold ids 0..%d", ErrCounterIDOutOfRange, id, r.count-1)
	}
	return Value{id: id, word: r.values.Sub(int(id)*ValueLength, ValueLength).Int64Word(ValueOffset)}, nil
}

// ID is the counter's id.
func (v Value) ID() CounterID { return v.id }

// Load reads the value with an atomic load: it observes the writer's last release store
// and everything the writer wrote before it.
func (v Value) Load() int64 { return v.word.Load() }

// Store writes the value with a release store: everything this goroutine wrote or read
// before it happens-before a reader's Load that observes it (Agrona's setOrdered/
// setRelease). It does not order this goroutine's later loads after it.
func (v Value) Store(x int64) { v.word.StoreRelease(x) }

// HeartbeatClientID returns the client id in the key of a client-heartbeat counter
// ([TypeClientHeartbeat]), or false if the key is too short to hold one.
func HeartbeatClientID(key []byte) (int64, bool) {
	if len(key) < HeartbeatKeyClientIDOffset+sizeofInt64 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(key[HeartbeatKeyClientIDOffset:])), true
}
