package actors

import "testing"

// The marks tell a message sent already from one not yet, per publication, and keep the
// publications sent from most recently when they reach their bound.
func TestSentMarksKeepTheMostRecentPublications(t *testing.T) {
	m := newSentMarks()
	a, b := publication{session: 1, initialTermID: 7, source: "aeron:ipc"}, publication{session: 1, initialTermID: 8, source: "aeron:ipc"}
	m.mark(a, 64)
	switch {
	case !m.sent(a, 64) || !m.sent(a, 32):
		t.Fatal("a message up to the mark is not known as sent")
	case m.sent(a, 96):
		t.Fatal("a message past the mark is known as sent")
	case m.sent(b, 64):
		t.Fatal("another publication of the same session shares the mark")
	}
	for i := range maxSentMarks - 1 {
		m.mark(publication{session: int32(100 + i)}, 32)
	}
	m.mark(a, 96) // a is now the most recent
	m.mark(b, 32) // one over the bound: the least recent goes, session 100's
	switch {
	case len(m.ends) != maxSentMarks:
		t.Fatalf("%d marks kept, want the bound %d", len(m.ends), maxSentMarks)
	case !m.sent(a, 96) || !m.sent(b, 32):
		t.Fatal("a recent publication's mark was dropped")
	case m.sent(publication{session: 100}, 32):
		t.Fatal("the least recent publication's mark was kept over the bound")
	}
}

// How far the reader read a publication is the end of the last message it sent, or the
// image position its last poll reached past it (inside a message, past padding): where a
// subscription of ferry's alone on the driver joins again, which is no loss. A publication
// it sent nothing of has none; a mark keeps the position read.
func TestReadPastIsWhereTheReaderLeftThePublication(t *testing.T) {
	m := newSentMarks()
	a, b := publication{session: 1}, publication{session: 2}
	m.readTo(b, 500) // nothing of b sent: not kept
	if _, ok := m.readPast(b); ok {
		t.Fatal("a publication nothing of which was sent has a position read")
	}
	m.mark(a, 64)
	if got, ok := m.readPast(a); !ok || got != 64 {
		t.Fatalf("read past %d, %t; want 64, the last message's end", got, ok)
	}
	m.readTo(a, 96) // inside the next message
	m.mark(a, 80)   // an older mark cannot be: the read position stays
	if got, _ := m.readPast(a); got != 96 {
		t.Fatalf("read past %d; want 96, where the last poll left the image", got)
	}
	m.mark(a, 128)
	if got, _ := m.readPast(a); got != 128 {
		t.Fatalf("read past %d; want 128, the last message's end", got)
	}
}

// A publisher restarted with an explicit session id and initial term id starts again from
// position 0 on the same channel: the driver makes it a new image, and its messages are not
// taken for its predecessor's, already sent (they were dropped as read again, with only a
// warning). A new subscription to the same driver image (a reader restarted behind a
// slower subscriber) keeps the image, and its mark.
func TestARestartedPublisherWithTheSameSessionIsANewPublication(t *testing.T) {
	m := newSentMarks()
	before := publication{image: 41, session: 7, initialTermID: 3, source: "127.0.0.1:40123"}
	m.mark(before, 1<<20)
	restarted := before
	restarted.image = 57
	if m.sent(restarted, 64) {
		t.Fatal("the restarted publisher's first message is taken for one sent before its restart")
	}
	if !m.sent(before, 64) {
		t.Fatal("a message of the same image, read again, is not known as sent")
	}
}

// A network image goes with its last subscription: ferry's reader, alone on the driver,
// subscribing again gets a new image of the same publication (session, initial term id,
// source), joined where the sender is. How far it had read is that of the publication's
// last image marked, said as through a new image; a publication of another session, initial
// term id or source has none.
func TestReadPastStreamFollowsThePublicationThroughANewImage(t *testing.T) {
	m := newSentMarks()
	older := publication{image: 40, session: 7, initialTermID: 3, source: "127.0.0.1:40123"}
	last := older
	last.image = 41
	m.mark(older, 1<<10)
	m.mark(last, 1<<20)
	m.readTo(last, 1<<20+96)
	if read, again, ok := m.readPastStream(last); !ok || again || read != 1<<20+96 {
		t.Fatalf("the image marked: read past %d (new image %t, %t); want %d, the same image", read, again, ok, 1<<20+96)
	}
	anew := last
	anew.image = 57
	if read, again, ok := m.readPastStream(anew); !ok || !again || read != 1<<20+96 {
		t.Fatalf("a new image of it: read past %d (new image %t, %t); want %d of image 41, the last marked, through a new image", read, again, ok, 1<<20+96)
	}
	for _, other := range []publication{
		{image: 57, session: 8, initialTermID: 3, source: "127.0.0.1:40123"},
		{image: 57, session: 7, initialTermID: 4, source: "127.0.0.1:40123"},
		{image: 57, session: 7, initialTermID: 3, source: "127.0.0.1:40124"},
	} {
		if read, _, ok := m.readPastStream(other); ok {
			t.Errorf("%+v: read past %d; want none, another publication", other, read)
		}
	}
}
