package driver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
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
// the publisher offers without pause, the subscriber's count is taken every second, and a
// round's rate is the median of the seconds after the first (the warm-up). Java and Go take
// turns for ipcRounds rounds, so that a slow spell of the machine falls on both; the
// benchmark reports the median round of each side, their ratio go/java, and the lowest and
// highest ratio of one round's pair. Beside the rates it reports the share of the
// subscriber's polls that found nothing, which the Java sample prints when interrupted: a
// side whose subscriber often finds nothing is limited by its publisher. Each size runs
// once, whatever b.N.
func BenchmarkIPCThroughput(b *testing.B) {
	for _, size := range []int{32, 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			c := connectB(b)
			sub, pub := pairB(b, c, "aeron:ipc?term-length=64m", infra.UniqueStreamID())
			var javaRounds, goRounds []ipcRound
			var ratios []float64
			for i := range ipcRounds {
				java := javaIPCThroughput(b, size)
				goRound := goIPCThroughput(b, sub, pub, size)
				b.Logf("round %d: java %v; go %v", i+1, java, goRound)
				javaRounds, goRounds = append(javaRounds, java), append(goRounds, goRound)
				ratios = append(ratios, goRound.rate/java.rate)
			}
			rate := func(r ipcRound) float64 { return r.rate }
			empty := func(r ipcRound) float64 { return r.emptyPolls }
			goRate, java := medianOf(goRounds, rate), medianOf(javaRounds, rate)
			b.ReportMetric(goRate, "msgs/s")
			b.ReportMetric(goRate*float64(size)/1e6, "MB/s")
			b.ReportMetric(java, "java-msgs/s")
			b.ReportMetric(goRate/java, "go/java")
			b.ReportMetric(slices.Min(ratios), "min-go/java")
			b.ReportMetric(slices.Max(ratios), "max-go/java")
			b.ReportMetric(medianOf(goRounds, empty), "go-empty-polls")
			b.ReportMetric(medianOf(javaRounds, empty), "java-empty-polls")
		})
	}
}

// ipcRound is what one side's round measured.
type ipcRound struct {
	rate       float64   // msgs/s: the median of seconds (after the first)
	seconds    []float64 // msgs/s in each second, the first being the warm-up
	emptyPolls float64   // the share of polls that found no fragment
}

func (r ipcRound) String() string {
	return fmt.Sprintf("%.0f msgs/s, %.2f of polls empty (by second: %.0f)", r.rate, r.emptyPolls, r.seconds)
}

func medianOf(rounds []ipcRound, f func(ipcRound) float64) float64 {
	xs := make([]float64, len(rounds))
	for i, r := range rounds {
		xs[i] = f(r)
	}
	return median(xs)
}

// ipcFragmentLimit is the subscriber's fragment limit per poll: the Java sample's
// (SampleConfiguration.FRAGMENT_COUNT_LIMIT, aeron.sample.frameCountLimit, default 10).
const ipcFragmentLimit = 10

// ipcRounds is how many times each side is measured per message size.
const ipcRounds = 3

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// cacheLine is the width of a cache line on the machines this runs on (x86-64, arm64).
const cacheLine = 64

// ipcSeconds is how many one-second counts each side takes, the first being the warm-up.
const ipcSeconds = 6

// goIPCThroughput runs a publisher goroutine offering size-byte messages without pause
// and a subscriber goroutine polling, and samples the subscriber's count once a second (as
// the Java sample's rate reporter does, so the subscriber's loop does not read the clock).
func goIPCThroughput(b *testing.B, sub *aeron.Subscription, pub *aeron.ExclusivePublication, size int) ipcRound {
	b.Helper()
	payload := make([]byte, size)
	// stop is read by both loops on every pass and total written by the subscriber after
	// every poll: on one cache line they would make the publisher miss the cache on each
	// offer (the Java sample pads its counter for the same reason).
	var shared struct {
		_     [cacheLine]byte // nor with whatever the allocator puts around them
		stop  atomic.Bool
		_     [cacheLine]byte
		total atomic.Int64 // messages received, published by the subscriber once per poll
		_     [cacheLine]byte
	}
	stop, total := &shared.stop, &shared.total
	errs := make(chan error, 2)
	go func() {
		for !stop.Load() {
			if _, err := pub.Offer(payload); err != nil {
				if !errors.Is(err, aeron.ErrBackPressured) && !errors.Is(err, aeron.ErrAdminAction) {
					errs <- fmt.Errorf("offer: %w", err)
					return
				}
				spinWait(stop)
			}
		}
		errs <- nil
	}()
	// The subscriber's poll counts, sent when it stops: kept in its own frame until then,
	// so that nothing it writes on every poll shares a cache line with the publisher.
	type pollCounts struct{ polls, empty int64 }
	counted := make(chan pollCounts, 1)
	go func() {
		var polls, emptyPolls int64
		defer func() { counted <- pollCounts{polls, emptyPolls} }()
		received := int64(0)
		count := func([]byte, aeron.Header) { received++ }
		for !stop.Load() {
			n, err := sub.Poll(count, ipcFragmentLimit)
			if err != nil {
				errs <- fmt.Errorf("poll: %w", err)
				return
			}
			polls++
			if n > 0 {
				total.Store(received)
			} else {
				emptyPolls++
				spinWait(stop)
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
	c := <-counted
	return ipcRound{rate: median(seconds[1:]), seconds: seconds, emptyPolls: float64(c.empty) / float64(c.polls)}
}

// javaIPCThroughput runs EmbeddedExclusiveIpcThroughput for a few seconds, then interrupts
// it so that it prints its subscriber's poll failure ratio.
func javaIPCThroughput(b *testing.B, size int) ipcRound {
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
	for deadline := time.Now().Add(20 * time.Second); len(rates) < ipcSeconds && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		rates = rates[:0]
		for _, m := range line.FindAllStringSubmatch(j.Output(), -1) {
			ms, _ := strconv.ParseFloat(m[1], 64)
			n, _ := strconv.ParseFloat(strings.ReplaceAll(m[2], ",", ""), 64)
			rates = append(rates, n/(ms/1000))
		}
	}
	rates = rates[:min(len(rates), ipcSeconds)] // as many seconds as the Go side takes
	_ = j.Interrupt()
	if len(rates) < 3 {
		b.Fatalf("EmbeddedExclusiveIpcThroughput printed %d rates:\n%s", len(rates), j.Output())
	}
	// Printed with %f in the JVM's locale: the decimal separator may be a comma.
	failure := regexp.MustCompile(`Subscriber poll failure ratio: (\d+[.,]\d+)`).FindStringSubmatch(j.Output())
	if failure == nil {
		b.Fatalf("EmbeddedExclusiveIpcThroughput printed no poll failure ratio when interrupted:\n%s", j.Output())
	}
	empty, err := strconv.ParseFloat(strings.Replace(failure[1], ",", ".", 1), 64)
	if err != nil {
		b.Fatalf("EmbeddedExclusiveIpcThroughput's poll failure ratio %q: %v", failure[1], err)
	}
	return ipcRound{rate: median(rates[1:]), seconds: rates, emptyPolls: empty} // the first second is the warm-up
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

// spinWait is the idle step of a spinning loop that found no work, the Go side's stand-in
// for the BusySpinIdleStrategy (Thread.onSpinWait) of the Java sample: a short pause that
// keeps the loop from hammering the cache line the other side is writing.
func spinWait(stop *atomic.Bool) {
	for range 32 {
		if stop.Load() {
			return
		}
	}
}
