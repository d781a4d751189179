package ringbuffer

import (
	"errors"
	"math"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

func TestNewRejectsInvalidBuffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  shm.Buffer
	}{
		{"trailer only", shm.Alloc(TrailerLength)},
		{"shorter than trailer", shm.Alloc(TrailerLength - 8)},
		{"capacity below minimum", shm.Alloc(TrailerLength + 4)},
		{"capacity not a power of two", shm.Alloc(TrailerLength + 96)},
		{"misaligned", shm.Wrap(shm.Alloc(TrailerLength + 64 + 4).Bytes()[4:])},
	} {
		if _, err := New(tc.buf); !errors.Is(err, ErrInvalidBuffer) {
			t.Errorf("%s: err = %v, want ErrInvalidBuffer", tc.name, err)
		}
	}
	r, err := New(shm.Alloc(TrailerLength + 64))
	if err != nil {
		t.Fatal(err)
	}
	if r.Capacity() != 64 {
		t.Fatalf("Capacity = %d, want 64", r.Capacity())
	}
}

func TestWriteThenReadRoundTrip(t *testing.T) {
	r := newRing(t, 4096)
	var want []record
	for i := range 20 {
		rec := record{typeID: int32(i%3 + 1), payload: patterned(i, i*5%(r.MaxPayloadLength()+1))}
		if err := r.Write(rec.typeID, rec.payload); err != nil {
			t.Fatalf("Write #%d: %v", i, err)
		}
		want = append(want, rec)
	}
	got := drain(t, r)
	if !equalRecords(got, want) {
		t.Fatalf("read %v\nwant %v", got, want)
	}
}

func TestWriteLaysOutTheRecordAsAgronaDoes(t *testing.T) {
	r := newRing(t, 64)
	if err := r.Write(7, []byte{0xA1, 0xA2, 0xA3}); err != nil {
		t.Fatal(err)
	}
	b := r.buf
	if got := b.GetInt32(RecordLengthOffset); got != HeaderLength+3 {
		t.Errorf("record length = %d, want %d (header + unaligned payload)", got, HeaderLength+3)
	}
	if got := b.GetInt32(TypeIDOffset); got != 7 {
		t.Errorf("type id = %d, want 7", got)
	}
	if got := b.Bytes()[HeaderLength : HeaderLength+3]; string(got) != "\xA1\xA2\xA3" {
		t.Errorf("payload = % x", got)
	}
	if _, _, tail := positions(r); tail != 16 {
		t.Errorf("tail = %d, want 16 (record aligned to %d)", tail, RecordAlignment)
	}
	if err := r.Write(8, nil); err != nil {
		t.Fatal(err)
	}
	if got := b.GetInt32(16 + RecordLengthOffset); got != HeaderLength {
		t.Errorf("empty record length = %d, want %d", got, HeaderLength)
	}
}

func TestWriteRejectsBadArguments(t *testing.T) {
	r := newRing(t, 128)
	for _, typeID := range []int32{0, PaddingTypeID, math.MinInt32} {
		if err := r.Write(typeID, nil); !errors.Is(err, ErrInvalidTypeID) {
			t.Errorf("type %d: err = %v, want ErrInvalidTypeID", typeID, err)
		}
	}
	if err := r.Write(1, make([]byte, r.MaxPayloadLength()+1)); !errors.Is(err, ErrMessageTooLong) {
		t.Errorf("oversized payload: err = %v, want ErrMessageTooLong", err)
	}
	if err := r.Write(1, make([]byte, r.MaxPayloadLength())); err != nil {
		t.Errorf("maximum payload: %v", err)
	}
	if _, _, tail := positions(r); tail != int64(HeaderLength+r.MaxPayloadLength()) {
		t.Errorf("tail = %d: rejected writes must not claim space", tail)
	}
}

func TestWriteReportsInsufficientCapacityAndRecovers(t *testing.T) {
	r := newRing(t, 64)
	payload := make([]byte, 8) // 16-byte records: four fill the ring
	for i := range 4 {
		if err := r.Write(1, payload); err != nil {
			t.Fatalf("Write #%d: %v", i, err)
		}
	}
	if err := r.Write(1, payload); !errors.Is(err, ErrInsufficientCapacity) {
		t.Fatalf("Write to a full ring: err = %v, want ErrInsufficientCapacity", err)
	}
	if _, _, tail := positions(r); tail != 64 {
		t.Fatalf("tail = %d after a failed write, want 64", tail)
	}
	if n := len(drain(t, r)); n != 4 {
		t.Fatalf("drained %d records, want 4", n)
	}
	if err := r.Write(1, payload); err != nil {
		t.Fatalf("Write after drain: %v", err)
	}
	// The failed claim had to reload the real head; it did not cache it
	// then (the ring was full), but the successful one refreshed the cache.
	if head, headCache, _ := positions(r); headCache != head {
		t.Errorf("head cache = %d, head = %d: producer did not refresh the cache", headCache, head)
	}
}

