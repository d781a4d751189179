package cnc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeClock drives Wait deterministically: Sleep advances Now and then
// runs onSleep, which plays the driver (writes or rewrites cnc.dat).
type fakeClock struct {
	now     time.Time
	sleeps  []time.Duration
	onSleep func(n int) // n = number of sleeps so far
}

func (c *fakeClock) Now() time.Time { return c.now }

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	if c.onSleep != nil {
		c.onSleep(len(c.sleeps))
	}
	return ctx.Err()
}

func (c *fakeClock) config() WaitConfig {
	return WaitConfig{
		Timeout:       time.Second,
		PollInterval:  100 * time.Millisecond,
		DriverTimeout: 10 * time.Second,
		Now:           c.Now,
		Sleep:         c.Sleep,
	}
}

func TestWaitGivesUpWhenNoDriverAppears(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{now: testEpoch}
	f, err := Wait(context.Background(), dir, clock.config())
	if f != nil || !errors.Is(err, ErrDriverNotFound) {
		t.Fatalf("Wait = %v, %v; want ErrDriverNotFound", f, err)
	}
	if !strings.Contains(err.Error(), "gave up after 1s") || !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not say how long it waited and where", err)
	}
	if len(clock.sleeps) != 10 || clock.now != testEpoch.Add(time.Second) {
		t.Errorf("slept %v until %v; want 10 × 100ms", clock.sleeps, clock.now)
	}
}

func TestWaitClipsTheLastSleepToTheDeadline(t *testing.T) {
	clock := &fakeClock{now: testEpoch}
	cfg := clock.config()
	cfg.Timeout = 250 * time.Millisecond
	if _, err := Wait(context.Background(), t.TempDir(), cfg); !errors.Is(err, ErrDriverNotFound) {
		t.Fatalf("err = %v", err)
	}
	want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 50 * time.Millisecond}
	if len(clock.sleeps) != len(want) || clock.sleeps[0] != want[0] || clock.sleeps[1] != want[1] || clock.sleeps[2] != want[2] {
		t.Fatalf("sleeps = %v, want %v", clock.sleeps, want)
	}
}

func TestWaitSucceedsOnceTheDriverIsUp(t *testing.T) {
	for _, tc := range []struct {
		name      string
		before    func(dir string, now time.Time) // state before the first attempt
		at        int                             // sleep after which the driver is up
		wantSleep int
	}{
		{"driver starts later", func(string, time.Time) {}, 3, 3},
		{"file exists, version not yet written", func(dir string, _ time.Time) {
			im := newImage()
			im.version = 0
			im.writeTo(t, dir)
		}, 2, 2},
		{"file being created (empty)", func(dir string, _ time.Time) {
			if err := os.WriteFile(filepath.Join(dir, FileName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 1, 1},
		{"stale file from a dead driver, then a new driver", func(dir string, now time.Time) {
			im := newImage()
			im.heartbeat = now.Add(-time.Minute).UnixMilli()
			im.writeTo(t, dir)
		}, 4, 4},
		{"driver already up", func(dir string, now time.Time) {
			im := newImage()
			im.heartbeat = now.UnixMilli()
			im.writeTo(t, dir)
		}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := &fakeClock{now: testEpoch}
			tc.before(dir, clock.now)
			live := newImage()
			live.pid = 777
			clock.onSleep = func(n int) {
				if n == tc.at {
					live.heartbeat = clock.now.UnixMilli()
					live.writeTo(t, dir)
				}
			}
			f, err := Wait(context.Background(), dir, clock.config())
			if err != nil {
				t.Fatalf("Wait: %v", err)
			}
			t.Cleanup(func() { _ = f.Close() })
			if len(clock.sleeps) != tc.wantSleep {
				t.Errorf("slept %d times, want %d", len(clock.sleeps), tc.wantSleep)
			}
			if tc.at > 0 && f.Header().DriverPID != 777 {
				t.Errorf("mapped the driver with pid %d, want the live one (777)", f.Header().DriverPID)
			}
		})
	}
}

func TestWaitReportsAnInactiveDriver(t *testing.T) {
	dir := t.TempDir()
	clock := &fakeClock{now: testEpoch}
	im := newImage()
	im.heartbeat = testEpoch.Add(-11 * time.Second).UnixMilli()
	im.writeTo(t, dir)
	_, err := Wait(context.Background(), dir, clock.config())
	if !errors.Is(err, ErrDriverInactive) {
		t.Fatalf("err = %v, want ErrDriverInactive", err)
	}
	if len(clock.sleeps) != 10 {
		t.Errorf("slept %d times, want 10: an inactive driver is retried until the deadline", len(clock.sleeps))
	}
}

func TestWaitDoesNotRetryWhatWaitingCannotFix(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*image)
		want   error
	}{
		{"incompatible version", func(im *image) { im.version = NewSemanticVersion(1, 0, 0) }, ErrVersionMismatch},
		{"corrupt header", func(im *image) { im.lengths[ErrorLog] = -1 }, ErrCorrupt},
	} {
		dir := t.TempDir()
		im := newImage()
		tc.mutate(&im)
		im.writeTo(t, dir)
		clock := &fakeClock{now: testEpoch}
		if _, err := Wait(context.Background(), dir, clock.config()); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if len(clock.sleeps) != 0 {
			t.Errorf("%s: slept %d times before failing", tc.name, len(clock.sleeps))
		}
	}
}

func TestWaitStopsWhenTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clock := &fakeClock{now: testEpoch}
	clock.onSleep = func(n int) {
		if n == 2 {
			cancel()
		}
	}
	_, err := Wait(ctx, t.TempDir(), clock.config())
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrDriverNotFound) {
		t.Fatalf("err = %v, want context.Canceled and the last attempt's ErrDriverNotFound", err)
	}
	if len(clock.sleeps) != 2 {
		t.Errorf("slept %d times, want 2", len(clock.sleeps))
	}

	done, cancelDone := context.WithCancel(context.Background())
	cancelDone()
	if _, err := Wait(done, t.TempDir(), clock.config()); !errors.Is(err, context.Canceled) {
		t.Fatalf("already-cancelled context: err = %v", err)
	}
}

func TestWaitRejectsAnInvalidConfig(t *testing.T) {
	valid := (&fakeClock{}).config()
	for _, mutate := range []func(*WaitConfig){
		func(c *WaitConfig) { c.Timeout = 0 },
		func(c *WaitConfig) { c.PollInterval = -time.Second },
		func(c *WaitConfig) { c.DriverTimeout = 0 },
	} {
		cfg := valid
		mutate(&cfg)
		if _, err := Wait(context.Background(), t.TempDir(), cfg); !errors.Is(err, ErrInvalidWaitConfig) {
			t.Errorf("config %+v: err = %v, want ErrInvalidWaitConfig", cfg, err)
		}
	}
}

// The defaults (real clock, timer sleep) work; this takes about 20 ms.
func TestWaitWithTheRealClock(t *testing.T) {
	start := time.Now()
	_, err := Wait(context.Background(), t.TempDir(), WaitConfig{
		Timeout:       20 * time.Millisecond,
		PollInterval:  5 * time.Millisecond,
		DriverTimeout: time.Second,
	})
	if !errors.Is(err, ErrDriverNotFound) {
		t.Fatalf("err = %v", err)
	}
	if elapsed := time.Since(start); elapsed < 20*time.Millisecond {
		t.Fatalf("returned after %v, before the 20ms timeout", elapsed)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = Wait(ctx, t.TempDir(), WaitConfig{Timeout: time.Minute, PollInterval: time.Second, DriverTimeout: time.Second})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("context deadline: err = %v", err)
	}
}
