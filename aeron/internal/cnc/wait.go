package cnc

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WaitConfig says how long and how [Wait] waits for a media driver.
type WaitConfig struct {
	// Timeout bounds the whole wait, measured with Now. Must be > 0.
	Timeout time.Duration
	// PollInterval is the pause between attempts. Must be > 0. (Aeron
	// clients poll every 16-100 ms.)
	PollInterval time.Duration
	// DriverTimeout is the heartbeat age beyond which the driver counts as
	// inactive: Aeron's aeron.driver.timeout, 10 s by default. Must be > 0.
	DriverTimeout time.Duration
	// Now returns the wall-clock time (heartbeats are epoch milliseconds).
	// Nil means time.Now. Tests inject a fake clock.
	Now func() time.Time
	// Sleep pauses for d or until ctx is done, returning ctx.Err() in the
	// latter case. Nil means a timer. Tests inject one that advances their
	// fake clock.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Wait maps <dir>/cnc.dat once a live media driver is behind it: the file
// exists, its version is set and compatible, its sections fit, and the
// driver's heartbeat is at most cfg.DriverTimeout old. Until then it
// retries every cfg.PollInterval, remapping the file each time (a
// restarted driver recreates it).
//
// It returns at once with an error wrapping [ErrVersionMismatch],
// [ErrCorrupt] or an I/O error, since retrying cannot fix those. When
// cfg.Timeout passes it returns the last attempt's error, which wraps
// [ErrDriverNotFound], [ErrNotReady], [ErrTruncated] or [ErrDriverInactive]
// and so says what is wrong. If ctx is done first, the error wraps both
// ctx.Err() and the last attempt's error.
func Wait(ctx context.Context, dir string, cfg WaitConfig) (*File, error) {
	if cfg.Timeout <= 0 || cfg.PollInterval <= 0 || cfg.DriverTimeout <= 0 {
		return nil, fmt.Errorf("%w: Timeout %v, PollInterval %v and DriverTimeout %v must all be positive",
			ErrInvalidWaitConfig, cfg.Timeout, cfg.PollInterval, cfg.DriverTimeout)
	}
	now, sleep := cfg.Now, cfg.Sleep
	if now == nil {
		now = time.Now
	}
	if sleep == nil {
		sleep = sleepContext
	}

	deadline := now().Add(cfg.Timeout)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("cnc: waiting for a media driver in %s: %w", dir, err)
		}
		f, err := connect(dir, now(), cfg.DriverTimeout)
		if err == nil {
			return f, nil
		}
		if !retryable(err) {
			return nil, err
		}
		remaining := deadline.Sub(now())
		if remaining <= 0 {
			return nil, fmt.Errorf("cnc: gave up after %v waiting for a media driver in %s: %w", cfg.Timeout, dir, err)
		}
		if serr := sleep(ctx, min(cfg.PollInterval, remaining)); serr != nil {
			return nil, fmt.Errorf("cnc: waiting for a media driver in %s: %w (last attempt: %w)", dir, serr, err)
		}
	}
}

// connect makes one attempt: map and validate, then check the heartbeat.
func connect(dir string, now time.Time, driverTimeout time.Duration) (*File, error) {
	f, err := Map(dir)
	if err != nil {
		return nil, err
	}
	if err := f.CheckDriverActive(now, driverTimeout); err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}

// retryable reports whether waiting may cure err: the driver may still be
// starting, or a new one may replace a dead one.
func retryable(err error) bool {
	return errors.Is(err, ErrDriverNotFound) ||
		errors.Is(err, ErrNotReady) ||
		errors.Is(err, ErrTruncated) ||
		errors.Is(err, ErrDriverInactive)
}

func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
