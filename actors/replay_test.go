package actors

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// read is one message as the replay's check sees it: where its first fragment's frame
// began, where it ends and its payload.
type read struct {
	start   int64
	end     int64
	payload string
}

// TestRecordCheckTellsTheRecordPublishedFromAnother: the decisions of a replay resumed from
// a checkpoint (at 4096 unless the case says otherwise) whose last record ended at 4096 with
// the payload "published". The mark's start is where the record before it ended, so padding
// (a term's end), or fragments of a message held only in part
// (TestLesson26_AResumeAtARecordAfterAMessageHeldOnlyInPartFindsItsRecord), may lie between
// it and the record's frame: the record is found by being the first whole message read.
// Each case gives the messages read in turn and says which are published and whether the
// check fails.
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
			reads:     []read{{3968, 4096, "published"}, {4096, 4200, "next"}},
			published: []bool{false, true}},
		{name: "the same record after padding (its frame begins past the mark's start)",
			reads:     []read{{4000, 4096, "published"}, {4096, 4200, "next"}},
			published: []bool{false, true}},
		{name: "other bytes", reads: []read{{3968, 4096, "rewritten"}}, published: []bool{false},
			failure: "the archive now holds the record [3968, 4096)"},
		{name: "another length", reads: []read{{3968, 4128, "published"}}, published: []bool{false},
			failure: "the record [3968, 4128)"},
		{name: "nothing is read after a mismatch",
			reads:     []read{{3968, 4096, "rewritten"}, {4096, 4200, "next"}},
			published: []bool{false, false}, failure: "CRC-32C"},
		{name: "checkpoint after trailing padding: the next record begins at it", checkpoint: 4160,
			reads:     []read{{3968, 4096, "published"}, {4160, 4300, "extension"}},
			published: []bool{false, true}},
		{name: "checkpoint after trailing padding: a record where the padding was", checkpoint: 4160,
			reads:     []read{{3968, 4096, "published"}, {4096, 4300, "appended"}},
			published: []bool{false, false}, failure: "saw only padding after the record ending at 4096"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from := int64(4096)
			if tt.checkpoint != 0 {
				from = tt.checkpoint
			}
			r := &replay{env: &Env{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
				cfg: &StreamConfig{Def: store.Stream{Name: "orders"}}, rec: &messages.RecordingInfo{RecordingId: 5},
				from: from, lastEnd: mark.Start, check: recordCheck{mark: mark, pending: true},
				asm: aeron.NewFragmentAssembler(maxMessageLength, func([]byte, aeron.Header) {})}
			for i, m := range tt.reads {
				r.check.start = m.start
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

// misalignedArchive is a replayCounter whose recording 5 stops at 1 MiB and which refuses
// every replay as the archive refuses one asked to start inside a frame (1.47.3).
type misalignedArchive struct{ replayCounter }

func (*misalignedArchive) Recording(context.Context, int64) (archive.RecordingDescriptor, error) {
	return archive.RecordingDescriptor{RecordingID: 5, StopPosition: 1 << 20}, nil
}
func (*misalignedArchive) StartReplay(context.Context, int64, int64, int64, string, int32) (int64, error) {
	return 0, &archive.Error{Request: "replay recording 5 from 4096", Message: "4096 position not aligned to a data header, recordingId=5"}
}

// A replay the archive refuses to start inside a frame is refused again at every restart:
// the stream stops, saying why. Where ferry takes the recording on (a start_position inside
// a message), naming start_position and the reset the way on needs; at a checkpoint with no
// record of it kept (an older ferry's), as a recording changed below the checkpoint. (With
// the record kept, the check's own failure: TestLesson14_RecordingTruncatedAndExtendedBelowTheCheckpointFailsLoudly.)
func TestAReplayRefusedInsideAFrameStopsTheStream(t *testing.T) {
	for _, c := range []struct {
		name   string
		seeded bool
		want   []string
	}{
		{"where ferry takes it on", true, []string{"recording 5: no message begins at 4096, where ferry was to take the recording on", "start_position must be where a message of recording 5 begins", store.ResetCommand("s")}},
		{"at a checkpoint", false, []string{"recording 5 changed below ferry's checkpoint at 4096: no frame begins at 4096, where ferry's checkpoint is", "give the stream a new name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			env, cfg := testEnv(t)
			env.Archive = &misalignedArchive{}
			r := &replay{env: env, cfg: cfg, upTo: -1}
			res := r.openReplay(context.Background(), 1, 5, 4096, c.seeded, false, nil)
			if cl := supervisor.Classify(res.err); cl != supervisor.Poison {
				t.Fatalf("open failed with %v (%s); want poison", res.err, cl)
			}
			for _, w := range append(c.want, "not aligned to a data header") {
				if !strings.Contains(res.err.Error(), w) {
					t.Errorf("the failure %q does not say %q", res.err, w)
				}
			}
		})
	}
}

// purgedArchive is a replayCounter whose archive no longer knows any recording.
type purgedArchive struct{ replayCounter }

func (*purgedArchive) Recording(_ context.Context, id int64) (archive.RecordingDescriptor, error) {
	return archive.RecordingDescriptor{}, fmt.Errorf("%w: %d", archive.ErrRecordingUnknown, id)
}

// A recording the archive no longer knows when its replay opens (purged after the listing
// that scheduled it, or before a replay's restart) fails the stream for good, saying so and
// how to go on, as the stream's listing would (lesson 14); one read again only to check it
// says nothing of it is lost, and leaves it to the listing.
func TestLesson14_ARecordingPurgedBeforeItsReplayOpensSaysHowToGoOn(t *testing.T) {
	env, cfg := testEnv(t)
	env.Archive = &purgedArchive{}
	r := &replay{env: env, cfg: cfg, upTo: -1}
	res := r.openReplay(context.Background(), 1, 5, 4096, false, false, nil)
	if c := supervisor.Classify(res.err); c != supervisor.Poison || !errors.Is(res.err, archive.ErrRecordingUnknown) {
		t.Fatalf("open failed with %v (%s); want poison, the archive's unknown recording", res.err, c)
	}
	for _, want := range []string{"recording 5 is no longer in the archive", store.ForgetCommand("s", 5), store.ResetCommand("s")} {
		if !strings.Contains(res.err.Error(), want) {
			t.Errorf("the failure %q does not say %q", res.err, want)
		}
	}
	// Read again only to check it, published to its end already: nothing up to there is
	// lost, and neither forget nor a reset is the way on; an extension the stream may have
	// seen meanwhile is said to be gone with it.
	r.upTo = 8192
	res = r.openReplay(context.Background(), 2, 5, 4096, false, false, nil)
	msg := res.err.Error()
	if !strings.Contains(msg, "nothing of it up to 8192 is unpublished") || !strings.Contains(msg, "extended it past 8192") ||
		strings.Contains(msg, store.ForgetCommand("s", 5)) || strings.Contains(msg, store.ResetCommand("s")) {
		t.Errorf("the failure of a recording read again to check it: %q; want it said that nothing up to 8192 is unpublished, what an extension past it would have lost, and neither forget nor reset", msg)
	}
	// Transient: the stream's listing, which sees it gone too, takes it for done. Poison, it
	// failed the stream for good when the replay saw it first, and not when the listing did.
	if c := supervisor.Classify(res.err); c != supervisor.Transient {
		t.Errorf("the failure of a recording read again to check it is %s; want transient, for the listing to take it as done", c)
	}
}

// replayCounter is an archive whose recording 7 is live and which accepts every replay,
// counting the replays started and stopped.
type replayCounter struct{ started, stopped atomic.Int32 }

func (a *replayCounter) RecordingsOfChannel(context.Context, channel.URI, int32, int32) ([]archive.RecordingDescriptor, error) {
	return nil, nil
}

// ChannelRecordings is RecordingsOfChannel's listing, with no recordings the channel does
// not select.
func (a *replayCounter) ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error) {
	selected, err = a.RecordingsOfChannel(ctx, uri, streamID, pageSize)
	return selected, nil, err
}
func (a *replayCounter) Recording(context.Context, int64) (archive.RecordingDescriptor, error) {
	return archive.RecordingDescriptor{RecordingID: 7, StopPosition: archive.NullPosition}, nil
}
func (a *replayCounter) MaxRecordedPosition(context.Context, int64) (int64, error) { return 0, nil }
func (a *replayCounter) StartReplay(context.Context, int64, int64, int64, string, int32) (int64, error) {
	a.started.Add(1)
	return 42, nil
}
func (a *replayCounter) StopReplay(context.Context, int64) error { a.stopped.Add(1); return nil }

// heldSubscriber makes its subscription once the test lets it (entered says it was asked).
type heldSubscriber struct{ entered, release chan struct{} }

func (s heldSubscriber) AddSubscription(context.Context, string, int32, aeron.ImageHandlers) (*aeron.Subscription, error) {
	close(s.entered)
	<-s.release
	return nil, nil // made (stillSubscriber's stand-in)
}

// replayOnIPC has cfg's replays made on an IPC channel, stream 99.
func replayOnIPC(t *testing.T, cfg *StreamConfig) {
	t.Helper()
	ch, err := channel.Parse("aeron:ipc")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ReplayChannel, cfg.ReplayStreamID = ch, 99
}

// channelSubscriber reports the channel of each subscription asked of it, and makes none.
type channelSubscriber struct{ asked probe }

func (s channelSubscriber) AddSubscription(_ context.Context, ch string, _ int32, _ aeron.ImageHandlers) (*aeron.Subscription, error) {
	s.asked <- ch
	return nil, errors.New("channelSubscriber: no subscription")
}

// A replay over UDP is subscribed to reliably, whatever the driver's default
// (aeron.reliable.stream=false would have a lost datagram filled with padding, and its
// record skipped without a word); over IPC, where nothing is lost, the channel is the
// configuration's. Either way, with the replay's session id.
func TestAReplayOverUDPIsSubscribedToReliably(t *testing.T) {
	for _, c := range []struct{ replay, want string }{
		{"aeron:udp?endpoint=localhost:40200", "aeron:udp?endpoint=localhost:40200|session-id=42|reliable=true"},
		{"aeron:udp?endpoint=localhost:40200|reliable=true", "aeron:udp?endpoint=localhost:40200|reliable=true|session-id=42"},
		{"aeron:ipc", "aeron:ipc?session-id=42"},
	} {
		t.Run(c.replay, func(t *testing.T) {
			env, cfg := testEnv(t)
			subs := channelSubscriber{make(probe, 1)}
			env.Archive, env.Aeron = &replayCounter{}, subs
			ch, err := channel.Parse(c.replay)
			if err != nil {
				t.Fatal(err)
			}
			cfg.ReplayChannel, cfg.ReplayStreamID = ch, 99
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			pid := system.Root.Spawn(actor.PropsFromProducer(newReplay(env, cfg, &messages.RecordingInfo{RecordingId: 7}, pids, -1, -1)))
			req := next[*messages.WatermarkRequest](t, nb.checkpointer)
			system.Root.Send(pid, &messages.Watermark{RecordingId: 7, Generation: req.Generation, Stored: true, Position: 0})
			if got := next[string](t, subs.asked); got != c.want {
				t.Fatalf("subscribed on %s; want %s", got, c.want)
			}
		})
	}
}

// A replay actor stopped while its open is under way — its stream failed, or its recording
// was stopped, while the process goes on — does not leave the archive replaying to a
// subscription nobody reads (a live recording's replay would follow it for ever, holding
// one of the archive's replay sessions): the replay the open started is stopped, once.
func TestAReplayStoppedWhileItOpensLeavesNoArchiveReplayBehind(t *testing.T) {
	env, cfg := testEnv(t)
	arc, sub := &replayCounter{}, heldSubscriber{entered: make(chan struct{}), release: make(chan struct{})}
	env.Archive, env.Aeron = arc, sub
	replayOnIPC(t, cfg)
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	pid := system.Root.Spawn(actor.PropsFromProducer(newReplay(env, cfg, &messages.RecordingInfo{RecordingId: 7}, pids, -1, -1)))
	req := next[*messages.WatermarkRequest](t, nb.checkpointer)
	system.Root.Send(pid, &messages.Watermark{RecordingId: 7, Generation: req.Generation, Stored: true, Position: 0})
	select {
	case <-sub.entered:
	case <-time.After(waitFor):
		t.Fatal("the replay did not subscribe")
	}
	if err := system.Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
	close(sub.release)
	eventually.NoError(t, waitFor, func() error {
		if s, st := arc.started.Load(), arc.stopped.Load(); s != 1 || st != 1 {
			return fmt.Errorf("replays started %d, stopped %d; want the one started stopped", s, st)
		}
		return nil
	})
	eventually.Always(t, 200*time.Millisecond, func() error {
		if st := arc.stopped.Load(); st != 1 {
			return fmt.Errorf("the replay was stopped %d times", st)
		}
		return nil
	})
}

// What a replay's assembler drops unfinished is said (lesson 26), each drop once: messages
// begun and not ended, and fragments whose message's beginning is not there — except, before
// the replay's first message, those of the message begun before where the replay started
// (lesson 8), which are passed over. The first drop is said at once, later ones together at
// most once a second, and what is left at the recording's end at once.
func TestAReplaySaysEachMessageItHoldsOnlyInPartOnce(t *testing.T) {
	var d dropped
	step := func(st aeron.AssemblerStats, first bool, nowMs int64, end bool, wantUnended, wantHeadless uint64, wantSaid bool) {
		t.Helper()
		d.take(st, first)
		if u, h, said := d.due(nowMs, end); said != wantSaid || u != wantUnended || h != wantHeadless {
			t.Fatalf("after %+v at %d ms (first message read: %t, end: %t): said %t: %d unended, %d headless; want %t: %d, %d",
				st, nowMs, first, end, said, u, h, wantSaid, wantUnended, wantHeadless)
		}
	}
	step(aeron.AssemblerStats{Orphaned: 3}, false, 1000, false, 0, 0, false) // the tail of a message begun before the start
	d.passOver(aeron.AssemblerStats{Orphaned: 3, Delivered: 1})
	step(aeron.AssemblerStats{Orphaned: 3, Delivered: 4}, true, 1100, false, 0, 0, false)
	step(aeron.AssemblerStats{Discarded: 1, Orphaned: 3, Delivered: 5}, true, 1200, false, 1, 0, true)  // the first: at once
	step(aeron.AssemblerStats{Discarded: 1, Orphaned: 5, Delivered: 6}, true, 1300, false, 0, 0, false) // held back
	step(aeron.AssemblerStats{Discarded: 3, Orphaned: 5, Delivered: 9}, true, 1900, false, 0, 0, false)
	step(aeron.AssemblerStats{Discarded: 3, Orphaned: 5, Delivered: 9}, true, 2200, false, 2, 2, true) // a second on: together
	step(aeron.AssemblerStats{Discarded: 3, Orphaned: 5, Delivered: 9}, true, 5000, false, 0, 0, false)
	step(aeron.AssemblerStats{Discarded: 4, Orphaned: 5, Delivered: 9}, true, 5100, true, 1, 0, true) // the end: at once
}

// An end of stream is the recording's end only where the archive says the recording stops
// now. Otherwise the archive describes an extension (the replay of a stopped recording ends
// at the stop it had when it began; a live one's where the recording stopped, which an
// extension in another session has moved on), a truncation, or a replay ended early without
// a reason, which for a replay begun live may also be an extension in the same session.
func TestAnEndOfStreamIsToldFromTheRecordingAsItIsNow(t *testing.T) {
	const live, opened, other = archive.NullPosition, int32(7), int32(8)
	cases := []struct {
		name                       string
		position, stop, openedStop int64
		session                    int32
		want                       replayEnd
	}{
		{"stopped where it stopped when the replay began", 1000, 1000, 1000, opened, endOfRecording},
		{"live when the replay began, stopped there", 1000, 1000, live, opened, endOfRecording},
		{"stopped, then extended and recording", 1000, live, 1000, other, endExtended},
		{"stopped, then extended and stopped again", 1000, 2000, 1000, other, endExtended},
		{"stopped, then extended in the same session", 1000, 2000, 1000, opened, endExtended},
		{"live, stopped there, then extended in another session", 1000, live, live, other, endExtended},
		{"live, stopped there, extended in another session and stopped", 1000, 2000, live, other, endExtended},
		{"live, ended early or extended in the same session", 1000, live, live, opened, endCut},
		{"live, ended early before a stop", 1000, 2000, live, opened, endCut},
		{"stopped, ended early", 500, 1000, 1000, opened, endCut},
		{"stopped, ended early, recording again in another session", 500, live, 1000, other, endCut},
		{"truncated below where the replay ended", 1000, 600, 1000, opened, endTruncated},
		{"live, stopped and truncated below where the replay ended", 1000, 600, live, other, endTruncated},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := endChecked{position: tc.position, stop: tc.stop, session: tc.session, openedStop: tc.openedStop, openedSession: opened}
			if got := c.kind(); got != tc.want {
				t.Errorf("kind = %d; want %d", got, tc.want)
			}
		})
	}
}

