package bolt

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/store"
)

// Every stored value is a versioned envelope around a protobuf payload:
//
//	0      1         2                  6          10
//	+------+---------+------------------+----------+-----------------+
//	| kind | version | payload length   | CRC-32C  | payload         |
//	+------+---------+------------------+----------+-----------------+
//	                   uint32 LE          (below)     (length bytes)
//
// kind tells a checkpoint from a definition, so one stored under the wrong key is caught;
// the length catches truncation and trailing bytes, the checksum any other damage (a
// truncated protobuf often still parses). A checkpoint payload is messages.Checkpoint; a
// definition payload is the protobuf fields listed at encodeDefinition.
//
// Version 1's checksum covers the payload only, so a version byte damaged from 1 to, say, 3
// passes it, and would read as a newer ferry's value: this build would send the operator to
// a release that does not exist and refuse the reset that is the way out. So every later
// version keeps this header and its checksum covers the kind and version bytes as well
// (newerSum): a value whose version this build does not read is taken for a newer ferry's
// only if that checksum checks out; otherwise its version byte is damage, and it is corrupt.
// Version 1 stays as it was written, so that the stores written so far read unchanged.
const (
	kindCheckpoint byte = 'C'
	kindDefinition byte = 'D'

	// valueVersion is the envelope version this build reads and writes.
	valueVersion byte = 1

	headerLen = 10
	// maxPayloadLen bounds a payload: definitions hold two strings, checkpoints a few numbers
	// and flags.
	maxPayloadLen = 1 << 16
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errVersion is a decode failure for an envelope version this build does not read.
type errVersion uint32

func (e errVersion) Error() string { return fmt.Sprintf("unknown encoding version %d", uint32(e)) }

// errNewerField is a decode failure for a field this build does not know, in a value whose
// checksum checks out: a newer ferry's, which this build would drop at its next save.
type errNewerField int32

func (e errNewerField) Error() string {
	return fmt.Sprintf("field %d, which this build does not know", int32(e))
}

// errReason is a decode failure for damaged bytes; the string says what is wrong.
type errReason string

func (e errReason) Error() string { return string(e) }

func seal(kind byte, payload []byte) []byte {
	b := make([]byte, headerLen, headerLen+len(payload))
	b[0], b[1] = kind, valueVersion
	binary.LittleEndian.PutUint32(b[2:6], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[6:10], crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// newerSum is the checksum of an envelope of a version after the first: kind and version
// bytes, then the payload.
func newerSum(kind, version byte, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum([]byte{kind, version}, castagnoli), castagnoli, payload)
}

// open checks the envelope of b and returns its payload, which aliases b. A version this
// build does not read is errVersion only when its checksum, which covers the version byte,
// checks out.
func open(kind byte, b []byte) ([]byte, error) {
	if len(b) < headerLen {
		return nil, errReason(fmt.Sprintf("truncated: %d bytes, shorter than the %d-byte header", len(b), headerLen))
	}
	if b[0] != kind {
		return nil, errReason(fmt.Sprintf("kind byte %#02x, want %#02x", b[0], kind))
	}
	if b[1] < valueVersion {
		// No ferry wrote a version below the first.
		return nil, errReason(fmt.Sprintf("encoding version %d, which no ferry writes", b[1]))
	}
	n := binary.LittleEndian.Uint32(b[2:6])
	if b[1] == valueVersion && n > maxPayloadLen { // a newer version may allow more
		return nil, errReason(fmt.Sprintf("payload length %d exceeds the maximum %d", n, maxPayloadLen))
	}
	if got := uint32(len(b) - headerLen); got != n {
		return nil, errReason(fmt.Sprintf("truncated or padded: header says %d payload bytes, found %d", n, got))
	}
	payload, sum := b[headerLen:], binary.LittleEndian.Uint32(b[6:10])
	switch {
	case b[1] == valueVersion && sum == crc32.Checksum(payload, castagnoli):
		return payload, nil
	case b[1] == valueVersion:
		return nil, errReason("checksum mismatch")
	case sum == newerSum(b[0], b[1], payload):
		return nil, errVersion(b[1])
	case sum == crc32.Checksum(payload, castagnoli):
		return nil, errReason(fmt.Sprintf("encoding version %d, but the checksum is a version %d value's, which does not cover the version byte: "+
			"the version byte is damaged (a later version's checksum covers it)", b[1], valueVersion))
	}
	return nil, errReason(fmt.Sprintf("encoding version %d with a checksum mismatch: damaged (a later version's checksum covers its version and checks out)", b[1]))
}

func encodeCheckpoint(c store.Checkpoint) ([]byte, error) {
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(&messages.Checkpoint{
		RecordingId:  c.RecordingID,
		Position:     c.Position,
		Completed:    c.Completed,
		UpdatedAtMs:  c.UpdatedAtMs,
		StartMs:      c.StartMs,
		SessionId:    c.SessionID,
		Seed:         c.Seed,
		Forgotten:    c.Forgotten,
		FromStart:    c.FromStart,
		LastRecord:   encodeMark(c.LastRecord),
		Partitions:   c.Partitions,
		ListedStop:   c.ListedStop,
		ListedStopMs: c.ListedStopMs,
		ForgottenTo:  c.ForgottenTo,
	})
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint of recording %d: %w", c.RecordingID, err)
	}
	return seal(kindCheckpoint, payload), nil
}

// encodeMark is m as stored: nothing when it is not known.
func encodeMark(m store.RecordMark) *messages.RecordMark {
	if !m.Known() {
		return nil
	}
	return &messages.RecordMark{Start: m.Start, End: m.End, Checksum: m.Checksum}
}

// decodeCheckpoint decodes a value stored under recording id want.
func decodeCheckpoint(want int64, b []byte) (store.Checkpoint, error) {
	payload, err := open(kindCheckpoint, b)
	if err != nil {
		return store.Checkpoint{}, err
	}
	var m messages.Checkpoint
	if err := proto.Unmarshal(payload, &m); err != nil {
		return store.Checkpoint{}, errReason("payload: " + err.Error())
	}
	unknown := m.ProtoReflect().GetUnknown()
	if l := m.GetLastRecord(); l != nil && len(unknown) == 0 {
		unknown = l.ProtoReflect().GetUnknown()
	}
	if num, _, n := protowire.ConsumeTag(unknown); n > 0 {
		return store.Checkpoint{}, errNewerField(num) // its checksum checks out: a newer ferry's
	}
	c := store.Checkpoint{
		RecordingID:  m.GetRecordingId(),
		Position:     m.GetPosition(),
		Completed:    m.GetCompleted(),
		UpdatedAtMs:  m.GetUpdatedAtMs(),
		StartMs:      m.GetStartMs(),
		SessionID:    m.GetSessionId(),
		Seed:         m.GetSeed(),
		Forgotten:    m.GetForgotten(),
		FromStart:    m.GetFromStart(),
		Partitions:   m.GetPartitions(),
		ListedStop:   m.GetListedStop(),
		ListedStopMs: m.GetListedStopMs(),
		ForgottenTo:  m.GetForgottenTo(),
	}
	if l := m.GetLastRecord(); l != nil {
		c.LastRecord = store.RecordMark{Start: l.GetStart(), End: l.GetEnd(), Checksum: l.GetChecksum()}
	}
	if c.RecordingID != want {
		return store.Checkpoint{}, errReason(fmt.Sprintf("holds recording %d", c.RecordingID))
	}
	if err := c.Validate(); err != nil {
		return store.Checkpoint{}, errReason(err.Error())
	}
	return c, nil
}

// Definition payload fields (protobuf wire format).
const (
	defChannel       protowire.Number = 1 // string
	defStreamID      protowire.Number = 2 // varint, int32
	defTopic         protowire.Number = 3 // string
	defSchemaVersion protowire.Number = 4 // varint, uint32
)

func encodeDefinition(s store.Stream) []byte {
	var p []byte
	p = protowire.AppendTag(p, defChannel, protowire.BytesType)
	p = protowire.AppendString(p, s.Channel)
	p = protowire.AppendTag(p, defStreamID, protowire.VarintType)
	p = protowire.AppendVarint(p, uint64(uint32(s.StreamID)))
	p = protowire.AppendTag(p, defTopic, protowire.BytesType)
	p = protowire.AppendString(p, s.Topic)
	p = protowire.AppendTag(p, defSchemaVersion, protowire.VarintType)
	p = protowire.AppendVarint(p, uint64(s.SchemaVersion))
	return seal(kindDefinition, p)
}

// decodeDefinition decodes the definition stored for stream name.
func decodeDefinition(name string, b []byte) (store.Stream, error) {
	p, err := open(kindDefinition, b)
	if err != nil {
		return store.Stream{}, err
	}
	s := store.Stream{Name: name}
	for len(p) > 0 {
		num, typ, n := protowire.ConsumeTag(p)
		if n < 0 {
			return store.Stream{}, errReason("payload: " + protowire.ParseError(n).Error())
		}
		p = p[n:]
		switch {
		case (num == defChannel || num == defTopic) && typ == protowire.BytesType:
			v, n := protowire.ConsumeString(p)
			if n < 0 {
				return store.Stream{}, errReason("payload: " + protowire.ParseError(n).Error())
			}
			p = p[n:]
			if num == defChannel {
				s.Channel = v
			} else {
				s.Topic = v
			}
		case (num == defStreamID || num == defSchemaVersion) && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(p)
			if n < 0 {
				return store.Stream{}, errReason("payload: " + protowire.ParseError(n).Error())
			}
			p = p[n:]
			if v > 0xFFFFFFFF {
				return store.Stream{}, errReason(fmt.Sprintf("field %d: %d overflows 32 bits", num, v))
			}
			if num == defStreamID {
				s.StreamID = int32(uint32(v))
			} else {
				s.SchemaVersion = uint32(v)
			}
		case num == defChannel || num == defTopic || num == defStreamID || num == defSchemaVersion:
			return store.Stream{}, errReason(fmt.Sprintf("payload: field %d of wire type %d", num, typ))
		default:
			if n := protowire.ConsumeFieldValue(num, typ, p); n < 0 {
				return store.Stream{}, errReason(fmt.Sprintf("payload: field %d of wire type %d: %v", num, typ, protowire.ParseError(n)))
			}
			return store.Stream{}, errNewerField(num) // its checksum checks out: a newer ferry's
		}
	}
	if err := s.Validate(); err != nil {
		return store.Stream{}, errReason(err.Error())
	}
	return s, nil
}
