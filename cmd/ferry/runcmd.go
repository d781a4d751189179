package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"

	"github.com/apache/pulsar-client-go/pulsar"
	plog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/observe"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/pulsaradmin"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/supervisor"
)

// Wiring constants of `ferry run` that the configuration does not expose (yet).
const (
	drainTimeout       = 30 * time.Second
	discoveryInterval  = 250 * time.Millisecond
	checkpointRetry    = 100 * time.Millisecond
	checkpointRetryMax = 10 * time.Second
)

// reconnectBackoff spaces attempts to reach the media driver and the archive.
var reconnectBackoff = supervisor.Backoff{Min: 500 * time.Millisecond, Max: 15 * time.Second}

// restartPolicy is how a stream's failed actors are restarted: more than 10 failures in 5
// minutes, or more than 10 in a row without their recording moving on, fail the stream.
var restartPolicy = supervisor.Policy{
	Backoff:     supervisor.Backoff{Min: 250 * time.Millisecond, Max: 30 * time.Second},
	MaxRestarts: 10,
	Window:      5 * time.Minute,
}

// runPipeline is `ferry run`: it connects to the media driver, the archive, Pulsar and the
// store, starts the pipeline and runs until SIGINT, SIGTERM or SIGHUP, then drains.
func runPipeline(args []string, stderr io.Writer) error {
	var path string
	if err := flags("run", args, func(fs *flag.FlagSet) { fs.StringVar(&path, "config", "", "configuration file") }); err != nil {
		return err
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	return withConfigPath(runLoaded(context.Background(), path, cfg, configWarnings(cfg), stderr), path)
}

// withConfigPath is err (nil: nil) with the configuration file named where an error of the
// store advises a command for FILE (store.ResetCommand): the command is then one to paste.
func withConfigPath(err error, path string) error {
	if err == nil || !strings.Contains(err.Error(), "--config FILE") {
		return err
	}
	return configNamed{err: err, path: path}
}

type configNamed struct {
	err  error
	path string
}

func (e configNamed) Error() string {
	return strings.ReplaceAll(e.err.Error(), "--config FILE", "--config "+shellWord(e.path))
}

// shellWord is s as one word of a shell command line: quoted when it holds what a shell
// would split or expand.
func shellWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"$`\\;&|<>()*?[]#~{}!") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (e configNamed) Unwrap() error { return e.err }

