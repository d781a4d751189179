package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
)

// BenchmarkFerryVersusRawProducer measures ferry end to end — a stopped recording in the
// real archive replayed, published and acknowledged by the real broker, checkpoint
// persisted — beside a bare pulsar-client-go producer sending the same messages (payload,
// sequence id and ferry's properties) with the same producer settings (named, batching off,
// send timeout off, deduplication on, the same queue) to the same broker in the same run.
//
// Per size, the recording is made once; then raw and ferry take turns, benchRounds times
// each (raw, ferry, raw, ferry, …), each run to a fresh topic, ferry each time with a fresh
// checkpoint store, so it replays the whole recording. The broker's speed drifts within a
// run (its JIT, its GC, its ledger cache), so turns, not one run of each, make the ratio:
// reported are the median rates and the median of the rounds' ratios ferry/raw (the target
// is ≥ 0.9), the store writes per 100,000 records, and where the CPU went (see
// [cpuUse.report]). Like the raw producer's, ferry's rate is timed from the moment its
// producer is ready; its whole run, start included (discovery, opening the replay, creating
// the producer), is reported as ferry-total-s (median). A warm-up send precedes the first
// size. Each size runs once, whatever b.N: the runs are seconds long.
func BenchmarkFerryVersusRawProducer(b *testing.B) {
	warm := make([]int64, 5000)
	for i := range warm {
		warm[i] = int64(i + 1)
	}
	rawRun(b, bytes.Repeat([]byte{'w'}, 1<<10), warm, ferryProperties{recording: "0", session: "0", stream: "0"})
	for _, c := range []struct{ size, n int }{{100, 150_000}, {1 << 10, 100_000}, {16 << 10, 30_000}} {
		b.Run(fmt.Sprintf("%dB", c.size), func(b *testing.B) {
			sc := newStreamConfig(b, "")
			// The archive replays with the recording's term length and runs at most half a
			// term ahead of ferry (docs/findings.md). test/infra's driver defaults to 1 MiB
			// terms to save memory: 32 messages of 16 KiB, too few to keep the broker busy
			// while ferry waits for credits. 16 MiB is a term a user of such messages would
			// record with (Aeron's default for IPC is 64 MiB).
			sc.Channel += "|term-length=16m"
			rs, pub := newRecordedStream(b, sc.Channel, sc.StreamID)
			payload := bytes.Repeat([]byte{'f'}, c.size)
			positions := make([]int64, c.n)
			for i := range positions {
				p, err := pub.offer(payload, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				positions[i] = p
			}
			rs.stopRecording(b, pub)
			props := ferryProperties{
				recording: strconv.FormatInt(pub.recordingID, 10),
				session:   strconv.FormatInt(int64(pub.pub.SessionID()), 10),
				stream:    strconv.FormatInt(int64(sc.StreamID), 10),
			}

			var raws, ferries, ratios, totals, writes []float64
			var rawCPU, ferryCPU cpuUse
			for round := range benchRounds {
				var raw rawResult
				var ferry ferryResult
				// Labelled, so that a -cpuprofile of the benchmark tells the sides apart
				// (go tool pprof -tagfocus side=ferry).
				pprof.Do(context.Background(), pprof.Labels("side", "raw"), func(context.Context) {
					raw = rawRun(b, payload, positions, props)
				})
				sc.Topic = fmt.Sprintf("persistent://public/default/%s-%d-%d", sc.Name, round, time.Now().UnixNano())
				pprof.Do(context.Background(), pprof.Labels("side", "ferry"), func(context.Context) {
					ferry = ferryRun(b, sc, pub.recordingID, positions[c.n-1], c.n)
				})
				raws, ferries = append(raws, raw.rate), append(ferries, ferry.rate)
				ratios = append(ratios, ferry.rate/raw.rate)
				totals = append(totals, ferry.total.Seconds())
				writes = append(writes, float64(ferry.saves)*100_000/float64(c.n))
				rawCPU, ferryCPU = rawCPU.plus(raw.cpu), ferryCPU.plus(ferry.cpu)
			}
			b.ReportMetric(median(ferries), "ferry-msg/s")
			b.ReportMetric(median(raws), "raw-msg/s")
			b.ReportMetric(median(ratios), "ferry/raw")
			b.ReportMetric(slices.Min(ratios), "ferry/raw-min")
			b.ReportMetric(slices.Max(ratios), "ferry/raw-max")
			b.ReportMetric(median(totals), "ferry-total-s")
			b.ReportMetric(median(writes), "writes/100k")
			b.ReportMetric(median(ferries)*float64(c.size)/1e6, "ferry-MB/s")
			ferryCPU.report(b, "ferry", benchRounds*c.n)
			rawCPU.report(b, "raw", benchRounds*c.n)
			b.Logf("ferry/raw by round: %.3f", ratios)
		})
	}
}

// benchRounds is how many times raw and ferry each run per size, taking turns.
const benchRounds = 5

// ferryResult is one run of ferry over a whole recording.
type ferryResult struct {
	rate  float64       // messages per second from the producer's readiness to the last checkpoint
	total time.Duration // from start to the last checkpoint
	cpu   cpuUse        // from the producer's readiness to the last checkpoint
	saves int           // checkpoint store writes
}

// ferryRun runs ferry in this process over the recording, from its start, to sc.Topic with
// a fresh store, until the checkpoint reaches last; then it checks the topic holds n
// entries and stops ferry.
func ferryRun(b *testing.B, sc streamConfig, recordingID, last int64, n int) ferryResult {
	b.Helper()
	benchTopic(b, sc.Topic)
	writes := &failingStore{}
	start := time.Now()
	ip := startInProcess(b, inProcessOptions{
		wrapStore:  func(s store.Store) store.Store { writes.Store = s; return writes },
		checkpoint: progress.CheckpointConfig{EveryRecords: 1000, EveryMs: 10, RetryMinMs: 50, RetryMaxMs: 400},
	}, sc)
	// CPU from the moment the producer is first seen ready (from the start, should the
	// run end before a poll sees it).
	fromReady, sawReady := readCPU(b), false
	for ip.checkpoint(sc, recordingID).Position != last {
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("ferry did not finish within 5 minutes")
		}
		if !sawReady && ip.ready() {
			fromReady, sawReady = readCPU(b), true
		}
		time.Sleep(2 * time.Millisecond) // polling for the end of a measured run
	}
	res := ferryResult{total: time.Since(start), cpu: readCPU(b).since(fromReady), saves: writes.saves()}
	ip.mu.Lock()
	ready := ip.producedAt
	ip.mu.Unlock()
	res.rate = float64(n) / time.Since(ready).Seconds()
	if _, err := ip.stop(); err != nil {
		b.Fatalf("stop ferry: %v", err)
	}
	if got := storedEntries(b, sc.Topic); got != int64(n) {
		b.Fatalf("ferry's topic holds %d entries, want %d", got, n)
	}
	dropTopic(b, sc.Topic)
	return res
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// rawResult is the raw producer's run: messages per second and the CPU it took.
type rawResult struct {
	rate float64
	cpu  cpuUse
}

// ferryProperties are the values of the properties ferry puts on every message of a
// recording, but the position.
type ferryProperties struct{ recording, session, stream string }

// rawRun sends, through a bare producer with ferry's settings to a fresh topic, the
// messages ferry sends for the recording: payload once per position, the position as
// sequence id, and ferry's four properties (docs/performance.md: the properties cost the
// client and the broker a few µs per message, which writing ferry's messages costs anyone).
func rawRun(b *testing.B, payload []byte, positions []int64, props ferryProperties) rawResult {
	b.Helper()
	client := newPulsarClient(b, peers.Pulsar.ServiceURL)
	topic := fmt.Sprintf("persistent://public/default/raw-%d", time.Now().UnixNano())
	benchTopic(b, topic)
	producer, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic:           topic,
		Name:            fmt.Sprintf("raw-%d", time.Now().UnixNano()),
		DisableBatching: true,
		SendTimeout:     -1,
		// ferry holds at most its credits (1,000 records by default) in flight; the raw
		// producer gets the same bound, and blocks on it (it has no credits).
		MaxPendingMessages: 1000,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer producer.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start, fromStart := time.Now(), readCPU(b)
	for _, p := range positions {
		seq := p
		wg.Add(1)
		msg := &pulsar.ProducerMessage{Payload: payload, SequenceID: &seq, Properties: map[string]string{
			actors.PropRecordingID: props.recording,
			actors.PropPosition:    strconv.FormatInt(p, 10),
			actors.PropSessionID:   props.session,
			actors.PropStreamID:    props.stream,
		}}
		producer.SendAsync(context.Background(), msg,
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
				wg.Done()
			})
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), readCPU(b).since(fromStart)
	if firstErr != nil {
		b.Fatalf("raw send failed: %v", firstErr)
	}
	if n := storedEntries(b, topic); n != int64(len(positions)) {
		b.Fatalf("the raw producer's topic holds %d entries, want %d", n, len(positions))
	}
	producer.Close()
	dropTopic(b, topic)
	return rawResult{rate: float64(len(positions)) / elapsed.Seconds(), cpu: cpu}
}

