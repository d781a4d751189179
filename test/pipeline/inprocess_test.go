package pipeline

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/observe"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/pulsaradmin"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/harness"
	"github.com/ferry-bridge/ferry/test/infra"
)

// inProcess is ferry's pipeline (package actors) run inside the test on the shared archive
// and broker, so that a test can put fault-injecting decorators around the real Pulsar
// producer (test/harness), the real checkpoint store or the real archive client. Every
// decorator may delay, fail or lose what the real thing does; none is faster or more
// reliable than it (lesson 27).
type inProcess struct {
	t       testing.TB
	p       *actors.Pipeline
	store   *bolt.Store
	streams []streamConfig
	logs    *syncBuffer
	board   *observe.Board

	mu        sync.Mutex
	producers []*harness.Producer
	stopped   bool
}

// inProcessOptions are the decorators and settings of an in-process pipeline. The zero
// value runs ferry undecorated.
type inProcessOptions struct {
	// plan decides the acknowledgements of every producer the pipeline creates.
	plan harness.Plan
	// wrapStore decorates the real bbolt store.
	wrapStore func(store.Store) store.Store
	// wrapArchive decorates the real archive client.
	wrapArchive func(actors.Archive) actors.Archive
	// wrapAeron decorates the real Aeron client's subscriptions.
	wrapAeron func(actors.Subscriber) actors.Subscriber
	// checkpoint overrides the checkpoint policy (zero: every 100 records or 100 ms).
	checkpoint progress.CheckpointConfig
	// restart overrides the restart policy (zero: 20–200 ms back-off, 5 restarts a minute).
	restart supervisor.Policy
	// storePath reuses a store (empty: a new one).
	storePath string
	// discovery overrides how often the archive is listed (zero: 100 ms).
	discovery time.Duration
	// stallAfter is the health rule's threshold (zero: ferry's default).
	stallAfter time.Duration
	// restartGrace is archive.restart_grace (zero: none, the schedule's bare rule).
	restartGrace time.Duration
	// start is the configured start position (zero: earliest).
	start config.StartPosition
	// createProducer replaces the real producer factory (a decorator around it).
	createProducer func(actors.ProducerFactory) actors.ProducerFactory
	// transport runs the streams in transport mode (a live subscription, no archive).
	transport bool
	// maxInflightRecords and maxInflightBytes are the replay's window (zero: ferry's
	// defaults, 1,000 records and 64 MiB).
	maxInflightRecords, maxInflightBytes int64
	// replayStreamID is the streams' replay.stream_id (zero: one of their own each).
	replayStreamID int32
	// aeronDir connects to a media driver and archive of the test's own (empty: the shared).
	aeronDir string
	// adminURL is the broker's admin API the publishers ask whether it deduplicates (empty:
	// the shared broker's); noAdmin asks none, as without pulsar.admin_url.
	adminURL string
	noAdmin  bool
	// pulsarLog also gets the Pulsar client's warnings (they go to stderr in any case).
	pulsarLog io.Writer
	// noScribble recycles payload buffers as `ferry run` does, without overwriting each one
	// given back (benchmarks); tests scribble, so that a reuse too early shows in the topic.
	noScribble bool
}

