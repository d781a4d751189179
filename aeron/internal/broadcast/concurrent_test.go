package broadcast

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"
)

// A transmitter on another goroutine sends bursts while the receiver reads
// concurrently. Some bursts fit in the buffer, so a receiver that had
// caught up must get every message of them; others are several buffers
// long, so the transmitter overwrites records while the receiver copies
// them. Whatever the interleaving, every delivered message must be intact
// and newer than the previous one, and losses must surface as ErrLapped.
// Run with -race: receiver and transmitter touch the shared bytes only
// atomically.
func TestConcurrentTransmitterNeverDeliversTornMessages(t *testing.T) {
	const (
		capacity = 4096 // payloads up to 512 bytes: long copies, wide overwrite windows
		messages = 20000
	)
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))
	maxFiller := tx.MaxPayloadLength() - 8
	maxRecord := int(align(int64(HeaderLength+tx.MaxPayloadLength()), RecordAlignment))

	encode := func(seq int) []byte {
		p := make([]byte, 8+seq%(maxFiller+1))
		binary.LittleEndian.PutUint64(p, uint64(seq))
		copy(p[8:], patterned(seq, len(p)-8))
		return p
	}

	type burst struct{ first, last int }
	var fitting []burst              // written by the transmitter, read after burstDone closes
	burstDone := make(chan struct{}) // transmitter → receiver: a burst is complete
	caughtUp := make(chan struct{})  // receiver → transmitter: drained, send the next burst
	failed := make(chan error, 1)
	go func() {
		defer close(burstDone)
		sizes := []int{3, 50, 5, 80, 1, 30}
		for seq, b := 0, 0; seq < messages; b++ {
			first, bytesSent := seq, 0
			for range sizes[b%len(sizes)] {
				if seq == messages {
					break
				}
				p := encode(seq)
				if err := tx.Transmit(int32(seq%7+1), p); err != nil {
					failed <- err
					return
				}
				bytesSent += int(align(int64(HeaderLength+len(p)), RecordAlignment))
				seq++
			}
			// Room for a padding record too: the burst cannot lap a
			// receiver that was caught up when it started.
			if bytesSent+maxRecord <= capacity {
				fitting = append(fitting, burst{first, seq - 1})
			}
			burstDone <- struct{}{}
			<-caughtUp
		}
	}()

	delivered := make([]bool, messages)
	last, laps := -1, 0
	handle := func(typeID int32, payload []byte) {
		if len(payload) < 8 {
			t.Fatalf("short payload % x", payload)
		}
		seq := int(binary.LittleEndian.Uint64(payload))
		if seq <= last || seq >= messages {
			t.Fatalf("seq %d after %d", seq, last)
		}
		if typeID != int32(seq%7+1) || !bytes.Equal(payload, encode(seq)) {
			t.Fatalf("seq %d delivered torn: type %d, payload % x", seq, typeID, payload)
		}
		last = seq
		delivered[seq] = true
	}
	receive := func() bool {
		ok, err := c.Receive(handle)
		switch {
		case errors.Is(err, ErrLapped):
			laps++
			return true
		case err != nil:
			t.Fatal(err)
		}
		return ok
	}

	for {
		if receive() {
			continue
		}
		select {
		case err := <-failed:
			t.Fatal(err)
		case _, open := <-burstDone:
			if !open {
				select {
				case err := <-failed:
					t.Fatal(err)
				default:
				}
				for _, b := range fitting {
					for seq := b.first; seq <= b.last; seq++ {
						if !delivered[seq] {
							t.Fatalf("seq %d of a burst that fits the buffer was lost", seq)
						}
					}
				}
				t.Logf("%d laps reported; %d bursts fitted the buffer and arrived whole", laps, len(fitting))
				return
			}
			for receive() {
			}
			caughtUp <- struct{}{}
		default:
			runtime.Gosched()
		}
	}
}
