package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/ferry-bridge/ferry/store"
)

// Run runs the contract suite as subtests of t. newStore must return a fresh, empty store
// and arrange for it to be closed at the end of the test it is given; the suite may close
// it earlier, so a second Close must be harmless.
//
// newStore also returns reopen, which opens the storage that store was made on again, as a
// restart of ferry does, once the suite has closed it (and arranges for that store to be
// closed too). A store that cannot be reopened (one kept in memory only) returns nil: the
// suite then skips the case that checks what outlives a close, saying so.
func Run(t *testing.T, newStore func(t testing.TB) (s store.Store, reopen func() store.Store)) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"SaveLoadRoundTrip", testSaveLoadRoundTrip},
		{"UnknownStreamIsEmptyNotAnError", testUnknownStreamIsEmpty},
		{"EmptySaveStoresDefinition", testEmptySaveStoresDefinition},
		{"BatchIsAtomic", testBatchIsAtomic},
		{"StreamsAreIsolated", testStreamsAreIsolated},
		{"StreamDefinitionChangeRefused", testStreamDefinitionChangeRefused},
		{"StreamsListsEveryStoredDefinition", testStreamsListsEveryStoredDefinition},
		{"InvalidInputRefused", testInvalidInputRefused},
		{"ConcurrentSaves", testConcurrentSaves},
		{"Lesson12_ClosedStoreFailsNotEmpty", testClosedStore},
		{"Lesson14_EveryStoredRecordingIsReturned", testEveryRecordingReturned},
		{"Lesson15_ResetDeletesAndIsVerified", testResetDeletes},
		{"Lesson18_PositionNeverMovesBackwards", testPositionNeverMovesBackwards},
		{"Lesson18_OnlyResetGoesBack", testOnlyResetGoesBack},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := newStore(t)
			tc.fn(t, s)
		})
	}
	t.Run("Lesson15_SavesAndResetsOutliveAReopen", func(t *testing.T) {
		s, reopen := newStore(t)
		if reopen == nil {
			t.Skip("newStore gave no reopen (the store cannot be opened again): what outlives a close, as a restart of ferry reads it, is not checked")
		}
		testReopen(t, s, reopen)
	})
}

// Def returns a valid stream definition named name.
func Def(name string) store.Stream {
	return store.Stream{
		Name:          name,
		Channel:       "aeron:udp?endpoint=localhost:40123",
		StreamID:      1001,
		Topic:         "persistent://public/default/" + name,
		SchemaVersion: 1,
	}
}

// MustSave saves cps and fails t on error.
func MustSave(t testing.TB, s store.Store, def store.Stream, cps ...store.Checkpoint) {
	t.Helper()
	if err := s.Save(def, cps); err != nil {
		t.Fatalf("Save(%q, %v): %v", def.Name, cps, err)
	}
}

// MustLoad loads def and fails t on error.
func MustLoad(t testing.TB, s store.Store, def store.Stream) store.State {
	t.Helper()
	st, err := s.Load(def)
	if err != nil {
		t.Fatalf("Load(%q): %v", def.Name, err)
	}
	return st
}

// WantCheckpoints fails t unless def is stored with exactly want, in RecordingID order.
func WantCheckpoints(t testing.TB, s store.Store, def store.Stream, want ...store.Checkpoint) {
	t.Helper()
	st := MustLoad(t, s, def)
	if !st.Stored || st.Stream != def {
		t.Fatalf("Load(%q) = Stored %v, Stream %+v; want stored %+v", def.Name, st.Stored, st.Stream, def)
	}
	if len(st.Checkpoints) != len(want) || (len(want) > 0 && !reflect.DeepEqual(st.Checkpoints, want)) {
		t.Fatalf("Load(%q) checkpoints = %+v, want %+v", def.Name, st.Checkpoints, want)
	}
}

// WantEmpty fails t unless Load reports nothing stored for def, without error.
func WantEmpty(t testing.TB, s store.Store, def store.Stream) {
	t.Helper()
	st := MustLoad(t, s, def)
	if st.Stored || len(st.Checkpoints) != 0 || st.Stream != (store.Stream{}) {
		t.Fatalf("Load(%q) = %+v, want nothing stored", def.Name, st)
	}
}

