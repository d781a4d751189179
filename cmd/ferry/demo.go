package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/config"
)

// The demo's stream.
const (
	demoChannel  = "aeron:ipc?alias=ferry-demo"
	demoStreamID = 1001
	demoTopic    = "persistent://public/default/ferry-demo"
	// archiveActiveSubscription is the archive's error code for "already recording this
	// channel and stream" (ArchiveException.ACTIVE_SUBSCRIPTION).
	archiveActiveSubscription = 3
	// demoRestartAfter is when the sample publisher restarts once, so a rotation shows.
	demoRestartAfter = 15 * time.Second
)

// demo runs ferry's main job on a running ArchivingMediaDriver and Pulsar: it has the
// archive record a sample publisher (about 1,000 messages a second), runs the pipeline in
// archive mode, and prints once a second how far each stage got. Ctrl-C stops it.
func demo(args []string, stdout, stderr io.Writer) error {
	var aeronDir, pulsarURL, adminURL, dir, listen string
	var rate int
	err := flags("demo", args, func(fs *flag.FlagSet) {
		fs.StringVar(&aeronDir, "aeron-dir", aeron.DefaultDir(), "the ArchivingMediaDriver's aeron.dir")
		fs.StringVar(&pulsarURL, "pulsar", "pulsar://127.0.0.1:6650", "Pulsar service URL")
		fs.StringVar(&adminURL, "pulsar-admin", "http://127.0.0.1:8080", "Pulsar admin URL (the broker's web service), asked whether the topic is deduplicated; empty: not asked")
		fs.StringVar(&dir, "dir", "", "where the demo keeps its configuration and checkpoints, ferry-demo.yaml and ferry-demo-checkpoints.db (default: a new temporary directory, removed when the demo ends)")
		fs.IntVar(&rate, "rate", 1000, "messages per second the sample publisher offers")
		fs.StringVar(&listen, "listen", config.DefaultListen, "host:port of the demo's ferry's status endpoint; another beside a ferry or demo that holds the default (make demo DEMO_ARGS=--listen=127.0.0.1:8090)")
	})
	if err != nil {
		return err
	}
	if rate < 1 || rate > 1_000_000 {
		return usageError{fmt.Sprintf("--rate %d: give the messages per second the sample publisher offers, 1 to 1000000", rate)}
	}
	if _, port, err := net.SplitHostPort(listen); err != nil || port == "" {
		return usageError{fmt.Sprintf("--listen %q: give the status endpoint's host:port, as 127.0.0.1:8090", listen)}
	}
	kept := false // --dir holds an earlier demo's checkpoint store
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ferry-demo-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir) // the demo's own: nothing in it outlives the demo's run
	} else if fi, err := os.Stat(dir); err != nil {
		return usageError{fmt.Sprintf("--dir %s: %v; create the directory, or leave --dir out for a temporary one", dir, err)}
	} else if !fi.IsDir() {
		return usageError{fmt.Sprintf("--dir %s is not a directory: give a directory, or leave --dir out for a temporary one", dir)}
	} else if _, err := os.Stat(filepath.Join(dir, demoStoreFile)); err == nil {
		kept = true
	}
	// Taken, the port would fail ferry's start only once the publisher and the reader run:
	// say so now, and how to give the demo another.
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("demo: the status endpoint's address %s: %w; another ferry or demo holds it? "+
			"give the demo another with --listen (make demo DEMO_ARGS=--listen=127.0.0.1:8090)", listen, err)
	}
	_ = ln.Close()
	cfgPath, cfg, err := demoConfig(dir, aeronDir, pulsarURL, adminURL, listen)
	if err != nil {
		return err
	}
	if ignored := demoIgnoredEnv(environ()); len(ignored) > 0 {
		fmt.Fprintf(stdout, "demo: ignoring %s: the demo runs its own configuration, never a real store or broker\n", strings.Join(ignored, ", "))
	}
	fmt.Fprintf(stdout, "demo: configuration %s\ndemo: a sample publisher on %s stream %d, recorded by the archive; ferry publishes it to %s\n", cfgPath, demoChannel, demoStreamID, demoTopic)

	// The demo's handler ends its loop and, through ctx, ferry's run, which drains: a signal
	// may come before ferry's own handler (runLoaded's) is there to see it. A second signal
	// must reach Go's default once ferry lets it, so the demo lets go of the signals as soon
	// as the first comes.
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals()...)
	defer stop()
	// A Ctrl-C before ferry starts ends the demo there: ferry is not started after it.
	interrupted := func(err error) error {
		if ctx.Err() == nil {
			return err
		}
		fmt.Fprintln(stdout, "demo: stopped before ferry started")
		return nil
	}
	// The sample publisher and the topic's reader run until the demo returns, whatever
	// ends it: a demo whose ferry could not start says why and ends, rather than publish on.
	work, endWork := context.WithCancel(ctx)
	pub, err := startDemoPublisher(work, cfg, rate, stdout, stderr)
	if err != nil {
		endWork()
		return interrupted(err)
	}
	defer func() {
		endWork()
		pub.close()
	}()
	if err := pub.seen.run(work, pulsarURL); err != nil {
		return interrupted(err)
	}
	if ctx.Err() != nil {
		return interrupted(nil)
	}

	ran := make(chan error, 1)
	go func() { ran <- withConfigPath(runLoaded(ctx, cfgPath, cfg, cfg.Warnings(), stderr), cfgPath) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	fmt.Fprintf(stdout, "demo: `ferry status --config %s [--watch]` in another terminal shows the same table\n", shellWord(cfgPath))
	for n := 0; ; {
		select {
		case err := <-ran:
			// Ended on its own, or its drain ended before this loop saw the signal: signals
			// are no longer the demo's to take while it cleans up (runLoaded's second
			// holds, then Go's default stops it).
			stop()
			if err != nil && kept {
				return keptStoreHint(err, filepath.Join(dir, demoStoreFile))
			}
			return err
		case <-tick.C:
			n++
			fmt.Fprintln(stdout, pub.status(ctx))
			if n%5 == 0 { // every 5 s, what `ferry status` shows
				if _, st, err := fetchStatus(ctx, "http://"+cfg.HTTP.Listen+"/status"); err == nil {
					printStatus(stdout, st)
					fmt.Fprintln(stdout)
				}
			}
		case <-ctx.Done():
			stop()       // a second signal is runLoaded's to take
			return <-ran // ferry's run drains: its ctx ended with this one
		}
	}
}

