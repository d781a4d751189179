package infra

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

func TestPinnedVersionsAreReadFromVersionsEnv(t *testing.T) {
	v := PinnedVersions()
	if v.Aeron != "1.47.3" {
		t.Errorf("Aeron = %q: the protocol reference was verified against 1.47.3; change the pin only with a reason", v.Aeron)
	}
	if !strings.HasPrefix(v.Pulsar, "4.0.") {
		t.Errorf("Pulsar = %q, want a 4.0.x LTS release", v.Pulsar)
	}
}

// The distribution's standalone.conf has no final newline: appending keys naively glued
// the first one to its last line, and the broker then failed with "User class must be in
// class path" for a class name with ferry's comment stuck to it.
func TestPulsarConfigKeysStartOnTheirOwnLines(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := "compactionServiceFactoryClassName=org.example.Factory" // no newline, like the real file
	if err := os.WriteFile(filepath.Join(home, "conf", "standalone.conf"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Pulsar{
		home: home, conf: filepath.Join(t.TempDir(), "standalone.conf"),
		brokerPort: 1, webPort: 2,
		opts: PulsarOptions{Config: map[string]string{"brokerDeduplicationEnabled": "false"}},
	}
	if err := p.writeConfig(); err != nil {
		t.Fatal(err)
	}
	props := readProperties(t, p.conf)
	if got := props["compactionServiceFactoryClassName"]; got != "org.example.Factory" {
		t.Errorf("distribution key = %q, want it untouched", got)
	}
	if got := props["journalWriteData"]; got != "true" {
		t.Errorf("journalWriteData = %q, want true (kill -9 loses acknowledged entries otherwise)", got)
	}
	if got := props["brokerDeduplicationEnabled"]; got != "false" {
		t.Errorf("a test's own setting must win over the defaults: brokerDeduplicationEnabled = %q", got)
	}
}

// Every key ferry sets is in the file once. The broker takes the last value of a key set
// twice, but its embedded bookie reads the same file with commons-configuration, which
// takes the first: with ferry's keys appended after the distribution's, the bookie
// advertised "" and bound 0.0.0.0 (its log: "advertisedAddress" : "[, 127.0.0.1]").
func TestEachPulsarConfigKeyIsSetOnce(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	base := strings.Join([]string{
		"# The address the broker advertises",
		"advertisedAddress=",
		"bindAddress=0.0.0.0",
		"#journalWriteData=false",
		"  webServicePort : 8080",
		"brokerServicePort:6650",
		"defaultRetentionTimeInMinutes=0",
		"defaultRetentionTimeInMinutes=5",
		`managedLedgerDefaultAckQuorum=2\`,
		`    3`,
		`bookkeeperMetadataServiceUri=metadata-store:\`,
		`  rocksdb://data/metadata`,
		"brokerDeduplicationEnabled=true",
		"compactionServiceFactoryClassName=org.example.Factory", // no newline, like the real file
	}, "\n")
	if err := os.WriteFile(filepath.Join(home, "conf", "standalone.conf"), []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &Pulsar{
		home: home, conf: filepath.Join(t.TempDir(), "standalone.conf"),
		brokerPort: 1, webPort: 2,
		opts: PulsarOptions{Config: map[string]string{"brokerDeduplicationEnabled": "false", "bindAddress": "127.0.0.2"}},
	}
	if err := p.writeConfig(); err != nil {
		t.Fatal(err)
	}
	props := readProperties(t, p.conf) // fails the test on a key set twice
	for k, want := range map[string]string{
		"advertisedAddress":                 Loopback,
		"bindAddress":                       "127.0.0.2", // the test's own wins over ferry's
		"journalWriteData":                  "true",
		"webServicePort":                    "2",
		"brokerServicePort":                 "1",
		"defaultRetentionTimeInMinutes":     "-1",
		"managedLedgerDefaultAckQuorum":     "1",
		"bookkeeperMetadataServiceUri":      "metadata-store:rocksdb://data/metadata",
		"brokerDeduplicationEnabled":        "false",
		"compactionServiceFactoryClassName": "org.example.Factory",
	} {
		if got := props[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if len(props) != len(pulsarDefaults(1, 2))+2 {
		t.Errorf("the file sets %d keys, want ferry's %d and the distribution's 2 others:\n%v",
			len(props), len(pulsarDefaults(1, 2)), props)
	}
}

// The same with the distribution's own standalone.conf, secured: its keys are set once each
// too. Skipped where the peers are not fetched.
func TestEachKeyOfTheDistributionsPulsarConfigIsSetOnce(t *testing.T) {
	home, err := PulsarHome()
	if err != nil {
		t.Skip(err)
	}
	sec, err := NewPulsarSecurity(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := &Pulsar{
		home: home, conf: filepath.Join(t.TempDir(), "standalone.conf"),
		brokerPort: 1, webPort: 2, brokerTLSPort: 3, webTLSPort: 4,
		opts: PulsarOptions{Security: sec, Config: map[string]string{"advertisedAddress": "127.0.0.3"}},
	}
	if err := p.writeConfig(); err != nil {
		t.Fatal(err)
	}
	props := readProperties(t, p.conf) // fails the test on a key set twice
	for k, want := range map[string]string{
		"advertisedAddress": "127.0.0.3", "bindAddress": Loopback, "brokerServicePort": "1",
		"brokerServicePortTls": "3", "authenticationEnabled": "true",
	} {
		if got := props[k]; got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
}

// readProperties reads a Java properties file as the broker and its bookie do (separators
// '=', ':' or white space, a line ending in a backslash continued on the next). A key set
// twice fails the test: the broker would take its last value, the bookie its first.
func readProperties(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	logical := ""
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if logical == "" && (line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "!")) {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			logical += strings.TrimSuffix(line, `\`)
			continue
		}
		logical += line
		i := strings.IndexAny(logical, "=: \t")
		if i < 0 {
			i = len(logical)
		}
		k := logical[:i]
		v := strings.TrimLeft(strings.TrimLeft(logical[i:], " \t"), "=:")
		logical = ""
		if was, twice := props[k]; twice {
			t.Errorf("%s sets %s twice (%q, then %q)", path, k, was, v)
		}
		props[k] = strings.TrimSpace(v)
	}
	return props
}

func TestStopDetachedLeavesOtherProcessesAlone(t *testing.T) {
	cmd := startSleeper(t, true)
	if err := StopDetached(cmd.Process.Pid, "/not/our/run/dir", time.Second); !errors.Is(err, ErrNotAPeer) {
		t.Fatalf("StopDetached of a process whose command line lacks the marker = %v, want ErrNotAPeer", err)
	}
	if err := syscall.Kill(cmd.Process.Pid, 0); err != nil {
		t.Fatalf("the other process is gone: %v", err)
	}
}

func TestStopDetachedStopsGroupLeadersAndLoneProcesses(t *testing.T) {
	for _, leader := range []bool{true, false} {
		cmd := startSleeper(t, leader)
		if err := StopDetached(cmd.Process.Pid, "sleep", 5*time.Second); err != nil {
			t.Fatalf("leader=%v: %v", leader, err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("leader=%v: the process is still running after StopDetached returned", leader)
		}
	}
}

func startSleeper(t *testing.T, groupLeader bool) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: groupLeader, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	// Start returns once execve passed its point of no return, which is before the kernel
	// sets up the new command line: /proc/<pid>/cmdline can still read empty (seen in CI).
	eventually.NoError(t, 5*time.Second, func() error {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid))
		if err != nil || !bytes.Contains(b, []byte("sleep")) {
			return fmt.Errorf("cmdline of the sleeper: %q, %v", b, err)
		}
		return nil
	})
	return cmd
}

func TestReusedPeersAreNeverStopped(t *testing.T) {
	a := &Archive{AeronDir: "/dev/shm/someone-elses"}
	b := &Pulsar{ServiceURL: "pulsar://127.0.0.1:6650"}
	for name, err := range map[string]error{
		"archive stop": a.Stop(), "archive kill": a.Kill(), "pulsar stop": b.Stop(), "pulsar kill": b.Kill(),
	} {
		if err != ErrNotOwned {
			t.Errorf("%s of a reused peer = %v, want ErrNotOwned", name, err)
		}
	}
	var out bytes.Buffer
	if err := (&Peers{Archive: a, Pulsar: b}).close(&out, true); err != nil {
		t.Errorf("closing reused peers: %v", err)
	}
}

// A process that starts peers of its own (the demo test's `make demo`) is run without the
// variables that name the shared ones, and with the rest of the environment: without
// FERRYTEST_CACHE its fetch.sh would look in ~/.cache/ferry, and might download Pulsar
// again.
func TestWithoutPeerVariablesKeepsTheCacheAndKeepRun(t *testing.T) {
	peers := &Peers{
		Archive: &Archive{AeronDir: "/dev/shm/a", ArchiveDir: "/tmp/a", ControlChannel: "aeron:udp?endpoint=127.0.0.1:1"},
		Pulsar:  &Pulsar{ServiceURL: "pulsar://127.0.0.1:2", AdminURL: "http://127.0.0.1:3"},
	}
	kept := []string{"FERRYTEST_CACHE=/var/cache/ferry", EnvKeepRun + "=1", "PATH=/usr/bin", "FERRY_MODE=live"}
	got := WithoutPeerVariables(append(peers.Env(), kept...))
	if !slices.Equal(got, kept) {
		t.Errorf("WithoutPeerVariables = %q, want %q", got, kept)
	}
}
