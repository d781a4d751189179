package progress

import "testing"

func TestWindowReadable(t *testing.T) {
	w := Window{Records: 1000, Bytes: 64 << 20}
	for _, c := range []struct {
		name                 string
		window               Window
		inflight, inflightBy int64
		want                 int64
	}{
		{"empty: the whole window", w, 0, 0, 1000},
		{"full", w, 1000, 1 << 20, 0},
		{"over full (a read overshot the bytes)", w, 10, 65 << 20, 0},
		{"one record free: wait", w, 999, 1 << 20, 0},
		{"just under a quarter free: wait", w, 751, 1 << 20, 0},
		{"a quarter free: read it", w, 750, 1 << 20, 250},
		{"most free", w, 10, 1 << 20, 990},
		{"bytes: under a quarter free, records plenty: wait", w, 10, 48<<20 + 1, 0},
		{"bytes: a quarter free", w, 10, 48 << 20, 990},
		{"nothing in flight, little room (window of 3): read", Window{Records: 3, Bytes: 100}, 0, 0, 3},
		{"window under 4 records: any free record", Window{Records: 3, Bytes: 100}, 2, 10, 1},
		{"nothing in flight but bytes below a quarter cannot happen; records decide", Window{Records: 4, Bytes: 100}, 0, 0, 4},
	} {
		if got := c.window.Readable(c.inflight, c.inflightBy); got != c.want {
			t.Errorf("%s: Readable(%d, %d) = %d, want %d", c.name, c.inflight, c.inflightBy, got, c.want)
		}
	}
}

// Whatever the window and whatever is in flight, Readable never lets the records in flight
// exceed the window, and with nothing in flight it always lets at least one record be read
// (otherwise the replay would wait for credits that never come).
func TestWindowReadableNeverOverfillsNorDeadlocks(t *testing.T) {
	for records := int64(1); records <= 40; records++ {
		for _, bytes := range []int64{1, 3, 100, 1 << 20} {
			w := Window{Records: records, Bytes: bytes}
			for inflight := int64(0); inflight <= records+1; inflight++ {
				for _, inflightBytes := range []int64{0, bytes / 4, bytes / 2, bytes - 1, bytes, bytes + 1} {
					if inflight == 0 && inflightBytes > 0 {
						continue // bytes in flight without records: impossible
					}
					got := w.Readable(inflight, inflightBytes)
					if got < 0 || (got > 0 && inflight+got > records) {
						t.Fatalf("%+v: Readable(%d, %d) = %d: over the window", w, inflight, inflightBytes, got)
					}
					if inflight == 0 && got == 0 {
						t.Fatalf("%+v: Readable(0, 0) = 0: nothing in flight and nothing readable would wait forever", w)
					}
				}
			}
		}
	}
}