// demoStoreFile is the demo's checkpoint store, in its --dir.
const demoStoreFile = "ferry-demo-checkpoints.db"

// keptStoreHint is a demo's ferry run's failure err, after the demo started on an earlier
// demo's checkpoint store (path, kept by --dir): a demo on a new archive (make demo starts
// one each time) has its recordings numbered from 0 again, which the kept checkpoints take
// for a replaced catalog and stop the stream over, advising a rename the demo's fixed
// configuration cannot take.
func keptStoreHint(err error, path string) error {
	return fmt.Errorf("%w\ndemo: --dir held an earlier demo's checkpoint store, %s. If ferry said the archive's catalog was replaced: the demo ran on another archive than that demo's "+
		"(make demo starts a new one each time, numbering its recordings from 0 again), and the demo's configuration cannot be renamed; remove %s, or give --dir a new directory, and run the demo again", err, path, path)
}

// demoConfig writes the demo's configuration into dir and loads it. Its names are the
// demo's own: dir (--dir) may hold a real ferry.yaml and checkpoint store, which the demo
// must neither overwrite nor write into. For the same reason the environment's FERRY_
// variables override none of it (FERRY_STORE_PATH would have the demo write its checkpoints
// into a real store, FERRY_PULSAR_SERVICE_URL send ferry to another broker than the demo's
// reader), nor FERRY_HTTP_LISTEN: its status endpoint's address, listen, is --listen's.
func demoConfig(dir, aeronDir, pulsarURL, adminURL, listen string) (string, *config.Config, error) {
	path := filepath.Join(dir, "ferry-demo.yaml")
	text := fmt.Sprintf(`mode: archive
aeron:
  dir: %s
archive:
  response_stream_id: 2001
pulsar:
  service_url: %s%s
store:
  path: %s
checkpoint:
  every_records: 1000
  every_ms: 500
http:
  listen: %s
streams:
  - name: demo
    channel: %s
    stream_id: %d
    topic: %s
`, yamlString(aeronDir), yamlString(pulsarURL), adminKey(adminURL), yamlString(filepath.Join(dir, demoStoreFile)), yamlString(listen), demoChannel, demoStreamID, demoTopic)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return "", nil, err
	}
	cfg, err := config.Load(path, nil) // nil: no environment
	var ke *config.KeyError
	if errors.As(err, &ke) && demoFlags[ke.Path] != "" {
		// A value the demo's flags gave: the flag is what to correct, not the demo's file.
		return "", nil, usageError{fmt.Sprintf("%s %q: %s; fix: %s", demoFlags[ke.Path], ke.Value, ke.Problem, ke.Fix)}
	}
	return path, cfg, err
}

