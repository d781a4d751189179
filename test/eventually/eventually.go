// Package eventually is how ferry's tests wait for an asynchronous outcome: they poll a
// condition until it holds or a deadline passes, instead of sleeping and then asserting.
// It imports nothing of ferry; any test may use it.
package eventually

import (
	"testing"
	"time"
)

// Poll is how often conditions are re-evaluated.
const Poll = 20 * time.Millisecond

// NoError calls cond every [Poll] until it returns nil, and fails the test with the last
// error if that has not happened within timeout. cond runs on the test's goroutine.
func NoError(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		time.Sleep(Poll)
	}
}

// Always calls cond every [Poll] for the whole of d and fails the test at the first error:
// the counterpart of NoError for an invariant ("the checkpoint never passes an
// unacknowledged record") that must hold while something else goes on.
func Always(t testing.TB, d time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := cond(); err != nil {
			t.Fatalf("broken after %s of %s: %v", d-time.Until(deadline), d, err)
		}
		if time.Now().After(deadline) {
			return
		}
		time.Sleep(Poll)
	}
}
