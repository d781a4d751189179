package broadcast

import (
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Receiver is a cursor over a broadcast buffer: Agrona's BroadcastReceiver.
// It reads records in place, so a record it has found may be overwritten
// at any time; [Receiver.Validate] says whether it still holds. Most code
// wants [CopyReceiver], which does the copy-then-validate dance.
//
// A Receiver is not safe for concurrent use: one goroutine owns it.
type Receiver struct {
	buf shm.Buffer
	geometry

	cursor int64 // position of the current record
	next   int64 // position of the record after it
	index  int   // data-area index of the current record
	length int32 // current record's length field
	typeID int32 // current record's type id
	lapped int64 // times the transmitter overwrote the cursor
}

// NewReceiver wraps buf (a data area of power-of-two capacity followed by
// the [TrailerLength]-byte trailer, 8-byte aligned) and places the cursor
// at the latest record, as Agrona does: the first [Receiver.ReceiveNext]
// returns the most recent message transmitted before the receiver existed,
// if any. It returns an error wrapping [ErrInvalidBuffer] for a bad buffer
// and one matching [ErrCorrupt] if the latest counter is not a record
// position.
func NewReceiver(buf shm.Buffer) (*Receiver, error) {
	g, err := newGeometry(buf)
	if err != nil {
		return nil, err
	}
	r := &Receiver{buf: buf, geometry: g}
	latest, err := r.loadLatest()
	if err != nil {
		return nil, err
	}
	r.cursor, r.next, r.index = latest, latest, g.indexOf(latest)
	return r, nil
}

// Capacity returns the length of the data area in bytes.
func (r *Receiver) Capacity() int { return int(r.capacity) }

// MaxPayloadLength returns the longest payload a well-formed record has.
func (r *Receiver) MaxPayloadLength() int { return r.maxPayload }

// LappedCount returns how many times the transmitter has overwritten this
// receiver's position. Each lap loses at least one buffer of messages.
func (r *Receiver) LappedCount() int64 { return r.lapped }

// TypeID returns the type id of the record found by the last successful
// [Receiver.ReceiveNext].
func (r *Receiver) TypeID() int32 { return r.typeID }

// PayloadLength returns the payload length of the record found by the last
// successful [Receiver.ReceiveNext].
func (r *Receiver) PayloadLength() int { return int(r.length) - HeaderLength }

// ReceiveNext moves the cursor to the next record, if the transmitter has
// completed one, and reports whether it did.
//
// If the transmitter has overwritten the cursor's position, ReceiveNext
// counts a lap ([Receiver.LappedCount]) and continues from the latest
// record. If a record's header is malformed and the position turns out to
// have been overwritten meanwhile, it counts a lap, resynchronises to the
// latest record and returns false. If the header is malformed and the
// position is still valid, the buffer is corrupt: it returns an error
// matching [ErrCorrupt] and does not move.
func (r *Receiver) ReceiveNext() (bool, error) {
	// Acquire: pairs with the transmitter's release store of tail, which
	// it made after writing the record, so the record's bytes are visible
	// once tail shows it complete (if not overwritten since: see Validate).
	tail := r.buf.LoadInt64(r.tail)
	cursor := r.next
	if tail <= cursor {
		return false, nil
	}
	if !r.valid(cursor) {
		r.lapped++
		latest, err := r.loadLatest()
		if err != nil {
			return false, err
		}
		cursor = latest
	}

	start := cursor // the earliest position whose bytes are read below
	index := r.indexOf(cursor)
	length, typeID := r.header(index)
	if typeID == PaddingTypeID {
		if int64(length) != r.capacity-int64(index) {
			return r.malformed(start, fmt.Sprintf("padding length %d at index %d does not reach the end of the buffer", length, index))
		}
		// The record that did not fit before the end is at index 0.
		cursor += int64(length)
		index = 0
		length, typeID = r.header(index)
	}
	if reason := r.checkRecord(index, length, typeID); reason != "" {
		return r.malformed(start, reason)
	}

	r.cursor, r.index, r.length, r.typeID = cursor, index, length, typeID
	r.next = cursor + align(int64(length), RecordAlignment)
	return true, nil
}

// Validate reports whether the current record is still intact: whether the
// transmitter's tail intent has stayed within one buffer of the cursor. A
// copy of the record taken before a true Validate is a faithful copy.
func (r *Receiver) Validate() bool {
	return r.valid(r.cursor)
}

// CopyPayload copies the current record's payload into dst (reallocating
// if its capacity is too small) and returns the copy. The copy may be torn
// by a concurrent overwrite; it is usable only if [Receiver.Validate]
// returns true after CopyPayload returns.
func (r *Receiver) CopyPayload(dst []byte) []byte {
	n := r.PayloadLength()
	if cap(dst) < n {
		dst = make([]byte, n) // n ≤ MaxPayloadLength: checked by ReceiveNext
	}
	dst = dst[:n]
	// Atomic word loads: each is ordered before the tail-intent load in
	// the caller's subsequent Validate, which is what makes "copy, then
	// validate" sound on weakly ordered CPUs (Agrona uses a load fence).
	r.buf.LoadWords(r.index+HeaderLength, dst)
	return dst
}

// valid reports whether the bytes at position may still be those written
// when the transmitter passed it.
func (r *Receiver) valid(position int64) bool {
	// Acquire: the transmitter raises the tail intent (release, before
	// writing any byte of a record), so if any byte we read came from a
	// record transmitted after position was written, this load sees an
	// intent at least one buffer ahead of position.
	return position+r.capacity > r.buf.LoadInt64(r.tailIntent)
}

// header reads a record header. The loads are atomic so that they are
// ordered before the tail-intent load that decides whether to trust them.
func (r *Receiver) header(index int) (length, typeID int32) {
	return r.buf.LoadInt32(index + RecordLengthOffset), r.buf.LoadInt32(index + TypeIDOffset)
}

// checkRecord returns why a record header is malformed, or "".
func (r *Receiver) checkRecord(index int, length, typeID int32) string {
	switch {
	case typeID < 1:
		return fmt.Sprintf("record at index %d has type id %d", index, typeID)
	case length < HeaderLength:
		return fmt.Sprintf("record at index %d has length %d, shorter than its header", index, length)
	case int(length)-HeaderLength > r.maxPayload:
		return fmt.Sprintf("record at index %d has a %d-byte payload, maximum %d", index, int(length)-HeaderLength, r.maxPayload)
	case int64(index)+align(int64(length), RecordAlignment) > r.capacity:
		return fmt.Sprintf("record at index %d of length %d runs past the end of the buffer", index, length)
	}
	return ""
}

// malformed decides whether a malformed header was overwritten under us
// (a lap) or is corruption.
func (r *Receiver) malformed(position int64, reason string) (bool, error) {
	if r.valid(position) {
		return false, &CorruptError{Position: position, Reason: reason}
	}
	r.lapped++
	latest, err := r.loadLatest()
	if err != nil {
		return false, err
	}
	r.next = latest
	return false, nil
}

func (r *Receiver) loadLatest() (int64, error) {
	// Acquire: pairs with the transmitter's release store of latest.
	latest := r.buf.LoadInt64(r.latest)
	if latest&(RecordAlignment-1) != 0 {
		return 0, &CorruptError{Position: latest, Reason: "latest counter is not a record position"}
	}
	return latest, nil
}
