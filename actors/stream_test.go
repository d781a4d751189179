package actors

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/protobuf/proto"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// checkOrigin tells a recording from another under the same id (the archive's catalog
// replaced), from an extended one (the same start, another session), and catches a
// recording with a lower id than a checkpointed one that began after it was made and
// checkpointed (ids are given in the order recordings are made), which would otherwise be
// skipped as below the lowest stored recording.
func TestCheckOriginTellsReplacedFromExtendedRecordings(t *testing.T) {
	const at = 1_795_000_000_000 // Unix epoch ms

	stored := []store.Checkpoint{ // as the store returns them, by recording id
		{RecordingID: 7, Position: 100, StartMs: at + 7_000, SessionID: 70, UpdatedAtMs: at + 7_500},
		{RecordingID: 8, Position: 100, UpdatedAtMs: at + 8_500}, // written before origins were stored: matches anything
		{RecordingID: 9, Position: 100, Completed: true, StartMs: at + 9_000, SessionID: 90, UpdatedAtMs: at + 9_500},
	}
	rec := func(id, startMs int64, session int32) *messages.RecordingInfo {
		return &messages.RecordingInfo{RecordingId: id, StartMs: startMs, SessionId: session}
	}
	supervisorOf := func(stored []store.Checkpoint) *streamSupervisor {
		return &streamSupervisor{cfg: &StreamConfig{Def: store.Stream{Name: "orders"}, Stored: store.State{Stored: true, Checkpoints: stored}}, known: map[int64]*messages.RecordingInfo{}, origins: newStoredOrigins(stored), finalAt: map[int64]int64{9: 100}}
	}
	for _, tt := range []struct {
		name   string
		stored []store.Checkpoint // nil: stored
		r      *messages.RecordingInfo
		want   string // "" for no error
	}{
		{"the same", nil, rec(7, at+7_000, 70), ""},
		{"the same, completed", nil, rec(9, at+9_000, 90), ""},
		{"no origin stored", nil, rec(8, 123, 4), ""},
		{"a newer recording", nil, rec(10, at+10_000, 100), ""},
		{"a lower id, earlier", nil, rec(3, at+3_000, 30), ""},
		{"another start", nil, rec(7, at+20_000, 5), "catalog was replaced"},
		{"another start, completed", nil, rec(9, at+20_000, 5), "catalog was replaced"},
		{"extended after ferry completed it: reopened if the newest (checkEnd)", nil, rec(9, at+9_000, 91), ""},
		{"extended before ferry completed it: followed", nil, rec(7, at+7_000, 71), ""},
		{"a lower id, begun after a checkpointed one was checkpointed", nil, rec(3, at+7_500+61_000, 5), "recording 3 in the archive began at"},
		// The archive's clock may be a little ahead of ferry's.
		{"a lower id, begun after a checkpointed one, within the clocks' tolerance", nil, rec(3, at+7_500+59_000, 5), ""},
		// Replicated into the archive later, a recording keeps its source's start time: not
		// checked above the lowest recording stored...
		{"a replicated recording's old start", nil, rec(10, at-1_000_000, 100), ""},
		// ...and stored (seeded when first listed), beside or as the lowest one stored, it
		// does not make the recordings below that one look like another archive's.
		{"a lower id, beside a replicated recording stored", append(slices.Clone(stored), store.Checkpoint{RecordingID: 10, Seed: true, StartMs: at - 1_000_000, SessionID: 100, UpdatedAtMs: at + 20_000}), rec(3, at+3_000, 30), ""},
		{"a lower id, below a replicated recording stored lowest", []store.Checkpoint{{RecordingID: 10, Seed: true, StartMs: at - 1_000_000, SessionID: 100, UpdatedAtMs: at + 20_000}}, rec(3, at+3_000, 30), ""},
		{"a lower id, begun after a replicated recording stored lowest was checkpointed", []store.Checkpoint{{RecordingID: 10, Seed: true, StartMs: at - 1_000_000, SessionID: 100, UpdatedAtMs: at + 20_000}}, rec(3, at+20_000+61_000, 5), "recording 3 in the archive began at"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := stored
			if tt.stored != nil {
				st = tt.stored
			}
			err := supervisorOf(st).checkOrigin(tt.r)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkOrigin(%v) = %v, want nil", tt.r, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("checkOrigin(%v) = %v, want an error saying %q", tt.r, err, tt.want)
			}
		})
	}

	// While running: a recording listed again with another origin.
	s := &streamSupervisor{cfg: &StreamConfig{Def: store.Stream{Name: "orders"}}, known: map[int64]*messages.RecordingInfo{12: rec(12, 12_000, 120)}, origins: newStoredOrigins(nil)}
	if err := s.checkOrigin(rec(12, 12_000, 120)); err != nil {
		t.Fatalf("listed again unchanged: %v", err)
	}
	if err := s.checkOrigin(rec(12, 30_000, 7)); err == nil || !strings.Contains(err.Error(), "catalog was replaced") {
		t.Fatalf("listed again with another start: %v", err)
	}
}

// listedStopped is recording id as a listing shows it stopped at stop; listedLive, as one
// shows it recording, recorded to recorded (-1: not read).
func listedStopped(id, stop int64) *messages.RecordingInfo {
	return &messages.RecordingInfo{RecordingId: id, StopPosition: stop, RecordedPosition: stop}
}

func listedLive(id, recorded int64) *messages.RecordingInfo {
	return &messages.RecordingInfo{RecordingId: id, Live: true, StopPosition: -1, RecordedPosition: recorded}
}

// checkEnd tells a recording ferry published to its end that the archive has extended
// since — stopped further on, or recording again — from one listed as ferry left it, and
// from one finished in this run whose stop the archive has not listed yet (live, recorded up
// to ferry's end); a truncated one is an error.
func TestCheckEndTellsAnExtensionFromTheEndFerryPublished(t *testing.T) {
	s := &streamSupervisor{cfg: &StreamConfig{Def: store.Stream{Name: "orders"}},
		finalAt:         map[int64]int64{1: 1000, 2: 2000, 3: 3000},
		storedCompleted: map[int64]bool{1: true},
		completed:       map[int64]bool{2: true},
		finished:        map[int64]bool{3: true},
		known:           map[int64]*messages.RecordingInfo{2: listedStopped(2, 2000), 5: listedStopped(5, 500)},
	}
	stoppedAt := func(id, stop, stopMs int64) *messages.RecordingInfo {
		r := listedStopped(id, stop)
		r.StopMs = stopMs
		return r
	}
	for _, tt := range []struct {
		name string
		r    *messages.RecordingInfo
		want string // what checkEnd says of the extension or in its error; "" for nothing
	}{
		{"stored completed, as left", listedStopped(1, 1000), ""},
		{"stored completed, stopped further on", listedStopped(1, 1500), "it now stops at 1500"},
		{"stored completed, recording again", listedLive(1, 1000), "it is recording again"},
		{"stored completed, recording again at a position not read", listedLive(1, -1), "it is recording again"},
		{"completed in this run, as left", listedStopped(2, 2000), ""},
		{"completed in this run, recording again", listedLive(2, 2100), "it is recording again, at 2100"},
		{"completed in this run, stopped again at its end at another time", stoppedAt(2, 2000, 99), "it stopped again at 2000"},
		{"completed in this run, truncated, stopped at another time", stoppedAt(2, 1500, 99), "the archive truncated it"},
		{"stored completed, not listed before, stopped at its end at some time", stoppedAt(1, 1000, 99), ""},
		{"finished, its stop not listed yet", listedLive(3, 3000), ""},
		{"finished, its stop not listed, position not read", listedLive(3, -1), ""},
		{"finished, recorded beyond its end", listedLive(3, 3200), "it is recording again, at 3200"},
		{"finished, stopped further on", listedStopped(3, 3200), "it now stops at 3200"},
		{"stored completed, truncated", listedStopped(1, 800), "the archive truncated it"},
		{"not published to its end", listedLive(4, 9000), ""},
		{"not published to its end, listed stopped before, recording again", listedLive(5, 500), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			how, err := s.checkEnd(tt.r)
			said := how
			if err != nil {
				said = err.Error()
			}
			if tt.want == "" && said != "" || !strings.Contains(said, tt.want) || how != "" && err != nil {
				t.Fatalf("checkEnd(%v) = %q, %v; want it to say %q", tt.r, how, err, tt.want)
			}
		})
	}
}

