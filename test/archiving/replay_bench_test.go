package archiving

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// BenchmarkReplayThroughput measures how fast ferry's archive client reads a stopped
// recording back through a replay, beside Aeron's own Java EmbeddedReplayThroughput sample
// doing the same in the same run. Both sides do what the sample does:
//
//   - record replayMessages(size) messages of size bytes from an exclusive IPC publication,
//     each starting with its index (little-endian, as the sample's putLong on x86 and arm64);
//   - replay the whole recording from position 0 to an aeron:ipc subscription, polling 10
//     fragments at a time through a fragment assembler and spinning when a poll finds
//     nothing, and check every message's index on arrival;
//   - time each replay from the replay request to the last message, connection set-up
//     and the subscription's close included (the sample closes it inside its timing).
//
// The sample runs its own ArchivingMediaDriver inside its JVM; it gets the same system
// properties as the test archive ours replays from (infra.ArchiveProperties), so that the
// archives' threading, file handling and term lengths are the same (16 MiB terms on both
// sides' recordings). Both recordings are made once per size and have the same length,
// which is checked (to the hundredth of a MiB the sample prints). Unmeasured replays on each side come first (replayWarmUps each: the
// JVM's JIT, the page cache); then the sides take turns for replayRounds rounds, the order
// alternating, and the benchmark reports the median round of each side in MB/s (MiB of the
// recording, headers included, per second, as the sample prints it), their ratio go/java
// and the lowest and highest ratio of one round's pair. Each size is meant to run once:
// with the default -benchtime its first run takes longer than the benchmark's time, and b.N
// is not used.
func BenchmarkReplayThroughput(b *testing.B) {
	for _, size := range []int{32, 1024, 16 * 1024} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			messages := replayMessages(size)
			s := connect(b, shared, archive.Options{})
			ours := recordForReplay(b, s, size, messages)
			java := startJavaReplays(b, size, messages)
			if java.recordingMiB != mib(ours.length) {
				b.Fatalf("the Java sample's recording is %s MiB, ours %s MiB: the two sides would not replay the same bytes", java.recordingMiB, mib(ours.length))
			}
			goSide := func() float64 { return ours.replay(b, s) }
			javaSide := func() float64 { return java.replay(b) }
			for range replayWarmUps - 1 { // the sample's first replay was made before it first asked
				javaSide()
			}
			for range replayWarmUps {
				goSide()
			}
			var goRates, javaRates, ratios []float64
			for round := range replayRounds {
				var g, j float64
				if round%2 == 0 {
					j, g = javaSide(), goSide()
				} else {
					g, j = goSide(), javaSide()
				}
				b.Logf("round %d: go %.0f MB/s, java %.0f MB/s, go/java %.2f", round+1, g, j, g/j)
				goRates, javaRates, ratios = append(goRates, g), append(javaRates, j), append(ratios, g/j)
			}
			java.finish(b)
			goRate, javaRate := median(goRates), median(javaRates)
			b.ReportMetric(goRate, "MB/s")
			b.ReportMetric(goRate*float64(1<<20)/float64(ours.length)*float64(messages), "msgs/s")
			b.ReportMetric(javaRate, "java-MB/s")
			b.ReportMetric(goRate/javaRate, "go/java")
			b.ReportMetric(slices.Min(ratios), "min-go/java")
			b.ReportMetric(slices.Max(ratios), "max-go/java")
		})
	}
}

// replayWarmUps is how many replays each side makes before those measured: the JVM's
// JIT compiles the sample's replay loop during the first and the second.
const replayWarmUps = 2

// replayRounds is how many measured replays each side makes per message size. A replay
// takes about a third of a second: the rounds are many for their spread, not their cost.
const replayRounds = 7

// replayChannel is the channel both sides record: 16 MiB terms, so that the archive, which
// replays with the recording's term length and keeps within half a term of its subscriber,
// is not held back by the window (docs/findings.md).
const replayChannel = "aeron:ipc?term-length=16m"

