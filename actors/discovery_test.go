package actors

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// slowListings is an archive whose every listing takes 100 ms, and fails if failing; it
// counts them.
type slowListings struct {
	replayCounter
	failing  bool
	listings atomic.Int32
}

func (a *slowListings) RecordingsOfChannel(ctx context.Context, _ channel.URI, _ int32, _ int32) ([]archive.RecordingDescriptor, error) {
	a.listings.Add(1)
	select {
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
	}
	if a.failing {
		return nil, errors.New("archive busy")
	}
	return nil, nil
}

// Listings that take long come further apart than the discovery interval: at most a fifth
// of the time goes to them (a catalog grown to thousands of recordings would otherwise hold
// the archive's control session, shared by every replay, all the time). A failed one is
// retried at the interval.
func TestListingsThatTakeLongComeFurtherApart(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing %t", failing), func(t *testing.T) {
			env, cfg := testEnv(t)
			arc := &slowListings{failing: failing}
			env.Archive = arc
			cfg.DiscoveryInterval = 10 * time.Millisecond
			system := testSystem(t)
			spawnWatched(t, system, env, cfg, newDiscovery(env, cfg))
			if failing {
				// 110 ms apart: 8 within 2 s, where the pace of successful ones makes 4.
				eventually.NoError(t, 2*time.Second, func() error {
					if n := arc.listings.Load(); n < 8 {
						return fmt.Errorf("%d failed listings; want them retried at the interval", n)
					}
					return nil
				})
				return
			}
			// 100 ms each, then 400 ms apart: 3 in 1.1 s, where the interval alone makes 10.
			eventually.Always(t, 1100*time.Millisecond, func() error {
				if n := arc.listings.Load(); n > 4 {
					return fmt.Errorf("%d listings of 100 ms each in 1.1 s", n)
				}
				return nil
			})
			if n := arc.listings.Load(); n < 2 {
				t.Fatalf("%d listings in 1.1 s; want them to go on", n)
			}
		})
	}
}
