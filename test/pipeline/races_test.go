package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// knownRaceReport is the race detector's report of the pulsar-client-go race in
// knownLibraryRaces, as a ferry built with -race printed it (stacks shortened).
const knownRaceReport = `==================
WARNING: DATA RACE
Write at 0x00c0001d2050 by goroutine 84:
  github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).grabCnx()
      /root/go/pkg/mod/github.com/apache/pulsar-client-go@v0.19.0/pulsar/producer_partition.go:348 +0x1770
  github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).reconnectToBroker.func1()
      /root/go/pkg/mod/github.com/apache/pulsar-client-go@v0.19.0/pulsar/producer_partition.go:500 +0xf2

Previous read at 0x00c0001d2050 by goroutine 83:
  google.golang.org/protobuf/internal/impl.appendStringPtr()
      /root/go/pkg/mod/google.golang.org/protobuf@v1.36.12/internal/impl/codec_gen.go:5137 +0x78
  github.com/apache/pulsar-client-go/pulsar/internal.serializeMessage()
      /root/go/pkg/mod/github.com/apache/pulsar-client-go@v0.19.0/pulsar/internal/commands.go:319 +0x704
  github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).internalSingleSend()
      /root/go/pkg/mod/github.com/apache/pulsar-client-go@v0.19.0/pulsar/producer_partition.go:823 +0x564
  github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).runEventsLoop()
      /root/go/pkg/mod/github.com/apache/pulsar-client-go@v0.19.0/pulsar/producer_partition.go:579 +0x278

Goroutine 84 (running) created at:
  github.com/apache/pulsar-client-go/pulsar.(*partitionProducer).runEventsLoop()
      /root/go/pkg/mod/github.com/apache/pulsar-client-go@v0.19.0/pulsar/producer_partition.go:560 +0x9c
==================
`

// A race of ferry's own: the tolerance must never cover it.
const ferryRaceReport = `==================
WARNING: DATA RACE
Write at 0x00c000123456 by goroutine 12:
  github.com/ferry-bridge/ferry/actors.(*tracker).acked()
      /work/main/actors/tracker.go:156 +0x44

Previous read at 0x00c000123456 by goroutine 13:
  github.com/ferry-bridge/ferry/actors.(*tracker).pushStatus()
      /work/main/actors/tracker.go:240 +0x88
==================
`

// onlyKnownLibraryRaces lets a graceful stop pass with the race detector's status only
// when every report in the log is a known race inside a dependency.
func TestOnlyKnownLibraryRacesCoversNothingElse(t *testing.T) {
	raceExit := exitWith(t, raceExitStatus)
	for _, tc := range []struct {
		name string
		err  error
		log  string
		want bool
	}{
		{"the known race", raceExit, "time=… level=INFO msg=x\n" + knownRaceReport + "Found 1 data race(s)\n", true},
		{"the known race twice", raceExit, knownRaceReport + knownRaceReport, true},
		{"the known race and one of ferry's", raceExit, knownRaceReport + ferryRaceReport, false},
		{"one of ferry's", raceExit, ferryRaceReport, false},
		{"the race status without a report", raceExit, "Found 1 data race(s)\n", false},
		{"another status", exitWith(t, 1), knownRaceReport, false},
		{"not an exit status", errors.New("did not exit within 60s"), knownRaceReport, false},
	} {
		names, ok := onlyKnownLibraryRaces(tc.err, tc.log)
		if ok != tc.want {
			t.Errorf("%s: onlyKnownLibraryRaces = %v (%q), want %v", tc.name, ok, names, tc.want)
		}
		if ok && len(names) != strings.Count(tc.log, "WARNING: DATA RACE") {
			t.Errorf("%s: named %d races, the log has %d", tc.name, len(names), strings.Count(tc.log, "WARNING: DATA RACE"))
		}
	}
}

// exitWith returns the error exec reports for a process that exited with status code.
func exitWith(t *testing.T, code int) error {
	t.Helper()
	err := exec.Command("sh", "-c", "exit "+strconv.Itoa(code)).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != code {
		t.Fatalf("sh exit %d: %v", code, err)
	}
	return err
}

