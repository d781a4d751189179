package logbuffer

import (
	"fmt"
	"math/bits"
)

// Positions and raw tails (aeron-protocol.md §5.3).
//
// A stream position counts bytes from the start of the stream's initial
// term: position = (termId − initialTermId) << positionBitsToShift +
// termOffset. Term ids are int32 and may wrap around; every difference of
// term ids is therefore taken in 32-bit arithmetic before widening.

// CheckTermLength returns nil if n is a power of two between
// [MinTermLength] and [MaxTermLength], otherwise an error wrapping
// [ErrInvalidTermLength].
func CheckTermLength(n int) error {
	if n < MinTermLength || n > MaxTermLength || !isPowerOfTwo(n) {
		return fmt.Errorf("%w: %d is not a power of two in [%d, %d]", ErrInvalidTermLength, n, MinTermLength, MaxTermLength)
	}
	return nil
}

// CheckPageSize returns nil if n is a power of two between [MinPageSize]
// and [MaxPageSize], otherwise an error wrapping [ErrInvalidPageSize].
func CheckPageSize(n int) error {
	if n < MinPageSize || n > MaxPageSize || !isPowerOfTwo(n) {
		return fmt.Errorf("%w: %d is not a power of two in [%d, %d]", ErrInvalidPageSize, n, MinPageSize, MaxPageSize)
	}
	return nil
}

// LogLength returns the length of a log file with the given term length
// and page size, both valid: the three terms and the metadata section,
// rounded up to a whole page.
func LogLength(termLength, pageSize int) int {
	return align(PartitionCount*termLength+MetadataLength, pageSize)
}

// MaxMessageLength returns the longest message a log with the given term
// length carries: min(termLength/8, [MaxMessageLengthLimit]).
func MaxMessageLength(termLength int) int {
	return min(termLength/maxMessageTermDivisor, MaxMessageLengthLimit)
}

// PositionBitsToShift returns log2(termLength) for a valid term length:
// the number of low position bits that hold the term offset.
func PositionBitsToShift(termLength int) int {
	return bits.TrailingZeros64(uint64(termLength))
}

// MaxPossiblePosition returns the position a stream can never reach:
// termLength × 2^31.
func MaxPossiblePosition(termLength int) int64 {
	return int64(termLength) << termCountBits
}

// ComputePosition returns the position of termOffset within term termID.
// The term count termID − initialTermID is computed in 32 bits, so a
// stream whose term ids wrap past math.MaxInt32 keeps counting up.
func ComputePosition(termID int32, termOffset int, positionBitsToShift int, initialTermID int32) int64 {
	return TermBeginPosition(termID, positionBitsToShift, initialTermID) + int64(termOffset)
}

// TermBeginPosition returns the position of the first byte of term
// termID.
func TermBeginPosition(termID int32, positionBitsToShift int, initialTermID int32) int64 {
	termCount := termID - initialTermID // 32-bit: survives term id wrap-around
	return int64(termCount) << positionBitsToShift
}

// TermIDFromPosition returns the id of the term that holds position.
func TermIDFromPosition(position int64, positionBitsToShift int, initialTermID int32) int32 {
	return int32(position>>positionBitsToShift) + initialTermID // wraps like the term ids do
}

// TermOffsetFromPosition returns the offset of position within its term.
func TermOffsetFromPosition(position int64, termLength int) int {
	return int(position & int64(termLength-1))
}

// PartitionIndexByPosition returns the partition that holds position, a
// non-negative position.
func PartitionIndexByPosition(position int64, positionBitsToShift int) int {
	return int((uint64(position) >> positionBitsToShift) % PartitionCount)
}

// PartitionIndexByTermCount returns the partition that holds the term
// termCount terms after the initial one. termCount is read from shared
// memory and is treated as unsigned, so that any value yields a valid
// index.
func PartitionIndexByTermCount(termCount int32) int {
	return int(uint32(termCount) % PartitionCount)
}

// RawTail is a partition's tail counter as stored in the log metadata:
// the term id in the high 32 bits and the offset at which the next frame
// will be appended in the low 32 bits (unsigned). The offset may exceed
// the term length: an appender moves it past the end when a message does
// not fit, before it writes the padding and rotates.
type RawTail int64

// PackRawTail returns the raw tail for termOffset in term termID.
// termOffset must not be negative.
func PackRawTail(termID int32, termOffset int) RawTail {
	return RawTail(int64(termID)<<32 | int64(uint32(termOffset)))
}

// TermID returns the term id part.
func (t RawTail) TermID() int32 { return int32(t >> 32) }

// RawOffset returns the offset part as stored, possibly beyond the end of
// the term.
func (t RawTail) RawOffset() int64 { return int64(uint32(t)) }

// TermOffset returns the offset part clamped to termLength, as readers of
// the tail must use it.
func (t RawTail) TermOffset(termLength int) int {
	return int(min(t.RawOffset(), int64(termLength)))
}

// String returns "termId:offset".
func (t RawTail) String() string { return fmt.Sprintf("%d:%d", t.TermID(), t.RawOffset()) }

func isPowerOfTwo(n int) bool { return n > 0 && n&(n-1) == 0 }
