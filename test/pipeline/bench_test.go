package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"math"
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
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
)

// BenchmarkFerryVersusRawProducer measures ferry end to end — a stopped recording in the
// real archive replayed, published and acknowledged by the real broker, checkpoint
// persisted — beside a bare pulsar-client-go producer sending the same messages (payload,
// sequence id and ferry's properties) with the same producer settings (named, batching off,
// send timeout off, deduplication on, the same queue) to the same broker in the same run.
//
// Per size, the recording is made once; then raw and ferry take turns, each run to a fresh
// topic, ferry each time with a fresh checkpoint store, so it replays the whole recording.
// First come warm-up turns, not measured, until the broker's CPU per message settles (its
// JIT: a fresh broker costs two to three times as much per message at first); then
// benchRounds measured turns, raw first in one and ferry first in the next. The broker's
// speed still drifts (its GC, its ledger cache), so turns, not one run of each, make the
// ratio: reported are the median rates and the median of the rounds' ratios ferry/raw (the
// target is ≥ 0.9), the store writes per 100,000 records, and where the CPU went (see
// [cpuUse.report]; every turn's figures are logged). Like the raw producer's, ferry's rate
// is timed from its first send; its whole run, start included (discovery, opening the
// replay, creating the producer), is reported as ferry-total-s (median). Each size runs once, whatever b.N: the runs are seconds long.
func BenchmarkFerryVersusRawProducer(b *testing.B) {
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

			// Each turn's line is logged after the ratios: without -v, the testing package
			// keeps only a benchmark's first lines of log.
			var turns []string
			// turn runs raw and ferry once each, raw first in even turns and ferry first in
			// odd ones, so that a broker getting faster or slower within a pair of turns
			// favours each side equally often.
			turn := func(name string, i int) (raw rawResult, ferry ferryResult) {
				runRaw := func() {
					// Labelled, so that a -cpuprofile of the benchmark tells the sides
					// apart (go tool pprof -tagfocus side=ferry).
					pprof.Do(context.Background(), pprof.Labels("side", "raw"), func(context.Context) {
						raw = rawRun(b, payload, positions, props)
					})
				}
				runFerry := func() {
					sc.Topic = fmt.Sprintf("persistent://public/default/%s-%s-%d", sc.Name, name, time.Now().UnixNano())
					pprof.Do(context.Background(), pprof.Labels("side", "ferry"), func(context.Context) {
						ferry = ferryRun(b, sc, pub.recordingID, positions[c.n-1], c.n)
					})
				}
				if i%2 == 0 {
					runRaw()
					runFerry()
				} else {
					runFerry()
					runRaw()
				}
				turns = append(turns, fmt.Sprintf("%s: ferry %.1f k msg/s, %s; raw %.1f k msg/s, %s", name,
					ferry.rate/1e3, ferry.cpu.perMessage(c.n), raw.rate/1e3, raw.cpu.perMessage(c.n)))
				return raw, ferry
			}

			// Warm-up turns, not measured, until the broker's CPU per message of the raw
			// producer's run settles: a broker just started spends two to three times as
			// much per message in its first few hundred thousand messages (its JIT) as it
			// does after them, and a ratio taken while it warms measures the warming.
			prev := 0.0
			for w := range warmTurnsMax {
				raw, _ := turn(fmt.Sprintf("warm-up %d", w+1), w)
				broker := raw.cpu.othersPerMessage(c.n)
				if prev > 0 && math.Abs(broker-prev) <= warmSettled*prev {
					break
				}
				prev = broker
			}

			var raws, ferries, ratios, owns, totals, writes []float64
			var rawCPU, ferryCPU cpuUse
			for round := range benchRounds {
				raw, ferry := turn(fmt.Sprintf("round %d", round+1), round)
				raws, ferries = append(raws, raw.rate), append(ferries, ferry.rate)
				ratios = append(ratios, ferry.rate/raw.rate)
				owns = append(owns, ownCPURatio(raw.cpu, ferry.cpu))
				totals = append(totals, ferry.total.Seconds())
				writes = append(writes, float64(ferry.saves)*100_000/float64(c.n))
				rawCPU, ferryCPU = rawCPU.plus(raw.cpu), ferryCPU.plus(ferry.cpu)
			}
			b.ReportMetric(median(ferries), "ferry-msg/s")
			b.ReportMetric(median(raws), "raw-msg/s")
			b.ReportMetric(median(ratios), "ferry/raw")
			b.ReportMetric(slices.Min(ratios), "ferry/raw-min")
			b.ReportMetric(slices.Max(ratios), "ferry/raw-max")
			b.ReportMetric(median(owns), "ferry/raw-own-cpu")
			b.ReportMetric(median(totals), "ferry-total-s")
			b.ReportMetric(median(writes), "writes/100k")
			b.ReportMetric(median(ferries)*float64(c.size)/1e6, "ferry-MB/s")
			ferryCPU.report(b, "ferry", benchRounds*c.n)
			rawCPU.report(b, "raw", benchRounds*c.n)
			b.Logf("ferry/raw by round: %.3f; as ferry's own CPU allows: %.3f", ratios, owns)
			for _, t := range turns {
				b.Log(t)
			}
		})
	}
}