// runLoaded is `ferry run` of cfg, loaded from path: the demo's ferry runs its own
// configuration, loaded without the environment's overrides. warnings are said at the start.
// It drains and returns once parent ends, as on a signal: the demo's signal may have come
// before this run's handler was there to see it.
func runLoaded(parent context.Context, path string, cfg *config.Config, warnings []string, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log.Info("ferry starting", "version", version, "mode", cfg.Mode, "config", path, "streams", len(cfg.Streams))
	for _, w := range warnings {
		log.Warn(w)
	}
	// In archive mode nothing is lost by a second signal: a checkpoint only ever holds
	// acknowledged records, so the next start publishes the rest again.
	after := "what is not yet acknowledged is published again at the next start"
	if cfg.Mode == config.ModeTransport {
		after = "in transport mode what is not yet acknowledged then goes unpublished"
	}
	ctx, stop := drainOnSignal(parent, log, after)
	defer stop()

	var st store.Store // archive mode only
	streams := func(skip func(string) bool) ([]actors.StreamConfig, error) { return transportConfigs(cfg, skip), nil }
	if cfg.Mode == config.ModeArchive {
		file, _ := filepath.Abs(cfg.Store.Path)
		_, statErr := os.Stat(file)
		bst, err := openStore(cfg.Store.Path)
		if err != nil {
			return err
		}
		// Both are also what a wrong store.path looks like (a relative one run from another
		// directory, a volume not mounted): the path says which. A store holding no stream
		// is said on every start, not only on the one that created it, which may have
		// stopped on another error before anything was stored.
		if errors.Is(statErr, fs.ErrNotExist) {
			log.Warn("no checkpoint store at store.path: created a new one; every stream starts at its configured start position", "path", file)
		} else if stored, err := bst.Streams(); err == nil && len(stored) == 0 {
			log.Warn("the checkpoint store at store.path holds no stream: every stream starts at its configured start position; "+
				"if an earlier ferry published these streams, store.path names another file than the one it kept its checkpoints in", "path", file)
		} else {
			log.Info("checkpoint store", "path", file)
		}
		defer closeStore(bst, log)
		st = bst
		// A stream renamed in the configuration finds no checkpoint under its new name:
		// refused before anything is published (or reset: true deletes anything).
		if err := checkStoredStreams(path, cfg, st, log); err != nil {
			return err
		}
		// Read every stream's checkpoint now, so that a damaged store stops the start at
		// once (lessons 12, 13); every (re)start of the pipeline reads them again.
		reset := false
		if _, err := streamConfigs(cfg, st, log, &reset, nil); err != nil {
			return err
		}
		streams = func(skip func(string) bool) ([]actors.StreamConfig, error) {
			return streamConfigs(cfg, st, log, &reset, skip)
		}
	}
	pc, err := pulsarClient(cfg, stderr)
	if err != nil {
		return err
	}
	defer pc.Close()
	admin, err := adminAPI(cfg, log)
	if err != nil {
		return err
	}
	var dedup actors.DeduplicationFunc
	var maxSize actors.MaxMessageSizeFunc
	var terminated actors.TerminatedFunc
	var publishers actors.PublishersFunc
	if admin != nil { // in transport mode, only whether a producer is connected is asked (publisher)
		dedup, maxSize, terminated, publishers = actors.DeduplicationWith(admin), admin.MaxMessageSize, actors.TerminatedWith(admin), actors.PublishersWith(admin)
	}
	board := observe.NewBoard(version)
	stopHTTP, err := serveHTTP(cfg, board, log)
	if err != nil {
		return err
	}
	defer stopHTTP()
	err = actors.Run(ctx, actors.RunOptions{
		Board:          board,
		Connect:        func(ctx context.Context) (*actors.Connection, error) { return connectAeron(ctx, cfg, log) },
		Streams:        streams,
		CreateProducer: pc.CreateProducer,
		LastStored:     actors.LastStoredWith(pc),
		Deduplication:  dedup,
		MaxMessageSize: maxSize,
		Terminated:     terminated,
		Publishers:     publishers,
		Store:          st,
		Reconnect:      reconnectBackoff,
		DrainTimeout:   drainTimeout,
		Logger:         log,
	})
	log.Info("ferry stopped")
	return err
}

// stopSignals are the signals that ask ferry to drain and stop: SIGINT, SIGTERM, and SIGHUP
// unless ferry was started with it ignored (nohup): asking for it would end the ignoring
// (os/signal's Notify installs a handler), and a terminal closing would then stop a ferry
// meant to outlive it.
func stopSignals() []os.Signal {
	if signal.Ignored(syscall.SIGHUP) {
		return []os.Signal{os.Interrupt, syscall.SIGTERM}
	}
	return []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}
}

// drainOnSignal returns a context that the first SIGINT, SIGTERM or SIGHUP ends (a closing
// terminal, or a wrapper forwarding its hangup, asks for the drain too), or the end of
// parent (a signal its owner took), which starts the drain (up to drainTimeout), and a
// function that ends it when the run ends. A second signal
// ends the process at once, Go's default for these signals, once a second has passed since
// the first signal or the run's end, whichever came first: a signal within it is taken for
// the same request (a wrapper forwarding the terminal's Ctrl-C to its process group delivers
// two), also when the run has ended meanwhile — a drain with nothing in flight ends within
// milliseconds, a run may end on its own as Ctrl-C comes, and the copy that follows must not
// kill the process in its clean-up. after says what a second signal leaves undone.
func drainOnSignal(parent context.Context, log *slog.Logger, after string) (context.Context, func()) {
	ctx, cancel := context.WithCancel(parent)
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, stopSignals()...)
	done := make(chan struct{}) // the run ended
	go func() {
		select {
		case <-signals:
			log.Info("signal received: draining; a second signal (a second from now) stops ferry at once: " + after)
			cancel()
		case <-parent.Done():
			log.Info("stop requested: draining; a second signal (a second from now) stops ferry at once: " + after)
		case <-done: // the run ended on its own: no signal to report
		}
		time.Sleep(time.Second)
		signal.Stop(signals)
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			close(done)
			cancel()
		})
	}
}

// openStore opens the checkpoint store `ferry run` uses (a variable for the tests, which
// wrap it).
var openStore = func(path string) (store.Store, error) { return bolt.Open(path, nil) }

