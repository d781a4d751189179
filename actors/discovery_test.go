package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// slowListings is an archive whose listings take took(n) for the n-th (from 0), and fail if
// failing; it counts them.
type slowListings struct {
	replayCounter
	took     func(n int32) time.Duration
	failing  bool
	listings atomic.Int32
}

func (a *slowListings) RecordingsOfChannel(ctx context.Context, _ channel.URI, _ int32, _ int32) ([]archive.RecordingDescriptor, error) {
	n := a.listings.Add(1) - 1
	select {
	case <-time.After(a.took(n)):
	case <-ctx.Done():
	}
	if a.failing {
		return nil, errors.New("archive busy")
	}
	return nil, nil
}

// ChannelRecordings is RecordingsOfChannel's listing, with no recordings the channel does
// not select.
func (a *slowListings) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error) {
	selected, err = a.RecordingsOfChannel(ctx, uri, streamID, pageSize)
	return selected, nil, err
}

// Listings that take long come further apart than the discovery interval: at most a fifth
// of the time goes to them (a catalog grown to thousands of recordings would otherwise hold
// the archive's control session, shared by every replay, all the time), and the pause is
// never more than 40 intervals (one listing slowed by something else must not hide the
// catalog for four times as long). A failed one is retried at the interval.
func TestListingsThatTakeLongComeFurtherApart(t *testing.T) {
	start := func(t *testing.T, arc *slowListings) {
		env, cfg := testEnv(t)
		env.Archive = arc
		cfg.DiscoveryInterval = 10 * time.Millisecond
		cfg.CallTimeout = time.Minute
		system := testSystem(t)
		spawnWatched(t, system, env, cfg, newDiscovery(env, cfg))
	}
	count := func(t *testing.T, arc *slowListings, least int32, within time.Duration, why string) {
		t.Helper()
		eventually.NoError(t, within, func() error {
			if n := arc.listings.Load(); n < least {
				return fmt.Errorf("%d listings; want %d: %s", n, least, why)
			}
			return nil
		})
	}

	t.Run("paced", func(t *testing.T) {
		arc := &slowListings{took: func(int32) time.Duration { return 100 * time.Millisecond }}
		start(t, arc)
		// 100 ms each, then 400 ms apart: at 0, 0.5 and 1.0 s, where the interval alone
		// makes 10 in 1.1 s, and a share of a third 4.
		eventually.Always(t, 1100*time.Millisecond, func() error {
			if n := arc.listings.Load(); n > 3 {
				return fmt.Errorf("%d listings of 100 ms each in 1.1 s", n)
			}
			return nil
		})
		count(t, arc, 2, time.Second, "they go on")
	})
	t.Run("capped", func(t *testing.T) {
		arc := &slowListings{took: func(n int32) time.Duration {
			if n == 0 {
				return time.Second
			}
			return 0
		}}
		start(t, arc)
		// The first takes 1 s: the next comes 400 ms (40 intervals) after it, not 4 s.
		count(t, arc, 3, 2500*time.Millisecond, "the pause after a slow listing is capped")
	})
	t.Run("failing", func(t *testing.T) {
		arc := &slowListings{took: func(int32) time.Duration { return 100 * time.Millisecond }, failing: true}
		start(t, arc)
		// 110 ms apart: 8 within 2 s, where the pace of successful ones makes 4.
		count(t, arc, 8, 2*time.Second, "failed ones retried at the interval")
	})
}

// positionsFailing is an archive with three live recordings, listed in nearly the whole call
// timeout; the recorded position of the first cannot be read, the others' take 20 ms each.
type positionsFailing struct {
	replayCounter
	spend time.Duration
	calls atomic.Int32
}

func (a *positionsFailing) RecordingsOfChannel(context.Context, channel.URI, int32, int32) ([]archive.RecordingDescriptor, error) {
	<-time.After(a.spend) // a catalog of many pages
	return []archive.RecordingDescriptor{{RecordingID: 3, StopPosition: archive.NullPosition}, {RecordingID: 4, StopPosition: archive.NullPosition}, {RecordingID: 5, StopPosition: archive.NullPosition}}, nil
}

