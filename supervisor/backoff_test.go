package supervisor

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	justUnderOne := math.Nextafter(1, 0)
	for _, tc := range []struct {
		name    string
		b       Backoff
		attempt int
		random  float64
		want    time.Duration
	}{
		{"first attempt, no jitter", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, 0, 50 * time.Millisecond},
		{"second attempt doubles", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 2, 0, 100 * time.Millisecond},
		{"third attempt doubles again", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 3, 0, 200 * time.Millisecond},
		{"fourth attempt", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 4, 0, 400 * time.Millisecond},
		{"capped at max", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 5, 0, 500 * time.Millisecond},
		{"stays capped", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 40, 0, 500 * time.Millisecond},
		{"max not a power-of-two multiple of min", Backoff{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond}, 3, 0, 150 * time.Millisecond},
		{"half jitter", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, 0.5, 75 * time.Millisecond},
		{"jitter just under one stays under base", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, justUnderOne, 100*time.Millisecond - 1},
		{"min equals max", Backoff{Min: time.Second, Max: time.Second}, 7, 0, 500 * time.Millisecond},
		{"attempt zero counts as one", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 0, 0, 50 * time.Millisecond},
		{"negative attempt counts as one", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, -3, 0, 50 * time.Millisecond},
		{"huge attempt does not overflow", Backoff{Min: time.Second, Max: time.Hour}, math.MaxInt, 0, 30 * time.Minute},
		{"huge attempt with huge max", Backoff{Min: 1, Max: math.MaxInt64}, math.MaxInt, 0, math.MaxInt64 / 2},
		{"random below zero clamps to zero", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, -1, 50 * time.Millisecond},
		{"random of one clamps under base", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, 1, 100*time.Millisecond - 1},
		{"NaN random clamps to zero", Backoff{Min: 100 * time.Millisecond, Max: time.Second}, 1, math.NaN(), 50 * time.Millisecond},
		{"zero min gives no delay", Backoff{Min: 0, Max: time.Second}, 3, 0.5, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Delay(tc.attempt, tc.random); got != tc.want {
				t.Errorf("%+v.Delay(%d, %v) = %v, want %v", tc.b, tc.attempt, tc.random, got, tc.want)
			}
		})
	}
}

// TestBackoffDelayBounds checks, for every attempt up to well past the cap and for
// jitter across [0, 1), that the delay lies in [base/2, base) and never decreases with the
// attempt number.
func TestBackoffDelayBounds(t *testing.T) {
	b := Backoff{Min: 3 * time.Millisecond, Max: 10 * time.Second}
	randoms := []float64{0, 0.25, 0.5, 0.75, 0.999, math.Nextafter(1, 0)}
	prev := make([]time.Duration, len(randoms))
	for attempt := 1; attempt <= 80; attempt++ {
		base := b.Min
		for i := 1; i < attempt && base < b.Max; i++ {
			base *= 2
		}
		base = min(base, b.Max)
		for i, r := range randoms {
			got := b.Delay(attempt, r)
			if got < base/2 || got >= base {
				t.Fatalf("Delay(%d, %v) = %v, want in [%v, %v)", attempt, r, got, base/2, base)
			}
			if got < prev[i] {
				t.Fatalf("Delay(%d, %v) = %v, below the previous attempt's %v", attempt, r, got, prev[i])
			}
			prev[i] = got
		}
	}
}

// TestBackoffDelayHugeMax checks that float64 rounding at the top of the int64 range does
// not push the delay to or past the base.
func TestBackoffDelayHugeMax(t *testing.T) {
	b := Backoff{Min: 1, Max: math.MaxInt64}
	for _, r := range []float64{0, 0.5, 0.999999, math.Nextafter(1, 0)} {
		got := b.Delay(math.MaxInt, r)
		if got < math.MaxInt64/2 || got >= math.MaxInt64 {
			t.Errorf("Delay(MaxInt, %v) = %d, want in [%d, %d)", r, got, int64(math.MaxInt64/2), int64(math.MaxInt64))
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	valid := Policy{Backoff: Backoff{Min: time.Second, Max: time.Minute}, MaxRestarts: 5, Window: time.Minute}
	for _, tc := range []struct {
		name   string
		change func(*Policy)
		ok     bool
	}{
		{"valid", func(*Policy) {}, true},
		{"min equals max", func(p *Policy) { p.Backoff.Max = p.Backoff.Min }, true},
		{"zero max restarts", func(p *Policy) { p.MaxRestarts = 0 }, true},
		{"zero min", func(p *Policy) { p.Backoff.Min = 0 }, false},
		{"min below a millisecond", func(p *Policy) { p.Backoff.Min = time.Nanosecond }, false}, // jitters to no wait
		{"negative min", func(p *Policy) { p.Backoff.Min = -time.Second }, false},
		{"max below min", func(p *Policy) { p.Backoff.Max = p.Backoff.Min - 1 }, false},
		{"negative max restarts", func(p *Policy) { p.MaxRestarts = -1 }, false},
		{"zero window", func(p *Policy) { p.Window = 0 }, false},
		{"negative window", func(p *Policy) { p.Window = -time.Second }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := valid
			tc.change(&p)
			err := p.Validate()
			if tc.ok && err != nil {
				t.Fatalf("Validate() = %v, want nil", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("Validate() = %v, want an error wrapping ErrInvalidPolicy", err)
			}
		})
	}
}
