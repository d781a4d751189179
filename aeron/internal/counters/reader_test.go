package counters

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

func TestNewReaderSizesAndAlignment(t *testing.T) {
	for _, tc := range []struct {
		name             string
		metadata, values int
		wantMax          CounterID
	}{
		{"CnC proportions", 4 * MetadataLength, 4 * ValueLength, 3},
		{"metadata shorter", 2 * MetadataLength, 4 * ValueLength, 1},
		{"values shorter", 4 * MetadataLength, 3 * ValueLength, 2},
		{"partial records ignored", 2*MetadataLength + 100, 2*ValueLength + 100, 1},
		{"empty", 0, 0, NullCounterID},
	} {
		r, err := NewReader(shm.Alloc(tc.metadata), shm.Alloc(tc.values))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := r.MaxCounterID(); got != tc.wantMax {
			t.Errorf("%s: MaxCounterID = %d, want %d", tc.name, got, tc.wantMax)
		}
	}
	misaligned := shm.Wrap(shm.Alloc(MetadataLength + 8).Bytes()[4:])
	if _, err := NewReader(misaligned, shm.Alloc(ValueLength)); !errors.Is(err, ErrInvalidBuffer) {
		t.Errorf("misaligned metadata: err = %v, want ErrInvalidBuffer", err)
	}
	if _, err := NewReader(shm.Alloc(MetadataLength), misaligned); !errors.Is(err, ErrInvalidBuffer) {
		t.Errorf("misaligned values: err = %v, want ErrInvalidBuffer", err)
	}
}

func TestCounterReadsBothRecords(t *testing.T) {
	d := newFakeDriver(4)
	key := binary.LittleEndian.AppendUint64(nil, 77)
	d.allocate(2, TypeClientHeartbeat, key, "client-heartbeat: 77")
	d.setValue(2, 1_700_000_000_000)
	d.values.PutInt64(2*ValueLength+RegistrationIDOffset, 77)
	d.values.PutInt64(2*ValueLength+OwnerIDOffset, 78)
	d.values.PutInt64(2*ValueLength+ReferenceIDOffset, 79)

	c, err := d.reader(t).Counter(2)
	if err != nil {
		t.Fatal(err)
	}
	label, err := c.Label()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"id", c.ID(), CounterID(2)},
		{"state", c.State(), StateAllocated},
		{"type id", c.TypeID(), TypeClientHeartbeat},
		{"value", c.Value(), int64(1_700_000_000_000)},
		{"registration id", c.RegistrationID(), int64(77)},
		{"owner id", c.OwnerID(), int64(78)},
		{"reference id", c.ReferenceID(), int64(79)},
		{"deadline", c.FreeForReuseDeadline(), NotFreeToReuse},
		{"label", label, "client-heartbeat: 77"},
		{"key client id", int64(binary.LittleEndian.Uint64(c.Key()[HeartbeatKeyClientIDOffset:])), int64(77)},
		{"key length", len(c.Key()), MaxKeyLength},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	// Key returns a copy: changing it does not touch shared memory.
	c.Key()[0] = 0xFF
	if c.Key()[0] != 77 {
		t.Error("Key aliases shared memory")
	}
	// Value is live: a new store is seen.
	d.setValue(2, 5)
	if c.Value() != 5 {
		t.Errorf("Value after update = %d", c.Value())
	}
}

func TestCounterRejectsOutOfRangeIDs(t *testing.T) {
	r := newFakeDriver(3).reader(t)
	for _, id := range []CounterID{-1, 3, 1 << 30} {
		if _, err := r.Counter(id); !errors.Is(err, ErrCounterIDOutOfRange) {
			t.Errorf("Counter(%d): err = %v, want ErrCounterIDOutOfRange", id, err)
		}
	}
	if _, err := r.Counter(2); err != nil {
		t.Errorf("Counter(2): %v", err)
	}
}

