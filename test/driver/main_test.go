// Package driver tests ferry's Aeron client (package aeron) against the real Java media
// driver started by test/infra, and against Java peers no one here wrote.
package driver

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/ferry-bridge/ferry/test/infra"
)

// archive is the shared ArchivingMediaDriver (a media driver with an archive in it).
var archive *infra.Archive

func TestMain(m *testing.M) {
	p, err := infra.Shared(context.Background(), infra.Need{Archive: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	archive = p.Archive
	code := m.Run()
	if err := p.Close(code != 0); err != nil {
		fmt.Fprintln(os.Stderr, "infra: stopping peers:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
