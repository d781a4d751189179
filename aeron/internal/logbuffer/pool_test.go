package logbuffer

import (
	"bytes"
	"testing"
)

// Every size maps to a class that holds it and wastes at most a quarter; each class's size
// maps back to the class.
func TestBufferPoolClasses(t *testing.T) {
	check := func(n int) {
		c := classOf(n)
		size := classSize(c)
		if c < 0 || c >= classCount {
			t.Fatalf("class of %d bytes is %d, outside [0, %d)", n, c, classCount)
		}
		if size < n || (n > minPooled && 4*size > 5*n+4) {
			t.Fatalf("%d bytes go to class %d of %d bytes: want at least %d and at most a quarter more", n, c, size, n)
		}
		if c > 0 && classSize(c-1) >= n {
			t.Fatalf("%d bytes go to class %d (%d bytes), but class %d (%d bytes) holds them", n, c, size, c-1, classSize(c-1))
		}
	}
	for n := 1; n <= 1<<16; n++ {
		check(n)
	}
	for n := 1 << 16; n <= maxPooled; n += 4093 {
		check(n)
	}
	check(maxPooled)
	for c := range classCount {
		if got := classOf(classSize(c)); got != c {
			t.Fatalf("class %d's size %d maps to class %d", c, classSize(c), got)
		}
	}
	if classSize(classCount-1) != maxPooled {
		t.Fatalf("largest class %d bytes, want %d", classSize(classCount-1), maxPooled)
	}
}

func TestBufferPoolGetAndPut(t *testing.T) {
	p := &BufferPool{Scribble: true}
	b := p.Get(1000)
	if len(b) != 0 || cap(b) < 1000 || cap(b) > 1250 {
		t.Fatalf("Get(1000): len %d cap %d, want empty with room for 1000 to 1250", len(b), cap(b))
	}
	b = append(b, bytes.Repeat([]byte{'m'}, 1000)...)
	kept := b[:10]
	p.Put(b)
	// A reader still holding the buffer sees the scribble, not the message.
	if !bytes.Equal(kept, bytes.Repeat([]byte{0xA5}, 10)) {
		t.Fatalf("after Put a reader sees %q, want the scribble", kept)
	}
	// Buffers the pool did not size are left alone.
	foreign := make([]byte, 1000)
	p.Put(foreign)
	p.Put(foreign[:10:999])
	if !bytes.Equal(foreign, make([]byte, 1000)) {
		t.Fatal("Put scribbled over a buffer whose capacity is not a class's")
	}
	var nilPool *BufferPool
	nilPool.Put(b) // no pool: nothing to do
	if big := p.Get(maxPooled + 1); cap(big) != maxPooled+1 {
		t.Fatalf("Get beyond the largest class: cap %d", cap(big))
	}
}

// With a pool, a handler that holds every detached buffer a while and then gives it back
// gets every message intact, of every size and fragmentation: the assembler reuses only
// buffers given back (scribbled on when they are), never one the handler still holds.
func TestAssemblerWithAPoolKeepsMessagesIntact(t *testing.T) {
	pool := &BufferPool{Scribble: true}
	lengths := []int{0, 1, 100, 1376, 1377, 5000, carveMax + 1, 64, 3 * 1376, 200000, 7}
	var want, held [][]byte
	var a *FragmentAssembler
	a = NewFragmentAssembler(1<<20, func(payload []byte, h Header) {
		held = append(held, a.Detach())
		for i, b := range held {
			if k := len(want) - len(held) + i; !bytes.Equal(b, want[k]) {
				t.Fatalf("message %d (%d bytes), held, now has %d different bytes", k, len(want[k]), len(b))
			}
		}
		if len(held) > 8 {
			pool.Put(held[0])
			held = held[1:]
		}
	})
	a.UsePool(pool)
	for i := range 500 {
		msg := make([]byte, lengths[i%len(lengths)])
		for j := range msg {
			msg[j] = byte(i*31 + j)
		}
		want = append(want, msg)
		feed(a, split(1, int32(i), 0, 1376, string(msg)))
	}
	if a.Stats().Delivered != uint64(len(want)) {
		t.Fatalf("%d messages delivered, want %d", a.Stats().Delivered, len(want))
	}
}

// Reassembled messages of any length go back to the pool and are reused: a handler that gives
// every buffer back costs no allocation per message.
func TestAssemblerRecyclesReassembledBuffersThroughAPool(t *testing.T) {
	pool := &BufferPool{}
	msg := string(bytes.Repeat([]byte{'m'}, 5000)) // four fragments; not a class's size
	termID := int32(0)
	var a *FragmentAssembler
	a = NewFragmentAssembler(1<<20, func([]byte, Header) { pool.Put(a.Detach()) })
	a.UsePool(pool)
	frags := func() []fragment { termID++; return split(1, termID, 0, 1376, msg) }
	batch := make([][]fragment, 101)
	for i := range batch {
		batch[i] = frags()
	}
	feed(a, batch[0])
	i := 1
	// Under -race, sync.Pool drops a quarter of what it is given on purpose.
	allocs := testing.AllocsPerRun(len(batch)-2, func() { feed(a, batch[i]); i++ })
	if allocs >= 0.5 {
		t.Errorf("%.2f allocations per reassembled 5000-byte message, want buffers reused", allocs)
	}
}
