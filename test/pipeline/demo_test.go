package pipeline

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestMakeDemoDeliversAndStopsEverything runs `make demo` as a newcomer would — its own
// archive and broker, the sample publisher, ferry — non-interactively: once the demo
// reports messages in Pulsar it gets Ctrl-C (SIGINT to its process group), must exit, and
// every peer process it started must be gone.
func TestMakeDemoDeliversAndStopsEverything(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	// Its status endpoint on a port of its own, not the default one a ferry or demo of the
	// developer's may hold.
	cmd := exec.Command("make", "--no-print-directory", "demo", fmt.Sprintf("DEMO_ARGS=--listen=127.0.0.1:%d", freePort(t)))
	cmd.Dir = root
	// Without the variables that name the shared peers: the demo starts peers of its own.
	// The others stay: without FERRYTEST_CACHE, say, the demo's fetch.sh would look in
	// ~/.cache/ferry and might download Pulsar again within this test's time. (The demo's
	// configuration takes no FERRY_ variable; a developer's are left in on purpose.)
	cmd.Env = infra.WithoutPeerVariables(os.Environ())
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("make demo output:\n%s", out.String())
		}
	})

	// Time for make deps (nothing to fetch by now), two go builds, the peers' start (which
	// infra allows up to infra.StartTimeout: a cold broker on a loaded machine, another test
	// package beside this one, may need much of it) and 500 messages.
	inPulsar := regexp.MustCompile(`in Pulsar: (\d+) messages`)
	eventually.NoError(t, infra.StartTimeout+90*time.Second, func() error {
		select {
		case err := <-done:
			t.Fatalf("make demo exited early: %v", err)
		default:
		}
		m := inPulsar.FindAllStringSubmatch(out.String(), -1)
		if len(m) == 0 {
			return fmt.Errorf("the demo has not reported messages in Pulsar yet")
		}
		if n, _ := strconv.Atoi(m[len(m)-1][1]); n < 500 {
			return fmt.Errorf("%d messages in Pulsar so far", n)
		}
		return nil
	})
	peerPids := regexp.MustCompile(`(?:aeron archive|pulsar) pid (\d+)`).FindAllStringSubmatch(out.String(), -1)
	if len(peerPids) != 2 {
		t.Fatalf("the demo did not start its own archive and broker: %v", peerPids)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatal("make demo did not stop within 90 s of Ctrl-C")
	}
	if !strings.Contains(out.String(), "peers: stopped") {
		t.Errorf("the demo did not report its peers stopped")
	}
	for _, m := range peerPids {
		pid, _ := strconv.Atoi(m[1])
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("peer process %d still runs after the demo ended", pid)
		}
	}
	// The temporary directory the demo made for its configuration and checkpoints goes too.
	if m := regexp.MustCompile(`demo: configuration (\S+)/ferry-demo\.yaml`).FindStringSubmatch(out.String()); m == nil {
		t.Errorf("the demo did not say where its configuration is")
	} else if _, err := os.Stat(m[1]); !os.IsNotExist(err) {
		t.Errorf("the demo's temporary directory %s is still there (%v)", m[1], err)
	}
}

// TestADemoWhoseFerryCannotStartSaysWhyAndEnds: `ferry demo` whose ferry cannot start (here
// its HTTP port is taken, which the demo checks before it starts anything) says why and
// exits 1, rather than go on publishing without a word until Ctrl-C. A ferry.yaml in its
// --dir is not the demo's to overwrite.
func TestADemoWhoseFerryCannotStartSaysWhyAndEnds(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	mine := filepath.Join(dir, "ferry.yaml")
	const production = "# my production configuration\n"
	if err := os.WriteFile(mine, []byte(production), 0o600); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if got, err := os.ReadFile(mine); err != nil || string(got) != production {
			t.Errorf("the demo changed %s in its --dir (%v): %q", mine, err, got)
		}
	}()
	cmd := exec.Command(ferryBin, "demo", "--aeron-dir", peers.Archive.AeronDir, "--pulsar", peers.Pulsar.ServiceURL,
		"--pulsar-admin", peers.Pulsar.AdminURL, "--dir", dir, "--rate", "10", "--listen", taken.Addr().String())
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("ferry demo still ran a minute after its ferry could not start:\n%s", out.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out.String(), "address already in use") {
		t.Fatalf("ferry demo = %v; want exit 1 saying the port is taken:\n%s", err, out.String())
	}
}
