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
	"text/tabwriter"
	"time"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/store/bolt"
)

// recordings prints, per configured stream, the archive's recordings with their positions
// and what ferry has committed for each.
func recordings(args []string, stdout io.Writer) error {
	var path string
	if err := flags("recordings", args, func(fs *flag.FlagSet) { fs.StringVar(&path, "config", "", "configuration file") }); err != nil {
		return err
	}
	cfg, err := loadConfig(path)
	if err != nil {
		return err
	}
	if cfg.Mode != config.ModeArchive {
		return fmt.Errorf("%s is in %s mode, which reads no recordings; ferry recordings applies to archive mode "+
			"configurations (mode: archive), and `ferry status --config %s` shows what this one publishes", path, cfg.Mode, path)
	}
	dialCtx, cancel := context.WithTimeout(context.Background(), 2*cfg.Archive.MessageTimeout)
	defer cancel()
	ac, arc, err := dialArchive(dialCtx, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer ac.Close()
	defer arc.Close()
	// Each request is bounded by archive.message_timeout; a catalog of many pages takes as
	// many requests as it needs.
	ctx := context.Background()
	committed, storeNote, storeErr := committedCheckpoints(cfg)
	for _, s := range cfg.Streams {
		descs, others, err := arc.ChannelRecordings(ctx, s.Channel, s.StreamID, 100)
		if err != nil {
			return fmt.Errorf("stream %s: list recordings: %w", s.Name, err)
		}
		note := storeNote
		if _, read := committed[s.Name]; committed != nil && !read {
			note = "; its checkpoints could not be read (below)"
		}
		fmt.Fprintf(stdout, "stream %s (%s stream %d -> %s): %d recording(s)%s\n", s.Name, s.Channel, s.StreamID, s.Topic, len(descs), note)
		w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(w, "RECORDING\tSTATE\tSTART\tEND\tCOMMITTED\tSTARTED")
		for _, d := range descs {
			d, end, err := recordingEnd(ctx, arc, d)
			if err != nil {
				return fmt.Errorf("stream %s: recording %d: %w", s.Name, d.RecordingID, err)
			}
			state := "stopped"
			if d.IsLive() {
				state = "live"
			}
			fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%s\t%s\n", d.RecordingID, state, d.StartPosition, end,
				committedText(committed, s.Name, d), time.UnixMilli(d.StartTimestampMs).UTC().Format(time.RFC3339))
		}
		if err := w.Flush(); err != nil {
			return err
		}
		printUnselected(stdout, s.Channel.String(), s.StreamID, len(descs), others)
	}
	return storeErr
}

// unselectedChannelsShown is how many of the unselected recordings' channels
// printUnselected names.
const unselectedChannelsShown = 5

// printUnselected prints the channels of others, the recordings of the stream's stream id
// and media that its configured channel does not select, a few with how many recordings
// each, and a hint: all of them, when the channel selects none (selected 0), may be the
// stream's own, made on a channel spelt otherwise. Nothing when there are none.
func printUnselected(w io.Writer, configured string, streamID int32, selected int, others []archive.RecordingDescriptor) {
	if len(others) == 0 {
		return
	}
	var chans []string
	count := map[string]int{}
	for _, o := range others {
		if count[o.OriginalChannel] == 0 {
			chans = append(chans, o.OriginalChannel)
		}
		count[o.OriginalChannel]++
	}
	fmt.Fprintf(w, "  not selected by %s: %d recording(s) of stream id %d on other channels:\n", configured, len(others), streamID)
	for _, c := range chans[:min(len(chans), unselectedChannelsShown)] {
		fmt.Fprintf(w, "    %s: %d recording(s)\n", c, count[c])
	}
	if n := len(chans) - unselectedChannelsShown; n > 0 {
		fmt.Fprintf(w, "    and %d more channel(s)\n", n)
	}
	if selected == 0 {
		fmt.Fprintf(w, "  hint: the configured channel selects none of the stream id's recordings; %s\n", actors.UnselectedHint)
		return
	}
	fmt.Fprintf(w, "  hint: these are another stream's, or this one's recorded on a channel spelt otherwise, which ferry does not replay\n")
}

