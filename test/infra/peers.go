package infra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
)

// Environment variables that name running peers. `make test` and `make infra-up` set them;
// a developer can set them to reuse peers across test runs. Tests never stop such peers.
const (
	EnvAeronDir       = "FERRYTEST_AERON_DIR"                 // the media driver's directory
	EnvArchiveDir     = "FERRYTEST_ARCHIVE_DIR"               // the archive's catalog directory
	EnvArchiveControl = "FERRYTEST_ARCHIVE_CONTROL_CHANNEL"   // its UDP control request channel
	EnvArchiveStream  = "FERRYTEST_ARCHIVE_CONTROL_STREAM_ID" // its control stream id
	EnvPulsarURL      = "FERRYTEST_PULSAR_URL"                // pulsar://host:port
	EnvPulsarAdminURL = "FERRYTEST_PULSAR_ADMIN_URL"          // http://host:port
	// EnvKeepRun keeps a run directory (logs, data) even when every test passed.
	EnvKeepRun = "FERRYTEST_KEEP_RUN"
)

// WithoutPeerVariables returns environ (as [os.Environ] has it) without the variables above
// that name running peers: the environment of a process that must start peers of its own,
// as the demo test's `make demo` must. The others (EnvKeepRun, FERRYTEST_CACHE, …) stay.
func WithoutPeerVariables(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case EnvAeronDir, EnvArchiveDir, EnvArchiveControl, EnvArchiveStream, EnvPulsarURL, EnvPulsarAdminURL:
		default:
			env = append(env, kv)
		}
	}
	return env
}

// StartTimeout is how long [Shared] may wait for the peers it starts, each started once (a
// retry after its port was taken adds as much again): the archive's readiness, then the
// broker's readiness and health check, with their default bounds. Something that waits for
// peers started elsewhere, such as `make demo`'s, budgets from it.
const StartTimeout = archiveReadyTimeout + pulsarReadyTimeout + healthTimeout

// Need says which peers a test binary uses.
type Need struct {
	Archive bool
	Pulsar  bool
}

// Peers are the archive and broker a test binary shares. Either may be nil if not needed.
type Peers struct {
	Archive *Archive
	Pulsar  *Pulsar
	// RunDir holds the logs and data of the peers started here ("" if all were reused).
	RunDir string
}

// Shared returns the peers a test binary needs: each one named by the environment is
// reused, every other one is started in a fresh run directory under the system temp dir.
// Call [Peers.Close] when the tests are done, typically in TestMain.
func Shared(ctx context.Context, need Need) (*Peers, error) {
	p := &Peers{}
	if need.Archive {
		if a, ok, err := archiveFromEnv(); err != nil {
			return nil, err
		} else if ok {
			p.Archive = a
		}
	}
	if need.Pulsar {
		if url := os.Getenv(EnvPulsarURL); url != "" {
			admin := os.Getenv(EnvPulsarAdminURL)
			if admin == "" {
				return nil, fmt.Errorf("infra: %s is set but %s is not; set both to reuse a broker", EnvPulsarURL, EnvPulsarAdminURL)
			}
			p.Pulsar = &Pulsar{ServiceURL: url, AdminURL: admin}
		}
	}
	needArchive := need.Archive && p.Archive == nil
	needPulsar := need.Pulsar && p.Pulsar == nil
	if !needArchive && !needPulsar {
		return p, nil
	}
	dir, err := NewRunDir()
	if err != nil {
		return nil, err
	}
	p.RunDir = dir
	// A start interrupted (see ErrInterrupted) is no failure: no log tails, and the run
	// directory goes as on a clean stop.
	if needArchive {
		if p.Archive, err = StartArchive(ctx, ArchiveOptions{Dir: filepath.Join(dir, "archive")}); err != nil {
			_ = p.Close(!errors.Is(err, ErrInterrupted))
			return nil, err
		}
	}
	if needPulsar {
		if p.Pulsar, err = StartPulsar(ctx, PulsarOptions{Dir: filepath.Join(dir, "pulsar")}); err != nil {
			_ = p.Close(!errors.Is(err, ErrInterrupted))
			return nil, err
		}
	}
	return p, nil
}

