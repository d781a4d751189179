package ringbuffer

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

type record struct {
	typeID  int32
	payload []byte
}

func (r record) String() string { return fmt.Sprintf("{type %d, % x}", r.typeID, r.payload) }

func equalRecords(a, b []record) bool {
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

// newRing builds a ring of the given capacity in ordinary memory.
func newRing(tb testing.TB, capacity int) *ManyToOne {
	tb.Helper()
	r, err := New(shm.Alloc(capacity + TrailerLength))
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// setPositions places an empty ring at an arbitrary position, as if
// position bytes had already gone through it.
func setPositions(r *ManyToOne, head, tail int64) {
	r.buf.StoreInt64(r.head, head)
	r.buf.StoreInt64(r.headCache, head)
	r.buf.StoreInt64(r.tail, tail)
}

func positions(r *ManyToOne) (head, headCache, tail int64) {
	return r.buf.LoadInt64(r.head), r.buf.LoadInt64(r.headCache), r.buf.LoadInt64(r.tail)
}

// drain reads until the head stops moving (Read stops at the wrap, so one
// call may consume only padding) and returns copies of the records.
func drain(tb testing.TB, r *ManyToOne) []record {
	tb.Helper()
	const maxReads = 1 << 20 // far more than any test writes; a bound turns a livelock into a failure
	var got []record
	for range maxReads {
		before := r.buf.LoadInt64(r.head)
		if _, err := r.Read(math.MaxInt, func(typeID int32, payload []byte) {
			got = append(got, record{typeID, bytes.Clone(payload)})
		}); err != nil {
			tb.Fatalf("Read: %v", err)
		}
		if r.buf.LoadInt64(r.head) == before {
			return got
		}
	}
	tb.Fatalf("ring not drained after %d reads", maxReads)
	return nil
}

// patterned returns n bytes derived from seed, so that corruption of any
// byte is detectable.
func patterned(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*31 + i*7 + 1)
	}
	return b
}
