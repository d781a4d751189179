package broadcast

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

type message struct {
	typeID  int32
	payload []byte
}

func (m message) String() string { return fmt.Sprintf("{type %d, % x}", m.typeID, m.payload) }

func equalMessages(a, b []message) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].typeID != b[i].typeID || !bytes.Equal(a[i].payload, b[i].payload) {
			return false
		}
	}
	return true
}

func newBuffer(capacity int) shm.Buffer {
	return shm.Alloc(capacity + TrailerLength)
}

func newTransmitter(tb testing.TB, buf shm.Buffer) *Transmitter {
	tb.Helper()
	tx, err := NewTransmitter(buf)
	if err != nil {
		tb.Fatal(err)
	}
	return tx
}

func newReceiver(tb testing.TB, buf shm.Buffer) *Receiver {
	tb.Helper()
	rx, err := NewReceiver(buf)
	if err != nil {
		tb.Fatal(err)
	}
	return rx
}

// setTail places an empty buffer at position, as if that many bytes had
// been transmitted and received.
func setTail(buf shm.Buffer, capacity int, position int64) {
	buf.StoreInt64(capacity+TailIntentCounterOffset, position)
	buf.StoreInt64(capacity+TailCounterOffset, position)
	buf.StoreInt64(capacity+LatestCounterOffset, position)
}

func mustTransmit(tb testing.TB, tx *Transmitter, m message) {
	tb.Helper()
	if err := tx.Transmit(m.typeID, m.payload); err != nil {
		tb.Fatalf("Transmit(%v): %v", m, err)
	}
}

// receiveAll drains the copy receiver until it has nothing more, failing
// on any error.
func receiveAll(tb testing.TB, c *CopyReceiver) []message {
	tb.Helper()
	var got []message
	for {
		ok, err := c.Receive(func(typeID int32, payload []byte) {
			got = append(got, message{typeID, bytes.Clone(payload)})
		})
		if err != nil {
			tb.Fatalf("Receive: %v", err)
		}
		if !ok {
			return got
		}
	}
}

func patterned(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7 + 1)
	}
	return b
}
