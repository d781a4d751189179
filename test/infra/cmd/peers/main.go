// Command peers starts and stops the real Aeron archive and Pulsar broker that ferry's tests,
// benchmarks and demo run against (see package test/infra).
//
//	peers run [-archive=false] [-pulsar=false] [-- command [args…]]
//	    Start the peers, run the command with FERRYTEST_* variables naming them, stop the peers
//	    and exit with the command's status. Without a command, wait for Ctrl-C.
//	    The command runs in peers' process group, a foreground job like any other. A
//	    SIGINT, SIGTERM, SIGHUP or SIGQUIT sent to peers is passed on to the command and to
//	    every process under it, so that `go test` and the test binaries it started all get
//	    it. What the command leaves running when it exits gets SIGTERM, then SIGKILL after
//	    10 s, before the peers are stopped. The exit status of a command killed by signal n
//	    is 128+n.
//	peers up [-state DIR]
//	    Start the peers detached and record them in DIR (default .peers): DIR/env holds
//	    `export` lines for a shell or an IDE. A Ctrl-C while they start stops them.
//	peers down [-state DIR]
//	    Stop the peers recorded in DIR and remove it. A recorded pid that another process
//	    has now (after a reboot, say) is left alone, its peer taken for gone.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ferry-bridge/ferry/test/infra"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "run":
		code, err = run(os.Args[2:])
	case "up":
		code, err = up(os.Args[2:])
	case "down":
		err = down(os.Args[2:])
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: peers run [-archive=false] [-pulsar=false] [-- command args…] | peers up [-state DIR] | peers down [-state DIR]")
	os.Exit(2)
}

func run(args []string) (int, error) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	archive := fs.Bool("archive", true, "start an Aeron archive")
	pulsar := fs.Bool("pulsar", true, "start a Pulsar broker")
	_ = fs.Parse(args)
	command := fs.Args()

	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	defer stop()
	// Every signal from here on also reaches the command, once it runs.
	sigs := make(chan os.Signal, len(forwarded))
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	began := time.Now()
	peers, err := infra.Shared(ctx, infra.Need{Archive: *archive, Pulsar: *pulsar})
	if errors.Is(err, infra.ErrInterrupted) {
		// Shared stopped what it had started and removed its run directory: no failure.
		fmt.Println("peers: interrupted before the peers were ready; stopped")
		return interruptedCode(sigs), nil
	}
	if err != nil {
		return 0, err
	}
	report(peers, time.Since(began))

	code := 0
	if len(command) == 0 {
		fmt.Println("peers: running; Ctrl-C stops them")
		<-ctx.Done()
	} else {
		var own []int // the peers' processes, started here: not the command's
		if a := peers.Archive; a != nil && a.Pid() != 0 {
			own = append(own, a.Pid())
		}
		if b := peers.Pulsar; b != nil && b.Pid() != 0 {
			own = append(own, b.Pid())
		}
		code = runCommand(command, peers.Env(), own, sigs, leftoverGrace)
	}
	if err := peers.Close(code != 0); err != nil {
		return code, fmt.Errorf("stopping peers: %w", err)
	}
	fmt.Println("peers: stopped")
	return code, nil
}

// forwarded are the signals peers passes on to the command and to every process under it.
//
// SIGINT and SIGQUIT too, although a Ctrl-C or Ctrl-\ in the terminal (like a kill of the
// whole process group: the demo test's, GNU timeout's) reaches every process of the
// foreground group already, the command's included: those get it twice, which is harmless
// (ferry takes a second signal within a second of the first for the same request; go test
// waits for its test binaries, which end on the first SIGINT and dump their goroutines on
// the first SIGQUIT). Without it, one sent to peers alone (kill, an IDE's stop button, a
// supervising program) would reach no one: peers catches it rather than stop the peers under
// a running command, and would wait on. It also reaches the processes in groups of their
// own that no terminal signal reaches, such as the peers a test binary started.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// leftoverGrace is how long the processes the command left running when it exited may take
// to end on SIGTERM before they are killed.
const leftoverGrace = 10 * time.Second

