package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// These tests run shell commands under runCommand, in this test binary or in this test
// binary run as peers (see TestMain): no peer is started. runCommand makes this test binary a
// child subreaper, and reaps the children it did not start: the tests must not run in
// parallel, nor leave a child of their own unwaited for when the next one starts.

// asPeers, set in its environment, has this test binary run as
// `peers run -archive=false -pulsar=false -- ARGS…` (its arguments).
const asPeers = "PEERS_MAIN_TEST_AS_PEERS"

func TestMain(m *testing.M) {
	if os.Getenv(asPeers) != "" {
		_ = os.Unsetenv(asPeers)
		os.Args = append([]string{"peers", "run", "-archive=false", "-pulsar=false", "--"}, os.Args[1:]...)
		main()
	}
	os.Exit(m.Run())
}

// A signal sent to peers alone reaches every process under the command, not only the
// command. The command here, like `go test`, passes no signal on to its child and waits for
// it (the shell runs its trap only once the child has exited): were the signal sent to the
// command alone, it would wait the child's 300 s. SIGQUIT too: peers takes it (rather than
// die of it and leave the command without its peers) and passes it on.
func TestASignalToPeersReachesEveryProcessUnderTheCommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startPeers(t, `trap 'exit 3' TERM INT HUP QUIT; bash -c 'echo $$ >"$1"; exec sleep 300' bash "$1"`)
			if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != 3 {
				t.Errorf("peers' exit status %d, want the command's 3\n%s", code, p.output(t))
			}
			if running(p.child) {
				t.Errorf("the command's child %d is still running after %s to peers", p.child, sig)
			}
		})
	}
}

// Also a process the command started in the background and waits for, ignoring the signal
// itself, gets it.
func TestASIGTERMToPeersReachesABackgroundGrandchild(t *testing.T) {
	p := startPeers(t, `sleep 300 & child=$!; echo $child >"$1"; trap '' TERM; wait $child`)
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// wait returns the status of the sleep that SIGTERM killed, and the shell exits with it.
	if code := p.wait(t); code != 128+int(syscall.SIGTERM) {
		t.Errorf("peers' exit status %d, want the command's %d\n%s", code, 128+syscall.SIGTERM, p.output(t))
	}
	if running(p.child) {
		t.Errorf("the command's background child %d is still running", p.child)
	}
}

// The command is in peers' process group: a SIGKILL to the group, which peers cannot pass
// on (GNU timeout --kill-after, the demo test's cleanup), ends it and what it started too.
func TestASIGKILLToPeersGroupEndsTheCommand(t *testing.T) {
	p := startPeers(t, `echo $$ >"$1.command"; sleep 300 & echo $! >"$1"; wait`)
	command := readPid(t, p.pidFile+".command")
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.wait(t)
	eventually.NoError(t, 5*time.Second, func() error {
		for name, pid := range map[string]int{"command": command, "command's child": p.child} {
			if running(pid) {
				return fmt.Errorf("the %s %d still runs after SIGKILL to peers' group", name, pid)
			}
		}
		return nil
	})
}

// The exit status is the command's; for a command killed by signal n, 128+n as a shell
// says it.
func TestTheCommandsStatusIsPeersStatus(t *testing.T) {
	for script, want := range map[string]int{
		"exit 7":        7,
		"kill -TERM $$": 128 + int(syscall.SIGTERM),
		"kill -KILL $$": 128 + int(syscall.SIGKILL),
	} {
		if code := runCommand([]string{"bash", "-c", script}, nil, nil, nil, time.Second); code != want {
			t.Errorf("%q: exit status %d, want %d", script, code, want)
		}
	}
	code, child := runSignalled(t, `trap 'exit 5' TERM; sleep 300 & echo $! >"$1"; wait`, nil, syscall.SIGTERM)
	if code != 5 {
		t.Errorf("exit status %d, want the 5 the command's trap exits with", code)
	}
	if running(child) {
		t.Errorf("the shell's child %d is still running", child)
	}
	if code := runCommand([]string{"/no/such/command"}, nil, nil, nil, time.Second); code != 127 {
		t.Errorf("exit status %d for a command that does not start, want 127", code)
	}
}