// demoFlags names the flag that gives each key of the demo's configuration its value.
var demoFlags = map[string]string{
	"aeron.dir":          "--aeron-dir",
	"pulsar.service_url": "--pulsar",
	"pulsar.admin_url":   "--pulsar-admin",
	"store.path":         "--dir",
	"http.listen":        "--listen",
}

// yamlString is s as a YAML double-quoted scalar (Go's escapes are YAML's, for valid
// UTF-8): a value a flag gives, such as a directory with " #" in its name or a listen
// address "[::1]:8090", is read as written, not as a comment or a list.
func yamlString(s string) string { return strconv.Quote(s) }

// demoIgnoredEnv returns the names of the FERRY_ variables in environ, which the demo's
// configuration ignores (see demoConfig).
func demoIgnoredEnv(environ []string) []string {
	var names []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "FERRY_") {
			names = append(names, name)
		}
	}
	return names
}

// adminKey is the demo configuration's pulsar.admin_url line, if there is a URL.
func adminKey(url string) string {
	if url == "" {
		return ""
	}
	return "\n  admin_url: " + yamlString(url)
}

// demoPublisher offers messages to the demo stream, which the archive records.
type demoPublisher struct {
	client  *aeron.Client
	archive *archive.Client
	subID   int64      // the recording subscription the demo started, -1 if none
	offered chan int64 // the publisher's latest position
	last    int64
	gaveUp  atomic.Int64 // the sample loop's ticks given up (see sampleLoop)
	seen    topicReader
	done    chan struct{}
	stderr  io.Writer
}

func startDemoPublisher(ctx context.Context, cfg *config.Config, rate int, stdout, stderr io.Writer) (*demoPublisher, error) {
	// The demo's own control session, beside ferry's (another response stream).
	own := *cfg
	own.Archive.ResponseStreamID = cfg.Archive.ResponseStreamID + 1
	ac, arc, err := dialArchive(ctx, &own, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("demo: %w (`make demo` starts an ArchivingMediaDriver)", err)
	}
	subID, pub, err := recordAndPublish(ctx, arc, func(ctx context.Context) (*aeron.ExclusivePublication, error) {
		return ac.AddExclusivePublication(ctx, demoChannel, demoStreamID)
	})
	if err != nil {
		_ = arc.Close()
		_ = ac.Close()
		return nil, err
	}
	p := &demoPublisher{client: ac, archive: arc, subID: subID, offered: make(chan int64, 1), done: make(chan struct{}), stderr: stderr}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	l := &sampleLoop{
		ticks:     tick.C,
		pub:       pub,
		restartAt: time.Now().Add(demoRestartAfter),
		restart: func(ctx context.Context) (offerer, error) {
			return ac.AddExclusivePublication(ctx, demoChannel, demoStreamID)
		},
		retryFor: offerRetryFor,
		offered: func(pos int64) {
			select {
			case <-p.offered:
			default:
			}
			p.offered <- pos
		},
		gaveUp: &p.gaveUp,
		stdout: stdout,
		stderr: stderr,
	}
	go func() {
		defer close(p.done)
		defer tick.Stop()
		l.run(ctx)
	}()
	return p, nil
}