// A recording ferry has not published to its end that a listing shows stopping before where
// an earlier one had it stop, or recorded to, was truncated: replayed to its new stop it
// would count as completed, its records after that never published. checkTail says so; a
// recording stopped where it was recorded to, or further on, or one published to its end
// (checkEnd's), or taken up at latest, is not its concern.
func TestCheckTailTellsATruncationBeforeFerryPublishedTheEnd(t *testing.T) {
	s := &streamSupervisor{cfg: &StreamConfig{Def: store.Stream{Name: "orders"}},
		completed:       map[int64]bool{2: true},
		storedCompleted: map[int64]bool{3: true},
		latestFrom:      map[int64]int64{6: 500},
		known: map[int64]*messages.RecordingInfo{
			1: listedStopped(1, 2000), 2: listedStopped(2, 2000), 3: listedStopped(3, 2000), 4: listedLive(4, 2000), 5: listedLive(5, -1), 6: listedStopped(6, 2000),
		},
	}
	for _, tt := range []struct {
		name string
		r    *messages.RecordingInfo
		want string // in checkTail's error; "" for none
	}{
		{"waiting, truncated", listedStopped(1, 1000), "recording 1 now stops at 1000, before 2000, where an earlier listing had it stop: the archive truncated it"},
		{"waiting, as listed", listedStopped(1, 2000), ""},
		{"waiting, stopped further on", listedStopped(1, 2500), ""},
		{"recorded to 2000 when listed live, now stopped before", listedStopped(4, 1500), "had it recorded to"},
		{"recorded to 2000 when listed live, stopped there", listedStopped(4, 2000), ""},
		{"listed live, its position not read", listedStopped(5, 100), ""},
		{"listed live again, below its stop: truncated, then extended", listedLive(1, 900), "recording 1 now is recorded again (extended), recorded to 900, before 2000, where an earlier listing had it stop"},
		{"completed in this run (checkEnd's)", listedStopped(2, 1000), ""},
		{"stored completed (checkEnd's)", listedStopped(3, 1000), ""},
		{"taken up at latest", listedStopped(6, 1000), ""},
		{"not listed before", listedStopped(7, 1000), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := s.checkTail(tt.r)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("checkTail(%v) = %v; want nil", tt.r, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("checkTail(%v) = %v; want it to say %q", tt.r, err, tt.want)
			}
		})
	}
}

// reopen publishes only the newest recording's extension, and only when the recording is
// known to be the one ferry published: from this run's listings, or by the origin its
// checkpoint stored. A checkpoint of an older ferry, without an origin, stops the stream
// naming both an extension and a replaced archive.
func TestReopenRefusesWhatItCannotTellApart(t *testing.T) {
	stored := []store.Checkpoint{{RecordingID: 4, Position: 100, Completed: true}} // no origin: an older ferry's
	s := &streamSupervisor{cfg: &StreamConfig{Def: store.Stream{Name: "orders"}}, known: map[int64]*messages.RecordingInfo{},
		stored: map[int64]bool{4: true}, storedCompleted: map[int64]bool{4: true}, origins: newStoredOrigins(stored), finalAt: map[int64]int64{4: 100},
		schedule: progress.NewSchedule(0)}
	r := &messages.RecordingInfo{RecordingId: 4, StopPosition: 200}
	if err := s.reopen(nil, r, true, "it now stops at 200", 0); err == nil || !strings.Contains(err.Error(), "reuses recording ids") {
		t.Fatalf("reopening a recording whose checkpoint has no origin: %v, want the stream stopped naming a replaced archive", err)
	}
	if err := s.reopen(nil, r, false, "it now stops at 200", 0); err == nil || !strings.Contains(err.Error(), "recordings after it came first") {
		t.Fatalf("reopening a recording that is not the newest: %v", err)
	}
}

// An extension of a recording that is not the newest of its listing is followed only where
// the recordings after it cannot have been published: listed at an earlier listing of this
// run, with nothing after it listed before or stored. At a run's first listing a later
// recording may have been published by the run before without a checkpoint stored (the
// first is stored no later than its commits, not before its sends): the stream stops.
func TestReopenOfARecordingNotTheNewest(t *testing.T) {
	stored := []store.Checkpoint{{RecordingID: 4, Position: 100, Completed: true, StartMs: 40, SessionID: 7}}
	extended := &messages.RecordingInfo{RecordingId: 4, StartMs: 40, SessionId: 8, StopPosition: 200}
	for _, c := range []struct {
		name  string
		known []int64
		want  string
	}{
		{"at a run's first listing", nil, "recordings after it came first"},
		{"listed before, a later recording too", []int64{4, 5}, "recordings after it came first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &streamSupervisor{cfg: &StreamConfig{Def: store.Stream{Name: "orders"}}, known: map[int64]*messages.RecordingInfo{},
				stored: map[int64]bool{4: true}, storedCompleted: map[int64]bool{4: true}, origins: newStoredOrigins(stored), finalAt: map[int64]int64{4: 100},
				schedule: progress.NewSchedule(0)}
			for _, id := range c.known {
				s.known[id] = &messages.RecordingInfo{RecordingId: id, StartMs: 10 * id, SessionId: 7, StopPosition: 100}
			}
			if err := s.reopen(nil, extended, false, "it now stops at 200", 0); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("reopen = %v, want the stream stopped saying %q", err, c.want)
			}
		})
	}
}

// runIn is a function the test actor runs on its own goroutine, as the stream supervisor's
// own Receive would: it gives the supervisor's handlers an actor context.
type runIn func(ctx actor.Context)

type runner struct{}

func (runner) Receive(ctx actor.Context) {
	if f, ok := ctx.Message().(runIn); ok {
		f(ctx)
	}
}

type sink struct{}

func (sink) Receive(actor.Context) {}

// bareStream builds a stream supervisor of cfg that spawns nothing of its own: its
// checkpointer is nobody, a sink, and a test fills in running with nobody for the
// recordings it means to be running. run runs fn in an actor's context, as the supervisor's
// own Receive would, and returns when fn has; failed returns how the stream failed, if it did.
func bareStream(t *testing.T, env *Env, cfg *StreamConfig) (s *streamSupervisor, nobody *actor.PID, failed func() error, run func(fn func(ctx actor.Context))) {
	t.Helper()
	system := testSystem(t)
	var failure error
	nobody = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sink{} }))
	restarts, err := supervisor.NewStrategy(cfg.Restart, func(*actor.PID, supervisor.Class, any) {}, env.Logger)
	if err != nil {
		t.Fatal(err)
	}
	s = &streamSupervisor{env: env, cfg: cfg, onFailed: func(_ string, _ supervisor.Class, err error) { failure = err }, status: newStreamStatus(0), checkpointer: nobody, restarts: restarts}
	s.initState()
	run = func(fn func(ctx actor.Context)) {
		done := make(chan struct{})
		system.Root.Send(system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return runner{} })), runIn(func(ctx actor.Context) {
			defer close(done)
			fn(ctx)
		}))
		<-done
	}
	return s, nobody, func() error { return failure }, run
}

// A recording ferry published to its end while the archive still listed it live, and that
// the archive deleted before a listing showed it stopped, is done — not a recording that
// vanished before ferry published all of it (lesson 14's alarm, whose way on, forget,
// would refuse it as completed) — and a recording after it is not held back by it.
func TestARecordingFinishedThenDeletedBeforeItsStopWasListedIsDone(t *testing.T) {
	env, cfg := testEnv(t)
	s, nobody, failed, run := bareStream(t, env, cfg)
	run(func(ctx actor.Context) {
		for _, id := range []int64{5, 6} { // as if spawned: the test runs no recording's actors
			s.running[id] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody}
		}
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{{RecordingId: 5, StartMs: 500, Live: true, StopPosition: -1, RecordedPosition: 100}}})
		s.recordingCompleted(ctx, &messages.CheckpointPersisted{RecordingId: 5, Position: 200, Completed: true})
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000}) // the archive deleted it
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 3_000, Recordings: []*messages.RecordingInfo{{RecordingId: 6, StartMs: 2_500, StopMs: 2_800, StopPosition: 64, RecordedPosition: 64}}})
	})
	if err := failed(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	if !s.completed[5] || s.finished[5] {
		t.Fatalf("recording 5: completed %t, finished %t; want completed", s.completed[5], s.finished[5])
	}
	if w := s.schedule.Waiting(); len(w) != 0 {
		t.Fatalf("recordings waiting: %v, want none (recording 6 may publish)", w)
	}
}

// A recording whose replay ended (its final checkpoint persisted) after a listing showed it
// extended beyond that end, and that the archive deleted before the next listing, vanished
// with records ferry never published: the stream stops, naming them, whether the listing
// had it live or stopped beyond the end — not completed at the old end without a word, nor
// waited for for ever (lesson 14).
func TestAFinishedRecordingExtendedThenDeletedStopsTheStream(t *testing.T) {
	for _, tc := range []struct {
		name     string
		extended *messages.RecordingInfo
	}{
		{"live", &messages.RecordingInfo{RecordingId: 5, StartMs: 500, Live: true, StopPosition: -1, RecordedPosition: 300}},
		{"stopped", &messages.RecordingInfo{RecordingId: 5, StartMs: 500, StopMs: 1_800, StopPosition: 300, RecordedPosition: 300}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			s, nobody, failed, run := bareStream(t, env, cfg)
			six := &messages.RecordingInfo{RecordingId: 6, StartMs: 2_500, StopMs: 2_800, StopPosition: 64, RecordedPosition: 64}
			run(func(ctx actor.Context) {
				for _, id := range []int64{5, 6} { // as if spawned: the test runs no recording's actors
					s.running[id] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody}
				}
				s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{{RecordingId: 5, StartMs: 500, StopMs: 900, StopPosition: 200, RecordedPosition: 200}}})
				s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{tc.extended}})
				s.recordingCompleted(ctx, &messages.CheckpointPersisted{RecordingId: 5, Position: 200, Completed: true})
				for _, at := range []int64{3_000, 4_000} { // retention deleted it
					s.listed(ctx, &messages.RecordingsListed{ListedAtMs: at, Recordings: []*messages.RecordingInfo{six}})
				}
			})
			err := failed()
			if err == nil || !strings.Contains(err.Error(), "recording 5's records from 200 to 300 were never published and are lost") {
				t.Fatalf("the stream failed with %v (completed %v, finished %v, waiting %v); want the records lost named", err, s.completed, s.finished, s.schedule.Waiting())
			}
			if s.completed[5] {
				t.Fatalf("recording 5 completed at 200; want it not completed")
			}
		})
	}
}

