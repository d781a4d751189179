package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
)

// schemaVersion is the version of what ferry publishes to a topic, stored with each
// stream's definition so that a change is noticed.
const schemaVersion = 1

// checkpointShow prints what ferry has committed for one stream: a configured one, or one
// only the store holds (renamed in the configuration, or removed from it).
func checkpointShow(args []string, stdout io.Writer) error {
	cfgPath, cfg, stream, err := checkpointTarget("checkpoint show", args, nil)
	var nc *notConfigured
	if err != nil && !errors.As(err, &nc) {
		return err
	}
	path := storePath(cfg)
	// Looking must not create: a missing file is reported, not made.
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if nc != nil {
			return nc.noStore(cfg, path)
		}
		fmt.Fprintf(stdout, "stream %s: no checkpoint store at %s; ferry starts at its configured start position%s\n", stream.Name, path, relativeStoreNote(cfg))
		return nil
	}
	st, err := openStopped(path, "stop it to read its checkpoints here, or ask the running ferry's /status", true)
	if err != nil {
		return nc.held(err)
	}
	defer st.Close()
	if nc != nil {
		return showStoredOnly(stdout, st, path, nc)
	}
	def, state, err := load(st, stream)
	var changed *store.StreamChangedError
	if errors.As(err, &changed) {
		// What a reset would delete is still shown, under the definition it was stored with;
		// the error follows.
		switch state, lerr := st.Load(changed.Stored); {
		case lerr != nil:
		case len(state.Checkpoints) == 0:
			fmt.Fprintf(stdout, "stream %s: only its definition is stored in %s (start_position latest, decided when the archive held none of its recordings), under another definition than the configured one (%s): a reset deletes only that\n",
				stream.Name, path, strings.Join(changed.Changes(), ", "))
		default:
			fmt.Fprintf(stdout, "stored under another definition than the configured one (%s):\n", strings.Join(changed.Changes(), ", "))
			if perr := printCheckpoints(stdout, changed.Stored, state, path); perr != nil {
				return perr
			}
		}
		return err
	}
	if err != nil {
		return err
	}
	if !state.Stored {
		// Nothing under the name, but what `ferry run` makes of that: it refuses the start of a
		// stream stored under another name (renamed), as it does when that cannot be told.
		stored, listErr := st.Streams()
		if refusal := freshStartRefusal(cfgPath, cfg, stream, stored, listErr); refusal != nil {
			fmt.Fprintf(stdout, "stream %s: no checkpoint in %s under that name: %v\n", stream.Name, path, refusal)
			return nil
		}
		fmt.Fprintf(stdout, "stream %s: no checkpoint in %s; ferry starts at its configured start position\n", stream.Name, path)
		return nil
	}
	if len(state.Checkpoints) == 0 && stream.Start.Kind == config.StartLatest {
		// Only start_position latest, decided on an empty archive, stores this (actors,
		// StartDecided); under another start position the configured one applies.
		fmt.Fprintf(stdout, "stream %s: no recording checkpointed in %s; start_position latest was decided when the archive held none of the stream's recordings, and every recording since is published in full\n", stream.Name, path)
		return nil
	}
	if len(state.Checkpoints) == 0 {
		fmt.Fprintf(stdout, "stream %s: no checkpoint in %s; ferry starts at its configured start position\n", stream.Name, path)
		return nil
	}
	return printCheckpoints(stdout, def, state, path)
}

// printCheckpoints prints the checkpoints of state, stored in path under def.
func printCheckpoints(stdout io.Writer, def store.Stream, state store.State, path string) error {
	fmt.Fprintf(stdout, "stream %s (%s stream %d -> %s), %s\n", def.Name, def.Channel, def.StreamID, def.Topic, path)
	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "RECORDING\tPOSITION\tSTATE\tRECORDING STARTED\tSESSION\tLAST RECORD (CRC-32C)\tPARTITION\tLISTED STOP\tUPDATED")
	for _, c := range state.Checkpoints {
		started, session, last, partition, listedStop := "-", "-", "-", "-", "-"
		if c.StartMs != 0 {
			started, session = time.UnixMilli(c.StartMs).UTC().Format(time.RFC3339Nano), fmt.Sprint(c.SessionID)
		}
		if m := c.LastRecord; m.Known() {
			last = fmt.Sprintf("[%d, %d) %08x", m.Start, m.End, m.Checksum)
		}
		if c.Partitions > 0 {
			partition = fmt.Sprintf("%d (of %d)", c.RecordingID%int64(c.Partitions), c.Partitions)
		}
		if c.ListedStop > 0 {
			listedStop = fmt.Sprint(c.ListedStop)
		}
		if c.ForgottenTo > 0 {
			// ferry checkpoint forget: the topic may hold the recording up to there.
			listedStop += fmt.Sprintf(" (forgotten to %d)", c.ForgottenTo)
		}
		fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.RecordingID, c.Position, checkpointState(c), started, session, last, partition, listedStop, time.UnixMilli(c.UpdatedAtMs).UTC().Format(time.RFC3339Nano))
	}
	return w.Flush()
}

