package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/store"
)

// Checkpoints are stored under the stream's name. A stream renamed in the configuration (or
// removed from it) leaves its checkpoints under the old name, where no run reads them: this
// file is how `ferry run` and the checkpoint commands find them.

// checkStoredStreams compares the streams the store holds with the configuration, once, at
// `ferry run`'s start, before anything is published. A stream renamed in the configuration
// has nothing stored under its new name: started at its start_position, it would leave out
// what was recorded since its checkpoint (start_position latest), or publish again what the
// checkpoint covers under producer names the broker's deduplication has never seen (they
// include the stream's name), storing it twice. So a configured stream with nothing stored
// whose channel, stream id and topic a stream the configuration does not name was stored
// under refuses the start, naming both and the ways on. The other stored streams the
// configuration does not name are said in one warning: their checkpoints are kept.
//
// A stream with reset: true is left out: it starts again at its start_position, as asked. A
// configured stream whose load fails counts as stored; streamConfigs reports the failure.
func checkStoredStreams(cfgPath string, cfg *config.Config, st store.Store, log *slog.Logger) error {
	stored, listErr := st.Streams()
	for _, s := range cfg.Streams {
		if s.Reset {
			continue
		}
		if _, state, err := load(st, s); err == nil && !state.Stored {
			if err := freshStartRefusal(cfgPath, cfg, s, stored, listErr); err != nil {
				return err
			}
		}
	}
	if err := listErr; err != nil {
		// Every configured stream resumes from its own checkpoints: what cannot be read is
		// another stream's, which nothing runs.
		log.Warn("the streams the checkpoint store holds could not be listed; every configured stream has its own checkpoints, so ferry starts", "error", err)
		return nil
	}
	var others []string
	for _, o := range stored {
		if !configured(cfg, o.Name) {
			others = append(others, o.Name)
		}
	}
	if len(others) > 0 {
		log.Warn("the checkpoint store holds streams the configuration does not name: their checkpoints are kept, and nothing publishes them; `"+
			resetCommand(cfgPath, "NAME")+"` drops one", "streams", strings.Join(others, ", "), "path", storePath(cfg))
	}
	return nil
}

// freshStartRefusal is why `ferry run` refuses to start configured stream s, which has
// nothing stored under its name, given the streams the store holds (stored, or listErr, the
// failure to list them); nil when s starts at its start_position. It is s stored under an
// old name (renamed in the configuration): a stream stored with s's channel (its parameters
// in any order), stream id and topic that the configuration does not name, or names for
// another stream (the old name reused: that one's load fails as changed, and the reset it
// offers would drop s's checkpoints); or that this cannot be told. The checkpoint commands
// say the same of s as the run does.
func freshStartRefusal(cfgPath string, cfg *config.Config, s config.Stream, stored []store.Stream, listErr error) error {
	if s.Reset {
		return nil // starts again at its start_position, as asked
	}
	if listErr != nil {
		return fmt.Errorf("stream %s has no checkpoint, and whether the checkpoint store holds its checkpoints under another name (the stream renamed in the configuration) cannot be told, so ferry does not start: %w", s.Name, listErr)
	}
	var olds []store.Stream
	for _, o := range stored {
		if sameStream(o, s) && !slices.ContainsFunc(cfg.Streams, func(c config.Stream) bool { return c.Name == o.Name && sameStream(o, c) }) {
			olds = append(olds, o)
		}
	}
	if len(olds) > 0 {
		return renamedError(cfgPath, storePath(cfg), cfg, s, olds)
	}
	return nil
}

// sameStream reports whether stored stream o has configured stream s's channel (its
// parameters in any order), stream id and topic, whatever their names.
func sameStream(o store.Stream, s config.Stream) bool {
	return sameChannel(o.Channel, s.Channel) && o.StreamID == s.StreamID && o.Topic == s.Topic
}

// configured reports whether cfg has a stream called name.
func configured(cfg *config.Config, name string) bool {
	return slices.ContainsFunc(cfg.Streams, func(s config.Stream) bool { return s.Name == name })
}

