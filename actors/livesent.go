package actors

import (
	"sync"

	"github.com/ferry-bridge/ferry/aeron"
)

// publication identifies a publisher's stream of positions as a subscriber sees it: the
// driver's image of it, its session, its initial term id and where it comes from. Within
// one, positions only grow.
//
// The image is the correlation id of the driver's resource a subscriber's image reads (the
// network image, or the IPC or spied publication: DriverConductor's onAvailableImage in
// 1.47.3). Every subscription of the driver to it gets the same one, also a new subscription
// of a live reader restarted behind a slower subscriber (see sentMarks), and a restarted
// publisher gets a new one: without it, a publisher restarted with an explicit session id
// and initial term id, starting again from position 0, would be taken for the one before,
// and its messages up to the old one's last position dropped as read again. The other fields
// stay in the key because correlation ids start again with a new driver, and the marks
// outlive reconnects.
type publication struct {
	image         int64
	session       int32
	initialTermID int32
	source        string
}

// publicationOf is the publication an image reads.
func publicationOf(img *aeron.Image) publication {
	return publication{image: img.CorrelationID(), session: img.SessionID(), initialTermID: img.InitialTermID(), source: img.SourceIdentity()}
}

// sentMarks keeps, for each publication of a transport stream, the end of the last message
// the live reader handed to the publisher. The media driver joins a new subscription at the
// position of the slowest subscriber of the stream (IpcPublication.joinPosition,
// PublicationImage.joinPosition in 1.47.3): a live reader that subscribes again (restarted,
// or after ferry reconnected to a driver that kept the publication) behind another
// subscriber reads again what it had sent, which the marks keep it from sending twice. They
// keep the maxSentMarks publications sent from most recently.
type sentMarks struct {
	ends map[publication]sentMark
	seq  uint64
}

type sentMark struct {
	end int64
	// read is the reader's image position after its last poll of the publication: past end
	// inside a message not read whole, or past padding. A subscription of ferry's alone on
	// the driver joins again there (IpcPublication.joinPosition: the consumer position,
	// which follows the highest subscriber position seen), not at end.
	read int64
	seq  uint64 // when it was last marked, for the bound
}

// maxSentMarks bounds the publications a stream's marks keep: a publisher restarting every
// minute makes half a million a year.
const maxSentMarks = 4096

func newSentMarks() *sentMarks { return &sentMarks{ends: map[publication]sentMark{}} }

// sent reports whether the message of p ending at end was handed to the publisher already.
func (m *sentMarks) sent(p publication, end int64) bool {
	last, ok := m.ends[p]
	return ok && end <= last.end
}

// last is the end of the last message of p handed to the publisher (0: none).
func (m *sentMarks) last(p publication) int64 { return m.ends[p].end }

// mark notes that the message of p ending at end was handed to the publisher.
func (m *sentMarks) mark(p publication, end int64) {
	m.seq++
	if _, ok := m.ends[p]; !ok && len(m.ends) >= maxSentMarks {
		var oldest publication
		least := m.seq
		for q, e := range m.ends {
			if e.seq < least {
				oldest, least = q, e.seq
			}
		}
		delete(m.ends, oldest)
	}
	e := m.ends[p]
	e.end, e.seq = end, m.seq
	m.ends[p] = e
}

// readTo notes that the reader read p's image to position (kept for a publication it sent a
// message of).
func (m *sentMarks) readTo(p publication, position int64) {
	if e, ok := m.ends[p]; ok && position > e.read {
		e.read = position
		m.ends[p] = e
	}
}

// readPast is how far the reader had read p: the end of the last message it sent, or the
// image position past it its last poll reached; ok false if it sent nothing of p.
func (m *sentMarks) readPast(p publication) (int64, bool) {
	e, ok := m.ends[p]
	return max(e.end, e.read), ok
}

// readPastStream is readPast of p, or, when nothing of p was sent, of the publication of
// the same session, initial term id and source marked last (again true): the publisher's
// stream of positions through an image the driver made anew. A network image goes with its
// last subscription: ferry's reader, alone on the driver, that subscribes again gets a new
// image of the same publication, which joins where the sender is, past what the reader had
// read. (A publisher restarted with an explicit session id and initial term id starts again
// below where the reader had read its predecessor, which this does not take for a loss.)
func (m *sentMarks) readPastStream(p publication) (read int64, again, ok bool) {
	if read, ok := m.readPast(p); ok {
		return read, false, true
	}
	var last sentMark
	for q, e := range m.ends {
		if q.session == p.session && q.initialTermID == p.initialTermID && q.source == p.source && (!ok || e.seq > last.seq) {
			last, ok = e, true
		}
	}
	return max(last.end, last.read), ok, ok
}

// sentMarksKeeper carries each transport stream's marks from one pipeline to the next (Run's
// reconnects): the driver may have kept the publications. nil keeps nothing.
type sentMarksKeeper struct {
	mu sync.Mutex
	m  map[string]*sentMarks
}

// take returns stream name's marks, or new ones.
func (k *sentMarksKeeper) take(name string) *sentMarks {
	if k == nil {
		return newSentMarks()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]*sentMarks{}
	}
	if k.m[name] == nil {
		k.m[name] = newSentMarks()
	}
	return k.m[name]
}