// replayFragmentLimit is the subscriber's fragment limit per poll: the sample's
// (SampleConfiguration.FRAGMENT_COUNT_LIMIT, default 10).
const replayFragmentLimit = 10

// replayMessages is how many messages of size bytes make a recording of about 1 GiB, so
// that a replay takes long enough (about a third of a second) for its set-up not to count.
func replayMessages(size int) int {
	const maxPayload = 1408 - 32 // the default MTU less the data frame's header
	fragments := (size + maxPayload - 1) / maxPayload
	framed := size + 32*fragments
	return (1 << 30) / framed
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// mib is a recording length in MiB as the sample prints it (%.02f).
func mib(length int64) string { return strconv.FormatFloat(float64(length)/(1<<20), 'f', 2, 64) }

// replayRecording is the Go side's recording.
type replayRecording struct {
	id       int64
	length   int64 // the stop position; the recording starts at 0
	messages int
}

// recordForReplay records messages messages of size bytes, as the sample's makeRecording
// does, and waits until the archive has all of them.
func recordForReplay(b *testing.B, s session, size, messages int) replayRecording {
	b.Helper()
	ctx := context.Background()
	_, subID, pub, id := recorded(b, s, replayChannel)
	b.Cleanup(func() { _ = s.archive.PurgeRecording(context.Background(), id) })
	payload := make([]byte, size)
	deadline := time.Now().Add(5 * time.Minute)
	for i := range messages {
		binary.LittleEndian.PutUint64(payload, uint64(i))
		for {
			_, err := pub.Offer(payload)
			if err == nil {
				break
			}
			if !errors.Is(err, aeron.ErrBackPressured) && !errors.Is(err, aeron.ErrAdminAction) && !errors.Is(err, aeron.ErrNotConnected) {
				b.Fatalf("offer message %d: %v", i, err)
			}
			if time.Now().After(deadline) {
				b.Fatalf("recording %d of %d messages took more than 5 minutes: %v", i, messages, err)
			}
		}
	}
	length := pub.Position()
	eventually.NoError(b, time.Minute, func() error {
		at, err := s.archive.RecordingPosition(ctx, id)
		if err != nil {
			return err
		}
		if at < length {
			return fmt.Errorf("recording %d at %d of %d", id, at, length)
		}
		return nil
	})
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		b.Fatal(err)
	}
	_ = pub.Close()
	return replayRecording{id: id, length: length, messages: messages}
}

// replay replays the whole recording once and returns its rate in MiB per second.
func (r replayRecording) replay(b *testing.B, s session) float64 {
	b.Helper()
	ctx := context.Background()
	stream := infra.UniqueStreamID()
	began := time.Now()
	replaySession, err := s.archive.StartReplay(ctx, r.id, 0, r.length, "aeron:ipc", stream)
	if err != nil {
		b.Fatal(err)
	}
	imageSession := archive.ReplayImageSessionID(replaySession)
	sub, err := s.aeron.AddSubscription(ctx, fmt.Sprintf("aeron:ipc?session-id=%d", imageSession), stream, aeron.ImageHandlers{})
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = sub.Close()
		}
	}()
	var img *aeron.Image
	for img = sub.ImageBySessionID(imageSession); img == nil; img = sub.ImageBySessionID(imageSession) {
		if time.Since(began) > 10*time.Second {
			b.Fatal("the replay's image did not join within 10 s")
		}
	}
	count, wrong := 0, -1
	asm := aeron.NewFragmentAssembler(img.MaxMessageLength(), func(msg []byte, _ aeron.Header) {
		if binary.LittleEndian.Uint64(msg) != uint64(count) && wrong < 0 {
			wrong = count
		}
		count++
	})
	for count < r.messages {
		n, err := img.Poll(asm.OnFragment, replayFragmentLimit)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			if img.IsClosed() {
				b.Fatalf("the replay ended after %d of %d messages", count, r.messages)
			}
			if time.Since(began) > 2*time.Minute {
				b.Fatalf("the replay delivered %d of %d messages in 2 minutes", count, r.messages)
			}
		}
	}
	closed = true
	if err := sub.Close(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(began)
	if wrong >= 0 {
		b.Fatalf("message %d of the replay carried another index", wrong)
	}
	return float64(r.length) / (1 << 20) / elapsed.Seconds()
}

