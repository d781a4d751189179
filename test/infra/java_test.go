package infra

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// The broker runs on the java on PATH, the one fetch.sh checked, not on a JDK another
// JAVA_HOME names: bin/pulsar prefers $JAVA_HOME/bin/java. A made-up distribution's
// bin/pulsar writes down the JAVA_HOME it was given and exits.
func TestPulsarRunsOnTheJavaOnPath(t *testing.T) {
	dir := t.TempDir()
	jdk := filepath.Join(dir, "jvm", "jdk-17")
	for _, f := range []struct{ path, content string }{
		{filepath.Join(jdk, "bin", "java"), "#!/bin/sh\n"},
		{filepath.Join(dir, "other-jdk", "bin", "java"), "#!/bin/sh\n"},
		{filepath.Join(dir, "pulsar", "bin", "pulsar"), "#!/bin/sh\necho \"$JAVA_HOME\" >\"$GOT\"\n"},
	} {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.path, []byte(f.content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// As Debian has it: /usr/bin/java a link to a link to the JDK's.
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(jdk, "bin", "java"), filepath.Join(dir, "alternative")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "alternative"), filepath.Join(bin, "java")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("JAVA_HOME", filepath.Join(dir, "other-jdk"))
	got := filepath.Join(dir, "java-home")
	t.Setenv("GOT", got)

	run := filepath.Join(dir, "run")
	p := &Pulsar{
		home: filepath.Join(dir, "pulsar"), opts: PulsarOptions{Dir: run, ReadyTimeout: 10 * time.Second},
		log: filepath.Join(run, "pulsar.log"), data: filepath.Join(run, "data"), AdminURL: "http://127.0.0.1:1",
	}
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := p.start(context.Background()); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("start of the made-up broker = %v, want it to have exited", err)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.EvalSymlinks(jdk) // the temp dir may be reached through a link
	if err != nil {
		t.Fatal(err)
	}
	if home := strings.TrimSpace(string(b)); home != want {
		t.Errorf("bin/pulsar got JAVA_HOME=%q, want %s, the home of the java on PATH", home, want)
	}
}
