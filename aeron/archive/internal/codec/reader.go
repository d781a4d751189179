package codec

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// reader decodes one message with a sticky error: after the first failure
// every read returns zero and err keeps that failure, so a decoder checks
// once at the end and never returns a half-filled value.
//
// Every decode has the same shape: [openMessage] checks the header, the
// template and that the block the header announces is present and holds
// every field that all schema versions carry; fixed fields are then read
// at their named offsets inside the block; version-gated fields read as
// their null value when the header's version predates them; var fields
// are read in schema order from the end of the block, each length checked
// against [MaxVarDataLength] and the bytes that remain before anything is
// sliced or copied. Bytes after the last var field are ignored: the
// catalog pads RecordingDescriptor messages, and newer schema versions
// append var fields.
type reader struct {
	msg  []byte
	hdr  Header
	next int // offset in msg of the next var field
	err  error
}

// openMessage starts decoding msg as a message of template want. base is
// the length of the block up to the first version-gated field (the whole
// block if there is none).
func openMessage(msg []byte, want TemplateID, base int) reader {
	r := reader{msg: msg}
	h, err := PeekHeader(msg)
	if err != nil {
		r.err = err
		return r
	}
	r.hdr = h
	blockLength := int(h.BlockLength)
	switch {
	case h.TemplateID != want:
		r.fail("templateId", headerTemplateIDOffset, ErrTemplateMismatch,
			"template %s, want %s", h.TemplateID, want)
	case blockLength < base:
		r.fail("block", HeaderLength, ErrMalformed,
			"block length %d, the fields every version carries need %d", blockLength, base)
	case len(msg)-HeaderLength < blockLength:
		r.fail("block", HeaderLength, ErrTruncated,
			"block length %d, %d bytes remain", blockLength, len(msg)-HeaderLength)
	default:
		r.next = HeaderLength + blockLength
	}
	return r
}

// fail records the first failure.
func (r *reader) fail(field string, offset int, sentinel error, format string, args ...any) {
	if r.err != nil {
		return
	}
	r.err = &DecodeError{Template: r.hdr.TemplateID, Field: field, Offset: offset,
		MessageLength: len(r.msg), Reason: fmt.Sprintf(format, args...), Err: sentinel}
}

// inBlock reports whether n bytes at block offset off lie inside the
// block. openMessage has checked that the block is present, so a field
// inside it can be read.
func (r *reader) inBlock(field string, off, n int) bool {
	if r.err != nil {
		return false
	}
	if off+n > int(r.hdr.BlockLength) {
		r.fail(field, HeaderLength+off, ErrMalformed, "block length %d at version %d ends before byte %d",
			r.hdr.BlockLength, r.hdr.Version, off+n)
		return false
	}
	return true
}

// int64 reads the int64 field at block offset off.
func (r *reader) int64(off int) int64 {
	if !r.inBlock("block", off, sizeofInt64) {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(r.msg[HeaderLength+off:]))
}

// int32 reads the int32 field at block offset off.
func (r *reader) int32(off int) int32 {
	if !r.inBlock("block", off, sizeofInt32) {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(r.msg[HeaderLength+off:]))
}

// int32Since reads an int32 field added in schema version since: null if
// the message's version predates it, otherwise the block must hold it.
func (r *reader) int32Since(field string, off int, since uint16, null int32) int32 {
	if r.err != nil || r.hdr.Version < since {
		return null
	}
	if !r.inBlock(field, off, sizeofInt32) {
		return 0
	}
	return int32(binary.LittleEndian.Uint32(r.msg[HeaderLength+off:]))
}

// int64Since is int32Since for an int64 field.
func (r *reader) int64Since(field string, off int, since uint16, null int64) int64 {
	if r.err != nil || r.hdr.Version < since {
		return null
	}
	if !r.inBlock(field, off, sizeofInt64) {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(r.msg[HeaderLength+off:]))
}

// varField returns the bytes of the next var field, not copied.
func (r *reader) varField(field string) []byte {
	if r.err != nil {
		return nil
	}
	remaining := len(r.msg) - r.next
	if remaining < varLengthSize {
		r.fail(field, r.next, ErrTruncated, "length needs %d bytes, %d remain", varLengthSize, remaining)
		return nil
	}
	n := binary.LittleEndian.Uint32(r.msg[r.next:])
	if n > MaxVarDataLength {
		r.fail(field, r.next, ErrMalformed, "length %d exceeds the schema maximum %d", n, MaxVarDataLength)
		return nil
	}
	start := r.next + varLengthSize
	if int64(n) > int64(len(r.msg)-start) {
		r.fail(field, start, ErrTruncated, "length %d, %d bytes remain", n, len(r.msg)-start)
		return nil
	}
	r.next = start + int(n)
	return r.msg[start:r.next]
}

// ascii reads the next var field as a string (a copy). Bytes outside
// ASCII are kept as they are: the Java decoder would map them to '?', and
// rejecting them would only hide a recording from the client.
func (r *reader) ascii(field string) string {
	return string(r.varField(field))
}

// data reads the next var field as a copy of its bytes; empty is nil.
func (r *reader) data(field string) []byte {
	b := r.varField(field)
	if len(b) == 0 {
		return nil
	}
	return bytes.Clone(b)
}