// What the command left running when it exited (orphans, re-parented to peers) is stopped:
// with SIGTERM, or SIGKILL after the grace period when it ignores SIGTERM; what is under it
// too. Once they have exited they are reaped: no zombie is left.
func TestWhatTheCommandLeftRunningIsStopped(t *testing.T) {
	for name, script := range map[string]string{
		"ends on SIGTERM": `sleep 300 & echo $! >"$1"`,
		// The command waits for the pid: then its leftover ignores SIGTERM already.
		"ignores SIGTERM":    `(trap '' TERM; echo $BASHPID >"$1"; exec sleep 300) & until [ -s "$1" ]; do sleep 0.01; done`,
		"a child of its own": `(sleep 300 & trap '' TERM; echo $! >"$1"; wait) & until [ -s "$1" ]; do sleep 0.01; done`,
	} {
		t.Run(name, func(t *testing.T) {
			pidFile := filepath.Join(t.TempDir(), "pid")
			began := time.Now()
			code := runCommand([]string{"bash", "-c", script, "bash", pidFile}, nil, nil, nil, 500*time.Millisecond)
			child := readPid(t, pidFile)
			if code != 0 {
				t.Errorf("exit status %d, want the command's 0", code)
			}
			if exists(child) {
				t.Errorf("the command's leftover %d is still there (running or a zombie) after runCommand returned", child)
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("runCommand took %s", took)
			}
		})
	}
}

// An orphan that exits while the command runs is reaped at once, not left a zombie until the
// command ends.
func TestAnOrphanIsReapedWhileTheCommandRuns(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	result := goRunCommand(t, []string{"bash", "-c", `(sleep 0.2 & echo $! >"$1"); sleep 3`, "bash", pidFile}, nil, nil)
	waitForPid(t, pidFile)
	orphan := readPid(t, pidFile)
	eventually.NoError(t, 2*time.Second, func() error {
		if exists(orphan) {
			return fmt.Errorf("the orphan %d is still there", orphan)
		}
		return nil
	})
	if code := <-result; code != 0 {
		t.Errorf("exit status %d, want the command's 0", code)
	}
}

// peers' own children (the peers it started) are neither signalled nor reaped: their
// os/exec collects their exit status.
func TestPeersOwnProcessesAreLeftAlone(t *testing.T) {
	ended := exec.Command("true")
	live := exec.Command("sleep", "300")
	for _, c := range []*exec.Cmd{ended, live} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	// ended is a zombie child of this process while runCommand runs, as an orphan would be.
	eventually.NoError(t, 5*time.Second, func() error {
		if running(ended.Process.Pid) {
			return fmt.Errorf("true (%d) has not exited yet", ended.Process.Pid)
		}
		return nil
	})
	own := []int{ended.Process.Pid, live.Process.Pid}
	// The forwarded SIGTERM ends the command's sleep too; runCommand reaps and looks for
	// leftovers on the way (on SIGCHLD, and once the command exits), where peers' own
	// processes must be left alone.
	code, _ := runSignalled(t, `trap 'exit 3' TERM; sleep 300 & echo $! >"$1"; wait`, own, syscall.SIGTERM)
	if code != 3 {
		t.Errorf("exit status %d, want the command's 3", code)
	}
	if !running(live.Process.Pid) {
		t.Errorf("peers' own process %d was stopped", live.Process.Pid)
	}
	if err := ended.Wait(); err != nil {
		t.Errorf("peers' own process that had exited: Wait = %v; runCommand must not reap it", err)
	}
}

// peersProcess is this test binary run as peers on a shell script.
type peersProcess struct {
	cmd     *exec.Cmd
	out     string // its stdout and stderr
	pidFile string // the script's $1
	child   int    // the pid the script wrote to pidFile
	exited  chan struct{}
}