// A recording ferry has not published to its end that the archive truncates between two
// listings (waiting behind a live one, or between two replays of it) stops the stream:
// replayed to its new stop, it would count as completed with the records cut off never
// published, and nothing said. So does one truncated and then extended (live again,
// recorded to below the stop listed before: the archive extends only from the stop).
func TestARecordingTruncatedBetweenTwoListingsStopsTheStream(t *testing.T) {
	for _, tt := range []struct {
		name        string
		again       *messages.RecordingInfo
		want, wayOn string
	}{
		{"stopped", &messages.RecordingInfo{RecordingId: 5, StartMs: 200, StopMs: 300, StopPosition: 1000, RecordedPosition: 1000}, "recording 5 now stops at 1000, before 2000", store.ForgetCommand("s", 5)},
		{"extended and stopped", &messages.RecordingInfo{RecordingId: 5, StartMs: 200, StopMs: 400, StopPosition: 1000, RecordedPosition: 1000}, "at 1000, before 2000, where an earlier listing had it stop",
			"give the stream a new name"},
		{"extended", &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: 1500}, "recording 5 now is recorded again (extended), recorded to 1500, before 2000, where an earlier listing had it stop",
			"would drop those it holds old records for as already stored"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			s, nobody, failed, run := bareStream(t, env, cfg)
			live := &messages.RecordingInfo{RecordingId: 4, StartMs: 100, Live: true, StopPosition: -1, RecordedPosition: 4096}
			waiting := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, StopMs: 300, StopPosition: 2000, RecordedPosition: 2000}
			run(func(ctx actor.Context) {
				for _, id := range []int64{4, 5} { // as if spawned: the test runs no recording's actors
					s.running[id] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody}
				}
				s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{live, waiting}})
				if err := failed(); err != nil {
					t.Errorf("the first listing failed the stream: %v", err)
				}
				s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{live, tt.again}})
			})
			if err := failed(); err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.wayOn) {
				t.Fatalf("the stream failed with %v; want the truncation of recording 5 said (%q), and the way on (%q)", err, tt.want, tt.wayOn)
			}
		})
	}
}

// A live recording whose recorded position one listing could not read keeps the one an
// earlier listing read (a live recording's only grows): stopped and truncated below it
// before the next listing, it stops the stream as if that listing had read it. (With the
// unread -1 taken for what was known, the truncation went unsaid.)
func TestARecordedPositionNotReadKeepsTheOneKnown(t *testing.T) {
	env, cfg := testEnv(t)
	s, nobody, failed, run := bareStream(t, env, cfg)
	live := &messages.RecordingInfo{RecordingId: 4, StartMs: 100, Live: true, StopPosition: -1, RecordedPosition: 4096}
	read := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: 2000}
	unread := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: -1}
	truncated := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, StopMs: 300, StopPosition: 1000, RecordedPosition: 1000}
	run(func(ctx actor.Context) {
		for _, id := range []int64{4, 5} { // as if spawned: the test runs no recording's actors
			s.running[id] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody}
		}
		for i, r := range []*messages.RecordingInfo{read, unread} {
			s.listed(ctx, &messages.RecordingsListed{ListedAtMs: int64(i+1) * 1_000, Recordings: []*messages.RecordingInfo{live, r}})
			if err := failed(); err != nil {
				t.Errorf("listing %d failed the stream: %v", i+1, err)
			}
		}
		if unread.RecordedPosition != -1 {
			t.Errorf("the listing's own recording changed: %v", unread)
		}
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 3_000, Recordings: []*messages.RecordingInfo{live, truncated}})
	})
	if err := failed(); err == nil || !strings.Contains(err.Error(), "recording 5 now stops at 1000, before 2000, where an earlier listing had it recorded to") {
		t.Fatalf("the stream failed with %v; want the truncation of recording 5 below 2000 said", err)
	}
}

// A live recording whose recorded position the listings cannot read (the archive does not
// answer MaxRecordedPosition) has no known lag: a replay of it that stopped reading would
// look caught up, and the stream healthy, for ever (lesson 16). Listings that leave it
// unread for longer than stall_after make the stream stalled, saying so; one that reads it
// again clears that. A live recording the stream leaves out (below its start) does not count.
func TestARecordedPositionUnreadForLongIsAStall(t *testing.T) {
	const stall = time.Minute
	env, cfg := testEnv(t)
	cfg.Start = config.StartPosition{Kind: config.StartAt, RecordingID: 5}
	s, nobody, failed, run := bareStream(t, env, cfg)
	leftOut := &messages.RecordingInfo{RecordingId: 4, StartMs: 100, Live: true, StopPosition: -1, RecordedPosition: -1}
	read := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: 0} // nothing behind
	unread := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: -1}
	listing := func(rs ...*messages.RecordingInfo) {
		run(func(ctx actor.Context) {
			s.running[5] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned
			s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: rs})
		})
		if err := failed(); err != nil {
			t.Fatalf("the listing failed the stream: %v", err)
		}
	}
	listing(leftOut, read)
	if since := s.status.recordedUnreadSinceMs; since != 0 {
		t.Fatalf("unread since %d after a listing that read every recording the stream publishes; want 0", since)
	}
	listing(leftOut, unread)
	since := s.status.recordedUnreadSinceMs
	if since == 0 {
		t.Fatal("a listing that left recording 5's recorded position unread was not noted")
	}
	listing(leftOut, unread)
	if s.status.recordedUnreadSinceMs != since {
		t.Fatalf("unread since %d after a second such listing; want it still since %d", s.status.recordedUnreadSinceMs, since)
	}
	if b := s.status.build("s", "archive", nil, nil, stall, since+stall.Milliseconds()-1); !b.Healthy {
		t.Fatalf("unread for less than stall_after: %s, %q; want healthy", b.State, b.Reason)
	}
	if b := s.status.build("s", "archive", nil, nil, stall, since+stall.Milliseconds()+1); b.Healthy || b.State != "stalled" || !strings.Contains(b.Reason, "how far the archive recorded the stream's live recordings could not be read for") {
		t.Fatalf("unread for longer than stall_after: %s, %q; want stalled, saying so", b.State, b.Reason)
	}
	listing(leftOut, read)
	if b := s.status.build("s", "archive", nil, nil, stall, since+stall.Milliseconds()+1); b.State == "stalled" {
		t.Fatalf("read again: %s, %q; want the stall cleared", b.State, b.Reason)
	}
}

// A recording the archive truncated while ferry was down, below the stop a listing had shown
// before, and above its checkpoint, would be replayed to its new stop and completed, its
// records after that never published, without a word: at the first listing no listing of
// this run came before, so the stop its checkpoint keeps stands for one. A checkpoint of an
// older ferry keeps none, and nothing is checked; a stop below the checkpoint is the replay's
// to refuse, with its own way on. The way on names forget, which lowers the stop kept; for
// one recorded again after the truncation (live again, or stopped at another time: the
// archive keeps the stop time when it truncates), a new stream name. A completed recording
// whose checkpoint keeps a stop above its end (a listing showed it extended) is checked too.
func TestARecordingTruncatedWhileFerryWasDownStopsTheStream(t *testing.T) {
	for _, tt := range []struct {
		name             string
		listedStop, stop int64
		stopMs           int64  // the listing's stop time (the stop kept was at 300)
		completed        bool   // the checkpoint at 1000 is the recording's completed one
		want             string // in the stream's failure; "" for none
	}{
		{"truncated", 5000, 3000, 300, false, "recording 5 now stops at 3000, before 5000, where a listing had it stop before this run of ferry"},
		{"truncated below the checkpoint", 5000, 800, 300, false, ""},
		{"as listed before", 5000, 5000, 300, false, ""},
		{"extended", 5000, 6000, 400, false, ""},
		{"checkpoint of an older ferry", 0, 3000, 300, false, ""},
		// Live: stop is the recorded position (the archive extends a recording only from its stop).
		{"truncated, then extended", 5000, -3000, 0, false, "recording 5 now is recorded again (extended), recorded to 3000, before 5000, where a listing had it stop before this run of ferry"},
		{"extended, recording", 5000, -5500, 0, false, ""},
		{"truncated, extended, stopped", 5000, 3000, 400, false, "recording 5 now stops, at 1970-01-01T00:00:00.400Z (not at 1970-01-01T00:00:00.300Z, when it stopped at 5000: recorded again, extended, after a truncation), at 3000, before 5000"},
		{"completed, extended, truncated to its end", 5000, 1000, 300, true, "recording 5 now stops at 1000, before 5000"},
		{"completed, extended, truncated", 5000, 3000, 300, true, "recording 5 now stops at 3000, before 5000"},
		{"completed where it stops", 1000, 1000, 300, true, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			var stopMs int64
			if tt.listedStop > 0 {
				stopMs = 300
			}
			cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 5, Position: 1000, Completed: tt.completed, StartMs: 200, ListedStop: tt.listedStop, ListedStopMs: stopMs}}}
			s, nobody, failed, run := bareStream(t, env, cfg)
			run(func(ctx actor.Context) {
				s.running[5] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned
				r := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, StopMs: tt.stopMs, StopPosition: tt.stop, RecordedPosition: tt.stop}
				if tt.stop < 0 {
					r = &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: -tt.stop}
				}
				s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{r}})
			})
			err := failed()
			// Extended, its new records take the old ones' sequence ids: a new name goes on.
			wayOn := "run `" + store.ForgetCommand("s", 5) + "`: ferry then publishes what the archive still has of the recording"
			if tt.stop < 0 || tt.stopMs != 300 {
				wayOn = "give the stream a new name in the configuration"
			}
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("the stream failed: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "to 5000, which ferry had not all published, are gone") ||
				!strings.Contains(err.Error(), wayOn)):
				t.Fatalf("the stream failed with %v; want the truncation of recording 5 while ferry was down said (%q)", err, tt.want)
			}
		})
	}
}

