package logbuffer

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkOfferThenPoll measures the log buffer's own cost per message, on one goroutine
// in plain memory: offer a term's worth of messages, poll them all, rotate. No driver, no
// second core; compare with test/driver's BenchmarkIPCThroughput to see what the real
// driver and cross-core traffic add.
func BenchmarkOfferThenPoll(b *testing.B) {
	for _, size := range []int{32, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			delivered := 0
			offerThenPoll(b, size, func([]byte, Header) { delivered++ })
		})
	}
}

// BenchmarkOfferThenPollAssembled is BenchmarkOfferThenPoll polling through a
// FragmentAssembler, as a subscriber does that reads whole messages (ferry's replay): its
// cost per message on top of the poll's, for messages of one fragment (32 B, 1 KiB) and of
// twelve (16 KiB, over the default MTU).
func BenchmarkOfferThenPollAssembled(b *testing.B) {
	for _, size := range []int{32, 1024, 16 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			delivered := 0
			asm := NewFragmentAssembler(16<<20, func([]byte, Header) { delivered++ })
			offerThenPoll(b, size, asm.OnFragment)
			if asm.Stats().Delivered == 0 || asm.Stats().Discarded != 0 || asm.Stats().Orphaned != 0 {
				b.Fatalf("assembler stats %+v", asm.Stats())
			}
		})
	}
}

// offerThenPoll offers b.N messages of size bytes, polling them all into handler whenever
// the term is half full, and rotating.
func offerThenPoll(b *testing.B, size int, handler FragmentHandler) {
	p := testParams()
	p.TermLength = 16 << 20
	l := newTestLog(b, p)
	a := newTestAppender(b, l)
	payload := make([]byte, size)
	var position int64
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for sent := 0; sent < b.N; {
		res, err := a.Offer(Flow{Limit: position + int64(p.TermLength)/2, Connected: true}, payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := res.Position(); ok {
			sent++
			continue
		}
		// Back-pressured or rotated: the subscriber catches up, the driver cleans.
		position = pollAll(b, l, position, handler)
		clearBehind(l, position)
	}
	pollAll(b, l, position, handler)
	b.StopTimer()
}

// pollAll polls l from position until it finds nothing more, and returns where it stopped.
// It polls as an image does, with a closed flag loaded before every frame.
func pollAll(b *testing.B, l *Log, position int64, handler FragmentHandler) int64 {
	var closed atomic.Bool
	for {
		n, next, err := l.BoundedPoll(position, l.MaxPossiblePosition(), 1<<20, handler, &closed)
		if err != nil {
			b.Fatal(err)
		}
		if next == position && n == 0 {
			return position
		}
		position = next
	}
}

// clearBehind zeroes the terms that do not hold position, as the driver cleans consumed
// space before the limit lets the publisher reuse it.
func clearBehind(l *Log, position int64) {
	active := PartitionIndexByPosition(position, l.PositionBitsToShift())
	for i := range PartitionCount {
		if i != active {
			clear(l.Term(i).Bytes())
		}
	}
}
