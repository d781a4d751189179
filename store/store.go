package store

// Store is the durable checkpoint store. Implementations are safe for concurrent use.
//
// Every method but Close returns an error wrapping [ErrClosed] once Close has been called.
// Errors from the underlying storage are returned wrapped, with the file or endpoint named;
// none of them is ever reported as absence of data.
type Store interface {
	// Load returns the stored definition and every recording checkpoint of stream def.Name,
	// checking the stored definition against def.
	//
	// A stream with nothing stored (never saved, or reset) is not an error: Load returns a
	// State with Stored false and no checkpoints. Every other failure is an error and the
	// returned State is the zero value: a stored definition different from def
	// ([ErrStreamChanged]), a corrupt or truncated value ([ErrCorrupt]), a value or file in
	// an encoding this build does not know ([ErrUnknownVersion]), an invalid def
	// ([ErrInvalid]), or a read failure of the storage itself.
	Load(def Stream) (State, error)

	// Save stores cps for stream def.Name in one transaction: either every checkpoint is
	// durable (synced to stable storage) when Save returns nil, or none is stored.
	//
	// The first Save of a stream stores def (a Save with no checkpoints only does that);
	// later Saves check def against the stored definition and refuse a change with
	// [ErrStreamChanged]. A checkpoint whose position is lower than the stored one for the
	// same recording, or that marks a completed recording not completed, fails the whole
	// batch with [ErrPositionRegressed]. Saving the stored position again is allowed
	// (idempotent). A batch may name a recording more than once; its checkpoints then apply
	// in order, under the same rule. Invalid input fails with [ErrInvalid].
	Save(def Stream, cps []Checkpoint) error

	// Reset deletes everything stored for the named stream (definition and checkpoints),
	// then reads back and fails with [ErrResetFailed] if anything is left. After a nil
	// return, Load reports the stream with Stored false. Resetting a stream with nothing
	// stored succeeds (Reset is idempotent). Reset takes a name, not a definition, because it
	// is the way out of [ErrStreamChanged].
	Reset(name string) error

	// Streams returns the stored definition of every stream with something stored, ordered
	// by name: from its first Save until its Reset, whether or not any configuration still
	// names it. It is how a caller finds the checkpoints of a stream it no longer knows by
	// that name (renamed in the configuration, or removed from it).
	//
	// A stream is never left out of the list, which would make it look never saved: a
	// definition that cannot be read fails the whole call with an error naming the stream,
	// as Load would — damaged ([ErrCorrupt]), or in an encoding this build does not know
	// ([ErrUnknownVersion]) — and so does a read failure of the storage itself. Nothing
	// stored is an empty list, not an error.
	Streams() ([]Stream, error)

	// Close releases the store. It blocks until in-flight calls finish. Calling Close again
	// returns nil.
	Close() error
}

// Stream is a stream's definition: what it reads and where it writes. Name identifies the
// stream in the store; the other fields are checked on every Load and Save.
type Stream struct {
	// Name is the stream's configured name: non-empty, at most [MaxStreamNameLen] bytes.
	Name string
	// Channel is the Aeron channel the stream's recordings were made on.
	Channel string
	// StreamID is the Aeron stream id.
	StreamID int32
	// Topic is the Pulsar topic the stream publishes to.
	Topic string
	// SchemaVersion is the version of the payload schema published to Topic.
	SchemaVersion uint32
}

// MaxStreamNameLen is the longest stream name, in bytes, a [Store] accepts.
const MaxStreamNameLen = 255

// Checkpoint is how far one recording of a stream has been published and acknowledged.
type Checkpoint struct {
	// RecordingID is the Aeron Archive recording id; it must not be negative.
	RecordingID int64
	// Position is the recording position up to which every record is acknowledged by
	// Pulsar. It must not be negative (recordings need not start at 0, lesson 8).
	Position int64
	// Completed reports that the recording stopped and all of it is acknowledged.
	Completed bool
	// UpdatedAtMs is when the checkpoint was taken, in Unix epoch milliseconds.
	UpdatedAtMs int64
	// StartMs and SessionID are the recording's start time (Unix epoch milliseconds) and
	// session as the archive listed them: what tells it from another recording under the
	// same id, should the archive's catalog be replaced. StartMs 0: not known (a
	// checkpoint written before ferry stored them).
	StartMs   int64
	SessionID int32
	// Seed marks where ferry took the recording on, before anything of it was
	// acknowledged (a later checkpoint of it is not a seed).
	Seed bool
	// LastRecord is the last record the checkpoint covers: it ends at Position, or before it
	// where only padding follows. The zero value: not known (a seed, a recording with no
	// record below Position, a checkpoint written before ferry stored it).
	LastRecord RecordMark
	// Forgotten marks a recording `ferry checkpoint forget` completed at Position after it
	// vanished from the archive (retention purged it) before ferry published all of it: the
	// operator accepted that its records after Position were never published. Only with
	// Completed.
	Forgotten bool
	// FromStart marks a seed at the recording's start as listed, where the configuration
	// takes it on from (not a start_position in it, nor a live end start_position latest
	// chose), of which no replay has sent anything yet: should the archive's start move back
	// meanwhile (segments attached again), ferry takes the recording on from there, and the
	// seed moves back with it (see [CheckAdvance]). Only with Seed.
	FromStart bool
	// Partitions is how many partitions the recording is routed by: its records go to
	// partition RecordingID modulo Partitions, as many as the topic had when the recording's
	// first producer routed a record. A restart after the topic's partitions grew keeps the
	// recording where it began: order, and the broker's deduplication of its producer, are
	// per partition. 0: not known (nothing of it sent yet, or written before ferry stored
	// it); the recording is then routed by the topic's partitions as they are.
	Partitions int32
	// ListedStop is the position the recording stopped at when a listing first showed it
	// stopped (or, extended, stopped again further on): a restart that lists it stopped
	// below it tells that the archive truncated it while ferry was down (TruncateRecording).
	// 0: not known (not listed stopped yet, or written before ferry stored it).
	ListedStop int64
	// ListedStopMs is the recording's stop time (Unix epoch milliseconds) as the listing
	// that showed it stopped at ListedStop had it: TruncateRecording keeps a recording's
	// stop time, so a stop below ListedStop at another time was recorded again (extended,
	// then stopped) after a truncation. 0: not known.
	ListedStopMs int64
	// ForgottenTo is the stop `ferry checkpoint forget` lowered ListedStop from: the
	// operator accepted that the archive no longer holds the recording's records from the
	// new stop up to here, which the topic may hold (sent before ferry persisted their
	// commit), so that a topic found to hold the recording up to here is no truncation to
	// stop on. 0: none.
	ForgottenTo int64
}