// storeCloseWait bounds the close of the checkpoint store at exit: bbolt's Close waits for
// a write in progress, and one on a hung disk never ends (the pipeline's stop has left it
// behind already, and said so).
var storeCloseWait = 10 * time.Second

// closeStore closes the checkpoint store, or gives up on it after storeCloseWait, loudly:
// the process exits either way, and what the store persisted before stands.
func closeStore(st io.Closer, log *slog.Logger) {
	closed := make(chan error, 1)
	go func() { closed <- st.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			log.Error("closing the checkpoint store", "error", err)
		}
	case <-time.After(storeCloseWait):
		log.Error("the checkpoint store did not close within " + storeCloseWait.String() + " (a write on a hung disk?); exiting without it: what it persisted before stands, and the next start resumes from there")
	}
}

// httpTimeout bounds the reading of a request to the status endpoint and the writing of
// its answer (a client that stops reading holds a goroutine no longer); httpIdleTimeout,
// how long a kept-alive connection waits for its next request.
var httpTimeout, httpIdleTimeout = 10 * time.Second, time.Minute

// serveHTTP serves /status, /metrics, /healthz and /readyz on http.listen, every configured
// stream on them from the start.
func serveHTTP(cfg *config.Config, board *observe.Board, log *slog.Logger) (func(), error) {
	var names []string
	for _, s := range cfg.Streams {
		names = append(names, s.Name)
	}
	board.Expect(cfg.Mode.String(), names...)
	ln, err := net.Listen("tcp", cfg.HTTP.Listen)
	if err != nil {
		return nil, fmt.Errorf("http.listen %s: %w (another ferry on this port? set http.listen)", cfg.HTTP.Listen, err)
	}
	srv := &http.Server{Handler: observe.Handler(board, names), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: httpTimeout, WriteTimeout: httpTimeout, IdleTimeout: httpIdleTimeout}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("status endpoint stopped", "error", err)
		}
	}()
	log.Info("status endpoint", "url", "http://"+ln.Addr().String()+"/status")
	return func() { _ = srv.Close() }, nil
}