func TestLabelRejectsImpossibleLengths(t *testing.T) {
	d := newFakeDriver(1)
	d.allocate(0, TypeSystemCounter, nil, "x")
	c, err := d.reader(t).Counter(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int32{-1, MaxLabelLength + 1, 1 << 30} {
		d.metadata.StoreInt32(LabelLengthOffset, n)
		var corrupt *CorruptError
		if _, err := c.Label(); !errors.As(err, &corrupt) || !errors.Is(err, ErrCorrupt) || corrupt.ID != 0 {
			t.Errorf("label length %d: err = %v, want *CorruptError for counter 0", n, err)
		}
	}
	d.metadata.StoreInt32(LabelLengthOffset, MaxLabelLength)
	if label, err := c.Label(); err != nil || len(label) != MaxLabelLength {
		t.Errorf("maximal label: %d bytes, %v", len(label), err)
	}
}

func TestAllocatedSkipsReclaimedAndStopsAtUnused(t *testing.T) {
	d := newFakeDriver(8)
	d.allocate(0, TypeSystemCounter, nil, "a")
	d.allocate(1, TypePublisherLimit, nil, "b")
	d.allocate(2, TypeSubscriberPosition, nil, "c")
	d.free(1, 1_000)
	// id 3 never used; id 4 allocated behind it must not be reached.
	d.allocate(4, TypeClientHeartbeat, nil, "e")

	var ids []CounterID
	for c := range d.reader(t).Allocated() {
		ids = append(ids, c.ID())
	}
	if len(ids) != 2 || ids[0] != 0 || ids[1] != 2 {
		t.Fatalf("Allocated yielded %v, want [0 2]", ids)
	}

	c, _ := d.reader(t).Counter(1)
	if c.State() != StateReclaimed || c.FreeForReuseDeadline() != 1_000 {
		t.Fatalf("freed counter: state %v, deadline %d", c.State(), c.FreeForReuseDeadline())
	}

	// Breaking out of the loop stops the iteration.
	n := 0
	for range d.reader(t).Allocated() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("iterations after break: %d", n)
	}
}

func TestFindMatchesTypeAndKey(t *testing.T) {
	d := newFakeDriver(6)
	heartbeatKey := func(clientID int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(clientID)) }
	d.allocate(0, TypeClientHeartbeat, heartbeatKey(10), "client-heartbeat: 10")
	d.allocate(1, TypePublisherLimit, heartbeatKey(11), "pub-lmt") // same key bytes, other type
	d.allocate(2, TypeClientHeartbeat, heartbeatKey(11), "client-heartbeat: 11")
	d.allocate(3, TypeClientHeartbeat, heartbeatKey(11), "client-heartbeat: 11 (later)")

	r := d.reader(t)
	byClient := func(id int64) func([]byte) bool {
		return func(key []byte) bool {
			return int64(binary.LittleEndian.Uint64(key[HeartbeatKeyClientIDOffset:])) == id
		}
	}
	c, ok := r.Find(TypeClientHeartbeat, byClient(11))
	if !ok || c.ID() != 2 {
		t.Fatalf("Find client 11 = %d, %v; want the lowest id, 2", c.ID(), ok)
	}
	if _, ok := r.Find(TypeClientHeartbeat, byClient(12)); ok {
		t.Fatal("Find client 12 found a counter")
	}
	if c, ok := r.Find(TypePublisherLimit, byClient(11)); !ok || c.ID() != 1 {
		t.Fatalf("Find pub-lmt = %d, %v; want 1", c.ID(), ok)
	}
	d.free(2, 0)
	if c, ok := r.Find(TypeClientHeartbeat, byClient(11)); !ok || c.ID() != 3 {
		t.Fatalf("Find after free = %d, %v; want 3", c.ID(), ok)
	}
}

