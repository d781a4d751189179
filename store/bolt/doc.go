// Package bolt is the embedded [store.Store]: one bbolt file per ferry process, at the
// configured store.path (by default ./ferry-data/checkpoints.db).
//
// It owns the file and its layout:
//
//	meta/                      schema_version → uint32 big-endian (schemaVersion; a later
//	                           version adds a CRC-32C of it, see bolt.go)
//	    saved/<name>           → 1: stream <name> was saved (deleted by its reset)
//	streams/<name>/            one bucket per stream
//	    definition             → envelope 'D' (channel, stream id, topic, schema version)
//	    count                  → uint64 big-endian: how many recordings have a checkpoint
//	    recordings/<id>        → envelope 'C' (messages.Checkpoint); id uint64 big-endian
//
// Values are versioned, length-prefixed and checksummed envelopes (codec.go), so a truncated
// or damaged value is reported as [store.ErrCorrupt] naming the file, never read as absent.
// bbolt checksums its meta pages only; what damage to its other pages could make read as
// absent, or would misread, is checked too: at [Open], before bbolt reads the file, its tree
// of pages and its freelist (layout.go: element bounds, page ids, key order), a file
// written to that holds no schema, a saved stream whose bucket is gone, fewer recording
// checkpoints than were saved (they are never deleted one by one). saved/ and count were
// added within schema version 1: a file without them (written before) is read as before,
// and gets them at its next save.
// A file or value whose version this build does not know is refused with
// [store.ErrUnknownVersion] (a file at [Open]) only when a checksum covering the version
// checks out: version 1 leaves the version bytes outside its checksum, so later versions
// put them under one, and a version changed by damage is [store.ErrCorrupt].
//
// It never disables fsync: a Save that returned nil is on stable storage. It holds the
// file's exclusive lock from Open to Close; a second opener waits at most
// [Options.OpenTimeout] and then fails with [store.ErrLocked]. It starts no goroutines.
//
// Callers must call [Store.Close] exactly once they are done, and must not call its
// blocking methods from an actor's Receive (architecture rule 6): give the store one owner,
// the checkpointer.
package bolt