func archiveFromEnv() (*Archive, bool, error) {
	dir := os.Getenv(EnvAeronDir)
	control := os.Getenv(EnvArchiveControl)
	if dir == "" && control == "" {
		return nil, false, nil
	}
	if dir == "" || control == "" {
		return nil, false, fmt.Errorf("infra: set both %s and %s to reuse an archive", EnvAeronDir, EnvArchiveControl)
	}
	stream := int64(DefaultControlStreamID)
	if s := os.Getenv(EnvArchiveStream); s != "" {
		var err error
		if stream, err = strconv.ParseInt(s, 10, 32); err != nil {
			return nil, false, fmt.Errorf("infra: %s=%q is not a stream id: %w", EnvArchiveStream, s, err)
		}
	}
	return &Archive{
		AeronDir:        dir,
		ArchiveDir:      os.Getenv(EnvArchiveDir),
		ControlChannel:  control,
		ControlStreamID: int32(stream),
		ID:              FixedArchiveID,
	}, true, nil
}

// Run directories: NewRunDir makes them under the system temp dir as runDirPrefix…; one
// left behind (a failed run's logs, everything of a run that crashed) is removed by a later
// NewRunDir once its last change is runDirMaxAge old, unless a process still uses it.
const (
	runDirPrefix = "ferry-run-"
	runDirMaxAge = 48 * time.Hour
)

// Media driver directories: StartArchive and EmbeddedArchiveProperties make them in shmDir
// as aeronDirPrefix…, and Archive.Stop or the caller removes them. One left behind (by a
// test binary's panic or timeout, a kill -9, a CI job's hard end) holds memory, /dev/shm
// being a tmpfs, until a later NewRunDir removes it: once it has had no driver heartbeat
// for aeronDirGrace, and was last changed that long ago (a directory just made has no
// heartbeat yet), unless a process still uses it.
const (
	shmDir         = "/dev/shm"
	aeronDirPrefix = "ferry-aeron-"
	aeronDirGrace  = 10 * time.Minute
)

// NewRunDir makes a fresh directory for one run's peers under the system temp dir. It first
// removes the run directories older than two days that no process uses (see
// [pruneRunDirs]) and the media driver directories in /dev/shm whose driver is gone and
// that no process uses (see [pruneAeronDirs]), and says so on stderr, as it says why it
// removed none if it could not tell.
func NewRunDir() (string, error) {
	parent := os.TempDir()
	removed, err := pruneRunDirs(parent, time.Now().Add(-runDirMaxAge))
	for _, dir := range removed {
		fmt.Fprintf(os.Stderr, "infra: removed %s, a run directory last changed more than %s ago\n", dir, runDirMaxAge)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "infra: %v\n", err)
	}
	removed, err = pruneAeronDirs(shmDir, time.Now().Add(-aeronDirGrace), driverAlive)
	for _, dir := range removed {
		fmt.Fprintf(os.Stderr, "infra: removed %s, a media driver directory whose driver is gone\n", dir)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "infra: %v\n", err)
	}
	dir, err := os.MkdirTemp(parent, runDirPrefix+time.Now().UTC().Format("20060102T150405")+"-")
	if err != nil {
		return "", fmt.Errorf("infra: run dir: %w", err)
	}
	return dir, nil
}

// pruneRunDirs removes the run directories in parent that this user owns, that were last
// changed (the directory's own mtime) before cutoff, and that no process uses (see
// [pruneUnused]). It returns the ones it removed.
func pruneRunDirs(parent string, cutoff time.Time) (removed []string, err error) {
	return pruneUnused(parent, runDirPrefix, fmt.Sprintf("run directories last changed over %s ago", runDirMaxAge),
		func(_ string, info fs.FileInfo) bool { return info.ModTime().Before(cutoff) })
}

// pruneAeronDirs removes the media driver directories in parent that this user owns, that
// were last changed before cutoff, whose driver alive does not report, and that no
// process uses (see [pruneUnused]): a driver maps its cnc.dat and log buffers, and so does
// each of its clients. It returns the ones it removed.
func pruneAeronDirs(parent string, cutoff time.Time, alive func(dir string) bool) (removed []string, err error) {
	return pruneUnused(parent, aeronDirPrefix, "media driver directories whose driver is gone",
		func(path string, info fs.FileInfo) bool { return info.ModTime().Before(cutoff) && !alive(path) })
}

// driverAlive reports whether dir's cnc.dat shows a media driver's heartbeat of the last
// aeronDirGrace. It maps the file for a moment, as a reader, not a client.
func driverAlive(dir string) bool {
	_, err := aeron.ProbeDriver(dir, aeronDirGrace)
	return err == nil
}

