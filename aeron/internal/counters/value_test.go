package counters

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

func TestValueStoresAreSeenThroughTheReader(t *testing.T) {
	const count = 4
	r, err := NewReader(shm.Alloc(count*MetadataLength), shm.Alloc(count*ValueLength))
	if err != nil {
		t.Fatal(err)
	}
	v, err := r.Value(2)
	if err != nil {
		t.Fatal(err)
	}
	v.Store(1234)
	c, _ := r.Counter(2)
	if got := c.Value(); got != 1234 {
		t.Errorf("counter 2 value = %d after Store(1234)", got)
	}
	if other, _ := r.Counter(1); other.Value() != 0 {
		t.Errorf("Store on counter 2 wrote counter 1: %d", other.Value())
	}
	if got := v.Load(); got != 1234 || v.ID() != 2 {
		t.Errorf("Load = %d, ID = %d", got, v.ID())
	}
	for _, id := range []CounterID{-1, count} {
		if _, err := r.Value(id); !errors.Is(err, ErrCounterIDOutOfRange) {
			t.Errorf("Value(%d) error = %v, want ErrCounterIDOutOfRange", id, err)
		}
	}
}

func TestHeartbeatClientID(t *testing.T) {
	key := binary.LittleEndian.AppendUint64(nil, 77)
	if id, ok := HeartbeatClientID(key); !ok || id != 77 {
		t.Errorf("HeartbeatClientID = %d, %v; want 77, true", id, ok)
	}
	if _, ok := HeartbeatClientID(key[:7]); ok {
		t.Error("HeartbeatClientID accepted a 7-byte key")
	}
}