// renamedError refuses the start of configured stream s, which has no checkpoint, whose
// channel, stream id and topic the streams olds, not configured or configured for another
// stream (cfg), are stored under.
func renamedError(cfgPath, path string, cfg *config.Config, s config.Stream, olds []store.Stream) error {
	var names, resets, reused []string
	for _, o := range olds {
		names = append(names, o.Name)
		resets = append(resets, "`"+resetCommand(cfgPath, o.Name)+"`")
		if configured(cfg, o.Name) {
			reused = append(reused, o.Name)
		}
	}
	rename := ""
	if len(reused) > 0 {
		rename = fmt.Sprintf(" (%s now names another stream in the configuration: give that one a new name; a reset of %s would drop these checkpoints)", strings.Join(reused, " and "), strings.Join(reused, " or "))
	}
	them, was, back := "stream "+names[0]+"'s checkpoints", "stream "+names[0], names[0]
	if len(olds) > 1 {
		them, was, back = "the checkpoints of streams "+strings.Join(names, ", "), "one of them", strings.Join(names, " or ")+", whichever it was"
	}
	return fmt.Errorf("stream %s has no checkpoint, but the checkpoint store %s holds %s for the same channel, stream id and topic (%s stream %d -> %s): "+
		"was %s renamed %s in the configuration? ferry does not start, as %s started at its start_position would %s. "+
		"To resume from those checkpoints, give the stream its old name back (name: %s, in %s)%s; "+
		"or, to start %s at its start_position and drop %s, run %s",
		s.Name, path, them, olds[0].Channel, olds[0].StreamID, olds[0].Topic,
		was, s.Name, s.Name, startedAfresh(s.Start),
		back, cfgPath, rename, s.Name, them, strings.Join(resets, " and "))
}

// startedAfresh says what a renamed stream, started at its start position, does with what
// the old name's checkpoints cover.
func startedAfresh(start config.StartPosition) string {
	const twice = "under producer names the broker's deduplication has never seen (they include the stream's name), so stored twice"
	switch start.Kind {
	case config.StartLatest:
		return "leave out everything recorded since those checkpoints that ferry had not published, and every recording stopped meanwhile"
	case config.StartAt:
		return fmt.Sprintf("publish again from position %d of recording %d what those checkpoints cover, %s", start.Position, start.RecordingID, twice)
	}
	return "publish the whole archive again, " + twice
}

// resetCommand is the reset of stream name, with the configuration file it runs with.
func resetCommand(cfgPath, name string) string {
	return strings.Replace(store.ResetCommand(name), "--config FILE", "--config "+shellWord(cfgPath), 1)
}

// notConfigured is checkpointTarget's answer for a --stream the configuration does not
// name: a usage error (exit 2), unless the command looks the name up in the store too (show
// and reset, through storedOnly) — a stream renamed in the configuration, or removed from
// it, left its checkpoints there under its old name.
type notConfigured struct {
	cfgPath string   // the configuration file
	name    string   // --stream
	names   []string // the configured streams
}

func (e *notConfigured) Error() string { return e.Unwrap().Error() }

func (e *notConfigured) Unwrap() error {
	return usageError{fmt.Sprintf("%s has no stream %q; pass one of its streams to --stream: %s", e.cfgPath, e.name, strings.Join(e.names, ", "))}
}

// held is the error of a command that could not open the checkpoint store (err) for a name
// the configuration does not have (nc; nil: a configured name, and err as it is). A store
// held by a running ferry is a usage error naming the configured streams: most likely the
// name is mistyped, and an operator should not stop ferry to find that out.
func (nc *notConfigured) held(err error) error {
	var locked *lockedStore
	if nc == nil || !errors.As(err, &locked) {
		return err
	}
	return usageError{fmt.Sprintf("%s has no stream %q; pass one of its streams to --stream: %s. (A stream renamed in the configuration, or removed from it, keeps its checkpoints in the store under its old name, which cannot be looked at now: %s)",
		nc.cfgPath, nc.name, strings.Join(nc.names, ", "), locked.Error())}
}

// noStore is the usage error of a name the configuration does not have, when there is no
// checkpoint store at path either.
func (e *notConfigured) noStore(cfg *config.Config, path string) error {
	return usageError{fmt.Sprintf("%s has no stream %q, and there is no checkpoint store at %s to hold one (%s); pass one of its streams to --stream: %s",
		e.cfgPath, e.name, path, storePathHint(cfg), strings.Join(e.names, ", "))}
}

