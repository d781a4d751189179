package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
)

// standInPublication is an offerer that refuses the offers of the messages numbered in
// refuse, each once, with the error given, and takes every other one. It cancels the
// loop's context once it has taken want messages.
type standInPublication struct {
	refuse map[int]error
	want   int
	cancel context.CancelFunc
	taken  []string
	pos    int64
}

func (s *standInPublication) Offer(payload []byte) (int64, error) {
	var n int
	if _, err := fmt.Sscanf(string(payload), "demo message %d at", &n); err != nil {
		return 0, fmt.Errorf("not a demo message: %q", payload)
	}
	if err, ok := s.refuse[n]; ok {
		delete(s.refuse, n)
		return 0, err
	}
	s.taken = append(s.taken, string(payload))
	if len(s.taken) == s.want {
		s.cancel()
	}
	s.pos += int64(len(payload))
	return s.pos, nil
}

func (s *standInPublication) Close() error { return nil }

// runSampleLoop runs a sample loop on pub, its ticks always due, until pub has what it
// wants, and returns the loop's count of ticks given up.
func runSampleLoop(t *testing.T, pub *standInPublication, retryFor time.Duration) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub.cancel = cancel
	ticks := make(chan time.Time)
	close(ticks) // always ready
	var gaveUp atomic.Int64
	l := &sampleLoop{ticks: ticks, pub: pub, retryFor: retryFor, offered: func(int64) {}, gaveUp: &gaveUp, stdout: io.Discard, stderr: io.Discard}
	l.run(ctx)
	if len(pub.taken) != pub.want {
		t.Fatalf("the loop ended after %d messages, want %d (%v)", len(pub.taken), pub.want, ctx.Err())
	}
	return gaveUp.Load()
}

// consecutive fails t unless taken are messages 0, 1, 2, … in order.
func consecutive(t *testing.T, taken []string) {
	t.Helper()
	for i, m := range taken {
		if !strings.HasPrefix(m, fmt.Sprintf("demo message %d at ", i)) {
			t.Fatalf("message %d taken is %q: a number skipped or repeated", i, m)
		}
	}
}

func TestTheSamplePublisherSkipsNoNumberAtATermRotation(t *testing.T) {
	pub := &standInPublication{refuse: map[int]error{3: aeron.ErrAdminAction, 7: aeron.ErrBackPressured}, want: 10}
	if n := runSampleLoop(t, pub, time.Second); n != 0 {
		t.Errorf("%d ticks given up; a rotation and a moment's back-pressure are retried at once", n)
	}
	consecutive(t, pub.taken)
}

func TestTheSamplePublisherCountsAnOfferGivenUpAndOffersItsNumberAgain(t *testing.T) {
	pub := &standInPublication{refuse: map[int]error{2: aeron.ErrNotConnected}, want: 5}
	if n := runSampleLoop(t, pub, 0); n != 1 {
		t.Errorf("%d ticks given up, want 1", n)
	}
	consecutive(t, pub.taken)
}

func TestTheDemosConfigurationIgnoresTheUsersFerryVariables(t *testing.T) {
	env := map[string]string{
		"FERRY_STORE_PATH":         filepath.Join(t.TempDir(), "prod.db"),
		"FERRY_PULSAR_SERVICE_URL": "pulsar://production:6650",
		"FERRY_HTTP_LISTEN":        "127.0.0.1:18089",
	}
	before := lookupEnv
	t.Cleanup(func() { lookupEnv = before })
	lookupEnv = func(name string) (string, bool) { v, ok := env[name]; return v, ok }

	dir := t.TempDir()
	_, cfg, err := demoConfig(dir, "/dev/shm/aeron-demo", "pulsar://127.0.0.1:6650", "", "127.0.0.1:18090")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "ferry-demo-checkpoints.db"); cfg.Store.Path != want {
		t.Errorf("store.path = %s, want the demo's own %s", cfg.Store.Path, want)
	}
	if cfg.Pulsar.ServiceURL != "pulsar://127.0.0.1:6650" {
		t.Errorf("pulsar.service_url = %s, want the demo's --pulsar", cfg.Pulsar.ServiceURL)
	}
	if cfg.HTTP.Listen != "127.0.0.1:18090" {
		t.Errorf("http.listen = %s, want the demo's --listen", cfg.HTTP.Listen)
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	slices.Sort(environ)
	if got := demoIgnoredEnv(environ); !slices.Equal(got, []string{"FERRY_HTTP_LISTEN", "FERRY_PULSAR_SERVICE_URL", "FERRY_STORE_PATH"}) {
		t.Errorf("the demo says it ignores %v", got)
	}
}