// cp is a checkpoint with every field set, its recording's origin included (a negative
// session id, as Aeron's often are) and its last record (a checksum with the high bit set),
// unless pos is 0: no record ends there.
func cp(id, pos int64, completed bool) store.Checkpoint {
	c := store.Checkpoint{RecordingID: id, Position: pos, Completed: completed, UpdatedAtMs: 1_700_000_000_000 + pos,
		StartMs: 1_600_000_000_000 + id, SessionID: int32(-1_000_000 - id)}
	if pos > 0 {
		c.LastRecord = store.RecordMark{Start: pos / 2, End: pos, Checksum: 0x9e3779b9 ^ uint32(pos)}
	}
	return c
}

func testSaveLoadRoundTrip(t *testing.T, s store.Store) {
	def := Def("orders")
	MustSave(t, s, def, cp(7, 4096, false), cp(3, 1<<40, true))
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), cp(7, 4096, false))
	MustSave(t, s, def, cp(7, 8192, false))
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), cp(7, 8192, false))
	seed := cp(9, 64, false)
	seed.Seed, seed.LastRecord = true, store.RecordMark{}
	MustSave(t, s, def, seed)
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), cp(7, 8192, false), seed)
	fromStart := seed
	fromStart.FromStart = true
	MustSave(t, s, def, fromStart)
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), cp(7, 8192, false), fromStart)
	// A seed from the recording's start moves back with it (segments attached again).
	back := fromStart
	back.Position = 0
	MustSave(t, s, def, back)
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), cp(7, 8192, false), back)
	MustSave(t, s, def, fromStart)        // and on again, where its start was
	MustSave(t, s, def, cp(9, 64, false)) // the same position, no longer a seed
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), cp(7, 8192, false), cp(9, 64, false))
	forgotten := cp(7, 8192, true)
	forgotten.Forgotten = true
	MustSave(t, s, def, forgotten) // ferry checkpoint forget: completed where it was
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), forgotten, cp(9, 64, false))
	routed := cp(9, 128, false)
	routed.Partitions = 3
	MustSave(t, s, def, routed)
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), forgotten, routed)
	listed := cp(9, 128, false)
	listed.Partitions, listed.ListedStop, listed.ListedStopMs = 3, 5000, 1_700_000_000_000 // listed stopped at 5000
	MustSave(t, s, def, listed)
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), forgotten, listed)
	lowered := listed
	lowered.ListedStop, lowered.ForgottenTo = 4000, 5000 // ferry checkpoint forget: the stop lowered from 5000
	MustSave(t, s, def, lowered)
	WantCheckpoints(t, s, def, cp(3, 1<<40, true), forgotten, lowered)
	notDone := cp(11, 64, false)
	notDone.Forgotten = true
	if err := s.Save(def, []store.Checkpoint{notDone}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Save of a forgotten checkpoint not completed: err = %v, want ErrInvalid", err)
	}
	negative := cp(11, 64, false)
	negative.Partitions = -1
	if err := s.Save(def, []store.Checkpoint{negative}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Save of a checkpoint routed by -1 partitions: err = %v, want ErrInvalid", err)
	}
	listedBelow := cp(11, 64, false)
	listedBelow.ListedStop = -1
	if err := s.Save(def, []store.Checkpoint{listedBelow}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Save of a checkpoint listed stopped at -1: err = %v, want ErrInvalid", err)
	}
	forgottenBelow := cp(11, 64, false)
	forgottenBelow.ForgottenTo = -1
	if err := s.Save(def, []store.Checkpoint{forgottenBelow}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Save of a checkpoint forgotten up to -1: err = %v, want ErrInvalid", err)
	}
	notSeed := cp(11, 64, false)
	notSeed.FromStart = true
	if err := s.Save(def, []store.Checkpoint{notSeed}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Save of a checkpoint taken on from its start that is not a seed: err = %v, want ErrInvalid", err)
	}
}

func testUnknownStreamIsEmpty(t *testing.T, s store.Store) {
	WantEmpty(t, s, Def("never-saved"))
	MustSave(t, s, Def("other"), cp(1, 10, false))
	WantEmpty(t, s, Def("never-saved"))
}

