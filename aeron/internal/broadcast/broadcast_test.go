package broadcast

import (
	"errors"
	"math"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

func TestConstructorsRejectInvalidBuffers(t *testing.T) {
	for _, tc := range []struct {
		name string
		buf  shm.Buffer
	}{
		{"trailer only", shm.Alloc(TrailerLength)},
		{"capacity below minimum", shm.Alloc(TrailerLength + 8)},
		{"capacity not a power of two", shm.Alloc(TrailerLength + 48)},
		{"misaligned", shm.Wrap(shm.Alloc(TrailerLength + 64 + 4).Bytes()[4:])},
	} {
		if _, err := NewReceiver(tc.buf); !errors.Is(err, ErrInvalidBuffer) {
			t.Errorf("NewReceiver, %s: err = %v, want ErrInvalidBuffer", tc.name, err)
		}
		if _, err := NewTransmitter(tc.buf); !errors.Is(err, ErrInvalidBuffer) {
			t.Errorf("NewTransmitter, %s: err = %v, want ErrInvalidBuffer", tc.name, err)
		}
	}
	buf := newBuffer(64)
	if rx := newReceiver(t, buf); rx.Capacity() != 64 {
		t.Errorf("receiver capacity = %d", rx.Capacity())
	}
	if tx := newTransmitter(t, buf); tx.Capacity() != 64 {
		t.Errorf("transmitter capacity = %d", tx.Capacity())
	}
}

func TestTransmitLaysOutTheRecordAsAgronaDoes(t *testing.T) {
	const capacity = 64
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	mustTransmit(t, tx, message{9, []byte{0xA1, 0xA2, 0xA3}})
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"record length (unaligned)", int64(buf.GetInt32(RecordLengthOffset)), HeaderLength + 3},
		{"type id", int64(buf.GetInt32(TypeIDOffset)), 9},
		{"tail intent", buf.GetInt64(capacity + TailIntentCounterOffset), 16},
		{"tail", buf.GetInt64(capacity + TailCounterOffset), 16},
		{"latest", buf.GetInt64(capacity + LatestCounterOffset), 0},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if got := buf.Bytes()[HeaderLength : HeaderLength+3]; string(got) != "\xA1\xA2\xA3" {
		t.Errorf("payload = % x", got)
	}
	mustTransmit(t, tx, message{10, nil})
	if got := buf.GetInt64(capacity + LatestCounterOffset); got != 16 {
		t.Errorf("latest after second message = %d, want 16", got)
	}
}

func TestTransmitRejectsBadArguments(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	for _, typeID := range []int32{0, PaddingTypeID, math.MinInt32} {
		if err := tx.Transmit(typeID, nil); !errors.Is(err, ErrInvalidTypeID) {
			t.Errorf("type %d: err = %v, want ErrInvalidTypeID", typeID, err)
		}
	}
	if err := tx.Transmit(1, make([]byte, tx.MaxPayloadLength()+1)); !errors.Is(err, ErrMessageTooLong) {
		t.Errorf("oversized: err = %v, want ErrMessageTooLong", err)
	}
	if got := buf.GetInt64(capacity + TailCounterOffset); got != 0 {
		t.Errorf("tail = %d after rejected messages, want 0", got)
	}
	buf.StoreInt64(capacity+TailCounterOffset, 12)
	var corrupt *CorruptError
	if err := tx.Transmit(1, nil); !errors.As(err, &corrupt) || corrupt.Position != 12 {
		t.Errorf("misaligned tail: err = %v, want *CorruptError at 12", err)
	}
}

func TestReceiveDeliversMessagesInOrder(t *testing.T) {
	buf := newBuffer(1024)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))
	if got := receiveAll(t, c); len(got) != 0 {
		t.Fatalf("empty buffer delivered %v", got)
	}
	var want []message
	for i := range 10 {
		m := message{int32(i + 1), patterned(i, i*3%(tx.MaxPayloadLength()+1))}
		mustTransmit(t, tx, m)
		want = append(want, m)
	}
	if got := receiveAll(t, c); !equalMessages(got, want) {
		t.Fatalf("received %v\nwant %v", got, want)
	}
	if c.Receiver().LappedCount() != 0 {
		t.Fatalf("LappedCount = %d", c.Receiver().LappedCount())
	}
}

// A receiver starts at the latest record: the first message it delivers is
// the last one transmitted before it existed (aeron-protocol.md §3.3).
func TestNewReceiverStartsAtTheLatestMessage(t *testing.T) {
	buf := newBuffer(1024)
	tx := newTransmitter(t, buf)
	for i := range 3 {
		mustTransmit(t, tx, message{int32(i + 1), patterned(i, 5)})
	}
	c := NewCopyReceiver(newReceiver(t, buf))
	mustTransmit(t, tx, message{4, patterned(3, 5)})
	want := []message{{3, patterned(2, 5)}, {4, patterned(3, 5)}}
	if got := receiveAll(t, c); !equalMessages(got, want) {
		t.Fatalf("received %v\nwant %v", got, want)
	}
}