// benchRounds is how many times raw and ferry each run per size, taking turns.
const benchRounds = 5

// Warm-up: at most warmTurnsMax turns per size, ended early once the broker's CPU per
// message in the raw producer's run is within warmSettled of the turn before.
const (
	warmTurnsMax = 5
	warmSettled  = 0.15
)

// ferryResult is one run of ferry over a whole recording.
type ferryResult struct {
	rate  float64       // messages per second from the first send to the last checkpoint
	total time.Duration // from start to the last checkpoint
	cpu   cpuUse        // from the first send to the last checkpoint
	saves int           // checkpoint store writes
}

// ferryRun runs ferry in this process over the recording, from its start, to sc.Topic with
// a fresh store, until the checkpoint reaches last; then it checks the topic holds n
// entries and stops ferry. Its rate and CPU are taken, like the raw producer's, from its
// first send: before it, ferry starts (the producer, and the replay, which may be ready
// tens of milliseconds after the producer), which ferry-total-s reports.
func ferryRun(b *testing.B, sc streamConfig, recordingID, last int64, n int) ferryResult {
	b.Helper()
	benchTopic(b, sc.Topic)
	st := &watchedStore{recordingID: recordingID, last: last, reached: make(chan struct{})}
	first := &firstSend{sent: make(chan struct{})}
	start := time.Now()
	ip := startInProcess(b, inProcessOptions{
		noScribble: true,
		wrapStore:  func(s store.Store) store.Store { st.Store = s; return st },
		// What `ferry run` checkpoints by default: every 1,000 records or second.
		checkpoint:     progress.CheckpointConfig{EveryRecords: config.DefaultEveryRecords, EveryMs: config.DefaultEvery.Milliseconds(), RetryMinMs: 50, RetryMaxMs: 400},
		createProducer: first.wrap,
	}, sc)
	// Waiting on channels, not polling the store: a poll every few milliseconds cost this
	// process a quarter of a µs per 1 KiB message, charged to ferry.
	timeout := time.After(5 * time.Minute)
	select {
	case <-first.sent:
	case <-timeout:
		b.Fatalf("ferry sent nothing within 5 minutes")
	}
	fromFirst := readCPU(b)
	select {
	case <-st.reached:
	case <-timeout:
		b.Fatalf("ferry did not finish within 5 minutes")
	}
	res := ferryResult{total: time.Since(start), cpu: readCPU(b).since(fromFirst), saves: st.saves()}
	res.rate = float64(n) / time.Since(first.at).Seconds()
	if _, err := ip.stop(); err != nil {
		b.Fatalf("stop ferry: %v", err)
	}
	if got := storedEntries(b, sc.Topic); got != int64(n) {
		b.Fatalf("ferry's topic holds %d entries, want %d", got, n)
	}
	dropTopic(b, sc.Topic)
	return res
}

// firstSend notes when ferry first sends through a producer (a message of recording, if
// set): it closes sent, at; then it only passes sends on. at keeps its monotonic reading.
type firstSend struct {
	recording string
	once      sync.Once
	sent      chan struct{}
	at        time.Time
}

