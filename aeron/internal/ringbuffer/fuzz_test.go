package ringbuffer

import (
	"bytes"
	"errors"
	"math"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

const fuzzCapacity = 256

// FuzzRead puts arbitrary bytes in a ring's data area and an arbitrary
// head position, then reads like the driver. Properties: no panic; every
// error matches ErrCorrupt; the head only moves forward by whole records,
// never past the wrap; consumed bytes are zeroed; payloads lie inside the
// ring.
func FuzzRead(f *testing.F) {
	// Seeds: a well-formed ring image, a padding record at the wrap, a
	// negative (in-progress) length, a short length, a misaligned head.
	good := newRing(f, fuzzCapacity)
	for i := range 5 {
		if err := good.Write(int32(i+1), patterned(i, i*3)); err != nil {
			f.Fatal(err)
		}
	}
	f.Add(bytes.Clone(good.buf.Bytes()[:fuzzCapacity]), uint64(0))
	wrapped := newRing(f, fuzzCapacity)
	setPositions(wrapped, 240, 240)
	if err := wrapped.Write(3, patterned(9, 20)); err != nil {
		f.Fatal(err)
	}
	f.Add(bytes.Clone(wrapped.buf.Bytes()[:fuzzCapacity]), uint64(240))
	f.Add([]byte{0xF0, 0xFF, 0xFF, 0xFF, 1, 0, 0, 0}, uint64(0))
	f.Add([]byte{4, 0, 0, 0, 1, 0, 0, 0}, uint64(0))
	f.Add([]byte{16, 0, 0, 0, 1, 0, 0, 0}, uint64(3))

	f.Fuzz(func(t *testing.T, data []byte, head uint64) {
		r := newRing(t, fuzzCapacity)
		copy(r.buf.Bytes()[:fuzzCapacity], data)
		start := int64(head)
		setPositions(r, start, start)

		for range 3 {
			before := r.buf.LoadInt64(r.head)
			_, err := r.Read(math.MaxInt, func(typeID int32, payload []byte) {
				if len(payload) > fuzzCapacity-HeaderLength {
					t.Fatalf("payload of %d bytes in a %d-byte ring", len(payload), fuzzCapacity)
				}
			})
			after := r.buf.LoadInt64(r.head)
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			moved := after - before
			if moved < 0 || moved%RecordAlignment != 0 || moved > fuzzCapacity-(before&(fuzzCapacity-1)) {
				t.Fatalf("head moved from %d to %d", before, after)
			}
			for i := before; i < after; i++ {
				if c := r.buf.GetUint8(int(i & (fuzzCapacity - 1))); c != 0 {
					t.Fatalf("consumed byte at position %d = %#x, want zero", i, c)
				}
			}
			if err != nil || moved == 0 {
				return
			}
		}
	})
}

// FuzzWriteRead writes a fuzzed sequence of messages into a ring that
// starts at a fuzzed position (so writes wrap with padding at arbitrary
// places), draining whenever the ring is full, and checks that reading
// returns exactly the messages written, in order.
func FuzzWriteRead(f *testing.F) {
	f.Add([]byte{1, 0, 2, 5, 3, 32, 4, 31}, uint16(0))
	f.Add([]byte{1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24}, uint16(29))
	f.Add([]byte{2, 32, 2, 32, 2, 32}, uint16(31))
	f.Add([]byte{7, 9, 8, 17, 9, 1}, uint16(1000))

	f.Fuzz(func(t *testing.T, script []byte, start uint16) {
		r := newRing(t, fuzzCapacity)
		position := int64(start) * RecordAlignment
		setPositions(r, position, position)

		var want, got []record
		for i := 0; i+1 < len(script) && i < 400; i += 2 {
			rec := record{
				typeID:  int32(script[i]%100) + 1,
				payload: patterned(i, int(script[i+1])%(r.MaxPayloadLength()+1)),
			}
			err := r.Write(rec.typeID, rec.payload)
			if errors.Is(err, ErrInsufficientCapacity) {
				got = append(got, drain(t, r)...)
				err = r.Write(rec.typeID, rec.payload) // an empty ring always has room
			}
			if err != nil {
				t.Fatalf("Write(%v): %v", rec, err)
			}
			want = append(want, rec)
		}
		got = append(got, drain(t, r)...)
		if !equalRecords(got, want) {
			t.Fatalf("read %v\nwant %v", got, want)
		}
		if head, _, tail := positions(r); head != tail {
			t.Fatalf("drained ring has head %d, tail %d", head, tail)
		}
	})
}

// An empty ring of the fuzz capacity always has room for a maximal record,
// whatever its position: the property FuzzWriteRead relies on.
func TestEmptyRingAcceptsMaximalRecordAtAnyPosition(t *testing.T) {
	for position := int64(0); position < 2*fuzzCapacity; position += RecordAlignment {
		r, err := New(shm.Alloc(fuzzCapacity + TrailerLength))
		if err != nil {
			t.Fatal(err)
		}
		setPositions(r, position, position)
		if err := r.Write(1, make([]byte, r.MaxPayloadLength())); err != nil {
			t.Fatalf("position %d: %v", position, err)
		}
	}
}