// imagelessSubscription is a subscription as the client makes one that never gets an
// image, already closed (so that closing it again asks nothing of a client). The aeron
// package has no constructor for it outside itself: its empty image list and closed flag
// are set through reflection.
func imagelessSubscription(t *testing.T) *aeron.Subscription {
	t.Helper()
	sub := &aeron.Subscription{}
	v := reflect.ValueOf(sub).Elem()
	images := v.FieldByName("images")
	closed := v.FieldByName("closed")
	if !images.IsValid() || !closed.IsValid() {
		t.Fatal("aeron.Subscription has no images or closed field: imagelessSubscription needs updating")
	}
	(*atomic.Pointer[[]*aeron.Image])(unsafe.Pointer(images.UnsafeAddr())).Store(&[]*aeron.Image{})
	(*atomic.Bool)(unsafe.Pointer(closed.UnsafeAddr())).Store(true)
	return sub
}

// imagelessSubscriber makes subscriptions that never get an image.
type imagelessSubscriber struct{ t *testing.T }

func (s imagelessSubscriber) AddSubscription(context.Context, string, int32, aeron.ImageHandlers) (*aeron.Subscription, error) {
	return imagelessSubscription(s.t), nil
}

// A replay whose image never joins (the archive started it, and nothing arrives) does not
// poll for ever: after imageJoinTimeout it fails with a read failure the stream's status
// shows, naming replay.channel (one that does not reach ferry's media driver fails every
// replay so), and its next incarnation starts the replay again (lesson 16).
func TestAReplayWhoseImageNeverJoinsIsStartedAgain(t *testing.T) {
	env, cfg := testEnv(t)
	arc := &replayCounter{}
	env.Archive, env.Aeron = arc, imagelessSubscriber{t}
	replayOnIPC(t, cfg)
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	began := time.Now()
	replay, _ := spawnSupervised(t, system, env, cfg, newReplay(env, cfg, &messages.RecordingInfo{RecordingId: 7}, pids, -1, -1))
	// The checkpointer's part, for every incarnation: the watermark, then taken on.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case m := <-nb.checkpointer:
				switch m := m.(type) {
				case *messages.WatermarkRequest:
					system.Root.Send(replay, &messages.Watermark{RecordingId: 7, Generation: m.Generation, Stored: true, Position: 0})
				case *messages.ReplayStarted:
					system.Root.Send(replay, &messages.TakenOn{RecordingId: 7, Generation: m.Generation})
				}
			}
		}
	}()
	var read *messages.Failure
	eventually.NoError(t, imageJoinTimeout+waitFor, func() error {
		if fs := failuresOf(nb.stream, "read"); len(fs) > 0 {
			read = fs[0]
			return nil
		}
		return fmt.Errorf("no read failure %s after the replay was started", time.Since(began).Round(time.Second))
	})
	if !strings.Contains(read.Message, "did not join") || !strings.Contains(read.Message, "(session 42), but nothing of it reached ferry's media driver on replay.channel aeron:ipc stream 99") {
		t.Errorf("the read failure says %q; want that the replay image did not join, naming the replay and replay.channel", read.Message)
	}
	eventually.NoError(t, waitFor, func() error {
		if n := arc.started.Load(); n < 2 {
			return fmt.Errorf("replays started %d; want the replay started again", n)
		}
		return nil
	})
}
