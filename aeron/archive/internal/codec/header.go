package codec

import (
	"encoding/binary"
	"fmt"
)

// Header is the SBE message header at the start of every archive message.
type Header struct {
	// BlockLength is the length of the fixed block that follows the
	// header. A newer archive may send a longer block than this package
	// knows (decoders skip the rest); an older one a shorter block (its
	// newer fields read as null).
	BlockLength uint16
	// TemplateID says which message this is.
	TemplateID TemplateID
	// SchemaID is always [SchemaID] once [PeekHeader] accepted it.
	SchemaID uint16
	// Version is the schema version the sender encoded the message with;
	// it decides which version-gated fields are present.
	Version uint16
}

// PeekHeader reads the header of msg so that the caller can dispatch on
// its template id. It fails with [ErrTruncated] if msg is shorter than
// [HeaderLength] and with [ErrSchemaMismatch] if the schema id is not
// [SchemaID]; it does not look past the header.
func PeekHeader(msg []byte) (Header, error) {
	if len(msg) < HeaderLength {
		return Header{}, &DecodeError{Field: "header", Offset: 0, MessageLength: len(msg),
			Reason: fmt.Sprintf("needs %d bytes", HeaderLength), Err: ErrTruncated}
	}
	h := Header{
		BlockLength: binary.LittleEndian.Uint16(msg[headerBlockLengthOffset:]),
		TemplateID:  TemplateID(binary.LittleEndian.Uint16(msg[headerTemplateIDOffset:])),
		SchemaID:    binary.LittleEndian.Uint16(msg[headerSchemaIDOffset:]),
		Version:     binary.LittleEndian.Uint16(msg[headerVersionOffset:]),
	}
	if h.SchemaID != SchemaID {
		return Header{}, &DecodeError{Template: h.TemplateID, Field: "schemaId", Offset: headerSchemaIDOffset,
			MessageLength: len(msg), Reason: fmt.Sprintf("schema id %d, want %d", h.SchemaID, SchemaID),
			Err: ErrSchemaMismatch}
	}
	return h, nil
}

// putHeader writes h at the start of msg, which has room for it.
func putHeader(msg []byte, h Header) {
	binary.LittleEndian.PutUint16(msg[headerBlockLengthOffset:], h.BlockLength)
	binary.LittleEndian.PutUint16(msg[headerTemplateIDOffset:], uint16(h.TemplateID))
	binary.LittleEndian.PutUint16(msg[headerSchemaIDOffset:], h.SchemaID)
	binary.LittleEndian.PutUint16(msg[headerVersionOffset:], h.Version)
}