// runCommand runs command with env added and returns its exit status: the command's own, or
// 128+n if signal n killed it (as a shell reports it), 127 if it could not start.
//
// The command stays in peers' process group, so that it is what the terminal and whoever
// signals the group take it for: a foreground job (Ctrl-C, Ctrl-Z and `stty tostop` treat
// it as such, and a SIGKILL to the group, which peers cannot pass on, reaches it).
//
// Each signal received on sigs is sent to the command and to every process under it, found
// afresh each time: `go test` does not pass SIGTERM on to the test binaries it started (nor
// does make to more than its own child), which would live on, each with peers of its own.
// The command decides how to end.
//
// peers becomes a child subreaper (Linux 3.4), so that what the command's processes leave
// behind when they exit is re-parented to peers rather than to init: it still counts as
// under the command, a signal still reaches it, and peers reaps it once it exits. Once the
// command has exited, what is left gets SIGTERM and, after grace, SIGKILL, so that nothing
// it started outlives the peers it uses. The pids in own are peers' own children (the peers
// it started): they are neither signalled nor reaped here. peers must start no other
// process while runCommand runs: one not in own would be taken for the command's, and
// reaped under its os/exec's feet. So would an orphan the peers' processes left behind
// (they leave none while they run).
func runCommand(command, env []string, own []int, sigs <-chan os.Signal, grace time.Duration) int {
	subreaper := becomeSubreaper()
	if subreaper != nil {
		fmt.Fprintf(os.Stderr, "peers: cannot become a child subreaper (%v): what the command leaves running when it exits is not stopped\n", subreaper)
	}
	// Before the command starts: none of its exits may go unseen.
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	defer signal.Stop(chld)

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		return 127
	}
	t := tree{self: os.Getpid(), command: cmd.Process.Pid, own: own}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			if subreaper == nil {
				endLeftovers(t, grace)
			}
			return exitCode(err)
		case sig := <-sigs:
			t.reap(readProcs())
			select {
			case err := <-done: // exited meanwhile: its pid may be another process's now
				done <- err
				continue
			default:
			}
			// Read again after reaping: a pid reaped may be another process's already.
			for _, pid := range t.under(readProcs(), true) {
				_ = syscall.Kill(pid, sig.(syscall.Signal))
			}
		case <-chld:
			t.reap(readProcs())
		}
	}
}

// PR_SET_CHILD_SUBREAPER, from linux/prctl.h.
const prSetChildSubreaper = 36

// becomeSubreaper makes this process a child subreaper: the orphans among its descendants
// are re-parented to it, not to init.
func becomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return errno
	}
	return nil
}

// tree finds the command's processes in /proc: the command and the processes under it, and
// the orphans among them, re-parented to peers (self), with what is under those. Its
// methods take a snapshot of /proc ([readProcs]), and a process may start or end just after.
type tree struct {
	self, command int
	own           []int // peers' own children: not the command's
}