// connectAeron connects to the media driver and the archive.
func connectAeron(ctx context.Context, cfg *config.Config, log *slog.Logger) (*actors.Connection, error) {
	if cfg.Mode == config.ModeTransport {
		ac, err := dialDriver(ctx, cfg, log)
		if err != nil {
			return nil, err
		}
		return &actors.Connection{Aeron: ac, Dead: ac.Dead(), Err: ac.Err, Close: ac.Close}, nil
	}
	ac, arc, err := dialArchive(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	dead := make(chan struct{})
	go func() {
		select {
		case <-ac.Dead():
		case <-arc.Dead():
		}
		close(dead)
	}()
	return &actors.Connection{
		Archive: arc,
		Aeron:   ac,
		Dead:    dead,
		Err: func() error {
			if err := arc.Err(); err != nil {
				return err
			}
			return ac.Err()
		},
		Close: func() error { return errors.Join(arc.Close(), ac.Close()) },
	}, nil
}

// dialDriver connects to the media driver in aeron.dir.
func dialDriver(ctx context.Context, cfg *config.Config, log *slog.Logger) (*aeron.Client, error) {
	ac, err := aeron.Connect(ctx, aeron.Options{Dir: cfg.Aeron.Dir, Logger: log})
	if err != nil {
		dir, from := cfg.Aeron.Dir, "aeron.dir"
		if dir == "" {
			dir, from = aeron.DefaultDir(), "the Aeron default, as aeron.dir is not set"
		}
		return nil, fmt.Errorf("connect to the Aeron media driver in %s (%s): %w; start the media driver, or set aeron.dir to the directory it runs with", dir, from, err)
	}
	return ac, nil
}

// dialArchive connects to the media driver and opens a control session with the archive
// as the archive.* settings say. The caller closes the archive client before the driver's.
func dialArchive(ctx context.Context, cfg *config.Config, log *slog.Logger) (*aeron.Client, *archive.Client, error) {
	ac, err := dialDriver(ctx, cfg, log)
	if err != nil {
		return nil, nil, err
	}
	arc, err := archive.Connect(ctx, ac, archive.Options{
		ControlChannel:   cfg.Archive.ControlChannel.String(),
		ControlStreamID:  cfg.Archive.ControlStreamID,
		ResponseChannel:  cfg.Archive.ResponseChannel.String(),
		ResponseStreamID: cfg.Archive.ResponseStreamID,
		MessageTimeout:   cfg.Archive.MessageTimeout,
		Logger:           log,
	})
	if err != nil {
		_ = ac.Close()
		return nil, nil, fmt.Errorf("connect to the Aeron archive on %s stream %d: %w; check that the archive is running, "+
			"that archive.control_channel and archive.control_stream_id are its control channel and stream id, "+
			"and that archive.response_channel reaches ferry", cfg.Archive.ControlChannel, cfg.Archive.ControlStreamID, err)
	}
	return ac, arc, nil
}

// readError is err, from loading stream's checkpoints, as the user is told it. The store's
// own errors (damaged data, a newer ferry's encoding, a changed definition) name the file
// and the way on; any other is a failure to read it (lesson 12): it is not "no checkpoint",
// and ferry does not start.
func readError(cfg *config.Config, stream string, err error) error {
	var corrupt *store.CorruptError
	var uv *store.UnknownVersionError
	var changed *store.StreamChangedError
	if errors.As(err, &corrupt) || errors.As(err, &uv) || errors.As(err, &changed) {
		return err
	}
	return fmt.Errorf("stream %s: its checkpoints could not be read from %s: %w; ferry does not start without them, as it would publish again what they say is done: fix what keeps the file from being read (its disk, file system or permissions) and start again", stream, storePath(cfg), err)
}

// streamConfigs resets the streams that ask for it and loads every stream's stored state,
// but those skip names (nil: none): a read failure or corrupt data stops the start
// (lessons 12, 13, 15). Resets happen once per process (reset marks them done), not at
// every reconnect.
func streamConfigs(cfg *config.Config, st store.Store, log *slog.Logger, reset *bool, skip func(string) bool) ([]actors.StreamConfig, error) {
	var out []actors.StreamConfig
	for _, s := range cfg.Streams {
		if skip != nil && skip(s.Name) {
			continue
		}
		def, state, err := load(st, s)
		if s.Reset && !*reset {
			// As `ferry checkpoint reset` without --force: what a newer ferry wrote is not
			// this build's to delete (a downgrade with reset: true left set).
			var uv *store.UnknownVersionError
			if errors.As(err, &uv) {
				return nil, fmt.Errorf("stream %s: reset: true, but %s holds its checkpoint data in %s, so it is not reset; "+
					"run the ferry release that wrote it, or delete it with this build's `%s --force`", s.Name, storePath(cfg), uv.What(), store.ResetCommand(s.Name))
			}
			if err := st.Reset(s.Name); err != nil {
				return nil, err
			}
			log.Warn("stream checkpoint reset (reset: true); remove the setting or every start resets again", "stream", s.Name)
			def, state, err = load(st, s)
		}
		if err != nil {
			return nil, readError(cfg, s.Name, err)
		}
		switch first := !*reset; {
		case !first:
		case state.Stored && len(state.Checkpoints) == 0 && s.Start.Kind == config.StartLatest:
			log.Info("start_position latest was decided by an earlier start, when the archive held none of the stream's recordings: every recording is published in full", "stream", s.Name)
		case !state.Stored || len(state.Checkpoints) == 0:
			log.Info("no checkpoint stored: starting at the configured start position", "stream", s.Name, "start", s.Start.Kind)
		default:
			log.Info("resuming from the stored checkpoint (it outranks the configured start position)", "stream", s.Name, "recordings", len(state.Checkpoints))
		}
		out = append(out, actors.StreamConfig{
			Def:            def,
			Channel:        s.Channel,
			Start:          s.Start,
			Stored:         state,
			ReplayChannel:  cfg.Replay.Channel,
			ReplayStreamID: cfg.Replay.StreamID,
			Checkpoint: progress.CheckpointConfig{
				EveryRecords: int(cfg.Checkpoint.EveryRecords),
				EveryMs:      cfg.Checkpoint.Every.Milliseconds(),
				RetryMinMs:   checkpointRetry.Milliseconds(),
				RetryMaxMs:   checkpointRetryMax.Milliseconds(),
			},
			MaxInflightRecords: cfg.Inflight.MaxMessages,
			MaxInflightBytes:   cfg.Inflight.MaxBytes,
			DiscoveryInterval:  discoveryInterval,
			RestartGrace:       cfg.Archive.RestartGrace,
			StallAfter:         cfg.Health.StallAfter,
			CallTimeout:        cfg.Archive.MessageTimeout,
			Restart:            restartPolicy,
		})
	}
	*reset = true
	return out, nil
}

// transportConfigs are the streams of transport mode: live subscriptions, no checkpoints.
func transportConfigs(cfg *config.Config, skip func(string) bool) []actors.StreamConfig {
	var out []actors.StreamConfig
	for _, s := range cfg.Streams {
		if skip != nil && skip(s.Name) {
			continue
		}
		out = append(out, actors.StreamConfig{
			Def:                definition(s),
			Channel:            s.Channel,
			Transport:          true,
			Spy:                cfg.Transport.Spy,
			MaxInflightRecords: cfg.Inflight.MaxMessages,
			MaxInflightBytes:   cfg.Inflight.MaxBytes,
			CallTimeout:        10 * time.Second,
			Restart:            restartPolicy,
			StallAfter:         cfg.Health.StallAfter,
		})
	}
	return out
}

// adminAPI is the broker's admin API at pulsar.admin_url (archive mode only), which ferry
// asks whether the broker deduplicates each recording's partition, for each topic's
// maxMessageSize policy, whether a topic is terminated, and whether a producer that answers
// nothing is connected; nil when the URL is not set.
func adminAPI(cfg *config.Config, log *slog.Logger) (*pulsaradmin.Client, error) {
	if cfg.Pulsar.AdminURL == "" {
		if cfg.Mode == config.ModeArchive {
			log.Info("pulsar.admin_url is not set: ferry does not check that the broker deduplicates the topics, which effectively-once needs (without it, at least once); the status shows deduplication: unchecked")
		}
		return nil, nil
	}
	var tc *tls.Config
	if strings.HasPrefix(cfg.Pulsar.AdminURL, "https://") {
		var err error
		if tc, err = tlsConfig(cfg.Pulsar.TLS); err != nil {
			return nil, err
		}
	}
	var token func() (string, error)
	switch a := cfg.Pulsar.Auth; {
	case a.Token != "":
		token = func() (string, error) { return string(a.Token), nil }
	case a.TokenFile != "":
		token = tokenFromFile(a.TokenFile) // read at every question: the file may be renewed
	}
	return pulsaradmin.New(pulsaradmin.Options{URL: cfg.Pulsar.AdminURL, TLS: tc, Token: token}), nil
}

// tokenFromFile reads the token in the file at path (pulsar.auth.token_file) at every call:
// the one reader of both the Pulsar client and the admin API, so that they send the same
// token. pulsar-client-go's own reader trims only spaces and '\n': a file written with
// "\r\n" line ends would send the broker a token ending in '\r', refused at every
// connection, while the admin API's took it. White space around the token is trimmed; white
// space or control characters inside it, or an empty file, are an error naming the file.
func tokenFromFile(path string) func() (string, error) {
	return func() (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("pulsar.auth.token_file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		switch {
		case token == "":
			return "", fmt.Errorf("pulsar.auth.token_file %s is empty: write the token into it", path)
		case strings.ContainsFunc(token, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
			return "", fmt.Errorf("pulsar.auth.token_file %s holds white space or control characters inside the token: write the token alone, on one line", path)
		}
		return token, nil
	}
}

// tlsConfig is the TLS configuration of pulsar.tls: the admin API's, and the broker
// connection's when validate_hostname is false (see clientOptions). Its files are read now,
// so that a missing or damaged one stops the start, and the client certificate and (with
// validate_hostname false) the CA again at every handshake, as pulsar-client-go reads its
// own at every connection: a renewed certificate or CA bundle is taken without a restart.
func tlsConfig(t config.TLS) (*tls.Config, error) {
	roots := func() (*x509.CertPool, error) {
		if t.CAFile == "" {
			return nil, nil // the system's
		}
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("pulsar.tls.ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("pulsar.tls.ca_file %s holds no PEM certificate", t.CAFile)
		}
		return pool, nil
	}
	pool, err := roots()
	if err != nil {
		return nil, err
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify, RootCAs: pool}
	if t.CertFile != "" {
		cert := func() (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
			if err != nil {
				return nil, fmt.Errorf("pulsar.tls.cert_file and key_file: %w", err)
			}
			return &c, nil
		}
		if _, err := cert(); err != nil {
			return nil, err
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert() }
	}
	if !t.ValidateHostname && !t.InsecureSkipVerify {
		// The chain is verified, the host name not (pulsar.tls.validate_hostname: false,
		// refused without ca_file: the system's roots vouch for any name).
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server presented no certificate")
			}
			pool, err := roots()
			if err != nil {
				return err
			}
			opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool()}
			for _, c := range cs.PeerCertificates[1:] {
				opts.Intermediates.AddCert(c)
			}
			_, err = cs.PeerCertificates[0].Verify(opts)
			return err
		}
	}
	return tc, nil
}

