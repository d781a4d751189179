package progress

import (
	"errors"
	"strings"
	"testing"
)

func TestLesson20_SequenceIDIsTheEndPositionIdenticalOnEveryReplay(t *testing.T) {
	// The records of one recording that starts at 4096 (lesson 8). A record's sequence id
	// is its end position, a function of the record alone: every replay, from wherever it
	// starts, gives the record the same one, increasing along the recording.
	prev := int64(0)
	for _, end := range []int64{4160, 4352, 4448, 8192} {
		seq, err := SequenceID(end)
		if err != nil {
			t.Fatal(err)
		}
		if seq != end {
			t.Fatalf("SequenceID(%d) = %d, want the end position", end, seq)
		}
		if seq <= prev {
			t.Fatalf("sequence %d after %d is not increasing", seq, prev)
		}
		prev = seq
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
