package bolt

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/store"
)

func TestCheckpointRoundTrip(t *testing.T) {
	for _, c := range []store.Checkpoint{
		{},
		{RecordingID: 7, Position: 4096, Completed: true, UpdatedAtMs: 1_700_000_000_000},
		{RecordingID: 1<<63 - 1, Position: 1<<63 - 1, UpdatedAtMs: -1},
		{RecordingID: 3, Position: 64, StartMs: 1_700_000_000_123, SessionID: -2_000_000_000},
		{RecordingID: 4, Position: 32, StartMs: 1_700_000_000_124, Seed: true},
		{RecordingID: 5, Position: 1000, Partitions: 2, ListedStop: 5000, ListedStopMs: 1_700_000_000_000},
		{RecordingID: 6, Position: 1000, ListedStop: 4000, ListedStopMs: 1_700_000_000_000, ForgottenTo: 5000},
	} {
		b, err := encodeCheckpoint(c)
		if err != nil {
			t.Fatalf("encode %+v: %v", c, err)
		}
		got, err := decodeCheckpoint(c.RecordingID, b)
		if err != nil || got != c {
			t.Errorf("decode(encode(%+v)) = %+v, %v", c, got, err)
		}
	}
}

// A checkpoint written before ferry stored where a listing showed its recording stopped
// decodes with ListedStop 0: not known.
func TestCheckpointWithoutListedStopDecodesWithNone(t *testing.T) {
	payload, err := proto.Marshal(&messages.Checkpoint{RecordingId: 7, Position: 1000, UpdatedAtMs: 1, StartMs: 1_700_000_000_000, Partitions: 2})
	if err != nil {
		t.Fatal(err)
	}
	c, err := decodeCheckpoint(7, seal(kindCheckpoint, payload))
	if err != nil {
		t.Fatal(err)
	}
	if want := (store.Checkpoint{RecordingID: 7, Position: 1000, UpdatedAtMs: 1, StartMs: 1_700_000_000_000, Partitions: 2}); c != want {
		t.Fatalf("decoded %+v, want %+v (ListedStop 0: not known)", c, want)
	}
}

// A checkpoint written before ferry stored its recording's origin decodes with StartMs 0:
// not known, so it matches any recording of its id.
func TestCheckpointWithoutOriginMatchesAnyRecording(t *testing.T) {
	payload, err := proto.Marshal(&messages.Checkpoint{RecordingId: 7, Position: 4096, UpdatedAtMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := decodeCheckpoint(7, seal(kindCheckpoint, payload))
	if err != nil {
		t.Fatal(err)
	}
	if c.StartMs != 0 || !c.SameRecording(1_700_000_000_000, 42) {
		t.Fatalf("decoded %+v: want no origin, matching any recording", c)
	}
	c.StartMs, c.SessionID = 1_700_000_000_000, 42
	for _, other := range []struct {
		startMs int64
		session int32
	}{{1_700_000_000_001, 42}, {1_700_000_000_000, 43}} {
		if c.SameRecording(other.startMs, other.session) {
			t.Errorf("%+v matches a recording started at %d in session %d", c, other.startMs, other.session)
		}
	}
}

func TestDefinitionRoundTrip(t *testing.T) {
	for _, s := range []store.Stream{
		{Name: "a", Channel: "aeron:ipc", Topic: "t"},
		{Name: "b", Channel: "aeron:udp?endpoint=h:1", StreamID: -1, Topic: "persistent://p/n/t", SchemaVersion: 1<<32 - 1},
	} {
		got, err := decodeDefinition(s.Name, encodeDefinition(s))
		if err != nil || got != s {
			t.Errorf("decode(encode(%+v)) = %+v, %v", s, got, err)
		}
	}
}

func TestUnknownEnvelopeVersion(t *testing.T) {
	b := AsNewerFerry(encodeDefinition(store.Stream{Name: "a", Channel: "c", Topic: "t"}), 2)
	var v errVersion
	if _, err := decodeDefinition("a", b); !errors.As(err, &v) || v != 2 {
		t.Errorf("decode of version 2: err = %v, want errVersion(2)", err)
	}
}

// The version byte is outside version 1's checksum: a bit flipped in it must read as damage,
// never as a newer ferry's value, which would send the operator looking for a release that
// does not exist and keep the reset from clearing it.
func TestAFlippedBitInTheVersionByteIsDamageNotANewerVersion(t *testing.T) {
	good, err := encodeCheckpoint(store.Checkpoint{RecordingID: 7, Position: 4096, UpdatedAtMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	for bit := range 8 {
		b := slices.Clone(good)
		b[1] ^= 1 << bit
		_, err := decodeCheckpoint(7, b)
		var v errVersion
		var r errReason
		if errors.As(err, &v) || !errors.As(err, &r) {
			t.Errorf("version byte %#02x (bit %d flipped): err = %v, want a damage reason", b[1], bit, err)
		}
	}
}

// A newer ferry's value is told from damage by its checksum, which covers its version: one
// damaged elsewhere is damage too.
func TestANewerVersionDamagedElsewhereIsDamage(t *testing.T) {
	good := AsNewerFerry(encodeDefinition(store.Stream{Name: "a", Channel: "c", Topic: "t"}), 3)
	for at := 2; at < len(good); at++ {
		b := slices.Clone(good)
		b[at] ^= 0x10
		_, err := decodeDefinition("a", b)
		var v errVersion
		if errors.As(err, &v) || err == nil {
			t.Errorf("version 3, byte %d damaged: err = %v, want a damage reason", at, err)
		}
	}
}

// FuzzDecodeCheckpoint checks that no input panics and that whatever decodes is valid and
// survives a round trip.
func FuzzDecodeCheckpoint(f *testing.F) {
	good, _ := encodeCheckpoint(store.Checkpoint{RecordingID: 7, Position: 4096, Completed: true, UpdatedAtMs: 1})
	f.Add(int64(7), good)
	f.Add(int64(7), good[:len(good)-1])
	forgotten, _ := encodeCheckpoint(store.Checkpoint{RecordingID: 7, Position: 4096, Completed: true, Forgotten: true, UpdatedAtMs: 1})
	f.Add(int64(7), forgotten)
	f.Add(int64(0), []byte{})
	f.Fuzz(func(t *testing.T, id int64, b []byte) {
		c, err := decodeCheckpoint(id, b)
		if err != nil {
			return
		}
		if verr := c.Validate(); verr != nil || c.RecordingID != id {
			t.Fatalf("decoded an invalid checkpoint %+v under id %d: %v", c, id, verr)
		}
		again, err := encodeCheckpoint(c)
		if err == nil {
			var got store.Checkpoint
			got, err = decodeCheckpoint(id, again)
			if err == nil && got != c {
				t.Errorf("round trip of %+v gave %+v", c, got)
			}
		}
		if err != nil {
			t.Errorf("round trip of %+v: %v", c, err)
		}
	})
}

// FuzzDecodeDefinition checks that no input panics and that what decodes is valid.
func FuzzDecodeDefinition(f *testing.F) {
	good := encodeDefinition(store.Stream{Name: "a", Channel: "aeron:ipc", StreamID: 3, Topic: "t", SchemaVersion: 2})
	f.Add(good)
	f.Add(good[:len(good)-2])
	f.Add([]byte("D\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeDefinition("a", b)
		if err == nil {
			if verr := s.Validate(); verr != nil {
				t.Errorf("decoded an invalid definition %+v: %v", s, verr)
			}
		}
	})
}