// demoRecorder is what the demo asks of the archive for its stream's recording: an
// [*archive.Client], or a test's stand-in.
type demoRecorder interface {
	StartRecording(ctx context.Context, ch string, streamID int32, source archive.SourceLocation, autoStop bool) (int64, error)
	StopRecordingSubscription(ctx context.Context, subscriptionID int64) error
}

// recordAndPublish starts the archive's recording of the demo stream, then its publication
// (addPub). It returns the recording subscription it started, -1 if an earlier demo's
// records the stream already. When the publication fails, it stops the subscription it
// started: left behind, it records the stream on and every later demo on the archive would
// find it there (ACTIVE_SUBSCRIPTION) with no one to stop it.
func recordAndPublish[P any](ctx context.Context, arc demoRecorder, addPub func(context.Context) (P, error)) (int64, P, error) {
	var none P
	// Not auto-stopped: the publisher restarts mid-demo, and its new session must be
	// recorded too (a new recording, so a rotation).
	subID, err := arc.StartRecording(ctx, demoChannel, demoStreamID, archive.SourceLocal, false)
	var refused *archive.Error
	switch {
	case errors.As(err, &refused) && refused.Code == archiveActiveSubscription:
		subID = -1 // an earlier demo's recording subscription on this archive records it already
	case err != nil:
		return -1, none, fmt.Errorf("demo: start recording: %w", err)
	}
	pub, err := addPub(ctx)
	if err != nil {
		if subID >= 0 {
			// Not ctx: a Ctrl-C may be what failed the publication.
			stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if serr := arc.StopRecordingSubscription(stopCtx, subID); serr != nil {
				err = fmt.Errorf("%w (and the demo's recording subscription %d could not be stopped: %v; a later demo on this archive finds it recording the stream already)", err, subID, serr)
			}
			cancel()
		}
		return -1, none, err
	}
	return subID, pub, nil
}

// offerRetryFor is how long the sample publisher offers one message again while the
// publication is back-pressured or not connected before it gives that tick up.
const offerRetryFor = time.Second

// offerer is the publication the sample publisher offers to: an
// [aeron.ExclusivePublication], or a test's stand-in.
type offerer interface {
	Offer(payload []byte) (int64, error)
	Close() error
}

// sampleLoop is the sample publisher's loop: at each tick it offers "demo message i at T",
// i counting up from 0 with no gap, so that a reader of the topic can check that none is
// missing. i moves on only once the publication took message i: a message the publication
// refused was not appended, so it is offered again, not skipped (the archive records what
// was appended, and ferry can deliver no more than that).
type sampleLoop struct {
	ticks     <-chan time.Time
	pub       offerer
	restartAt time.Time                              // when the publisher restarts once; zero: never
	restart   func(context.Context) (offerer, error) // a new publication, for the restart
	retryFor  time.Duration                          // see offerRetryFor
	offered   func(pos int64)                        // the position after each message taken
	gaveUp    *atomic.Int64                          // ticks given up, their message offered at the next one
	stdout    io.Writer
	stderr    io.Writer
}

