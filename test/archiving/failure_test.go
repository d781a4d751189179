package archiving

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestArchiveKilledThenRestarted: the archive process (media driver included) is killed
// with SIGKILL under a live control session. The client reports the archive unavailable
// within its deadline and fails calls instead of hanging; once the archive is restarted
// on the same directory, a new session sees the recording made before the crash and
// replays it whole.
func TestArchiveKilledThenRestarted(t *testing.T) {
	own := startOwnArchive(t, nil)
	const deadline = 2 * time.Second
	s := connectWith(t, own, aeron.Options{DriverTimeout: deadline, KeepaliveInterval: 100 * time.Millisecond, ResourceLinger: 100 * time.Millisecond},
		archive.Options{MessageTimeout: deadline, OnError: func(error) {}})
	ctx := context.Background()
	const ch, total = "aeron:ipc?term-length=64k", 50
	_, subID, pub, id := recorded(t, s, ch)
	positions := offerAll(t, pub, 0, total, nil)
	waitRecorded(t, s, id, positions[len(positions)-1])
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}
	nextSignal(t, s.archive, archive.SignalStop)

	killed := time.Now()
	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.archive.Dead():
	case <-time.After(2*deadline + 5*time.Second): // generous on a loaded machine: the point is "reported, not hung"
		t.Fatalf("archive unavailability not reported %s after kill -9", time.Since(killed).Round(time.Millisecond))
	}
	t.Logf("archive unavailability reported %s after kill -9", time.Since(killed).Round(time.Millisecond))
	if err := s.archive.Err(); !errors.Is(err, archive.ErrArchiveUnavailable) {
		t.Fatalf("client error = %v, want ErrArchiveUnavailable", err)
	}
	if _, err := s.archive.StopPosition(ctx, id); !errors.Is(err, archive.ErrArchiveUnavailable) {
		t.Errorf("a call after the archive died = %v, want ErrArchiveUnavailable", err)
	}

	if err := own.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("archive restarted in %s", own.StartupTime.Round(time.Millisecond))
	again := connect(t, own, archive.Options{})
	d, err := again.archive.Recording(ctx, id)
	if err != nil {
		t.Fatalf("the recording made before the crash: %v", err)
	}
	if d.StopPosition != positions[len(positions)-1] {
		t.Errorf("after restart the recording stops at %d, want %d", d.StopPosition, positions[len(positions)-1])
	}
	n := 0
	readUntilEnd(t, startReplay(t, again, id, archive.NullPosition, archive.ReplayToEnd), func(r replayed) {
		if r.position != positions[n] {
			t.Fatalf("replayed message %d at %d, want %d", n, r.position, positions[n])
		}
		n++
	})
	if n != total {
		t.Errorf("replayed %d messages after the restart, want %d", n, total)
	}
}

// TestReplayFailingAfterItWasAcceptedIsReported: the archive accepts a replay, then fails
// it because nobody subscribes to the replay stream within its connect timeout. That
// error arrives after the call returned; it must reach OnError, naming the replay, and
// leave the session usable.
func TestReplayFailingAfterItWasAcceptedIsReported(t *testing.T) {
	var mu sync.Mutex
	var reported []error
	s := connect(t, shared, archive.Options{OnError: func(err error) {
		mu.Lock()
		reported = append(reported, err)
		mu.Unlock()
	}})
	ctx := context.Background()
	const ch = "aeron:ipc?term-length=64k"
	_, subID, pub, id := recorded(t, s, ch)
	positions := offerAll(t, pub, 0, 5, nil)
	waitRecorded(t, s, id, positions[len(positions)-1])
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}

	if _, err := s.archive.StartReplay(ctx, id, archive.NullPosition, archive.ReplayToEnd, "aeron:ipc", infra.UniqueStreamID()); err != nil {
		t.Fatalf("the archive refused the replay outright: %v", err)
	}
	var refusal *archive.Error
	eventually.NoError(t, 15*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range reported {
			errors.As(err, &refusal)
		}
		if refusal == nil {
			return fmt.Errorf("no error reported for the unconnected replay (got %v)", reported)
		}
		return nil
	})
	t.Logf("reported: %v", refusal)
	if want := fmt.Sprintf("replay recording %d", id); !strings.Contains(refusal.Request, want) || !strings.Contains(refusal.Request, "after the archive had accepted it") {
		t.Errorf("the error names %q, want it to contain %q and %q", refusal.Request, want, "after the archive had accepted it")
	}
	if _, err := s.archive.StopPosition(ctx, id); err != nil {
		t.Errorf("the session is unusable after the replay error: %v", err)
	}
}

// TestAQuietArchiveIsAskedBeforeItCountsAsGone: an archive pings an idle session, every
// second by default, but its interval is configurable (here 5 s) and a new session hears
// none for its first second. A client whose message timeout is shorter (here 500 ms, which
// the configuration allows) asks the quiet archive for its id instead of declaring it gone,
// and stays connected and usable.
func TestAQuietArchiveIsAskedBeforeItCountsAsGone(t *testing.T) {
	own := startOwnArchive(t, map[string]string{"aeron.archive.session.liveness.check.interval": "5s"})
	s := connect(t, own, archive.Options{MessageTimeout: 500 * time.Millisecond, OnError: func(error) {}})
	eventually.Always(t, 3*time.Second, func() error {
		select {
		case <-s.archive.Dead():
			return fmt.Errorf("the idle session ended, the archive running: %v", s.archive.Err())
		default:
			return nil
		}
	})
	if _, err := s.archive.StopPosition(context.Background(), 0); err != nil && !errors.Is(err, archive.ErrRecordingUnknown) {
		t.Fatalf("a call after 3 s idle: %v; want an answer", err)
	}
}

// TestAHungArchiveIsFoundByItsUnansweredProbe: an archive that stops answering while its
// process lives (here stopped with SIGSTOP, its media driver with it, whose loss the client
// would see only after its driver timeout, a minute here) sends no ping and answers no
// probe: the session ends once the probe went unanswered for a message timeout, saying so.
func TestAHungArchiveIsFoundByItsUnansweredProbe(t *testing.T) {
	own := startOwnArchive(t, nil)
	s := connectWith(t, own, aeron.Options{DriverTimeout: time.Minute}, archive.Options{MessageTimeout: 500 * time.Millisecond, OnError: func(error) {}})
	eventually.Always(t, 1500*time.Millisecond, func() error { // idle and answering: kept
		select {
		case <-s.archive.Dead():
			return fmt.Errorf("the idle session ended, the archive running: %v", s.archive.Err())
		default:
			return nil
		}
	})
	pid := own.Pid()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) // before the archive's Stop (cleanups run last first)
	stopped := time.Now()
	select {
	case <-s.archive.Dead():
	case <-time.After(20 * time.Second): // generous on a loaded machine: the point is "found, not hung"
		t.Fatalf("a hung archive not found %s after it stopped answering", time.Since(stopped).Round(time.Millisecond))
	}
	t.Logf("hung archive found %s after it stopped answering", time.Since(stopped).Round(time.Millisecond))
	if err := s.archive.Err(); !errors.Is(err, archive.ErrArchiveUnavailable) || !strings.Contains(err.Error(), "liveness probe") {
		t.Fatalf("client error = %v; want ErrArchiveUnavailable, the liveness probe unanswered", err)
	}
}