func (f *firstSend) wrap(create actors.ProducerFactory) actors.ProducerFactory {
	return func(opts pulsar.ProducerOptions) (pulsar.Producer, error) {
		p, err := create(opts)
		if err != nil {
			return p, err
		}
		return &firstSendProducer{Producer: p, f: f}, nil
	}
}

type firstSendProducer struct {
	pulsar.Producer
	f *firstSend
}

func (p *firstSendProducer) NumPartitions() uint32 {
	return p.Producer.(actors.PartitionCounter).NumPartitions()
}

func (p *firstSendProducer) SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, callback func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	if p.f.recording == "" || msg.Properties[actors.PropRecordingID] == p.f.recording {
		p.f.once.Do(func() { p.f.at = time.Now(); close(p.f.sent) })
	}
	p.Producer.SendAsync(ctx, msg, callback)
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
	// steal is the time the hypervisor ran something else while this machine's CPUs had
	// work (counted in machineBusy): on a shared host, a round that lost CPU this way is
	// slower for a reason that is neither ferry's nor the broker's.
	steal time.Duration
	// irq is the machine's time in interrupt and softirq handlers (counted in machineBusy,
	// in no process): on loopback, much of TCP's receive path runs there.
	irq    time.Duration
	faults int64 // this process's minor page faults
	// selfWrites are this process's write system calls (its socket writes to the broker,
	// mostly), and brokerSwitches the context switches of the broker's threads (zero: the
	// broker was not found): how often the broker wakes up per message tells how bursty a
	// side's sends arrive.
	selfWrites, brokerSwitches int64
	// broker is the CPU time of the broker's process (zero: not found), part of the rest
	// of the machine: what the rest holds beyond it is the kernel's and other processes'.
	broker time.Duration
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
		if i == 5 || i == 6 { // irq, softirq
			u.irq += time.Duration(n) * clockTick
		}
		if i == 7 {
			u.steal = time.Duration(n) * clockTick
		}
	}
	u.self = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	u.faults = ru.Minflt
	u.archive = archiveCPU(b)
	_, u.selfWrites = ioCalls("self")
	if pid := brokerPid(); pid != "" {
		u.brokerSwitches = contextSwitches(pid)
		u.broker, _ = processCPU(pid)
	}
	return u
}

// ioCalls returns the read and write system calls of process pid ("self": this one), from
// /proc/pid/io; zero if it cannot be read.
func ioCalls(pid string) (reads, writes int64) {
	io, err := os.ReadFile("/proc/" + pid + "/io")
	if err != nil {
		return 0, 0
	}
	for line := range strings.SplitSeq(string(io), "\n") {
		k, v, _ := strings.Cut(line, ": ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "syscr":
			reads = n
		case "syscw":
			writes = n
		}
	}
	return reads, writes
}

// contextSwitches is the sum of the voluntary and involuntary context switches of process
// pid's threads (zero if they cannot be read).
func contextSwitches(pid string) int64 {
	tasks, _ := os.ReadDir("/proc/" + pid + "/task")
	var sum int64
	for _, task := range tasks {
		status, err := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/status")
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(k, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				sum += n
			}
		}
	}
	return sum
}

// brokerPid is the process id of the broker, the one Pulsar standalone running here ("":
// none, or more than one).
func brokerPid() string {
	procs, _ := os.ReadDir("/proc")
	found := ""
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + p.Name() + "/cmdline"); err == nil && strings.Contains(string(cmdline), "PulsarStandaloneStarter") {
			if found != "" {
				return ""
			}
			found = p.Name()
		}
	}
	return found
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
		cpu, err := processCPU(p.Name())
		if err != nil {
			b.Fatal(err)
		}
		return cpu
	}
	b.Fatalf("no process has %q on its command line", strings.TrimSuffix(want, "\x00"))
	return 0
}

// processCPU is the CPU time, user and system, of process pid's threads so far.
func processCPU(pid string) (time.Duration, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ... utime stime: fields 14 and 15, counted after the comm.
	_, rest, _ := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%s/stat: %d fields after the command", pid, len(f))
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * clockTick, nil
}

