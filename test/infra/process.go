package infra

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// process is one peer's operating-system process. It runs in a process group of its own so
// that a stop reaches every process it spawned, and writes stdout and stderr to its log.
//
// A process is safe for concurrent use: its fields do not change after start, and the exit
// status is published by closing done.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process has exited and err is set
	err  error
}

// startProcess starts argv in dir with env added to this process's environment, output
// appended to logPath, and stdin (nil: nothing, /dev/null) as its standard input. Unless detached, the process is killed by the kernel when the thread
// that started it dies, so a crashing test binary leaves no peer behind; a detached process
// outlives its starter (cmd/peers up) and is stopped by pid later.
func startProcess(name string, argv, env []string, dir, logPath string, stdin *os.File, detached bool) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s: open log: %w", name, err)
	}
	defer logFile.Close() // the child holds its own descriptor

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if stdin != nil {
		cmd.Stdin = stdin
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !detached {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	fmt.Fprintf(logFile, "--- %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(argv, " "))
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", name, argv[0], err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// appendLog adds a line of the harness's own to a peer's console log, so the log tells what
// was done to the peer as well as what it printed. Best effort: the log is for people.
func appendLog(logPath, line string) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "--- %s: %s\n", time.Now().UTC().Format(time.RFC3339Nano), line)
}

// pid is the process id, which is also its process group id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process has exited, and how.
func (p *process) exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// stop asks the process group to terminate (SIGTERM) and waits up to grace for it to exit,
// then kills it (SIGKILL). It returns once the process has exited.
func (p *process) stop(grace time.Duration) error { return p.signal(syscall.SIGTERM, grace) }

// signal sends sig to the process group, waits up to grace for the process to exit, then
// kills it.
func (p *process) signal(sig syscall.Signal, grace time.Duration) error {
	if ok, _ := p.exited(); ok {
		return nil
	}
	_ = syscall.Kill(-p.pid(), sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		return p.kill()
	}
}

// kill kills the process group with SIGKILL (the kill -9 of the failure tests) and waits for
// the process to exit.
func (p *process) kill() error {
	if ok, _ := p.exited(); ok {
		return nil
	}
	if err := syscall.Kill(-p.pid(), syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: kill process group %d: %w", p.name, p.pid(), err)
	}
	<-p.done
	return nil
}

// freezeAndKill kills the process group as a crash would, at one instant: it stops it
// first (SIGSTOP), waits, at most within, until none of its threads is running (none is then
// in the middle of a system call), and then kills it (SIGKILL). A SIGKILL alone can cut a
// write short between two pages: a Pulsar standalone's bookie then replays its journal's
// torn last record, whose digest fails, and the ledger it ends can never be recovered
// (docs/findings.md). A machine that crashes loses the page cache instead, which the
// journal's fsync is for; a process killed loses only what it had not written.
func (p *process) freezeAndKill(within time.Duration) error {
	if ok, _ := p.exited(); ok {
		return nil
	}
	if err := syscall.Kill(-p.pid(), syscall.SIGSTOP); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("%s: stop process group %d: %w", p.name, p.pid(), err)
	}
	deadline := time.Now().Add(within)
	running := groupRunning(p.pid())
	for ; running != "" && time.Now().Before(deadline); running = groupRunning(p.pid()) {
		time.Sleep(5 * time.Millisecond) // polls the kernel's thread states: nothing to wait on
	}
	if running != "" {
		appendLog(p.log, fmt.Sprintf("infra: not every thread stopped within %s (%s); killed all the same", within, running))
	} else {
		appendLog(p.log, "infra: stopped (SIGSTOP), every thread; killed (SIGKILL)")
	}
	return p.kill()
}

// groupRunning names a thread of process group pgid that is not stopped ("": none), from
// /proc.
func groupRunning(pgid int) string {
	stats, _ := filepath.Glob("/proc/[0-9]*/task/[0-9]*/stat")
	for _, path := range stats {
		f, ok := ProcStat(path)
		if !ok || len(f) < 3 || f[2] != strconv.Itoa(pgid) { // state, parent pid, process group
			continue
		}
		if state := f[0]; state != "T" && state != "t" && state != "Z" && state != "X" {
			return fmt.Sprintf("%s in state %s", path, state)
		}
	}
	return ""
}

// ProcStat is the fields of a /proc stat file (of a process or a thread) after its command
// name, which may hold spaces and parentheses: state, parent pid, process group, and so on;
// ok is false for a file that cannot be read (the process gone meanwhile) or parsed.
func ProcStat(path string) (fields []string, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

// logTail returns the last n bytes of a log file, for failure messages.
func logTail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log at %s: %v)", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		_, _ = f.Seek(st.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

// ErrNotAPeer is returned by [StopDetached] for a process whose command line lacks the
// peer's marker: the peer is gone and its pid was reused by a process ferry did not start
// (after a reboot, say). The process is left alone.
// Its text is a phrase of the error that wraps it.
var ErrNotAPeer = errors.New("not a peer")

// StopDetached stops a peer that an earlier `peers up` left running, given its process id and
// a marker its command line must contain (its run directory). It refuses a process whose
// command line lacks the marker ([ErrNotAPeer]). It sends SIGTERM to the process group (to
// the process alone if it leads none), waits up to grace, then sends SIGKILL and waits for
// the process to be gone.
func StopDetached(pid int, marker string, grace time.Duration) error {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil // already gone
	}
	if !strings.Contains(string(cmdline), marker) {
		return fmt.Errorf("infra: pid %d is %w started in %s; leaving it alone", pid, ErrNotAPeer, marker)
	}
	signalGroup(pid, syscall.SIGTERM)
	if waitGone(pid, grace) {
		return nil
	}
	signalGroup(pid, syscall.SIGKILL)
	if !waitGone(pid, 10*time.Second) {
		return fmt.Errorf("infra: pid %d survived SIGKILL", pid)
	}
	return nil
}

// signalGroup signals pid's process group, or pid alone if it leads no group.
func signalGroup(pid int, sig syscall.Signal) {
	if err := syscall.Kill(-pid, sig); errors.Is(err, syscall.ESRCH) {
		_ = syscall.Kill(pid, sig)
	}
}

// waitGone reports whether pid has exited (or become a zombie, which no longer runs) within
// timeout.
func waitGone(pid int, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state is the field after the parenthesised command name: "Z" is a zombie.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// logSince returns what a log gained after its size was before (nil: the whole log).
func logSince(path string, before os.FileInfo) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if before != nil && before.Size() <= int64(len(b)) {
		b = b[before.Size():]
	}
	return string(b)
}