// run offers until ctx ends or the publication fails for good (closed, at its maximum
// position), which it reports on stderr; it closes the publication.
func (l *sampleLoop) run(ctx context.Context) {
	defer func() { _ = l.pub.Close() }()
	for i := 0; ; {
		select {
		case <-ctx.Done():
			return
		case <-l.ticks:
		}
		if ctx.Err() != nil {
			return
		}
		if !l.restartAt.IsZero() && time.Now().After(l.restartAt) {
			// The publisher restarts: its recording stops, a new one begins.
			l.restartAt = time.Time{}
			_ = l.pub.Close()
			pub, err := l.restart(ctx)
			if err != nil {
				fmt.Fprintln(l.stderr, "demo: the sample publisher could not restart, and publishes no more:", err)
				return
			}
			l.pub = pub
			fmt.Fprintln(l.stdout, "demo: the sample publisher restarted: a new recording begins; ferry finishes the old one first")
		}
		msg := fmt.Appendf(nil, "demo message %d at %s", i, time.Now().UTC().Format(time.RFC3339Nano))
		pos, err := offerOnce(ctx, l.pub, msg, l.retryFor)
		switch {
		case err == nil:
			i++
			l.offered(pos)
		case ctx.Err() != nil:
			return
		case errors.Is(err, aeron.ErrBackPressured), errors.Is(err, aeron.ErrNotConnected), errors.Is(err, aeron.ErrAdminAction):
			l.gaveUp.Add(1) // message i again at the next tick
		default:
			fmt.Fprintf(l.stderr, "demo: the sample publisher stopped at message %d: %v\n", i, err)
			return
		}
	}
}