// Where a listing first shows a recording stopped goes to the checkpointer, to be stored:
// once, not at every listing, and not at all when its checkpoint keeps that stop already.
func TestARecordingListedStoppedHasItsStopStoredOnce(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 4, Position: 1000, StartMs: 100, ListedStop: 2000, ListedStopMs: 150}}}
	s, nobody, failed, run := bareStream(t, env, cfg)
	told := make(probe, 16)
	stopped := &messages.RecordingInfo{RecordingId: 4, StartMs: 100, StopMs: 150, StopPosition: 2000, RecordedPosition: 2000}
	live := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, Live: true, StopPosition: -1, RecordedPosition: 4096}
	ended := &messages.RecordingInfo{RecordingId: 5, StartMs: 200, StopMs: 300, StopPosition: 5000, RecordedPosition: 5000}
	run(func(ctx actor.Context) {
		s.checkpointer = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return told }))
		for _, id := range []int64{4, 5} { // as if spawned: the test runs no recording's actors
			s.running[id] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody}
		}
		for i, l := range [][]*messages.RecordingInfo{{stopped, live}, {stopped, ended}, {stopped, ended}} {
			s.listed(ctx, &messages.RecordingsListed{ListedAtMs: int64(i+1) * 1_000, Recordings: l})
		}
		ctx.Send(s.checkpointer, "done")
	})
	if err := failed(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	var stops []string
	for m := next[any](t, told); m != "done"; m = next[any](t, told) {
		if l, ok := m.(*messages.RecordingListedStopped); ok {
			stops = append(stops, fmt.Sprintf("%d at %d", l.RecordingId, l.StopPosition))
		}
	}
	if want := []string{"5 at 5000"}; !slices.Equal(stops, want) {
		t.Fatalf("the checkpointer was told of stops %q; want %q", stops, want)
	}
}

// A recording truncated below its checkpoint while ferry was down is left to its replay at
// the first listing (which refuses it), and its stop is not stored: stored, it would
// replace the stop the checkpoint keeps above, and the next listing, which says the
// truncation against that stop, would say nothing.
func TestAStopBelowTheCheckpointIsNotStored(t *testing.T) {
	env, cfg := testEnv(t)
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 3, Position: 3000, StartMs: 50, ListedStop: 4000, ListedStopMs: 90}}}
	s, nobody, failed, run := bareStream(t, env, cfg)
	told := make(probe, 16)
	truncated := &messages.RecordingInfo{RecordingId: 3, StartMs: 50, StopMs: 90, StopPosition: 2000, RecordedPosition: 2000}
	var first error
	run(func(ctx actor.Context) {
		s.checkpointer = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return told }))
		s.running[3] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{truncated}})
		first = failed()
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{truncated}})
		ctx.Send(s.checkpointer, "done")
	})
	if first != nil {
		t.Fatalf("the first listing failed the stream: %v; want it left to the replay", first)
	}
	for m := next[any](t, told); m != "done"; m = next[any](t, told) {
		if l, ok := m.(*messages.RecordingListedStopped); ok {
			t.Fatalf("the checkpointer was told of the stop %d of recording 3, below its checkpoint at 3000", l.StopPosition)
		}
	}
	if err := failed(); err == nil || !strings.Contains(err.Error(), "recording 3 now stops at 2000, before 4000") {
		t.Fatalf("the stream failed with %v; want the truncation below the stop kept said", err)
	}
}

// waitingSubscriber is an Aeron client whose subscriptions never come: a transport stream
// stays starting, with nothing in flight.
type waitingSubscriber struct{}

func (waitingSubscriber) AddSubscription(ctx context.Context, _ string, _ int32, _ aeron.ImageHandlers) (*aeron.Subscription, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// streamBoard keeps the last status of each stream.
type streamBoard struct {
	mu      sync.Mutex
	streams map[string]*messages.StreamStatus
}

func (b *streamBoard) SetStream(st *messages.StreamStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.streams[st.Name] = st
}

func (b *streamBoard) SetConnection(*messages.Connection) {}

func (b *streamBoard) stream(name string) *messages.StreamStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[name]
}

// lockedBuffer is a log destination the actors may write to concurrently.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startTwoStreams starts a pipeline of two transport streams, a and b, whose
// subscriptions never come, and returns it with its board and log.
func startTwoStreams(t *testing.T) (*Pipeline, *streamBoard, *lockedBuffer) {
	t.Helper()
	env, cfg := testEnv(t)
	logs := &lockedBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(logs, nil))
	env.Aeron = waitingSubscriber{}
	env.CreateProducer = noProducer
	board := &streamBoard{streams: map[string]*messages.StreamStatus{}}
	env.Board = board
	cfg.Transport = true
	cfg.CallTimeout = time.Hour // the subscriptions wait, without failing
	a, b := *cfg, *cfg
	a.Def.Name, b.Def.Name = "a", "b"
	p, err := NewPipeline(env, []StreamConfig{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, board, logs
}

// failStreamA makes stream a's supervisor fail on a listing with a hole, which no
// discovery sends, and waits for the pipeline's report of it.
func failStreamA(t *testing.T, p *Pipeline) {
	t.Helper()
	p.system.Root.Send(p.pids[0], &messages.RecordingsListed{Recordings: []*messages.RecordingInfo{nil}})
	select {
	case f := <-p.Failures():
		if f.Stream != "a" || !strings.Contains(f.Err.Error(), "the stream's supervisor failed handling *messages.RecordingsListed") {
			t.Fatalf("failure %s: %v; want stream a's supervisor failing on the listing", f.Stream, f.Err)
		}
	case <-time.After(waitFor):
		t.Fatalf("no stream failure reported within %s", waitFor)
	}
}

// A stream's supervisor that fails (a bug) is neither restarted in place — from the store
// as loaded at start, without what its recordings' actors held — nor, after protoactor's
// default ten restarts, stopped without a word. Its stream fails, loudly: the reason and
// the stack at error level, in its status and in the pipeline's failures. The other
// stream goes on, and both answer a drain.
func TestAFailedStreamSupervisorFailsItsStreamOnly(t *testing.T) {
	p, board, logs := startTwoStreams(t)
	failStreamA(t, p)
	eventually.NoError(t, waitFor, func() error {
		st := board.stream("a")
		if st == nil || st.State != "failed" || !strings.Contains(st.Reason, "restart ferry to resume from the persisted checkpoint") {
			return fmt.Errorf("stream a's status %v; want failed, with the way on", st)
		}
		return nil
	})
	if l := logs.String(); !strings.Contains(l, `level=ERROR msg="stream supervisor failed: the stream fails, other streams go on" stream=a`) || !strings.Contains(l, "actors.(*streamSupervisor).listed") {
		t.Fatalf("the failure was not logged at error with its stack; log:\n%s", l)
	}
	eventually.NoError(t, waitFor, func() error {
		if st := board.stream("b"); st == nil || st.State != "starting" {
			return fmt.Errorf("stream b's status %v; want it starting still", st)
		}
		return nil
	})
	drained, err := p.Drain(waitFor)
	if err != nil || len(drained) != 2 {
		t.Fatalf("drain: %d streams answered, error %v; want both, no error", len(drained), err)
	}
}

// A stream's supervisor that fails again while failing is stopped, and a drain says so
// rather than waiting for it.
func TestAStreamSupervisorFailingTwiceIsStopped(t *testing.T) {
	p, _, logs := startTwoStreams(t)
	failStreamA(t, p)
	p.system.Root.Send(p.pids[0], (*messages.DeduplicationChecked)(nil)) // a nil notice
	eventually.NoError(t, waitFor, func() error {
		if !strings.Contains(logs.String(), "stream supervisor failed again, while failing: stopped") {
			return errors.New("the second failure is not logged")
		}
		return nil
	})
	drained, err := p.Drain(waitFor)
	if len(drained) != 1 || drained[0].Stream != "b" || err == nil || !strings.Contains(err.Error(), "stream a had stopped") {
		t.Fatalf("drain after a's second failure: %v, error %v; want b drained and a reported stopped", drained, err)
	}
}

// A stream whose first listing start_position latest could not act on (the live end of a
// live recording unreadable) has not started: the status says starting, and stalled after
// the threshold, rather than caught-up while nothing of it is published. A stream whose
// listings all fail, after one succeeded, is stalled after the threshold: new recordings
// are not seen.
func TestAStreamStartsWithAListingActedOnAndStallsWhenListingsFail(t *testing.T) {
	const stall = time.Minute
	system := testSystem(t)
	env, cfg := testEnv(t)
	cfg.Start = config.StartPosition{Kind: config.StartLatest}
	nobody := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sink{} }))
	s := &streamSupervisor{env: env, cfg: cfg, status: newStreamStatus(0), checkpointer: nobody}
	s.initState()
	done := make(chan struct{})
	system.Root.Send(system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return runner{} })), runIn(func(ctx actor.Context) {
		defer close(done)
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{{RecordingId: 5, StartMs: 500, Live: true, StopPosition: -1, RecordedPosition: -1}}})
	}))
	<-done
	if st := s.status.build("orders", "archive", nil, nil, stall, stall.Milliseconds()+1); st.State != "stalled" || !strings.Contains(st.Reason, "not started") {
		t.Fatalf("latest undecided for longer than the threshold: %s, %q; want stalled, not started", st.State, st.Reason)
	}
	done = make(chan struct{})
	system.Root.Send(system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return runner{} })), runIn(func(ctx actor.Context) {
		defer close(done)
		// The recording deleted meanwhile: an empty archive, decided at once (nothing to seed).
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000})
	}))
	<-done
	if st := s.status.build("orders", "archive", nil, nil, stall, stall.Milliseconds()+2); st.State != "caught-up" {
		t.Fatalf("latest decided at the second listing: %s, %q; want caught-up", st.State, st.Reason)
	}

	st := newStreamStatus(0)
	st.listed, st.listFailingSinceMs = true, 1_000
	if b := st.build("orders", "archive", nil, nil, stall, 1_000+stall.Milliseconds()-1); !b.Healthy {
		t.Fatalf("listings failing for less than the threshold: %s, %q; want healthy", b.State, b.Reason)
	}
	if b := st.build("orders", "archive", nil, nil, stall, 1_000+stall.Milliseconds()+1); b.State != "stalled" || !strings.Contains(b.Reason, "every listing of the stream's recordings failed") {
		t.Fatalf("listings failing for longer than the threshold: %s, %q; want stalled, saying so", b.State, b.Reason)
	}
}

