package infra

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
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
// a process still uses (its working directory, an open file, a file mapped into its memory,
// an argument): a detached `peers up` may run for days. Other directories and symbolic
// links are left alone. The same when TMPDIR is a symbolic link: the kernel names what a
// process uses by its real path.
//
// The processes looked at are this test's ("the test's processes": a /proc of their own
// entries) or all of /proc: in a container whose init, say, this user may not read, nothing
// is pruned (TestNothingIsPrunedWhenAProcessOfThisUserCannotBeRead), and that case is
// skipped.
func TestNewRunDirRemovesOldRunDirsNoProcessUses(t *testing.T) {
	for _, all := range []bool{false, true} {
		procs := "the test's processes"
		if all {
			procs = "all of /proc"
		}
		t.Run("TMPDIR a directory, "+procs, func(t *testing.T) { testPruning(t, t.TempDir(), all) })
		t.Run("TMPDIR a symbolic link, "+procs, func(t *testing.T) {
			tmp := filepath.Join(t.TempDir(), "tmp")
			if err := os.Symlink(t.TempDir(), tmp); err != nil {
				t.Fatal(err)
			}
			testPruning(t, tmp, all)
		})
	}
}

func testPruning(t *testing.T, tmp string, allProcs bool) {
	if allProcs {
		if _, err := pathsInUse(); err != nil {
			t.Skipf("pruning is off here: %v", err)
		}
	}
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
	realPath := func(path string) string {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			t.Fatal(err)
		}
		return real
	}
	stale := mk(runDirPrefix+"20200101T000000-3", old) // a prefix of cwd's name: not in use for that
	recent := mk(runDirPrefix+"20200101T000000-2", time.Now().Add(-time.Hour))
	cwd := mk(runDirPrefix+"20200101T000000-30", old)
	arg := mk(runDirPrefix+"20200101T000000-4", old)
	realArg := mk(runDirPrefix+"20200101T000000-7", old)
	open := mk(runDirPrefix+"20200101T000000-5", old)
	mapped := mk(runDirPrefix+"20200101T000000-8", old)
	other := mk("other-run-1", old)
	target := t.TempDir()
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, runDirPrefix+"20200101T000000-6")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	cwdUser := background(t, filepath.Join(cwd, "pulsar"), nil, "sleep", "300")
	argument := "-Dsome.dir=" + filepath.Join(arg, "archive")
	argued := background(t, "", nil, "bash", "-c", `exec -a "$0" sleep 300`, argument)
	realArgument := "-Dother.dir=" + filepath.Join(realPath(realArg), "archive")
	realArgued := background(t, "", nil, "bash", "-c", `exec -a "$0" sleep 300`, realArgument)
	held := filepath.Join(open, "pulsar", "pulsar.log")
	holder := background(t, "", []string{"HELD=" + held}, "bash", "-c", `exec 3<"$HELD"; exec sleep 300`)
	// A file mapped into this process's memory, its descriptor closed: Aeron maps its
	// files so.
	mapFile(t, filepath.Join(mapped, "pulsar", "pulsar.log"))
	// Until an exec is done, /proc/<pid>/cmdline can read empty (see startSleeper): wait
	// for sleep's own, and for the held file to be open.
	eventually.NoError(t, 5*time.Second, func() error {
		for pid, arg := range map[int]string{argued: argument, realArgued: realArgument} {
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if !strings.HasPrefix(string(cmdline), arg+"\x00300") {
				return fmt.Errorf("the arguments of sleep are not set yet: %q", cmdline)
			}
		}
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", holder)); target != realPath(held) {
			return fmt.Errorf("the holder has not opened %s yet: fd 3 is %q", held, target)
		}
		return nil
	})

	if !allProcs {
		onlyProcs(t, os.Getpid(), cwdUser, argued, realArgued, holder)
	}

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
		"in a process's arguments by its real path": realArg, "a file open in a process": open,
		"a file mapped into a process's memory": mapped,
		"not a run directory":                   other, "a symbolic link": link, "the link's target": target,
	} {
		if !exists(t, d) {
			t.Errorf("%s (%s) was removed", d, name)
		}
	}
}

