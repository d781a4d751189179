package broadcast

import (
	"fmt"
	"math/bits"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// geometry is what receivers and transmitters derive from the buffer
// length: the data area's size and the trailer fields' absolute offsets.
type geometry struct {
	capacity   int64
	maxPayload int
	tailIntent int
	tail       int
	latest     int
}

func newGeometry(buf shm.Buffer) (geometry, error) {
	capacity := buf.Len() - TrailerLength
	if capacity < MinCapacity || capacity > maxCapacity || bits.OnesCount(uint(capacity)) != 1 {
		return geometry{}, fmt.Errorf("%w: length %d is not a power of two in [%d, %d] plus the %d-byte trailer",
			ErrInvalidBuffer, buf.Len(), MinCapacity, maxCapacity, TrailerLength)
	}
	if err := buf.CheckAlignment(sizeofInt64); err != nil {
		return geometry{}, fmt.Errorf("%w: %w", ErrInvalidBuffer, err)
	}
	return geometry{
		capacity:   int64(capacity),
		maxPayload: capacity / maxPayloadDivisor,
		tailIntent: capacity + TailIntentCounterOffset,
		tail:       capacity + TailCounterOffset,
		latest:     capacity + LatestCounterOffset,
	}, nil
}

// indexOf returns the data-area index of a position.
func (g geometry) indexOf(position int64) int {
	return int(position & (g.capacity - 1))
}
