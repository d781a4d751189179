package logbuffer

import (
	"bytes"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// A publisher goroutine and a subscriber goroutine share a log in plain
// memory, as a publication and an image share a mapped file. The
// subscriber plays the driver too: it cleans behind itself and moves the
// publication limit (a release store the publisher reads with an acquire
// load, like the pub-lmt counter). Run with -race, this checks that every
// byte the subscriber reads was published to it by the frame length.
func TestConcurrentPublisherAndSubscriber(t *testing.T) {
	const (
		count  = 4000
		window = testTermLength / 2
		seed   = 3
	)
	l := newTestLog(t, testParams())
	pub := newTestAppender(t, l)
	var limit atomic.Int64 // the publication-limit counter
	limit.Store(window)
	var stop atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- publish(pub, &limit, &stop, seed, count)
	}()
	t.Cleanup(func() {
		stop.Store(true)
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	rng := rand.New(rand.NewPCG(seed, seed))
	received := 0
	a := NewFragmentAssembler(l.MaxMessageLength(), func(payload []byte, h Header) {
		want := patterned(rng, received, messageSize(rng))
		if !bytes.Equal(payload, want) {
			t.Fatalf("message %d: %d bytes, want %d bytes %x…", received, len(payload), len(want), want[:min(8, len(want))])
		}
		received++
	})
	var position int64
	deadline := time.Now().Add(time.Minute)
	for received < count {
		n, next, err := l.Poll(position, 10, a.OnFragment)
		if err != nil {
			t.Fatal(err)
		}
		zeroTerms(l, position, next)
		position = next
		// Release: pairs with the publisher's acquire load of the limit;
		// the zeroing above happens before the publisher reuses the space.
		limit.Store(position + window)
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("stalled at position %d after %d messages", position, received)
			}
			runtime.Gosched()
		}
	}
	if st := a.Stats(); st != (AssemblerStats{Delivered: count}) {
		t.Errorf("assembler stats %+v", st)
	}
}

// publish offers count messages, spinning on back-pressure, until done or
// stopped.
func publish(pub *ExclusiveAppender, limit *atomic.Int64, stop *atomic.Bool, seed uint64, count int) error {
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range count {
		msg := patterned(rng, i, messageSize(rng))
		for !stop.Load() {
			r, err := pub.Offer(Flow{Limit: limit.Load(), Connected: true}, msg)
			if err != nil {
				return err
			}
			if r.IsPosition() {
				break
			}
			if r != AdminAction {
				runtime.Gosched()
			}
		}
	}
	return nil
}
