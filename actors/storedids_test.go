package actors

import (
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// TestTheStoredIDsReadsGoOnFrom: of each ledger the first and the furthest record stored
// are kept, of the last keptLedgers ledgers; a read back to a position goes on from the
// furthest kept at or below it, and from none if none is.
func TestTheStoredIDsReadsGoOnFrom(t *testing.T) {
	id := func(ledger, entry int64) pulsar.MessageID { return pulsar.NewMessageID(ledger, entry, -1, 0) }
	same := func(a, b pulsar.MessageID) bool { return a.LedgerID() == b.LedgerID() && a.EntryID() == b.EntryID() }
	var s storedIDs
	if got := s.below(100); got != nil {
		t.Fatalf("nothing stored: %v; want none", got)
	}
	s.add(64, id(5, 0))
	s.add(192, id(5, 2))
	s.add(128, id(5, 1)) // between the first and the furthest: not kept
	s.add(320, id(9, 0))
	s.add(384, id(9, 1))
	for _, c := range []struct {
		below int64
		want  pulsar.MessageID
	}{
		{63, nil},        // below all: none
		{64, id(5, 0)},   // at the first
		{191, id(5, 0)},  // 128 not kept
		{200, id(5, 2)},  // the furthest of the ledger before the last
		{319, id(5, 2)},  // not the furthest stored, in the last ledger
		{320, id(9, 0)},  // the first of the last ledger
		{1000, id(9, 1)}, // the furthest
	} {
		if got := s.below(c.below); (got == nil) != (c.want == nil) || got != nil && !same(got, c.want) {
			t.Errorf("below %d: %v; want %v", c.below, got, c.want)
		}
	}
	for l := int64(10); l < 10+keptLedgers; l++ {
		s.add(l*100, id(l, 0))
	}
	if got := s.below(500); got != nil {
		t.Errorf("after %d ledgers more, below 500: %v; want none (ledgers 5 and 9 forgotten)", keptLedgers, got)
	}
	if got, want := s.below(1000), id(10, 0); got == nil || !same(got, want) {
		t.Errorf("after %d ledgers more, below 1000: %v; want %v", keptLedgers, got, want)
	}
}
