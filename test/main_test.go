// Package test holds ferry's end-to-end and failure-scenario tests. They run against the
// real Java Aeron ArchivingMediaDriver and a real Pulsar standalone started by test/infra
// (or reused from the environment: see infra.Shared); nothing here mocks either peer.
package test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ferry-bridge/ferry/test/infra"
)

// peers are the archive and broker shared by every test in this package. A test that kills
// or restarts a peer starts its own instead.
var peers *infra.Peers

func TestMain(m *testing.M) {
	p, err := infra.Shared(context.Background(), infra.Need{Archive: true, Pulsar: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	peers = p
	if a := p.Archive; a.Pid() != 0 {
		fmt.Printf("infra: archive (pid %d) ready in %s\n", a.Pid(), a.StartupTime.Round(1e6))
	}
	if b := p.Pulsar; b.Pid() != 0 {
		fmt.Printf("infra: pulsar (pid %d) ready in %s\n", b.Pid(), b.StartupTime.Round(1e6))
	}
	code := m.Run()
	if err := p.Close(code != 0); err != nil {
		fmt.Fprintln(os.Stderr, "infra: stopping peers:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
