package infra

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// These tests use sleep processes for peers: no Java peer is started.

// fakeRun lays out a run directory as a broker and an archive leave it, each "peer" a sleep
// process, and returns the peers and the files Close must keep and remove on failure.
func fakeRun(t *testing.T) (p *Peers, keep, data []string) {
	t.Helper()
	run := t.TempDir()
	keep = []string{
		"pulsar/pulsar.log", "pulsar/logs/pulsar-standalone.log", "pulsar/standalone.conf",
		"archive/archive.log", "archive/archive/archive.catalog", "archive/archive/archive-mark.dat",
	}
	data = []string{
		"pulsar/data/bookkeeper/journal/current/1.txn", "pulsar/data/metadata/000001.sst",
		"pulsar/tmp/librocksdbjni.so", "archive/archive/0-0.rec", "archive/archive/0-1048576.rec",
	}
	for _, f := range append(append([]string{}, keep...), data...) {
		path := filepath.Join(run, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sleeper := func(dir string) *process {
		proc, err := startProcess("sleeper", []string{"sleep", "300"}, nil, dir, filepath.Join(t.TempDir(), "sleeper.log"), nil, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proc.kill() })
		return proc
	}
	pulsarDir, archiveDir := filepath.Join(run, "pulsar"), filepath.Join(run, "archive")
	p = &Peers{
		RunDir: run,
		Pulsar: &Pulsar{
			opts: PulsarOptions{Dir: pulsarDir}, log: filepath.Join(pulsarDir, "pulsar.log"),
			data: filepath.Join(pulsarDir, "data"), proc: sleeper(pulsarDir),
		},
		Archive: &Archive{
			AeronDir: t.TempDir(), ArchiveDir: filepath.Join(archiveDir, "archive"),
			opts: ArchiveOptions{Dir: archiveDir}, log: filepath.Join(archiveDir, "archive.log"), proc: sleeper(archiveDir),
		},
	}
	return p, keep, data
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// A failed run keeps what a person reads (logs, configuration, the archive's catalog) and
// removes the peers' data, a gigabyte and more a run, saying what it kept and removed.
func TestAFailedRunKeepsItsLogsNotItsData(t *testing.T) {
	t.Setenv(EnvKeepRun, "")
	p, keep, data := fakeRun(t)
	var out bytes.Buffer
	if err := p.close(&out, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range keep {
		if !exists(t, filepath.Join(p.RunDir, f)) {
			t.Errorf("%s was removed; a failed run keeps it", f)
		}
	}
	for _, f := range data {
		if exists(t, filepath.Join(p.RunDir, f)) {
			t.Errorf("%s was kept; a failed run removes the peers' data", f)
		}
	}
	msg := out.String()
	for _, want := range []string{
		"logs and configuration kept in " + p.RunDir, "pulsar/data", "pulsar/tmp",
		"2 recording segments in archive/archive", EnvKeepRun + "=1",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure message lacks %q:\n%s", want, msg)
		}
	}
}

func TestARunsDirectoryIsRemovedWhenItPassedAndKeptWholeWhenAsked(t *testing.T) {
	t.Setenv(EnvKeepRun, "")
	p, _, _ := fakeRun(t)
	if err := p.close(&bytes.Buffer{}, false); err != nil {
		t.Fatal(err)
	}
	if exists(t, p.RunDir) {
		t.Errorf("the run directory of a run that passed is still there")
	}

	t.Setenv(EnvKeepRun, "1")
	p, keep, data := fakeRun(t)
	var out bytes.Buffer
	if err := p.close(&out, true); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(keep, data...) {
		if !exists(t, filepath.Join(p.RunDir, f)) {
			t.Errorf("%s was removed although %s is set", f, EnvKeepRun)
		}
	}
	if !strings.Contains(out.String(), "logs and data kept in "+p.RunDir) {
		t.Errorf("the message does not say all was kept:\n%s", out.String())
	}
}

// A new run directory prunes run directories last changed over two days ago, except those
// a process still uses (its working directory, an open file, an argument): a detached
// `peers up` may run for days. Other directories and symbolic links are left alone.
func TestNewRunDirRemovesOldRunDirsNoProcessUses(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := time.Now().Add(-3 * 24 * time.Hour)
	mk := func(name string, mtime time.Time) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(dir, "pulsar"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "pulsar", "pulsar.log"), []byte("log"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	stale := mk(runDirPrefix+"20200101T000000-3", old) // a prefix of cwd's name: not in use for that
	recent := mk(runDirPrefix+"20200101T000000-2", time.Now().Add(-time.Hour))
	cwd := mk(runDirPrefix+"20200101T000000-30", old)
	arg := mk(runDirPrefix+"20200101T000000-4", old)
	open := mk(runDirPrefix+"20200101T000000-5", old)
	other := mk("other-run-1", old)
	target := t.TempDir()
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, runDirPrefix+"20200101T000000-6")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	background(t, filepath.Join(cwd, "pulsar"), nil, "sleep", "300")
	argument := "-Dsome.dir=" + filepath.Join(arg, "archive")
	argued := background(t, "", nil, "bash", "-c", `exec -a "$0" sleep 300`, argument)
	held := filepath.Join(open, "pulsar", "pulsar.log")
	holder := background(t, "", []string{"HELD=" + held}, "bash", "-c", `exec 3<"$HELD"; exec sleep 300`)
	// Until an exec is done, /proc/<pid>/cmdline can read empty (see startSleeper): wait
	// for sleep's own, and for the held file to be open.
	eventually.NoError(t, 5*time.Second, func() error {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", argued))
		if !strings.HasPrefix(string(cmdline), argument+"\x00300") {
			return fmt.Errorf("the arguments of sleep are not set yet: %q", cmdline)
		}
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", holder)); target != held {
			return fmt.Errorf("the holder has not opened %s yet: fd 3 is %q", held, target)
		}
		return nil
	})

	dir, err := NewRunDir()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), runDirPrefix) || !exists(t, dir) {
		t.Errorf("NewRunDir = %s, want a new %s… directory in %s", dir, runDirPrefix, tmp)
	}
	if exists(t, stale) {
		t.Errorf("%s, three days old and used by no process, was kept", stale)
	}
	for name, d := range map[string]string{
		"an hour old": recent, "a process's working directory": cwd, "in a process's arguments": arg,
		"a file open in a process": open,
		"not a run directory":      other, "a symbolic link": link, "the link's target": target,
	} {
		if !exists(t, d) {
			t.Errorf("%s (%s) was removed", d, name)
		}
	}
}

// background starts argv in dir ("": this one) with env added, in a process group of its
// own that is killed when the test ends, and returns its pid.
func background(t *testing.T, dir string, env []string, argv ...string) int {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd.Process.Pid
}
