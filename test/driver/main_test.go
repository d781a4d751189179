// Package driver tests ferry's Aeron client (package aeron) against the real Java media
// driver started by test/infra, and against Java peers no one here wrote.
package driver

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// uniqueStreamID is a stream id no other test (or earlier run against the same driver)
// used. The driver is shared with the other test packages, whose tests run at the same
// time as these: test/pipeline's run `ferry demo` on it, on the demo's fixed stream ids
// (1001, and 2001 for its archive's responses). A publication or subscription of another's
// on the same channel and stream would join this test's. (test/pipeline and
// test/archiving have the same helper.)
func uniqueStreamID() int32 { return 1<<20 + rand.Int32N(1<<29) }