// A message that does not fit before the end goes to index 0 behind a
// padding record, which the receiver skips.
//
//	capacity 128, tail at 112, message record of 24 bytes:
//	[record(24) | ............ | 112 padding(16) | 128)
func TestWrapWritesPaddingAndTheReceiverSkipsIt(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	setTail(buf, capacity, 112)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))

	m := message{7, patterned(7, 16)}
	mustTransmit(t, tx, m)
	for _, tc := range []struct {
		name      string
		got, want int64
	}{
		{"padding length", int64(buf.GetInt32(112 + RecordLengthOffset)), 16},
		{"padding type", int64(buf.GetInt32(112 + TypeIDOffset)), int64(PaddingTypeID)},
		{"record length at index 0", int64(buf.GetInt32(RecordLengthOffset)), 24},
		{"tail intent", buf.GetInt64(capacity + TailIntentCounterOffset), 112 + 16 + 24},
		{"latest", buf.GetInt64(capacity + LatestCounterOffset), 128},
		{"tail", buf.GetInt64(capacity + TailCounterOffset), 152},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if got := receiveAll(t, c); !equalMessages(got, []message{m}) {
		t.Fatalf("received %v, want [%v]", got, m)
	}
}

// A receiver that keeps up sees every message across many wraps.
func TestReceiverKeepsUpAcrossManyWraps(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))
	for i := range 200 {
		m := message{int32(i%5 + 1), patterned(i, i%(tx.MaxPayloadLength()+1))}
		mustTransmit(t, tx, m)
		if got := receiveAll(t, c); !equalMessages(got, []message{m}) {
			t.Fatalf("message %d: received %v, want [%v]", i, got, m)
		}
	}
}

func TestLappedReceiverReportsErrLappedAndResynchronises(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))
	for i := range 20 { // 20 × 16 bytes: more than a buffer behind
		mustTransmit(t, tx, message{1, patterned(i, 8)})
	}
	ok, err := c.Receive(func(int32, []byte) { t.Error("handler called for a lapped receiver") })
	if ok || !errors.Is(err, ErrLapped) {
		t.Fatalf("Receive = %v, %v; want ErrLapped", ok, err)
	}
	if got := c.Receiver().LappedCount(); got != 1 {
		t.Fatalf("LappedCount = %d, want 1", got)
	}
	// Resynchronised past the latest message: only new messages follow.
	if got := receiveAll(t, c); len(got) != 0 {
		t.Fatalf("after the lap received %v, want nothing", got)
	}
	m := message{2, patterned(99, 3)}
	mustTransmit(t, tx, m)
	if got := receiveAll(t, c); !equalMessages(got, []message{m}) {
		t.Fatalf("received %v, want [%v]", got, m)
	}
}

// The copy is re-validated: a message overwritten while it is being copied
// is never delivered.
func TestMessageOverwrittenDuringCopyIsNotDelivered(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))
	mustTransmit(t, tx, message{1, patterned(1, 8)})
	c.afterCopy = func() {
		for i := range capacity / 16 {
			mustTransmit(t, tx, message{2, patterned(i, 8)})
		}
	}
	ok, err := c.Receive(func(int32, []byte) { t.Error("handler called with an overwritten message") })
	if ok || !errors.Is(err, ErrLapped) {
		t.Fatalf("Receive = %v, %v; want ErrLapped", ok, err)
	}

	// Control: the same sequence without the overwrite delivers.
	buf2 := newBuffer(capacity)
	tx2 := newTransmitter(t, buf2)
	c2 := NewCopyReceiver(newReceiver(t, buf2))
	mustTransmit(t, tx2, message{1, patterned(1, 8)})
	c2.afterCopy = func() { mustTransmit(t, tx2, message{2, nil}) } // within one buffer: harmless
	ok, err = c2.Receive(func(int32, []byte) {})
	if !ok || err != nil {
		t.Fatalf("control Receive = %v, %v; want delivery", ok, err)
	}
}

// Validate applies Agrona's rule: the current record is intact while
// cursor + capacity > tail intent.
func TestValidateDetectsOverwriteOfTheCurrentRecord(t *testing.T) {
	const capacity = 64
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	rx := newReceiver(t, buf)
	mustTransmit(t, tx, message{1, []byte{1}}) // record [0, 16)
	if ok, err := rx.ReceiveNext(); !ok || err != nil {
		t.Fatalf("ReceiveNext = %v, %v", ok, err)
	}
	if !rx.Validate() {
		t.Fatal("fresh record not valid")
	}
	mustTransmit(t, tx, message{1, []byte{2}})
	mustTransmit(t, tx, message{1, []byte{3}}) // tail intent 48
	if !rx.Validate() {
		t.Fatal("record invalid with tail intent 48 < cursor 0 + capacity 64")
	}
	mustTransmit(t, tx, message{1, []byte{4}}) // tail intent 64
	if rx.Validate() {
		t.Fatal("record still valid with tail intent 64 = cursor 0 + capacity 64")
	}
}

