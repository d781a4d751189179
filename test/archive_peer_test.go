package test

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/test/infra"
)

// dataHeaderLength and frameAlignment are Aeron's data frame header size and frame
// alignment (both 32 bytes): a recorded message of n bytes occupies align(32+n, 32).
const (
	dataHeaderLength = 32
	frameAlignment   = 32
)

func alignedFrameLength(payload int) int64 {
	return int64((dataHeaderLength + payload + frameAlignment - 1) &^ (frameAlignment - 1))
}

// TestRealArchiveRecordsJavaPublisher proves the archive under test is the real one: a Java
// sample no one here wrote records a stream into it, and Aeron's own ArchiveTool reads back
// a recording whose stop position is exactly what those messages occupy.
func TestRealArchiveRecordsJavaPublisher(t *testing.T) {
	a := peers.Archive
	if a.ArchiveDir == "" {
		t.Fatalf("the archive was reused from the environment without %s; ArchiveTool needs it", infra.EnvArchiveDir)
	}
	const streamID, messages = 4201, 3
	props := a.JavaClientProperties()
	props["aeron.sample.channel"] = "aeron:ipc"
	props["aeron.sample.streamId"] = strconv.Itoa(streamID)
	props["aeron.sample.messages"] = strconv.Itoa(messages)

	ctx := context.Background()
	out, err := infra.RunJava(ctx, time.Minute, "io.aeron.samples.archive.RecordedBasicPublisher", props)
	if err != nil {
		t.Fatalf("RecordedBasicPublisher: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`Recording started: recordingId = (\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("RecordedBasicPublisher did not report a recording:\n%s", out)
	}
	recordingID := m[1]

	// The sample sends "Hello World! <i>" once a second and says "yay!" for each accepted
	// offer; the recording holds exactly the accepted ones.
	var want int64
	accepted := regexp.MustCompile(`Offering (\d+)/\d+ - yay!`).FindAllStringSubmatch(out, -1)
	for _, acc := range accepted {
		want += alignedFrameLength(len("Hello World! " + acc[1]))
	}
	if len(accepted) == 0 {
		t.Fatalf("no offer was accepted:\n%s", out)
	}

	desc, err := infra.RunJava(ctx, time.Minute, "io.aeron.archive.ArchiveTool", nil, a.ArchiveDir, "describe", recordingID)
	if err != nil {
		t.Fatalf("ArchiveTool describe: %v\n%s", err, desc)
	}
	fields := descriptorFields(t, desc, recordingID)
	if got := fields["streamId"]; got != strconv.Itoa(streamID) {
		t.Errorf("streamId = %s, want %d", got, streamID)
	}
	if got := fields["startPosition"]; got != "0" {
		t.Errorf("startPosition = %s, want 0", got)
	}
	if got := fields["stopPosition"]; got != strconv.FormatInt(want, 10) {
		t.Errorf("stopPosition = %s, want %d (%d accepted messages)\n%s", got, want, len(accepted), desc)
	}
}

// descriptorFields parses the `key=value|…` fields of the RecordingDescriptor line that
// ArchiveTool prints for recordingID.
func descriptorFields(t *testing.T, out, recordingID string) map[string]string {
	t.Helper()
	line := regexp.MustCompile(`(?m)^\[RecordingDescriptor\].*\|recordingId=` + recordingID + `\|.*$`).FindString(out)
	if line == "" {
		t.Fatalf("ArchiveTool printed no descriptor for recording %s:\n%s", recordingID, out)
	}
	fields := map[string]string{}
	for _, kv := range regexp.MustCompile(`(\w+)=([^|]*)`).FindAllStringSubmatch(line, -1) {
		fields[kv[1]] = kv[2]
	}
	return fields
}
