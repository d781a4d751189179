package archive

import (
	"slices"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/channel"
)

// The recordings of the stream id a channel does not select are returned beside those it
// selects, not dropped: a channel spelt otherwise than the recordings' (localhost for
// 127.0.0.1, a parameter they lack) must be told from an archive holding none.
func TestChannelRecordingsSplitsTheUnselectedFromTheSelected(t *testing.T) {
	uri, err := channel.Parse("aeron:udp?endpoint=localhost:40123")
	if err != nil {
		t.Fatal(err)
	}
	descs := []RecordingDescriptor{
		{RecordingID: 1, OriginalChannel: "aeron:udp?endpoint=127.0.0.1:40123"},
		{RecordingID: 2, OriginalChannel: "aeron:udp?term-length=65536|endpoint=localhost:40123"},
		{RecordingID: 3, OriginalChannel: "aeron:udp?endpoint=localhost:401234"},
	}
	selected, others := splitSelected(uri, descs)
	ids := func(ds []RecordingDescriptor) []int64 {
		var out []int64
		for _, d := range ds {
			out = append(out, d.RecordingID)
		}
		return out
	}
	if got := ids(selected); !slices.Equal(got, []int64{2}) {
		t.Errorf("selected recordings %v; want [2]", got)
	}
	if got := ids(others); !slices.Equal(got, []int64{1, 3}) {
		t.Errorf("unselected recordings %v; want [1 3]", got)
	}
}
