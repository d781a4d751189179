package counters

import (
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// fakeDriver writes counters the way the media driver's CountersManager
// does, into buffers in ordinary memory: type id, deadline, key and label
// first, the label length with a release store, and the ALLOCATED state
// last with a release store.
type fakeDriver struct {
	metadata, values shm.Buffer
}

func newFakeDriver(counters int) *fakeDriver {
	return &fakeDriver{
		metadata: shm.Alloc(counters * MetadataLength),
		values:   shm.Alloc(counters * ValueLength),
	}
}

func (d *fakeDriver) reader(tb testing.TB) *Reader {
	tb.Helper()
	r, err := NewReader(d.metadata, d.values)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

func (d *fakeDriver) allocate(id CounterID, typeID TypeID, key []byte, label string) {
	m := d.metadata.Sub(int(id)*MetadataLength, MetadataLength)
	m.PutInt32(TypeIDOffset, int32(typeID))
	m.PutInt64(FreeForReuseDeadlineOffset, NotFreeToReuse)
	copy(m.Sub(KeyOffset, MaxKeyLength).Bytes(), key)
	copy(m.Sub(LabelOffset, MaxLabelLength).Bytes(), label)
	m.StoreInt32(LabelLengthOffset, int32(min(len(label), MaxLabelLength)))
	m.StoreInt32(StateOffset, int32(StateAllocated))
}

func (d *fakeDriver) free(id CounterID, deadline int64) {
	m := d.metadata.Sub(int(id)*MetadataLength, MetadataLength)
	m.StoreInt32(StateOffset, int32(StateReclaimed))
	clear(m.Sub(KeyOffset, MaxKeyLength).Bytes())
	m.PutInt64(FreeForReuseDeadlineOffset, deadline)
}

func (d *fakeDriver) setValue(id CounterID, value int64) {
	d.values.StoreInt64(int(id)*ValueLength+ValueOffset, value)
}

func (d *fakeDriver) allocateRecordingPos(id CounterID, k RecordingPosKey) {
	d.allocate(id, TypeRecordingPosition, k.Append(nil), "rec-pos: test")
}