// offerOnce offers msg until the publication takes it and returns the position after it.
// A term rotation (ErrAdminAction) is offered again at once; back-pressure and no
// subscriber (ErrBackPressured, ErrNotConnected: the archive's recording subscription
// joins a new publication a moment after it is added) again after a millisecond, for up to
// retryFor. Then, or on any other error, or once ctx ends, it returns the error: nothing
// of msg was appended.
func offerOnce(ctx context.Context, pub offerer, msg []byte, retryFor time.Duration) (int64, error) {
	deadline := time.Now().Add(retryFor)
	for {
		pos, err := pub.Offer(msg)
		if err == nil {
			return pos, nil
		}
		retry := errors.Is(err, aeron.ErrAdminAction) || errors.Is(err, aeron.ErrBackPressured) || errors.Is(err, aeron.ErrNotConnected)
		if !retry || !time.Now().Before(deadline) {
			return 0, err
		}
		if errors.Is(err, aeron.ErrAdminAction) {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			continue
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// status is one line: what was published, recorded and committed.
func (p *demoPublisher) status(ctx context.Context) string {
	descs, err := p.archive.RecordingsForURI(ctx, demoChannel, demoStreamID, 100)
	select {
	case p.last = <-p.offered:
	default:
	}
	line := fmt.Sprintf("demo: published to %d", p.last)
	if n := p.gaveUp.Load(); n > 0 {
		// Not lost: each such message was offered again at the next tick.
		line += fmt.Sprintf(" (%d offers given up after %s back-pressured or not connected, each offered again: no number skipped)", n, offerRetryFor)
	}
	if err != nil || len(descs) == 0 {
		return line + "; recordings: " + errText(err, "none yet")
	}
	d, recorded, err := recordingEnd(ctx, p.archive, descs[len(descs)-1])
	n, pos, foreign := p.seen.get(d.RecordingID)
	line += recordedText(d, recorded, err, n, pos)
	if foreign > 0 {
		line += fmt.Sprintf(" | %d messages on the topic not ferry's (no recording id or position property), not counted", foreign)
	}
	return line
}

// recordedText is the status line's part on recording d: how far it recorded (recordingEnd's
// answer: recorded, or err), and what the demo's reader read back of it from Pulsar (n
// messages, up to pos), which trails what Pulsar acknowledged to ferry: ferry's own lag is
// the table's LAG.
func recordedText(d archive.RecordingDescriptor, recorded int64, err error, n, pos int64) string {
	line := fmt.Sprintf(" | recording %d recorded to %d", d.RecordingID, recorded)
	if !d.IsLive() {
		line += " (stopped)"
	}
	behind := fmt.Sprintf("%d bytes behind the recording", recorded-pos)
	if err != nil {
		line = fmt.Sprintf(" | recording %d: how far recorded not known (%v)", d.RecordingID, err)
		behind = "how far behind the recording not known"
	}
	return line + fmt.Sprintf(" | in Pulsar: %d messages, of recording %d up to %d (read back by the demo: %s)", n, d.RecordingID, pos, behind)
}

func errText(err error, none string) string {
	if err != nil {
		return err.Error()
	}
	return none
}

func (p *demoPublisher) close() {
	<-p.done
	p.seen.close(p.stderr)
	if p.subID >= 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.archive.StopRecordingSubscription(ctx, p.subID)
		cancel()
	}
	_ = p.archive.Close()
	_ = p.client.Close()
}

// topicReader reads the demo topic as a consumer would and keeps the count and the
// position (ferry.position) of the newest message.
type topicReader struct {
	closeWait time.Duration // how long close waits for run's goroutine; see close
	done      chan struct{} // closed when run's goroutine has ended; nil before run

	mu        sync.Mutex
	n         int64           // ferry's messages read
	foreign   int64           // messages without ferry's recording and position properties, not in n
	positions map[int64]int64 // the last message's position, by recording
}

// get returns how many of ferry's messages the topic holds, where the last of recording rec
// ends (0: none yet), and how many other messages it holds.
func (r *topicReader) get(rec int64) (n, pos, foreign int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.positions[rec], r.foreign
}

// run starts a goroutine that creates the reader and reads the topic until ctx ends. It
// returns once the reader is there, or at once when ctx ends first (the Pulsar client's
// calls take no context): the goroutine then closes the reader it gets. Call close after
// ctx has ended.
func (r *topicReader) run(ctx context.Context, pulsarURL string) error {
	r.done = make(chan struct{})
	created := make(chan error, 1)
	go func() {
		defer close(r.done)
		client, err := pulsar.NewClient(pulsar.ClientOptions{URL: pulsarURL, Logger: plog.DefaultNopLogger()})
		if err != nil {
			created <- err
			return
		}
		defer client.Close()
		reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: demoTopic, StartMessageID: pulsar.EarliestMessageID()})
		if err != nil {
			created <- fmt.Errorf("demo: read %s: %w", demoTopic, err)
			return
		}
		defer reader.Close()
		created <- nil
		for {
			msg, err := reader.Next(ctx)
			if err != nil {
				return
			}
			r.add(msg.Properties())
		}
	}()
	select {
	case err := <-created:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// add counts a message read, with properties props. One without ferry's recording id and
// position (someone else's, on the demo's topic) is counted apart: taken for recording 0 at
// position 0, it would pass for ferry's.
func (r *topicReader) add(props map[string]string) {
	pos, perr := strconv.ParseInt(props[actors.PropPosition], 10, 64)
	rec, rerr := strconv.ParseInt(props[actors.PropRecordingID], 10, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	if perr != nil || rerr != nil {
		r.foreign++
		return
	}
	r.n++
	if r.positions == nil {
		r.positions = map[int64]int64{}
	}
	r.positions[rec] = pos
}

// close waits for run's goroutine, which ends once run's ctx has: at once when it reads.
// While it still creates the reader it may not end for 30 s: pulsar-client-go v0.19.0's
// CreateReader, on a broker that accepts the connection and never answers, returns after
// 30 s whatever ClientOptions.OperationTimeout says, and closing the client does not end it
// sooner (tried). So close waits up to closeWait (default 5 s) and then says it leaves the
// goroutine to the process's exit: the demo is ending, and the goroutine holds nothing of
// the demo's but its connection.
func (r *topicReader) close(stderr io.Writer) {
	if r.done == nil {
		return
	}
	wait := r.closeWait
	if wait == 0 {
		wait = 5 * time.Second
	}
	select {
	case <-r.done:
	case <-time.After(wait):
		fmt.Fprintf(stderr, "demo: the topic's reader still waits for Pulsar to answer after %s; left to the exit\n", wait)
	}
}
