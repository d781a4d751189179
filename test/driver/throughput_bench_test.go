package driver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// BenchmarkIPCThroughput measures how many messages a Go subscriber consumes per second
// from a Go exclusive publication over aeron:ipc through the real media driver, beside
// Aeron's own Java EmbeddedExclusiveIpcThroughput sample (publisher and subscriber threads
// over IPC, same message size), run in the same benchmark. Both are measured the same way:
// the publisher offers without pause, the subscriber's count is taken every second, and
// the rate is the median of the seconds after the first (the warm-up). It reports msgs/s,
// MB/s, the Java figure and their ratio go/java; each size runs once, whatever b.N.
func BenchmarkIPCThroughput(b *testing.B) {
	for _, size := range []int{32, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			java := javaIPCThroughput(b, size)
			c := connectB(b)
			sub, pub := pairB(b, c, "aeron:ipc?term-length=64m", int32(8000+size))
			goRate, seconds := goIPCThroughput(b, sub, pub, size)
			b.ReportMetric(goRate, "msgs/s")
			b.ReportMetric(goRate*float64(size)/1e6, "MB/s")
			b.ReportMetric(java, "java-msgs/s")
			b.ReportMetric(goRate/java, "go/java")
			b.Logf("Go msgs/s by second: %.0f", seconds)
		})
	}
}

// ipcSeconds is how many one-second counts each side takes, the first being the warm-up.
const ipcSeconds = 6

// goIPCThroughput runs a publisher goroutine offering size-byte messages without pause
// and a subscriber goroutine polling, samples the subscriber's count once a second (as the
// Java sample's rate reporter does, so the subscriber's loop does not read the clock), and
// returns the median of the per-second counts after the first second, with all of them.
func goIPCThroughput(b *testing.B, sub *aeron.Subscription, pub *aeron.ExclusivePublication, size int) (float64, []float64) {
	b.Helper()
	payload := make([]byte, size)
	var stop atomic.Bool
	var total atomic.Int64 // messages received, published by the subscriber once per poll
	errs := make(chan error, 2)
	go func() {
		for !stop.Load() {
			if _, err := pub.Offer(payload); err != nil && !errors.Is(err, aeron.ErrBackPressured) && !errors.Is(err, aeron.ErrAdminAction) {
				errs <- fmt.Errorf("offer: %w", err)
				return
			}
		}
		errs <- nil
	}()
	go func() {
		received := int64(0)
		count := func([]byte, aeron.Header) { received++ }
		for !stop.Load() {
			n, err := sub.Poll(count, 256)
			if err != nil {
				errs <- fmt.Errorf("poll: %w", err)
				return
			}
			if n > 0 {
				total.Store(received)
			}
		}
		errs <- nil
	}()
	var seconds []float64
	tick := time.NewTicker(time.Second)
	last, lastAt := total.Load(), time.Now()
	for len(seconds) < ipcSeconds {
		now := <-tick.C
		n := total.Load()
		seconds = append(seconds, float64(n-last)/now.Sub(lastAt).Seconds())
		last, lastAt = n, now
	}
	tick.Stop()
	stop.Store(true)
	for range 2 {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	rates := slices.Clone(seconds[1:])
	slices.Sort(rates)
	return rates[len(rates)/2], seconds
}

var (
	javaRatesMu sync.Mutex
	javaRates   = map[int]float64{}
)

// javaIPCThroughput runs EmbeddedExclusiveIpcThroughput for a few seconds and returns the
// median of its per-second message rates after a warm-up second; it is measured once per
// message size per benchmark run.
func javaIPCThroughput(b *testing.B, size int) float64 {
	javaRatesMu.Lock()
	defer javaRatesMu.Unlock()
	if r, ok := javaRates[size]; ok {
		return r
	}
	dir := b.TempDir()
	j, err := infra.StartJava(dir, "io.aeron.samples.EmbeddedExclusiveIpcThroughput", map[string]string{
		"aeron.dir":                  dir + "/aeron",
		"aeron.sample.messageLength": strconv.Itoa(size),
	})
	if err != nil {
		b.Fatal(err)
	}
	line := regexp.MustCompile(`Duration (\d+)ms - ([\d,]+) messages`)
	var rates []float64
	for deadline := time.Now().Add(20 * time.Second); len(rates) < 6 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		rates = rates[:0]
		for _, m := range line.FindAllStringSubmatch(j.Output(), -1) {
			ms, _ := strconv.ParseFloat(m[1], 64)
			n, _ := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
			rates = append(rates, n/(ms/1000))
		}
	}
	_ = j.Stop()
	if len(rates) < 3 {
		b.Fatalf("EmbeddedExclusiveIpcThroughput printed %d rates:\n%s", len(rates), j.Output())
	}
	rates = rates[1:] // warm-up
	slices.Sort(rates)
	r := rates[len(rates)/2]
	javaRates[size] = r
	return r
}

func connectB(b *testing.B) *aeron.Client {
	b.Helper()
	c, err := aeron.Connect(context.Background(), aeron.Options{Dir: archive.AeronDir})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

func pairB(b *testing.B, c *aeron.Client, channel string, stream int32) (*aeron.Subscription, *aeron.ExclusivePublication) {
	b.Helper()
	ctx := context.Background()
	sub, err := c.AddSubscription(ctx, channel, stream, aeron.ImageHandlers{})
	if err != nil {
		b.Fatal(err)
	}
	pub, err := c.AddExclusivePublication(ctx, channel, stream)
	if err != nil {
		b.Fatal(err)
	}
	eventually.NoError(b, 10*time.Second, func() error {
		if !pub.IsConnected() || !sub.IsConnected() {
			return errors.New("publication and subscription did not connect")
		}
		return nil
	})
	return sub, pub
}
