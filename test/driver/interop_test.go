package driver

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// javaSampleProps are the system properties Aeron's Java samples need to use the shared
// driver on channel and stream.
func javaSampleProps(channel string, stream int32, messages int) map[string]string {
	return map[string]string{
		"aeron.dir":                archive.AeronDir,
		"aeron.sample.channel":     channel,
		"aeron.sample.streamId":    strconv.Itoa(int(stream)),
		"aeron.sample.messages":    strconv.Itoa(messages),
		"java.net.preferIPv4Stack": "true",
	}
}

func startJava(t *testing.T, mainClass string, props map[string]string) *infra.JavaProcess {
	t.Helper()
	j, err := infra.StartJava(t.TempDir(), mainClass, props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = j.Stop()
		if t.Failed() {
			t.Logf("%s printed:\n%s", mainClass, j.Output())
		}
	})
	return j
}

// TestJavaPublisherToGoSubscriber: Aeron's own BasicPublisher (Java) publishes over UDP; our
// subscription receives exactly what it says it offered, in order.
func TestJavaPublisherToGoSubscriber(t *testing.T) {
	const messages = 3
	stream := infra.UniqueStreamID()
	channel := "aeron:udp?endpoint=" + freeUDPEndpoint(t)
	c := connect(t)
	sub, err := c.AddSubscription(context.Background(), channel, stream, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	java := startJava(t, "io.aeron.samples.BasicPublisher", javaSampleProps(channel, stream, messages))

	// BasicPublisher sends "Hello World! <i>" once a second, from its first offer on,
	// without waiting to be connected, and prints "yay!" for each accepted offer: what
	// arrives must be exactly the accepted ones, once the sample has finished.
	var got []string
	asm := aeron.NewFragmentAssembler(1<<20, func(b []byte, _ aeron.Header) { got = append(got, string(b)) })
	var accepted [][]string
	eventually.NoError(t, 60*time.Second, func() error {
		if _, err := sub.Poll(asm.OnFragment, 10); err != nil {
			t.Fatal(err)
		}
		if done, _ := java.Exited(); !done {
			return fmt.Errorf("BasicPublisher still running (%d received)", len(got))
		}
		accepted = regexp.MustCompile(`Offering (\d+)/\d+ - yay!`).FindAllStringSubmatch(java.Output(), -1)
		if len(accepted) == 0 {
			t.Fatalf("BasicPublisher had no offer accepted")
		}
		if len(got) < len(accepted) {
			return fmt.Errorf("received %d of %d accepted messages", len(got), len(accepted))
		}
		return nil
	})
	if len(got) != len(accepted) {
		t.Fatalf("received %q; the publisher had %d offers accepted", got, len(accepted))
	}
	for i, m := range got {
		if want := "Hello World! " + accepted[i][1]; m != want {
			t.Errorf("message %d = %q, want %q", i, m, want)
		}
	}
}

// TestGoPublisherToJavaSubscriber: our exclusive publication sends over UDP; Aeron's own
// BasicSubscriber (Java) prints every message, in order, intact.
func TestGoPublisherToJavaSubscriber(t *testing.T) {
	const messages = 20
	stream := infra.UniqueStreamID()
	channel := "aeron:udp?endpoint=" + freeUDPEndpoint(t)
	java := startJava(t, "io.aeron.samples.BasicSubscriber", javaSampleProps(channel, stream, 0))
	c := connect(t)
	pub, err := c.AddExclusivePublication(context.Background(), channel, stream)
	if err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 30*time.Second, func() error {
		if !pub.IsConnected() {
			return errors.New("the Java subscriber has not connected")
		}
		return nil
	})
	for i := range messages {
		msg := []byte(fmt.Sprintf("from go %d", i))
		eventually.NoError(t, 5*time.Second, func() error { _, err := pub.Offer(msg); return err })
	}
	printed := regexp.MustCompile(`Message to stream (\d+) from session (-?\d+) \((\d+)@(\d+)\) <<(.*)>>`)
	eventually.NoError(t, 30*time.Second, func() error {
		lines := printed.FindAllStringSubmatch(java.Output(), -1)
		if len(lines) < messages {
			return fmt.Errorf("BasicSubscriber printed %d of %d messages", len(lines), messages)
		}
		for i, l := range lines {
			want := fmt.Sprintf("from go %d", i)
			if l[5] != want || l[1] != strconv.Itoa(int(stream)) || l[2] != strconv.Itoa(int(pub.SessionID())) || l[3] != strconv.Itoa(len(want)) {
				t.Fatalf("BasicSubscriber line %d: %q; want stream %d, session %d, %d bytes, <<%s>>",
					i, l[0], stream, pub.SessionID(), len(want), want)
			}
		}
		return nil
	})
	if strings.Contains(java.Output(), "Exception") {
		t.Errorf("the Java subscriber reported an exception:\n%s", java.Output())
	}
}