// adopted returns peers' children that are neither the command nor peers' own: orphans
// re-parented to peers, a subreaper.
func (t tree) adopted(procs map[int]proc) []int {
	var pids []int
	for pid, p := range procs {
		if p.ppid == t.self && pid != t.command && !slices.Contains(t.own, pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// under returns the command (if withCommand) and the adopted orphans, with every process
// under them, except zombies: they have exited.
func (t tree) under(procs map[int]proc, withCommand bool) []int {
	roots := t.adopted(procs)
	if withCommand {
		roots = append(roots, t.command)
	}
	children := make(map[int][]int)
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	var pids []int
	for len(roots) > 0 {
		pid := roots[0]
		roots = append(roots[1:], children[pid]...)
		if p, ok := procs[pid]; ok && !p.zombie {
			pids = append(pids, pid)
		}
	}
	return pids
}

// reap collects the exit status of the adopted orphans that have exited. Never of the
// command's or of peers' own: their os/exec waits for those. Each adopted orphan is asked,
// not only those /proc shows as zombies: the kernel signals SIGCHLD an instant before /proc
// shows the exit.
func (t tree) reap(procs map[int]proc) {
	for _, pid := range t.adopted(procs) {
		var status syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &status, syscall.WNOHANG, nil) // 0 if it has not exited
	}
}

// endLeftovers stops what is left of the command's processes once it has exited: SIGTERM,
// up to grace for them to end, then SIGKILL, and up to 10 s more. Those that end are reaped.
func endLeftovers(t tree, grace time.Duration) {
	left := t.leftovers()
	if len(left) == 0 {
		return
	}
	fmt.Fprintf(os.Stderr, "peers: processes the command started are still running (pids %v); stopping them\n", left)
	for _, pid := range left {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	if t.waitGone(grace, 0) {
		return
	}
	fmt.Fprintf(os.Stderr, "peers: processes the command started still run %s after SIGTERM (pids %v); killing them\n", grace, t.leftovers())
	if !t.waitGone(10*time.Second, syscall.SIGKILL) {
		fmt.Fprintf(os.Stderr, "peers: processes the command started still run 10s after SIGKILL (pids %v)\n", t.leftovers())
	}
}

// leftovers reaps the adopted orphans that have exited and returns the live ones, with
// what is under them.
func (t tree) leftovers() []int {
	t.reap(readProcs())
	return t.under(readProcs(), false) // read again: a pid reaped may be another's already
}

// waitGone reports whether the leftovers are gone within timeout, sending each one sig
// (unless 0) each time it looks: one may have started another meanwhile.
func (t tree) waitGone(timeout time.Duration, sig syscall.Signal) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		left := t.leftovers()
		if len(left) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range left {
			if sig != 0 {
				_ = syscall.Kill(pid, sig)
			}
		}
	}
}

// proc is what peers reads of a process in /proc/PID/stat.
type proc struct {
	ppid   int
	zombie bool // exited, its exit status not yet collected by its parent
}

// readProcs returns the processes /proc shows, by pid.
func readProcs() map[int]proc {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	procs := make(map[int]proc, len(stats))
	for _, path := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		f, ok := infra.ProcStat(path) // state, parent pid, ...
		if !ok || len(f) < 2 {
			continue // gone meanwhile, or not parsed
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		procs[pid] = proc{ppid: ppid, zombie: f[0] == "Z"}
	}
	return procs
}

// interruptedCode is peers' exit status after a signal ended the peers' start: 128+n for
// signal n (130 for Ctrl-C), as a shell reports a process that signal killed. sigs holds
// the signal.
func interruptedCode(sigs <-chan os.Signal) int {
	select {
	case sig := <-sigs:
		if s, ok := sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
	default:
	}
	return 128 + int(syscall.SIGINT)
}

// exitCode is a command's exit status as a shell reports it: 128+n for signal n.
func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	default:
		return 1
	}
}

func report(p *infra.Peers, took time.Duration) {
	if a := p.Archive; a != nil && a.Pid() != 0 {
		fmt.Printf("peers: aeron archive pid %d ready in %s (aeron dir %s, control %s)\n",
			a.Pid(), a.StartupTime.Round(time.Millisecond), a.AeronDir, a.ControlChannel)
	}
	if b := p.Pulsar; b != nil && b.Pid() != 0 {
		fmt.Printf("peers: pulsar pid %d ready in %s (%s, admin %s)\n",
			b.Pid(), b.StartupTime.Round(time.Millisecond), b.ServiceURL, b.AdminURL)
	}
	if p.RunDir != "" {
		fmt.Printf("peers: logs in %s (all ready after %s)\n", p.RunDir, took.Round(time.Millisecond))
	}
}