func testEmptySaveStoresDefinition(t *testing.T, s store.Store) {
	def := Def("orders")
	MustSave(t, s, def)
	WantCheckpoints(t, s, def)
	changed := def
	changed.Topic += "-v2"
	if err := s.Save(changed, nil); !errors.Is(err, store.ErrStreamChanged) {
		t.Fatalf("Save of a changed definition after an empty Save: err = %v, want ErrStreamChanged", err)
	}
}

func testBatchIsAtomic(t *testing.T, s store.Store) {
	def := Def("orders")
	MustSave(t, s, def, cp(1, 100, false), cp(2, 200, false))
	// The first checkpoint is valid, the last one regresses: none of the batch may land.
	err := s.Save(def, []store.Checkpoint{cp(1, 150, false), cp(3, 30, false), cp(2, 50, false)})
	if !errors.Is(err, store.ErrPositionRegressed) {
		t.Fatalf("Save of a batch with a regression: err = %v, want ErrPositionRegressed", err)
	}
	WantCheckpoints(t, s, def, cp(1, 100, false), cp(2, 200, false))
}

func testStreamsAreIsolated(t *testing.T, s store.Store) {
	a, b := Def("a"), Def("b")
	b.StreamID = 2002
	MustSave(t, s, a, cp(1, 100, false))
	MustSave(t, s, b, cp(1, 900, true), cp(2, 5, false))
	WantCheckpoints(t, s, a, cp(1, 100, false))
	WantCheckpoints(t, s, b, cp(1, 900, true), cp(2, 5, false))
	// The same recording id in another stream is another checkpoint: no cross-stream regression.
	MustSave(t, s, a, cp(1, 200, false))
	if err := s.Reset("b"); err != nil {
		t.Fatalf("Reset(b): %v", err)
	}
	WantEmpty(t, s, b)
	WantCheckpoints(t, s, a, cp(1, 200, false))
}

func testStreamDefinitionChangeRefused(t *testing.T, s store.Store) {
	changes := map[string]func(*store.Stream){
		"channel":        func(d *store.Stream) { d.Channel = "aeron:ipc" },
		"stream id":      func(d *store.Stream) { d.StreamID++ },
		"topic":          func(d *store.Stream) { d.Topic += "-v2" },
		"schema version": func(d *store.Stream) { d.SchemaVersion++ },
	}
	for field, change := range changes {
		def := Def("s-" + strings.ReplaceAll(field, " ", "-"))
		MustSave(t, s, def, cp(1, 100, false))
		changed := def
		change(&changed)
		_, loadErr := s.Load(changed)
		saveErr := s.Save(changed, []store.Checkpoint{cp(1, 200, false)})
		for op, err := range map[string]error{"Load": loadErr, "Save": saveErr} {
			var ce *store.StreamChangedError
			if !errors.Is(err, store.ErrStreamChanged) || !errors.As(err, &ce) {
				t.Fatalf("%s after changing %s: err = %v, want a *StreamChangedError", op, field, err)
			}
			if ce.Stored != def || ce.Configured != changed || ce.File == "" {
				t.Errorf("%s after changing %s: error fields = %+v", op, field, ce)
			}
			if got := ce.Changes(); len(got) != 1 || !strings.HasPrefix(got[0], field+" ") {
				t.Errorf("%s after changing %s: Changes() = %q, want only %s", op, field, got, field)
			}
			for _, want := range []string{def.Name, field, ce.File, store.ResetCommand(def.Name)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s after changing %s: message %q does not mention %q", op, field, err, want)
				}
			}
		}
		WantCheckpoints(t, s, def, cp(1, 100, false))
		if err := s.Reset(def.Name); err != nil {
			t.Fatalf("Reset(%q): %v", def.Name, err)
		}
		MustSave(t, s, changed, cp(1, 5, false))
		WantCheckpoints(t, s, changed, cp(1, 5, false))
	}
}

// WantStreams fails t unless s lists exactly want, in name order.
func WantStreams(t testing.TB, s store.Store, want ...store.Stream) {
	t.Helper()
	got, err := s.Streams()
	if err != nil {
		t.Fatalf("Streams: %v", err)
	}
	if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("Streams = %+v, want %+v", got, want)
	}
}

