package pipeline

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
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
