package logbuffer

import (
	"fmt"
	"testing"
)

// BenchmarkOfferThenPoll measures the log buffer's own cost per message, on one goroutine
// in plain memory: offer a term's worth of messages, poll them all, rotate. No driver, no
// second core; compare with test/driver's BenchmarkIPCThroughput to see what the real
// driver and cross-core traffic add.
func BenchmarkOfferThenPoll(b *testing.B) {
	for _, size := range []int{32, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			p := testParams()
			p.TermLength = 16 << 20
			l := newTestLog(b, p)
			a := newTestAppender(b, l)
			payload := make([]byte, size)
			var position int64
			delivered := 0
			count := func([]byte, Header) { delivered++ }
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
				for {
					n, next, err := l.Poll(position, 1<<20, count)
					if err != nil {
						b.Fatal(err)
					}
					if next == position && n == 0 {
						break
					}
					position = next
				}
				clearBehind(l, position)
			}
			b.StopTimer()
		})
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