// RecordMark is one record of a recording as ferry published it: its start and end
// positions and the CRC-32C (Castagnoli) of its payload. A replay resumed from a checkpoint
// reads the record again and compares, so that a recording truncated below the checkpoint
// and extended again (its records there are not the ones published) is not taken up where
// ferry left the old one.
type RecordMark struct {
	Start, End int64
	Checksum   uint32
}

// Known reports whether m marks a record (the zero value does not).
func (m RecordMark) Known() bool { return m != RecordMark{} }

// SameRecording reports whether c was taken of the recording the archive lists with
// startMs and sessionID, as far as c knows: a checkpoint without StartMs matches any.
func (c Checkpoint) SameRecording(startMs int64, sessionID int32) bool {
	return c.StartMs == 0 || c.StartMs == startMs && c.SessionID == sessionID
}

// State is what [Store.Load] returns for one stream.
type State struct {
	// Stored reports whether anything is stored for the stream. False means the stream was
	// never saved or was reset; it never stands for a failed read, which is an error.
	Stored bool
	// Stream is the stored definition; the zero value when Stored is false.
	Stream Stream
	// Checkpoints holds one checkpoint per recording, ordered by RecordingID, completed
	// recordings included.
	Checkpoints []Checkpoint
}

// Validate reports whether s can be stored, wrapping [ErrInvalid] if not.
func (s Stream) Validate() error {
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	switch {
	case s.Channel == "":
		return invalidf("stream %q: channel is empty", s.Name)
	case s.Topic == "":
		return invalidf("stream %q: topic is empty", s.Name)
	}
	return nil
}

// Validate reports whether c can be stored, wrapping [ErrInvalid] if not.
func (c Checkpoint) Validate() error {
	switch {
	case c.RecordingID < 0:
		return invalidf("recording id %d is negative", c.RecordingID)
	case c.Position < 0:
		return invalidf("recording %d: position %d is negative", c.RecordingID, c.Position)
	case c.LastRecord.Known() && (c.LastRecord.Start < 0 || c.LastRecord.End <= c.LastRecord.Start || c.LastRecord.End > c.Position):
		return invalidf("recording %d: last record [%d, %d) is not a record at or below position %d", c.RecordingID, c.LastRecord.Start, c.LastRecord.End, c.Position)
	case c.Forgotten && !c.Completed:
		return invalidf("recording %d: forgotten but not completed", c.RecordingID)
	case c.FromStart && !c.Seed:
		return invalidf("recording %d: taken on from its start but not a seed", c.RecordingID)
	case c.Partitions < 0:
		return invalidf("recording %d: routed by %d partitions", c.RecordingID, c.Partitions)
	case c.ListedStop < 0:
		return invalidf("recording %d: listed stopped at %d", c.RecordingID, c.ListedStop)
	case c.ForgottenTo < 0:
		return invalidf("recording %d: forgotten up to %d", c.RecordingID, c.ForgottenTo)
	}
	return nil
}

// ValidateName reports whether name can name a stream, wrapping [ErrInvalid] if not.
func ValidateName(name string) error {
	switch {
	case name == "":
		return invalidf("stream name is empty")
	case len(name) > MaxStreamNameLen:
		return invalidf("stream name is %d bytes, more than %d", len(name), MaxStreamNameLen)
	}
	return nil
}

// CheckAdvance returns a [*PositionRegressedError] (File left empty) if next would move
// stored backwards, and nil otherwise: a lower position, or a completed recording not
// completed at its end. (A completed recording goes on only beyond its end: extended after it
// was completed.) A seed from the recording's start (FromStart) not completed may be followed
// by a seed below it: nothing of the recording was sent, and its start in the archive moved
// back. (Completed, it is done — an empty recording, or one forgotten — and stays so.)
// Implementations call it for every saved checkpoint.
func CheckAdvance(stream string, stored, next Checkpoint) error {
	if stored.Seed && stored.FromStart && !stored.Completed && next.Seed && !next.Completed && next.Position <= stored.Position {
		return nil
	}
	if next.Position < stored.Position || (stored.Completed && !next.Completed && next.Position == stored.Position) {
		return &PositionRegressedError{Stream: stream, Stored: stored, Attempted: next}
	}
	return nil
}