// pruneUnused removes the directories in parent named prefix… that this user owns, that
// stale reports as left behind, and that no process uses: none has its working directory,
// an open file, a file mapped into its memory or an argument in one. what describes them
// for an error. It returns the ones it removed. Best effort, and on the safe side: a
// directory it cannot tell about is left alone, and if it cannot tell what a process of this
// user uses, it removes none and says why in err.
func pruneUnused(parent, prefix, what string, stale func(path string, info fs.FileInfo) bool) (removed []string, err error) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, nil
	}
	type candidate struct{ path, real string }
	var old []candidate
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue // a symbolic link is not a directory here
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		path := filepath.Join(parent, e.Name())
		if !stale(path, info) {
			continue
		}
		// The kernel names what a process uses by its real path: parent (TMPDIR) may be
		// a symbolic link.
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			continue
		}
		old = append(old, candidate{path, real})
	}
	if len(old) == 0 {
		return nil, nil
	}
	used, err := pathsInUse()
	if err != nil {
		return nil, fmt.Errorf("%d %s in %s, none removed: %w", len(old), what, parent, err)
	}
	for _, dir := range old {
		inUse := false
		for p := range used {
			// An argument names a directory as it was given, perhaps through the link.
			if strings.Contains(p+"/", dir.real+"/") || strings.Contains(p+"/", dir.path+"/") {
				inUse = true
				break
			}
		}
		if !inUse && os.RemoveAll(dir.path) == nil {
			removed = append(removed, dir.path)
		}
	}
	return removed, nil
}

// procRoot is where pathsInUse reads the processes: /proc, but for tests.
var procRoot = "/proc"

// pathsInUse returns what the processes in procRoot refer to: their working directories,
// the files they hold open or have mapped into memory, and their arguments. Of another
// user's processes it gets what it may read (their arguments); of this user's it must get
// all, or it fails: one it may not read (made undumpable, as ssh-agent is, or running a
// set-user-ID program) may use anything of this user's. A process that exits meanwhile is
// skipped. It fails too if procRoot shows no process.
func pathsInUse() (map[string]bool, error) {
	procs, err := filepath.Glob(filepath.Join(procRoot, "[0-9]*"))
	if err != nil || len(procs) == 0 {
		return nil, fmt.Errorf("no process to be seen in %s", procRoot)
	}
	uid := strconv.Itoa(os.Getuid())
	paths := make(map[string]bool)
	for _, proc := range procs {
		mine, err := ranBy(proc, uid)
		if gone(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		err = procPaths(proc, paths)
		if err != nil && !gone(err) && mine {
			comm, _ := os.ReadFile(filepath.Join(proc, "comm"))
			return nil, fmt.Errorf("cannot tell what process %s (%s) of this user uses: %w",
				filepath.Base(proc), strings.TrimSpace(string(comm)), err)
		}
	}
	return paths, nil
}

// procPaths adds what proc (a directory of procRoot) refers to to paths. It returns the
// first error of a read, after it has read all it could.
func procPaths(proc string, paths map[string]bool) error {
	var errs []error
	if cmdline, err := os.ReadFile(filepath.Join(proc, "cmdline")); err == nil {
		for _, arg := range strings.Split(string(cmdline), "\x00") {
			paths[arg] = true
		}
	}
	if cwd, err := os.Readlink(filepath.Join(proc, "cwd")); err == nil {
		paths[cwd] = true
	} else {
		errs = append(errs, err)
	}
	fds, err := os.ReadDir(filepath.Join(proc, "fd"))
	errs = append(errs, err)
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(proc, "fd", fd.Name()))
		if err == nil {
			paths[target] = true
		} else if !gone(err) { // closed meanwhile
			errs = append(errs, err)
		}
	}
	// "address perms offset dev inode path": the path, if the mapping has one, is what
	// starts at the line's first '/'. A JVM maps a few thousand; most share a few files.
	maps, err := os.ReadFile(filepath.Join(proc, "maps"))
	errs = append(errs, err)
	for line := range strings.Lines(string(maps)) {
		if i := strings.IndexByte(line, '/'); i >= 0 {
			paths[strings.TrimSuffix(line[i:], "\n")] = true
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// ranBy reports whether proc (a directory of procRoot) is a process of uid's: one of its
// real, effective, saved and file-system user ids is.
func ranBy(proc, uid string) (bool, error) {
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		return false, err
	}
	for line := range strings.Lines(string(status)) {
		if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
			return slices.Contains(strings.Fields(ids), uid), nil
		}
	}
	return false, fmt.Errorf("%s/status has no Uid line", proc)
}

