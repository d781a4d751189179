package actors

import (
	"slices"
	"sync"

	"github.com/apache/pulsar-client-go/pulsar"
)

// storedIDs remembers, of the last ledgers the broker stored a publisher's records in, the
// first and the furthest record stored in each, with the message ids the broker gave them.
// A read of what the broker stored last goes on from one of them across the ledgers before
// the partition's last (LastStoredFunc): a broker restart or a topic unload opens a ledger,
// the client sends its pending records again, and those stored before are answered as
// duplicates; the furthest record acknowledged by then may be in a ledger opened after. It
// is safe for concurrent use: the send callbacks add to it.
type storedIDs struct {
	mu      sync.Mutex
	ledgers []storedLedger // oldest first, at most keptLedgers
}

// storedLedger is the first and the furthest record stored in a ledger.
type storedLedger struct {
	ledger      int64
	first, last storedID
}

// storedID is a record the broker stored: its end and the message id it gave.
type storedID struct {
	end int64
	id  pulsar.MessageID
}

// keptLedgers bounds the ledgers remembered: a read goes back to the record at or below
// where it must reach, which is in one of the last few.
const keptLedgers = 8

// add remembers the record ending at end, stored as id.
func (s *storedIDs) add(end int64, id pulsar.MessageID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := storedID{end: end, id: id}
	for i := len(s.ledgers) - 1; i >= 0; i-- {
		if l := &s.ledgers[i]; l.ledger == id.LedgerID() {
			if end < l.first.end {
				l.first = r
			}
			if end > l.last.end {
				l.last = r
			}
			return
		}
	}
	s.ledgers = append(s.ledgers, storedLedger{ledger: id.LedgerID(), first: r, last: r})
	if len(s.ledgers) > keptLedgers {
		s.ledgers = slices.Delete(s.ledgers, 0, 1)
	}
}

// below is the id of the furthest record remembered that ends at or below end; nil: none.
// (Not the earliest remembered for want of one: a read from there is not needed to reach
// end, and can be long.)
func (s *storedIDs) below(end int64) pulsar.MessageID {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *storedID
	for i := range s.ledgers {
		for _, r := range []*storedID{&s.ledgers[i].first, &s.ledgers[i].last} {
			if r.end <= end && (best == nil || r.end > best.end) {
				best = r
			}
		}
	}
	if best == nil {
		return nil
	}
	return best.id
}
