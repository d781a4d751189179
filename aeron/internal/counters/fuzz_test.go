package counters

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

const fuzzCounters = 4

// FuzzMetadata fills the metadata and values buffers with arbitrary bytes
// and exercises every read path. Properties: no panic; labels are either
// within MaxLabelLength or an ErrCorrupt; decoded rec-pos keys re-encode
// to the bytes they came from; lookups only return allocated counters of
// the requested type.
func FuzzMetadata(f *testing.F) {
	d := newFakeDriver(fuzzCounters)
	d.allocate(0, TypeClientHeartbeat, []byte{7}, "client-heartbeat: 7")
	d.allocateRecordingPos(1, RecordingPosKey{RecordingID: 3, SessionID: 9, SourceIdentity: "aeron:ipc", ArchiveID: 1})
	d.allocate(2, TypePublisherLimit, nil, "pub-lmt")
	d.free(2, 10)
	f.Add(bytes.Clone(d.metadata.Bytes()), bytes.Clone(d.values.Bytes()))
	f.Add([]byte{1, 0, 0, 0, 100, 0, 0, 0}, []byte{})
	f.Add(bytes.Repeat([]byte{0xFF}, MetadataLength), bytes.Repeat([]byte{0x01}, ValueLength))

	f.Fuzz(func(t *testing.T, metadata, values []byte) {
		meta := shm.Alloc(fuzzCounters * MetadataLength)
		copy(meta.Bytes(), metadata)
		vals := shm.Alloc(fuzzCounters * ValueLength)
		copy(vals.Bytes(), values)
		r, err := NewReader(meta, vals)
		if err != nil {
			t.Fatal(err)
		}

		for c := range r.Allocated() {
			if c.State() != StateAllocated {
				t.Fatalf("counter %d yielded in state %v", c.ID(), c.State())
			}
			_, _, _, _ = c.Value(), c.RegistrationID(), c.OwnerID(), c.ReferenceID()
			_ = c.FreeForReuseDeadline()
			label, err := c.Label()
			if err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Label: %v", err)
			}
			if len(label) > MaxLabelLength {
				t.Fatalf("label of %d bytes", len(label))
			}
			if c.TypeID() != TypeRecordingPosition {
				continue
			}
			key := c.Key()
			k, err := DecodeRecordingPosKey(key)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("DecodeRecordingPosKey: %v", err)
				}
				continue
			}
			if enc := k.Append(nil); !bytes.Equal(enc, key[:len(enc)]) {
				t.Fatalf("re-encoded key % x differs from stored % x", enc, key[:len(enc)])
			}
			if !c.IsRecordingPosition(k.RecordingID) {
				t.Fatalf("counter %d is not the rec-pos of its own recording %d", c.ID(), k.RecordingID)
			}
		}

		for _, archiveID := range []int64{AnyArchive, 1} {
			if c, ok := r.FindRecordingPosition(3, archiveID); ok && (c.State() != StateAllocated || c.TypeID() != TypeRecordingPosition) {
				t.Fatalf("FindRecordingPosition returned counter %d: %v %v", c.ID(), c.State(), c.TypeID())
			}
			if c, ok := r.FindRecordingPositionBySession(9, archiveID); ok && c.TypeID() != TypeRecordingPosition {
				t.Fatalf("FindRecordingPositionBySession returned a %v counter", c.TypeID())
			}
		}
		for id := CounterID(-1); id <= fuzzCounters; id++ {
			if _, err := r.Counter(id); (err != nil) != (id < 0 || id >= fuzzCounters) {
				t.Fatalf("Counter(%d): %v", id, err)
			}
		}
	})
}

// FuzzRecordingPosKey decodes arbitrary keys (no panic; success exactly
// when the layout holds) and round-trips arbitrary key values.
func FuzzRecordingPosKey(f *testing.F) {
	f.Add(RecordingPosKey{RecordingID: 1, SessionID: 2, SourceIdentity: "aeron:udp", ArchiveID: 3}.Append(nil), int64(1), int32(2), "x", int64(3))
	f.Add([]byte{}, int64(-1), int32(-1), "", int64(-1))

	f.Fuzz(func(t *testing.T, raw []byte, recordingID int64, sessionID int32, identity string, archiveID int64) {
		if k, err := DecodeRecordingPosKey(raw); err == nil {
			if enc := k.Append(nil); !bytes.Equal(enc, raw[:len(enc)]) {
				t.Fatalf("re-encoded % x, decoded from % x", enc, raw)
			}
		} else if !errors.Is(err, ErrCorrupt) || k != (RecordingPosKey{}) {
			t.Fatalf("failed decode returned %+v, %v", k, err)
		}

		k := RecordingPosKey{RecordingID: recordingID, SessionID: sessionID, SourceIdentity: identity, ArchiveID: archiveID}
		got, err := DecodeRecordingPosKey(k.Append(nil))
		want := k
		want.SourceIdentity = identity[:min(len(identity), RecordingPosKeyMaxSourceIdentityLength)]
		if err != nil || got != want {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", k, got, err)
		}
	})
}