// gone reports whether err says a process has exited (or never was), which /proc reports
// as a missing file; a zombie's working directory is missing too.
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// Env returns the environment variables that let another process reuse these peers.
func (p *Peers) Env() []string {
	var env []string
	if a := p.Archive; a != nil {
		env = append(env,
			EnvAeronDir+"="+a.AeronDir,
			EnvArchiveDir+"="+a.ArchiveDir,
			EnvArchiveControl+"="+a.ControlChannel,
			EnvArchiveStream+"="+strconv.Itoa(int(a.ControlStreamID)))
	}
	if b := p.Pulsar; b != nil {
		env = append(env, EnvPulsarURL+"="+b.ServiceURL, EnvPulsarAdminURL+"="+b.AdminURL)
	}
	return env
}

// Close stops the peers started here (never reused ones). If failed, it prints the tail of
// each peer's log to stderr and keeps the run directory's logs and configuration but removes
// the peers' data (see [Peers.removeData]); otherwise the run directory is removed. With
// FERRYTEST_KEEP_RUN set, all of it is kept.
func (p *Peers) Close(failed bool) error {
	return p.close(os.Stderr, failed)
}

func (p *Peers) close(w io.Writer, failed bool) error {
	var errs []error
	if p.Pulsar != nil && p.Pulsar.proc != nil {
		if failed {
			fmt.Fprintf(w, "--- pulsar log tail (%s) ---\n%s\n", p.Pulsar.Log(), p.Pulsar.LogTail())
		}
		errs = append(errs, p.Pulsar.Stop())
	}
	if p.Archive != nil && p.Archive.proc != nil {
		if failed {
			fmt.Fprintf(w, "--- archive log tail (%s) ---\n%s\n", p.Archive.Log(), p.Archive.LogTail())
		}
		errs = append(errs, p.Archive.Stop())
	}
	if p.RunDir == "" {
		return errors.Join(errs...)
	}
	switch {
	case os.Getenv(EnvKeepRun) != "":
		fmt.Fprintf(w, "infra: logs and data kept in %s (%s is set)\n", p.RunDir, EnvKeepRun)
	case failed:
		removed, err := p.removeData()
		errs = append(errs, err)
		if len(removed) == 0 {
			fmt.Fprintf(w, "infra: logs and data kept in %s\n", p.RunDir)
			break
		}
		fmt.Fprintf(w, "infra: logs and configuration kept in %s; the peers' data removed (%s); "+
			"set %s=1 to keep it next time\n", p.RunDir, strings.Join(removed, ", "), EnvKeepRun)
	default:
		errs = append(errs, os.RemoveAll(p.RunDir))
	}
	return errors.Join(errs...)
}

// removeData removes the bulk of the stopped peers' data, most of a run directory's size,
// and returns what it removed, relative to the run directory: the broker's data
// directory (its bookie's journal and ledgers, its metadata store) and the native libraries
// it unpacked, and the archive's recording segments (*.rec). What a person reads after a
// failure stays: the logs, the broker's configuration, the archive's catalog and mark file.
func (p *Peers) removeData() ([]string, error) {
	var paths []string
	if b := p.Pulsar; b != nil && b.proc != nil {
		paths = append(paths, b.data, filepath.Join(b.opts.Dir, "tmp"))
	}
	if a := p.Archive; a != nil && a.proc != nil {
		segments, err := filepath.Glob(filepath.Join(a.ArchiveDir, "*.rec"))
		if err != nil {
			return nil, err
		}
		paths = append(paths, segments...)
	}
	var removed []string
	var errs []error
	segments := 0
	for _, path := range paths {
		if _, err := os.Lstat(path); err != nil {
			continue // never made
		}
		if err := os.RemoveAll(path); err != nil {
			errs = append(errs, err)
			continue
		}
		if strings.HasSuffix(path, ".rec") {
			segments++
			continue
		}
		rel, err := filepath.Rel(p.RunDir, path)
		if err != nil {
			rel = path
		}
		removed = append(removed, rel)
	}
	if segments > 0 {
		rel, err := filepath.Rel(p.RunDir, p.Archive.ArchiveDir)
		if err != nil {
			rel = p.Archive.ArchiveDir
		}
		removed = append(removed, fmt.Sprintf("%d recording segments in %s", segments, rel))
	}
	return removed, errors.Join(errs...)
}
