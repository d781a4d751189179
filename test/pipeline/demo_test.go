package pipeline

import (
	"bytes"
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
	// Its own process group, for the Ctrl-C and the SIGKILL below. Should the test binary
	// die first, make gets SIGTERM, which it passes on to the recipe it runs (GNU make does
	// so for SIGTERM, not SIGINT): `peers run` then passes it to the demo and stops its
	// archive and broker. A SIGKILL would end make alone and leave all of them running.
	// (The death signal is make's alone and leaves its process group as it is.)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
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

// TestADemoWhoseFerryCannotStartSaysWhyAndEnds: `ferry demo` whose ferry cannot start says
// why and exits 1, rather than go on publishing without a word until Ctrl-C: when its HTTP
// port is taken, which the demo checks before it starts anything, and when its checkpoint
// store (in its --dir, kept across runs) is damaged, which only ferry's run finds, once the
// demo's publisher and reader run. A ferry.yaml in its --dir is not the demo's to overwrite.
func TestADemoWhoseFerryCannotStartSaysWhyAndEnds(t *testing.T) {
	for _, c := range []struct {
		name string
		// setUp prepares the demo's --dir and returns its --listen address.
		setUp func(t *testing.T, dir string) string
		want  string
	}{
		{"its port taken", func(t *testing.T, _ string) string {
			taken, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = taken.Close() })
			return taken.Addr().String()
		}, "address already in use"},
		{"its checkpoint store damaged", func(t *testing.T, dir string) string {
			junk := bytes.Repeat([]byte("not a checkpoint store "), 1000)
			if err := os.WriteFile(filepath.Join(dir, "ferry-demo-checkpoints.db"), junk, 0o600); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("127.0.0.1:%d", freePort(t))
		}, "ferry-demo-checkpoints.db"},
	} {
		t.Run(c.name, func(t *testing.T) {
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
			listen := c.setUp(t, dir)
			cmd := exec.Command(ferryBin, "demo", "--aeron-dir", peers.Archive.AeronDir, "--pulsar", peers.Pulsar.ServiceURL,
				"--pulsar-admin", peers.Pulsar.AdminURL, "--dir", dir, "--rate", "10", "--listen", listen)
			out := &syncBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // dies with the test binary
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var err error
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				<-done
				checkRaceReports(t, "ferry demo", out.String())
				t.Fatalf("ferry demo still ran a minute after its ferry could not start:\n%s", out.String())
			}
			checkRaceReports(t, "ferry demo", out.String())
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out.String(), c.want) {
				t.Fatalf("ferry demo = %v; want exit 1 saying %q:\n%s", err, c.want, out.String())
			}
			t.Logf("ferry demo said:\n%s", out.String())
		})
	}
}
