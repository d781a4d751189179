package pipeline

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/messages"
)

// BenchmarkPeakRSSByRecordingSize runs the ferry binary on a stopped recording of 100 MB
// and on one of 1 GiB (16 KiB messages), each to a fresh topic, and reports ferry's peak
// resident set (VmHWM of /proc/<pid>/status, read while it runs, up to the moment every
// message is in the broker and it is sent SIGTERM) per size, and the ratio of the large to
// the small. ferry streams a recording through a bounded window (inflight.max_messages,
// max_bytes), so its memory should not grow with the recording: the target is a ratio
// ≤ 1.2. Beside the peak it reports the highest sampled (every 20 ms) anonymous memory
// (heap, stacks) and shared memory (the Aeron log buffers mapped from the media driver's
// directory, which VmHWM counts too).
//
// Each recording is replayed rssRuns times (a fresh ferry, store and topic each), and a
// size's peak is the highest of its runs: the heap is a garbage collector's saw, and a
// 100 MB replay lasts about a second, few enough collections that one run may miss the
// saw's top (ratios of single runs ranged 1.05-1.59 for the same code). The benchmark
// reports the ratio; it does not fail on it. Each size runs once, whatever b.N.
func BenchmarkPeakRSSByRecordingSize(b *testing.B) {
	const payloadSize = 16 << 10
	var smallPeakMB float64
	for _, mb := range []int{100, 1024} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			n := mb << 20 / payloadSize
			sc := newStreamConfig(b, "")
			rs, pub := newRecordedStream(b, sc.Channel, sc.StreamID)
			payload := bytes.Repeat([]byte{'r'}, payloadSize)
			var last int64
			for range n {
				p, err := pub.offer(payload, 30*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				last = p
			}
			rs.stopRecording(b, pub)
			b.Logf("recording %d: %d messages of %d bytes, stopped at %d", pub.recordingID, n, payloadSize, last)

			var peak rssSample
			for run := range rssRuns {
				runSC := sc
				runSC.Topic = fmt.Sprintf("%s-%d", sc.Topic, run+1)
				r := replayForRSS(b, runSC, pub.recordingID, n, last)
				b.Logf("%d MB recording, run %d: peak RSS %.1f MB (anon ≤ %.1f, shmem ≤ %.1f) in %s", mb, run+1, r.peakMB(), r.anonMB(), r.shmemMB(), r.elapsed.Round(time.Millisecond))
				peak = peak.max(r)
			}
			peakMB := peak.peakMB()
			b.ReportMetric(peakMB, "peak-RSS-MB")
			b.ReportMetric(peak.anonMB(), "max-anon-MB")
			b.ReportMetric(peak.shmemMB(), "max-shmem-MB")
			b.ReportMetric(float64(mb)/peak.elapsed.Seconds(), "MB/s")
			if smallPeakMB == 0 {
				smallPeakMB = peakMB
				return
			}
			ratio := peakMB / smallPeakMB
			b.ReportMetric(ratio, "peak/peak-100MB")
			b.Logf("%d MB recording: peak RSS %.1f MB; %.1f MB for 100 MB: ratio %.3f (target ≤ 1.2)", mb, peakMB, smallPeakMB, ratio)
		})
	}
}

// rssRuns is how many times each recording is replayed.
const rssRuns = 3

// rssSample is what one replay's sampling saw; elapsed is the time to replay.
type rssSample struct {
	peakKB, anonKB, shmemKB int64
	elapsed                 time.Duration
}

func (r rssSample) peakMB() float64  { return float64(r.peakKB) / 1024 }
func (r rssSample) anonMB() float64  { return float64(r.anonKB) / 1024 }
func (r rssSample) shmemMB() float64 { return float64(r.shmemKB) / 1024 }

// max is the highest of each figure of r and o, and the longest elapsed time.
func (r rssSample) max(o rssSample) rssSample {
	return rssSample{max(r.peakKB, o.peakKB), max(r.anonKB, o.anonKB), max(r.shmemKB, o.shmemKB), max(r.elapsed, o.elapsed)}
}

// replayForRSS runs a fresh ferry on the stopped recording of sc's stream until the broker
// has its n messages, sampling its memory, and checks the checkpoint and the topic.
func replayForRSS(b *testing.B, sc streamConfig, recordingID int64, n int, last int64) rssSample {
	b.Helper()
	cfg := newFerryConfig(b, sc)
	cfg.Checkpoint = checkpointConfig{EveryRecords: 1000, EveryMs: 1000}
	start := time.Now()
	f := startFerry(b, cfg.write(b))
	var r rssSample // anon and shmem: the highest sampled
	waitFor(b, f, 10*time.Minute, fmt.Sprintf("%d messages in %s", n, sc.Topic), func() error {
		if kb, err := rssVmHWM(f.Pid()); err == nil {
			r.peakKB = max(r.peakKB, kb)
		}
		if kb, err := procStatusKB(f.Pid(), "RssAnon"); err == nil {
			r.anonKB = max(r.anonKB, kb)
		}
		if kb, err := procStatusKB(f.Pid(), "RssShmem"); err == nil {
			r.shmemKB = max(r.shmemKB, kb)
		}
		var stats struct {
			MsgInCounter int64 `json:"msgInCounter"`
		}
		if err := adminGet(topicPath(sc.Topic)+"/stats", &stats); err != nil {
			return err // the topic is not there yet
		}
		if stats.MsgInCounter < int64(n) {
			return fmt.Errorf("the broker received %d of %d", stats.MsgInCounter, n)
		}
		// And the recording's final checkpoint persisted: the replay tells its end apart
		// (an archive call) after it read the last record, which can come after the last
		// acknowledgement; a stop before that drains to the end, but not completed.
		st, err := findStream(b, "http://"+cfg.HTTP.Listen, sc.Name)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(st.Recordings, func(r *messages.RecordingStatus) bool { return r.RecordingId == recordingID && r.Completed }) {
			return fmt.Errorf("recording %d not completed yet", recordingID)
		}
		return nil
	})
	r.elapsed = time.Since(start)
	kb, err := rssVmHWM(f.Pid())
	if err != nil {
		b.Fatalf("read the peak RSS of ferry (pid %d): %v", f.Pid(), err)
	}
	r.peakKB = max(r.peakKB, kb)
	f.mustStop()

	cp := cfg.checkpoint(b, sc, recordingID)
	if cp.Position != last || !cp.Completed {
		b.Fatalf("checkpoint of recording %d: %+v; want position %d, completed", recordingID, cp, last)
	}
	if in := receivedMessages(b, sc.Topic); in != int64(n) {
		b.Fatalf("the broker received %d messages, want %d", in, n)
	}
	dropTopic(b, sc.Topic)
	return r
}