func pulsarClient(cfg *config.Config, stderr io.Writer) (pulsar.Client, error) {
	opts, err := clientOptions(cfg, stderr)
	if err != nil {
		return nil, err
	}
	c, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, fmt.Errorf("pulsar client for %s: %w", cfg.Pulsar.ServiceURL, err)
	}
	return c, nil
}

// clientOptions is the Pulsar client's configuration. A client certificate is presented in
// the TLS handshake whatever authenticates ferry (mutual TLS beside a token); without a
// token, the certificate is also the authentication (Pulsar's "tls" method).
func clientOptions(cfg *config.Config, stderr io.Writer) (pulsar.ClientOptions, error) {
	opts := pulsar.ClientOptions{
		URL:               cfg.Pulsar.ServiceURL,
		OperationTimeout:  10 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		// Off: ferry's windows bound what is in flight, per recording, and a stream
		// publishes every live recording at once (lesson 11). A limit per client fails
		// sends (ClientMemoryBufferIsFull, a re-delivery and a replay restart each) as
		// soon as the recordings catching up together hold more than it.
		MemoryLimitBytes:           -1,
		TLSTrustCertsFilePath:      cfg.Pulsar.TLS.CAFile,
		TLSAllowInsecureConnection: cfg.Pulsar.TLS.InsecureSkipVerify,
		TLSValidateHostname:        cfg.Pulsar.TLS.ValidateHostname,
		// pulsar-client-go logs every connection and producer at info: keep its warnings.
		Logger: plog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})).With("lib", "pulsar")),
	}
	// The TLS settings may be there for an https:// admin URL only (pulsar.admin_url).
	overTLS := strings.HasPrefix(cfg.Pulsar.ServiceURL, "pulsar+ssl://") || strings.HasPrefix(cfg.Pulsar.ServiceURL, "https://")
	if t := cfg.Pulsar.TLS; overTLS {
		// Read now, so that a missing or damaged file stops the start: pulsar-client-go
		// reads its own at each connection, and every producer would fail, the stream
		// stalled only after stall_after.
		tc, err := tlsConfig(t)
		if err != nil {
			return pulsar.ClientOptions{}, err
		}
		if !t.ValidateHostname && !t.InsecureSkipVerify {
			// pulsar-client-go v0.19.0 checks the broker's host name whatever
			// TLSValidateHostname says (tls.DialWithDialer takes it from the address, the
			// HTTP lookup's transport likewise; docs/findings.md): validate_hostname: false
			// is honoured with a configuration of ferry's own, which verifies the chain only.
			opts.TLSConfig = tc
		}
	}
	certs := cfg.Pulsar.TLS.CertFile != "" && overTLS
	if certs {
		opts.TLSCertificateFile, opts.TLSKeyFilePath = cfg.Pulsar.TLS.CertFile, cfg.Pulsar.TLS.KeyFile
	}
	switch {
	case cfg.Pulsar.Auth.Token != "":
		opts.Authentication = pulsar.NewAuthenticationToken(string(cfg.Pulsar.Auth.Token))
	case cfg.Pulsar.Auth.TokenFile != "":
		// Read now too, as tlsConfig's files: a missing or empty file stops the start,
		// rather than every producer failing, the stream stalled only after stall_after.
		read := tokenFromFile(cfg.Pulsar.Auth.TokenFile)
		if _, err := read(); err != nil {
			return pulsar.ClientOptions{}, err
		}
		opts.Authentication = pulsar.NewAuthenticationTokenFromSupplier(read)
	case certs:
		opts.Authentication = pulsar.NewAuthenticationTLS(cfg.Pulsar.TLS.CertFile, cfg.Pulsar.TLS.KeyFile)
	}
	return opts, nil
}
