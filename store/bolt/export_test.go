package bolt

import (
	"encoding/binary"
	"hash/crc32"

	"google.golang.org/protobuf/encoding/protowire"
)

// AsNewerFerry returns envelope v in encoding version, as a newer ferry would write it: the
// same header, its checksum covering the kind and version bytes too.
func AsNewerFerry(v []byte, version byte) []byte {
	v = append([]byte(nil), v...)
	v[1] = version
	binary.LittleEndian.PutUint32(v[6:10], newerSum(v[0], version, v[headerLen:]))
	return v
}

// SchemaOfANewerFerry is schema version as a newer ferry would store it: with its checksum.
func SchemaOfANewerFerry(version uint32) []byte {
	v := binary.BigEndian.AppendUint32(nil, version)
	return binary.BigEndian.AppendUint32(v, crc32.Checksum(v, castagnoli))
}

// WithNewerField is value v (of version 1) with a varint field number field appended to its
// payload, as a newer ferry that added the field, keeping the version, would store it.
func WithNewerField(v []byte, field int32) []byte {
	payload := protowire.AppendVarint(protowire.AppendTag(append([]byte(nil), v[headerLen:]...), protowire.Number(field), protowire.VarintType), 4)
	return seal(v[0], payload)
}
