package logbuffer

import (
	"errors"
	"math"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

func TestWrapReadsMetadata(t *testing.T) {
	p := testParams()
	p.InitialTermID = -3
	p.StartPosition = 5*int64(p.TermLength) + 640
	l := newTestLog(t, p)

	if l.TermLength() != p.TermLength || l.PageSize() != p.PageSize || l.MTU() != p.MTU ||
		l.InitialTermID() != p.InitialTermID || l.RegistrationID() != p.RegistrationID ||
		l.PositionBitsToShift() != 16 || l.MaxMessageLength() != 8<<10 || l.MaxPossiblePosition() != 1<<47 {
		t.Errorf("configuration read back wrong: %+v", l)
	}
	want := FrameHeader{Version: CurrentVersion, Flags: FlagsUnfragmented, Type: FrameTypeData,
		SessionID: p.SessionID, StreamID: p.StreamID, TermID: p.InitialTermID}
	if got := l.DefaultFrameHeader(); got != want {
		t.Errorf("DefaultFrameHeader = %+v, want %+v", got, want)
	}
	if got := l.ActiveTermCount(); got != 5 {
		t.Errorf("ActiveTermCount = %d, want 5", got)
	}
	// Term 5 (id 2) is in partition 2 at offset 640; the other partitions
	// hold the terms that last used them: 3 (id 0) and 4 (id 1).
	for i, want := range []RawTail{PackRawTail(0, 0), PackRawTail(1, 0), PackRawTail(2, 640)} {
		if got := l.RawTail(i); got != want {
			t.Errorf("RawTail(%d) = %v, want %v", i, got, want)
		}
	}
	if l.IsConnected() {
		t.Error("fresh log is connected")
	}
	if got := l.EndOfStreamPosition(); got != math.MaxInt64 {
		t.Errorf("EndOfStreamPosition = %d, want MaxInt64", got)
	}
	l.SetIsConnected(true)
	l.SetEndOfStreamPosition(4096)
	if !l.IsConnected() || l.EndOfStreamPosition() != 4096 {
		t.Error("driver-side setters not visible")
	}
	for i := range PartitionCount {
		if l.Term(i).Len() != p.TermLength {
			t.Errorf("term %d is %d bytes", i, l.Term(i).Len())
		}
	}
	if err := l.Close(); err != nil {
		t.Errorf("Close of a wrapped log: %v", err)
	}
}

// The terms are the first three termLength slices of the buffer and the
// metadata the last MetadataLength bytes, also when the page size leaves
// a gap between them.
func TestWrapHugePageGeometry(t *testing.T) {
	p := testParams()
	p.PageSize = 2 << 20
	b := shm.Alloc(LogLength(p.TermLength, p.PageSize))
	if err := InitMetadata(b, p); err != nil {
		t.Fatal(err)
	}
	l, err := Wrap(b)
	if err != nil {
		t.Fatal(err)
	}
	if b.GetInt32(b.Len()-MetadataLength+termLengthOffset) != int32(p.TermLength) {
		t.Error("metadata is not the last 4096 bytes")
	}
	l.Term(2).PutUint8(p.TermLength-1, 0xAB)
	if b.GetUint8(3*p.TermLength-1) != 0xAB {
		t.Error("term 2 is not at 2×termLength")
	}
}

func TestWrapRejectsInvalidLogs(t *testing.T) {
	p := testParams()
	valid := func() shm.Buffer {
		b := shm.Alloc(LogLength(p.TermLength, p.PageSize))
		if err := InitMetadata(b, p); err != nil {
			t.Fatal(err)
		}
		return b
	}
	meta := func(b shm.Buffer) shm.Buffer { return b.Sub(b.Len()-MetadataLength, MetadataLength) }
	for _, tc := range []struct {
		name  string
		build func() shm.Buffer
		also  error
	}{
		{"empty", func() shm.Buffer { return shm.Buffer{} }, nil},
		{"shorter than metadata", func() shm.Buffer { return shm.Alloc(MetadataLength - 8) }, nil},
		{"zeroed (not initialised)", func() shm.Buffer { return shm.Alloc(LogLength(p.TermLength, p.PageSize)) }, ErrInvalidTermLength},
		{"term length not a power of two", func() shm.Buffer {
			b := valid()
			meta(b).PutInt32(termLengthOffset, 96<<10)
			return b
		}, ErrInvalidTermLength},
		{"page size too small", func() shm.Buffer {
			b := valid()
			meta(b).PutInt32(pageSizeOffset, 1024)
			return b
		}, ErrInvalidPageSize},
		{"length does not match", func() shm.Buffer {
			b := valid()
			meta(b).PutInt32(termLengthOffset, 128<<10)
			return b
		}, nil},
		{"one page too long", func() shm.Buffer {
			b := shm.Alloc(LogLength(p.TermLength, p.PageSize) + p.PageSize)
			c := valid()
			copy(meta(b).Bytes(), meta(c).Bytes())
			return b
		}, nil},
		{"default header length", func() shm.Buffer {
			b := valid()
			meta(b).PutInt32(defaultFrameHeaderLengthOffset, 24)
			return b
		}, nil},
		{"misaligned", func() shm.Buffer {
			b := shm.Alloc(LogLength(p.TermLength, p.PageSize) + 1)
			return shm.Wrap(b.Bytes()[1:])
		}, shm.ErrMisaligned},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Wrap(tc.build())
			if !errors.Is(err, ErrInvalidLog) {
				t.Fatalf("Wrap = %v, want ErrInvalidLog", err)
			}
			if tc.also != nil && !errors.Is(err, tc.also) {
				t.Errorf("Wrap = %v, want it to wrap %v too", err, tc.also)
			}
		})
	}
}

func TestInitMetadataRejectsInvalidParams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*LogParams)
		length int
	}{
		{"term length", func(p *LogParams) { p.TermLength = 1000 }, 0},
		{"page size", func(p *LogParams) { p.PageSize = 3 << 10 }, 0},
		{"buffer length", func(p *LogParams) {}, MetadataLength},
		{"mtu unaligned", func(p *LogParams) { p.MTU = 1400 }, 0},
		{"mtu header only", func(p *LogParams) { p.MTU = HeaderLength }, 0},
		{"mtu beyond term", func(p *LogParams) { p.MTU = 2 * MinTermLength }, 0},
		{"negative start", func(p *LogParams) { p.StartPosition = -32 }, 0},
		{"unaligned start", func(p *LogParams) { p.StartPosition = 8 }, 0},
		{"start at max position", func(p *LogParams) { p.StartPosition = MaxPossiblePosition(MinTermLength) }, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testParams()
			tc.modify(&p)
			n := tc.length
			if n == 0 {
				n = LogLength(MinTermLength, MinPageSize)
			}
			b := shm.Alloc(n)
			if err := InitMetadata(b, p); !errors.Is(err, ErrInvalidLog) {
				t.Fatalf("InitMetadata = %v, want ErrInvalidLog", err)
			}
			for _, c := range b.Bytes() {
				if c != 0 {
					t.Fatal("InitMetadata wrote to the buffer despite the error")
				}
			}
		})
	}
}

func TestRawTailPartitionOutOfRangeIsAnAssertion(t *testing.T) {
	l := newTestLog(t, testParams())
	defer func() {
		if r := recover(); r == nil {
			t.Error("RawTail(3) did not panic")
		}
	}()
	l.RawTail(PartitionCount)
}
