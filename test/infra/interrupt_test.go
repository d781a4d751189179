package infra

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sleeper is a process that stands in for a peer that never becomes ready.
func sleeper(t *testing.T) *process {
	t.Helper()
	dir := t.TempDir()
	proc, err := startProcess("sleeper", []string{"sleep", "300"}, nil, dir, filepath.Join(dir, "sleeper.log"), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proc.kill() })
	return proc
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", Loopback+":0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// wantInterrupted fails t unless wait, whose context is cancelled 300 ms in (a Ctrl-C while
// the peers start), returns an ErrInterrupted saying so at once, not a timeout.
func wantInterrupted(t *testing.T, wait func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(300*time.Millisecond, cancel)
	began := time.Now()
	err := wait(ctx)
	if !errors.Is(err, ErrInterrupted) || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "within") {
		t.Fatalf("the wait = %v; want an ErrInterrupted that says interrupted, not a timeout", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the wait took %s to see the Ctrl-C", took)
	}
}

// `make demo` Ctrl-C'd while the broker started said "pulsar not ready within 2m0s".
func TestACtrlCWhilePulsarStartsIsReportedAsInterruptedNotAsATimeout(t *testing.T) {
	p := &Pulsar{AdminURL: "http://" + deadPort(t), proc: sleeper(t)}
	wantInterrupted(t, func(ctx context.Context) error { return p.waitReady(ctx, time.Minute) })
}

// The same for the wait for the broker's health check that follows.
func TestACtrlCWhilePulsarGetsHealthyIsReportedAsInterruptedNotAsUnhealthy(t *testing.T) {
	p := &Pulsar{AdminURL: "http://" + deadPort(t), proc: sleeper(t), log: filepath.Join(t.TempDir(), "pulsar.log")}
	wantInterrupted(t, func(ctx context.Context) error { return p.waitHealthy(ctx, time.Minute, nil) })
}

// The same for the archive, which starts first.
func TestACtrlCWhileTheArchiveStartsIsReportedAsInterruptedNotAsATimeout(t *testing.T) {
	a := &Archive{AeronDir: t.TempDir(), proc: sleeper(t)}
	wantInterrupted(t, func(ctx context.Context) error { return a.waitReady(ctx, time.Minute) })
}

// An interrupted start is no failure: its error carries no log tail, a failed start's does.
func TestAnInterruptedStartCarriesNoLogTail(t *testing.T) {
	log := filepath.Join(t.TempDir(), "peer.log")
	if err := os.WriteFile(log, []byte("java says something\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := withLogTail(interrupted("pulsar", "ready", canceled()), log); strings.Contains(err.Error(), "java says") {
		t.Errorf("an interrupted start's error has the log tail: %v", err)
	}
	if err := withLogTail(errors.New("infra: pulsar not ready within 2m0s"), log); !strings.Contains(err.Error(), "java says") {
		t.Errorf("a failed start's error lacks the log tail: %v", err)
	}
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}