// The demo's flags' values are written into its configuration as they are given: a --dir
// with " #" in its name (unquoted, YAML took the rest for a comment, and the demo's store
// was opened outside --dir) and a --listen of an IPv6 address (unquoted, a list) are read
// back as given. A value the configuration refuses is a usage error naming the flag, not a
// line of the demo's file.
func TestTheDemosFlagsAreWrittenIntoItsConfigurationAsGiven(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x #1")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, cfg, err := demoConfig(dir, "/dev/shm/aeron demo: #2", "pulsar://127.0.0.1:6650", "http://127.0.0.1:8080", "[::1]:8090")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, demoStoreFile); cfg.Store.Path != want {
		t.Errorf("store.path = %q, want %q", cfg.Store.Path, want)
	}
	if cfg.Aeron.Dir != "/dev/shm/aeron demo: #2" || cfg.HTTP.Listen != "[::1]:8090" || cfg.Pulsar.AdminURL != "http://127.0.0.1:8080" {
		t.Errorf("aeron.dir %q, http.listen %q, pulsar.admin_url %q; want them as given", cfg.Aeron.Dir, cfg.HTTP.Listen, cfg.Pulsar.AdminURL)
	}
	_, _, err = demoConfig(t.TempDir(), "/dev/shm/aeron-demo", "foo", "", "127.0.0.1:18090")
	var usage usageError
	if !errors.As(err, &usage) || !strings.HasPrefix(usage.Error(), `--pulsar "foo": is not a URL`) {
		t.Errorf("a --pulsar the configuration refuses: %v; want a usage error naming --pulsar", err)
	}
}

// TestFerryDoesNotRunOnWhenTheDemoWasStoppedBeforeItStarted: a Ctrl-C the demo took before
// ferry's own signal handler was there (the demo still connected to Pulsar) ends ferry's
// run through the demo's context: ferry must not start and run on until a second Ctrl-C.
func TestFerryDoesNotRunOnWhenTheDemoWasStoppedBeforeItStarted(t *testing.T) {
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := free.Addr().String()
	_ = free.Close()
	path, _ := writeConfig(t, "http:\n  listen: "+listen+"\naeron:\n  dir: "+t.TempDir()+"\n")
	cfg, err := loadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the demo's Ctrl-C
	var log syncBuffer
	ran := make(chan error, 1)
	go func() { ran <- runLoaded(ctx, path, cfg, nil, &log) }()
	select {
	case err := <-ran:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("the run ended with %v", err)
		}
		t.Logf("ferry's log:\n%s", log.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("ferry still runs 20 s after the demo's context ended:\n%s", log.String())
	}
}

// TestTheDemosTopicReaderStopsWaitingForPulsarOnCtrlC: a Ctrl-C while the demo creates its
// topic reader (pulsar-client-go's calls take no context) ends the wait at once, and the
// demo's clean-up does not wait for the reader's goroutine beyond its bound.
func TestTheDemosTopicReaderStopsWaitingForPulsarOnCtrlC(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r := &topicReader{closeWait: time.Second}
	began := time.Now()
	err = r.run(ctx, "pulsar://"+silent.Addr().String())
	if !errors.Is(err, context.Canceled) || time.Since(began) > 2*time.Second {
		t.Fatalf("run = %v after %s; want context.Canceled within a moment of the Ctrl-C", err, time.Since(began))
	}
	began = time.Now()
	var said syncBuffer
	r.close(&said)
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("close took %s; want its bound, 1 s", took)
	}
	if !strings.Contains(said.String(), "still waits for Pulsar") {
		t.Errorf("close said %q; want it to say it left the reader waiting", said.String())
	}
}

