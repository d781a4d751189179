package store

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Implementations wrap them, usually in one of the struct errors below, so
// callers test with [errors.Is] and read details with [errors.As]; never by string.
var (
	// ErrCorrupt reports stored data that cannot be decoded: a truncated or garbled value,
	// a checksum mismatch, or a file the storage engine refuses. It is returned wrapped in a
	// [*CorruptError]. The stream must stop: replaying from its configured start would
	// re-ingest history (lesson 13).
	ErrCorrupt = errors.New("store: corrupt checkpoint data")

	// ErrUnknownVersion reports a file or value written in an encoding version this build
	// does not read: by a newer ferry. It is returned wrapped in an [*UnknownVersionError].
	// The data is not damaged — an implementation reports it only for a version under a
	// checksum that checks out, and a damaged version as [ErrCorrupt] — and it must not be
	// reset by this build.
	ErrUnknownVersion = errors.New("store: unknown checkpoint encoding version")

	// ErrStreamChanged reports a stream whose configured definition differs from the stored
	// one. It is returned wrapped in a [*StreamChangedError]. The stream must not start until
	// the operator restores the old definition or resets the stream.
	ErrStreamChanged = errors.New("store: stream definition changed")

	// ErrPositionRegressed reports a Save that would move a checkpoint backwards. It is
	// returned wrapped in a [*PositionRegressedError]. It is a bug in the caller, or a second
	// writer; nothing of the batch is stored.
	ErrPositionRegressed = errors.New("store: checkpoint would move backwards")

	// ErrResetFailed reports a reset after which data of the stream was still found on
	// reading back (lesson 15). The stream must not start: it would resume, not restart.
	ErrResetFailed = errors.New("store: reset did not delete")

	// ErrReplaced reports that the store's file was deleted, renamed or replaced while the
	// store had it open: what is written now would not be read at the next start. The
	// stream must stop.
	ErrReplaced = errors.New("store: file deleted or replaced while in use")

	// ErrLocked reports that another process holds the store (for store/bolt, the file
	// lock) and did not release it within the open timeout.
	ErrLocked = errors.New("store: held by another process")

	// ErrInvalid reports an argument that cannot be stored: an empty stream name, a negative
	// recording id or position.
	ErrInvalid = errors.New("store: invalid argument")

	// ErrClosed is returned by every method but Close after the store was closed.
	ErrClosed = errors.New("store: closed")
)

// ResetCommand is the operator's way out of a stream's bad or obsolete checkpoints, as a
// command to run: FILE stands for the configuration file, which the store does not know.
func ResetCommand(stream string) string {
	return "ferry checkpoint reset --config FILE --stream " + stream + " --yes"
}

// StoredTwice is what becomes of a record that a stream publishes again after a reset: the
// topic's deduplication drops it only while the broker remembers the producer that published
// it first, and the broker forgets an idle one.
const StoredTwice = "stored twice unless the topic's deduplication still remembers the recording's producer " +
	"(Pulsar forgets a producer idle for brokerDeduplicationProducerInactivityTimeoutMinutes, 6 hours by default)"

// ForgetCommand is the command line that completes the checkpoint of recording id of stream
// where it stands, after the archive lost the recording (`ferry checkpoint forget`).
func ForgetCommand(stream string, id int64) string {
	return fmt.Sprintf("ferry checkpoint forget --config FILE --stream %s --recording %d --yes", stream, id)
}

// ForgetHeldCommand is the command line that accepts that the archive truncated recording
// id of stream below records the topic holds up to topicHolds (`ferry checkpoint forget
// --topic-holds`).
func ForgetHeldCommand(stream string, id, topicHolds int64) string {
	return fmt.Sprintf("ferry checkpoint forget --config FILE --stream %s --recording %d --topic-holds %d --yes", stream, id, topicHolds)
}

// CorruptError is stored data that cannot be decoded. It satisfies errors.Is(err, ErrCorrupt).
type CorruptError struct {
	// File is the store file (or endpoint) that holds the data.
	File string
	// Stream is the stream the data belongs to; empty when the file itself is unreadable.
	Stream string
	// Key names the damaged entry; empty when the file itself is unreadable.
	Key string
	// Reason says what is wrong, e.g. "checksum mismatch".
	Reason string
	// Remedy, if set, says what to do instead of the general advice (restore a backup,
	// move the file aside, or reset the stream).
	Remedy string
}

// Error names the file, the entry and the operator's options.
func (e *CorruptError) Error() string {
	const why = "find out why first (disk errors, a partial copy or restore, another program writing the file)"
	if e.Remedy != "" {
		return fmt.Sprintf("checkpoint store %s is corrupt: %s; %s, then: %s", e.File, e.Reason, why, e.Remedy)
	}
	if e.Stream == "" {
		return fmt.Sprintf("checkpoint store %s is corrupt: %s; %s, then restore the file from a backup, "+
			"or move it aside so that every stream starts again from its configured start position",
			e.File, e.Reason, why)
	}
	return fmt.Sprintf("checkpoint store %s: stream %q, %s is corrupt: %s; %s, then run `%s` "+
		"(the stream replays from its configured start position; what it published before is %s) or restore the file from a backup",
		e.File, e.Stream, e.Key, e.Reason, why, ResetCommand(e.Stream), StoredTwice)
}