// startInProcess starts the pipeline for streams; t.Cleanup drains and stops it.
func startInProcess(t testing.TB, o inProcessOptions, streams ...streamConfig) *inProcess {
	t.Helper()
	if o.checkpoint == (progress.CheckpointConfig{}) {
		o.checkpoint = progress.CheckpointConfig{EveryRecords: 100, EveryMs: 100, RetryMinMs: 50, RetryMaxMs: 400}
	}
	if o.restart == (supervisor.Policy{}) {
		o.restart = supervisor.Policy{Backoff: supervisor.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}, MaxRestarts: 5, Window: time.Minute}
	}
	if o.start.Kind == 0 {
		o.start = config.StartPosition{Kind: config.StartEarliest}
	}
	if o.maxInflightRecords == 0 {
		o.maxInflightRecords = config.DefaultMaxMessages
	}
	if o.maxInflightBytes == 0 {
		o.maxInflightBytes = config.DefaultMaxBytes
	}
	if o.discovery == 0 {
		o.discovery = 100 * time.Millisecond
	}
	if o.storePath == "" {
		o.storePath = t.TempDir() + "/checkpoints.db"
	}
	st, err := bolt.Open(o.storePath, nil)
	if err != nil {
		t.Fatal(err)
	}
	ip := &inProcess{t: t, store: st, streams: streams, logs: &syncBuffer{}, board: observe.NewBoard("test")}
	var s store.Store = st
	if o.wrapStore != nil {
		s = o.wrapStore(st)
	}
	var session aeronSession
	if o.aeronDir != "" {
		session = failConnectArchiveAt(t, o.aeronDir)
	} else {
		session = connectArchive(t)
	}
	var arc actors.Archive = session.archive
	if o.wrapArchive != nil {
		arc = o.wrapArchive(arc)
	}
	var sub actors.Subscriber = session.aeron
	if o.wrapAeron != nil {
		sub = o.wrapAeron(sub)
	}
	clientLog := io.Writer(os.Stderr)
	if o.pulsarLog != nil {
		clientLog = io.MultiWriter(os.Stderr, o.pulsarLog)
	}
	client := newPulsarClientLogging(t, peers.Pulsar.ServiceURL, clientLog)
	replay, err := channel.Parse("aeron:ipc")
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []actors.StreamConfig
	for _, sc := range streams {
		ch, err := channel.Parse(sc.Channel)
		if err != nil {
			t.Fatal(err)
		}
		state, err := s.Load(sc.definition())
		if err != nil {
			t.Fatal(err)
		}
		replayStreamID := o.replayStreamID
		if replayStreamID == 0 {
			replayStreamID = infra.UniqueStreamID()
		}
		cfgs = append(cfgs, actors.StreamConfig{
			Def: sc.definition(), Channel: ch, Start: o.start, Stored: state,
			ReplayChannel: replay, ReplayStreamID: replayStreamID,
			Checkpoint:         o.checkpoint,
			MaxInflightRecords: o.maxInflightRecords, MaxInflightBytes: o.maxInflightBytes,
			DiscoveryInterval: o.discovery, CallTimeout: 10 * time.Second,
			Restart: o.restart, StallAfter: o.stallAfter, Transport: o.transport, RestartGrace: o.restartGrace,
		})
	}
	log := slog.New(slog.NewTextHandler(ip.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var create actors.ProducerFactory = func(opts pulsar.ProducerOptions) (pulsar.Producer, error) {
		prod, err := client.CreateProducer(opts)
		if err != nil || o.plan == nil {
			return prod, err
		}
		h := harness.Wrap(prod, opts, o.plan)
		ip.mu.Lock()
		ip.producers = append(ip.producers, h)
		ip.mu.Unlock()
		return h, nil
	}
	if o.createProducer != nil {
		create = o.createProducer(create)
	}
	var dedup actors.DeduplicationFunc
	var maxSize actors.MaxMessageSizeFunc
	var terminated actors.TerminatedFunc
	var publishers actors.PublishersFunc
	if !o.noAdmin && !o.transport { // transport: as ferry run without pulsar.admin_url (TestTransportModeRidesOutABrokerOutage runs ferry with it)
		admin := pulsaradmin.New(pulsaradmin.Options{URL: cmp.Or(o.adminURL, peers.Pulsar.AdminURL)})
		dedup, maxSize, terminated, publishers = actors.DeduplicationWith(admin), admin.MaxMessageSize, actors.TerminatedWith(admin), actors.PublishersWith(admin)
	}
	p, err := actors.NewPipeline(&actors.Env{
		Archive:        arc,
		Aeron:          sub,
		CreateProducer: create,
		LastStored:     actors.LastStoredWith(client),
		Deduplication:  dedup,
		MaxMessageSize: maxSize,
		Terminated:     terminated,
		Publishers:     publishers,
		Store:          s,
		Logger:         log,
		Board:          ip.board,
		Payloads:       &aeron.BufferPool{Scribble: !o.noScribble},
	}, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	ip.p = p
	t.Cleanup(func() {
		_, _ = ip.stop()
		if t.Failed() {
			t.Logf("in-process ferry log:\n%s", ip.logs.String())
		}
	})
	return ip
}

// stop drains (briefly: a test may have held acknowledgements back) and stops the
// pipeline, then closes the store. It returns what the streams reported.
func (ip *inProcess) stop() ([]*messages.Drained, error) { return ip.stopWithin(5 * time.Second) }

// stopWithin is stop with a drain of at most d.
func (ip *inProcess) stopWithin(d time.Duration) ([]*messages.Drained, error) {
	ip.mu.Lock()
	if ip.stopped {
		ip.mu.Unlock()
		return nil, nil
	}
	ip.stopped = true
	ip.mu.Unlock()
	drained, err := ip.p.Drain(d)
	ip.p.Stop()
	_ = ip.store.Close()
	return drained, err
}

// checkpoint returns the stored checkpoint of recording id of stream s (zero if none).
func (ip *inProcess) checkpoint(s streamConfig, id int64) store.Checkpoint {
	ip.t.Helper()
	state, err := ip.store.Load(s.definition())
	if err != nil {
		ip.t.Fatalf("load checkpoint: %v", err)
	}
	for _, c := range state.Checkpoints {
		if c.RecordingID == id {
			return c
		}
	}
	return store.Checkpoint{}
}

// status returns stream name's status as the board has it now.
func (ip *inProcess) status(name string) (*messages.StreamStatus, error) {
	for _, s := range ip.board.Snapshot().Streams {
		if s.Name == name {
			return s, nil
		}
	}
	return nil, fmt.Errorf("no status of stream %s", name)
}

// notFailed is status, and fails t at once if the stream's status says it failed: a wait
// for something else is over then.
func (ip *inProcess) notFailed(t testing.TB, name string) (*messages.StreamStatus, error) {
	t.Helper()
	s, err := ip.status(name)
	if err == nil && s.State == "failed" {
		t.Fatalf("the stream failed: %s", s.Reason)
	}
	return s, err
}

// waitCheckpoint waits until recording id's checkpoint is at position.
func (ip *inProcess) waitCheckpoint(s streamConfig, id, position int64, timeout time.Duration) {
	ip.t.Helper()
	eventually.NoError(ip.t, timeout, func() error {
		if c := ip.checkpoint(s, id); c.Position != position {
			return fmt.Errorf("checkpoint of recording %d at %d (completed %t), want %d", id, c.Position, c.Completed, position)
		}
		return nil
	})
}

// releaseUntilCheckpoint releases every acknowledgement p holds until recording id's
// checkpoint is at position: again at each look, as an acknowledgement a send racing the
// test's switch to deliver still holds comes after the look before.
func (ip *inProcess) releaseUntilCheckpoint(p *harness.Producer, s streamConfig, id, position int64, timeout time.Duration) {
	ip.t.Helper()
	eventually.NoError(ip.t, timeout, func() error {
		p.ReleaseAll()
		if c := ip.checkpoint(s, id); c.Position != position {
			return fmt.Errorf("checkpoint of recording %d at %d (completed %t), want %d", id, c.Position, c.Completed, position)
		}
		return nil
	})
}

// waitDone waits until recording id's checkpoint is completed at end and the stream has
// listed the recording stopped there (a replay can reach the end of a recording before the
// listing that reports its stop).
func (ip *inProcess) waitDone(s streamConfig, id, end int64, timeout time.Duration) {
	ip.t.Helper()
	eventually.NoError(ip.t, timeout, func() error {
		if c := ip.checkpoint(s, id); c.Position != end || !c.Completed {
			return fmt.Errorf("checkpoint of recording %d at %d (completed %t), want completed at %d", id, c.Position, c.Completed, end)
		}
		st, err := ip.status(s.Name)
		if err != nil {
			return err
		}
		if r := recordingOf(st, id); r == nil || r.StopPosition == nil || *r.StopPosition != end {
			return fmt.Errorf("recording %d not listed stopped at %d yet: %v", id, end, r)
		}
		return nil
	})
}

// waitFailed waits until stream name has failed, and fails the test unless its reason says
// each of wants.
func (ip *inProcess) waitFailed(name string, timeout time.Duration, wants ...string) {
	ip.t.Helper()
	eventually.NoError(ip.t, timeout, func() error {
		st, err := ip.status(name)
		switch {
		case err != nil:
			return err
		case st.State != "failed":
			return fmt.Errorf("stream %s, want failed", st.State)
		}
		for _, want := range wants {
			if !strings.Contains(st.Reason, want) {
				ip.t.Fatalf("the stream failed with %q; want it to say %q", st.Reason, want)
			}
		}
		return nil
	})
}

// producer returns the n-th producer the pipeline created (waiting for it).
func (ip *inProcess) producer(n int) *harness.Producer {
	ip.t.Helper()
	var p *harness.Producer
	eventually.NoError(ip.t, 30*time.Second, func() error {
		ip.mu.Lock()
		defer ip.mu.Unlock()
		if len(ip.producers) <= n {
			return errors.New("the producer was not created")
		}
		p = ip.producers[n]
		return nil
	})
	return p
}

// syncBuffer is a bytes.Buffer safe for concurrent use: the pipeline logs from many
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) contains(sub string) bool { return strings.Contains(s.String(), sub) }

// sendLog records the sequence ids a plan saw acknowledged, in order: every send reaches
// the plan exactly once, when the broker answers it.
type sendLog struct {
	mu   sync.Mutex
	seqs []int64
}

func (l *sendLog) add(msg *pulsar.ProducerMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if msg.SequenceID != nil {
		l.seqs = append(l.seqs, *msg.SequenceID)
	}
}

func (l *sendLog) count(seq int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.seqs {
		if s == seq {
			n++
		}
	}
	return n
}

func (l *sendLog) all() []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int64(nil), l.seqs...)
}

// watchedStore counts the checkpoint store's writes and closes reached once a write stored
// recordingID's checkpoint at last: a test or benchmark waits for the end of a run on it
// instead of polling the store.
type watchedStore struct {
	store.Store
	recordingID, last int64
	reached           chan struct{}

	mu   sync.Mutex
	n    int
	done bool
}

func (s *watchedStore) Save(def store.Stream, cps []store.Checkpoint) error {
	err := s.Store.Save(def, cps)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if err != nil || s.done {
		return err
	}
	for _, c := range cps {
		if c.RecordingID == s.recordingID && c.Position == s.last {
			s.done = true
			close(s.reached)
		}
	}
	return nil
}

func (s *watchedStore) saves() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }
