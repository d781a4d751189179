package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/archive"
)

// stoppingArchive answers for recordings listed live: positions by id (NullPosition: no
// longer recorded), and each one's descriptors when described again, one per question.
type stoppingArchive struct {
	positions   map[int64][]int64
	descriptors map[int64][]archive.RecordingDescriptor
}

func (a *stoppingArchive) RecordingPosition(_ context.Context, id int64) (int64, error) {
	if len(a.positions[id]) == 0 {
		return 0, errors.New("asked once too often")
	}
	p := a.positions[id][0]
	a.positions[id] = a.positions[id][1:]
	return p, nil
}

func (a *stoppingArchive) Recording(_ context.Context, id int64) (archive.RecordingDescriptor, error) {
	if len(a.descriptors[id]) == 0 {
		return archive.RecordingDescriptor{}, errors.New("described once too often")
	}
	d := a.descriptors[id][0]
	a.descriptors[id] = a.descriptors[id][1:]
	return d, nil
}

// A recording listed live that stops before its recording position is asked (the archive
// answers NullPosition, -1) is shown stopped at its stop, by `ferry recordings` and the
// demo's status line: not live with END -1, not "recorded to -1" and negative bytes behind.
// One extended again meanwhile is live again, at its position.
func TestARecordingThatStopsAfterItIsListedIsShownStopped(t *testing.T) {
	live := func(id int64) archive.RecordingDescriptor {
		return archive.RecordingDescriptor{RecordingID: id, StopPosition: archive.NullPosition}
	}
	a := &stoppingArchive{
		positions: map[int64][]int64{1: {8192}, 2: {archive.NullPosition}, 3: {archive.NullPosition, 12288}},
		descriptors: map[int64][]archive.RecordingDescriptor{
			2: {{RecordingID: 2, StopPosition: 4096}},
			3: {live(3)},
		},
	}
	for _, c := range []struct {
		d    archive.RecordingDescriptor
		live bool
		end  int64
		line string
	}{
		{archive.RecordingDescriptor{RecordingID: 0, StopPosition: 1024}, false, 1024, " | recording 0 recorded to 1024 (stopped) | in Pulsar: 5 messages, of recording 0 up to 1000 (read back by the demo: 24 bytes behind the recording)"},
		{live(1), true, 8192, " | recording 1 recorded to 8192 | in Pulsar: 5 messages, of recording 1 up to 1000 (read back by the demo: 7192 bytes behind the recording)"},
		{live(2), false, 4096, " | recording 2 recorded to 4096 (stopped) | in Pulsar: 5 messages, of recording 2 up to 1000 (read back by the demo: 3096 bytes behind the recording)"},
		{live(3), true, 12288, " | recording 3 recorded to 12288 | in Pulsar: 5 messages, of recording 3 up to 1000 (read back by the demo: 11288 bytes behind the recording)"},
	} {
		d, end, err := recordingEnd(context.Background(), a, c.d)
		if err != nil || d.IsLive() != c.live || end != c.end {
			t.Errorf("recording %d: live %t, end %d, %v; want live %t, end %d", c.d.RecordingID, d.IsLive(), end, err, c.live, c.end)
		}
		if line := recordedText(d, end, err, 5, 1000); line != c.line {
			t.Errorf("recording %d: demo says\n%q; want\n%q", c.d.RecordingID, line, c.line)
		}
	}
	// Described again and failing: the error is about the recording as listed, not about
	// the empty descriptor of the failed answer (recording 0).
	a.positions[5] = []int64{archive.NullPosition}
	if d, _, err := recordingEnd(context.Background(), a, live(5)); err == nil || d.RecordingID != 5 {
		t.Errorf("described again and failing: recording %d, %v; want recording 5 and the failure", d.RecordingID, err)
	}
	// Not known: said so, not a number.
	line := recordedText(live(4), 0, errors.New("archive gone"), 5, 1000)
	if strings.Contains(line, "bytes behind") || !strings.Contains(line, "archive gone") {
		t.Errorf("recording position failed: demo says %q; want the failure and no bytes behind", line)
	}
}

// The recordings of the stream id that the configured channel does not select (localhost
// for the 127.0.0.1 they were made on) are shown under the stream, their channels with a
// count and a hint, not left out of a listing of "0 recording(s)".
func TestRecordingsTheChannelDoesNotSelectAreShown(t *testing.T) {
	others := []archive.RecordingDescriptor{
		{RecordingID: 1, OriginalChannel: "aeron:udp?endpoint=127.0.0.1:40123"},
		{RecordingID: 2, OriginalChannel: "aeron:udp?endpoint=127.0.0.1:40123"},
		{RecordingID: 3, OriginalChannel: "aeron:udp?endpoint=localhost:40124"},
	}
	var out strings.Builder
	printUnselected(&out, "aeron:udp?endpoint=localhost:40123", 1001, 0, others)
	for _, want := range []string{
		"not selected by aeron:udp?endpoint=localhost:40123: 3 recording(s) of stream id 1001",
		"    aeron:udp?endpoint=127.0.0.1:40123: 2 recording(s)\n",
		"    aeron:udp?endpoint=localhost:40124: 1 recording(s)\n",
		"hint: the configured channel selects none",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ferry recordings prints\n%s\nwant it to say %q", out.String(), want)
		}
	}
	out.Reset()
	printUnselected(&out, "aeron:udp?endpoint=localhost:40123", 1001, 2, nil)
	if out.Len() != 0 {
		t.Errorf("with no unselected recordings ferry recordings prints\n%s\nwant nothing", out.String())
	}
}