// checkpointState says what a checkpoint means for its recording.
func checkpointState(c store.Checkpoint) string {
	switch {
	case c.Forgotten:
		return "forgotten (ferry checkpoint forget): never published after POSITION"
	case c.Completed:
		return "completed"
	case c.Seed:
		return "taken on, nothing acknowledged yet"
	}
	return "acknowledged up to POSITION"
}

// checkpointReset deletes a stream's checkpoint; the store verifies the deletion by
// reading back. It asks for --yes: the next run re-publishes from the start position. Data
// a newer ferry wrote (an encoding version this build does not read) is left alone unless
// --force is given too. The stream is a configured one, or one only the store holds
// (renamed in the configuration, or removed from it): that one is looked up in the store
// before --yes is asked for, so that a name stored nowhere is told as such.
func checkpointReset(args []string, stdout io.Writer) error {
	var yes, force bool
	cfgPath, cfg, stream, err := checkpointTarget("checkpoint reset", args, func(fs *flag.FlagSet) {
		fs.BoolVar(&yes, "yes", false, "really delete")
		fs.BoolVar(&force, "force", false, "delete even checkpoint data that a newer ferry wrote")
	})
	var nc *notConfigured
	if err != nil && !errors.As(err, &nc) {
		return err
	}
	if !yes && nc == nil {
		// A name the run refuses (renamed) has nothing to delete, and no next run from the
		// start position to tell of: said as the reset with --yes says it.
		if refusal := renamedRefusal(cfgPath, cfg, stream); refusal != nil {
			return fmt.Errorf("stream %s: nothing stored in %s under that name, so a reset would delete nothing: %w", stream.Name, storePath(cfg), refusal)
		}
		return usageError{fmt.Sprintf("checkpoint reset deletes what ferry has committed for stream %s; its next run %s; add --yes to do it", stream.Name, afterReset(stream.Start))}
	}
	path := storePath(cfg)
	// Resetting must not create either: a store missing here is most likely a store.path
	// relative to another directory, and "deleted" would leave the real checkpoint in place.
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if nc != nil {
			return nc.noStore(cfg, path)
		}
		return fmt.Errorf("no checkpoint store at %s, so nothing to reset; %s", path, storePathHint(cfg))
	}
	st, err := openStopped(path, "reset a checkpoint only while ferry is stopped: stop it first", false)
	if err != nil {
		return nc.held(err)
	}
	defer st.Close()
	if nc != nil {
		return resetStoredOnly(stdout, st, path, nc, yes, force)
	}
	// Anything stored under the name, even what Load refuses (another definition, a corrupt
	// value), is what a reset deletes.
	def, state, lerr := load(st, stream)
	var uv *store.UnknownVersionError
	if errors.As(lerr, &uv) && !force {
		return newerFerryRefusal(stream.Name, path, uv)
	}
	var changed *store.StreamChangedError
	if errors.As(lerr, &changed) {
		// Stored under another definition: read under that one, as show does, and listed.
		if s, err := st.Load(changed.Stored); err == nil {
			fmt.Fprintf(stdout, "stream %s: stored under another definition than the configured one (%s): its positions are in the recordings of that definition\n",
				stream.Name, strings.Join(changed.Changes(), ", "))
			def, state, lerr = changed.Stored, s, nil
		}
	}
	stored := state.Stored || lerr != nil
	if !stored {
		// Nothing to delete; but a run, which refuses the start of a stream stored under
		// another name (renamed), would still refuse it: that is said, and is an error.
		list, listErr := st.Streams()
		if refusal := freshStartRefusal(cfgPath, cfg, stream, list, listErr); refusal != nil {
			return fmt.Errorf("stream %s: nothing stored in %s under that name, so nothing deleted: %w", stream.Name, path, refusal)
		}
	}
	if stored {
		// Said before the deletion, which a pasted advice with --yes does at once: the
		// positions are the only record of where the stream stood.
		if err := listDeleted(stdout, stream.Name, def, state, path, lerr); err != nil {
			return err
		}
	}
	if err := st.Reset(stream.Name); err != nil {
		return err
	}
	if !stored {
		fmt.Fprintf(stdout, "stream %s: nothing stored in %s, nothing deleted; ferry's next run %s\n", stream.Name, path, afterReset(stream.Start))
		return nil
	}
	fmt.Fprintf(stdout, "stream %s: checkpoint deleted from %s (verified by reading back); ferry's next run %s\n", stream.Name, path, afterReset(stream.Start))
	return nil
}

