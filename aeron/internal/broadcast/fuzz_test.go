package broadcast

import (
	"bytes"
	"errors"
	"testing"
)

const fuzzCapacity = 256

// FuzzReceive puts arbitrary bytes in a buffer's data area and arbitrary
// trailer counters, then receives. Properties: no panic; NewReceiver fails
// only with ErrCorrupt and Receive only with ErrLapped or ErrCorrupt;
// delivered messages have a valid type id and a payload within the
// maximum; a corrupt buffer keeps reporting the same error (the receiver
// does not move past it).
func FuzzReceive(f *testing.F) {
	// Seeds: a well-formed buffer image; one with a padding record at the
	// wrap; one lapped; malformed headers.
	good := newBuffer(fuzzCapacity)
	tx := newTransmitter(f, good)
	for i := range 6 {
		mustTransmit(f, tx, message{int32(i + 1), patterned(i, i*5)})
	}
	f.Add(bytes.Clone(good.Bytes()[:fuzzCapacity]), int64(0), int64(good.GetInt64(fuzzCapacity+TailCounterOffset)), int64(0))

	wrapped := newBuffer(fuzzCapacity)
	setTail(wrapped, fuzzCapacity, 240)
	mustTransmit(f, newTransmitter(f, wrapped), message{3, patterned(3, 20)})
	f.Add(bytes.Clone(wrapped.Bytes()[:fuzzCapacity]), int64(240), int64(284), int64(284))

	f.Add(bytes.Clone(good.Bytes()[:fuzzCapacity]), int64(0), int64(400), int64(1000))
	f.Add([]byte{3, 0, 0, 0, 1, 0, 0, 0}, int64(0), int64(8), int64(8))
	f.Add([]byte{16, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}, int64(0), int64(16), int64(16))

	f.Fuzz(func(t *testing.T, data []byte, latest, tail, intent int64) {
		buf := newBuffer(fuzzCapacity)
		copy(buf.Bytes()[:fuzzCapacity], data)
		buf.StoreInt64(fuzzCapacity+LatestCounterOffset, latest)
		buf.StoreInt64(fuzzCapacity+TailCounterOffset, tail)
		buf.StoreInt64(fuzzCapacity+TailIntentCounterOffset, intent)

		rx, err := NewReceiver(buf)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("NewReceiver: %v", err)
			}
			return
		}
		c := NewCopyReceiver(rx)
		for range 2 * fuzzCapacity / RecordAlignment {
			ok, err := c.Receive(func(typeID int32, payload []byte) {
				if typeID < 1 || len(payload) > rx.MaxPayloadLength() {
					t.Fatalf("delivered type %d with %d bytes", typeID, len(payload))
				}
			})
			switch {
			case errors.Is(err, ErrLapped):
			case errors.Is(err, ErrCorrupt):
				_, again := c.Receive(func(int32, []byte) {})
				if again == nil || again.Error() != err.Error() {
					t.Fatalf("corruption reported as %v, then %v", err, again)
				}
				return
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			case !ok:
				return
			}
		}
	})
}

// FuzzTransmitReceive transmits a fuzzed sequence of messages into a
// buffer starting at a fuzzed position (so records wrap with padding at
// arbitrary places), receiving after each, and checks that every message
// comes back exactly, with no lap.
func FuzzTransmitReceive(f *testing.F) {
	f.Add([]byte{1, 0, 2, 5, 3, 32, 4, 31}, uint16(0))
	f.Add([]byte{1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24, 1, 24}, uint16(29))
	f.Add([]byte{2, 32, 2, 32, 2, 32}, uint16(31))
	f.Add([]byte{7, 9, 8, 17, 9, 1}, uint16(1000))

	f.Fuzz(func(t *testing.T, script []byte, start uint16) {
		buf := newBuffer(fuzzCapacity)
		setTail(buf, fuzzCapacity, int64(start)*RecordAlignment)
		tx := newTransmitter(t, buf)
		c := NewCopyReceiver(newReceiver(t, buf))
		for i := 0; i+1 < len(script) && i < 400; i += 2 {
			m := message{int32(script[i]%100) + 1, patterned(i, int(script[i+1])%(tx.MaxPayloadLength()+1))}
			mustTransmit(t, tx, m)
			if got := receiveAll(t, c); !equalMessages(got, []message{m}) {
				t.Fatalf("message %d: received %v, want [%v]", i/2, got, m)
			}
		}
		if laps := c.Receiver().LappedCount(); laps != 0 {
			t.Fatalf("LappedCount = %d", laps)
		}
	})
}