// dropTopic deletes a measured run's topic: the test broker retains everything, and a
// benchmark's gigabytes would otherwise stay in its bookie (and the page cache) for every
// later run to compete with.
func dropTopic(b *testing.B, topic string) {
	b.Helper()
	adminMust(b, http.MethodDelete, topicPath(topic)+"?force=true", "")
}

// benchTopic creates a topic for a measured run and waits until the broker deduplicates on
// it. No reader watches it: a reader would cost the broker and this process CPU during the
// run (on two cores, a sixth of the run's samples were the reader's), measuring the reader
// as much as the producer. What was stored is checked through the admin API afterwards.
func benchTopic(b *testing.B, topic string) {
	b.Helper()
	adminMust(b, http.MethodPut, topicPath(topic), "")
	waitDeduplicationEnabled(b, topic)
}

// cpuUse is CPU time: this process's (ferry in process, or the raw producer) and the whole
// machine's, busy and in all. On a machine whose cores are all busy during a run, whatever
// this process spends is taken from the broker: the split tells where the time went.
type cpuUse struct {
	self, archive, machineBusy, machineAll time.Duration
	faults                                 int64 // this process's minor page faults
}

// clockTick is the unit of /proc/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

func readCPU(b *testing.B) cpuUse {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	// cpu  user nice system idle iowait irq softirq steal ...
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		b.Fatalf("/proc/stat starts %q", line)
	}
	var u cpuUse
	for i, f := range fields[1:9] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("/proc/stat field %d: %v", i+1, err)
		}
		u.machineAll += time.Duration(n) * clockTick
		if i != 3 && i != 4 { // idle, iowait
			u.machineBusy += time.Duration(n) * clockTick
		}
	}
	u.self = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	u.faults = ru.Minflt
	u.archive = archiveCPU(b)
	return u
}