// renamedRefusal is the refusal `ferry run` gives configured stream s when the store holds
// nothing under its name but another stream's checkpoints for its channel, stream id and
// topic (renamed), or cannot tell; nil when it gives none, or when the store cannot be
// looked at here (missing, or held by a running ferry: the commands that need it say so).
func renamedRefusal(cfgPath string, cfg *config.Config, s config.Stream) error {
	path := storePath(cfg)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	st, err := openStopped(path, "", true)
	if err != nil {
		return nil
	}
	defer st.Close()
	if _, state, err := load(st, s); err != nil || state.Stored {
		return nil
	}
	list, listErr := st.Streams()
	return freshStartRefusal(cfgPath, cfg, s, list, listErr)
}

// listDeleted prints, before a reset deletes them, the checkpoints of stream name that path
// holds (or that they cannot be read, lerr), so that the operator can set a start_position
// from where the stream stood.
func listDeleted(stdout io.Writer, name string, def store.Stream, state store.State, path string, lerr error) error {
	switch {
	case lerr != nil:
		fmt.Fprintf(stdout, "stream %s: deleting what %s stores of it; its checkpoints cannot be read (%v), so they are not listed\n", name, path, lerr)
		return nil
	case len(state.Checkpoints) == 0:
		fmt.Fprintf(stdout, "stream %s: deleting its definition from %s; no checkpoint of a recording is stored\n", name, path)
		return nil
	}
	fmt.Fprintf(stdout, "stream %s: deleting these checkpoints; to publish on from where one stood, set start_recording_id and start_position to its RECORDING and POSITION (the recordings below it are then left out):\n", name)
	return printCheckpoints(stdout, def, state, path)
}

// afterReset says what a run does with no checkpoint stored: where the configured start
// position begins, and what it leaves out — with latest, nothing the archive holds now;
// with a later recording, the recordings below it.
func afterReset(start config.StartPosition) string {
	switch start.Kind {
	case config.StartLatest:
		return "starts at start_position latest: nothing the archive holds now is published — each live recording is taken up at its live end, every stopped one is left out — so what ferry had not published yet of them is never published (set start_position to earliest, or to a position in a recording, to publish it)"
	case config.StartAt:
		return fmt.Sprintf("starts at position %d of recording %d (start_position, start_recording_id): the recordings below it are left out, and what is published again from there is %s", start.Position, start.RecordingID, store.StoredTwice)
	}
	return "publishes every recording in the archive again from its start: what was published before is " + store.StoredTwice
}

