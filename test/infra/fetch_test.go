package infra

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// These tests run fetch.sh against made-up java, mvn, gcc and apt-get: nothing is
// downloaded or installed, and the real cache and ~/.m2 are not touched.

// fakeMvn stands for `mvn … dependency:copy -Dartifact=… -DoutputDirectory=…` as Maven does
// it: it "downloads" an artifact into the local repository ($HOME/.m2/repository) unless it
// is there already, and copies it from there. The Pulsar tarball it downloads is
// $FAKE_PULSAR (the aeron jar is made up). Each command line is appended to $MVN_LOG, and
// $FAKE_MVN_BEFORE_COPY, if set, is run before the copy.
const fakeMvn = `#!/usr/bin/env bash
set -eu
echo "$*" >>"$MVN_LOG"
for arg; do
  case $arg in
    -Dartifact=*) artifact=${arg#-Dartifact=} ;;
    -DoutputDirectory=*) out=${arg#-DoutputDirectory=} ;;
  esac
done
IFS=: read -r group id version type classifier <<<"$artifact"
file=$id-$version${classifier:+-$classifier}.${type:-jar}
local=$HOME/.m2/repository/${group//.//}/$id/$version
if [ ! -e "$local/$file" ]; then
  mkdir -p "$local"
  case $id in
    pulsar-server-distribution) cp "$FAKE_PULSAR" "$local/$file" ;;
    *) echo jar >"$local/$file" ;;
  esac
fi
eval "${FAKE_MVN_BEFORE_COPY:-}"
cp "$local/$file" "$out/$file"
`

// fetchEnv is a made-up machine for fetch.sh: a home, a cache, and a PATH whose java, mvn,
// gcc and apt-get are fakes (apt-get fails: fetch.sh must install nothing here).
type fetchEnv struct {
	home, cache, mvnLog, tmp string
	env                      []string
}

