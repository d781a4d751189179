package driver

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestDriverKilledIsReportedAndNothingLeaks kills the media driver with SIGKILL under a
// client that holds a publication and a subscription. The client must report the driver
// timeout (logged: about the driver timeout; the bound is generous, the point is that it
// is reported, not hung), fail every call from then on, and end all of its goroutines.
func TestDriverKilledIsReportedAndNothingLeaks(t *testing.T) {
	own, err := infra.StartArchive(context.Background(), infra.ArchiveOptions{Dir: filepath.Join(t.TempDir(), "archive")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = own.Stop()
		if t.Failed() {
			t.Logf("archive log tail:\n%s", own.LogTail())
		}
	})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	const driverTimeout, keepalive = 2 * time.Second, 100 * time.Millisecond
	ctx := context.Background()
	var reported []error
	c, err := aeron.Connect(ctx, aeron.Options{
		Dir: own.AeronDir, DriverTimeout: driverTimeout, KeepaliveInterval: keepalive,
		ResourceLinger: 200 * time.Millisecond,
		OnError:        func(err error) { reported = append(reported, err) },
	})
	if err != nil {
		t.Fatal(err)
	}
	sub, pub := pair(t, c, "aeron:ipc?term-length=64k", infra.UniqueStreamID())

	killed := time.Now()
	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Dead():
	case <-time.After(2*driverTimeout + 5*time.Second): // generous on a loaded machine: the point is "reported, not hung"
		t.Fatalf("no driver timeout reported %s after the driver was killed", time.Since(killed).Round(time.Millisecond))
	}
	t.Logf("driver timeout reported %s after kill -9", time.Since(killed).Round(time.Millisecond))
	if err := c.Err(); !errors.Is(err, aeron.ErrDriverTimeout) {
		t.Fatalf("client error = %v, want ErrDriverTimeout", err)
	}
	if _, err := pub.Offer([]byte("after")); !errors.Is(err, aeron.ErrClosed) || !errors.Is(err, aeron.ErrDriverTimeout) {
		t.Errorf("offer after driver death = %v, want ErrClosed caused by the driver timeout", err)
	}
	if n, err := sub.Poll(func([]byte, aeron.Header) {}, 10); n != 0 || !errors.Is(err, aeron.ErrClosed) || !errors.Is(err, aeron.ErrDriverTimeout) {
		t.Errorf("poll after driver death = %d, %v; want 0 and ErrClosed caused by the driver timeout", n, err)
	}
	if _, err := c.AddSubscription(ctx, "aeron:ipc", infra.UniqueStreamID(), aeron.ImageHandlers{}); !errors.Is(err, aeron.ErrDriverTimeout) {
		t.Errorf("AddSubscription after driver death = %v, want ErrDriverTimeout", err)
	}
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not release its resources within 5 s of the driver's death")
	}
	if err := c.Close(); !errors.Is(err, aeron.ErrDriverTimeout) {
		t.Errorf("Close after driver death = %v, want the driver timeout", err)
	}
	if len(reported) == 0 || !errors.Is(reported[0], aeron.ErrDriverTimeout) {
		t.Errorf("OnError got %v, want the driver timeout", reported)
	}
}
