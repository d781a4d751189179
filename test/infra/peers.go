package infra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
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
	if needArchive {
		if p.Archive, err = StartArchive(ctx, ArchiveOptions{Dir: filepath.Join(dir, "archive")}); err != nil {
			p.Close(true)
			return nil, err
		}
	}
	if needPulsar {
		if p.Pulsar, err = StartPulsar(ctx, PulsarOptions{Dir: filepath.Join(dir, "pulsar")}); err != nil {
			p.Close(true)
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

// NewRunDir makes a fresh directory for one run's peers under the system temp dir. It first
// removes the run directories older than two days that no process uses (see
// [pruneRunDirs]), and says so on stderr.
func NewRunDir() (string, error) {
	parent := os.TempDir()
	for _, dir := range pruneRunDirs(parent, time.Now().Add(-runDirMaxAge)) {
		fmt.Fprintf(os.Stderr, "infra: removed %s, a run directory last changed more than %s ago\n", dir, runDirMaxAge)
	}
	dir, err := os.MkdirTemp(parent, runDirPrefix+time.Now().UTC().Format("20060102T150405")+"-")
	if err != nil {
		return "", fmt.Errorf("infra: run dir: %w", err)
	}
	return dir, nil
}

// pruneRunDirs removes the run directories in parent that this user owns, that were last
// changed (the directory's own mtime) before cutoff, and that no process uses: none has its
// working directory, an open file or an argument in one. It returns the ones it removed.
// Best effort, and on the safe side: a directory it cannot tell about is left alone.
func pruneRunDirs(parent string, cutoff time.Time) []string {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil
	}
	var old []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runDirPrefix) {
			continue // a symbolic link is not a directory here
		}
		info, err := e.Info()
		if err != nil || !info.ModTime().Before(cutoff) {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		old = append(old, filepath.Join(parent, e.Name()))
	}
	if len(old) == 0 {
		return nil
	}
	used, ok := pathsInUse()
	if !ok {
		return nil
	}
	var removed []string
	for _, dir := range old {
		if !slices.ContainsFunc(used, func(p string) bool { return strings.Contains(p+"/", dir+"/") }) &&
			os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// pathsInUse returns what the processes this user can see refer to: their working
// directories, the files they hold open and their arguments. ok is false if /proc cannot
// be read.
func pathsInUse() (paths []string, ok bool) {
	procs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil || len(procs) == 0 {
		return nil, false
	}
	for _, proc := range procs {
		if cwd, err := os.Readlink(proc + "/cwd"); err == nil {
			paths = append(paths, cwd)
		}
		if cmdline, err := os.ReadFile(proc + "/cmdline"); err == nil {
			paths = append(paths, strings.Split(string(cmdline), "\x00")...)
		}
		fds, _ := os.ReadDir(proc + "/fd")
		for _, fd := range fds {
			if target, err := os.Readlink(proc + "/fd/" + fd.Name()); err == nil {
				paths = append(paths, target)
			}
		}
	}
	return paths, true
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
