package infra

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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

// NewRunDir makes a fresh directory for one run's peers under the system temp dir.
func NewRunDir() (string, error) {
	dir, err := os.MkdirTemp("", "ferry-run-"+time.Now().UTC().Format("20060102T150405")+"-")
	if err != nil {
		return "", fmt.Errorf("infra: run dir: %w", err)
	}
	return dir, nil
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
// each peer's log to stderr and keeps the run directory; otherwise the run directory is
// removed unless FERRYTEST_KEEP_RUN is set.
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
	if p.RunDir != "" {
		if failed || os.Getenv(EnvKeepRun) != "" {
			fmt.Fprintf(w, "infra: logs and data kept in %s\n", p.RunDir)
		} else {
			errs = append(errs, os.RemoveAll(p.RunDir))
		}
	}
	return errors.Join(errs...)
}
