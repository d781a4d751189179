package ringbuffer

import "testing"

// Golden values from Agrona 2.0.1 RingBufferDescriptor / RecordDescriptor /
// ManyToOneRingBuffer, as listed in aeron-protocol.md §2.1-2.2. Change them
// only when the pinned Aeron/Agrona version changes.
func TestLayoutGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"trailer: tail position", TailPositionOffset, 128},
		{"trailer: head cache position", HeadCachePositionOffset, 256},
		{"trailer: head position", HeadPositionOffset, 384},
		{"trailer: correlation counter", CorrelationCounterOffset, 512},
		{"trailer: consumer heartbeat", ConsumerHeartbeatOffset, 640},
		{"trailer length", TrailerLength, 768},
		{"record: length", RecordLengthOffset, 0},
		{"record: type id", TypeIDOffset, 4},
		{"record: header length", HeaderLength, 8},
		{"record alignment", RecordAlignment, 8},
		{"padding type id", int(PaddingTypeID), -1},
		{"minimum capacity", MinCapacity, 8},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// The maximum payload is max(8, capacity/8), and 0 for the minimum ring
// (Agrona ManyToOneRingBuffer); the default 1 MiB ring carries 128 KiB.
func TestMaxPayloadLengthGolden(t *testing.T) {
	for _, tc := range []struct {
		capacity, want int
	}{
		{8, 0},
		{16, 8},
		{64, 8},
		{128, 16},
		{1 << 20, 128 << 10},
	} {
		r := newRing(t, tc.capacity)
		if got := r.MaxPayloadLength(); got != tc.want {
			t.Errorf("capacity %d: MaxPayloadLength = %d, want %d", tc.capacity, got, tc.want)
		}
	}
}