// ChannelRecordings is RecordingsOfChannel's listing, with no recordings the channel does
// not select.
func (a *positionsFailing) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error) {
	selected, err = a.RecordingsOfChannel(ctx, uri, streamID, pageSize)
	return selected, nil, err
}

func (a *positionsFailing) MaxRecordedPosition(ctx context.Context, id int64) (int64, error) {
	a.calls.Add(1)
	if id == 3 {
		return 0, errors.New("archive busy")
	}
	select { // answers in 20 ms, within its own timeout but not within what the listing left
	case <-time.After(20 * time.Millisecond):
		return 1 << 20, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// A live recording's recorded position is the one thing that shows lag behind a replay
// that stopped reading: each read has a timeout of its own (not what the listing left of
// one), one that fails is said, as an archive failure, not taken for a recording that
// stopped growing, and the reads of the others go on.
func TestALiveRecordingsPositionThatCannotBeReadIsSaid(t *testing.T) {
	env, cfg := testEnv(t)
	arc := &positionsFailing{spend: 90 * time.Millisecond}
	env.Archive = arc
	cfg.CallTimeout = 100 * time.Millisecond
	cfg.DiscoveryInterval = time.Hour
	system := testSystem(t)
	_, _, got := spawnWatched(t, system, env, cfg, newDiscovery(env, cfg))
	var listed *messages.RecordingsListed
	var failure *messages.Failure
	for listed == nil || failure == nil {
		select {
		case m := <-got:
			switch m := m.(type) {
			case *messages.RecordingsListed:
				listed = m
			case *messages.FailureObserved:
				failure = m.Failure
			}
		case <-time.After(waitFor):
			t.Fatalf("within %s: listed %v, failure %v; want both", waitFor, listed, failure)
		}
	}
	for _, r := range listed.Recordings[1:] {
		if r.RecordedPosition != 1<<20 {
			t.Errorf("recording %d's recorded position %d; want 1 MiB, read within its own timeout, after recording 3's failed", r.RecordingId, r.RecordedPosition)
		}
	}
	if failure.Kind != "archive" || !strings.Contains(failure.Message, "recording 3: archive busy") || !strings.Contains(failure.Message, "stale") {
		t.Errorf("failure %+v; want an archive failure naming recording 3 and the stale lag", failure)
	}
}

// overlapping is an archive whose listings take 50 ms each (less when cancelled); it keeps
// the most that were ever in flight at once.
type overlapping struct {
	replayCounter
	inFlight, most, listings atomic.Int32
}

func (a *overlapping) RecordingsOfChannel(ctx context.Context, _ channel.URI, _ int32, _ int32) ([]archive.RecordingDescriptor, error) {
	a.listings.Add(1)
	n := a.inFlight.Add(1)
	defer a.inFlight.Add(-1)
	for m := a.most.Load(); n > m && !a.most.CompareAndSwap(m, n); m = a.most.Load() {
	}
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done():
	}
	return nil, nil
}

// ChannelRecordings is RecordingsOfChannel's listing, with no recordings the channel does
// not select.
func (a *overlapping) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error) {
	selected, err = a.RecordingsOfChannel(ctx, uri, streamID, pageSize)
	return selected, nil, err
}