func TestRecordingPosKeyRoundTrip(t *testing.T) {
	for _, k := range []RecordingPosKey{
		{RecordingID: 42, SessionID: -7, SourceIdentity: "127.0.0.1:40123", ArchiveID: 9},
		{RecordingID: -1, SessionID: 0, SourceIdentity: "", ArchiveID: AnyArchive},
		{RecordingID: 1, SessionID: 1, SourceIdentity: strings.Repeat("s", RecordingPosKeyMaxSourceIdentityLength), ArchiveID: 2},
	} {
		enc := k.Append(nil)
		if len(enc) != recordingPosKeyFixedLength+len(k.SourceIdentity) {
			t.Errorf("%+v: encoded %d bytes", k, len(enc))
		}
		got, err := DecodeRecordingPosKey(enc)
		if err != nil || got != k {
			t.Errorf("decode(encode(%+v)) = %+v, %v", k, got, err)
		}
	}
}

func TestRecordingPosKeyEncodingIsTheArchives(t *testing.T) {
	k := RecordingPosKey{RecordingID: 0x0102030405060708, SessionID: 0x0A0B0C0D, SourceIdentity: "ab", ArchiveID: 0x1112131415161718}
	want := []byte{
		8, 7, 6, 5, 4, 3, 2, 1, // recording id
		0x0D, 0x0C, 0x0B, 0x0A, // session id
		2, 0, 0, 0, // source identity length
		'a', 'b', // source identity
		0x18, 0x17, 0x16, 0x15, 0x14, 0x13, 0x12, 0x11, // archive id at 16 + L
	}
	if got := k.Append(nil); !bytes.Equal(got, want) {
		t.Fatalf("Append = % x\nwant     % x", got, want)
	}
	long := RecordingPosKey{SourceIdentity: strings.Repeat("x", 200)}
	got, err := DecodeRecordingPosKey(long.Append(nil))
	if err != nil || len(got.SourceIdentity) != RecordingPosKeyMaxSourceIdentityLength {
		t.Fatalf("long identity: decoded %d bytes, %v; want truncation to %d", len(got.SourceIdentity), err, RecordingPosKeyMaxSourceIdentityLength)
	}
	if len(long.Append(nil)) != MaxKeyLength {
		t.Fatalf("maximal key is %d bytes, want exactly MaxKeyLength", len(long.Append(nil)))
	}
}

func TestDecodeRecordingPosKeyRejectsMalformedKeys(t *testing.T) {
	valid := RecordingPosKey{RecordingID: 1, SessionID: 2, SourceIdentity: "abcd", ArchiveID: 3}.Append(nil)
	withLength := func(n int32) []byte {
		k := bytes.Clone(valid)
		binary.LittleEndian.PutUint32(k[RecordingPosKeySourceIdentityLengthOffset:], uint32(n))
		return k
	}
	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"empty", nil},
		{"shorter than the fixed part", valid[:recordingPosKeyFixedLength-1]},
		{"truncated archive id", valid[:len(valid)-1]},
		{"negative identity length", withLength(-1)},
		{"identity longer than the archive writes", withLength(RecordingPosKeyMaxSourceIdentityLength + 1)},
		{"identity past the key", withLength(5)},
	} {
		_, err := DecodeRecordingPosKey(tc.key)
		var corrupt *CorruptError
		if !errors.As(err, &corrupt) || !errors.Is(err, ErrCorrupt) || corrupt.ID != NullCounterID {
			t.Errorf("%s: err = %v, want *CorruptError", tc.name, err)
		}
	}
}