// checkpointForget completes the checkpoint of a recording that vanished from the archive
// (retention purged it) before ferry published all of it, where it stands: the stream, which
// stops on such a recording (lesson 14), then goes on with the recordings after it, and the
// recording's records after the checkpoint, which the archive no longer holds, are never
// published. A recording ferry had published nothing of (its checkpoint a seed) whose head
// retention cut is taken up at its new start instead. It asks for --yes, needs ferry
// stopped, and refuses a recording the archive still has whole from the checkpoint on: that
// one ferry publishes on from its checkpoint.
//
// A recording the archive truncated (TruncateRecording) above the checkpoint, below the stop
// the checkpoint keeps from a listing (store.Checkpoint.ListedStop), on which the stream
// stops, has that stop lowered to the new one: ferry then publishes the recording to its new
// end, and its records after it, which the archive no longer holds, are never published.
// With --topic-holds, one truncated while ferry was down below records the topic holds (the
// stream stops on it once it finds that: TopicRead) is published to its new end though the
// topic holds it further (forgetHeld).
func checkpointForget(args []string, stdout io.Writer) error {
	var yes bool
	var id, topicHolds int64 = -1, -1
	var fset *flag.FlagSet
	_, cfg, stream, err := checkpointTarget("checkpoint forget", args, func(fs *flag.FlagSet) {
		fset = fs
		fs.Int64Var(&id, "recording", -1, "the recording id, as the stream's failure names it")
		fs.BoolVar(&yes, "yes", false, "really forget")
		fs.Int64Var(&topicHolds, "topic-holds", -1, "the position the stream's failure says the topic holds the recording to, past where the archive now stops it")
	})
	if nc := (*notConfigured)(nil); errors.As(err, &nc) {
		return usageError{nc.Error() + " (checkpoint forget takes a configured stream only, as it asks the archive for the stream's recordings; " +
			"`ferry checkpoint show` and `ferry checkpoint reset` also take a stream only the checkpoint store holds)"}
	}
	if err != nil {
		return err
	}
	set := map[string]bool{} // the flags given
	fset.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case !set["recording"]:
		return usageError{"--recording is required: the id of the recording the archive no longer has, as the stream's failure names it"}
	case id < 0:
		return usageError{fmt.Sprintf("--recording %d: a recording id is 0 or more, as the stream's failure names it", id)}
	case set["topic-holds"] && topicHolds < 0:
		return usageError{fmt.Sprintf("--topic-holds %d: a position is 0 or more: the one the stream's failure names, where the topic holds the recording to", topicHolds)}
	}
	if !yes {
		return usageError{fmt.Sprintf("checkpoint forget accepts that the archive lost records of recording %d of stream %s that ferry had not published: "+
			"a recording the archive no longer has is marked done where its checkpoint stands, so that ferry goes on with the recordings after it; "+
			"one the archive truncated is published to its new end. Its records the archive no longer holds are then never published. Add --yes to do it", id, stream.Name)}
	}
	path := storePath(cfg)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no checkpoint store at %s, so no checkpoint of recording %d to forget; %s", path, id, storePathHint(cfg))
	}
	st, err := openStopped(path, "forget a recording only while ferry is stopped: stop it first", false)
	if err != nil {
		return err
	}
	defer st.Close()
	def, state, err := load(st, stream)
	if err != nil {
		return err
	}
	var cp store.Checkpoint
	found := false
	for _, c := range state.Checkpoints {
		if c.RecordingID == id {
			cp, found = c, true
		}
	}
	switch {
	case !found:
		return fmt.Errorf("stream %s has no checkpoint of recording %d in %s, so there is nothing to forget (`ferry checkpoint show` lists its checkpoints)", stream.Name, id, path)
	case cp.Forgotten:
		fmt.Fprintf(stdout, "stream %s: recording %d is forgotten already, at position %d; nothing changed\n", stream.Name, id, cp.Position)
		return nil
	case cp.Completed && cp.ListedStop <= cp.Position:
		completedUnchanged(stdout, stream.Name, cp)
		return nil
	}
	// Only a recording the archive no longer has: one it still has, ferry publishes on from
	// the checkpoint, and forgetting it would drop records the archive could still replay.
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.Archive.MessageTimeout)
	defer cancel()
	ac, arc, err := dialArchive(ctx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("recording %d is forgotten only once the archive confirms it no longer has it: %w", id, err)
	}
	defer ac.Close()
	defer arc.Close()
	d, err := arc.Recording(ctx, id)
	// Where it ends now: its stop, or for one recorded again (extended), how far it is
	// recorded (NullPosition: not known).
	end := d.StopPosition
	if err == nil && end == archive.NullPosition && cp.ListedStop > 0 {
		if end, err = arc.RecordingPosition(ctx, id); err != nil {
			return fmt.Errorf("ask the archive how far recording %d is recorded: %w", id, err)
		}
	}
	// The recording ferry checkpointed, as the stream tells it (actors, checkOrigin): an
	// extension may record it in another session, keeping its start.
	same := err == nil && stream.Channel.Selects(d.OriginalChannel) && d.StreamID == stream.StreamID && (cp.StartMs == 0 || cp.StartMs == d.StartTimestampMs)
	if topicHolds >= 0 {
		return forgetHeld(stdout, st, def, stream.Name, cp, d, err, same, topicHolds)
	}
	truncated := same && end != archive.NullPosition && end >= cp.Position && end < cp.ListedStop
	// Recorded again after the truncation: live, or stopped at another time than the stop
	// kept (TruncateRecording keeps the stop time).
	if again := d.StopPosition == archive.NullPosition || cp.ListedStopMs != 0 && d.StopTimestampMs != cp.ListedStopMs; truncated && again {
		// Truncated, then extended: the extension's records take the old ones' positions,
		// which are the sequence ids of the recording's producer.
		return fmt.Errorf("the archive recorded recording %d again after it truncated it below %d, where a listing had it stop: it is recorded to %d (%s), and the new records have the positions of the old ones, which are the sequence ids of the recording's producer; "+
			"the topic's deduplication would drop those it holds old records for as already stored, so forget does not apply. Record a continuation as a new recording instead; %s", id, cp.ListedStop, end, recordedAgainHow(d, cp), renameToGoOn)
	}
	if cp.Completed {
		// Extended since ferry completed it (the stream publishes on from its end), then
		// truncated within the extension: the stream stops on it until the stop is lowered.
		if err != nil && !errors.Is(err, archive.ErrRecordingUnknown) {
			return fmt.Errorf("ask the archive where recording %d ends now: %w", id, err)
		}
		if !truncated {
			completedUnchanged(stdout, stream.Name, cp)
			return nil
		}
		return lowerListedStop(stdout, st, def, stream.Name, cp, end)
	}
	switch {
	case err == nil && !same:
		return notTheOneCheckpointed(id, d)
	case err == nil && d.StartPosition > cp.Position && cp.Seed:
		// Retention cut its head while it waited: nothing of it was acknowledged, and the
		// records before its new start are gone. Taken up there, the rest is published. The
		// seed keeps its time: the publisher takes it for the time before which nothing of
		// the recording was sent (actors/publisher.go, storedEnds), and a run before may have
		// sent some of it since, unacknowledged.
		from := cp.Position
		cp.Position, cp.LastRecord = d.StartPosition, store.RecordMark{}
		if err := st.Save(def, []store.Checkpoint{cp}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "stream %s: recording %d's records from position %d to %d forgotten (the archive no longer has them; ferry had acknowledged none of the recording): ferry takes it up at %d\n",
			stream.Name, id, from, d.StartPosition, d.StartPosition)
		return nil
	case err == nil && d.StartPosition > cp.Position:
		return fmt.Errorf("the archive no longer has recording %d's records from %d, where ferry's checkpoint stands, to %d, its new start (retention cut its head); ferry had published part of it, and forget does not take it up past records it published: %s",
			id, cp.Position, d.StartPosition, store.ResetCommand(stream.Name)+" publishes the stream again from its configured start_position")
	case err == nil && d.StopPosition != archive.NullPosition && d.StopPosition < cp.Position:
		// The stream stops on this one too (the replay's truncation check), with the same way on.
		return stopsBelowTheCheckpoint(stream.Name, cp, d)
	case truncated:
		return lowerListedStop(stdout, st, def, stream.Name, cp, end)
	case err == nil:
		return fmt.Errorf("the archive still has recording %d (%s stream %d, from %d to %s), so there is nothing to forget: ferry publishes it from its checkpoint at %d on; "+
			"forget applies to a recording the archive no longer has, no longer has the start of, or truncated below the stop ferry's checkpoint keeps (`ferry checkpoint show`, LISTED STOP)", id, d.OriginalChannel, d.StreamID, d.StartPosition, stopText(d.StopPosition), cp.Position)
	case !errors.Is(err, archive.ErrRecordingUnknown):
		return fmt.Errorf("ask the archive whether it still has recording %d: %w", id, err)
	}
	// A seed stays one: nothing of the recording was ever published.
	cp.Completed, cp.Forgotten, cp.UpdatedAtMs = true, true, time.Now().UnixMilli()
	if err := st.Save(def, []store.Checkpoint{cp}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stream %s: recording %d forgotten at position %d: ferry goes on with the recordings after it; its records after %d were never published (the archive no longer has them)\n",
		stream.Name, id, cp.Position, cp.Position)
	if cp.StartMs == 0 {
		fmt.Fprintf(stdout, "note: this checkpoint was written by a ferry that kept no recording start times, so whether the archive lost recording %d or was replaced by another archive could not be checked\n", id)
	}
	return nil
}

