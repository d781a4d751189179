// Command peers starts and stops the real Aeron archive and Pulsar broker that ferry's tests,
// benchmarks and demo run against (see package test/infra).
//
//	peers run [-archive=false] [-pulsar=false] [-- command [args…]]
//	    Start the peers, run the command with FERRYTEST_* variables naming them, stop the peers
//	    and exit with the command's status. Without a command, wait for Ctrl-C.
//	    The command runs in a process group of its own, to which SIGINT, SIGTERM and SIGHUP
//	    sent to peers are passed on (also Ctrl-C: the terminal no longer sends it there), so
//	    that `go test` and the test binaries it started all get it. Being in a background
//	    group of the terminal, the command must not read from it (it would be stopped).
//	peers up [-state DIR]
//	    Start the peers detached and record them in DIR (default .peers): DIR/env holds
//	    `export` lines for a shell or an IDE.
//	peers down [-state DIR]
//	    Stop the peers recorded in DIR.
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
		err = up(os.Args[2:])
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
	if err != nil {
		return 0, err
	}
	report(peers, time.Since(began))

	code := 0
	if len(command) == 0 {
		fmt.Println("peers: running; Ctrl-C stops them")
		<-ctx.Done()
	} else {
		code = runCommand(command, peers.Env(), sigs, groupGrace)
	}
	if err := peers.Close(code != 0); err != nil {
		return code, fmt.Errorf("stopping peers: %w", err)
	}
	fmt.Println("peers: stopped")
	return code, nil
}

// forwarded are the signals peers passes on to the command's process group.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// groupGrace is how long what is left of the command's process group after the command
// exited may take to end before it is killed.
const groupGrace = 10 * time.Second

// runCommand runs command with env added, in a process group of its own, and returns its
// exit status. Each signal received on sigs is sent to the whole group, not only to the
// command: `go test` does not pass SIGTERM on to the test binaries it started, which would
// live on, each with peers of its own. The command decides how to end. Once it has exited,
// what is left of its group gets SIGTERM and, after grace, SIGKILL, so that nothing it
// started outlives the peers it uses.
func runCommand(command, env []string, sigs <-chan os.Signal, grace time.Duration) int {
	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		return 127
	}
	group := cmd.Process.Pid // Setpgid: the command leads a group of its own pid
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case sig := <-sigs:
			_ = syscall.Kill(-group, sig.(syscall.Signal))
		}
	}
	endGroup(group, grace)
	return exitCode(err)
}

// endGroup sends SIGTERM to what is left of a process group, waits up to grace for it to
// be gone, then kills it and waits (up to 10 s) until it is.
func endGroup(group int, grace time.Duration) {
	if !groupAlive(group) {
		return
	}
	fmt.Fprintf(os.Stderr, "peers: processes the command started are still running (process group %d); stopping them\n", group)
	_ = syscall.Kill(-group, syscall.SIGTERM)
	if waitGroupGone(group, grace) {
		return
	}
	fmt.Fprintf(os.Stderr, "peers: process group %d still running %s after SIGTERM; killing it\n", group, grace)
	_ = syscall.Kill(-group, syscall.SIGKILL)
	if !waitGroupGone(group, 10*time.Second) {
		fmt.Fprintf(os.Stderr, "peers: process group %d still running 10s after SIGKILL\n", group)
	}
}

// waitGroupGone reports whether group is gone within timeout.
func waitGroupGone(group int, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		if !groupAlive(group) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// groupAlive reports whether any process of group is left running. Zombies do not count:
// one whose parent died waits for init to reap it, which in a container may never happen.
func groupAlive(group int) bool {
	if errors.Is(syscall.Kill(-group, 0), syscall.ESRCH) {
		return false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		// After the parenthesised command name: state, parent pid, process group.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(group) {
			return true
		}
	}
	return false
}

func exitCode(err error) int {
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		if exit.ExitCode() < 0 {
			return 1 // killed by a signal
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

func up(args []string) error {
	dir := stateFlag("up", args)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err == nil {
		return fmt.Errorf("peers are already up (%s/state.json); run `peers down` first", dir)
	}
	runDir, err := infra.NewRunDir()
	if err != nil {
		return err
	}
	ctx := context.Background()
	began := time.Now()
	archive, err := infra.StartArchive(ctx, infra.ArchiveOptions{Dir: filepath.Join(runDir, "archive"), Detached: true})
	if err != nil {
		return fmt.Errorf("%w\n(logs kept in %s)", err, runDir)
	}
	pulsar, err := infra.StartPulsar(ctx, infra.PulsarOptions{Dir: filepath.Join(runDir, "pulsar"), Detached: true})
	if err != nil {
		return errors.Join(fmt.Errorf("%w\n(logs kept in %s)", err, runDir), archive.Stop())
	}
	peers := &infra.Peers{Archive: archive, Pulsar: pulsar, RunDir: runDir}
	report(peers, time.Since(began))
	st := state{RunDir: runDir, AeronDir: archive.AeronDir, Pids: []int{archive.Pid(), pulsar.Pid()}, Env: peers.Env()}
	if err := writeState(dir, st); err != nil {
		return err
	}
	fmt.Printf("peers: up; `source %s/env` to reuse them in tests, `make infra-down` to stop them\n", dir)
	return nil
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
		errs = append(errs, infra.StopDetached(pid, st.RunDir, 30*time.Second))
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
