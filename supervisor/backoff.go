package supervisor

import (
	"fmt"
	"math"
	"time"
)

// Backoff is capped exponential backoff with jitter. protoactor's own "exponential"
// strategy is linear and uncapped; this is ours.
//
// Min must be at least 1ms and Max >= Min ([Policy.Validate] checks both).
type Backoff struct {
	// Min is the base delay of the first attempt.
	Min time.Duration
	// Max caps the base delay.
	Max time.Duration
}

// Delay returns how long to wait before restart number attempt (1 for the first), given
// random, a number in [0, 1).
//
// The base delay is min(Max, Min * 2^(attempt-1)), computed without overflow for any
// attempt; an attempt below 1 counts as 1. The result is base/2 + random*base/2 ("equal
// jitter"): at least half the base, and below the base, so that children failing together
// do not restart together. A random outside [0, 1) is clamped into it. Delay returns 0 for
// a Backoff whose Min is not positive.
func (b Backoff) Delay(attempt int, random float64) time.Duration {
	base := b.base(attempt)
	if base <= 0 {
		return 0
	}
	switch {
	case !(random >= 0): // also catches NaN
		random = 0
	case random >= 1:
		random = math.Nextafter(1, 0)
	}
	half := base / 2
	d := half + time.Duration(random*float64(base-half))
	if d >= base { // float64 rounding near the top of the range
		d = base - 1
	}
	return d
}

// base returns min(Max, Min * 2^(attempt-1)) without overflowing.
func (b Backoff) base(attempt int) time.Duration {
	if b.Min <= 0 {
		return 0
	}
	limit := max(b.Max, b.Min)
	base := b.Min
	// base >= 1ns doubles each turn, so this loop ends after at most 63 turns whatever
	// attempt is.
	for i := 1; i < attempt && base < limit; i++ {
		if base > limit/2 {
			return limit
		}
		base *= 2
	}
	return min(base, limit)
}

// Policy bounds restarts: more than MaxRestarts failures within Window, or more than
// MaxRestarts in a row without progress however far apart, means give up.
type Policy struct {
	// Backoff spaces the restarts: the n-th failure within Window waits Backoff.Delay(n, …).
	Backoff Backoff
	// MaxRestarts is how many failures within Window, and how many in a row without
	// progress, are restarted; the next one gives up. 0 gives up on the first failure.
	MaxRestarts int
	// Window is how far back failures count. A failure older than Window is forgotten.
	Window time.Duration
}

// Validate returns an error wrapping [ErrInvalidPolicy] if Backoff.Min is under 1ms,
// Backoff.Max < Backoff.Min, MaxRestarts < 0 or Window <= 0.
func (p Policy) Validate() error {
	switch {
	case p.Backoff.Min < time.Millisecond:
		return fmt.Errorf("%w: backoff min %v must be at least 1ms (a shorter one jitters down to no wait at all)", ErrInvalidPolicy, p.Backoff.Min)
	case p.Backoff.Max < p.Backoff.Min:
		return fmt.Errorf("%w: backoff max %v is below min %v", ErrInvalidPolicy, p.Backoff.Max, p.Backoff.Min)
	case p.MaxRestarts < 0:
		return fmt.Errorf("%w: max restarts %d is negative", ErrInvalidPolicy, p.MaxRestarts)
	case p.Window <= 0:
		return fmt.Errorf("%w: window %v must be positive", ErrInvalidPolicy, p.Window)
	}
	return nil
}
