package ringbuffer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Several producers write concurrently into a small ring (so it wraps and
// fills many times) while one consumer reads. Every record must arrive
// exactly once, intact, and in each producer's order. Run with -race: the
// atomics in claim/commit/read are what make the plain payload accesses
// race-free.
func TestConcurrentWritersOneReader(t *testing.T) {
	const (
		writers   = 4
		perWriter = 1500
		capacity  = 512
	)
	r := newRing(t, capacity)
	maxFiller := r.MaxPayloadLength() - 8

	encode := func(writer, seq int) []byte {
		p := make([]byte, 8+seq%(maxFiller+1))
		binary.LittleEndian.PutUint32(p[0:], uint32(writer))
		binary.LittleEndian.PutUint32(p[4:], uint32(seq))
		copy(p[8:], patterned(writer*perWriter+seq, len(p)-8))
		return p
	}

	var wg sync.WaitGroup
	errs := make(chan error, writers)
	stop := make(chan struct{}) // closed (once) to make blocked writers give up
	for w := range writers {
		wg.Go(func() {
			for seq := 0; seq < perWriter; {
				err := r.Write(int32(w+1), encode(w, seq))
				switch {
				case err == nil:
					seq++
				case errors.Is(err, ErrInsufficientCapacity):
					select {
					case <-stop:
						return
					default:
						runtime.Gosched()
					}
				default:
					errs <- err
					return
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	stopWriters := sync.OnceFunc(func() { close(stop) })
	t.Cleanup(func() { stopWriters(); <-done }) // also when a check below fails

	// A claimed record that is never published (or a padding record never
	// written) stalls the consumer while producers wait for space: fail
	// fast instead of hanging until the test timeout.
	const stallLimit = 10 * time.Second
	lastHead, lastProgress := r.buf.LoadInt64(r.head), time.Now()
	watchdog := func() {
		if head := r.buf.LoadInt64(r.head); head != lastHead {
			lastHead, lastProgress = head, time.Now()
			return
		}
		if time.Since(lastProgress) > stallLimit {
			stopWriters()
			<-done
			head, headCache, tail := positions(r)
			index := int(head & (capacity - 1))
			t.Fatalf("ring stalled for %v: head %d, head cache %d, tail %d; header at head: length %d, type %d",
				stallLimit, head, headCache, tail, r.buf.GetInt32(index+RecordLengthOffset), r.buf.GetInt32(index+TypeIDOffset))
		}
	}

	next := make([]int, writers)
	received := 0
	check := func(typeID int32, payload []byte) {
		if len(payload) < 8 {
			t.Fatalf("short payload % x", payload)
		}
		w := int(binary.LittleEndian.Uint32(payload[0:]))
		seq := int(binary.LittleEndian.Uint32(payload[4:]))
		if w >= writers || int32(w+1) != typeID {
			t.Fatalf("record from writer %d has type %d", w, typeID)
		}
		if seq != next[w] {
			t.Fatalf("writer %d: got seq %d, want %d", w, seq, next[w])
		}
		if !bytes.Equal(payload, encode(w, seq)) {
			t.Fatalf("writer %d seq %d: payload corrupted", w, seq)
		}
		next[w]++
		received++
	}
	readAll := func() {
		for {
			before := r.buf.LoadInt64(r.head)
			if _, err := r.Read(math.MaxInt, check); err != nil {
				t.Fatal(err)
			}
			if r.buf.LoadInt64(r.head) == before {
				return
			}
		}
	}
	for writing := true; writing; {
		readAll()
		select {
		case err := <-errs:
			t.Fatal(err)
		case <-done:
			readAll() // every Write has returned: the rest is in the ring
			writing = false
		default:
			watchdog()
			runtime.Gosched()
		}
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if received != writers*perWriter {
		t.Fatalf("received %d records, want %d (per writer %v)", received, writers*perWriter, next)
	}
}

// Correlation ids are unique across concurrent callers.
func TestNextCorrelationIDIsUniqueAcrossGoroutines(t *testing.T) {
	const (
		goroutines = 4
		perG       = 1000
	)
	r := newRing(t, 64)
	ids := make([][]int64, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range perG {
				ids[g] = append(ids[g], r.NextCorrelationID())
			}
		})
	}
	wg.Wait()
	seen := make(map[int64]bool, goroutines*perG)
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("correlation id %d handed out twice", id)
			}
			seen[id] = true
		}
	}
	for id := range int64(goroutines * perG) {
		if !seen[id] {
			t.Fatalf("correlation id %d skipped", id)
		}
	}
}