// notTheOneCheckpointed is forget's refusal of recording id when the archive describes
// another recording under its id (d): the catalog was replaced.
func notTheOneCheckpointed(id int64, d archive.RecordingDescriptor) error {
	return fmt.Errorf("the archive has a recording %d, but not the one ferry checkpointed (%s stream %d, started %s, session %d): the archive's catalog was replaced, and forgetting is not the way on; %s",
		id, d.OriginalChannel, d.StreamID, time.UnixMilli(d.StartTimestampMs).UTC().Format(time.RFC3339), d.SessionID, renameToGoOn)
}

// stopsBelowTheCheckpoint is forget's refusal of stream's recording checkpointed at cp, which
// the archive (d) has stop below it.
func stopsBelowTheCheckpoint(stream string, cp store.Checkpoint, d archive.RecordingDescriptor) error {
	return fmt.Errorf("the archive has recording %d, but it stops at %d, below ferry's checkpoint at %d: it was truncated, or the archive is not the one ferry published from; forget does not apply to it: if it was truncated, %s. If the archive was replaced: %s",
		cp.RecordingID, d.StopPosition, cp.Position, store.ResetCommand(stream)+" publishes the stream again from its configured start_position", renameToGoOn)
}

// forgetHeld accepts that the archive truncated recording cp.RecordingID, while ferry was
// down, below records the topic holds up to topicHolds: whatever it had recorded after them,
// which ferry had not published, is gone. The checkpoint keeps topicHolds (ForgottenTo), so
// that the topic holding the recording up to there stops the stream no more, and ferry
// publishes the recording to its new end. d (err: how the archive answered) is the
// recording as the archive describes it now; same, whether it is the one checkpointed.
func forgetHeld(stdout io.Writer, st *bolt.Store, def store.Stream, stream string, cp store.Checkpoint, d archive.RecordingDescriptor, err error, same bool, topicHolds int64) error {
	id := cp.RecordingID
	switch {
	case errors.Is(err, archive.ErrRecordingUnknown):
		return fmt.Errorf("the archive no longer has recording %d at all: run forget without --topic-holds, which completes its checkpoint where it stands", id)
	case err != nil:
		return fmt.Errorf("ask the archive where recording %d stops now: %w", id, err)
	case !same:
		return notTheOneCheckpointed(id, d)
	case d.StopPosition == archive.NullPosition:
		return fmt.Errorf("recording %d is live (recorded again from where it was truncated): its new records have the positions of those the topic holds up to %d, which are the sequence ids of the recording's producer, and the topic's deduplication would drop them as already stored, so forget does not apply. Record a continuation as a new recording instead; %s", id, topicHolds, renameToGoOn)
	case d.StopPosition < cp.Position:
		return stopsBelowTheCheckpoint(stream, cp, d)
	case topicHolds <= d.StopPosition:
		return fmt.Errorf("the archive holds recording %d up to %d, at or past %d, so there is nothing to forget there: --topic-holds takes the position the stream's failure names, where the topic holds the recording to past the archive's stop", id, d.StopPosition, topicHolds)
	case cp.ListedStop > d.StopPosition:
		// The stream stops on the stop kept first (checkTail), whatever the topic holds.
		return fmt.Errorf("recording %d stops at %d, below %d, where a listing had it stop (the checkpoint keeps that stop): run forget without --topic-holds first, which lowers it; then, should the stream stop on what the topic holds of the recording, forget with the --topic-holds position that failure names", id, d.StopPosition, cp.ListedStop)
	case cp.ListedStop > 0 && (d.StopPosition != cp.ListedStop || cp.ListedStopMs != 0 && d.StopTimestampMs != cp.ListedStopMs):
		// The listing as the stream stopped kept the truncated stop: the recording changed since.
		return fmt.Errorf("the archive recorded recording %d again after a listing had it stop at %d: it stops at %d (%s), and its new records have positions up to %d that the topic holds old records at, which are the sequence ids of the recording's producer; "+
			"the topic's deduplication would drop them as already stored, so forget does not apply. Record a continuation as a new recording instead; %s", id, cp.ListedStop, d.StopPosition, recordedAgainHow(d, cp), topicHolds, renameToGoOn)
	}
	// Its time stays: for a seed, the publisher reads it as the time before which nothing of
	// the recording was sent.
	cp.ForgottenTo = max(cp.ForgottenTo, topicHolds)
	if err := st.Save(def, []store.Checkpoint{cp}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stream %s: recording %d's records from position %d to %d forgotten (the topic holds them; the archive truncated them away, and whatever it had recorded after them, before ferry published it): ferry publishes it from its checkpoint at %d to its new end at %d\n",
		stream, id, d.StopPosition, topicHolds, cp.Position, d.StopPosition)
	return nil
}

