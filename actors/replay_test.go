package actors

import (
	"hash/crc32"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/store"
)

// read is one message as the replay's check sees it: where its first fragment's frame
// began, whether that fragment was the first one delivered, where it ends and its payload.
type read struct {
	start   int64
	first   bool
	end     int64
	payload string
}

// TestRecordCheckTellsTheRecordPublishedFromAnother: the decisions of a replay resumed from
// a checkpoint (at 4096 unless the case says otherwise) whose last record ended at 4096 with
// the payload "published". The mark's start is where the record before it ended, so padding
// may lie between it and the record's frame (a term's end): the record is found by being the
// first message read. Each case gives the messages read in turn and says which are
// published and whether the check fails.
func TestRecordCheckTellsTheRecordPublishedFromAnother(t *testing.T) {
	sum := func(s string) uint32 { return crc32.Checksum([]byte(s), castagnoli) }
	mark := &messages.RecordMark{Start: 3968, End: 4096, Checksum: sum("published")}
	for _, tt := range []struct {
		name       string
		checkpoint int64 // 0: 4096
		reads      []read
		published  []bool
		failure    string // "" if the check passes
	}{
		{name: "the same record, then the next: published",
			reads:     []read{{3968, true, 4096, "published"}, {4096, false, 4200, "next"}},
			published: []bool{false, true}},
		{name: "the same record after padding (its frame begins past the mark's start)",
			reads:     []read{{4000, true, 4096, "published"}, {4096, false, 4200, "next"}},
			published: []bool{false, true}},
		{name: "other bytes", reads: []read{{3968, true, 4096, "rewritten"}}, published: []bool{false},
			failure: "the archive now holds the record [3968, 4096)"},
		{name: "another length", reads: []read{{3968, true, 4128, "published"}}, published: []bool{false},
			failure: "the record [3968, 4128)"},
		{name: "after a fragment of another record", reads: []read{{4000, false, 4096, "published"}}, published: []bool{false},
			failure: "after a fragment of another record"},
		{name: "nothing is read after a mismatch",
			reads:     []read{{3968, true, 4096, "rewritten"}, {4096, false, 4200, "next"}},
			published: []bool{false, false}, failure: "CRC-32C"},
		{name: "checkpoint after trailing padding: the next record begins at it", checkpoint: 4160,
			reads:     []read{{3968, true, 4096, "published"}, {4160, false, 4300, "extension"}},
			published: []bool{false, true}},
		{name: "checkpoint after trailing padding: a record where the padding was", checkpoint: 4160,
			reads:     []read{{3968, true, 4096, "published"}, {4096, false, 4300, "appended"}},
			published: []bool{false, false}, failure: "saw only padding after the record ending at 4096"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from := int64(4096)
			if tt.checkpoint != 0 {
				from = tt.checkpoint
			}
			r := &replay{env: &Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
				cfg: &StreamConfig{Def: store.Stream{Name: "orders"}}, rec: &messages.RecordingInfo{RecordingId: 5},
				from: from, lastEnd: mark.Start, check: recordCheck{mark: mark, pending: true}}
			for i, m := range tt.reads {
				r.check.start, r.check.first = m.start, m.first
				if got := r.checked(m.end, []byte(m.payload)); got != tt.published[i] {
					t.Fatalf("message %d [%d, %d) %q: published %t, want %t (check %+v)", i, m.start, m.end, m.payload, got, tt.published[i], r.check)
				}
			}
			switch err := r.check.err; {
			case tt.failure == "" && err != nil:
				t.Fatalf("the check failed: %v", err)
			case tt.failure == "" && (r.check.pending || r.lastEnd != from):
				t.Fatalf("the check passed but is still pending (%t), or the next record starts at %d, not the checkpoint %d", r.check.pending, r.lastEnd, from)
			case tt.failure != "" && (err == nil || !strings.Contains(err.Error(), tt.failure) || !strings.Contains(err.Error(), "recording 5 changed below ferry's checkpoint")):
				t.Fatalf("the check's failure %v, want one saying %q", err, tt.failure)
			}
		})
	}
}
