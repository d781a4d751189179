package logbuffer

import (
	"errors"
	"math"
	"testing"
)

func TestCheckTermLengthAndPageSize(t *testing.T) {
	for _, tc := range []struct {
		n                  int
		termOK, pageSizeOK bool
	}{
		{0, false, false},
		{-MinTermLength, false, false},
		{2 << 10, false, false},
		{4 << 10, false, true},
		{32 << 10, false, true},
		{64 << 10, true, true},
		{96 << 10, false, false},
		{(64 << 10) + 1, false, false},
		{16 << 20, true, true},
		{1 << 30, true, true},
		{2 << 30, false, false},
	} {
		if err := CheckTermLength(tc.n); (err == nil) != tc.termOK || (err != nil && !errors.Is(err, ErrInvalidTermLength)) {
			t.Errorf("CheckTermLength(%d) = %v, want ok=%v", tc.n, err, tc.termOK)
		}
		if err := CheckPageSize(tc.n); (err == nil) != tc.pageSizeOK || (err != nil && !errors.Is(err, ErrInvalidPageSize)) {
			t.Errorf("CheckPageSize(%d) = %v, want ok=%v", tc.n, err, tc.pageSizeOK)
		}
	}
}

func TestLogLength(t *testing.T) {
	for _, tc := range []struct {
		termLength, pageSize, want int
	}{
		{64 << 10, 4 << 10, 3*(64<<10) + 4096},
		{16 << 20, 4 << 10, 3*(16<<20) + 4096},
		{64 << 10, 2 << 20, 2 << 20},              // huge pages: one page holds it all
		{1 << 30, 2 << 20, 3*(1<<30) + (2 << 20)}, // metadata gets a whole page
		{1 << 30, 1 << 30, 4 << 30},
	} {
		if got := LogLength(tc.termLength, tc.pageSize); got != tc.want {
			t.Errorf("LogLength(%d, %d) = %d, want %d", tc.termLength, tc.pageSize, got, tc.want)
		}
	}
}

func TestMaxMessageLengthAndPositions(t *testing.T) {
	for _, tc := range []struct {
		termLength, maxMessage, shift int
		maxPosition                   int64
	}{
		{64 << 10, 8 << 10, 16, 1 << 47},
		{16 << 20, 2 << 20, 24, 1 << 55},
		{128 << 20, 16 << 20, 27, 1 << 58},
		{1 << 30, 16 << 20, 30, 1 << 61},
	} {
		if got := MaxMessageLength(tc.termLength); got != tc.maxMessage {
			t.Errorf("MaxMessageLength(%d) = %d, want %d", tc.termLength, got, tc.maxMessage)
		}
		if got := PositionBitsToShift(tc.termLength); got != tc.shift {
			t.Errorf("PositionBitsToShift(%d) = %d, want %d", tc.termLength, got, tc.shift)
		}
		if got := MaxPossiblePosition(tc.termLength); got != tc.maxPosition {
			t.Errorf("MaxPossiblePosition(%d) = %d, want %d", tc.termLength, got, tc.maxPosition)
		}
	}
}

// Position arithmetic, including term ids that wrap past math.MaxInt32
// and negative term ids.
func TestPositionArithmetic(t *testing.T) {
	const termLength = 64 << 10
	shift := PositionBitsToShift(termLength)
	for _, tc := range []struct {
		name          string
		initialTermID int32
		termID        int32
		termOffset    int
		position      int64
		partition     int
	}{
		{"origin", 0, 0, 0, 0, 0},
		{"first term", 0, 0, 4096, 4096, 0},
		{"second term", 0, 1, 32, termLength + 32, 1},
		{"fourth term reuses partition 0", 0, 3, 0, 3 * termLength, 0},
		{"last offset", 5, 6, termLength - 32, 2*termLength - 32, 1},
		{"negative initial", -10, -8, 64, 2*termLength + 64, 2},
		{"initial at MaxInt32, no wrap yet", math.MaxInt32, math.MaxInt32, 96, 96, 0},
		{"wrapped once", math.MaxInt32, math.MinInt32, 0, termLength, 1},
		{"wrapped further", math.MaxInt32 - 1, math.MinInt32 + 2, 128, 4*termLength + 128, 1},
		{"crosses zero", -2, 1, 0, 3 * termLength, 0},
		{"last possible term", 0, math.MaxInt32, termLength - 32, MaxPossiblePosition(termLength) - 32, int(uint32(math.MaxInt32) % 3)},
		{"last possible term, wrapped", 100, math.MinInt32 + 99, 0, MaxPossiblePosition(termLength) - termLength, int(uint32(math.MaxInt32) % 3)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ComputePosition(tc.termID, tc.termOffset, shift, tc.initialTermID); got != tc.position {
				t.Errorf("ComputePosition = %d, want %d", got, tc.position)
			}
			if got := TermBeginPosition(tc.termID, shift, tc.initialTermID); got != tc.position-int64(tc.termOffset) {
				t.Errorf("TermBeginPosition = %d, want %d", got, tc.position-int64(tc.termOffset))
			}
			if got := TermIDFromPosition(tc.position, shift, tc.initialTermID); got != tc.termID {
				t.Errorf("TermIDFromPosition = %d, want %d", got, tc.termID)
			}
			if got := TermOffsetFromPosition(tc.position, termLength); got != tc.termOffset {
				t.Errorf("TermOffsetFromPosition = %d, want %d", got, tc.termOffset)
			}
			if got := PartitionIndexByPosition(tc.position, shift); got != tc.partition {
				t.Errorf("PartitionIndexByPosition = %d, want %d", got, tc.partition)
			}
			if got := PartitionIndexByTermCount(tc.termID - tc.initialTermID); got != tc.partition {
				t.Errorf("PartitionIndexByTermCount = %d, want %d", got, tc.partition)
			}
		})
	}
}

func TestPartitionIndexNeverNegative(t *testing.T) {
	for _, count := range []int32{-1, math.MinInt32, -3} {
		if got := PartitionIndexByTermCount(count); got < 0 || got >= PartitionCount {
			t.Errorf("PartitionIndexByTermCount(%d) = %d", count, got)
		}
	}
}

func TestRawTail(t *testing.T) {
	const termLength = 64 << 10
	for _, tc := range []struct {
		termID     int32
		termOffset int
		raw        int64
		clamped    int
	}{
		{0, 0, 0, 0},
		{7, 4096, 7<<32 | 4096, 4096},
		{-1, 32, -1<<32 | 32, 32},
		{math.MinInt32, termLength, math.MinInt32<<32 | termLength, termLength},
		{math.MaxInt32, termLength + 1408, math.MaxInt32<<32 | (termLength + 1408), termLength}, // bumped past the end
		{3, math.MaxUint32, 3<<32 | math.MaxUint32, termLength},                                 // offset is unsigned
	} {
		tail := PackRawTail(tc.termID, tc.termOffset)
		if int64(tail) != tc.raw {
			t.Errorf("PackRawTail(%d, %d) = %#x, want %#x", tc.termID, tc.termOffset, int64(tail), tc.raw)
		}
		if tail.TermID() != tc.termID {
			t.Errorf("%v: TermID = %d, want %d", tail, tail.TermID(), tc.termID)
		}
		if tail.RawOffset() != int64(tc.termOffset) {
			t.Errorf("%v: RawOffset = %d, want %d", tail, tail.RawOffset(), tc.termOffset)
		}
		if tail.TermOffset(termLength) != tc.clamped {
			t.Errorf("%v: TermOffset = %d, want %d", tail, tail.TermOffset(termLength), tc.clamped)
		}
	}
}
