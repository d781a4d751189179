package archiving

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// javaArchiveSampleProps are what Aeron's Java archive samples need to reach the shared
// archive over its UDP control channel, with their sample channel and stream.
func javaArchiveSampleProps(channel string, stream int32, messages int) map[string]string {
	props := shared.JavaClientProperties()
	props["aeron.sample.channel"] = channel
	props["aeron.sample.streamId"] = strconv.Itoa(int(stream))
	props["aeron.sample.messages"] = strconv.Itoa(messages)
	return props
}

// TestJavaRecordingReplaysInGo: Aeron's RecordedBasicPublisher (Java) records a stream;
// our client finds it by channel and stream, and replays exactly what the sample says it
// published, in order.
func TestJavaRecordingReplaysInGo(t *testing.T) {
	const messages = 3
	stream := infra.UniqueStreamID()
	out, err := infra.RunJava(context.Background(), time.Minute, "io.aeron.samples.archive.RecordedBasicPublisher",
		javaArchiveSampleProps("aeron:ipc", stream, messages))
	if err != nil {
		t.Fatalf("RecordedBasicPublisher: %v\n%s", err, out)
	}
	accepted := regexp.MustCompile(`Offering (\d+)/\d+ - yay!`).FindAllStringSubmatch(out, -1)
	m := regexp.MustCompile(`Recording started: recordingId = (\d+)`).FindStringSubmatch(out)
	if m == nil || len(accepted) == 0 {
		t.Fatalf("RecordedBasicPublisher recorded nothing:\n%s", out)
	}
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	found, err := s.archive.RecordingsForURI(ctx, "aeron:ipc", stream, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || strconv.FormatInt(found[0].RecordingID, 10) != m[1] || found[0].IsLive() {
		t.Fatalf("recordings of stream %d = %+v, want the stopped recording %s", stream, found, m[1])
	}
	var got []string
	readUntilEnd(t, startReplay(t, s, found[0].RecordingID, archive.NullPosition, archive.ReplayToEnd), func(r replayed) {
		got = append(got, string(r.payload))
	})
	if len(got) != len(accepted) {
		t.Fatalf("replayed %q; the publisher had %d offers accepted", got, len(accepted))
	}
	for i, a := range accepted {
		if want := "Hello World! " + a[1]; got[i] != want {
			t.Errorf("replayed message %d = %q, want %q", i, got[i], want)
		}
	}
}

// TestGoRecordingReplaysInJava: a recording our client starts and our publication feeds
// is found and replayed by Aeron's ReplayedBasicSubscriber (Java), which prints every
// message, in order, intact.
func TestGoRecordingReplaysInJava(t *testing.T) {
	const messages = 10
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	stream := infra.UniqueStreamID()
	subID, err := s.archive.StartRecording(ctx, "aeron:ipc", stream, archive.SourceLocal, false)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := s.aeron.AddExclusivePublication(ctx, "aeron:ipc", stream)
	if err != nil {
		t.Fatal(err)
	}
	id := nextSignal(t, s.archive, archive.SignalStart).RecordingID
	for i := range messages {
		msg := []byte(fmt.Sprintf("recorded by go %d", i))
		eventually.NoError(t, 5*time.Second, func() error { _, err := pub.Offer(msg); return err })
	}
	waitRecorded(t, s, id, pub.Position())
	if err := s.archive.StopRecordingSubscription(ctx, subID); err != nil {
		t.Fatal(err)
	}

	java, err := infra.StartJava(t.TempDir(), "io.aeron.samples.archive.ReplayedBasicSubscriber", javaArchiveSampleProps("aeron:ipc", stream, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = java.Stop()
		if t.Failed() {
			t.Logf("ReplayedBasicSubscriber printed:\n%s", java.Output())
		}
	})
	printed := regexp.MustCompile(`Message to stream \d+ from session -?\d+ \((\d+)@\d+\) <<(.*)>>`)
	eventually.NoError(t, 30*time.Second, func() error {
		lines := printed.FindAllStringSubmatch(java.Output(), -1)
		if len(lines) < messages {
			if done, err := java.Exited(); done {
				t.Fatalf("ReplayedBasicSubscriber exited (%v) after %d messages", err, len(lines))
			}
			return fmt.Errorf("ReplayedBasicSubscriber printed %d of %d messages", len(lines), messages)
		}
		for i, l := range lines {
			if want := fmt.Sprintf("recorded by go %d", i); l[2] != want || l[1] != strconv.Itoa(len(want)) {
				t.Fatalf("ReplayedBasicSubscriber line %d = %q, want %d bytes <<%s>>", i, l[0], len(want), want)
			}
		}
		return nil
	})
}
