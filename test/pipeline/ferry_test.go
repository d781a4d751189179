package pipeline

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// stopTimeout bounds a graceful stop: ferry drains (every sent message acknowledged, the
// checkpoint persisted) within it or the stop failed.
const stopTimeout = 60 * time.Second

// schemaVersion is the version ferry stores with each stream's definition (cmd/ferry).
const schemaVersion = 1

// ferryProc is one `ferry run` process. Its stdout and stderr go to a log file of the test.
type ferryProc struct {
	t       testing.TB
	n       int64 // its number among the test binary's ferry processes
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited and err is set
	err     error         // the exit status as exec reports it (nil: exit 0)
}

// starts numbers the ferry processes of this test binary, for their log file names.
var starts atomic.Int64

// startFerry runs `ferry run --config cfgPath`. The process gets this process's
// environment without its FERRY_* variables: infra names the shared peers with
// FERRY_ARCHIVE_CONTROL_CHANNEL and FERRY_AERON_DIR, which ferry would read as overrides of
// archive.control_channel and aeron.dir; the configuration file is what the tests mean.
// When the test ends ferry is killed if it still runs, its log is checked for race reports
// (checkRaces), and if the test failed the tail of its log is printed. Should the test
// binary die first (killed, or timed out), the kernel kills ferry: it must not run on
// against the shared peers.
func startFerry(t testing.TB, cfgPath string) *ferryProc {
	t.Helper()
	if ferryBin == "" {
		t.Fatal("the ferry binary was not built (see TestMain)")
	}
	cmd := exec.Command(ferryBin, "run", "--config", cfgPath)
	cmd.Env = withoutFerryVars(os.Environ())
	return startProc(t, cmd)
}

// startProc is startFerry for any command: it starts cmd with its stdout and stderr in a
// log file of the test, and ends it as startFerry says.
func startProc(t testing.TB, cmd *exec.Cmd) *ferryProc {
	t.Helper()
	n := starts.Add(1)
	logPath := filepath.Join(t.TempDir(), fmt.Sprintf("ferry-%d.log", n))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The kernel sends the signal when the thread that started the process ends (prctl(2),
	// PR_SET_PDEATHSIG), as all do when the test binary dies. Go ends a thread of a running
	// process only when a goroutine locked to it (runtime.LockOSThread) exits, which only
	// TestAFerryProcessDiesWithWhatStartedIt does, on purpose.
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start ferry: %v", err)
	}
	f := &ferryProc{t: t, n: n, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		f.err = cmd.Wait()
		logFile.Close()
		close(f.done)
	}()
	t.Logf("ferry #%d started (pid %d), log %s", n, cmd.Process.Pid, logPath)
	t.Cleanup(func() {
		if !f.Exited() {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-f.done
		}
		f.checkRaces(t)
		if t.Failed() {
			t.Logf("ferry #%d (pid %d) exited: %v; last lines of %s:\n%s", n, cmd.Process.Pid, f.err, logPath, f.LogTail(8000))
		}
	})
	return f
}

// checkRaces fails the test unless every race the race detector reported in the log of
// the process, which has exited, is a known race inside a dependency
// (checkRaceReports). However it ended: the race detector turns only an exit status 0
// into its own (raceExitStatus), so a race reported before an exit 1, a kill -9 or the
// SIGKILL at the test's end shows in the log alone.
func (f *ferryProc) checkRaces(t testing.TB) {
	t.Helper()
	log, err := os.ReadFile(f.logPath)
	if err != nil {
		t.Errorf("ferry #%d (pid %d): its log cannot be checked for race reports: %v", f.n, f.Pid(), err)
		return
	}
	checkRaceReports(t, fmt.Sprintf("ferry #%d (pid %d, exited: %v)", f.n, f.Pid(), f.err), string(log))
}

func withoutFerryVars(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "FERRY_") {
			out = append(out, kv)
		}
	}
	return out
}

// Pid is the process id.
func (f *ferryProc) Pid() int { return f.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (f *ferryProc) Exited() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// WaitExit waits up to timeout for the process to exit and returns its exit error (nil for
// status 0); ok is false if it is still running.
func (f *ferryProc) WaitExit(timeout time.Duration) (exitErr error, ok bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-f.done:
		return f.err, true
	case <-timer.C:
		return nil, false
	}
}

// Kill is kill -9: no drain, nothing flushed. It returns once the process is gone.
func (f *ferryProc) Kill() {
	f.t.Helper()
	if f.Exited() {
		f.t.Fatalf("kill -9 ferry (pid %d): it had already exited: %v\n%s", f.Pid(), f.err, f.LogTail(4000))
	}
	if err := f.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		f.t.Fatalf("kill -9 ferry: %v", err)
	}
	if _, ok := f.WaitExit(10 * time.Second); !ok {
		f.t.Fatalf("ferry (pid %d) still running 10 s after SIGKILL", f.Pid())
	}
}

