// Package pipeline holds ferry's end-to-end tests: they run the real `ferry run` binary
// against the real Java ArchivingMediaDriver and the real Pulsar standalone that test/infra
// starts (or reuses from the environment), publish with ferry's own Aeron client into a
// recorded stream, and read what ferry published with a Pulsar reader. Nothing here mocks
// Aeron or Pulsar.
//
// The files:
//
//	main_test.go       TestMain: the shared peers and the ferry binary, built once
//	ferry_test.go      the ferry process (start, kill -9, SIGTERM, log), its configuration,
//	                   its stored checkpoints
//	publisher_test.go  recorded streams, publications, payloads, background publishing
//	consumer_test.go   Pulsar readers, the topic watcher, the broker's own counters,
//	                   the assertions on what arrived
//	helpers_test.go    tests of the helpers themselves (they run without `ferry run`)
//	pipeline_test.go   the end-to-end tests, one per lesson they pin
//	cli_test.go        the one-shot commands against the real archive (ferry recordings)
//	replay_test.go     how the replay reads the log (lessons 9, 10), in process
package pipeline

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/infra"
)

// peers are the archive and broker every test here shares. Tests keep to their own stream
// ids and topics; none kills or restarts a shared peer.
var peers *infra.Peers

// ferryBin is the ferry binary built for this test run.
var ferryBin string

func TestMain(m *testing.M) {
	if spec := os.Getenv(childPublisherEnv); spec != "" {
		os.Exit(runChildPublisher(spec))
	}
	os.Exit(runMain(m))
}

func runMain(m *testing.M) (code int) {
	flag.Parse()
	// Tests scribble over every payload buffer ferry recycles (a reuse too early puts garbage
	// into the topics they compare byte for byte); benchmarks measure ferry as it ships.
	scribble := flag.Lookup("test.bench").Value.String() == ""
	// Build while the peers start: both take seconds.
	type built struct {
		bin, dir string
		err      error
	}
	ch := make(chan built, 1)
	go func() {
		bin, dir, err := buildFerry(scribble)
		ch <- built{bin, dir, err}
	}()
	p, err := infra.Shared(context.Background(), infra.Need{Archive: true, Pulsar: true})
	b := <-ch
	if b.dir != "" {
		defer os.RemoveAll(b.dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	peers = p
	code = 1
	defer func() {
		if err := p.Close(code != 0); err != nil {
			fmt.Fprintln(os.Stderr, "infra: stopping peers:", err)
			code = 1 // peers left running fail the run, as in the other test packages
		}
	}()
	if b.err != nil {
		fmt.Fprintln(os.Stderr, b.err)
		return code
	}
	ferryBin = b.bin
	if a := p.Archive; a.Pid() != 0 {
		fmt.Printf("infra: archive (pid %d) ready in %s\n", a.Pid(), a.StartupTime.Round(time.Millisecond))
	}
	if broker := p.Pulsar; broker.Pid() != 0 {
		fmt.Printf("infra: pulsar (pid %d) ready in %s\n", broker.Pid(), broker.StartupTime.Round(time.Millisecond))
	}
	code = m.Run()
	return code
}

// buildFerry builds ./cmd/ferry into a fresh temporary directory (with -race when this
// test binary has it, with -tags ferry_scribble when scribble) and returns the binary and
// the directory to remove afterwards.
func buildFerry(scribble bool) (bin, dir string, err error) {
	root, err := moduleRoot()
	if err != nil {
		return "", "", err
	}
	dir, err = os.MkdirTemp("", "ferry-bin-")
	if err != nil {
		return "", "", fmt.Errorf("build ferry: %w", err)
	}
	bin = filepath.Join(dir, "ferry")
	args := []string{"build"}
	if raceEnabled {
		args = append(args, "-race")
	}
	if scribble {
		args = append(args, "-tags", "ferry_scribble")
	}
	args = append(args, "-o", bin, "./cmd/ferry")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", dir, fmt.Errorf("build ferry: go %s (in %s): %v\n%s", strings.Join(args, " "), root, err, out)
	}
	return bin, dir, nil
}

// moduleRoot is the directory of the go.mod this package belongs to.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := string(bytes.TrimSpace(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("go env GOMOD: not inside a module (%q)", gomod)
	}
	return filepath.Dir(gomod), nil
}
