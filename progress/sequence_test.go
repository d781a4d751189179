package progress

import (
	"errors"
	"strings"
	"testing"
)

func TestLesson20_SequenceIDIsTheEndPositionIdenticalOnEveryReplay(t *testing.T) {
	// The records of one recording that starts at 4096 (lesson 8).
	type rec struct{ start, end int64 }
	recs := []rec{{4096, 4160}, {4160, 4352}, {4384, 4448}, {4448, 8192}}
	replay := func(from int64) map[int64]int64 {
		seqs := map[int64]int64{}
		prev := int64(0)
		for _, r := range recs {
			if r.start < from {
				continue
			}
			seq, err := SequenceID(r.end)
			if err != nil {
				t.Fatal(err)
			}
			if seq != r.end {
				t.Fatalf("SequenceID(%d) = %d, want the end position", r.end, seq)
			}
			if seq <= prev {
				t.Fatalf("sequence %d after %d is not increasing", seq, prev)
			}
			prev = seq
			seqs[r.start] = seq
		}
		return seqs
	}
	first := replay(4096)
	for _, from := range []int64{4160, 4384, 4448} {
		for start, seq := range replay(from) {
			if first[start] != seq {
				t.Fatalf("replay from %d: record at %d got sequence %d, first replay %d", from, start, seq, first[start])
			}
		}
	}
	// Positions restart per recording: the same sequence in two recordings
	// belongs to two producers, so it never collides.
	a, _ := ProducerName("orders", 1)
	b, _ := ProducerName("orders", 2)
	if a == b {
		t.Fatalf("recordings 1 and 2 share producer %q", a)
	}
	for _, end := range []int64{0, -1} {
		if _, err := SequenceID(end); !errors.Is(err, ErrInvalidPosition) {
			t.Fatalf("SequenceID(%d) = %v, want ErrInvalidPosition", end, err)
		}
	}
}

func TestProducerName(t *testing.T) {
	tests := []struct {
		stream string
		id     int64
		want   string
		err    error
	}{
		{"orders", 0, "ferry-orders-0", nil},
		{"md.eu-west_1", 9223372036854775807, "ferry-md.eu-west_1-9223372036854775807", nil},
		{"a-1", 2, "ferry-a-1-2", nil},
		{"", 1, "", ErrInvalidStreamName},
		{"has space", 1, "", ErrInvalidStreamName},
		{"slash/topic", 1, "", ErrInvalidStreamName},
		{"ünicode", 1, "", ErrInvalidStreamName},
		{strings.Repeat("x", MaxStreamNameLen+1), 1, "", ErrInvalidStreamName},
		{"orders", -1, "", ErrInvalidRecordingID},
	}
	for _, tt := range tests {
		got, err := ProducerName(tt.stream, tt.id)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ProducerName(%q, %d) = %q, %v; want %q, %v", tt.stream, tt.id, got, err, tt.want, tt.err)
		}
		if err != nil {
			continue
		}
		if s, id, err := ParseProducerName(got); err != nil || s != tt.stream || id != tt.id {
			t.Errorf("ParseProducerName(%q) = %q, %d, %v", got, s, id, err)
		}
	}
	for _, bad := range []string{"", "ferry-", "ferry-orders", "ferry-orders-", "ferry--1", "ferry-orders-+1",
		"ferry-orders-01", "pulsar-orders-1", "ferry-a b-1", "ferry-orders-x"} {
		if _, _, err := ParseProducerName(bad); !errors.Is(err, ErrInvalidProducerName) {
			t.Errorf("ParseProducerName(%q) = %v, want ErrInvalidProducerName", bad, err)
		}
	}
}

// FuzzLesson20_ProducerNameIsInjective: ProducerName round-trips through
// ParseProducerName, so two (stream, recording) pairs never share a producer
// and therefore never share a dedup sequence space.
func FuzzLesson20_ProducerNameIsInjective(f *testing.F) {
	f.Add("orders", int64(1))
	f.Add("a-1", int64(2))
	f.Add("a", int64(12))
	f.Fuzz(func(t *testing.T, stream string, id int64) {
		name, err := ProducerName(stream, id)
		if err != nil {
			return
		}
		s, got, err := ParseProducerName(name)
		if err != nil || s != stream || got != id {
			t.Fatalf("ParseProducerName(ProducerName(%q, %d) = %q) = %q, %d, %v", stream, id, name, s, got, err)
		}
	})
}