// TestADemoWhosePortIsTakenSaysSoFirstAndNamesListen: two demos at once (the second's
// status port taken) failed only once Pulsar, the publisher and ferry had started, advising
// "set http.listen", which the demo's user cannot. It must fail before it connects to
// anything (here there is nothing to connect to) and name --listen.
func TestADemoWhosePortIsTakenSaysSoFirstAndNamesListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	code, _, errOut := ferry("demo", "--aeron-dir", t.TempDir(), "--listen", taken.Addr().String())
	if code != exitFailure || !strings.Contains(errOut, "address already in use") || !strings.Contains(errOut, "--listen") {
		t.Fatalf("ferry demo on a port taken = %d, %q; want 1, the port taken and --listen", code, errOut)
	}
}

// A malformed --listen, or a --dir that is missing or not a directory, is a usage error
// (exit 2) naming the flag, before anything starts.
func TestTheDemosFlagsAreCheckedFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--listen", "bogus"}, `--listen "bogus": give the status endpoint's host:port`},
		{[]string{"--dir", filepath.Join(t.TempDir(), "missing")}, "create the directory, or leave --dir out"},
		{[]string{"--dir", file}, "is not a directory"},
	} {
		code, _, errOut := ferry(append([]string{"demo", "--aeron-dir", t.TempDir()}, c.args...)...)
		if code != exitUsage || !strings.Contains(errOut, c.want) {
			t.Errorf("ferry demo %q = %d, %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// TestTheDemosReaderCountsMessagesThatAreNotFerrysApart: a message on the demo's topic
// without ferry's recording id and position properties was counted as recording 0 at
// position 0: it must be left out of ferry's count and position, and counted apart.
func TestTheDemosReaderCountsMessagesThatAreNotFerrysApart(t *testing.T) {
	var r topicReader
	r.add(map[string]string{actors.PropRecordingID: "1", actors.PropPosition: "96"})
	r.add(map[string]string{})                                                      // someone else's
	r.add(map[string]string{actors.PropRecordingID: "x", actors.PropPosition: "1"}) // damaged
	r.add(map[string]string{actors.PropRecordingID: "1", actors.PropPosition: "192"})
	n, pos, foreign := r.get(1)
	if n != 2 || pos != 192 || foreign != 2 {
		t.Errorf("get(1) = %d messages, position %d, %d foreign; want 2, 192, 2", n, pos, foreign)
	}
	if _, pos0, _ := r.get(0); pos0 != 0 {
		t.Errorf("recording 0 has position %d: a foreign message was taken for ferry's", pos0)
	}
}

// fakeRecorder is the archive as recordAndPublish asks it: StartRecording answers startErr
// or subscription 42, and the subscriptions stopped are kept.
type fakeRecorder struct {
	startErr error
	stopped  []int64
}

func (f *fakeRecorder) StartRecording(context.Context, string, int32, archive.SourceLocation, bool) (int64, error) {
	if f.startErr != nil {
		return 0, f.startErr
	}
	return 42, nil
}

func (f *fakeRecorder) StopRecordingSubscription(_ context.Context, id int64) error {
	f.stopped = append(f.stopped, id)
	return nil
}

// The demo stops the recording subscription it started when its publication then fails:
// left behind, it recorded on and every later demo on that archive found it
// (ACTIVE_SUBSCRIPTION) with no one to stop it. One an earlier demo started is not its own
// to stop; one that started with the publication is stopped at the demo's close.
func TestTheDemoStopsTheRecordingItStartedWhenItsPublicationFails(t *testing.T) {
	failed := errors.New("no publication")
	for _, c := range []struct {
		name     string
		startErr error
		pubErr   error
		stopped  []int64
	}{
		{"publication fails", nil, failed, []int64{42}},
		{"an earlier demo's subscription, publication fails", &archive.Error{Code: archiveActiveSubscription}, failed, nil},
		{"publication added", nil, nil, nil},
	} {
		arc := &fakeRecorder{startErr: c.startErr}
		subID, _, err := recordAndPublish(context.Background(), arc, func(context.Context) (int, error) { return 1, c.pubErr })
		if !errors.Is(err, c.pubErr) || (err == nil) != (c.pubErr == nil) {
			t.Errorf("%s: err %v; want %v", c.name, err, c.pubErr)
		}
		if !slices.Equal(arc.stopped, c.stopped) {
			t.Errorf("%s: subscriptions stopped %v; want %v", c.name, arc.stopped, c.stopped)
		}
		if c.pubErr == nil && subID != 42 {
			t.Errorf("%s: subscription %d; want 42, for the demo's close to stop", c.name, subID)
		}
	}
}
