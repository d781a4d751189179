package infra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ArchiveOptions configure a Java ArchivingMediaDriver (media driver and archive in one JVM).
type ArchiveOptions struct {
	// Dir is the archive's own directory: its recordings (Dir/archive) and its log. Restarting
	// on the same Dir keeps the recordings.
	Dir string
	// AeronDir is the media driver's directory (cnc.dat, log buffers). Zero means a fresh
	// directory under /dev/shm named after Dir.
	AeronDir string
	// Properties are Java system properties added after the defaults (see ArchiveProperties)
	// and winning over them, e.g. {"aeron.client.liveness.timeout": "2s"}.
	Properties map[string]string
	// Detached leaves the archive running after this process exits (cmd/peers up).
	Detached bool
	// ReadyTimeout bounds the wait for readiness; zero means one minute (archiveReadyTimeout).
	ReadyTimeout time.Duration
}

// Archive is a real Java Aeron ArchivingMediaDriver started by this package, or one named by
// the environment (then it is not owned: Stop, Kill and Restart refuse).
type Archive struct {
	AeronDir   string // the media driver's directory: clients map AeronDir/cnc.dat
	ArchiveDir string // the archive's catalog and segment files (for ArchiveTool)
	// ControlChannel is the archive's UDP control request channel, on a loopback port of its
	// own; the IPC control channel [LocalControlChannel] is always on as well.
	ControlChannel  string
	ControlStreamID int32
	// ID is the fixed archive id; it appears in the keys of the archive's counters.
	ID int64
	// StartupTime is how long the last start took until the archive was ready.
	StartupTime time.Duration

	opts ArchiveOptions
	log  string
	proc *process
}

// Archive control constants ferry's tests rely on.
const (
	// LocalControlChannel is the archive's always-on IPC control request channel.
	LocalControlChannel = "aeron:ipc?term-length=64k"
	// DefaultControlStreamID is the stream id of both control request channels.
	DefaultControlStreamID = 10
	// FixedArchiveID makes the archive's counter keys the same on every run.
	FixedArchiveID = 1
)

// ArchiveProperties are the system properties every test archive gets: an
// ArchivingMediaDriver on aeronDir, recording into archiveDir, taking control requests on
// control as well as on LocalControlChannel. A Java sample that embeds its own archive gets
// them too where it is measured beside ours. Why each one:
//   - SHARED threading for driver and archive: one thread each fits a 2-core machine;
//   - small sparse terms (1 MiB; tests set smaller ones per channel with term-length);
//   - the archive id fixed, so its counters have the same keys on every run;
//   - a UDP control channel on a loopback port of its own beside the always-on IPC one,
//     and the replication channel the archive requires even though tests do not replicate;
//   - spies simulate a connection, so a UDP publication recorded locally (a spy) with no
//     network receiver still counts as connected;
//   - no fsync (a kill -9 of the archive keeps what reached the page cache; power loss is
//     out of scope for these tests).
func ArchiveProperties(aeronDir, archiveDir, control string) map[string]string {
	return map[string]string{
		"aeron.dir":                           aeronDir,
		"aeron.dir.delete.on.start":           "true",
		"aeron.dir.delete.on.shutdown":        "true",
		"aeron.threading.mode":                "SHARED",
		"aeron.term.buffer.length":            "1m",
		"aeron.ipc.term.buffer.length":        "1m",
		"aeron.term.buffer.sparse.file":       "true",
		"aeron.spies.simulate.connection":     "true",
		"aeron.archive.dir":                   archiveDir,
		"aeron.archive.threading.mode":        "SHARED",
		"aeron.archive.id":                    strconv.Itoa(FixedArchiveID),
		"aeron.archive.control.channel":       control,
		"aeron.archive.control.stream.id":     strconv.Itoa(DefaultControlStreamID),
		"aeron.archive.local.control.channel": LocalControlChannel,
		"aeron.archive.replication.channel":   "aeron:udp?endpoint=" + Loopback + ":0",
		"aeron.archive.file.sync.level":       "0",
		"java.net.preferIPv4Stack":            "true",
	}
}

