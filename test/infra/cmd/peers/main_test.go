package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// These tests run runCommand on shell commands: no peer is started.

// A signal to peers reaches every process of the command's group, not only the command.
// The command here, like `go test`, passes no signal on to its child and waits for it (the
// shell runs its trap only once the child has exited): were the signal sent to the
// command alone, it would wait the child's 300 s.
func TestASignalReachesTheCommandsWholeGroup(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			if signal.Ignored(sig) {
				// Inherited by the command, and a shell cannot trap a signal ignored at its
				// start (a test binary run as a background job of a script ignores SIGINT).
				// peers itself handles it, so its commands do not inherit that.
				t.Skipf("this test binary ignores %s", sig)
			}
			code, child := runSignalled(t, `trap 'exit 3' TERM INT HUP; bash -c 'echo $$ >"$1"; exec sleep 300' bash "$1"`, sig)
			if code != 3 {
				t.Errorf("exit status %d, want the command's 3", code)
			}
			if running(child) {
				t.Errorf("the command's child %d is still running after %s", child, sig)
			}
		})
	}
}

// The exit status is the command's, also when it decides how to end on a signal.
func TestTheCommandsStatusIsPeersStatus(t *testing.T) {
	if code := runCommand([]string{"bash", "-c", "exit 7"}, nil, nil, time.Second); code != 7 {
		t.Errorf("exit status %d, want the command's 7", code)
	}
	code, child := runSignalled(t, `trap 'exit 5' TERM; sleep 300 & echo $! >"$1"; wait`, syscall.SIGTERM)
	if code != 5 {
		t.Errorf("exit status %d, want the 5 the command's trap exits with", code)
	}
	if running(child) {
		t.Errorf("the shell's child %d is still running", child)
	}
	if code := runCommand([]string{"/no/such/command"}, nil, nil, time.Second); code != 127 {
		t.Errorf("exit status %d for a command that does not start, want 127", code)
	}
}

// What the command left running in its group when it exited is stopped: with SIGTERM, or
// SIGKILL after the grace period when it ignores SIGTERM.
func TestWhatTheCommandLeftRunningIsStopped(t *testing.T) {
	for name, script := range map[string]string{
		"ends on SIGTERM": `sleep 300 & echo $! >"$1"`,
		"ignores SIGTERM": `(trap '' TERM; exec sleep 300) & echo $! >"$1"`,
	} {
		t.Run(name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			began := time.Now()
			code := runCommand([]string{"bash", "-c", script, "bash", pidFile}, nil, nil, 500*time.Millisecond)
			child := readPid(t, pidFile)
			if code != 0 {
				t.Errorf("exit status %d, want the command's 0", code)
			}
			if running(child) {
				t.Errorf("the command's child %d is still running after runCommand returned", child)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("runCommand took %s", took)
			}
		})
	}
}

// runSignalled runs script (its $1: a file to write its child's pid to) with runCommand,
// sends sig once the child runs, and returns the exit status and the child's pid.
func runSignalled(t *testing.T, script string, sig syscall.Signal) (code int, child int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	sigs := make(chan os.Signal, 1)
	result := make(chan int, 1)
	go func() {
		result <- runCommand([]string{"bash", "-c", script, "bash", pidFile}, nil, sigs, 5*time.Second)
	}()
	eventually.NoError(t, 10*time.Second, func() error {
		b, err := os.ReadFile(pidFile)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return fmt.Errorf("no pid written yet: %q, %v", b, err)
		}
		return nil
	})
	child = readPid(t, pidFile)
	sigs <- sig
	select {
	case code = <-result:
	case <-time.After(10 * time.Second):
		t.Fatalf("the command is still running 10 s after %s", sig)
	}
	return code, child
}

func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if running(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return pid
}

// running reports whether pid is a process that has not exited (a zombie has).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && !strings.HasPrefix(string(b[i+1:]), " Z")
}