// state is what `peers up` records for `peers down`.
type state struct {
	RunDir   string   `json:"run_dir"`
	AeronDir string   `json:"aeron_dir"`
	Pids     []int    `json:"pids"`
	Env      []string `json:"env"`
}

func stateFlag(name string, args []string) string {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	dir := fs.String("state", ".peers", "directory that records detached peers")
	_ = fs.Parse(args)
	return *dir
}

// up starts the peers detached and records them in their state directory. A signal while
// they start (Ctrl-C) stops what was started and removes the run directory, as `peers run`
// does: detached, a peer left behind would run on unrecorded, out of `peers down`'s reach.
func up(args []string) (int, error) {
	dir := stateFlag("up", args)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return 0, fmt.Errorf("peers are already up (%s/state.json); run `peers down` first", dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), forwarded...)
	defer stop()
	sigs := make(chan os.Signal, len(forwarded))
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	runDir, err := infra.NewRunDir()
	if err != nil {
		return 0, err
	}
	began := time.Now()
	peers := &infra.Peers{RunDir: runDir}
	failed := func(err error) (int, error) {
		if errors.Is(err, infra.ErrInterrupted) {
			closeErr := peers.Close(false)
			fmt.Println("peers: interrupted before the peers were ready; stopped")
			return interruptedCode(sigs), closeErr
		}
		return 0, errors.Join(err, peers.Close(true))
	}
	if peers.Archive, err = infra.StartArchive(ctx, infra.ArchiveOptions{Dir: filepath.Join(runDir, "archive"), Detached: true}); err != nil {
		return failed(err)
	}
	if peers.Pulsar, err = infra.StartPulsar(ctx, infra.PulsarOptions{Dir: filepath.Join(runDir, "pulsar"), Detached: true}); err != nil {
		return failed(err)
	}
	if ctx.Err() != nil { // the signal came as the broker got ready: still taken
		return failed(fmt.Errorf("%w: the peers were stopped as they got ready", infra.ErrInterrupted))
	}
	report(peers, time.Since(began))
	st := state{RunDir: runDir, AeronDir: peers.Archive.AeronDir, Pids: []int{peers.Archive.Pid(), peers.Pulsar.Pid()}, Env: peers.Env()}
	if err := writeState(dir, st); err != nil {
		return 0, errors.Join(err, peers.Close(true))
	}
	fmt.Printf("peers: up; `source %s/env` to reuse them in tests, `make infra-down` to stop them\n", dir)
	return 0, nil
}

func writeState(dir string, st state) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	var env strings.Builder
	for _, kv := range st.Env {
		// Single quotes: channel URIs hold '?' and '|', which a shell would interpret.
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&env, "export %s='%s'\n", k, strings.ReplaceAll(v, "'", `'\''`))
	}
	return errors.Join(
		os.WriteFile(filepath.Join(dir, "state.json"), b, 0o644),
		os.WriteFile(filepath.Join(dir, "env"), []byte(env.String()), 0o644))
}

func down(args []string) error {
	dir := stateFlag("down", args)
	b, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		fmt.Println("peers: none are up")
		return nil
	}
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("%s/state.json is not a peers state file (%w); stop the peers by hand", dir, err)
	}
	var errs []error
	for _, pid := range st.Pids {
		err := infra.StopDetached(pid, st.RunDir, 30*time.Second)
		if errors.Is(err, infra.ErrNotAPeer) {
			// The peer is gone as surely as if its pid were free: stopping it there would
			// fail on every `down`, and `up` refuse while the state is left.
			fmt.Fprintf(os.Stderr, "peers: %v; taking that peer for gone\n", err)
			continue
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	errs = append(errs, os.RemoveAll(st.AeronDir), os.RemoveAll(st.RunDir), os.RemoveAll(dir))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Println("peers: down")
	return nil
}