func testStreamsListsEveryStoredDefinition(t *testing.T, s store.Store) {
	// The listing is how a stream renamed in the configuration is found: every stream with
	// something stored, under the definition it was stored with, whatever its name now.
	WantStreams(t, s)
	orders, fills, audit := Def("orders"), Def("fills"), Def("audit")
	fills.StreamID, audit.Channel = 2002, "aeron:ipc"
	MustSave(t, s, orders, cp(1, 100, false))
	MustSave(t, s, fills) // the definition alone (start_position latest on an empty archive)
	MustSave(t, s, audit, cp(3, 30, true), cp(4, 40, false))
	WantStreams(t, s, audit, fills, orders)
	if err := s.Reset("fills"); err != nil {
		t.Fatalf("Reset(fills): %v", err)
	}
	WantStreams(t, s, audit, orders)
	// Reset and stored again under another definition: listed under the new one.
	if err := s.Reset("orders"); err != nil {
		t.Fatalf("Reset(orders): %v", err)
	}
	changed := orders
	changed.Topic += "-v2"
	MustSave(t, s, changed, cp(1, 5, false))
	WantStreams(t, s, audit, changed)
	// A refused save changes nothing listed: neither a definition nor a stream.
	moved := audit
	moved.StreamID++
	if err := s.Save(moved, nil); !errors.Is(err, store.ErrStreamChanged) {
		t.Fatalf("Save of a changed definition: err = %v, want ErrStreamChanged", err)
	}
	if err := s.Save(Def("refused"), []store.Checkpoint{cp(-1, 10, false)}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Save of an invalid checkpoint: err = %v, want ErrInvalid", err)
	}
	WantStreams(t, s, audit, changed)
}

func testInvalidInputRefused(t *testing.T, s store.Store) {
	def := Def("orders")
	noName, noChannel, noTopic, longName := def, def, def, def
	noName.Name, noChannel.Channel, noTopic.Topic = "", "", ""
	longName.Name = strings.Repeat("x", store.MaxStreamNameLen+1)
	for _, bad := range []store.Stream{noName, noChannel, noTopic, longName} {
		if _, err := s.Load(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Load(%+v): err = %v, want ErrInvalid", bad, err)
		}
		if err := s.Save(bad, nil); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Save(%+v): err = %v, want ErrInvalid", bad, err)
		}
	}
	beyond, empty, negative := cp(1, 10, false), cp(1, 10, false), cp(1, 10, false)
	beyond.LastRecord.End = 11
	empty.LastRecord.Start = empty.LastRecord.End
	negative.LastRecord.Start = -1
	for _, bad := range []store.Checkpoint{cp(-1, 10, false), cp(1, -10, false), beyond, empty, negative} {
		if err := s.Save(def, []store.Checkpoint{cp(2, 10, false), bad}); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("Save(%+v): err = %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.Reset(""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf(`Reset(""): err = %v, want ErrInvalid`, err)
	}
	WantEmpty(t, s, def)
}