// A record that does not fit before the end goes to index 0 behind a
// padding record; the reader skips the padding.
//
//	capacity 128, head = tail = 112, record of 24 bytes:
//	before: [0 ................................ 112 free ... 128)
//	after:  [record(24) | free ............ | 112 padding(16) | 128)
func TestWriteWrapsWithPadding(t *testing.T) {
	r := newRing(t, 128)
	setPositions(r, 112, 112)
	payload := patterned(1, 16) // record 24 bytes > 16 to the end
	if err := r.Write(5, payload); err != nil {
		t.Fatal(err)
	}
	b := r.buf
	if got := b.GetInt32(112 + RecordLengthOffset); got != 16 {
		t.Errorf("padding length = %d, want 16", got)
	}
	if got := b.GetInt32(112 + TypeIDOffset); got != PaddingTypeID {
		t.Errorf("padding type = %d, want %d", got, PaddingTypeID)
	}
	if got := b.GetInt32(RecordLengthOffset); got != 24 {
		t.Errorf("record at index 0: length = %d, want 24", got)
	}
	if _, _, tail := positions(r); tail != 112+16+24 {
		t.Errorf("tail = %d, want %d", tail, 112+16+24)
	}
	got := drain(t, r)
	want := []record{{5, payload}}
	if !equalRecords(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	if head, _, _ := positions(r); head != 112+16+24 {
		t.Errorf("head = %d after draining, want %d", head, 112+16+24)
	}
	for i, c := range b.Bytes()[:128] {
		if c != 0 {
			t.Fatalf("data byte %d = %#x after draining, want zeroed", i, c)
		}
	}
}

// When the record fits neither before the end nor before the head at the
// start, only the padding is claimed and the write fails; the next write
// starts at index 0.
//
//	capacity 128, head = 16, tail = 120: 24 bytes free, 8 of them at the
//	end and 16 at the start; the record needs 24 contiguous bytes.
func TestWritePadsThenFailsWhenTheStartIsNotFree(t *testing.T) {
	r := newRing(t, 128)
	setPositions(r, 16, 120)
	r.buf.StoreInt64(r.headCache, 8) // stale: the producer must reload the head
	if err := r.Write(1, make([]byte, 16)); !errors.Is(err, ErrInsufficientCapacity) {
		t.Fatalf("err = %v, want ErrInsufficientCapacity", err)
	}
	head, headCache, tail := positions(r)
	if tail != 128 {
		t.Errorf("tail = %d, want 128 (padding claimed)", tail)
	}
	if head != 16 || headCache != 16 {
		t.Errorf("head = %d, head cache = %d; want both 16 (cache refreshed from the head)", head, headCache)
	}
	if got := r.buf.GetInt32(120 + RecordLengthOffset); got != 8 {
		t.Errorf("padding length = %d, want 8", got)
	}
	if got := r.buf.GetInt32(120 + TypeIDOffset); got != PaddingTypeID {
		t.Errorf("padding type = %d, want %d", got, PaddingTypeID)
	}
}

// A stale head cache must not fail a wrapping write: the producer reloads
// the real head before giving up, and caches it for the others.
//
//	capacity 128, tail = 120, cached head = 16, real head = 40: the record
//	(24 bytes) does not fit in the 8 bytes to the end, nor below the cached
//	head index, but does fit below the real one.
func TestWrapReloadsAStaleHeadCache(t *testing.T) {
	r := newRing(t, 128)
	setPositions(r, 40, 120)
	r.buf.StoreInt64(r.headCache, 16)
	if err := r.Write(1, make([]byte, 16)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	head, headCache, tail := positions(r)
	if headCache != head {
		t.Errorf("head cache = %d, want the reloaded head %d", headCache, head)
	}
	if tail != 120+8+24 {
		t.Errorf("tail = %d, want %d (padding 8 + record 24)", tail, 120+8+24)
	}
}

func TestWriteRejectsAMisalignedTail(t *testing.T) {
	r := newRing(t, 64)
	setPositions(r, 0, 4)
	err := r.Write(1, nil)
	var corrupt *CorruptError
	if !errors.As(err, &corrupt) || !errors.Is(err, ErrCorrupt) || corrupt.Position != 4 {
		t.Fatalf("err = %v, want *CorruptError at position 4", err)
	}
}

func TestNextCorrelationIDIsGetAndAdd(t *testing.T) {
	r := newRing(t, 64)
	r.buf.StoreInt64(r.correlation, 1000)
	for want := int64(1000); want < 1003; want++ {
		if got := r.NextCorrelationID(); got != want {
			t.Fatalf("NextCorrelationID = %d, want %d", got, want)
		}
	}
	if got := r.buf.GetInt64(64 + CorrelationCounterOffset); got != 1003 {
		t.Fatalf("counter in trailer = %d, want 1003", got)
	}
}

func TestConsumerHeartbeatTimeReadsTheTrailerSlot(t *testing.T) {
	r := newRing(t, 64)
	if got := r.ConsumerHeartbeatTime(); got != 0 {
		t.Fatalf("fresh ring heartbeat = %d", got)
	}
	r.buf.PutInt64(64+ConsumerHeartbeatOffset, 1_700_000_000_123)
	if got := r.ConsumerHeartbeatTime(); got != 1_700_000_000_123 {
		t.Fatalf("ConsumerHeartbeatTime = %d", got)
	}
	r.SetConsumerHeartbeatTime(-1)
	if got := r.buf.GetInt64(64 + ConsumerHeartbeatOffset); got != -1 {
		t.Fatalf("SetConsumerHeartbeatTime wrote %d to the slot", got)
	}
}

func TestReadStopsAtUnpublishedRecords(t *testing.T) {
	r := newRing(t, 64)
	if err := r.Write(1, []byte{1}); err != nil {
		t.Fatal(err)
	}
	// A second producer has claimed [16, 32) and not yet published.
	r.buf.StoreInt32(16+RecordLengthOffset, -16)
	r.buf.StoreInt64(r.tail, 32)
	n, err := r.Read(math.MaxInt, func(int32, []byte) {})
	if err != nil || n != 1 {
		t.Fatalf("Read = %d, %v; want 1 record", n, err)
	}
	if head, _, _ := positions(r); head != 16 {
		t.Fatalf("head = %d, want 16: an unpublished record was consumed", head)
	}
	if got := r.buf.GetInt32(16 + RecordLengthOffset); got != -16 {
		t.Fatalf("unpublished header was zeroed: %d", got)
	}
}

func TestReadHonoursLimit(t *testing.T) {
	r := newRing(t, 128)
	for i := range 3 {
		if err := r.Write(int32(i+1), nil); err != nil {
			t.Fatal(err)
		}
	}
	var types []int32
	n, err := r.Read(2, func(typeID int32, _ []byte) { types = append(types, typeID) })
	if err != nil || n != 2 || len(types) != 2 || types[0] != 1 || types[1] != 2 {
		t.Fatalf("Read(2) = %d, %v, types %v", n, err, types)
	}
	if head, _, _ := positions(r); head != 2*HeaderLength {
		t.Fatalf("head = %d, want %d", head, 2*HeaderLength)
	}
	if n, _ := r.Read(0, func(int32, []byte) { t.Error("handler called with limit 0") }); n != 0 {
		t.Fatalf("Read(0) = %d", n)
	}
}

func TestReadReportsCorruptRecordsAfterDeliveringGoodOnes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length int32
	}{
		{"length shorter than header", 4},
		{"length past the wrap", 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRing(t, 64)
			if err := r.Write(1, []byte{1}); err != nil {
				t.Fatal(err)
			}
			r.buf.StoreInt32(16+RecordLengthOffset, tc.length)
			var delivered int
			n, err := r.Read(math.MaxInt, func(int32, []byte) { delivered++ })
			var corrupt *CorruptError
			if !errors.As(err, &corrupt) || corrupt.Position != 16 {
				t.Fatalf("err = %v, want *CorruptError at 16", err)
			}
			if n != 1 || delivered != 1 {
				t.Fatalf("delivered %d (returned %d), want the good record first", delivered, n)
			}
			if head, _, _ := positions(r); head != 16 {
				t.Fatalf("head = %d, want 16 (good record consumed, bad one not)", head)
			}
		})
	}
	r := newRing(t, 64)
	setPositions(r, 12, 12)
	if _, err := r.Read(1, func(int32, []byte) {}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("misaligned head: err = %v, want ErrCorrupt", err)
	}
}