// recordedAgainHow says how descriptor d shows its recording recorded again since checkpoint
// cp's listed stop: live, or stopped at another time.
func recordedAgainHow(d archive.RecordingDescriptor, cp store.Checkpoint) string {
	if d.StopPosition == archive.NullPosition {
		return "live, extended from the truncation"
	}
	return fmt.Sprintf("stopped at %s, not at %s as when it stopped at %d: extended from the truncation, then stopped", time.UnixMilli(d.StopTimestampMs).UTC().Format(time.RFC3339Nano), time.UnixMilli(cp.ListedStopMs).UTC().Format(time.RFC3339Nano), cp.ListedStop)
}

// completedUnchanged says that forget changes nothing of cp, a completed checkpoint.
func completedUnchanged(stdout io.Writer, stream string, cp store.Checkpoint) {
	// Also the way on after a stream failed over a completed recording that the archive
	// extended and then lost before ferry stored any of the extension (the failure advises
	// forget for every recording it had not finished): ferry goes on without it.
	fmt.Fprintf(stdout, "stream %s: recording %d is completed: ferry published it to its end, at %d, and needs nothing more of it, whether the archive still has it or not; nothing to forget, nothing changed. "+
		"Had the archive extended it past %d before it lost it, ferry had stored no checkpoint of those records (some may have reached the topic), and what it had not published is gone with it. Start ferry again\n", stream, cp.RecordingID, cp.Position, cp.Position)
}