// A start position that leaves out a live recording (start_recording_id above a concurrent
// publisher's) is the user's choice, but leaving a publisher out must not go unsaid (lesson
// 11): the stream says so once, at error level and in its status, and goes on.
func TestAStartLeavingOutALiveRecordingSaysSo(t *testing.T) {
	env, cfg := testEnv(t)
	logged := &lockedBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(logged, nil))
	cfg.Start = config.StartPosition{Kind: config.StartAt, RecordingID: 5}
	s, nobody, failed, run := bareStream(t, env, cfg)
	run(func(ctx actor.Context) {
		s.running[5] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned
		for i, at := range []int64{1_000, 2_000} {
			s.listed(ctx, &messages.RecordingsListed{ListedAtMs: at, Recordings: []*messages.RecordingInfo{
				{RecordingId: 3, StartMs: 100, StopMs: 200, StopPosition: 64, RecordedPosition: 64},
				{RecordingId: 4, StartMs: 300, Live: true, StopPosition: -1, RecordedPosition: 1000 * int64(i+1)},
				{RecordingId: 5, StartMs: 400, Live: true, StopPosition: -1, RecordedPosition: 64},
			}})
		}
	})
	if err := failed(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	if n := strings.Count(logged.String(), "recording 4 is live but below recording 5"); n != 1 {
		t.Fatalf("the live recording left out was said %d times, want once:\n%s", n, logged.String())
	}
	if strings.Contains(logged.String(), "recording 3 is") {
		t.Fatalf("the stopped recording left out was reported as a live one:\n%s", logged.String())
	}
	if f := s.status.failures["start"]; f == nil || !strings.Contains(f.Message, "start_position: latest") {
		t.Fatalf("status failure %v; want the start's, saying what to do", f)
	}
}

// Under start_position latest, a recording below where the choice began the stream
// (stopped at the first listing, extended since: live again) is left out, said as such: where
// the stream begins (the choice's recording, not start_recording_id's 0) and a way on other
// than the start the stream already has.
func TestALiveRecordingLeftOutByLatestSaysWhereTheStreamBegins(t *testing.T) {
	env, cfg := testEnv(t)
	logged := &lockedBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(logged, nil))
	cfg.Start = config.StartPosition{Kind: config.StartLatest}
	s, nobody, failed, run := bareStream(t, env, cfg)
	run(func(ctx actor.Context) {
		s.running[4] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{
			{RecordingId: 3, StartMs: 100, StopMs: 200, StopPosition: 64, RecordedPosition: 64},
			{RecordingId: 4, StartMs: 300, Live: true, StopPosition: -1, RecordedPosition: 1000},
		}})
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{
			{RecordingId: 3, StartMs: 100, Live: true, StopPosition: -1, RecordedPosition: 128},
			{RecordingId: 4, StartMs: 300, Live: true, StopPosition: -1, RecordedPosition: 2000},
		}})
	})
	if err := failed(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	f := s.status.failures["start"]
	if f == nil || !strings.Contains(f.Message, "recording 3 is live but below recording 4, where the stream begins (start_position latest") ||
		!strings.Contains(f.Message, "start_recording_id: 3") || strings.Contains(f.Message, "use start_position: latest") {
		t.Fatalf("status failure %v; want recording 3 left out below recording 4, where latest began the stream, and a way on other than latest", f)
	}
}

// A recording read again to check its last record (listed stopped at its end at another
// time) that the archive then deleted had been published to its end: it is done, the check
// not made — not a recording that vanished before ferry published all of it (lesson 14's
// alarm, which would stop the stream and name records as lost that were published).
func TestARecordingDeletedWhileReadAgainIsDone(t *testing.T) {
	env, cfg := testEnv(t)
	logged := &lockedBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(logged, nil))
	cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{{RecordingID: 5, Position: 64, Completed: true, StartMs: 500}}}
	s, nobody, failed, run := bareStream(t, env, cfg)
	stopped := func(stopMs int64) *messages.RecordingInfo {
		return &messages.RecordingInfo{RecordingId: 5, StartMs: 500, StopMs: stopMs, StopPosition: 64, RecordedPosition: 64}
	}
	run(func(ctx actor.Context) {
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 1_000, Recordings: []*messages.RecordingInfo{stopped(600)}})
		s.running[5] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned to read it again
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{stopped(1_500)}})
		if !s.rechecking[5] {
			t.Errorf("recording 5, stopped again at its end, is not read again")
		}
		s.listed(ctx, &messages.RecordingsListed{ListedAtMs: 3_000}) // retention deleted it
	})
	if err := failed(); err != nil {
		t.Fatalf("the stream failed: %v", err)
	}
	if !s.completed[5] || s.rechecking[5] || s.running[5] != nil {
		t.Fatalf("recording 5: completed %t, read again %t, running %t; want completed, its actors stopped", s.completed[5], s.rechecking[5], s.running[5] != nil)
	}
	if !strings.Contains(logged.String(), "deleted from the archive while ferry read its last record again") {
		t.Fatalf("the check not made was not said:\n%s", logged.String())
	}
}

// heldSupervisor runs a stream supervisor without its start: its Started spawns what the
// test gives it instead, and every other message goes to the supervisor.
type heldSupervisor struct {
	s     *streamSupervisor
	start func(ctx actor.Context)
	// handled, if set, is told of every message after the supervisor handled it.
	handled func(msg any)
}

func (h *heldSupervisor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		h.start(ctx)
	case runIn: // the test's look at the supervisor, in turn with its messages
		m(ctx)
	default:
		h.s.Receive(ctx)
		if h.handled != nil {
			h.handled(m)
		}
	}
}

// slowToStop stands in for a tracker: as it stops it reports its last commits to the
// checkpointer, as the tracker does, but only after a while.
type slowToStop struct{ checkpointer *actor.PID }

func (a slowToStop) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Stopping); ok {
		time.Sleep(100 * time.Millisecond) // a tracker busy as the stream fails
		ctx.Send(a.checkpointer, &messages.Committed{RecordingId: 5, Position: 640})
	}
}

// A stream that fails stops its recordings' actors, and a tracker reports its last commits
// as it stops. A drain that follows at once (every stream failed, and ferry stops) must
// not flush the checkpoints before those commits reach the checkpointer: they would be
// left unsaved and published again at the next start.
func TestADrainAfterAFailureFlushesOnlyOnceTheStoppedActorsReported(t *testing.T) {
	env, cfg := testEnv(t)
	system := testSystem(t)
	checkpointer := make(probe, 16)
	cpPID := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return checkpointer }))
	s := &streamSupervisor{env: env, cfg: cfg, status: newStreamStatus(0), checkpointer: cpPID}
	s.initState()
	stream := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &heldSupervisor{s: s, start: func(ctx actor.Context) {
			ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return slowToStop{checkpointer: cpPID} }))
		}}
	}))
	system.Root.Send(stream, &streamFailed{child: stream, err: errors.New("failed by the test")})
	drained := system.Root.RequestFuture(stream, &messages.Drain{DeadlineMs: time.Now().Add(time.Minute).UnixMilli()}, waitFor)
	var got []string
	for len(got) < 2 {
		select {
		case m := <-checkpointer:
			got = append(got, fmt.Sprintf("%T", m))
		case <-time.After(waitFor):
			t.Fatalf("the checkpointer received %v within %s; want the commits and the drain", got, waitFor)
		}
	}
	if want := []string{"*messages.Committed", "*messages.Drain"}; !slices.Equal(got, want) {
		t.Fatalf("the checkpointer received %v; want %v: the flush before the stopped tracker's commits", got, want)
	}
	system.Root.Send(stream, &messages.CheckpointsFlushed{})
	if _, err := drained.Result(); err != nil {
		t.Fatalf("the stream did not answer the drain: %v", err)
	}
}

