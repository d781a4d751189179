package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// signalChildEnv makes the test binary, run again by a test here, play the process that
// receives the signals instead of running the tests.
const signalChildEnv = "FERRY_TEST_SIGNAL_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(signalChildEnv) == "copy after a quick drain" {
		aCopyOfTheSignalAfterAQuickDrain()
		return
	}
	os.Exit(m.Run())
}

// aCopyOfTheSignalAfterAQuickDrain is the child of the test below: a signal, a drain that
// ends at once, then the copy of the signal a wrapper forwards (peers, under `make demo`),
// while the process cleans up. It prints "cleaned up" if it lived through it.
func aCopyOfTheSignalAfterAQuickDrain() {
	ctx, stop := drainOnSignal(slog.New(slog.DiscardHandler), "")
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	<-ctx.Done()
	stop() // the run has ended: nothing was in flight
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	// The clean-up (`ferry demo`'s: its sample publisher, its temporary directory). A copy
	// not taken for the same request kills the process with Go's default within a few
	// microseconds of the kill; this leaves it far longer.
	time.Sleep(200 * time.Millisecond)
	fmt.Println("cleaned up")
	os.Exit(0)
}

// TestACopyOfTheSignalAfterAQuickDrainIsTheSameRequest: a second signal within a second of
// the first is the same request even when the drain took less (nothing in flight): it must
// not kill the process in its clean-up — `make demo`'s Ctrl-C reaches ferry twice, from the
// terminal and from peers, and the demo then left its temporary directory behind.
func TestACopyOfTheSignalAfterAQuickDrainIsTheSameRequest(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), signalChildEnv+"=copy after a quick drain")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	err = cmd.Run()
	if err != nil || !bytes.Contains(out.Bytes(), []byte("cleaned up")) {
		t.Fatalf("the process that took a copy of the signal after its drain ended: %v, output %q; want exit 0 after its clean-up", err, out.String())
	}
}