// recordingArchive is what recordingEnd asks the archive.
type recordingArchive interface {
	RecordingPosition(ctx context.Context, recordingID int64) (int64, error)
	Recording(ctx context.Context, recordingID int64) (archive.RecordingDescriptor, error)
}

// recordingEnd is how far recording d has recorded: its stop position, or, listed live, its
// recording position now. One that stopped after it was listed (the archive answers
// NullPosition: no longer recorded) is described again and returned as it is now, stopped
// at its stop; live again (extended meanwhile), its recording position is asked again.
func recordingEnd(ctx context.Context, a recordingArchive, d archive.RecordingDescriptor) (archive.RecordingDescriptor, int64, error) {
	for range 3 {
		if !d.IsLive() {
			return d, d.StopPosition, nil
		}
		pos, err := a.RecordingPosition(ctx, d.RecordingID)
		if err != nil || pos != archive.NullPosition {
			return d, pos, err
		}
		again, err := a.Recording(ctx, d.RecordingID)
		if err != nil {
			return d, 0, err // the recording as listed, not the empty descriptor of a failure
		}
		d = again
	}
	return d, 0, fmt.Errorf("stopped and recorded again at each of 3 questions: how far it recorded is not known")
}

// committedCheckpoints reads every stream's checkpoints, or says in a note why it could
// not. A store that is missing or held by a running ferry is only a note; one that cannot be
// read is also the error the command ends with, once the recordings are listed. A stream
// whose checkpoints cannot be read (its definition changed, a value damaged) is left out,
// its error among those the command ends with: the others' are still shown.
func committedCheckpoints(cfg *config.Config) (map[string]map[int64]store.Checkpoint, string, error) {
	path := storePath(cfg)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Sprintf("; no checkpoint store at %s%s", path, relativeStoreNote(cfg)), nil
	}
	st, err := bolt.Open(path, &bolt.Options{OpenTimeout: time.Second, ReadOnly: true})
	if errors.Is(err, store.ErrLocked) {
		return nil, "; checkpoints unknown: a running ferry holds the store (ask its /status)", nil
	}
	if err != nil {
		return nil, "; checkpoints unreadable (below)", err
	}
	defer st.Close()
	out := map[string]map[int64]store.Checkpoint{}
	var errs []error
	for _, s := range cfg.Streams {
		_, state, err := load(st, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("stream %s: %w", s.Name, err))
			continue
		}
		out[s.Name] = map[int64]store.Checkpoint{}
		for _, c := range state.Checkpoints {
			out[s.Name][c.RecordingID] = c
		}
	}
	return out, "", errors.Join(errs...)
}

// committedText is what ferry committed of recording d: its checkpoint's position and
// state. A checkpoint of another recording under d's id (the archive's catalog replaced,
// its ids reused: the running ferry stops the stream) is said to be one: another start
// time, as the stream tells it (actors, checkOrigin); an extension (ExtendRecording) keeps
// the start and may record it on in another session.
func committedText(all map[string]map[int64]store.Checkpoint, stream string, d archive.RecordingDescriptor) string {
	cps, read := all[stream]
	if !read {
		return "?"
	}
	c, ok := cps[d.RecordingID]
	switch {
	case !ok:
		return "-"
	case c.StartMs != 0 && c.StartMs != d.StartTimestampMs:
		return fmt.Sprintf("- (the checkpoint under this id, at %d, is of another recording, started %s in session %d: the archive reuses ids)", c.Position, time.UnixMilli(c.StartMs).UTC().Format(time.RFC3339), c.SessionID)
	case c.Forgotten:
		return fmt.Sprintf("%d (forgotten: never published after it)", c.Position)
	case c.Completed:
		return fmt.Sprintf("%d (completed)", c.Position)
	case c.Seed:
		return fmt.Sprintf("- (taken on at %d)", c.Position)
	}
	return fmt.Sprint(c.Position)
}