// archiveCPU is the CPU time of the archive's process (ArchivingMediaDriver, with the media
// driver in it): the process whose command line names the peers' Aeron directory.
func archiveCPU(b *testing.B) time.Duration {
	b.Helper()
	want := "-Daeron.dir=" + peers.Archive.AeronDir + "\x00"
	procs, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(cmdline), want) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
		if err != nil {
			b.Fatal(err)
		}
		// pid (comm) state ... utime stime: fields 14 and 15, counted after the comm.
		_, rest, _ := strings.Cut(string(stat), ") ")
		f := strings.Fields(rest)
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return time.Duration(ut+st) * clockTick
	}
	b.Fatalf("no process has %q on its command line", strings.TrimSuffix(want, "\x00"))
	return 0
}

func (u cpuUse) plus(v cpuUse) cpuUse {
	return cpuUse{u.self + v.self, u.archive + v.archive, u.machineBusy + v.machineBusy, u.machineAll + v.machineAll, u.faults + v.faults}
}

func (u cpuUse) since(from cpuUse) cpuUse {
	return cpuUse{u.self - from.self, u.archive - from.archive, u.machineBusy - from.machineBusy, u.machineAll - from.machineAll, u.faults - from.faults}
}

// report adds, for a run of n messages named side: this process's CPU per message, the
// archive's, the rest of the machine's (the broker, mostly), and how busy the machine was.
func (u cpuUse) report(b *testing.B, side string, n int) {
	perMsg := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(perMsg(u.self), side+"-proc-µs/msg")
	b.ReportMetric(perMsg(u.archive), side+"-archive-µs/msg")
	b.ReportMetric(perMsg(u.machineBusy-u.self-u.archive), side+"-others-µs/msg")
	b.ReportMetric(float64(u.faults)/float64(n), side+"-faults/msg")
	if u.machineAll > 0 {
		b.ReportMetric(100*float64(u.machineBusy)/float64(u.machineAll), side+"-busy-%")
	}
}
