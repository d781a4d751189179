package archive

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// A listing its caller gave up on before it was sent is dropped at once, even while another
// listing is in flight: the requests behind it (a StopReplay, say) do not wait for the
// listing in flight to end first.
func TestAnAbandonedListingDoesNotWaitForTheListingInFlight(t *testing.T) {
	inFlight := &call{what: "list recordings", kind: listing, corr: 1, reply: make(chan result, 1)}
	gaveUp := &call{what: "list recordings", kind: listing, corr: 2, reply: make(chan result, 1)}
	gaveUp.abandoned.Store(true)
	a := &agent{c: &Client{}, waiting: map[int64]*call{1: inFlight}, accepted: map[int64]string{}, outbox: []*call{gaveUp}}
	a.send(time.Now())
	if len(a.outbox) != 0 {
		t.Fatalf("%d requests still queued behind the listing in flight; want the abandoned one dropped", len(a.outbox))
	}
	select {
	case r := <-gaveUp.reply:
		if !errors.Is(r.err, errAbandoned) {
			t.Fatalf("the abandoned listing was answered %v; want errAbandoned", r.err)
		}
	default:
		t.Fatal("the abandoned listing was not answered")
	}
}

// The agent remembers the newest requests the archive accepted, to name one it reports an
// error of later (a replay that failed after it began): once full it forgets the oldest
// only, not all at once, so that the newest are always named.
func TestTheAgentForgetsTheOldestAcceptedRequestFirst(t *testing.T) {
	a := &agent{accepted: map[int64]string{}}
	const n = acceptedMemory + 44
	for corr := int64(1); corr <= n; corr++ {
		a.remember(corr, fmt.Sprint("request ", corr))
	}
	if len(a.accepted) != acceptedMemory {
		t.Fatalf("%d requests remembered, want %d", len(a.accepted), acceptedMemory)
	}
	for corr := int64(1); corr <= n; corr++ {
		_, kept := a.accepted[corr]
		if want := corr > n-acceptedMemory; kept != want {
			t.Fatalf("request %d of %d remembered: %t, want %t (the %d newest)", corr, n, kept, want, acceptedMemory)
		}
	}
}
