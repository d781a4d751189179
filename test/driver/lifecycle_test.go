package driver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestClosedPublicationEndsTheStreamAndLogsAreUnmappedAfterLinger: when an IPC publisher
// closes, its subscriber reads everything, sees end of stream, then the image becomes
// unavailable; a poll of the closed image delivers nothing and still reads mapped memory
// (the log stays mapped for the linger time), and once the linger has passed the log is
// unmapped.
func TestClosedPublicationEndsTheStreamAndLogsAreUnmappedAfterLinger(t *testing.T) {
	const linger = 3 * time.Second
	ctx := context.Background()
	var unavailable atomic.Pointer[aeron.Image]
	c, err := aeron.Connect(ctx, aeron.Options{Dir: archive.AeronDir, ResourceLinger: linger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	const channel = "aeron:ipc?term-length=64k"
	stream := infra.UniqueStreamID()
	sub, err := c.AddSubscription(ctx, channel, stream, aeron.ImageHandlers{
		OnUnavailable: func(img *aeron.Image) { unavailable.Store(img) },
	})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := c.AddExclusivePublication(ctx, channel, stream)
	if err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if !sub.IsConnected() {
			return errors.New("no image")
		}
		return nil
	})
	img := sub.Images()[0]
	logs := logMappings(t)
	if len(logs) == 0 {
		t.Fatal("no log buffer of the driver is mapped while a publication and an image are open")
	}
	const sent = 10
	for i := range sent {
		eventually.NoError(t, 5*time.Second, func() error { _, err := pub.Offer([]byte(fmt.Sprint(i))); return err })
	}
	final := pub.Position()
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}

	received := 0
	eventually.NoError(t, 15*time.Second, func() error {
		n, err := img.Poll(func([]byte, aeron.Header) {}, 100)
		if err != nil {
			t.Fatal(err)
		}
		received += n
		if !img.IsEndOfStream() {
			return fmt.Errorf("no end of stream at position %d (publisher ended at %d, %d received)", img.Position(), final, received)
		}
		return nil
	})
	if received != sent || img.Position() != final {
		t.Errorf("at end of stream: %d messages, position %d; want %d, %d", received, img.Position(), sent, final)
	}

	eventually.NoError(t, 15*time.Second, func() error {
		if unavailable.Load() != img {
			return errors.New("the image has not become unavailable")
		}
		return nil
	})
	closedAt := time.Now()
	if !img.IsClosed() || sub.IsConnected() {
		t.Errorf("after unavailable: image closed %v, subscription connected %v", img.IsClosed(), sub.IsConnected())
	}
	if n, err := img.Poll(func([]byte, aeron.Header) { t.Error("a closed image delivered a fragment") }, 10); n != 0 || err != nil {
		t.Errorf("poll of a closed image = %d, %v", n, err)
	}
	if still := logMappings(t); time.Since(closedAt) < linger/2 && !sameKeys(still, logs) {
		t.Errorf("the log was unmapped before the linger time: mapped %v, had %v", still, logs)
	}
	eventually.NoError(t, linger+2*time.Second, func() error {
		if left := logMappings(t); len(left) != 0 {
			return fmt.Errorf("still mapped %s after the image closed: %v", time.Since(closedAt).Round(time.Millisecond), left)
		}
		return nil
	})
	if took := time.Since(closedAt); took < linger-500*time.Millisecond {
		t.Errorf("unmapped %s after the image closed, before the %s linger", took.Round(time.Millisecond), linger)
	}
}

// logMappings lists the driver's log buffer files this process has mapped, with how many
// mappings each has (from /proc/self/maps).
func logMappings(t *testing.T) map[string]int {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	prefix := filepath.Clean(archive.AeronDir) + "/"
	found := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "addr perms offset dev inode path", and " (deleted)" after the path once the
		// driver has removed the file: the mapping outlives the file.
		line := strings.TrimSuffix(sc.Text(), " (deleted)")
		fields := strings.Fields(line)
		if path := fields[len(fields)-1]; strings.HasPrefix(path, prefix) && strings.HasSuffix(path, ".logbuffer") {
			found[path]++
		}
	}
	return found
}

func sameKeys(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}