// javaReplays is the Java sample, asking whether to replay again after each replay.
type javaReplays struct {
	proc         *infra.JavaProcess
	remove       func() error
	replays      int    // the replays it has reported
	recordingMiB string // the length of its recording, as it prints it
}

var javaReplayed = regexp.MustCompile(`Replayed ([0-9.]+) MB @ ([0-9.]+) MB/s`)

// startJavaReplays starts EmbeddedReplayThroughput and waits for its first replay, which
// serves as its warm-up.
func startJavaReplays(b *testing.B, size, messages int) *javaReplays {
	b.Helper()
	dir := b.TempDir()
	props, remove, err := infra.EmbeddedArchiveProperties(dir)
	if err != nil {
		b.Fatal(err)
	}
	props["aeron.sample.channel"] = replayChannel
	props["aeron.sample.messageLength"] = strconv.Itoa(size)
	props["aeron.sample.messages"] = strconv.Itoa(messages)
	props["user.language"], props["user.country"] = "en", "US" // the printed numbers' format
	proc, err := infra.StartJavaAnswering(dir, "io.aeron.samples.archive.EmbeddedReplayThroughput", props)
	if err != nil {
		_ = remove()
		b.Fatal(err)
	}
	j := &javaReplays{proc: proc, remove: remove}
	b.Cleanup(func() { _ = proc.Stop(); _ = j.remove() })
	first := j.await(b)
	j.recordingMiB = first[1]
	return j
}

// await waits until the sample has reported one more replay and asks again, and returns
// the report's fields: the recording's MiB and the rate.
func (j *javaReplays) await(b *testing.B) []string {
	b.Helper()
	var report []string
	eventually.NoError(b, 2*time.Minute, func() error {
		out := j.proc.Output()
		if done, err := j.proc.Exited(); done {
			b.Fatalf("EmbeddedReplayThroughput exited (%v) after %d replays:\n%s", err, j.replays, out)
		}
		if strings.Contains(out, "unexpected end of stream") {
			// It then reports a rate for the whole recording anyway.
			b.Fatalf("EmbeddedReplayThroughput's replay %d ended early:\n%s", j.replays+1, out)
		}
		reports := javaReplayed.FindAllStringSubmatch(out, -1)
		if len(reports) <= j.replays || strings.Count(out, "Execute again?") <= j.replays {
			return fmt.Errorf("EmbeddedReplayThroughput has not finished replay %d", j.replays+1)
		}
		report = reports[j.replays]
		return nil
	})
	j.replays++
	return report
}

// replay asks the sample for one more replay and returns its rate in MiB per second.
func (j *javaReplays) replay(b *testing.B) float64 {
	b.Helper()
	if err := j.proc.Answer("y"); err != nil {
		b.Fatal(err)
	}
	rate, err := strconv.ParseFloat(j.await(b)[2], 64)
	if err != nil {
		b.Fatal(err)
	}
	return rate
}

// finish answers no, so that the sample closes its archive and deletes its directories.
func (j *javaReplays) finish(b *testing.B) {
	b.Helper()
	if err := j.proc.Answer("n"); err != nil {
		b.Fatal(err)
	}
	eventually.NoError(b, 30*time.Second, func() error {
		if done, err := j.proc.Exited(); !done {
			return errors.New("EmbeddedReplayThroughput has not exited")
		} else if err != nil {
			b.Fatalf("EmbeddedReplayThroughput: %v\n%s", err, j.proc.Output())
		}
		return nil
	})
}