// lowerListedStop accepts the truncation of cp's recording above its checkpoint, below the
// stop cp keeps (the stream stops on it: actors, checkTail): the stop kept becomes end, the
// recording's new one, and ferry publishes what the archive still has of it. The
// checkpoint's time is kept: for a seed, it is when nothing of the recording had been sent.
func lowerListedStop(stdout io.Writer, st *bolt.Store, def store.Stream, stream string, cp store.Checkpoint, end int64) error {
	was := cp.ListedStop
	// The topic may hold records up to the old stop (sent before ferry persisted their
	// commit): the publisher's read of it then finds no truncation to stop on.
	cp.ListedStop, cp.ForgottenTo = end, max(cp.ForgottenTo, was)
	if err := st.Save(def, []store.Checkpoint{cp}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stream %s: recording %d's records from position %d to %d forgotten (the archive truncated them away before ferry published them): ferry publishes it from its checkpoint at %d to its new end at %d\n",
		stream, cp.RecordingID, end, was, cp.Position, end)
	return nil
}

// renameToGoOn is the way on after the archive's catalog was replaced (as the stream says it).
const renameToGoOn = "to publish the new archive's recordings, give the stream a new name in the configuration: its producers are then new to the topic's deduplication, which would otherwise drop the reused ids' records as duplicates of the old ones; " +
	"then drop the checkpoints stored under the old name with `ferry checkpoint reset --config FILE --stream OLD --yes` (ferry run refuses the new name while they are there, taking it for an accidental rename)"

// storePathHint says where a store that is not there may be.
func storePathHint(cfg *config.Config) string {
	if !filepath.IsAbs(cfg.Store.Path) {
		return "store.path is relative to the directory ferry runs in: run this command there, or make store.path absolute"
	}
	return "check store.path in the configuration"
}

// relativeStoreNote warns, after a store found missing, that a relative store.path may name
// a file elsewhere for a ferry run in another directory; "" for an absolute one.
func relativeStoreNote(cfg *config.Config) string {
	if filepath.IsAbs(cfg.Store.Path) {
		return ""
	}
	return " (store.path is relative to the directory ferry runs in: if ferry runs elsewhere, run this command there, or make store.path absolute)"
}