// onlyProcs has pathsInUse look at the processes pids only, until the test ends: their
// entries of /proc, in a directory of its own.
func onlyProcs(t *testing.T, pids ...int) {
	t.Helper()
	root := t.TempDir()
	for _, pid := range pids {
		if err := os.Symlink(fmt.Sprintf("/proc/%d", pid), filepath.Join(root, strconv.Itoa(pid))); err != nil {
			t.Fatal(err)
		}
	}
	was := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = was })
}

// Pruning removes nothing, and says why, if a process of this user's cannot be read in full
// (its working directory, its open files, its memory mappings): it might use any run
// directory. One of another user's, or one that has exited, does not stop it. The
// processes are made up: a process this user may not read takes another user, or an
// undumpable one while this test runs as root.
func TestNothingIsPrunedWhenAProcessOfThisUserCannotBeRead(t *testing.T) {
	me := os.Getuid()
	for _, tc := range []struct {
		name       string
		uid        int
		unreadable string // "cwd", "fd" or "maps", or none
		pruned     bool
	}{
		{name: "all of it read", uid: me, pruned: true},
		{name: "its working directory unread", uid: me, unreadable: "cwd"},
		{name: "its open files unread", uid: me, unreadable: "fd"},
		{name: "its memory mappings unread", uid: me, unreadable: "maps"},
		{name: "another user's", uid: me + 1, unreadable: "fd", pruned: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			old := time.Now().Add(-3 * 24 * time.Hour)
			stale := filepath.Join(tmp, runDirPrefix+"20200101T000000-1")
			if err := os.Mkdir(stale, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(stale, old, old); err != nil {
				t.Fatal(err)
			}
			root := t.TempDir()
			fakeProc(t, root, 4242, tc.uid, tc.unreadable)
			fakeProc(t, root, 4243, me, "") // another of this user's, read in full
			// Exited between the listing of /proc and the reading of its entries.
			if err := os.Mkdir(filepath.Join(root, "4244"), 0o755); err != nil {
				t.Fatal(err)
			}
			was := procRoot
			procRoot = root
			t.Cleanup(func() { procRoot = was })

			removed, err := pruneRunDirs(tmp, time.Now().Add(-runDirMaxAge))
			if tc.pruned {
				if err != nil || len(removed) != 1 || removed[0] != stale {
					t.Errorf("pruneRunDirs = %v, %v; want %s removed", removed, err, stale)
				}
				return
			}
			if len(removed) != 0 || !exists(t, stale) {
				t.Errorf("pruneRunDirs removed %v", removed)
			}
			if err == nil || !strings.Contains(err.Error(), "process 4242 (made-up)") {
				t.Errorf("pruneRunDirs err = %v, want one naming process 4242 (made-up)", err)
			}
		})
	}
}

// fakeProc makes pid's entries in root, a made-up /proc, for a process of uid whose
// working directory is / and that has nothing open nor mapped. The entry unreadable (if
// not "") cannot be read: it is not of the kind /proc has (a file for fd, for instance),
// since root may read a mode-0 directory.
func fakeProc(t *testing.T, root string, pid, uid int, unreadable string) {
	t.Helper()
	dir := filepath.Join(root, strconv.Itoa(pid))
	if err := os.MkdirAll(filepath.Join(dir, "fd"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"status":  fmt.Sprintf("Name:\tmade-up\nUid:\t%d\t%d\t%d\t%d\n", uid, uid, uid, uid),
		"comm":    "made-up\n",
		"cmdline": "made-up\x00",
		"maps":    "",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/", filepath.Join(dir, "cwd")); err != nil {
		t.Fatal(err)
	}
	switch unreadable {
	case "":
		return
	case "cwd", "fd":
		// cwd: not a symbolic link; fd: not a directory.
		if err := os.RemoveAll(filepath.Join(dir, unreadable)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, unreadable), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	case "maps": // a directory, not a file
		if err := os.Remove(filepath.Join(dir, "maps")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "maps"), 0o755); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no such entry to make unreadable: %s", unreadable)
	}
}

