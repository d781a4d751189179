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

func TestWindowReportDue(t *testing.T) {
	w := Window{Records: 1000, Bytes: 64 << 20}
	for _, c := range []struct {
		name           string
		window         Window
		records, bytes int64
		pending        int
		want           bool
	}{
		{"nothing released", w, 0, 0, 10, false},
		{"nothing released, nothing pending", w, 0, 0, 0, false},
		{"one record released, more pending: wait", w, 1, 1024, 10, false},
		{"just under a sixteenth of the records: wait", w, 61, 61 << 10, 500, false},
		{"a sixteenth of the records", w, 62, 62 << 10, 500, true},
		{"a sixteenth of the bytes, few records", w, 2, 4 << 20, 500, true},
		{"one record released, nothing pending: tell", w, 1, 1024, 0, true},
		{"window under 16 records: every release", Window{Records: 10, Bytes: 64 << 20}, 1, 10, 5, true},
	} {
		if got := c.window.ReportDue(c.records, c.bytes, c.pending); got != c.want {
			t.Errorf("%s: ReportDue(%d, %d, %d) = %t, want %t", c.name, c.records, c.bytes, c.pending, got, c.want)
		}
	}
}

// The replay, told of released room only when ReportDue says so, is never left waiting
// while nothing is pending (which would stall it for good), and learns of room at most a
// sixteenth of the window late.
func TestWindowReportDueNeverStallsTheReplay(t *testing.T) {
	for records := int64(1); records <= 40; records++ {
		w := Window{Records: records, Bytes: 1 << 30}
		// A replay that reads whatever Readable allows; a tracker that releases one
		// record at a time and reports when due.
		var read, released, reported int64
		for step := 0; step < 10_000; step++ {
			if n := w.Readable(read-reported, 0); n > 0 {
				read += n
			}
			pending := read - released
			if pending == 0 {
				t.Fatalf("%+v: step %d: nothing pending and nothing readable: the replay waits for room it was never told of (read %d, reported %d)", w, step, read, reported)
			}
			released++
			if w.ReportDue(released-reported, 0, int(read-released)) {
				reported = released
			}
			if late := released - reported; late > records/16 {
				t.Fatalf("%+v: step %d: %d released records not reported, more than a sixteenth of the window", w, step, late)
			}
		}
	}
}