// startPeers runs `peers run -archive=false -pulsar=false -- bash -c script bash pidFile` in a
// process group of its own (as make's would be), and returns once the script has written a
// pid to pidFile. The group is killed when the test ends.
func startPeers(t *testing.T, script string) *peersProcess {
	t.Helper()
	dir := t.TempDir()
	p := &peersProcess{out: filepath.Join(dir, "out"), pidFile: filepath.Join(dir, "pid"), exited: make(chan struct{})}
	out, err := os.Create(p.out)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// No core file of a process SIGQUIT ends in the checkout.
	p.cmd = exec.Command(os.Args[0], "bash", "-c", "ulimit -c 0; "+script, "bash", p.pidFile)
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), asPeers+"=1")
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	})
	waitForPid(t, p.pidFile)
	p.child = readPid(t, p.pidFile)
	return p
}

// wait returns peers' exit status once it has exited, and fails the test if that takes
// over 10 s.
func (p *peersProcess) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		t.Fatalf("peers still runs 10 s after the signal\n%s", p.output(t))
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *peersProcess) output(t *testing.T) string {
	b, err := os.ReadFile(p.out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// runSignalled runs script (its $1: a file to write its child's pid to) with runCommand,
// sends sig once the child runs, and returns the exit status and the child's pid.
func runSignalled(t *testing.T, script string, own []int, sig syscall.Signal) (code int, child int) {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pid")
	sigs := make(chan os.Signal, 1)
	result := goRunCommand(t, []string{"bash", "-c", script, "bash", pidFile}, own, sigs)
	waitForPid(t, pidFile)
	child = readPid(t, pidFile)
	sigs <- sig
	select {
	case code = <-result:
	case <-time.After(10 * time.Second):
		t.Fatalf("the command is still running 10 s after %s", sig)
	}
	return code, child
}

// goRunCommand runs runCommand in a goroutine and returns its result. Should the test end
// first (it failed), its cleanup waits for runCommand to return: one still running would
// reap the next test's children.
func goRunCommand(t *testing.T, command []string, own []int, sigs <-chan os.Signal) <-chan int {
	t.Helper()
	result := make(chan int, 1)
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		result <- runCommand(command, nil, own, sigs, 5*time.Second)
	}()
	t.Cleanup(func() {
		select {
		case <-returned:
		case <-time.After(30 * time.Second):
			t.Errorf("runCommand still runs 30 s after the test ended")
		}
	})
	return result
}

// waitForPid waits until a whole line is written to path.
func waitForPid(t *testing.T, path string) {
	t.Helper()
	eventually.NoError(t, 10*time.Second, func() error {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return fmt.Errorf("no pid written yet: %q, %v", b, err)
		}
		return nil
	})
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

// exists reports whether pid is a process, running or a zombie not yet reaped.
func exists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return !errors.Is(err, os.ErrNotExist)
}

// `down` takes a peer whose pid another process has now (after a reboot, say) for gone: it
// leaves that process alone, says so, and removes the state and run directory, or `up`
// would refuse ("already up") until .peers was removed by hand.
func TestDownTakesAPeerWhosePidIsAnotherProcesssForGone(t *testing.T) {
	other := exec.Command("sleep", "300")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	})
	// Until its exec is done, the sleeper's command line can read empty: a process gone.
	eventually.NoError(t, 5*time.Second, func() error {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", other.Process.Pid)); !strings.HasPrefix(string(b), "sleep") {
			return fmt.Errorf("the sleeper's command line is %q so far", b)
		}
		return nil
	})
	dir, runDir, aeronDir := filepath.Join(t.TempDir(), ".peers"), t.TempDir(), t.TempDir()
	if err := writeState(dir, state{RunDir: runDir, AeronDir: aeronDir, Pids: []int{other.Process.Pid}}); err != nil {
		t.Fatal(err)
	}
	if err := down([]string{"-state", dir}); err != nil {
		t.Fatalf("down = %v, want the peer taken for gone", err)
	}
	for _, d := range []string{dir, runDir, aeronDir} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after down (%v)", d, err)
		}
	}
	if !running(other.Process.Pid) {
		t.Errorf("down stopped process %d, which is not a peer", other.Process.Pid)
	}
}