func testConcurrentSaves(t *testing.T, s store.Store) {
	const writers, saves = 4, 25
	def := Def("orders")
	MustSave(t, s, def)
	var wg sync.WaitGroup
	errs := make(chan error, writers*saves)
	for w := range writers {
		wg.Go(func() {
			for i := range saves {
				errs <- s.Save(def, []store.Checkpoint{cp(int64(w), int64(i), false)})
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent Save: %v", err)
		}
	}
	var want []store.Checkpoint
	for w := range writers {
		want = append(want, cp(int64(w), saves-1, false))
	}
	WantCheckpoints(t, s, def, want...)
}

func testClosedStore(t *testing.T, s store.Store) {
	def := Def("orders")
	MustSave(t, s, def, cp(1, 100, false))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	// A closed store must not look like an empty one: that would re-ingest history.
	st, err := s.Load(def)
	if !errors.Is(err, store.ErrClosed) || st.Stored || st.Checkpoints != nil {
		t.Errorf("Load after Close = %+v, %v; want zero State and ErrClosed", st, err)
	}
	if err := s.Save(def, []store.Checkpoint{cp(1, 200, false)}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Save after Close: err = %v, want ErrClosed", err)
	}
	if err := s.Reset(def.Name); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Reset after Close: err = %v, want ErrClosed", err)
	}
	if streams, err := s.Streams(); !errors.Is(err, store.ErrClosed) || streams != nil {
		t.Errorf("Streams after Close = %+v, %v; want none and ErrClosed", streams, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}

func testEveryRecordingReturned(t *testing.T, s store.Store) {
	// The caller checks each stored recording against the archive (lesson 14), so Load
	// must return all of them: completed ones, ones not starting at 0, sparse ids.
	def := Def("orders")
	var want []store.Checkpoint
	for i := range int64(40) {
		want = append(want, cp(i*i*1000, 1<<20+i*32, i%3 == 0))
	}
	MustSave(t, s, def, want...)
	WantCheckpoints(t, s, def, want...)
}

func testResetDeletes(t *testing.T, s store.Store) {
	def := Def("orders")
	MustSave(t, s, def, cp(1, 100, true), cp(2, 200, false))
	if err := s.Reset(def.Name); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	WantEmpty(t, s, def)
	// Nothing of the old stream survives: a lower position and a new definition are accepted.
	changed := def
	changed.Topic += "-v2"
	MustSave(t, s, changed, cp(1, 10, false))
	WantCheckpoints(t, s, changed, cp(1, 10, false))
	if err := s.Reset("never-saved"); err != nil {
		t.Errorf("Reset of a stream with nothing stored: %v, want nil", err)
	}
}

// testReopen checks what a restart reads: what was saved, still checked against (a
// regression refused), and nothing of a stream reset (lesson 15's read-back, made by a store
// opened after the one that deleted it was closed, not only by that one).
func testReopen(t *testing.T, s store.Store, reopen func() store.Store) {
	closeAndReopen := func() store.Store {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		return reopen()
	}
	orders, fills := Def("orders"), Def("fills")
	fills.StreamID = 2002
	MustSave(t, s, orders, cp(1, 100, true), cp(2, 200, false))
	MustSave(t, s, fills) // the definition alone (start_position latest on an empty archive)
	s = closeAndReopen()
	WantCheckpoints(t, s, orders, cp(1, 100, true), cp(2, 200, false))
	WantCheckpoints(t, s, fills)
	WantStreams(t, s, fills, orders)
	if err := s.Save(orders, []store.Checkpoint{cp(2, 100, false)}); !errors.Is(err, store.ErrPositionRegressed) {
		t.Fatalf("Save of a lower position after a reopen: err = %v, want ErrPositionRegressed", err)
	}
	MustSave(t, s, orders, cp(2, 300, false), cp(3, 30, false))

	if err := s.Reset(orders.Name); err != nil {
		t.Fatalf("Reset(%q): %v", orders.Name, err)
	}
	s = closeAndReopen()
	WantEmpty(t, s, orders)
	WantStreams(t, s, fills)
	WantCheckpoints(t, s, fills)
	// Nothing of the reset stream is left to check against: a lower position under another
	// definition is stored, and outlives a reopen in turn.
	changed := orders
	changed.Topic += "-v2"
	MustSave(t, s, changed, cp(2, 10, false))
	s = closeAndReopen()
	WantCheckpoints(t, s, changed, cp(2, 10, false))
}

func testPositionNeverMovesBackwards(t *testing.T, s store.Store) {
	def := Def("orders")
	MustSave(t, s, def, cp(1, 100, false), cp(2, 500, true))
	refused := []store.Checkpoint{cp(1, 99, false), cp(2, 400, true), cp(2, 500, false)}
	for _, c := range refused {
		err := s.Save(def, []store.Checkpoint{c})
		var pe *store.PositionRegressedError
		if !errors.Is(err, store.ErrPositionRegressed) || !errors.As(err, &pe) {
			t.Fatalf("Save(%+v): err = %v, want a *PositionRegressedError", c, err)
		}
		if pe.Stream != def.Name || pe.Attempted != c || pe.Stored.RecordingID != c.RecordingID {
			t.Errorf("Save(%+v): error fields = %+v", c, pe)
		}
		msg := err.Error()
		if !strings.Contains(msg, fmt.Sprintf("recording %d", c.RecordingID)) || !strings.Contains(msg, store.ResetCommand(def.Name)) {
			t.Errorf("Save(%+v): message %q names neither the recording nor the reset command", c, msg)
		}
	}
	WantCheckpoints(t, s, def, cp(1, 100, false), cp(2, 500, true))
	// The same position again is idempotent; forward, and completing, is allowed; so is going
	// on beyond a completed recording's end (extended after it was completed).
	MustSave(t, s, def, cp(1, 100, false), cp(2, 500, true))
	MustSave(t, s, def, cp(1, 100, true))
	MustSave(t, s, def, cp(2, 600, false))
	WantCheckpoints(t, s, def, cp(1, 100, true), cp(2, 600, false))
	// Within one batch, checkpoints of one recording apply in order under the same rule.
	MustSave(t, s, def, cp(3, 10, false), cp(3, 20, false))
	if err := s.Save(def, []store.Checkpoint{cp(4, 20, false), cp(4, 10, false)}); !errors.Is(err, store.ErrPositionRegressed) {
		t.Errorf("batch regressing within itself: err = %v, want ErrPositionRegressed", err)
	}
	WantCheckpoints(t, s, def, cp(1, 100, true), cp(2, 600, false), cp(3, 20, false))
	// Only a seed from the recording's start moves back, and only to another seed.
	seed := func(pos int64, fromStart bool) store.Checkpoint {
		c := cp(5, pos, false)
		c.Seed, c.FromStart, c.LastRecord = true, fromStart, store.RecordMark{}
		return c
	}
	MustSave(t, s, def, seed(4096, false))
	if err := s.Save(def, []store.Checkpoint{seed(0, false)}); !errors.Is(err, store.ErrPositionRegressed) {
		t.Errorf("a seed not from the start moved back: err = %v, want ErrPositionRegressed", err)
	}
	MustSave(t, s, def, seed(8192, true))
	for _, c := range []store.Checkpoint{cp(5, 4096, false), cp(5, 4096, true)} {
		if err := s.Save(def, []store.Checkpoint{c}); !errors.Is(err, store.ErrPositionRegressed) {
			t.Errorf("a seed from the start followed by %+v: err = %v, want ErrPositionRegressed", c, err)
		}
	}
	MustSave(t, s, def, seed(4096, false))
	WantCheckpoints(t, s, def, cp(1, 100, true), cp(2, 600, false), cp(3, 20, false), seed(4096, false))
	// A completed seed from the start (an empty recording done at its start, or one
	// forgotten, which keeps its seed's flags) never moves back, forgotten or not.
	done := seed(4096, true)
	done.RecordingID, done.Completed = 6, true
	forgotten := done
	forgotten.RecordingID, forgotten.Forgotten = 7, true
	MustSave(t, s, def, done, forgotten)
	for _, c := range []store.Checkpoint{done, forgotten} {
		back := seed(0, false)
		back.RecordingID = c.RecordingID
		if err := s.Save(def, []store.Checkpoint{back}); !errors.Is(err, store.ErrPositionRegressed) {
			t.Errorf("completed seed %+v followed by a seed below it: err = %v, want ErrPositionRegressed", c, err)
		}
	}
	WantCheckpoints(t, s, def, cp(1, 100, true), cp(2, 600, false), cp(3, 20, false), seed(4096, false), done, forgotten)
}

func testOnlyResetGoesBack(t *testing.T, s store.Store) {
	// A configured start position below the stored checkpoint never wins (lesson 18);
	// the explicit reset is the only way back.
	def := Def("orders")
	MustSave(t, s, def, cp(1, 4096, false))
	if err := s.Save(def, []store.Checkpoint{cp(1, 0, false)}); !errors.Is(err, store.ErrPositionRegressed) {
		t.Fatalf("Save back to 0: err = %v, want ErrPositionRegressed", err)
	}
	if err := s.Reset(def.Name); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	MustSave(t, s, def, cp(1, 0, false))
	WantCheckpoints(t, s, def, cp(1, 0, false))
}