// Stop sends SIGTERM and waits up to [stopTimeout] for ferry to drain and exit. It returns
// the exit error (nil: exit status 0); a process still running then is killed and the error
// says so.
func (f *ferryProc) Stop() error {
	f.t.Helper()
	if f.Exited() {
		return fmt.Errorf("ferry (pid %d) had exited before SIGTERM: %v", f.Pid(), f.err)
	}
	if err := f.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM ferry: %w", err)
	}
	began := time.Now()
	exitErr, ok := f.WaitExit(stopTimeout)
	if !ok {
		_ = f.cmd.Process.Signal(syscall.SIGKILL)
		<-f.done
		return fmt.Errorf("ferry (pid %d) did not exit within %s of SIGTERM; killed", f.Pid(), stopTimeout)
	}
	f.t.Logf("ferry (pid %d) exited %s after SIGTERM: %v", f.Pid(), time.Since(began).Round(time.Millisecond), exitErr)
	return exitErr
}

// mustStop is Stop that fails the test unless ferry exits with status 0 — or with the race
// detector's status for races that are all known races inside a dependency (see
// knownLibraryRaces), which it logs.
func (f *ferryProc) mustStop() {
	f.t.Helper()
	err := f.Stop()
	if err == nil {
		return
	}
	if races, ok := onlyKnownLibraryRaces(err, f.Log()); ok {
		f.t.Logf("ferry exited with the race detector's status for %d race(s) inside a dependency, none in ferry: %s", len(races), strings.Join(races, "; "))
		return
	}
	f.t.Fatalf("graceful stop: %v\n%s", err, f.LogTail(8000))
}

// knownLibraryRaces are data races the race detector reports inside ferry's dependencies:
// each is named by a frame of its write and a frame of its read, both of which one report
// must show (docs/findings.md has the details). A ferry built with -race (TestMain) exits
// with status 66 when it saw any race, ferry's own included.
var knownLibraryRaces = []struct {
	name, write, read string
}{
	{
		name:  "pulsar-client-go v0.19.0: a producer's reconnect (grabCnx, on a goroutine of its own) stores the producer's name and encryptor while its event loop sends with them (internalSingleSend)",
		write: "pulsar.(*partitionProducer).grabCnx()",
		read:  "pulsar.(*partitionProducer).internalSingleSend()",
	},
}

// raceExitStatus is the race detector's exit status (GORACE exitcode, default 66).
const raceExitStatus = 66

// onlyKnownLibraryRaces reports whether exitErr is the race detector's exit status and
// every race reported in log is one of knownLibraryRaces, and names them.
func onlyKnownLibraryRaces(exitErr error, log string) ([]string, bool) {
	var ee *exec.ExitError
	if !errors.As(exitErr, &ee) || ee.ExitCode() != raceExitStatus {
		return nil, false
	}
	known, unknown := raceReports(log)
	if len(known) == 0 || len(unknown) > 0 {
		return nil, false
	}
	return known, true
}

// raceHeader begins each report of the race detector; a line of "=" ends it.
const raceHeader = "WARNING: DATA RACE"

// raceReports sorts the race detector's reports in log: the names of those that are one of
// knownLibraryRaces, and the text of the others.
func raceReports(log string) (known, unknown []string) {
	for _, r := range strings.Split(log, raceHeader)[1:] {
		r, _, _ = strings.Cut(r, "==================")
		name := ""
		for _, k := range knownLibraryRaces {
			if write, read, ok := strings.Cut(r, "Previous "); ok && strings.Contains(write, k.write) && strings.Contains(read, k.read) ||
				ok && strings.Contains(write, k.read) && strings.Contains(read, k.write) {
				name = k.name
				break
			}
		}
		if name == "" {
			unknown = append(unknown, raceHeader+r)
			continue
		}
		known = append(known, name)
	}
	return known, unknown
}

// checkRaceReports fails the test (Errorf: the caller goes on) unless every race the race
// detector reported in log, the output of a process of the test's that has ended (ferry or
// the child publisher; what names it), is one of knownLibraryRaces; it logs those.
func checkRaceReports(t testing.TB, what, log string) {
	t.Helper()
	known, unknown := raceReports(log)
	if len(known) > 0 {
		t.Logf("%s: the race detector reported %d known race(s) inside a dependency: %s", what, len(known), strings.Join(known, "; "))
	}
	if len(unknown) > 0 {
		t.Errorf("%s: the race detector reported %d race(s) that are not known races inside a dependency (knownLibraryRaces); fix the race, or, only if it lies in a dependency, add it there:\n%s",
			what, len(unknown), strings.Join(unknown, "\n"))
	}
}

