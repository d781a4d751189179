package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// A publisher in a process of its own, for the tests that kill one: this test binary run
// again with childPublisherEnv set. It publishes payloadFor(from…to-1) on an exclusive
// publication (a session of its own), prints what it published as one JSON line, and
// waits to be killed.
const childPublisherEnv = "FERRYTEST_CHILD_PUBLISHER" // aeron dir|channel|stream id|from|to

// childPublished is the child's line: its session and the end position of each message.
type childPublished struct {
	SessionID int32   `json:"session_id"`
	Positions []int64 `json:"positions"`
}

// runChildPublisher is the child's whole life; TestMain calls it when childPublisherEnv is
// set. It returns only on an error, with the exit code.
func runChildPublisher(spec string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child publisher:", err)
		return 3
	}
	f := strings.Split(spec, "|")
	if len(f) != 5 {
		return fail(fmt.Errorf("%s=%q: want dir|channel|stream|from|to", childPublisherEnv, spec))
	}
	n := make([]int, 3)
	for i, s := range f[2:] {
		v, err := strconv.Atoi(s)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", childPublisherEnv, err))
		}
		n[i] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ac, err := aeron.Connect(ctx, aeron.Options{Dir: f[0]})
	if err != nil {
		return fail(err)
	}
	pub, err := ac.AddExclusivePublication(ctx, f[1], int32(n[0]))
	if err != nil {
		return fail(err)
	}
	p := &publisher{pub: pub}
	out := childPublished{SessionID: pub.SessionID()}
	for i := n[1]; i < n[2]; i++ {
		pos, err := p.offer(payloadFor(i), 20*time.Second)
		if err != nil {
			return fail(err)
		}
		out.Positions = append(out.Positions, pos)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return fail(err)
	}
	// Until killed: the driver is never told the client is gone. A child whose test died
	// without killing it (a timeout's panic skips the cleanups) ends itself, also without a
	// word to the driver.
	time.Sleep(childPublisherLifetime)
	return 3
}

// childPublisherLifetime bounds a child publisher's life should its test never kill it.
const childPublisherLifetime = 5 * time.Minute

// childPublisher is a running child: its recording and what it published.
type childPublisher struct {
	cmd       *exec.Cmd
	published published
	// stderr is what the child wrote to its stderr: exec's copying goroutine writes it until
	// the child ends, and only kill reads it, after cmd.Wait, which waits for that goroutine.
	stderr bytes.Buffer
}

// startChildPublisher runs a child that publishes payloadFor(from…to-1) on rs, which must
// be recording, and waits until the archive recorded all of it.
func startChildPublisher(t *testing.T, rs *recordedStream, from, to int) *childPublisher {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d|%d", childPublisherEnv, peers.Archive.AeronDir, rs.channel, rs.streamID, from, to))
	c, line := startChild(t, cmd, os.Stderr)
	var out childPublished
	if err := json.Unmarshal(line, &out); err != nil || len(out.Positions) != to-from {
		t.Fatalf("the child publisher's report %q: %v", line, err)
	}
	c.published = published{from: from, positions: out.Positions, recordingID: -1, sessionID: out.SessionID}
	var d archive.RecordingDescriptor
	eventually.NoError(t, 10*time.Second, func() error {
		var err error
		d, err = rs.recordingOfSession(out.SessionID)
		return err
	})
	c.published.recordingID = d.RecordingID
	c.asPublisher(rs).waitRecorded(t, out.Positions[len(out.Positions)-1])
	return c
}

// startChild starts cmd, the child publisher (a stand-in for it in the tests of this), and
// returns the line it reports on its stdout. Its stderr goes to echo as it comes, and is
// kept: the child is this test binary, race-instrumented under -race, and runs ferry's
// Aeron client, so a race report in it must fail the test as one in ferry's log does.
// It is checked when the child ends (kill: by the test, or at the test's end at the
// latest).
func startChild(t testing.TB, cmd *exec.Cmd, echo io.Writer) (*childPublisher, []byte) {
	t.Helper()
	c := &childPublisher{cmd: cmd}
	cmd.Stderr = io.MultiWriter(echo, &c.stderr)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the child publisher: %v", err)
	}
	t.Cleanup(func() { c.kill(t) })
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		t.Fatalf("the child publisher's report: %v (%q)", err, line)
	}
	return c, line
}

// asPublisher is the child's recording as a publisher of the test's own, for the helpers
// that wait on a recording (it has no publication: that is in the child).
func (c *childPublisher) asPublisher(rs *recordedStream) *publisher {
	return &publisher{rs: rs, recordingID: c.published.recordingID}
}

// kill sends SIGKILL: the publisher's client dies without closing anything. Then it fails
// the test (Errorf) unless every race the race detector reported on the child's stderr is
// a known race inside a dependency (checkRaceReports): however the child ended, as for a
// ferry process, a report shows in its output alone.
func (c *childPublisher) kill(t testing.TB) {
	t.Helper()
	if c.cmd.ProcessState != nil {
		return
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Errorf("kill the child publisher: %v", err)
	}
	_ = c.cmd.Wait()
	checkRaceReports(t, fmt.Sprintf("the child publisher (pid %d, %v)", c.cmd.Process.Pid, c.cmd.ProcessState), c.stderr.String())
}

// recordingOfSession is the recording of rs that session made.
func (rs *recordedStream) recordingOfSession(session int32) (archive.RecordingDescriptor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	all, err := rs.s.archive.RecordingsForURI(ctx, rs.channel, rs.streamID, 100)
	if err != nil {
		return archive.RecordingDescriptor{}, err
	}
	for _, d := range all {
		if d.SessionID == session {
			return d, nil
		}
	}
	return archive.RecordingDescriptor{}, fmt.Errorf("no recording of session %d among the %d of %s stream %d", session, len(all), rs.channel, rs.streamID)
}
