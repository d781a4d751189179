package config

import (
	"fmt"
	"math"
	"strings"

	"github.com/ferry-bridge/ferry/aeron/channel"
)

// buildStreams decodes the entries of streams. In transport mode the
// start position is left zero. c holds the settings decoded before the
// streams, against which they are checked.
func (p *parser) buildStreams(c *Config) []Stream {
	m := c.Mode
	if p.failed[streamsKey] {
		return nil
	}
	if !p.streamsPresent || len(p.streams) == 0 {
		e := p.keyError(ErrMissing, streamsKey, nil, "has no streams", "add at least one stream with name, channel, stream_id and topic")
		e.Line = p.streamsLine
		p.add(e)
		return nil
	}
	streams := make([]Stream, 0, len(p.streams))
	origin := make([]int, 0, len(p.streams)) // index in the file of each of streams
	names := map[string]int{}
	for i, e := range p.streams {
		if e.vals == nil {
			continue
		}
		prefix := fmt.Sprintf("%s[%d]", streamsKey, i)
		path := func(k string) string { return prefix + "." + k }
		required := func(k, example string) *setting {
			s := e.vals[k]
			if s == nil {
				ke := p.keyError(ErrMissing, path(k), nil, "is missing", "add "+k+": "+example)
				ke.Line = e.line
				p.add(ke)
			}
			return s
		}
		var st Stream
		st.Name = decode(p, path("name"), required("name", "orders"), "", streamName)
		st.Channel = decode(p, path("channel"), required("channel", "aeron:udp?endpoint=localhost:40123"), channel.URI{}, parseChannel)
		st.StreamID = decode(p, path("stream_id"), required("stream_id", "1001"), 0, int32Of)
		st.Topic = decode(p, path("topic"), required("topic", "persistent://public/default/orders"), "", topicName)
		st.Start = decode(p, path("start_position"), e.vals["start_position"], StartPosition{Kind: StartEarliest}, startPosition)
		rec := decode(p, path("start_recording_id"), e.vals["start_recording_id"], -1, intIn(0, math.MaxInt64))
		st.Reset = decode(p, path("reset"), e.vals["reset"], false, boolean)

		if st.Channel.IsSpy() {
			p.add(p.keyError(ErrInvalid, path("channel"), e.vals["channel"], "is a spy channel",
				"write the publication's channel without aeron-spy: (in transport mode, set transport.spy: true to spy)"))
		}
		if m == ModeTransport && c.Transport.Spy && !st.Channel.IsZero() && st.Channel.Media() != channel.MediaUDP {
			p.add(p.keyError(ErrConflict, path("channel"), e.vals["channel"], "is not a UDP channel, and transport.spy is true: the media driver spies on UDP publications only",
				"remove transport.spy (an aeron:ipc stream is read from the driver it is published on anyway), or give a UDP channel"))
		}
		if st.Name != "" {
			if first, dup := names[st.Name]; dup {
				p.add(p.keyError(ErrConflict, path("name"), e.vals["name"], fmt.Sprintf("is also the name of streams[%d]", first), "give every stream a unique name"))
			} else {
				names[st.Name] = i
			}
		}
		p.checkRecording(path, e, &st, rec)
		if m == ModeTransport {
			st.Start = StartPosition{}
		}
		streams = append(streams, st)
		origin = append(origin, i)
	}
	p.checkDuplicateStreams(m, streams, origin)
	p.checkTopics(m, streams, origin)
	if m == ModeArchive {
		p.checkOwnStreams(c, streams, origin)
	}
	return streams
}

// checkRecording pairs start_recording_id with a numeric start_position:
// positions are per recording, so one means nothing without the other.
func (p *parser) checkRecording(path func(string) string, e streamEntry, st *Stream, rec int64) {
	recSet := e.vals["start_recording_id"]
	if p.failed[path("start_position")] || p.failed[path("start_recording_id")] {
		return
	}
	switch {
	case st.Start.Kind == StartAt && recSet == nil:
		ke := p.keyError(ErrMissing, path("start_recording_id"), nil,
			"is missing; a position is only meaningful within one recording",
			"add start_recording_id: <id> (the recording the position belongs to)")
		ke.Line = e.line
		p.add(ke)
	case recSet != nil && e.vals["start_position"] != nil && st.Start.Kind != StartAt:
		p.add(p.keyError(ErrConflict, path("start_recording_id"), recSet,
			"is set, but start_position is "+st.Start.Kind.String(),
			"remove start_recording_id, or set start_position to a position in that recording"))
	case recSet != nil && e.vals["start_position"] == nil:
		p.add(p.keyError(ErrConflict, path("start_recording_id"), recSet,
			"is set without start_position", "add start_position: <position>, or remove start_recording_id"))
	}
	if rec >= 0 {
		st.Start.RecordingID = rec
	}
}