// Log is everything ferry wrote so far.
func (f *ferryProc) Log() string {
	b, err := os.ReadFile(f.logPath)
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", f.logPath, err)
	}
	return string(b)
}

// LogTail is the last n bytes of the log.
func (f *ferryProc) LogTail(n int) string {
	s := f.Log()
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// mustRun fails the test at once if ferry has exited: waiting for its output is pointless.
func (f *ferryProc) mustRun(t testing.TB, waitingFor string) {
	t.Helper()
	if f.Exited() {
		t.Fatalf("ferry (pid %d) exited (%v) while waiting for %s; last lines of its log:\n%s", f.Pid(), f.err, waitingFor, f.LogTail(8000))
	}
}

// waitFor is eventually.NoError that gives up at once when ferry (if given) exits.
func waitFor(t testing.TB, f *ferryProc, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	eventually.NoError(t, timeout, func() error {
		if f != nil {
			f.mustRun(t, what)
		}
		if err := cond(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	})
}

// ferryConfig is ferry's configuration file (config/testdata/example.yaml), as the tests
// write it. newFerryConfig fills it for the shared peers; tests change fields, then write.
type ferryConfig struct {
	Mode       string           `yaml:"mode"`
	Aeron      aeronSection     `yaml:"aeron"`
	Archive    archiveSection   `yaml:"archive,omitempty"` // archive mode only, as are replay, store and checkpoint
	Replay     replaySection    `yaml:"replay,omitempty"`
	Pulsar     pulsarSection    `yaml:"pulsar"`
	Store      storeSection     `yaml:"store,omitempty"`
	Checkpoint checkpointConfig `yaml:"checkpoint,omitempty"`
	Inflight   *inflightSection `yaml:"inflight,omitempty"`
	HTTP       httpSection      `yaml:"http"`
	Health     *healthSection   `yaml:"health,omitempty"`
	Streams    []streamConfig   `yaml:"streams"`

	path string // where write puts it
}

type aeronSection struct {
	Dir string `yaml:"dir"`
}

type archiveSection struct {
	ControlChannel   string `yaml:"control_channel"`
	ControlStreamID  int32  `yaml:"control_stream_id"`
	ResponseChannel  string `yaml:"response_channel"`
	ResponseStreamID int32  `yaml:"response_stream_id"`
}

type replaySection struct {
	Channel  string `yaml:"channel"`
	StreamID int32  `yaml:"stream_id"`
}

type pulsarSection struct {
	ServiceURL string       `yaml:"service_url"`
	AdminURL   string       `yaml:"admin_url,omitempty"`
	TLS        *tlsSection  `yaml:"tls,omitempty"`
	Auth       *authSection `yaml:"auth,omitempty"`
}

type tlsSection struct {
	CAFile string `yaml:"ca_file"`
}

type authSection struct {
	TokenFile string `yaml:"token_file"`
}

type storeSection struct {
	Path string `yaml:"path"`
}

type inflightSection struct {
	MaxMessages int    `yaml:"max_messages,omitempty"`
	MaxBytes    string `yaml:"max_bytes,omitempty"`
}

type checkpointConfig struct {
	EveryRecords int `yaml:"every_records"`
	EveryMs      int `yaml:"every_ms"`
}

type httpSection struct {
	Listen string `yaml:"listen"`
}

type healthSection struct {
	StallAfter string `yaml:"stall_after"`
}

// streamConfig is one entry of streams: what ferry reads (channel and stream id, recorded
// by the archive) and where it publishes.
type streamConfig struct {
	Name          string `yaml:"name"`
	Channel       string `yaml:"channel"`
	StreamID      int32  `yaml:"stream_id"`
	Topic         string `yaml:"topic"`
	StartPosition string `yaml:"start_position,omitempty"`
}

// newFerryConfig is a configuration for the shared archive and broker with the given
// streams, a store and an HTTP port of its own, and response and replay stream ids no
// other ferry process uses.
func newFerryConfig(t testing.TB, streams ...streamConfig) *ferryConfig {
	t.Helper()
	dir := t.TempDir()
	return &ferryConfig{
		Mode:  "archive",
		Aeron: aeronSection{Dir: peers.Archive.AeronDir},
		Archive: archiveSection{
			ControlChannel:   "aeron:ipc?term-length=64k",
			ControlStreamID:  10,
			ResponseChannel:  "aeron:ipc?term-length=64k",
			ResponseStreamID: infra.UniqueStreamID(),
		},
		Replay:     replaySection{Channel: "aeron:ipc", StreamID: infra.UniqueStreamID()},
		Pulsar:     pulsarSection{ServiceURL: peers.Pulsar.ServiceURL, AdminURL: peers.Pulsar.AdminURL},
		Store:      storeSection{Path: filepath.Join(dir, "checkpoints.db")},
		Checkpoint: checkpointConfig{EveryRecords: 100, EveryMs: 200},
		HTTP:       httpSection{Listen: fmt.Sprintf("127.0.0.1:%d", freePort(t))},
		Streams:    streams,
		path:       filepath.Join(dir, "ferry.yaml"),
	}
}

// write writes the configuration (again, after a change) and returns its path.
func (c *ferryConfig) write(t testing.TB) string {
	t.Helper()
	b, err := yaml.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return c.path
}

// newStreamConfig is a stream no other test (or earlier run against the same peers) uses:
// its own IPC channel alias, stream id and topic, all named after the test.
func newStreamConfig(t testing.TB, suffix string) streamConfig {
	name := streamName(t, suffix)
	return streamConfig{
		Name:          name,
		Channel:       "aeron:ipc?alias=" + name,
		StreamID:      infra.UniqueStreamID(),
		Topic:         fmt.Sprintf("persistent://public/default/%s-%d", name, time.Now().UnixNano()),
		StartPosition: "earliest",
	}
}

// streamName is the test's name reduced to what a stream name allows ([A-Za-z0-9._-]),
// with suffix and a random tag.
func streamName(t testing.TB, suffix string) string {
	var b strings.Builder
	for _, r := range t.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) > 80 {
		name = name[:80]
	}
	if suffix != "" {
		name += "-" + suffix
	}
	return fmt.Sprintf("%s-%06x", name, rand.IntN(1<<24))
}

// freePort is a loopback TCP port that was free a moment ago, below the kernel's ephemeral
// range (infra.FreePort): a port handed to ferry or a broker later (the test's broker, tens
// of seconds later) must not be taken meanwhile by an outgoing connection of any process,
// which the kernel gives ports of that range.
func freePort(t testing.TB) int {
	t.Helper()
	return freePortFor(t, infra.TCP)
}

// freeUDPPort is freePort for a UDP endpoint (an Aeron channel's).
func freeUDPPort(t testing.TB) int {
	t.Helper()
	return freePortFor(t, infra.UDP)
}

func freePortFor(t testing.TB, p infra.Protocol) int {
	t.Helper()
	port, err := infra.FreePort(p)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// definition is what ferry stores of a configured stream.
func (s streamConfig) definition() store.Stream {
	return store.Stream{Name: s.Name, Channel: s.Channel, StreamID: s.StreamID, Topic: s.Topic, SchemaVersion: schemaVersion}
}

// checkpoints reads what ferry committed for stream s, by recording id. ferry must not be
// running: it holds the store's lock.
func (c *ferryConfig) checkpoints(t testing.TB, s streamConfig) map[int64]store.Checkpoint {
	t.Helper()
	cps, ok := c.storedCheckpoints(t, s)
	if !ok {
		t.Fatalf("no checkpoint stored for stream %s in %s", s.Name, c.Store.Path)
	}
	return cps
}

// storedCheckpoints is checkpoints that reports (ok false) a stream with nothing stored.
func (c *ferryConfig) storedCheckpoints(t testing.TB, s streamConfig) (map[int64]store.Checkpoint, bool) {
	t.Helper()
	// Opening creates a missing file: look first.
	if _, err := os.Stat(c.Store.Path); errors.Is(err, os.ErrNotExist) {
		return nil, false
	}
	st, err := bolt.Open(c.Store.Path, &bolt.Options{OpenTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("open ferry's checkpoint store: %v", err)
	}
	defer st.Close()
	state, err := st.Load(s.definition())
	if err != nil {
		t.Fatalf("load the checkpoint of stream %s: %v", s.Name, err)
	}
	out := make(map[int64]store.Checkpoint, len(state.Checkpoints))
	for _, cp := range state.Checkpoints {
		out[cp.RecordingID] = cp
	}
	return out, state.Stored
}

// checkpoint is the stored checkpoint of one recording; the test fails if there is none.
func (c *ferryConfig) checkpoint(t testing.TB, s streamConfig, recordingID int64) store.Checkpoint {
	t.Helper()
	cps := c.checkpoints(t, s)
	cp, ok := cps[recordingID]
	if !ok {
		t.Fatalf("stream %s: no checkpoint for recording %d; stored: %+v", s.Name, recordingID, cps)
	}
	return cp
}
