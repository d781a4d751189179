package codec

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// writer fills one message that appendMessage has sized: fixed fields at
// their block offsets, var fields in schema order from the end of the
// block. Encoders validate every input before appendMessage, so writes
// cannot fail.
type writer struct {
	msg  []byte
	next int // offset in msg of the next var field
}

// appendMessage grows dst by one zeroed message of template t at
// [SchemaVersion] with a block of blockLength bytes and varSize bytes of
// var fields (the sum of [varSize] of each), writes its header, and
// returns the grown slice and a writer for the new message.
func appendMessage(dst []byte, t TemplateID, blockLength, varSize int) ([]byte, writer) {
	n := HeaderLength + blockLength + varSize
	out := slices.Grow(dst, n)[:len(dst)+n]
	msg := out[len(dst):]
	clear(msg) // spare capacity of dst may hold old bytes
	putHeader(msg, Header{BlockLength: uint16(blockLength), TemplateID: t, SchemaID: SchemaID,
		Version: SchemaVersion})
	return out, writer{msg: msg, next: HeaderLength + blockLength}
}

// varSize is the encoded size of a var field of n bytes.
func varSize(n int) int { return varLengthSize + n }

func (w writer) int64(off int, v int64) {
	binary.LittleEndian.PutUint64(w.msg[HeaderLength+off:], uint64(v))
}

func (w writer) int32(off int, v int32) {
	binary.LittleEndian.PutUint32(w.msg[HeaderLength+off:], uint32(v))
}

// ascii writes the next var field. The caller has checked its length.
func (w *writer) ascii(s string) {
	binary.LittleEndian.PutUint32(w.msg[w.next:], uint32(len(s)))
	w.next += varLengthSize
	w.next += copy(w.msg[w.next:], s)
}

// data writes the next var field. The caller has checked its length.
func (w *writer) data(b []byte) {
	binary.LittleEndian.PutUint32(w.msg[w.next:], uint32(len(b)))
	w.next += varLengthSize
	w.next += copy(w.msg[w.next:], b)
}

// asciiMax is the largest 7-bit ASCII byte.
const asciiMax = 0x7F

// checkChannel rejects a channel the archive cannot take: longer than
// [MaxChannelLength] or not ASCII. An empty channel passes (it means "any"
// in ListRecordingsForUriRequest; the archive rejects it elsewhere).
func checkChannel(t TemplateID, field, s string) error {
	if len(s) > MaxChannelLength {
		return &EncodeError{Template: t, Field: field,
			Reason: fmt.Sprintf("%d bytes, at most %d allowed", len(s), MaxChannelLength), Err: ErrTooLong}
	}
	for i := 0; i < len(s); i++ {
		if s[i] > asciiMax {
			return &EncodeError{Template: t, Field: field,
				Reason: fmt.Sprintf("byte %#x at index %d", s[i], i), Err: ErrNonASCII}
		}
	}
	return nil
}

// checkData rejects a data field longer than [MaxVarDataLength].
func checkData(t TemplateID, field string, b []byte) error {
	if len(b) > MaxVarDataLength {
		return &EncodeError{Template: t, Field: field,
			Reason: fmt.Sprintf("%d bytes, at most %d allowed", len(b), MaxVarDataLength), Err: ErrTooLong}
	}
	return nil
}

// checkVersion rejects a version that does not fit version_t (0 is its
// null value).
func checkVersion(t TemplateID, v SemanticVersion) error {
	if v < 0 || v > maxSemanticVersion {
		return &EncodeError{Template: t, Field: "version",
			Reason: fmt.Sprintf("%#x does not fit version_t", int32(v)), Err: ErrInvalidValue}
	}
	return nil
}

// checkSourceLocation rejects a SourceLocation the schema does not list.
func checkSourceLocation(t TemplateID, l SourceLocation) error {
	if !l.valid() {
		return &EncodeError{Template: t, Field: "sourceLocation",
			Reason: fmt.Sprintf("%s is not LOCAL or REMOTE", l), Err: ErrInvalidValue}
	}
	return nil
}
