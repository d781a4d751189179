package main

import (
	"bytes"
	"context"
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
	switch os.Getenv(signalChildEnv) {
	case "copy after a quick drain":
		aCopyOfTheSignalAfterAQuickDrain()
	case "copy as the run ends":
		aCopyOfTheSignalAsTheRunEnds()
	case "hangup":
		aHangupDrains()
	case "hangup ignored":
		aHangupIgnoredIsNotTaken()
	}
	os.Exit(m.Run())
}

// aCopyOfTheSignalAfterAQuickDrain is the child of the test below: a signal, a drain that
// ends at once, then the copy of the signal a wrapper forwards (peers, under `make demo`),
// while the process cleans up.
func aCopyOfTheSignalAfterAQuickDrain() {
	ctx, stop := drainOnSignal(context.Background(), slog.New(slog.DiscardHandler), "")
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	<-ctx.Done()
	stop() // the run has ended: nothing was in flight
	cleanUpThroughACopy()
}

// aCopyOfTheSignalAsTheRunEnds is the child of the test below: the run ends on its own just
// as a signal comes, then the signal's copy comes while the process cleans up.
func aCopyOfTheSignalAsTheRunEnds() {
	_, stop := drainOnSignal(context.Background(), slog.New(slog.DiscardHandler), "")
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	stop() // the run ended meanwhile, before the signal was taken
	cleanUpThroughACopy()
}

// aHangupDrains is the child of the test below: a hangup (the terminal closed, or peers
// forwarded its own) starts the drain like SIGTERM instead of killing the process.
func aHangupDrains() {
	ctx, stop := drainOnSignal(context.Background(), slog.New(slog.DiscardHandler), "")
	_ = syscall.Kill(os.Getpid(), syscall.SIGHUP)
	<-ctx.Done()
	stop()
	fmt.Println("cleaned up")
	os.Exit(0)
}

// aHangupIgnoredIsNotTaken is the child of the test below, started with SIGHUP ignored
// (nohup): a hangup then neither drains nor kills it.
func aHangupIgnoredIsNotTaken() {
	ctx, stop := drainOnSignal(context.Background(), slog.New(slog.DiscardHandler), "")
	_ = syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
		fmt.Println("drained on a hangup started ignored")
		os.Exit(1)
	case <-time.After(300 * time.Millisecond): // a taken signal ends ctx within microseconds
	}
	stop()
	fmt.Println("cleaned up")
	os.Exit(0)
}

// cleanUpThroughACopy sends the process the signal's copy, cleans up (`ferry demo`'s: its
// sample publisher, its temporary directory) and prints "cleaned up" if it lived through
// it. A copy not taken for the same request kills the process with Go's default within a
// few microseconds of the kill; the clean-up here lasts far longer. The parent asserts.
func cleanUpThroughACopy() {
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	fmt.Println("cleaned up")
	os.Exit(0)
}

// TestACopyOfTheSignalAfterAQuickDrainIsTheSameRequest: a second signal within a second of
// the first is the same request even when the drain took less (nothing in flight): it must
// not kill the process in its clean-up — `make demo`'s Ctrl-C reaches ferry twice, from the
// terminal and from peers, and the demo then left its temporary directory behind.
func TestACopyOfTheSignalAfterAQuickDrainIsTheSameRequest(t *testing.T) {
	survives(t, "copy after a quick drain")
}

// TestACopyOfTheSignalAsTheRunEndsIsTheSameRequest: a signal that comes as the run ends on
// its own, and its copy, do not kill the process in its clean-up either.
func TestACopyOfTheSignalAsTheRunEndsIsTheSameRequest(t *testing.T) {
	for range 10 { // the signal and the run's end race: each run may go either way
		survives(t, "copy as the run ends")
	}
}

// TestAHangupDrains: SIGHUP starts the drain as SIGTERM does; Go's default for it killed
// ferry with its messages in flight when the terminal running it closed.
func TestAHangupDrains(t *testing.T) {
	survives(t, "hangup")
}

// TestAHangupIgnoredAtTheStartStaysIgnored: under nohup (SIGHUP ignored when ferry starts)
// the terminal closing must not stop ferry; asking for SIGHUP would end the ignoring.
func TestAHangupIgnoredAtTheStartStaysIgnored(t *testing.T) {
	survives(t, "hangup ignored", "nohup")
}

// survives runs the test binary (through wrapper, a command such as nohup, if given) as the
// signalled process of scenario and fails unless it exits 0 after its clean-up.
func survives(t *testing.T, scenario string, wrapper ...string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(wrapper, self, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), signalChildEnv+"="+scenario)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	err = cmd.Run()
	if err != nil || !bytes.Contains(out.Bytes(), []byte("cleaned up")) {
		t.Fatalf("%s: the process ended %v, output %q; want exit 0 after its clean-up", scenario, err, out.String())
	}
}
