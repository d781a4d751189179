package infra

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// TestAKilledPeerIsStoppedFirst: freezeAndKill stops every thread of the process group
// before the SIGKILL (none then in the middle of a write), which groupRunning sees in /proc:
// a process busy in a loop (and its child) is running, then stopped, then gone; the peer's
// log says what was done.
func TestAKilledPeerIsStoppedFirst(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "busy.log")
	proc, err := startProcess("busy", []string{"sh", "-c", "sh -c 'while :; do :; done' & while :; do :; done"}, nil, dir, logPath, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.kill() })
	eventually.NoError(t, 10*time.Second, func() error {
		if running := groupRunning(proc.pid()); running == "" {
			return errors.New("no thread of the busy group is seen running")
		}
		return nil
	})
	if err := syscall.Kill(-proc.pid(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 10*time.Second, func() error {
		if running := groupRunning(proc.pid()); running != "" {
			return errors.New("after SIGSTOP, " + running)
		}
		return nil
	})
	_ = syscall.Kill(-proc.pid(), syscall.SIGCONT)
	if err := proc.freezeAndKill(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if ok, _ := proc.exited(); !ok {
		t.Fatal("the process has not exited")
	}
	if log, _ := os.ReadFile(logPath); !strings.Contains(string(log), "infra: stopped (SIGSTOP), every thread; killed (SIGKILL)") {
		t.Errorf("the log says %q; want the stop before the kill said", log)
	}
}