func newFetchEnv(t *testing.T) *fetchEnv {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	f := &fetchEnv{
		home: filepath.Join(dir, "home"), cache: filepath.Join(dir, "cache"),
		mvnLog: filepath.Join(dir, "mvn.log"), tmp: filepath.Join(dir, "tmp"),
	}
	for name, script := range map[string]string{
		"java":    "#!/bin/sh\necho '    java.specification.version = 17' >&2\n",
		"mvn":     fakeMvn,
		"gcc":     "#!/bin/sh\n",
		"apt-get": "#!/bin/sh\necho 'apt-get: not here' >&2\nexit 100\n",
	} {
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{f.home, f.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f.env = []string{
		"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + f.home, "FERRYTEST_CACHE=" + f.cache,
		"MVN_LOG=" + f.mvnLog, "TMPDIR=" + f.tmp, "LC_ALL=C",
	}
	return f
}

// run runs fetch.sh with extra variables and returns its output and error.
func (f *fetchEnv) run(t *testing.T, extra ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("bash", "fetch.sh")
	cmd.Env = append(f.env, extra...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// fetchRun is a fetch.sh started in the background. Its err is set once done is closed.
type fetchRun struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

// start starts fetch.sh with extra variables in a process group of its own, as a shell
// starts a foreground job. The process group is killed when the test ends.
func (f *fetchEnv) start(t *testing.T, extra ...string) *fetchRun {
	t.Helper()
	r := &fetchRun{cmd: exec.Command("bash", "fetch.sh"), out: &syncBuffer{}, done: make(chan struct{})}
	r.cmd.Env = append(f.env, extra...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
	})
	return r
}

// wait waits up to timeout for the fetch to end and returns how it ended, failing the test
// if it still runs.
func (r *fetchRun) wait(t *testing.T, timeout time.Duration, after string) error {
	t.Helper()
	select {
	case <-r.done:
		return r.err
	case <-time.After(timeout):
		t.Fatalf("fetch.sh still runs %s after %s:\n%s", timeout, after, r.out)
		return nil
	}
}

// cached puts what fetch.sh fetches into the cache, as a finished fetch leaves it.
func (f *fetchEnv) cached(t *testing.T) {
	t.Helper()
	v := PinnedVersions()
	pulsar := filepath.Join(f.cache, "apache-pulsar-"+v.Pulsar, "bin", "pulsar")
	if err := os.MkdirAll(filepath.Dir(pulsar), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pulsar, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.cache, "aeron-all-"+v.Aeron+".jar"), []byte("jar"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// leftovers are the temporary files and directories of fetches in the cache and the temp dir.
func (f *fetchEnv) leftovers(t *testing.T) []string {
	t.Helper()
	var left []string
	for _, pattern := range []string{filepath.Join(f.cache, "copy.*"), filepath.Join(f.cache, "unpack.*"), filepath.Join(f.tmp, "*")} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		left = append(left, m...)
	}
	return left
}

// syncBuffer is a bytes.Buffer safe for concurrent use: a process writes, the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// pulsarTarball writes a Pulsar distribution tarball holding bin/pulsar to path.
func pulsarTarball(t *testing.T, path string) {
	t.Helper()
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	gz := gzip.NewWriter(file)
	tw := tar.NewWriter(gz)
	script := []byte("#!/bin/sh\n")
	if err := tw.WriteHeader(&tar.Header{Name: "apache-pulsar-" + PinnedVersions().Pulsar + "/bin/pulsar", Mode: 0o755, Size: int64(len(script))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(script); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
}

// A corrupt Pulsar download does not stay stuck: Maven's copy in its local repository is
// removed with the cache's, so the next run downloads it anew rather than copy the same
// bytes again (Maven does not check what its local repository holds). Maven runs with
// strict checksums, so that a download whose checksum does not match fails rather than
// being kept.
func TestACorruptPulsarDownloadIsFetchedAnewOnTheNextRun(t *testing.T) {
	f := newFetchEnv(t)
	dir := t.TempDir()
	corrupt, good := filepath.Join(dir, "corrupt.tar.gz"), filepath.Join(dir, "good.tar.gz")
	if err := os.WriteFile(corrupt, []byte("half a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	pulsarTarball(t, good)
	v := PinnedVersions().Pulsar
	m2Copy := filepath.Join(f.home, ".m2", "repository", "org", "apache", "pulsar", "pulsar-server-distribution", v)

	out, err := f.run(t, "FAKE_PULSAR="+corrupt)
	if err == nil {
		t.Fatalf("fetch.sh with a corrupt tarball succeeded:\n%s", out)
	}
	if !strings.Contains(out, "Removed it and Maven's copy, "+m2Copy) {
		t.Errorf("fetch.sh does not say it removed Maven's copy %s:\n%s", m2Copy, out)
	}
	if exists(t, m2Copy) {
		t.Errorf("Maven's copy of the corrupt tarball is still in %s", m2Copy)
	}

	// Maven Central serves the right bytes this time.
	if out, err := f.run(t, "FAKE_PULSAR="+good); err != nil {
		t.Fatalf("fetch.sh after a corrupt download: %v\n%s", err, out)
	}
	if !exists(t, filepath.Join(f.cache, "apache-pulsar-"+v, "bin", "pulsar")) {
		t.Errorf("Pulsar was not unpacked into the cache on the second run")
	}
	log, err := os.ReadFile(f.mvnLog)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(log)) {
		if !strings.Contains(" "+line, " -C ") {
			t.Errorf("mvn ran without strict checksums (-C): %s", line)
		}
	}
}

// A Ctrl-C while Maven copies the Pulsar tarball (some 250 MB) ends the fetch at once and
// leaves nothing of it: not the half-made copy in the cache, nor Maven's log.
func TestACtrlCDuringAFetchLeavesNothingBehind(t *testing.T) {
	f := newFetchEnv(t)
	ready := filepath.Join(t.TempDir(), "ready")
	// The aeron jar is copied; Maven then hangs in the Pulsar tarball's copy, half done: the
	// fake mvn writes its pid and becomes a sleep. The Ctrl-C waits until it has: a bash that
	// gets SIGINT while it starts a command may run that command all the same (in the time
	// between fork and exec its own handler has the signal), and a sleep that missed the
	// Ctrl-C is a fetch that waits 300 s for Maven however fetch.sh handles it.
	hang := `if [ "$id" = pulsar-server-distribution ]; then echo half >"$out/$file"; echo $$ >"$READY.tmp"; mv "$READY.tmp" "$READY"; exec sleep 300; fi`
	r := f.start(t, "FAKE_PULSAR=/dev/null", "READY="+ready, "FAKE_MVN_BEFORE_COPY="+hang)
	eventually.NoError(t, 10*time.Second, func() error {
		pid, err := os.ReadFile(ready)
		if err != nil {
			return fmt.Errorf("Maven has not begun the Pulsar tarball's copy: %w", err)
		}
		comm, err := os.ReadFile(filepath.Join("/proc", strings.TrimSpace(string(pid)), "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "sleep" {
			return fmt.Errorf("Maven (pid %s) is not yet hanging in its copy (%q, %v)", strings.TrimSpace(string(pid)), comm, err)
		}
		return nil
	})
	if left := f.leftovers(t); len(left) == 0 {
		t.Fatal("the fetch has made no temporary file: this test tests nothing")
	}
	// Ctrl-C: SIGINT to the foreground process group.
	if err := syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := r.wait(t, 10*time.Second, "Ctrl-C (it waits for Maven)")
	if exit := (*exec.ExitError)(nil); !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("fetch.sh ended with %v on Ctrl-C, want exit status 130:\n%s", err, r.out)
	}
	if left := f.leftovers(t); len(left) > 0 {
		t.Errorf("a fetch ended by Ctrl-C left %v", left)
	}
	if !exists(t, filepath.Join(f.cache, "aeron-all-"+PinnedVersions().Aeron+".jar")) {
		t.Errorf("the aeron jar fetched before the Ctrl-C was not kept")
	}
}

// The copy.* and unpack.* directories a fetch killed outright left in the cache are removed
// by the next fetch; while another fetch runs, the next waits for it rather than remove its
// directories, and then finds what it fetched.
func TestAFetchRemovesWhatAKilledOneLeftAndWaitsForARunningOne(t *testing.T) {
	f := newFetchEnv(t)
	f.cached(t)
	var left []string
	for _, name := range []string{"copy.aB3dE9", "unpack.Xy7kQ2"} {
		dir := filepath.Join(f.cache, name)
		if err := os.MkdirAll(filepath.Join(dir, "apache-pulsar"), 0o755); err != nil {
			t.Fatal(err)
		}
		left = append(left, dir)
	}
	// Another fetch holds the lock: one process, whose end releases it.
	holder := exec.Command("bash", "-c", `exec 9>"$1"; flock 9; exec sleep 300`, "bash", filepath.Join(f.cache, ".fetch.lock"))
	holder.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	eventually.NoError(t, 5*time.Second, func() error {
		if err := exec.Command("flock", "-n", filepath.Join(f.cache, ".fetch.lock"), "true").Run(); err == nil {
			return errors.New("the other fetch has not taken the lock yet")
		}
		return nil
	})
	r := f.start(t)
	eventually.NoError(t, 10*time.Second, func() error {
		if !strings.Contains(r.out.String(), "waiting for another fetch") {
			return fmt.Errorf("fetch.sh does not say it waits:\n%s", r.out)
		}
		return nil
	})
	for _, dir := range left {
		if !exists(t, dir) {
			t.Errorf("%s was removed while the fetch that may be filling it runs", dir)
		}
	}
	_ = holder.Process.Kill() // the other fetch ends; here, killed outright
	if err := r.wait(t, 10*time.Second, "the other fetch ended"); err != nil {
		t.Fatalf("fetch.sh: %v\n%s", err, r.out)
	}
	for _, dir := range left {
		if exists(t, dir) {
			t.Errorf("%s, left by a fetch that was killed, is still there:\n%s", dir, r.out)
		}
		if !strings.Contains(r.out.String(), "removed the leftover of an interrupted fetch: "+dir) {
			t.Errorf("fetch.sh does not say it removed %s:\n%s", dir, r.out)
		}
	}
}
