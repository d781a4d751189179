package observe

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/messages"
)

// Board holds the latest status of every stream. It is safe for concurrent use; SetStream
// and Snapshot never block on anything but a short mutex.
type Board struct {
	version string
	now     func() time.Time

	mu         sync.Mutex
	streams    map[string]*messages.StreamStatus
	order      []string
	connection *messages.Connection
	// pushedAt is when each stream last pushed its status (SetStream), by the board's
	// clock; a stream only expected has none. upAt is when the connection to Aeron was last
	// made: a stream's new actors push from then on, so its staleness is measured from
	// there too, not from its last push before the connection was lost.
	pushedAt map[string]time.Time
	upAt     time.Time
}

// staleAfter is how long a stream may go without pushing its status before the board
// shows it stale (unhealthy, and not ready): 20 times the stream supervisors' push interval
// (500 ms, actors' statusPushInterval), so that a supervisor busy for a moment is not taken
// for one that stopped pushing, and one that did is seen within seconds rather than shown
// healthy for ever.
const staleAfter = 10 * time.Second

// NewBoard returns an empty board; streams appear as they are expected (Expect) or push
// their status.
func NewBoard(version string) *Board {
	return &Board{version: version, now: time.Now, streams: map[string]*messages.StreamStatus{}, pushedAt: map[string]time.Time{}}
}

// Expect puts each named stream of mode ("archive" or "transport") on the board, starting,
// unless it is there: /status, /metrics and `ferry status` show every configured stream
// from ferry's start, before its actors first report (they start once ferry is connected
// to Aeron, which may take long, or never).
func (b *Board) Expect(mode string, names ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, name := range names {
		if _, ok := b.streams[name]; !ok {
			b.order = append(b.order, name)
			b.streams[name] = &messages.StreamStatus{Name: name, Mode: mode, State: "starting", Healthy: true}
		}
	}
}

// SetStream replaces a stream's status. The board keeps st; the caller must not change it
// afterwards.
func (b *Board) SetStream(st *messages.StreamStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.streams[st.Name]; !ok {
		b.order = append(b.order, st.Name)
	}
	b.streams[st.Name] = st
	b.pushedAt[st.Name] = b.now()
}

// SetConnection replaces the state of the connection to Aeron. The board keeps c; the
// caller must not change it afterwards.
func (b *Board) SetConnection(c *messages.Connection) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c.GetConnected() && !b.connection.GetConnected() {
		b.upAt = b.now()
	}
	b.connection = c
}

// Snapshot returns a copy of every stream's status, in the order they first appeared, and
// of the connection's, each stream's with when it pushed it. While the connection is down
// no stream is healthy, whatever it last said: its actors are gone until ferry reconnects,
// and nothing it shows moves. While it is up, a stream healthy when it last pushed, but
// that has not pushed for staleAfter (since the connection was made, if later), is not:
// what it shows is stale. One that has never pushed (only expected, starting) is so
// staleAfter after the connection was made: its actors, started with it, push within 500
// ms, so one that has not is stuck before its first push.
func (b *Board) Snapshot() *messages.Status {
	snap, _ := b.snapshot()
	return snap
}

// snapshot is Snapshot, and the names of the streams it found stale.
func (b *Board) snapshot() (*messages.Status, map[string]bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	stale := map[string]bool{}
	now := b.now()
	out := &messages.Status{AtMs: now.UnixMilli(), Version: b.version}
	down := disconnected(b.connection) != ""
	for _, name := range b.order {
		st := proto.Clone(b.streams[name]).(*messages.StreamStatus)
		pushed, ok := b.pushedAt[name]
		if ok {
			st.PushedAtMs = proto.Int64(pushed.UnixMilli())
		}
		switch {
		case down && st.Healthy:
			st.Healthy, st.Reason = false, notConnected
			if st.State == "starting" {
				st.Reason = notConnectedYet
			}
		case ok && st.Healthy && now.Sub(later(pushed, b.upAt)) > staleAfter:
			st.Healthy, stale[name] = false, true
			st.Reason = fmt.Sprintf("its status is stale: not pushed since %s (%s ago; a running stream pushes every 500 ms), so what it shows is from then",
				pushed.UTC().Format(time.RFC3339), now.Sub(pushed).Round(time.Second))
		case !ok && !down && !b.upAt.IsZero() && st.Healthy && now.Sub(b.upAt) > staleAfter:
			st.Healthy, stale[name] = false, true
			st.Reason = fmt.Sprintf("it has not pushed its status since ferry connected to Aeron at %s (%s ago; a running stream pushes every 500 ms): its actors are stuck before their first push",
				b.upAt.UTC().Format(time.RFC3339), now.Sub(b.upAt).Round(time.Second))
		}
		out.Streams = append(out.Streams, st)
	}
	if b.connection != nil {
		out.Connection = proto.Clone(b.connection).(*messages.Connection)
	}
	return out, stale
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// notConnected is the reason a stream healthy when ferry lost the connection to Aeron is not;
// notConnectedYet, that of one not started, while ferry has not connected.
const (
	notConnected    = "waiting for the connection to Aeron (its last values are from before it was lost)"
	notConnectedYet = "waiting for the connection to Aeron to start"
)

// Healthy reports whether ferry is connected to Aeron (or has not yet finished its first
// attempt) and every stream is healthy, and the reasons of what is not. While the
// connection is down nothing can progress, whatever the streams last said.
func (b *Board) Healthy() (bool, []string) {
	reasons := Unwell(b.Snapshot())
	return len(reasons) == 0, reasons
}

// Unwell is what makes a status (a Board's Snapshot, or /status as served) unhealthy: the
// connection to Aeron down, and each unhealthy stream's reason, but for those that only
// wait for the connection, which its reason says.
func Unwell(st *messages.Status) []string {
	var reasons []string
	if down := disconnected(st.GetConnection()); down != "" {
		reasons = append(reasons, down)
	}
	for _, s := range st.GetStreams() {
		if !s.Healthy && s.Reason != notConnected && s.Reason != notConnectedYet {
			reasons = append(reasons, s.Name+": "+s.Reason)
		}
	}
	return reasons
}

// disconnected is the reason a connection state stops progress, or "" if it does not.
func disconnected(c *messages.Connection) string {
	if c == nil || c.Connected {
		return ""
	}
	return fmt.Sprintf("not connected to Aeron since %s (%d failed attempts): %s",
		time.UnixMilli(c.SinceMs).UTC().Format(time.RFC3339), c.FailedAttempts, c.Error)
}

// Ready reports whether every expected stream reported and is replaying, caught up or
// live, and healthy (not stale), and the states (or reasons) of those that are not.
func (b *Board) Ready(expected []string) (bool, []string) {
	snap, stale := b.snapshot()
	states := map[string]*messages.StreamStatus{}
	for _, s := range snap.Streams {
		states[s.Name] = s
	}
	var not []string
	if down := disconnected(snap.Connection); down != "" {
		not = append(not, down)
	}
	for _, name := range expected {
		switch st, ok := states[name]; {
		case !ok:
			not = append(not, name+": no status yet")
		case !slices.Contains([]string{"replaying", "caught-up", "live"}, st.State):
			// Stalled or failed (every unhealthy stream is one of them; the reason begins
			// with the state), starting or stopped.
			why := st.State
			if st.Reason != "" {
				why = st.Reason
			}
			not = append(not, name+": "+why)
		case stale[name]:
			// Not ready: what it shows of its state is from then.
			not = append(not, name+": "+st.Reason)
		}
	}
	return len(not) == 0, not
}
