package infra

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A restart after kill -9 can leave the broker's bookie in an endless registration-lock
// loop (CI, 2026-11-29: 10,608 "was invalidated" lines in 40 s, every producer and reader
// timed out) while the broker's health check may still catch it in a registered moment.
// waitHealthy must call that start unhealthy so Restart replaces the process, and must not
// mistake the handful of invalidations a healthy start logs for the loop.
func TestWaitHealthyTellsTheRegistrationLockLoopFromAHealthyStart(t *testing.T) {
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/admin/v2/brokers/health" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer health.Close()

	line := "INFO  org.apache.pulsar.metadata.coordination.impl.ResourceLockImpl - Lock on resource /ledgers/available/127.0.0.1:41447 was invalidated. state Valid\n"
	for _, c := range []struct {
		name          string
		before, since int
		wantUnhealthy bool
	}{
		{"healthy start", 0, 6, false},
		{"loop in an earlier process only", 5000, 3, false},
		{"loop since the start", 0, lockLoopLines, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &Pulsar{AdminURL: health.URL, log: filepath.Join(dir, "pulsar.log")}
			if err := os.WriteFile(p.log, []byte(strings.Repeat(line, c.before)), 0o644); err != nil {
				t.Fatal(err)
			}
			mark, err := os.Stat(p.log)
			if err != nil {
				t.Fatal(err)
			}
			proc, err := startProcess("sleeper", []string{"sleep", "300"}, nil, dir, filepath.Join(dir, "sleeper.log"), nil, false)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = proc.kill() })
			p.proc = proc
			f, err := os.OpenFile(p.log, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.WriteString(strings.Repeat(line, c.since))
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}

			err = p.waitHealthy(context.Background(), 5*time.Second, mark)
			if got := errors.Is(err, errUnhealthy); got != c.wantUnhealthy {
				t.Fatalf("waitHealthy = %v; unhealthy %v, want %v", err, got, c.wantUnhealthy)
			}
		})
	}
}