// stopText is a recording's stop position, or "live" for one still recorded.
func stopText(stop int64) string {
	if stop == archive.NullPosition {
		return "live"
	}
	return fmt.Sprint(stop)
}

// storePath is the configured store path made absolute, as every message names it: a
// relative one is relative to the directory the command runs in.
func storePath(cfg *config.Config) string {
	if abs, err := filepath.Abs(cfg.Store.Path); err == nil {
		return abs
	}
	return cfg.Store.Path
}

// openStopped opens the store at path for a command that needs ferry stopped; a store a
// running ferry holds is an error that says so and what to do instead.
func openStopped(path, instead string, readOnly bool) (*bolt.Store, error) {
	st, err := bolt.Open(path, &bolt.Options{OpenTimeout: time.Second, ReadOnly: readOnly})
	if errors.Is(err, store.ErrLocked) {
		return nil, &lockedStore{path, instead}
	}
	return st, err
}

// lockedStore is openStopped's error for a store another process holds: instead says what
// to do.
type lockedStore struct{ path, instead string }

func (e *lockedStore) Error() string {
	return fmt.Sprintf("checkpoint store %s is held by a running ferry (or another command): %s", e.path, e.instead)
}

// checkpointTarget parses --config and --stream (plus extra flags) and finds the stream in
// the configuration, returned with the configuration file's path (cfgPath), which the
// commands' advice names. A name it does not have is a [*notConfigured] error, returned with
// the configuration: a usage error, unless the command looks for the name in the store too.
func checkpointTarget(name string, args []string, extra func(*flag.FlagSet)) (cfgPath string, cfg *config.Config, s config.Stream, err error) {
	var streamName string
	err = flags(name, args, func(fs *flag.FlagSet) {
		fs.StringVar(&cfgPath, "config", "", "configuration file")
		fs.StringVar(&streamName, "stream", "", "stream name")
		if extra != nil {
			extra(fs)
		}
	})
	if err != nil {
		return "", nil, config.Stream{}, err
	}
	if streamName == "" {
		return "", nil, config.Stream{}, usageError{"--stream is required"}
	}
	cfg, err = loadConfig(cfgPath)
	if err != nil {
		return "", nil, config.Stream{}, err
	}
	if cfg.Mode != config.ModeArchive {
		return "", nil, config.Stream{}, fmt.Errorf("%s is in %s mode, which keeps no checkpoints; "+
			"ferry checkpoint applies to archive mode configurations (mode: archive)", cfgPath, cfg.Mode)
	}
	names := make([]string, len(cfg.Streams))
	for i, c := range cfg.Streams {
		if c.Name == streamName {
			return cfgPath, cfg, c, nil
		}
		names[i] = c.Name
	}
	return cfgPath, cfg, config.Stream{}, &notConfigured{cfgPath: cfgPath, name: streamName, names: names}
}

// definition is what the store keeps of configured stream s, its channel spelled as
// configured. [load] finds the spelling it is stored under.
func definition(s config.Stream) store.Stream {
	return store.Stream{Name: s.Name, Channel: s.Channel.String(), StreamID: s.StreamID, Topic: s.Topic, SchemaVersion: schemaVersion}
}

// load loads configured stream s from st, and returns the definition it loaded it under:
// s's (definition), its channel spelled as stored spells it when s's name is stored with
// the same channel, its parameters in another order (channel.URI.Equal). The store compares
// definitions as text, and a channel written with its parameters reordered is the same
// stream, not a changed one (whose offered ways on include a reset). The stored spelling
// comes with Load's [*store.StreamChangedError], not from the list of stored streams: that
// fails as a whole when any stream's definition cannot be read, and another stream's damage
// must not make this one look changed.
func load(st store.Store, s config.Stream) (store.Stream, store.State, error) {
	def := definition(s)
	state, err := st.Load(def)
	var changed *store.StreamChangedError
	if errors.As(err, &changed) && changed.Stored.Channel != def.Channel && sameChannel(changed.Stored.Channel, s.Channel) {
		def.Channel = changed.Stored.Channel
		state, err = st.Load(def) // what else changed, if anything, is said under it
	}
	return def, state, err
}

// sameChannel reports whether text, a channel as the store keeps it, is channel u, its
// parameters in any order.
func sameChannel(text string, u channel.URI) bool {
	v, err := channel.Parse(text)
	return err == nil && v.Equal(u)
}