// A race the race detector reported in ferry's log fails the test however ferry ended —
// exit 1, kill -9, the SIGKILL at the test's end — unless it is a known race inside a
// dependency: the detector turns only an exit status 0 into its own, so mustStop alone
// misses the others. The process here is a shell that prints the log ferry would have.
func TestARaceInTheLogFailsTheTestWhateverTheExit(t *testing.T) {
	exit1 := func(t *testing.T, f *ferryProc) {
		exitErr, ok := f.WaitExit(10 * time.Second)
		if !ok || failExitCode(exitErr) != 1 {
			t.Fatalf("the process: exited %v (%v), want exit status 1", ok, exitErr)
		}
	}
	logged := func(t *testing.T, f *ferryProc) {
		eventually.NoError(t, 10*time.Second, func() error {
			if !strings.Contains(f.Log(), raceHeader) {
				return errors.New("the race report is not in the log yet")
			}
			return nil
		})
	}
	for _, tc := range []struct {
		name  string
		then  string                       // what the shell does after it printed log
		end   func(*testing.T, *ferryProc) // how the test ends it (the test's end: SIGKILL)
		log   string
		fails bool
	}{
		{"ferry's race, exit 1", "exit 1", exit1, ferryRaceReport, true},
		{"the known race, exit 1", "exit 1", exit1, knownRaceReport, false},
		{"the known race and ferry's, exit 1", "exit 1", exit1, knownRaceReport + ferryRaceReport, true},
		{"no race, exit 1", "exit 1", exit1, "level=ERROR msg=\"cannot start\"\n", false},
		{"ferry's race, kill -9", "exec sleep 300", func(t *testing.T, f *ferryProc) { logged(t, f); f.Kill() }, ferryRaceReport, true},
		{"ferry's race, killed at the test's end", "exec sleep 300", logged, ferryRaceReport, true},
		{"the known race, killed at the test's end", "exec sleep 300", logged, knownRaceReport, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &errorRecorder{TB: t}
			// Registered before startProc's: runs after it, once the log has been checked.
			t.Cleanup(func() {
				if failed := len(rec.errors) > 0; failed != tc.fails {
					t.Errorf("the test failed: %v (%q), want %v", failed, rec.errors, tc.fails)
				}
			})
			cmd := exec.Command("sh", "-c", `printf '%s' "$FERRYTEST_LOG" >&2; `+tc.then)
			cmd.Env = append(os.Environ(), "FERRYTEST_LOG="+tc.log)
			tc.end(t, startProc(rec, cmd))
		})
	}
}

// The child publisher (startChildPublisher) is this test binary, race-instrumented under
// -race and running ferry's Aeron client: a race it reports on its stderr fails the test
// once it ends, as one in ferry's log does, whether the test kills it or the test's end
// does, and its stderr is still echoed. The child here is a shell that prints what the
// child publisher would have, reports, and waits to be killed.
func TestARaceOnTheChildPublishersStderrFailsTheTest(t *testing.T) {
	for _, tc := range []struct {
		name   string
		kill   bool // the test kills it; otherwise the test's end does
		stderr string
		fails  bool
	}{
		{"ferry's race, killed by the test", true, ferryRaceReport, true},
		{"ferry's race, killed at the test's end", false, ferryRaceReport, true},
		{"the known race, killed at the test's end", false, knownRaceReport, false},
		{"no race, killed by the test", true, "child publisher: something it says\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &errorRecorder{TB: t}
			var echoed bytes.Buffer
			// Registered before startChild's: runs after it, once the child has ended.
			t.Cleanup(func() {
				if failed := len(rec.errors) > 0; failed != tc.fails {
					t.Errorf("the test failed: %v (%q), want %v", failed, rec.errors, tc.fails)
				}
				if echoed.String() != tc.stderr {
					t.Errorf("the child's stderr was echoed as %q, want %q", echoed.String(), tc.stderr)
				}
			})
			cmd := exec.Command("sh", "-c", `printf '%s' "$FERRYTEST_LOG" >&2; echo '{}'; exec sleep 300`)
			cmd.Env = append(os.Environ(), "FERRYTEST_LOG="+tc.stderr)
			c, line := startChild(rec, cmd, &echoed)
			if string(line) != "{}\n" {
				t.Fatalf("the child's report: %q, want %q", line, "{}\n")
			}
			if tc.kill {
				c.kill(rec)
			}
		})
	}
}

// errorRecorder is a testing.TB whose Errorf records the error rather than fail the test.
type errorRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