// checkDuplicateStreams rejects two streams on one stream id that would
// publish the same messages. In archive mode their channels overlap
// ([channel.URI.Overlaps]): a recording on a channel with the parameters of
// both is selected by both. In transport mode their subscriptions see the
// same publications: one reaches the other (a subscription matches by
// address), unless they name different sessions. origin[j] is the index in
// the file of streams[j].
func (p *parser) checkDuplicateStreams(m Mode, streams []Stream, origin []int) {
	same := func(a, b channel.URI) bool { return a.Overlaps(b) }
	if m == ModeTransport {
		same = func(a, b channel.URI) bool {
			x, okA := a.Get(channel.KeySessionID)
			y, okB := b.Get(channel.KeySessionID)
			return reaches(a, b) && !(okA && okB && x != y)
		}
	}
	for j := range streams {
		for i := range j {
			a, b := streams[i], streams[j]
			if a.Channel.IsZero() || b.Channel.IsZero() || a.StreamID != b.StreamID || !same(a.Channel, b.Channel) {
				continue
			}
			path := fmt.Sprintf("%s[%d].stream_id", streamsKey, origin[j])
			p.add(p.keyError(ErrConflict, path, p.streams[origin[j]].vals["stream_id"],
				fmt.Sprintf("is that of streams[%d], whose channel reaches the same messages (%s); they would be published twice", origin[i], sameWhy(m)),
				"remove one of the two streams, or correct its channel or stream id"))
			break
		}
	}
}

// checkTopics rejects, in archive mode, two streams that publish to one topic. Stream.Topic
// is already in its full form (see topicName), so "orders" and
// "persistent://public/default/orders" are found equal. Each one's messages would crowd the
// other's out of the topic's last messages, which ferry reads back to check a recording it
// resumes (lesson 21), and the streams would interleave there. In transport mode, at most
// once and with no resume check, streams may share a topic (fan-in). origin[j] is the index
// in the file of streams[j].
func (p *parser) checkTopics(m Mode, streams []Stream, origin []int) {
	if m != ModeArchive {
		return
	}
	const why = "each one's messages would crowd the other's out of the topic's last messages, which ferry reads back to check a recording it resumes, and the two streams would interleave there"
	for j := range streams {
		for i := range j {
			a, b := streams[i], streams[j]
			if a.Topic == "" || a.Topic != b.Topic {
				continue
			}
			path := fmt.Sprintf("%s[%d].topic", streamsKey, origin[j])
			p.add(p.keyError(ErrConflict, path, p.streams[origin[j]].vals["topic"],
				fmt.Sprintf("is %s for stream %q, and stream %q (streams[%d]) publishes there too; %s", b.Topic, b.Name, a.Name, origin[i], why),
				"give each stream its own topic"))
			break
		}
	}
}

// sameWhy says why checkDuplicateStreams found two channels the same.
func sameWhy(m Mode) string {
	if m == ModeTransport {
		return "a subscription matches by address and session, not by other parameters"
	}
	return "no parameter of both differs, so a recording with the parameters of both is selected by both"
}

// checkOwnStreams rejects a stream on a stream id ferry itself uses with
// the archive, over a channel that reaches it (see reaches). A recording of such a stream would hold ferry's
// replays (or its control traffic), each replayed again into the topic.
func (p *parser) checkOwnStreams(c *Config, streams []Stream, origin []int) {
	own := []struct {
		path string
		ch   channel.URI
		id   int32
	}{
		{"replay.stream_id", c.Replay.Channel, c.Replay.StreamID},
		{"archive.control_stream_id", c.Archive.ControlChannel, c.Archive.ControlStreamID},
		{"archive.response_stream_id", c.Archive.ResponseChannel, c.Archive.ResponseStreamID},
	}
	for j, st := range streams {
		for _, o := range own {
			if p.failed[o.path] || st.Channel.IsZero() || o.ch.IsZero() || st.StreamID != o.id || !reaches(st.Channel, o.ch) {
				continue
			}
			path := fmt.Sprintf("%s[%d].stream_id", streamsKey, origin[j])
			p.add(p.keyError(ErrConflict, path, p.streams[origin[j]].vals["stream_id"],
				fmt.Sprintf("is %d, like %s, on %s; a recording of this stream would hold ferry's own traffic", st.StreamID, o.path, o.ch.Media()),
				"give the stream the stream id its publishers use, or move "+o.path+" to a stream id nothing else uses"))
			break
		}
	}
}

// reaches reports whether a subscription on one of a and b (same stream
// id) may see publications on the other: on IPC always; on UDP when they
// share an endpoint or a control address (a subscription matches by
// address, whatever else its channel says, alias or tags).
func reaches(a, b channel.URI) bool {
	if a.Media() != b.Media() {
		return false
	}
	same := func(key string) bool {
		x, ok := a.Get(key)
		y, ok2 := b.Get(key)
		// Port 0 is any port (an MDC subscription's endpoint): not an address to share.
		return ok && ok2 && x == y && !strings.HasSuffix(x, ":0")
	}
	return a.Media() == channel.MediaIPC || same(channel.KeyEndpoint) || same(channel.KeyControl)
}