// mapFile maps path into this process's memory until the test ends, and closes the file.
func mapFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, int(info.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
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

// A media driver directory in /dev/shm (here a temp dir standing for it) that a test
// binary's panic, a kill -9 or a CI job's hard end left behind is removed once its driver
// is gone and no process uses it. One whose driver has a heartbeat, one made within the
// grace period (its driver not started yet), one a process still has a file of open or
// mapped, or an argument naming it, is left alone; so are other directories and links.
// "live" stands for a driver with a heartbeat; the others are probed for real.
func TestMediaDriverDirsWhoseDriverIsGoneAndNoProcessUsesAreRemoved(t *testing.T) {
	shm := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, mtime time.Time, cnc []byte) string {
		dir := filepath.Join(shm, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if cnc != nil {
			if err := os.WriteFile(filepath.Join(dir, "cnc.dat"), cnc, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(dir, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	noCnC := mk(aeronDirPrefix+"1", old, nil)
	badCnC := mk(aeronDirPrefix+"embedded-2", old, make([]byte, 4096)) // a driver killed as it began
	live := mk(aeronDirPrefix+"3-live", old, nil)
	fresh := mk(aeronDirPrefix+"4", time.Now(), nil)
	mapped := mk(aeronDirPrefix+"5", old, []byte("mapped by a client"))
	open := mk(aeronDirPrefix+"6", old, []byte("held open"))
	argued := mk(aeronDirPrefix+"7", old, nil)
	other := mk("other-aeron-8", old, nil)
	target := t.TempDir()
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(shm, aeronDirPrefix+"9")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}

	mapFile(t, filepath.Join(mapped, "cnc.dat"))
	held := filepath.Join(open, "cnc.dat")
	realHeld, err := filepath.EvalSymlinks(held) // the kernel's name for it
	if err != nil {
		t.Fatal(err)
	}
	holder := background(t, "", []string{"HELD=" + held}, "bash", "-c", `exec 3<"$HELD"; exec sleep 300`)
	argument := "-Daeron.dir=" + argued
	arguer := background(t, "", nil, "bash", "-c", `exec -a "$0" sleep 300`, argument)
	eventually.NoError(t, 5*time.Second, func() error {
		if cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", arguer)); !strings.HasPrefix(string(cmdline), argument+"\x00") {
			return fmt.Errorf("the arguments of sleep are not set yet: %q", cmdline)
		}
		if fd, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/3", holder)); fd != realHeld {
			return fmt.Errorf("the holder has not opened %s yet: fd 3 is %q", held, fd)
		}
		return nil
	})
	onlyProcs(t, os.Getpid(), holder, arguer)

	alive := func(dir string) bool { return strings.HasSuffix(dir, "-live") || driverAlive(dir) }
	removed, err := pruneAeronDirs(shm, time.Now().Add(-aeronDirGrace), alive)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	if want := []string{noCnC, badCnC}; !slices.Equal(removed, want) {
		t.Errorf("pruneAeronDirs removed %v, want %v", removed, want)
	}
	for name, d := range map[string]string{
		"without cnc.dat": noCnC, "with a cnc.dat no driver wrote": badCnC,
	} {
		if exists(t, d) {
			t.Errorf("%s (%s, an hour old, no driver, used by no process) was kept", d, name)
		}
	}
	for name, d := range map[string]string{
		"a live driver's": live, "just made": fresh, "its cnc.dat mapped by a process": mapped,
		"its cnc.dat open in a process": open, "in a process's arguments": argued,
		"not a media driver directory": other, "a symbolic link": link, "the link's target": target,
	} {
		if !exists(t, d) {
			t.Errorf("%s (%s) was removed", d, name)
		}
	}
}