func TestFindRecordingPosition(t *testing.T) {
	d := newFakeDriver(8)
	d.allocateRecordingPos(0, RecordingPosKey{RecordingID: 5, SessionID: 100, SourceIdentity: "aeron:ipc", ArchiveID: 1})
	d.allocateRecordingPos(1, RecordingPosKey{RecordingID: 5, SessionID: 200, SourceIdentity: "", ArchiveID: 2})
	d.allocateRecordingPos(2, RecordingPosKey{RecordingID: 6, SessionID: 300, SourceIdentity: "192.168.0.1:4000", ArchiveID: 2})
	// A heartbeat counter whose key happens to start with recording id 6.
	d.allocate(3, TypeClientHeartbeat, binary.LittleEndian.AppendUint64(nil, 6), "client-heartbeat: 6")
	d.setValue(2, 4096)
	r := d.reader(t)

	for _, tc := range []struct {
		name      string
		find      func() (Counter, bool)
		wantID    CounterID
		wantFound bool
	}{
		{"recording 5, any archive", func() (Counter, bool) { return r.FindRecordingPosition(5, AnyArchive) }, 0, true},
		{"recording 5, archive 2", func() (Counter, bool) { return r.FindRecordingPosition(5, 2) }, 1, true},
		{"recording 5, archive 3", func() (Counter, bool) { return r.FindRecordingPosition(5, 3) }, 0, false},
		{"recording 6, archive 2", func() (Counter, bool) { return r.FindRecordingPosition(6, 2) }, 2, true},
		{"recording 7", func() (Counter, bool) { return r.FindRecordingPosition(7, AnyArchive) }, 0, false},
		{"session 300", func() (Counter, bool) { return r.FindRecordingPositionBySession(300, AnyArchive) }, 2, true},
		{"session 200, archive 2", func() (Counter, bool) { return r.FindRecordingPositionBySession(200, 2) }, 1, true},
		{"session 200, archive 1", func() (Counter, bool) { return r.FindRecordingPositionBySession(200, 1) }, 0, false},
		{"session 400", func() (Counter, bool) { return r.FindRecordingPositionBySession(400, AnyArchive) }, 0, false},
	} {
		c, ok := tc.find()
		if ok != tc.wantFound || (ok && c.ID() != tc.wantID) {
			t.Errorf("%s: found %v (id %d), want %v (id %d)", tc.name, ok, c.ID(), tc.wantFound, tc.wantID)
		}
	}

	c, _ := r.FindRecordingPosition(6, AnyArchive)
	if c.Value() != 4096 || !c.IsRecordingPosition(6) || c.IsRecordingPosition(5) {
		t.Fatalf("rec-pos 6: value %d, IsRecordingPosition(6) %v, (5) %v", c.Value(), c.IsRecordingPosition(6), c.IsRecordingPosition(5))
	}
	// The recording stops: the archive frees the counter.
	d.free(2, 0)
	if c.IsRecordingPosition(6) {
		t.Fatal("freed counter still reported as rec-pos of recording 6")
	}
	if _, ok := r.FindRecordingPosition(6, AnyArchive); ok {
		t.Fatal("found the rec-pos of a stopped recording")
	}
	if heartbeat, _ := r.Counter(3); heartbeat.IsRecordingPosition(6) {
		t.Fatal("a heartbeat counter passed for a rec-pos counter")
	}
}

// A rec-pos key whose source identity length is corrupt cannot be matched
// on archive id, but still matches AnyArchive on its fixed fields.
func TestFindRecordingPositionWithACorruptIdentityLength(t *testing.T) {
	d := newFakeDriver(2)
	key := RecordingPosKey{RecordingID: 8, SessionID: 1, ArchiveID: 4}.Append(nil)
	binary.LittleEndian.PutUint32(key[RecordingPosKeySourceIdentityLengthOffset:], 1000)
	d.allocate(0, TypeRecordingPosition, key, "rec-pos: corrupt")
	r := d.reader(t)
	if _, ok := r.FindRecordingPosition(8, 4); ok {
		t.Error("matched an archive id behind a corrupt identity length")
	}
	if c, ok := r.FindRecordingPosition(8, AnyArchive); !ok || c.ID() != 0 {
		t.Errorf("AnyArchive lookup = %d, %v", c.ID(), ok)
	}
}
