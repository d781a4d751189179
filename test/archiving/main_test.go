// Package archiving tests ferry's Aeron Archive client (package aeron/archive) against the
// real Java ArchivingMediaDriver started by test/infra, and against Java archive samples.
package archiving

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/infra"
)

// shared is the archive every test here uses unless it kills or restarts one of its own.
var shared *infra.Archive

func TestMain(m *testing.M) {
	p, err := infra.Shared(context.Background(), infra.Need{Archive: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	shared = p.Archive
	code := m.Run()
	if err := p.Close(code != 0); err != nil {
		fmt.Fprintln(os.Stderr, "infra: stopping peers:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// session is an Aeron client and an archive control session on an archive's media driver.
type session struct {
	aeron   *aeron.Client
	archive *archive.Client
}

// startOwnArchive starts an archive of the test's own, with properties added to the
// defaults (infra.ArchiveProperties); it is stopped when the test ends, and its log tail
// printed if the test failed.
func startOwnArchive(t *testing.T, properties map[string]string) *infra.Archive {
	t.Helper()
	own, err := infra.StartArchive(context.Background(), infra.ArchiveOptions{Dir: filepath.Join(t.TempDir(), "archive"), Properties: properties})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = own.Stop()
		if t.Failed() {
			t.Logf("archive log:\n%s", own.LogTail())
		}
	})
	return own
}

func connect(t testing.TB, a *infra.Archive, opts archive.Options) session {
	t.Helper()
	return connectWith(t, a, aeron.Options{}, opts)
}

func connectWith(t testing.TB, a *infra.Archive, aeronOpts aeron.Options, opts archive.Options) session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	aeronOpts.Dir = a.AeronDir
	ac, err := aeron.Connect(ctx, aeronOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ac.Close() })
	arc, err := archive.Connect(ctx, ac, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = arc.Close() })
	return session{aeron: ac, archive: arc}
}
