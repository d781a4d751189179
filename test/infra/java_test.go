package infra

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/eventually"
)

// TestAJavaSampleIsAnsweredOneQuestionAtATime: Aeron's EmbeddedReplayThroughput, on an
// archive configured as ours (EmbeddedArchiveProperties), asks "Execute again?" after each
// replay and reads each answer with a Scanner of its own. Answered after each question,
// it replays as often as told and exits cleanly when told no, which the replay benchmark
// (test/archiving) depends on; an answer lost or read ahead would leave it waiting, or end
// it with an exception, and this test fails.
func TestAJavaSampleIsAnsweredOneQuestionAtATime(t *testing.T) {
	dir := t.TempDir()
	props, remove, err := EmbeddedArchiveProperties(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove() })
	props["aeron.sample.channel"] = "aeron:ipc?term-length=64k"
	props["aeron.sample.messages"] = "1000"
	props["aeron.sample.messageLength"] = "32"
	j, err := StartJavaAnswering(dir, "io.aeron.samples.archive.EmbeddedReplayThroughput", props)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the sample's output:\n%s", j.Output())
		}
		_ = j.Stop()
	})
	answers := []string{"y", "y", "n"}
	for i, answer := range answers {
		eventually.NoError(t, time.Minute, func() error {
			if done, err := j.Exited(); done {
				t.Fatalf("the sample exited (%v) before its question %d", err, i+1)
			}
			if asked := strings.Count(j.Output(), "Execute again?"); asked <= i {
				return fmt.Errorf("the sample asked %d times, not yet %d", asked, i+1)
			}
			return nil
		})
		if err := j.Answer(answer); err != nil {
			t.Fatal(err)
		}
	}
	eventually.NoError(t, time.Minute, func() error {
		done, err := j.Exited()
		if !done {
			return errors.New("the sample has not exited after the answer no")
		}
		if err != nil {
			t.Fatalf("the sample exited with %v", err)
		}
		return nil
	})
	if replays := strings.Count(j.Output(), "Replayed "); replays != len(answers) {
		t.Fatalf("the sample replayed %d times, want %d (one, then one per yes)", replays, len(answers))
	}
}