// StartArchive starts an ArchivingMediaDriver and waits until the media driver is alive and
// the archive accepts control requests. On failure it is stopped and the error carries the
// tail of its log.
func StartArchive(ctx context.Context, opts ArchiveOptions) (*Archive, error) {
	if _, err := AeronJar(); err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		return nil, errors.New("infra: ArchiveOptions.Dir is required")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("infra: archive dir: %w", err)
	}
	if opts.AeronDir == "" {
		// Unique, whatever Dir is called: two drivers on one directory would each take
		// the other's clients. The driver deletes and recreates it on start.
		dir, err := os.MkdirTemp(shmDir, aeronDirPrefix)
		if err != nil {
			return nil, fmt.Errorf("infra: aeron dir: %w", err)
		}
		opts.AeronDir = dir
	}
	a := &Archive{
		AeronDir:        opts.AeronDir,
		ArchiveDir:      filepath.Join(opts.Dir, "archive"),
		ControlStreamID: DefaultControlStreamID,
		ID:              FixedArchiveID,
		opts:            opts,
		log:             filepath.Join(opts.Dir, "archive.log"),
	}
	for attempt := 1; ; attempt++ {
		port, err := pickUDPPort()
		if err != nil {
			return nil, err
		}
		a.ControlChannel = fmt.Sprintf("aeron:udp?endpoint=%s:%d", Loopback, port)
		mark, _ := os.Stat(a.log)
		err = a.start(ctx)
		if err == nil {
			return a, nil
		}
		if attempt == startAttempts || errors.Is(err, ErrInterrupted) || !strings.Contains(logSince(a.log, mark), addressInUse) {
			// The dir lives in memory: do not leave it behind.
			return nil, errors.Join(err, os.RemoveAll(a.AeronDir))
		}
		// The failed attempt's mark file still looks active and would refuse the next
		// start; this archive never became ready, so there is nothing in it to keep.
		if rmErr := os.RemoveAll(a.ArchiveDir); rmErr != nil {
			return nil, errors.Join(err, rmErr, os.RemoveAll(a.AeronDir))
		}
	}
}

func (a *Archive) start(ctx context.Context) error {
	jar, err := AeronJar()
	if err != nil {
		return err
	}
	began := time.Now()
	props := ArchiveProperties(a.AeronDir, a.ArchiveDir, a.ControlChannel)
	for k, v := range a.opts.Properties {
		props[k] = v
	}
	argv := append([]string{"java"}, javaFlags(props)...)
	argv = append(argv, "-cp", jar, "io.aeron.archive.ArchivingMediaDriver")
	proc, err := startProcess("archive", argv, nil, a.opts.Dir, a.log, nil, a.opts.Detached)
	if err != nil {
		return err
	}
	a.proc = proc
	timeout := a.opts.ReadyTimeout
	if timeout == 0 {
		timeout = archiveReadyTimeout
	}
	if err := a.waitReady(ctx, timeout); err != nil {
		_ = proc.kill()
		return withLogTail(err, a.log)
	}
	a.StartupTime = time.Since(began)
	return nil
}

// archiveReadyTimeout is how long an archive may take to become ready, unless its options
// say otherwise.
const archiveReadyTimeout = time.Minute

// javaFlags turns system properties into JVM flags, in a stable order, after the flags Aeron
// needs on Java 17 (Agrona 2 reaches jdk.internal.misc.Unsafe; checksums use CRC32C).
func javaFlags(props map[string]string) []string {
	flags := []string{
		"--add-opens", "java.base/jdk.internal.misc=ALL-UNNAMED",
		"--add-opens", "java.base/java.util.zip=ALL-UNNAMED",
		"-Xms64m", "-Xmx512m",
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		flags = append(flags, "-D"+k+"="+props[k])
	}
	return flags
}