// storedOnly looks up stream nc.name, which the configuration does not have, among the
// streams st (the store at path) holds, and returns its stored definition with stored true.
// A name the store does not hold either is a usage error listing the configured and the
// stored names. An error of the listing that names the stream (its definition damaged, or
// in a newer ferry's encoding) is returned with stored true: the name is stored, and its
// reset is the way out. Any other failure of the listing is returned with stored false.
func storedOnly(st store.Store, path string, nc *notConfigured) (def store.Stream, stored bool, err error) {
	list, err := st.Streams()
	var ce *store.CorruptError
	var uv *store.UnknownVersionError
	switch {
	case errors.As(err, &ce) && ce.Stream == nc.name, errors.As(err, &uv) && uv.Stream == nc.name:
		return store.Stream{}, true, err
	case err != nil:
		return store.Stream{}, false, fmt.Errorf("%s has no stream %q, and the streams the checkpoint store holds could not be listed to look for it there: %w", nc.cfgPath, nc.name, err)
	}
	var names []string
	for _, s := range list {
		if s.Name == nc.name {
			return s, true, nil
		}
		names = append(names, s.Name)
	}
	held := "it holds none"
	if len(names) > 0 {
		held = "it holds " + strings.Join(names, ", ")
	}
	return store.Stream{}, false, usageError{fmt.Sprintf("%s has no stream %q, and neither has the checkpoint store %s (%s); pass to --stream one of the configured streams (%s) or of the stored ones",
		nc.cfgPath, nc.name, path, held, strings.Join(nc.names, ", "))}
}

// showStoredOnly is `ferry checkpoint show` of a stream only the store holds: its stored
// definition and checkpoints, and what they are for.
func showStoredOnly(stdout io.Writer, st store.Store, path string, nc *notConfigured) error {
	def, _, err := storedOnly(st, path, nc)
	if err != nil {
		return err
	}
	state, err := st.Load(def)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stream %s is not in %s: the store keeps what it holds of the stream under that name, and no run resumes from it. "+
		"If a configured stream is stream %s renamed (the same channel, stream id and topic), give it its old name back to resume from this; `%s` drops it\n",
		nc.name, nc.cfgPath, nc.name, resetCommand(nc.cfgPath, nc.name))
	if len(state.Checkpoints) == 0 {
		fmt.Fprintf(stdout, "stream %s (%s stream %d -> %s), %s: only its definition is stored (start_position latest, decided when the archive held none of its recordings)\n",
			def.Name, def.Channel, def.StreamID, def.Topic, path)
		return nil
	}
	return printCheckpoints(stdout, def, state, path)
}

// resetStoredOnly is `ferry checkpoint reset` of a stream only the store holds, verified by
// reading back as every reset; yes and force are its flags.
func resetStoredOnly(stdout io.Writer, st store.Store, path string, nc *notConfigured, yes, force bool) error {
	def, stored, err := storedOnly(st, path, nc)
	if !stored {
		return err
	}
	if !yes {
		return usageError{fmt.Sprintf("checkpoint reset deletes what ferry has committed for stream %s, which %s does not name (if a configured stream is stream %s renamed, it is what that stream resumes from under its old name); add --yes to do it",
			nc.name, nc.cfgPath, nc.name)}
	}
	var state store.State
	if err == nil {
		state, err = st.Load(def) // what a newer ferry wrote among its checkpoints
	}
	var uv *store.UnknownVersionError
	if errors.As(err, &uv) && !force {
		return newerFerryRefusal(nc.name, path, uv)
	}
	if err := listDeleted(stdout, nc.name, def, state, path, err); err != nil {
		return err
	}
	if err := st.Reset(nc.name); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "stream %s: checkpoint deleted from %s (verified by reading back); %s does not name the stream, so no run resumed from it\n", nc.name, path, nc.cfgPath)
	return nil
}

// newerFerryRefusal is the refusal to reset stream name's data in path, which a newer ferry
// wrote, without --force.
func newerFerryRefusal(name, path string, uv *store.UnknownVersionError) error {
	return fmt.Errorf("stream %s: %s holds its checkpoint data in %s, so it is not reset; "+
		"run `ferry checkpoint reset` of the ferry release that wrote it, or add --force to delete it with this build anyway",
		name, path, uv.What())
}
