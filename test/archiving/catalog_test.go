package archiving

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestLesson06_ListingPagesAcrossGapsWiderThanAPage: our stream's recordings are interleaved with
// more recordings of another stream than fit in a page, so their ids leave gaps wider
// than a page. Listing page by page finds each of ours exactly once, in id order, and
// ends (lesson 6: fromRecordingId is an inclusive id, not an offset).
func TestLesson06_ListingPagesAcrossGapsWiderThanAPage(t *testing.T) {
	// More of ours than fit in one page, and more of theirs between two of ours than fit in
	// one page.
	const pageSize, others, ours = 2, 3, 5
	s := connect(t, shared, archive.Options{})
	ctx := context.Background()
	const ch = "aeron:ipc?term-length=64k"
	mine, theirs := infra.UniqueStreamID(), infra.UniqueStreamID()
	for _, stream := range []int32{mine, theirs} {
		if _, err := s.archive.StartRecording(ctx, ch, stream, archive.SourceLocal, false); err != nil {
			t.Fatal(err)
		}
	}
	// recordOne makes one recording of stream: a publication that sends one message and
	// closes; it returns the recording id.
	recordOne := func(stream int32) int64 {
		pub, err := s.aeron.AddExclusivePublication(ctx, ch, stream)
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		id := nextSignal(t, s.archive, archive.SignalStart).RecordingID
		eventually.NoError(t, 5*time.Second, func() error { _, err := pub.Offer([]byte("x")); return err })
		waitRecorded(t, s, id, pub.Position())
		return id
	}
	var want []int64
	for range ours {
		want = append(want, recordOne(mine))
		for range others {
			recordOne(theirs)
		}
	}
	for i := 1; i < len(want); i++ {
		if gap := want[i] - want[i-1]; gap <= pageSize {
			t.Fatalf("ids %v: gap %d is not wider than the page size %d", want, gap, pageSize)
		}
	}

	got, err := s.archive.RecordingsForURI(ctx, "aeron:ipc", mine, pageSize)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, d := range got {
		ids = append(ids, d.RecordingID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("paged listing = %v, want %v", ids, want)
	}
	// A page starting past the last id returns nothing (and does not wait for more).
	if page, err := s.archive.ListRecordingsForURI(ctx, want[len(want)-1]+1, pageSize, "aeron:ipc", mine); err != nil || len(page) != 0 {
		t.Errorf("page past the end = %v, %v; want none", page, err)
	}
	// A fragment that matches no original channel lists nothing.
	if page, err := s.archive.RecordingsForURI(ctx, "aeron:udp", mine, pageSize); err != nil || len(page) != 0 {
		t.Errorf("listing for aeron:udp = %v, %v; want none", page, err)
	}
}
