package shm

import "encoding/binary"

// Plain little-endian accessors. They are not atomic: use them for bytes
// that no other party writes concurrently, or that a preceding atomic load
// has published (and say so at the call site). Each panics with an
// assertion if the access is outside the buffer, and each Put panics on a
// read-only buffer.

const (
	sizeofUint8  = 1
	sizeofUint16 = 2
	sizeofInt32  = 4
	sizeofInt64  = 8
)

// GetUint8 returns the byte at off.
func (b Buffer) GetUint8(off int) uint8 {
	b.mustRange(off, sizeofUint8, "GetUint8")
	return b.b[off]
}

// PutUint8 stores v at off.
func (b Buffer) PutUint8(off int, v uint8) {
	b.mustWritable("PutUint8")
	b.mustRange(off, sizeofUint8, "PutUint8")
	b.b[off] = v
}

// GetUint16 returns the little-endian uint16 at off.
func (b Buffer) GetUint16(off int) uint16 {
	b.mustRange(off, sizeofUint16, "GetUint16")
	return binary.LittleEndian.Uint16(b.b[off:])
}

// PutUint16 stores v little-endian at off.
func (b Buffer) PutUint16(off int, v uint16) {
	b.mustWritable("PutUint16")
	b.mustRange(off, sizeofUint16, "PutUint16")
	binary.LittleEndian.PutUint16(b.b[off:], v)
}

// GetInt32 returns the little-endian int32 at off.
func (b Buffer) GetInt32(off int) int32 {
	b.mustRange(off, sizeofInt32, "GetInt32")
	return int32(binary.LittleEndian.Uint32(b.b[off:]))
}

// PutInt32 stores v little-endian at off.
func (b Buffer) PutInt32(off int, v int32) {
	b.mustWritable("PutInt32")
	b.mustRange(off, sizeofInt32, "PutInt32")
	binary.LittleEndian.PutUint32(b.b[off:], uint32(v))
}

// GetInt64 returns the little-endian int64 at off.
func (b Buffer) GetInt64(off int) int64 {
	b.mustRange(off, sizeofInt64, "GetInt64")
	return int64(binary.LittleEndian.Uint64(b.b[off:]))
}

// PutInt64 stores v little-endian at off.
func (b Buffer) PutInt64(off int, v int64) {
	b.mustWritable("PutInt64")
	b.mustRange(off, sizeofInt64, "PutInt64")
	binary.LittleEndian.PutUint64(b.b[off:], uint64(v))
}