// A recording published to its end and then read again (extended, or to check its last
// record) has new actors, and its status counts on from the finished tracker's counts
// (reopened). The finished tracker's last push, arriving late, is not added again: only
// the running tracker's pushes are taken.
func TestALatePushOfAFinishedTrackerIsNotCountedAgain(t *testing.T) {
	env, cfg := testEnv(t)
	system := testSystem(t)
	sinkPID := func() *actor.PID {
		return system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sink{} }))
	}
	finished, running := sinkPID(), sinkPID()
	s := &streamSupervisor{env: env, cfg: cfg, status: newStreamStatus(0), checkpointer: sinkPID()}
	s.initState()
	last := &messages.RecordingStatus{CommittedPosition: proto.Int64(640), Published: 10, Acknowledged: 10}
	s.status.progress(&messages.RecordingProgress{RecordingId: 3, Status: last}, at(1))
	s.status.persisted(&messages.CheckpointPersisted{RecordingId: 3, Position: 640, Completed: true}, at(2))
	s.status.reopened(3)
	s.running[3] = &recordingPIDs{replay: running, tracker: running, publisher: running}
	stream := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
		return &heldSupervisor{s: s, start: func(actor.Context) {}}
	}))
	counts := func() [2]uint64 {
		c := make(chan [2]uint64, 1)
		system.Root.Send(stream, runIn(func(actor.Context) {
			r := s.status.recording(3)
			c <- [2]uint64{r.Published, r.Acknowledged}
		}))
		return <-c
	}
	system.Root.RequestWithCustomSender(stream, &messages.RecordingProgress{RecordingId: 3, Status: last}, finished)
	if got := counts(); got != [2]uint64{10, 10} {
		// Counted again, they would go back down at the running tracker's next push: a
		// counter in /metrics that goes back reads as a reset.
		t.Fatalf("published, acknowledged = %v after the finished tracker's late push; want [10 10]", got)
	}
	system.Root.RequestWithCustomSender(stream, &messages.RecordingProgress{RecordingId: 3,
		Status: &messages.RecordingStatus{CommittedPosition: proto.Int64(704), Published: 2, Acknowledged: 1}}, running)
	if got := counts(); got != [2]uint64{12, 11} {
		t.Fatalf("published, acknowledged = %v after the running tracker's push; want [12 11]", got)
	}
}

// restartingReplay stands in for the replay of a recording: each incarnation tells the
// tracker where it starts, and fails when told to (an image closed, an archive error).
type restartingReplay struct {
	tracker *actor.PID
	gen     *uint64
	from    int64
}

type failNow struct{}

func (r restartingReplay) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		*r.gen++
		ctx.Send(r.tracker, &messages.ReplayStarted{RecordingId: 5, Generation: *r.gen, FromPosition: r.from})
	case failNow:
		panic(supervisor.Fail(supervisor.Transient, errors.New("the replay's image closed")))
	}
}

// The replay of a quiet live recording, committed up to where the archive recorded it,
// that fails now and then (far apart: the window is shorter than the back-off) is restarted
// each time: it has nothing to move on to, which is not being stuck. The same replay of a
// recording with records left, which never moves on, fails the stream after MaxRestarts.
func TestAReplayFailingNowAndThenIsGivenUpOnlyWithRecordsLeft(t *testing.T) {
	for _, recorded := range []int64{640, 4096} {
		env, cfg := testEnv(t)
		cfg.Restart = supervisor.Policy{Backoff: supervisor.Backoff{Min: time.Millisecond, Max: time.Millisecond}, MaxRestarts: 3, Window: time.Nanosecond}
		system := testSystem(t)
		checkpointer := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return sink{} }))
		var stream *actor.PID
		strategy, err := supervisor.NewStrategy(cfg.Restart, func(child *actor.PID, c supervisor.Class, reason any) {
			system.Root.Send(stream, &streamFailed{child: child, err: fmt.Errorf("given up: %v", reason)})
		}, env.Logger)
		if err != nil {
			t.Fatal(err)
		}
		failed := make(chan error, 1)
		s := &streamSupervisor{env: env, cfg: cfg, status: newStreamStatus(0), checkpointer: checkpointer, restarts: strategy,
			onFailed: func(_ string, _ supervisor.Class, err error) { failed <- err }}
		s.initState()
		s.status.known(&messages.RecordingInfo{RecordingId: 5, Live: true, StopPosition: -1, RecordedPosition: recorded}, 0)
		var pushes atomic.Int32 // the tracker's pushes the supervisor handled
		var gen uint64
		replay := make(chan *actor.PID, 1)
		stream = system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
			return &heldSupervisor{s: s, start: func(ctx actor.Context) {
				pids := &recordingPIDs{stream: ctx.Self(), checkpointer: checkpointer}
				pids.tracker, _ = ctx.SpawnNamed(actor.PropsFromProducer(newTracker(env, cfg, 5, pids)), "r5-tracker")
				pids.publisher = pids.tracker
				pids.replay, _ = ctx.SpawnNamed(actor.PropsFromProducer(func() actor.Actor {
					return restartingReplay{tracker: pids.tracker, gen: &gen, from: 640}
				}), "r5-replay")
				s.running[5] = pids
				replay <- pids.replay
			}, handled: func(m any) {
				if _, ok := m.(*messages.RecordingProgress); ok {
					pushes.Add(1)
				}
			}}
		}, actor.WithSupervisor(strategy)))
		r := <-replay
		var err2 error
		// Each failure comes after the supervisor handled the push of the start before it,
		// and is followed by the stream's failure or the next start's push.
		for i := 0; i < 6 && err2 == nil; i++ {
			eventually.NoError(t, waitFor, func() error {
				select {
				case err2 = <-failed:
					return nil
				default:
				}
				if n := pushes.Load(); n <= int32(i) {
					return fmt.Errorf("%d pushes of the tracker handled, want %d", n, i+1)
				}
				return nil
			})
			if err2 == nil {
				system.Root.Send(r, failNow{})
			}
		}
		if err2 == nil {
			select { // the last failure's outcome
			case err2 = <-failed:
			case <-time.After(time.Second):
			}
		}
		switch {
		case recorded == 640 && err2 != nil:
			t.Errorf("a quiet live recording committed to its end: the stream failed (%v); want its replay restarted each time", err2)
		case recorded > 640 && err2 == nil:
			t.Errorf("a recording with records left that never moves on: the stream did not fail after 6 failures in a row")
		}
	}
}

// A stream that failed keeps its checkpointer to answer a drain; if the checkpointer is
// given up too while the drain waits for its flush (a corrupt store), the drain is answered
// at once — nothing can be persisted any more — not at the caller's timeout, which would
// say the stream did not drain, and hold a reconnect back that long.
func TestADrainIsAnsweredWhenTheCheckpointerIsGivenUpAfterTheStreamFailed(t *testing.T) {
	for _, failedBefore := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed before: %t", failedBefore), func(t *testing.T) {
			env, cfg := testEnv(t)
			system := testSystem(t)
			checkpointer := make(probe, 16)
			cp := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return checkpointer }))
			s := &streamSupervisor{env: env, cfg: cfg, status: newStreamStatus(0), checkpointer: cp}
			s.initState()
			stream := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor {
				return &heldSupervisor{s: s, start: func(actor.Context) {}}
			}))
			if failedBefore {
				system.Root.Send(stream, &streamFailed{child: actor.NewPID("nonhost", "r5-replay"), err: errors.New("recording 5 vanished")})
			}
			drained := system.Root.RequestFuture(stream, &messages.Drain{DeadlineMs: time.Now().Add(time.Hour).UnixMilli()}, waitFor)
			next[*messages.Drain](t, checkpointer) // the stream waits for the flush
			system.Root.Send(stream, &streamFailed{child: cp, err: &store.CorruptError{File: "f.db", Reason: "checksum"}})
			if res, err := drained.Result(); err != nil {
				t.Fatalf("the drain was not answered: %v", err)
			} else if _, ok := res.(*messages.Drained); !ok {
				t.Fatalf("the drain was answered with %T", res)
			}
		})
	}
}

// holdBoard holds stream "a"'s next status push, once armed, until released, and then
// panics fail times, that push first: the stream's supervisor fails (twice: the push of its
// failure fails it again).
type holdBoard struct {
	streamBoard
	fail             atomic.Int32
	armed            atomic.Bool
	blocked, release chan struct{}
}