// Is reports whether target is [ErrCorrupt].
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// UnknownVersionError is a file or value in an encoding version this build does not read,
// or a value with a field this build does not know (Field): a newer ferry's, which this
// build would drop at its next save of the value. It satisfies errors.Is(err,
// ErrUnknownVersion).
type UnknownVersionError struct {
	// File is the store file (or endpoint).
	File string
	// Stream is the stream of the value; empty for the file's own schema version.
	Stream string
	// Key names the entry; empty for the file's own schema version.
	Key string
	// Version is the version found.
	Version uint32
	// Supported is the version this build reads and writes.
	Supported uint32
	// Field, if not 0, is the number of a field in the value this build does not know, in
	// an encoding version it reads (Version).
	Field int32
}

// What says what this build does not read: "encoding version 2, which a newer ferry wrote
// (this build reads version 1)", or the field of a newer ferry's value.
func (e *UnknownVersionError) What() string {
	if e.Field != 0 {
		return fmt.Sprintf("field %d, which a newer ferry wrote (this build reads encoding version %d, but not that field, and would drop it at its next save)", e.Field, e.Supported)
	}
	return fmt.Sprintf("encoding version %d, which a newer ferry wrote (this build reads version %d)", e.Version, e.Supported)
}

// Error names the file, both versions and the operator's options. For the file's own
// version it names moving the file aside too: no command of this build opens the file,
// `ferry checkpoint reset --force` included.
func (e *UnknownVersionError) Error() string {
	if e.Stream == "" {
		return fmt.Sprintf("checkpoint store %s: encoding version %d, written by a newer ferry (its checksum checks out; "+
			"this build reads version %d): run the ferry release that wrote it (or a newer one); to run this build instead, "+
			"move the file aside and keep it for that release (every stream then starts again from its configured start position)",
			e.File, e.Version, e.Supported)
	}
	return fmt.Sprintf("checkpoint store %s: stream %q, %s: %s; its checksum checks out: run the ferry release that wrote it (or a newer one); do not reset or delete it with this build",
		e.File, e.Stream, e.Key, e.What())
}

// Is reports whether target is [ErrUnknownVersion].
func (e *UnknownVersionError) Is(target error) bool { return target == ErrUnknownVersion }

// StreamChangedError is a configured stream definition that differs from the stored one.
// It satisfies errors.Is(err, ErrStreamChanged).
type StreamChangedError struct {
	// File is the store file (or endpoint).
	File string
	// Stored is the definition the checkpoints were written under.
	Stored Stream
	// Configured is the definition the caller passed.
	Configured Stream
}

// Changes lists each differing field as `field: "stored" → "configured"`.
func (e *StreamChangedError) Changes() []string {
	var out []string
	add := func(field string, stored, configured any) {
		if stored != configured {
			out = append(out, fmt.Sprintf("%s %q → %q", field, fmt.Sprint(stored), fmt.Sprint(configured)))
		}
	}
	add("channel", e.Stored.Channel, e.Configured.Channel)
	add("stream id", e.Stored.StreamID, e.Configured.StreamID)
	add("topic", e.Stored.Topic, e.Configured.Topic)
	add("schema version", e.Stored.SchemaVersion, e.Configured.SchemaVersion)
	return out
}

// Error names the stream, what changed, the file and the fix.
func (e *StreamChangedError) Error() string {
	return fmt.Sprintf("checkpoint store %s: stream %q definition changed (%s): its checkpoints are "+
		"positions in recordings of the stored definition; restore the stored definition, or run `%s` "+
		"to start the stream again from its configured start position (what it published before is then %s)",
		e.File, e.Configured.Name, strings.Join(e.Changes(), ", "), ResetCommand(e.Configured.Name), StoredTwice)
}

// Is reports whether target is [ErrStreamChanged].
func (e *StreamChangedError) Is(target error) bool { return target == ErrStreamChanged }

// PositionRegressedError is a checkpoint that would move backwards. It satisfies
// errors.Is(err, ErrPositionRegressed).
type PositionRegressedError struct {
	// File is the store file (or endpoint).
	File string
	// Stream is the stream's name.
	Stream string
	// Stored is the checkpoint in the store.
	Stored Checkpoint
	// Attempted is the refused checkpoint.
	Attempted Checkpoint
}

// Error names the recording, both positions and the only way back.
func (e *PositionRegressedError) Error() string {
	what := fmt.Sprintf("position %d is below the stored %d", e.Attempted.Position, e.Stored.Position)
	if e.Attempted.Position >= e.Stored.Position {
		what = "it marks the completed recording not completed"
	}
	return fmt.Sprintf("checkpoint store %s: stream %q, recording %d: %s; a checkpoint never moves "+
		"backwards (to replay from an earlier position, run `%s`)",
		e.File, e.Stream, e.Attempted.RecordingID, what, ResetCommand(e.Stream))
}

// Is reports whether target is [ErrPositionRegressed].
func (e *PositionRegressedError) Is(target error) bool { return target == ErrPositionRegressed }

func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
