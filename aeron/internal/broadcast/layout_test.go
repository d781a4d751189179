package broadcast

import "testing"

// Golden values from Agrona 2.0.1 BroadcastBufferDescriptor /
// RecordDescriptor, as listed in aeron-protocol.md §3.1. Change them only
// when the pinned Aeron/Agrona version changes.
func TestLayoutGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"trailer: tail intent counter", TailIntentCounterOffset, 0},
		{"trailer: tail counter", TailCounterOffset, 8},
		{"trailer: latest counter", LatestCounterOffset, 16},
		{"trailer length", TrailerLength, 128},
		{"record: length", RecordLengthOffset, 0},
		{"record: type id", TypeIDOffset, 4},
		{"record: header length", HeaderLength, 8},
		{"record alignment", RecordAlignment, 8},
		{"padding type id", int(PaddingTypeID), -1},
		// ferry's own lower bound (Agrona: any power of two); see MinCapacity.
		{"minimum capacity", MinCapacity, 16},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// The maximum payload is capacity/8: 128 KiB for Aeron's default 1 MiB
// to-clients buffer.
func TestMaxPayloadLengthGolden(t *testing.T) {
	for _, tc := range []struct{ capacity, want int }{
		{16, 2},
		{128, 16},
		{1 << 20, 128 << 10},
	} {
		tx := newTransmitter(t, newBuffer(tc.capacity))
		rx := newReceiver(t, newBuffer(tc.capacity))
		if tx.MaxPayloadLength() != tc.want || rx.MaxPayloadLength() != tc.want {
			t.Errorf("capacity %d: max payload tx %d rx %d, want %d", tc.capacity, tx.MaxPayloadLength(), rx.MaxPayloadLength(), tc.want)
		}
	}
}