func (b *holdBoard) SetStream(st *messages.StreamStatus) {
	if st.Name == "a" && b.armed.CompareAndSwap(true, false) {
		close(b.blocked)
		<-b.release
	}
	if st.Name == "a" && b.fail.Load() > 0 && isClosed(b.blocked) {
		b.fail.Add(-1)
		panic("the board failed the stream, as the test asked")
	}
	b.streamBoard.SetStream(st)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// refusingSubscriber refuses every subscription once refuse is closed, and closes refused
// after the first refusal.
type refusingSubscriber struct {
	refuse, refused chan struct{}
	once            *sync.Once
}

func (r refusingSubscriber) AddSubscription(ctx context.Context, _ string, _ int32, _ aeron.ImageHandlers) (*aeron.Subscription, error) {
	select {
	case <-r.refuse:
		defer r.once.Do(func() { close(r.refused) })
		return nil, errors.New("refused by the test")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// A stream's failure is said even when it comes while the stream's mailbox is full: the
// stream's supervisor fails (its guardian), or gives a child up (its strategy), on its own
// goroutine, and the notice it sends itself must not wait for room only it could make (it
// spun for ever, the stream's failure never said, its drain never answered). Stopped after
// failing twice, its mailbox is emptied all the same (suspended, it held every sender for
// ever). The mailbox is filled while the stream is held inside a status push; a control
// run queues nothing.
func TestAStreamFailingWhileItsMailboxIsFullSaysSo(t *testing.T) {
	for _, how := range []string{"the stream's supervisor fails", "the stream's supervisor fails twice", "a child is given up"} {
		for _, fill := range []int{0, 5000} {
			t.Run(fmt.Sprintf("%s, %d queued", how, fill), func(t *testing.T) {
				env, cfg := testEnv(t)
				board := &holdBoard{streamBoard: streamBoard{streams: map[string]*messages.StreamStatus{}},
					blocked: make(chan struct{}), release: make(chan struct{})}
				sub := refusingSubscriber{refuse: make(chan struct{}), refused: make(chan struct{}), once: &sync.Once{}}
				env.Aeron, env.CreateProducer, env.Board = sub, noProducer, board
				cfg.Transport, cfg.CallTimeout = true, time.Hour
				switch how {
				case "the stream's supervisor fails":
					board.fail.Store(1)
				case "the stream's supervisor fails twice":
					board.fail.Store(2)
				default:
					cfg.Restart.MaxRestarts = 0 // the live reader's first failure gives it up
				}
				a := *cfg
				a.Def.Name = "a"
				p, err := NewPipeline(env, []StreamConfig{a})
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Stop)
				board.armed.Store(true)
				select {
				case <-board.blocked:
				case <-time.After(waitFor):
					t.Fatal("no status push")
				}
				if board.fail.Load() == 0 {
					close(sub.refuse) // the live reader's failure waits for the held stream
					<-sub.refused
				}
				var sent atomic.Int64
				filled := make(chan struct{})
				go func() {
					defer close(filled)
					for range fill {
						p.system.Root.Send(p.pids[0], &messages.FailureObserved{Failure: &messages.Failure{Kind: "publish", Message: "x"}})
						sent.Add(1)
					}
				}()
				var last []int64
				eventually.NoError(t, waitFor, func() error { // the mailbox (4096) full: the sender waits
					last = append(last, sent.Load())
					if n := len(last); fill > 0 && (last[n-1] < 4000 || n < 3 || last[n-3] != last[n-1]) {
						return fmt.Errorf("%d queued", last[n-1])
					}
					return nil
				})
				close(board.release)
				select {
				case f := <-p.Failures():
					if f.Stream != "a" {
						t.Fatalf("stream %q failed", f.Stream)
					}
				case <-time.After(waitFor):
					t.Fatal("the stream's failure was not said")
				}
				select {
				case <-filled:
				case <-time.After(waitFor):
					t.Fatalf("the sender still waits for room after %d, the stream failed", sent.Load())
				}
				eventually.NoError(t, waitFor, func() error { // the second failure comes after the first is said
					if n := board.fail.Load(); n != 0 {
						return fmt.Errorf("the stream's supervisor failed %d times fewer than the test asked", n)
					}
					return nil
				})
			})
		}
	}
}

// start_position latest on an archive holding none of the stream's recordings decides that
// every recording after it is published in full, and has the checkpointer store that
// (StartDecided): a restart finds the stream's definition stored and no checkpoint, and
// publishes a recording made meanwhile from its start, as the run before would have.
// (Before, a restart decided again, and began a recording made while ferry was down at its
// live end: its head never published, without a word.) Found nothing stored, the first
// listing begins a live recording at its live end.
func TestStartLatestOnAnEmptyArchiveIsNotDecidedAgainByARestart(t *testing.T) {
	rec := &messages.RecordingInfo{RecordingId: 0, StartMs: 500, Live: true, StopPosition: -1, RecordedPosition: 4096}
	listed := func(t *testing.T, stored store.State, l *messages.RecordingsListed) probe {
		t.Helper()
		env, cfg := testEnv(t)
		cfg.Start = config.StartPosition{Kind: config.StartLatest}
		cfg.Stored = stored
		s, nobody, failed, run := bareStream(t, env, cfg)
		checkpointer := make(probe, 64)
		run(func(ctx actor.Context) {
			s.checkpointer = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return checkpointer }))
			for id := range int64(3) { // as if spawned: the test runs no recording's actors
				s.running[id] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody}
			}
			s.listed(ctx, l)
		})
		if err := failed(); err != nil {
			t.Fatal(err)
		}
		return checkpointer
	}

	t.Run("an empty archive", func(t *testing.T) {
		if d := next[*messages.StartDecided](t, listed(t, store.State{}, &messages.RecordingsListed{ListedAtMs: 1_000})); len(d.Seeds) != 0 {
			t.Fatalf("decided with seeds %v; want none", d.Seeds)
		}
	})
	t.Run("restarted, the definition alone stored", func(t *testing.T) {
		stored := store.State{Stored: true, Stream: store.Stream{Name: "s"}}
		seed := next[*messages.SeedCheckpoint](t, listed(t, stored, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{rec}}))
		if seed.RecordingId != 0 || seed.Position != 0 {
			t.Fatalf("recording 0, made while ferry was down, seeded at %d; want its start, 0 (its head [0, 4096) would never be published)", seed.Position)
		}
	})
	t.Run("nothing stored, a live recording and two after it", func(t *testing.T) {
		// Their seeds in one message, for one write: stored in two, a restart between them
		// would find recording 0's alone, and publish the history of 1 and 2 the decision
		// left out.
		stopped := &messages.RecordingInfo{RecordingId: 1, StartMs: 600, StopPosition: 2000, RecordedPosition: 2000}
		concurrent := &messages.RecordingInfo{RecordingId: 2, StartMs: 700, Live: true, StopPosition: -1, RecordedPosition: 300}
		d := next[*messages.StartDecided](t, listed(t, store.State{}, &messages.RecordingsListed{ListedAtMs: 2_000, Recordings: []*messages.RecordingInfo{rec, stopped, concurrent}}))
		var got []string
		for _, sd := range d.Seeds {
			got = append(got, fmt.Sprintf("%d at %d", sd.RecordingId, sd.Position))
		}
		if want := []string{"0 at 4096", "1 at 2000", "2 at 300"}; !slices.Equal(got, want) {
			t.Fatalf("decided with seeds %q; want %q: recording 0, live at the first listing, at its live end, the ones after it at their ends", got, want)
		}
	})
}

// A child the stream never restarts (here the transport mode's publisher) that fails with a
// bug fails the stream with its own class and reason, not with the refusal of a restart
// (which named no cause, and called it poison).
func TestAChildNeverRestartedFailsTheStreamWithItsOwnFailure(t *testing.T) {
	p, _, logs := startTwoStreams(t)
	eventually.NoError(t, waitFor, func() error { // the publisher runs: it tried to create its producer
		if !strings.Contains(logs.String(), `msg="cannot create the Pulsar producer; retrying" stream=a`) {
			return errors.New("stream a's publisher has not started")
		}
		return nil
	})
	publisher := actor.NewPID(p.system.Address(), p.pids[0].Id+"/publisher")
	p.system.Root.Send(publisher, (*messages.Watermark)(nil)) // a nil notice: a runtime error, a bug
	select {
	case f := <-p.Failures():
		if msg := f.Err.Error(); f.Stream != "a" || !strings.Contains(msg, "(bug)") || strings.Contains(msg, "cannot be restarted in place") {
			t.Fatalf("failure %s: %v; want stream a failed by its publisher's bug, with its reason", f.Stream, f.Err)
		}
	case <-time.After(waitFor):
		t.Fatalf("no stream failure reported within %s", waitFor)
	}
}

// The children the stream never restarts, by name.
func TestNeverRestarted(t *testing.T) {
	for id, want := range map[string]bool{
		"s/checkpointer": true, "s/r7-tracker": true, "s/r7.1-tracker": true, "s/r7-publisher": true, "s/r7.1-publisher": true, "s/publisher": true,
		"s/r7-replay": false, "s/live": false, "s/discovery": false, "s/r7.1-replay": false,
		"stream-a-b/r7-replay": false, "stream-a-b/checkpointer": true, // a stream's name with a hyphen
	} {
		if got := neverRestarted(actor.NewPID("nonhost", id)); got != want {
			t.Errorf("neverRestarted(%s) = %t, want %t", id, got, want)
		}
	}
}

// A child the stream never restarts failing transiently (an error panicked bare, which none
// of them does by design) fails the stream as a bug, which a reconnect does not start
// again; its other failures, and any failure of the others, keep their class.
func TestGivenUpAs(t *testing.T) {
	for _, c := range []struct {
		id          string
		class, want supervisor.Class
	}{
		{"s/r7-publisher", supervisor.Transient, supervisor.Bug},
		{"s/r7-tracker", supervisor.Transient, supervisor.Bug},
		{"s/checkpointer", supervisor.Transient, supervisor.Bug},
		{"s/r7-tracker", supervisor.Poison, supervisor.Poison},
		{"s/checkpointer", supervisor.Corrupt, supervisor.Corrupt},
		{"s/r7-replay", supervisor.Transient, supervisor.Transient},
		{"s/live", supervisor.Transient, supervisor.Transient},
		{"s/discovery", supervisor.Bug, supervisor.Bug},
	} {
		if got := givenUpAs(actor.NewPID("nonhost", c.id), c.class); got != c.want {
			t.Errorf("givenUpAs(%s, %s) = %s, want %s", c.id, c.class, got, c.want)
		}
	}
}