// A discovery restarted (a bug, restarted once) while a listing is in flight, and with the
// next listing's timer set, lists in one loop still: the earlier incarnation's listing
// result and timer are its own, not the new one's, which would otherwise run a second
// listing loop beside its own for as long as the stream runs, and report the cancelled
// listing's result.
func TestARestartedDiscoveryListsInOneLoop(t *testing.T) {
	env, cfg := testEnv(t)
	arc := &overlapping{}
	env.Archive = arc
	cfg.DiscoveryInterval = 10 * time.Millisecond
	cfg.CallTimeout = time.Minute
	system := testSystem(t)
	pid, _, _ := spawnWatched(t, system, env, cfg, newDiscovery(env, cfg))
	restart := func() {
		p, ok := system.ProcessRegistry.Get(pid)
		if !ok {
			t.Fatal("no discovery process")
		}
		p.SendSystemMessage(pid, &actor.Restart{})
	}
	for k := range 3 {
		eventually.NoError(t, time.Second, func() error {
			if n := arc.listings.Load(); n < int32(2*k+1) || arc.inFlight.Load() != 1 {
				return fmt.Errorf("%d listings, %d in flight; want a listing in flight", n, arc.inFlight.Load())
			}
			return nil
		})
		restart()
	}
	// A cancelled listing may still be ending as the new incarnation's first begins.
	after := arc.listings.Load()
	eventually.NoError(t, time.Second, func() error {
		if n := arc.listings.Load(); n < after+2 {
			return fmt.Errorf("%d listings since the last restart; want 2", n-after)
		}
		return nil
	})
	arc.most.Store(arc.inFlight.Load())
	eventually.Always(t, 1500*time.Millisecond, func() error {
		if m := arc.most.Load(); m > 1 {
			return fmt.Errorf("%d listings in flight at once; want one at a time", m)
		}
		return nil
	})
}

// otherChannels is an archive whose recordings of the stream id are all on channels the
// configured one does not select, one more of them at each listing (another stream's
// publisher going on); it counts the listings.
type otherChannels struct {
	replayCounter
	listings atomic.Int32
}

func (a *otherChannels) ChannelRecordings(context.Context, channel.URI, int32, int32) (selected, others []archive.RecordingDescriptor, err error) {
	n := a.listings.Add(1)
	others = []archive.RecordingDescriptor{{RecordingID: 1, StopPosition: 64, OriginalChannel: "aeron:udp?endpoint=localhost:40124"}}
	for id := range int64(n) + 1 {
		others = append(others, archive.RecordingDescriptor{RecordingID: 2 + id, StopPosition: 64, OriginalChannel: "aeron:udp?endpoint=127.0.0.1:40123"})
	}
	return nil, others, nil
}

// A configured channel that selects none of the archive's recordings of its stream id
// (localhost for the 127.0.0.1 they were made on) is said once, in the log and as the
// stream's "channel" failure naming the channels the recordings were made on, not taken
// silently for a stream with nothing to replay; the listings go on, and more recordings on
// the same channels are not said again.
func TestAChannelThatSelectsNoneOfTheStreamsRecordingsIsSaid(t *testing.T) {
	env, cfg := testEnv(t)
	logged := &lockedBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(logged, nil))
	arc := &otherChannels{}
	env.Archive = arc
	uri, err := channel.Parse("aeron:udp?endpoint=localhost:40123")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Channel, cfg.Def.StreamID = uri, 1001
	cfg.DiscoveryInterval = 5 * time.Millisecond
	system := testSystem(t)
	_, _, got := spawnWatched(t, system, env, cfg, newDiscovery(env, cfg))
	eventually.NoError(t, waitFor, func() error {
		if n := arc.listings.Load(); n < 5 {
			return fmt.Errorf("%d listings; want 5", n)
		}
		return nil
	})
	var failures []*messages.Failure
	for len(got) > 0 {
		if m, ok := (<-got).(*messages.FailureObserved); ok {
			failures = append(failures, m.Failure)
		}
	}
	if len(failures) != 1 || failures[0].Kind != "channel" {
		t.Fatalf("%d failures (the first %v); want one channel failure, for 5 listings of recordings on the same channels", len(failures), failures[:min(len(failures), 1)])
	}
	for _, want := range []string{"aeron:udp?endpoint=localhost:40123", "stream id 1001", "3 recording(s)", "aeron:udp?endpoint=127.0.0.1:40123, aeron:udp?endpoint=localhost:40124"} {
		if !strings.Contains(failures[0].Message, want) {
			t.Errorf("failure %q; want it to say %q", failures[0].Message, want)
		}
	}
	if n := strings.Count(logged.String(), "selects none"); n != 1 {
		t.Errorf("%d warnings in the log:\n%s\nwant one", n, logged.String())
	}
}