func TestCorruptRecordsAreReportedNotDelivered(t *testing.T) {
	const capacity = 128
	for _, tc := range []struct {
		name    string
		corrupt func(buf shm.Buffer)
	}{
		{"length shorter than header", func(buf shm.Buffer) { buf.StoreInt32(RecordLengthOffset, 4) }},
		{"payload above maximum", func(buf shm.Buffer) { buf.StoreInt32(RecordLengthOffset, HeaderLength+capacity/8+1) }},
		{"type id zero", func(buf shm.Buffer) { buf.StoreInt32(TypeIDOffset, 0) }},
		{"padding not reaching the end", func(buf shm.Buffer) { buf.StoreInt32(TypeIDOffset, PaddingTypeID) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf := newBuffer(capacity)
			tx := newTransmitter(t, buf)
			c := NewCopyReceiver(newReceiver(t, buf))
			mustTransmit(t, tx, message{1, patterned(1, 8)})
			tc.corrupt(buf)
			for range 2 { // the receiver does not move past corruption
				ok, err := c.Receive(func(int32, []byte) { t.Error("handler called with a corrupt record") })
				var corrupt *CorruptError
				if ok || !errors.As(err, &corrupt) || !errors.Is(err, ErrCorrupt) || corrupt.Position != 0 {
					t.Fatalf("Receive = %v, %v; want *CorruptError at 0", ok, err)
				}
			}
		})
	}
}

// A malformed header at a position the transmitter has overwritten is a
// lap, never reported as corruption.
func TestMalformedHeaderAtAnOverwrittenPositionIsALap(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	c := NewCopyReceiver(newReceiver(t, buf))
	mustTransmit(t, tx, message{1, patterned(1, 8)})
	buf.StoreInt32(RecordLengthOffset, 3)
	// The transmitter announced it is overwriting position 0 again.
	buf.StoreInt64(capacity+TailIntentCounterOffset, capacity+16)
	ok, err := c.Receive(func(int32, []byte) { t.Error("handler called") })
	if ok || !errors.Is(err, ErrLapped) {
		t.Fatalf("Receive = %v, %v; want ErrLapped", ok, err)
	}
}

// malformed is the decision taken when a header fails its checks: the
// position may have been overwritten between the lap check and the header
// read (only a concurrent transmitter can do that, so it is tested here
// directly).
func TestMalformedDecidesBetweenLapAndCorruption(t *testing.T) {
	const capacity = 128
	buf := newBuffer(capacity)
	tx := newTransmitter(t, buf)
	rx := newReceiver(t, buf)
	mustTransmit(t, tx, message{1, nil}) // tail intent 8, latest 0

	ok, err := rx.malformed(0, "test")
	var corrupt *CorruptError
	if ok || !errors.As(err, &corrupt) || corrupt.Reason != "test" || rx.LappedCount() != 0 {
		t.Fatalf("valid position: malformed = %v, %v, laps %d; want *CorruptError", ok, err, rx.LappedCount())
	}

	for range capacity / 8 {
		mustTransmit(t, tx, message{2, nil}) // tail intent 136, latest 128
	}
	ok, err = rx.malformed(0, "test")
	if ok || err != nil || rx.LappedCount() != 1 || rx.next != 128 {
		t.Fatalf("overwritten position: malformed = %v, %v, laps %d, next %d; want a lap resuming at 128",
			ok, err, rx.LappedCount(), rx.next)
	}
}

func TestNewReceiverRejectsAMisalignedLatest(t *testing.T) {
	const capacity = 64
	buf := newBuffer(capacity)
	buf.StoreInt64(capacity+LatestCounterOffset, 20)
	if _, err := NewReceiver(buf); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("err = %v, want ErrCorrupt", err)
	}
}

func TestCopyPayloadGrowsASmallDestination(t *testing.T) {
	buf := newBuffer(128)
	tx := newTransmitter(t, buf)
	rx := newReceiver(t, buf)
	mustTransmit(t, tx, message{1, patterned(5, 13)})
	if ok, err := rx.ReceiveNext(); !ok || err != nil {
		t.Fatalf("ReceiveNext = %v, %v", ok, err)
	}
	if rx.TypeID() != 1 || rx.PayloadLength() != 13 {
		t.Fatalf("TypeID %d, PayloadLength %d", rx.TypeID(), rx.PayloadLength())
	}
	got := rx.CopyPayload(make([]byte, 2))
	if string(got) != string(patterned(5, 13)) {
		t.Fatalf("CopyPayload = % x", got)
	}
}