// A stream that failed of a transient failure, told by a commit tracker stopping that lesson
// 22 was not ruled out for its recording, fails for good (a reconnect does not start it
// again); one failed for good already is not changed by it, but the record to check is
// logged, each recording's; one draining or still running fails for good
// (TestARunningOrDrainingStreamToldLesson22UndecidedFailsForGood).
func TestAStreamFailedTransientlyWithLesson22UndecidedFailsForGood(t *testing.T) {
	env, cfg := testEnv(t)
	logged := &lockedBuffer{}
	env.Logger = slog.New(slog.NewTextHandler(logged, nil))
	s, _, _, run := bareStream(t, env, cfg)
	var classes []supervisor.Class
	s.onFailed = func(_ string, class supervisor.Class, _ error) { classes = append(classes, class) }
	run(func(ctx actor.Context) {
		s.fail(ctx, supervisor.Transient, errors.New("replay given up"))
		s.hazardUndecided(ctx, &messages.HazardUndecided{RecordingId: 7, FailedEnd: 128, Unanswered: 2})
		// Failed for good already: the stream's failure stays, the record is logged.
		s.hazardUndecided(ctx, &messages.HazardUndecided{RecordingId: 8, FailedEnd: 256, Unanswered: 3})
	})
	if !slices.Equal(classes, []supervisor.Class{supervisor.Transient, supervisor.Poison}) {
		t.Fatalf("the stream failed as %v; want transient, then poison", classes)
	}
	if !strings.Contains(s.failed.Error(), "recording 7: the send of the record ending at 128 failed while 2 sends above it had no outcome") {
		t.Fatalf("the stream's failure %q; want lesson 22's undecided record named", s.failed)
	}
	for _, want := range []string{"recording 7: the send of the record ending at 128", "recording 8: the send of the record ending at 256"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("the log does not name %q:\n%s", want, logged)
		}
	}
}

// A stream still running or draining, told by a commit tracker that lesson 22 was not ruled
// out for its recording, fails for good: a reconnect does not start it again, and its
// failure names the record to check.
//   - Draining (for a reconnect, or ferry's stop): the tracker said so at the drain's deadline.
//   - Running: a tracker that fails says so as it stops, and the strategy's notice that it
//     was given up comes after, from another goroutine. Nothing but a failure stops a tracker
//     with outcomes outstanding; dropped, the word would leave the stream failing a moment
//     later with the tracker's error alone, and a restart would take the failed record's
//     re-send, answered as a duplicate, for published.
func TestARunningOrDrainingStreamToldLesson22UndecidedFailsForGood(t *testing.T) {
	for _, draining := range []bool{false, true} {
		t.Run(map[bool]string{false: "running", true: "draining"}[draining], func(t *testing.T) {
			env, cfg := testEnv(t)
			s, _, _, run := bareStream(t, env, cfg)
			var classes []supervisor.Class
			s.onFailed = func(_ string, class supervisor.Class, _ error) { classes = append(classes, class) }
			run(func(ctx actor.Context) {
				s.stopping = draining // as drain sets it
				s.hazardUndecided(ctx, &messages.HazardUndecided{RecordingId: 6, FailedEnd: 4242, Unanswered: 3})
				if !draining {
					s.fail(ctx, supervisor.Poison, errors.New("r6-tracker failed (poison) and is not restarted"))
				}
			})
			if !slices.Equal(classes, []supervisor.Class{supervisor.Poison}) {
				t.Fatalf("the stream failed as %v; want once, for good", classes)
			}
			if s.failed == nil || !strings.Contains(s.failed.Error(), "recording 6: the send of the record ending at 4242 failed while 3 sends above it had no outcome") {
				t.Fatalf("the stream's failure %v; want lesson 22's undecided record named", s.failed)
			}
		})
	}
}

// A failed stream shows what it keeps — positions, counts, its failure — and none of what
// only its running actors kept current: no commit rate, ETA, producer or publishers (its
// actors' last pushes, after the failure, are not taken), as after a stop.
func TestAFailedStreamShowsNoRateProducerOrPublishers(t *testing.T) {
	env, cfg := testEnv(t)
	s, _, _, run := bareStream(t, env, cfg)
	for i, now := range []int64{1_000, 1_500, 2_000} {
		s.status.progress(&messages.RecordingProgress{RecordingId: 7, Status: &messages.RecordingStatus{
			CommittedPosition: proto.Int64(int64(i) << 20), Acknowledged: uint64(i) * 1000, Publishers: proto.Int32(2)}}, at(now))
	}
	s.status.recording(7).Producer = "ready"
	s.status.recording(7).RecordedPosition = proto.Int64(64 << 20)
	if r := s.status.build("s", "archive", nil, nil, time.Minute, 2_000).Recordings[0]; r.RateBytesPerS == 0 || r.Producer != "ready" {
		t.Fatalf("running: rate %.0f, producer %q; want a rate and the producer ready", r.RateBytesPerS, r.Producer)
	}
	failure := errors.New("failed by the test")
	run(func(ctx actor.Context) { s.fail(ctx, supervisor.Poison, failure) })
	s.producerChanged(&messages.ProducerChanged{RecordingId: 7, State: "ready"}) // created as the failure stopped its publisher
	st := s.status.build("s", "archive", failure, nil, time.Minute, 2_500)
	r := st.Recordings[0]
	if st.State != "failed" || r.RateBytesPerS != 0 || r.EtaMs != nil || r.Producer != "" || r.Publishers != nil {
		t.Errorf("failed: %s, rate %.0f, ETA %v ms, producer %q, publishers %v; want failed, no rate, ETA, producer or publishers", st.State, r.RateBytesPerS, r.GetEtaMs(), r.Producer, r.Publishers)
	}
	if r.GetCommittedPosition() != 2<<20 || r.Acknowledged != 2000 {
		t.Errorf("failed: committed %d, acknowledged %d; want them kept, %d and 2000", r.GetCommittedPosition(), r.Acknowledged, 2<<20)
	}
}

// A recording published to its end and stopped again there at another time while ferry was
// down (extended by nothing, or truncated and recorded again up to the same end) shows, at
// the first listing of the next run, only its new stop time: compared with the one its
// checkpoint keeps, it is read again (reopen). One whose checkpoint keeps no stop time at
// that end is read again once, unless the checkpoint keeps no last record to compare. The
// new stop time is stored only once that reading is done: stored before, and ferry stopped
// meanwhile, the run after would find it kept and never read the recording again.
func TestARecordingStoppedAgainWhileFerryWasDownIsReadAgain(t *testing.T) {
	last := store.RecordMark{Start: 32, End: 64, Checksum: 7}
	for _, tt := range []struct {
		name      string
		kept      store.Checkpoint // recording 5's, completed at 64
		stopMs    int64            // where the first listing has it stop, at 64
		readAgain bool
	}{
		{"its stop time kept, unchanged", store.Checkpoint{ListedStop: 64, ListedStopMs: 600, LastRecord: last}, 600, false},
		{"its stop time kept, another now", store.Checkpoint{ListedStop: 64, ListedStopMs: 600, LastRecord: last}, 1_500, true},
		{"no stop kept", store.Checkpoint{LastRecord: last}, 1_500, true},
		{"no stop kept, nor its last record (an older ferry's)", store.Checkpoint{}, 1_500, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			cp := tt.kept
			cp.RecordingID, cp.Position, cp.Completed, cp.StartMs = 5, 64, true, 500
			cfg.Stored = store.State{Stored: true, Checkpoints: []store.Checkpoint{cp}}
			s, nobody, failed, run := bareStream(t, env, cfg)
			told := make(probe, 16)
			listing := func(ctx actor.Context, at int64) {
				s.listed(ctx, &messages.RecordingsListed{ListedAtMs: at, Recordings: []*messages.RecordingInfo{
					{RecordingId: 5, StartMs: 500, StopMs: tt.stopMs, StopPosition: 64, RecordedPosition: 64},
				}})
			}
			var readAgain, toldWhileRead bool
			run(func(ctx actor.Context) {
				s.checkpointer = ctx.Spawn(actor.PropsFromProducer(func() actor.Actor { return told }))
				s.running[5] = &recordingPIDs{replay: nobody, tracker: nobody, publisher: nobody} // as if spawned: the test runs no recording's actors
				listing(ctx, 1_000)
				readAgain = s.rechecking[5]
				if !readAgain {
					return
				}
				listing(ctx, 2_000)
				ctx.Send(s.checkpointer, "read")
				s.finished[5] = true // the reading done: the last record unchanged, nothing after it
				s.completeFinished(ctx)
				listing(ctx, 3_000)
				ctx.Send(s.checkpointer, "done")
			})
			if err := failed(); err != nil {
				t.Fatalf("the stream failed: %v", err)
			}
			if readAgain != tt.readAgain {
				t.Fatalf("recording 5 read again: %t; want %t", readAgain, tt.readAgain)
			}
			if !readAgain {
				return
			}
			var stops []string
			for m := next[any](t, told); m != "done"; m = next[any](t, told) {
				switch m := m.(type) {
				case string:
					toldWhileRead = len(stops) > 0
				case *messages.RecordingListedStopped:
					stops = append(stops, fmt.Sprintf("%d at %d, %d", m.RecordingId, m.StopPosition, m.StopMs))
				}
			}
			if want := []string{fmt.Sprintf("5 at 64, %d", tt.stopMs)}; toldWhileRead || !slices.Equal(stops, want) {
				t.Fatalf("the checkpointer was told of stops %q (while the recording was read again: %t); want %q, once read", stops, toldWhileRead, want)
			}
			if !s.completed[5] || s.rechecking[5] {
				t.Fatalf("recording 5: completed %t, read again %t; want completed", s.completed[5], s.rechecking[5])
			}
		})
	}
}