// waitReady waits until the media driver's CnC file shows a live driver and the archive
// process has bound its UDP control port. If parent ends first, it returns an
// [ErrInterrupted].
func (a *Archive) waitReady(parent context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	last := "no answer yet"
	for {
		if done, err := a.proc.exited(); done {
			return fmt.Errorf("infra: archive exited before it was ready (%v)", err)
		}
		err := archiveReady(a)
		if err == nil {
			return nil
		}
		last = err.Error()
		select {
		case <-ctx.Done():
			if parent.Err() != nil {
				return interrupted("archive", "ready", parent)
			}
			return fmt.Errorf("infra: archive not ready within %s (last: %s)", timeout, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ErrInterrupted is wrapped by the error of a start that the caller's context ended (a
// Ctrl-C) before the peer was ready: nothing failed, so the error carries no log tail and
// [Shared] removes its run directory as on a clean stop.
var ErrInterrupted = errors.New("infra: interrupted")

// interrupted is the error of a wait for peer to be what (ready, healthy) that ctx ended.
func interrupted(peer, what string, ctx context.Context) error {
	return fmt.Errorf("%w: the %s was stopped before it was %s (%w)", ErrInterrupted, peer, what, context.Cause(ctx))
}

// withLogTail is err, the failure of a peer's start, with the end of its log at path: what
// a person needs to tell why. An interruption is no failure and goes without.
func withLogTail(err error, path string) error {
	if errors.Is(err, ErrInterrupted) {
		return err
	}
	return fmt.Errorf("%w\n--- last lines of %s ---\n%s", err, path, logTail(path, 4000))
}

// ErrNotOwned is returned when a test tries to stop, kill or restart a peer that this
// package did not start (one named by the environment).
var ErrNotOwned = errors.New("infra: this peer was not started here; refusing to stop it")

// Stop stops the archive gracefully (SIGTERM; SIGKILL after 20 s), waits for it to exit and
// removes its media-driver directory.
func (a *Archive) Stop() error {
	if a.proc == nil {
		return ErrNotOwned
	}
	err := a.proc.stop(20 * time.Second)
	return errors.Join(err, os.RemoveAll(a.AeronDir))
}

// Kill kills the archive with SIGKILL and waits for it to exit: the crash of the failure
// tests. Its directories stay for a restart.
func (a *Archive) Kill() error {
	if a.proc == nil {
		return ErrNotOwned
	}
	return a.proc.kill()
}

// Restart starts a stopped or killed archive again with the same directories and control
// channel; its recordings are kept. After a kill -9 the archive's mark file still looks
// active for a while and the archive refuses to start ("active Mark file detected"), as it
// would for any supervisor restarting it: Restart retries, like one would, for up to a
// minute.
func (a *Archive) Restart(ctx context.Context) error {
	if a.proc == nil {
		return ErrNotOwned
	}
	if done, _ := a.proc.exited(); !done {
		return errors.New("infra: restart of a running archive; Stop or Kill it first")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		mark, _ := os.Stat(a.log)
		err := a.start(ctx)
		if err == nil || !strings.Contains(logSince(a.log, mark), "active Mark file detected") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Log is the path of the archive's console log.
func (a *Archive) Log() string { return a.log }

// LogTail is the end of the archive's console log, for failure messages.
func (a *Archive) LogTail() string { return logTail(a.log, 4000) }

// Pid is the archive's process id, or 0 if it was not started here.
func (a *Archive) Pid() int {
	if a.proc == nil {
		return 0
	}
	return a.proc.pid()
}

// EmbeddedArchiveProperties are the system properties for a Java sample that embeds an
// ArchivingMediaDriver and its own archive client (EmbeddedReplayThroughput), so that it runs
// on an archive configured as the test archives are: ArchiveProperties, recording into
// dir/archive, a media driver directory of its own under /dev/shm and a control channel on a
// loopback port of its own, which the sample's client reads from the same property. remove
// deletes the media driver's directory once the sample has exited.
func EmbeddedArchiveProperties(dir string) (props map[string]string, remove func() error, err error) {
	port, err := pickUDPPort()
	if err != nil {
		return nil, nil, err
	}
	aeronDir, err := os.MkdirTemp(shmDir, aeronDirPrefix+"embedded-")
	if err != nil {
		return nil, nil, fmt.Errorf("infra: aeron dir: %w", err)
	}
	props = ArchiveProperties(aeronDir, filepath.Join(dir, "archive"), fmt.Sprintf("aeron:udp?endpoint=%s:%d", Loopback, port))
	props["aeron.archive.control.response.channel"] = "aeron:udp?endpoint=" + Loopback + ":0"
	return props, func() error { return os.RemoveAll(aeronDir) }, nil
}

// JavaClientProperties are the system properties a Java Aeron archive client (the samples,
// tools) needs to reach this archive over its UDP control channel.
func (a *Archive) JavaClientProperties() map[string]string {
	return map[string]string{
		"aeron.dir":                              a.AeronDir,
		"aeron.archive.control.channel":          a.ControlChannel,
		"aeron.archive.control.stream.id":        strconv.Itoa(int(a.ControlStreamID)),
		"aeron.archive.control.response.channel": "aeron:udp?endpoint=" + Loopback + ":0",
		"aeron.archive.replication.channel":      "aeron:udp?endpoint=" + Loopback + ":0",
		"java.net.preferIPv4Stack":               "true",
	}
}