func (u cpuUse) plus(v cpuUse) cpuUse {
	return cpuUse{self: u.self + v.self, archive: u.archive + v.archive, machineBusy: u.machineBusy + v.machineBusy, machineAll: u.machineAll + v.machineAll,
		steal: u.steal + v.steal, irq: u.irq + v.irq, faults: u.faults + v.faults,
		selfWrites: u.selfWrites + v.selfWrites, brokerSwitches: u.brokerSwitches + v.brokerSwitches, broker: u.broker + v.broker}
}

func (u cpuUse) since(from cpuUse) cpuUse {
	return cpuUse{self: u.self - from.self, archive: u.archive - from.archive, machineBusy: u.machineBusy - from.machineBusy, machineAll: u.machineAll - from.machineAll,
		steal: u.steal - from.steal, irq: u.irq - from.irq, faults: u.faults - from.faults,
		selfWrites: u.selfWrites - from.selfWrites, brokerSwitches: u.brokerSwitches - from.brokerSwitches, broker: u.broker - from.broker}
}

// othersPerMessage is the CPU per message of a run of n messages spent outside this
// process and the archive: the broker's, mostly.
func (u cpuUse) othersPerMessage(n int) float64 {
	return float64((u.machineBusy - u.self - u.archive).Microseconds()) / float64(n)
}

// ownCPURatio is the ferry/raw ratio ferry's own CPU allows, on a machine whose cores are
// all busy: the raw side's machine CPU per message, over that plus what ferry spends beyond
// it (its process and the archive's replay, less the raw producer's process and the idle
// archive). The broker's cost per message is taken as the raw side's for both: it moves by
// up to twofold between turns, which the rates' ratio carries and this one does not.
func ownCPURatio(raw, ferry cpuUse) float64 {
	extra := (ferry.self + ferry.archive) - (raw.self + raw.archive)
	return float64(raw.machineBusy) / float64(raw.machineBusy+extra)
}

// perMessage says, for a run of n messages, where its CPU went per message (the figures
// report gives for a side), for a round's line in the log.
func (u cpuUse) perMessage(n int) string {
	perMsg := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	busy := 0.0
	if u.machineAll > 0 {
		busy = 100 * float64(u.machineBusy) / float64(u.machineAll)
	}
	return fmt.Sprintf("µs/msg process %.1f archive %.1f others %.1f (broker %.1f, irq %.1f, steal %.1f), busy %.0f%%; per message: writes %.2f, broker context switches %.3f",
		perMsg(u.self), perMsg(u.archive), u.othersPerMessage(n), perMsg(u.broker), perMsg(u.irq), perMsg(u.steal), busy, float64(u.selfWrites)/float64(n), float64(u.brokerSwitches)/float64(n))
}

// report adds, for a run of n messages named side: this process's CPU per message, the
// archive's, the rest of the machine's and the broker's process's within it, and how busy
// the machine was.
func (u cpuUse) report(b *testing.B, side string, n int) {
	perMsg := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(n) }
	b.ReportMetric(perMsg(u.self), side+"-proc-µs/msg")
	b.ReportMetric(perMsg(u.archive), side+"-archive-µs/msg")
	b.ReportMetric(u.othersPerMessage(n), side+"-others-µs/msg")
	b.ReportMetric(perMsg(u.steal), side+"-steal-µs/msg")
	b.ReportMetric(perMsg(u.irq), side+"-irq-µs/msg")
	b.ReportMetric(float64(u.faults)/float64(n), side+"-faults/msg")
	b.ReportMetric(float64(u.selfWrites)/float64(n), side+"-writes/msg")
	if u.brokerSwitches > 0 {
		b.ReportMetric(float64(u.brokerSwitches)/float64(n), side+"-broker-switches/msg")
		b.ReportMetric(perMsg(u.broker), side+"-broker-µs/msg")
	}
	if u.machineAll > 0 {
		b.ReportMetric(100*float64(u.machineBusy)/float64(u.machineAll), side+"-busy-%")
	}
}
