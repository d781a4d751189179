package driver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

func connect(t *testing.T) *aeron.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := aeron.Connect(ctx, aeron.Options{Dir: archive.AeronDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close client: %v", err)
		}
	})
	return c
}

func TestSmokeIPC(t *testing.T) {
	c := connect(t)
	ctx := context.Background()
	const channel = "aeron:ipc?term-length=64k"
	stream := infra.UniqueStreamID()
	sub, err := c.AddSubscription(ctx, channel, stream, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	pub, err := c.AddExclusivePublication(ctx, channel, stream)
	if err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if !sub.IsConnected() {
			return errors.New("no image yet")
		}
		return nil
	})
	var got []string
	asm := aeron.NewFragmentAssembler(pub.MaxMessageLength(), func(p []byte, _ aeron.Header) { got = append(got, string(p)) })
	for i := 0; i < 100; i++ {
		msg := []byte(fmt.Sprintf("message %d", i))
		eventually.NoError(t, 5*time.Second, func() error { _, err := pub.Offer(msg); return err })
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if _, err := sub.Poll(asm.OnFragment, 10); err != nil {
			t.Fatal(err)
		}
		if len(got) < 100 {
			return fmt.Errorf("%d of 100", len(got))
		}
		return nil
	})
	for i, m := range got {
		if m != fmt.Sprintf("message %d", i) {
			t.Fatalf("message %d = %q", i, m)
		}
	}
}
