package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/ferry-bridge/ferry/store"
)

// DefaultOpenTimeout is how long [Open] waits for another process to release the file.
const DefaultOpenTimeout = 5 * time.Second

// schemaVersion is the file layout version this build reads and writes; firstSchemaVersion
// is the first any ferry wrote: one below it is damage, not another release's file.
//
// Version 1 is stored as 4 bytes (big-endian) without a checksum, so one flipped bit would
// read as another version, and every Open, read-only ones too, would refuse the file as a
// newer ferry's. So every later version is stored as newerSchemaLen bytes: the version, then
// a CRC-32C of those 4 bytes. 4 bytes that do not say 1 are damage; a newer ferry's file is
// one whose 8 bytes check out.
const (
	schemaVersion      uint32 = 1
	firstSchemaVersion uint32 = 1
	schemaLen                 = 4
	newerSchemaLen            = 8
)

var (
	metaBucket       = []byte("meta")
	schemaKey        = []byte("schema_version")
	streamsBucket    = []byte("streams")
	definitionKey    = []byte("definition")
	recordingsBucket = []byte("recordings")
	// countKey holds how many recording checkpoints a stream's bucket has had: they are
	// never deleted one by one, so fewer found than that is damage, not a smaller state.
	countKey = []byte("count")
	// savedPrefix+name in the meta bucket records that stream name was saved: its bucket
	// gone without a reset is damage, not a stream never saved.
	savedPrefix = "saved/"
)

// Options tunes [Open]. The zero value is ready to use.
type Options struct {
	// OpenTimeout bounds the wait for the file lock held by another process; zero means
	// [DefaultOpenTimeout].
	OpenTimeout time.Duration
	// ReadOnly opens an existing file for reading only, for commands that only look: nothing
	// is written to it (not even a transaction of their own), so that a copy on a read-only
	// mount can be read too. Its lock is shared with other readers; a writer (a running
	// ferry) still excludes it. Saves and resets fail.
	ReadOnly bool
}

// Store is a [store.Store] backed by one bbolt file. It is safe for concurrent use; writes
// are serialized by bbolt.
type Store struct {
	db   *bbolt.DB
	path string
	// file is the file opened at path, to tell when the path names another one or none.
	file os.FileInfo
	// rescued is where the store wrote what it holds once its file was deleted or replaced
	// (empty: not yet, or it could not); rescueMu serializes the streams' attempts.
	rescueMu sync.Mutex
	rescued  string
	// deleteBucket is Reset's delete: bbolt's, which a test replaces with one that
	// deletes nothing, to show that the read-back catches it (lesson 15).
	deleteBucket func(parent *bbolt.Bucket, name []byte) error
	// closed is set by Close: checkFile then says the store is closed, as bbolt would, not
	// that the file is gone.
	closed atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open opens or creates the checkpoint file at path, creating its directory if needed.
// opts may be nil.
//
// It fails with an error wrapping [store.ErrLocked] when another process holds the file
// past the timeout, [store.ErrCorrupt] when bbolt cannot read the file or the layout is
// damaged, and [store.ErrUnknownVersion] for a schema version this build does not know;
// each names the file and what to do.
func Open(path string, opts *Options) (*Store, error) {
	timeout, readOnly := DefaultOpenTimeout, opts != nil && opts.ReadOnly
	if opts != nil && opts.OpenTimeout > 0 {
		timeout = opts.OpenTimeout
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	var newDirs []string
	if !readOnly {
		var err error
		if newDirs, err = mkdirAll(filepath.Dir(path)); err != nil {
			return nil, fmt.Errorf("open checkpoint store %s: %w", path, err)
		}
	}
	db, txid, err := openDB(path, timeout, readOnly)
	if err != nil {
		return nil, err
	}
	file, err := os.Stat(path)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("open checkpoint store %s: %w", path, err), db.Close())
	}
	s := &Store{db: db, path: path, file: file, deleteBucket: (*bbolt.Bucket).DeleteBucket}
	// Checked in a read transaction; written only into a file nothing was committed to.
	// (A write transaction's commit rewrites the freelist, which opening need not.)
	fresh := txid <= boltNewTxid
	err = s.view(func(tx *bbolt.Tx) error { return s.checkSchema(tx, fresh) })
	if errors.Is(err, errNoSchema) {
		err = nil
		if !readOnly {
			err = s.update(s.writeSchema)
		}
	}
	if err == nil && !readOnly {
		// The file's name, to stable storage with its contents: without it, a power loss
		// could leave the directory without the file, and the next start would take a new
		// store for the one checkpoints were saved to. At every open that may write, not
		// only the one that created the file: that one may have been killed before it
		// synced, and this one then saves into a file whose name is not yet durable. So
		// too each directory created for it, in its parent, up to the first that existed:
		// a new directory whose own entry is lost takes the file with it.
		err = syncDir(filepath.Dir(path))
		for _, dir := range newDirs {
			if err == nil {
				err = syncDir(filepath.Dir(dir))
			}
		}
	}
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return s, nil
}

// mkdirAll creates directory dir and any missing parents, as os.MkdirAll, and returns the
// directories it created, dir first.
func mkdirAll(dir string) (created []string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) || d == filepath.Dir(d) {
			break // exists (or cannot be told: MkdirAll says), or the root
		}
		created = append(created, d)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return created, nil
}

// syncDir makes the entries of directory dir durable. A test replaces it to see which
// directories are synced.
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// errNoSchema is checkSchema's answer for a file nothing was committed to: a new store.
var errNoSchema = errors.New("no schema yet")

func openDB(path string, timeout time.Duration, readOnly bool) (db *bbolt.DB, txid uint64, err error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		// Read only, bbolt takes a directory for an invalid database: not damage, a path.
		return nil, 0, fmt.Errorf("open checkpoint store %s: it is a directory: store.path names the checkpoint file itself (%s, say)",
			path, filepath.Join(path, "checkpoints.db"))
	}
	txid, err = checkLayout(path, timeout, readOnly)
	if errors.Is(err, errLockTimeout) {
		err = berrors.ErrTimeout // as bbolt's own wait for the lock ends, below
	}
	if err != nil && !errors.Is(err, berrors.ErrTimeout) {
		return nil, 0, err
	}
	defer recoverCorrupt(path, &err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if err == nil {
		db, err = bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout, ReadOnly: readOnly})
	}
	switch {
	case err == nil:
		return db, txid, nil
	case errors.Is(err, berrors.ErrTimeout):
		return nil, 0, fmt.Errorf("open checkpoint store %s: %w: its lock was not released within %v; "+
			"stop the other ferry using this file, or give this one its own store.path (bbolt: %w)",
			path, store.ErrLocked, timeout, err)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping),
		strings.HasPrefix(err.Error(), "file size too small"): // v1.4.3 has no error value for it
		return nil, 0, &store.CorruptError{File: path, Reason: "bbolt: " + err.Error()}
	default:
		return nil, 0, fmt.Errorf("open checkpoint store %s: %w", path, err)
	}
}

// checkSchema checks the schema version and the streams bucket of the file. A file without
// either is new (errNoSchema) only if fresh — nothing was ever committed to it (bbolt
// created it and a start ended before it wrote the schema; or read only, a file ferry
// created and wrote nothing to yet). Otherwise it is damaged (a page that held them lost
// its contents) or not a ferry store: taken as new, every stream would start again from its
// configured start position (lesson 13).
func (s *Store) checkSchema(tx *bbolt.Tx, fresh bool) error {
	meta := tx.Bucket(metaBucket)
	if meta == nil {
		switch {
		case tx.Bucket(streamsBucket) != nil:
			return &store.CorruptError{File: s.path, Reason: "streams are stored but the schema version is missing"}
		case !fresh:
			return &store.CorruptError{File: s.path, Reason: "the schema version is missing from a file that was written to: " +
				"it is damaged, or it is not a ferry checkpoint store (is store.path right?)"}
		}
		return errNoSchema
	}
	v := meta.Get(schemaKey)
	if len(v) != schemaLen && len(v) != newerSchemaLen {
		return &store.CorruptError{File: s.path, Reason: fmt.Sprintf("schema version is %d bytes, want %d", len(v), schemaLen)}
	}
	version := binary.BigEndian.Uint32(v)
	switch {
	case version < firstSchemaVersion:
		// No ferry wrote a version below the first: damage, not a release to look for.
		return &store.CorruptError{File: s.path, Reason: fmt.Sprintf("schema version %d, which no ferry writes", version)}
	case len(v) == newerSchemaLen && binary.BigEndian.Uint32(v[schemaLen:]) != crc32.Checksum(v[:schemaLen], castagnoli):
		return &store.CorruptError{File: s.path, Reason: fmt.Sprintf("schema version %d with a checksum mismatch: damaged", version)}
	case len(v) == newerSchemaLen && version > schemaVersion:
		return &store.UnknownVersionError{File: s.path, Version: version, Supported: schemaVersion}
	case len(v) == newerSchemaLen:
		return &store.CorruptError{File: s.path, Reason: fmt.Sprintf("schema version %d stored with a checksum, as no ferry stores that version", version)}
	case version != schemaVersion:
		return &store.CorruptError{File: s.path, Reason: fmt.Sprintf("schema version %d without a checksum, as only version %d is stored: "+
			"the version is damaged (a later version is stored with a checksum)", version, schemaVersion)}
	case tx.Bucket(streamsBucket) == nil:
		return &store.CorruptError{File: s.path, Reason: "the streams bucket is missing"}
	}
	return nil
}

// writeSchema writes the schema version and the streams bucket into a new file.
func (s *Store) writeSchema(tx *bbolt.Tx) error {
	var v [schemaLen]byte
	binary.BigEndian.PutUint32(v[:], schemaVersion)
	meta, err := tx.CreateBucket(metaBucket)
	if err == nil {
		err = meta.Put(schemaKey, v[:])
	}
	if err == nil {
		_, err = tx.CreateBucket(streamsBucket)
	}
	return err
}

// Path returns the absolute path of the file.
func (s *Store) Path() string { return s.path }

// Load implements [store.Store.Load].
func (s *Store) Load(def store.Stream) (store.State, error) {
	if err := def.Validate(); err != nil {
		return store.State{}, err
	}
	var st store.State
	err := s.view(func(tx *bbolt.Tx) error {
		sb, err := s.streamBucket(tx, def.Name)
		if err != nil {
			return err
		}
		if sb == nil {
			if meta := tx.Bucket(metaBucket); meta != nil && meta.Get([]byte(savedPrefix+def.Name)) != nil {
				return s.lostStream(def.Name)
			}
			return nil
		}
		if err := s.checkVersions(sb, def.Name); err != nil {
			return err
		}
		if err := s.checkDefinition(sb, def); err != nil {
			return err
		}
		recs := sb.Bucket(recordingsBucket)
		if recs == nil {
			return &store.CorruptError{File: s.path, Stream: def.Name, Key: "recordings", Reason: "bucket missing"}
		}
		st = store.State{Stored: true, Stream: def}
		err = recs.ForEach(func(k, v []byte) error {
			if len(k) != 8 || v == nil {
				return &store.CorruptError{File: s.path, Stream: def.Name, Key: keyText(k), Reason: "not a recording checkpoint"}
			}
			id := int64(binary.BigEndian.Uint64(k))
			c, err := decodeCheckpoint(id, v)
			if err != nil {
				return s.decodeErr(def.Name, fmt.Sprintf("recording %d", id), err)
			}
			st.Checkpoints = append(st.Checkpoints, c)
			return nil
		})
		if err != nil {
			return err
		}
		want, kept, err := s.count(sb, def.Name)
		if err == nil && kept && uint64(len(st.Checkpoints)) < want {
			err = &store.CorruptError{File: s.path, Stream: def.Name, Key: "recordings",
				Reason: fmt.Sprintf("%d recording checkpoints found, %d were saved (checkpoints are never deleted one by one)", len(st.Checkpoints), want)}
		}
		return err
	})
	if err != nil {
		return store.State{}, err
	}
	return st, nil
}

// lostStream is the damage of stream name's bucket gone from a file that records the
// stream as saved.
func (s *Store) lostStream(name string) error {
	return &store.CorruptError{File: s.path, Stream: name, Key: "stream bucket",
		Reason: "missing, although the file records the stream as saved (damaged; or reset by a ferry older than this one: run the reset again with this one)"}
}

// Streams implements [store.Store.Streams]. It reads each stream's definition only, as
// Load does before the checkpoints (an encoding a newer ferry wrote is reported as such),
// and what tells damage from absence: a stream's bucket replaced by a value, or gone while
// the file records the stream as saved.
func (s *Store) Streams() ([]store.Stream, error) {
	var out []store.Stream
	err := s.view(func(tx *bbolt.Tx) error {
		streams := tx.Bucket(streamsBucket)
		if streams == nil {
			return nil // read only, a file with nothing in it (initSchema)
		}
		err := streams.ForEach(func(k, v []byte) error {
			name := string(k)
			if store.ValidateName(name) != nil {
				// No Save stores such a name: a damaged key, which no reset could name.
				return &store.CorruptError{File: s.path, Reason: fmt.Sprintf("streams bucket: %s is not a stream name", keyText(k))}
			}
			if v != nil {
				return &store.CorruptError{File: s.path, Stream: name, Key: "stream bucket", Reason: "a value where the bucket belongs"}
			}
			sb := streams.Bucket(k)
			raw := sb.Get(definitionKey)
			if raw == nil {
				return &store.CorruptError{File: s.path, Stream: name, Key: "definition", Reason: "missing"}
			}
			def, err := decodeDefinition(name, raw)
			if err != nil {
				return s.decodeErr(name, "definition", err)
			}
			out = append(out, def)
			return nil
		})
		if err != nil {
			return err
		}
		meta := tx.Bucket(metaBucket)
		if meta == nil {
			return nil
		}
		c := meta.Cursor()
		for k, _ := c.Seek([]byte(savedPrefix)); k != nil && strings.HasPrefix(string(k), savedPrefix); k, _ = c.Next() {
			if name := strings.TrimPrefix(string(k), savedPrefix); streams.Bucket([]byte(name)) == nil {
				return s.lostStream(name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// checkFile fails with [store.ErrReplaced] unless the path still names the file the store
// opened: bbolt goes on writing to a file deleted or renamed under it, and a checkpoint
// written there would not be read at the next start. A closed store fails with
// [store.ErrClosed] first, whatever became of its file.
func (s *Store) checkFile() error {
	if s.closed.Load() {
		return fmt.Errorf("checkpoint store %s: %w", s.path, store.ErrClosed)
	}
	now, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("checkpoint store %s: %w", s.path, err)
	case os.SameFile(now, s.file):
		return nil
	}
	what := "deleted"
	if err == nil {
		what = "replaced by another file"
	}
	return fmt.Errorf("checkpoint store %s: %w: the file ferry opened was %s while ferry ran, so what it writes now would not be read at the next start; %s; "+
		"started without it, every stream publishes again from its start_position",
		s.path, store.ErrReplaced, what, s.rescue())
}

// rescue writes what the store holds — the checkpoints the deleted or replaced file has and
// no other file does — beside its path, once, and says what to do with the copy.
func (s *Store) rescue() string {
	s.rescueMu.Lock()
	defer s.rescueMu.Unlock()
	if s.rescued == "" {
		dst := fmt.Sprintf("%s.rescued-%d", s.path, time.Now().UnixMilli())
		if err := s.writeCopy(dst); err != nil {
			return fmt.Sprintf("ferry could not save a copy of what it holds (%v): find out what removed the file and put it back from a backup before starting ferry again", err)
		}
		s.rescued = dst
	}
	return fmt.Sprintf("ferry saved what it holds to %s: stop ferry, move that file to %s and start ferry again", s.rescued, s.path)
}

// writeCopy writes a consistent copy of the store (one read transaction) to dst: into a
// temporary file, synced, then renamed, so that dst is whole or absent.
func (s *Store) writeCopy(dst string) (err error) {
	f, err := os.CreateTemp(filepath.Dir(dst), filepath.Base(dst)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if err = s.view(func(tx *bbolt.Tx) error { _, err := tx.WriteTo(f); return err }); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), dst); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dst)) // the rename itself, to stable storage
}

// Save implements [store.Store.Save]. A stream the file records as saved whose bucket is
// gone fails with [store.ErrCorrupt], as Load does: it is not saved anew.
func (s *Store) Save(def store.Stream, cps []store.Checkpoint) error {
	if err := def.Validate(); err != nil {
		return err
	}
	for _, c := range cps {
		if err := c.Validate(); err != nil {
			return fmt.Errorf("stream %q: %w", def.Name, err)
		}
	}
	if err := s.checkFile(); err != nil {
		return err
	}
	return s.update(func(tx *bbolt.Tx) error {
		sb, err := s.streamBucket(tx, def.Name)
		if err != nil {
			return err
		}
		if sb == nil {
			if tx.Bucket(metaBucket).Get([]byte(savedPrefix+def.Name)) != nil {
				// Not a first save: a bucket created here would hold this batch alone, and
				// Load would take it for all the stream has.
				return s.lostStream(def.Name)
			}
			if sb, err = tx.Bucket(streamsBucket).CreateBucket([]byte(def.Name)); err != nil {
				return err
			}
			if err := sb.Put(definitionKey, encodeDefinition(def)); err != nil {
				return err
			}
			if _, err := sb.CreateBucket(recordingsBucket); err != nil {
				return err
			}
		} else if err := s.checkDefinition(sb, def); err != nil {
			return err
		}
		recs := sb.Bucket(recordingsBucket)
		if recs == nil {
			return &store.CorruptError{File: s.path, Stream: def.Name, Key: "recordings", Reason: "bucket missing"}
		}
		n, kept, err := s.count(sb, def.Name)
		if err != nil {
			return err
		}
		if !kept { // a file written before the count was kept: count what is there
			n = 0
			_ = recs.ForEach(func(_, _ []byte) error { n++; return nil })
		}
		for _, c := range cps {
			added, err := s.put(recs, def.Name, c)
			if err != nil {
				return err
			}
			if added {
				n++
			}
		}
		var v [8]byte
		binary.BigEndian.PutUint64(v[:], n)
		if err := sb.Put(countKey, v[:]); err != nil {
			return err
		}
		if saved := []byte(savedPrefix + def.Name); tx.Bucket(metaBucket).Get(saved) == nil {
			return tx.Bucket(metaBucket).Put(saved, []byte{1})
		}
		return nil
	})
}

// count returns how many recording checkpoints stream's bucket has had, and whether the
// file keeps that count (one written before it did does not).
func (s *Store) count(sb *bbolt.Bucket, stream string) (n uint64, kept bool, err error) {
	v := sb.Get(countKey)
	switch {
	case v == nil:
		return 0, false, nil
	case len(v) != 8:
		return 0, false, &store.CorruptError{File: s.path, Stream: stream, Key: "count", Reason: fmt.Sprintf("%d bytes, want 8", len(v))}
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// keyText is a key for an error message: in hex, at most its first 32 bytes (a damaged
// page can make bbolt hand out a key of megabytes).
func keyText(k []byte) string {
	if len(k) > 32 {
		return fmt.Sprintf("key %x… (%d bytes)", k[:32], len(k))
	}
	return fmt.Sprintf("key %x", k)
}

// put stores checkpoint c and reports whether its recording had none before.
func (s *Store) put(recs *bbolt.Bucket, stream string, c store.Checkpoint) (added bool, err error) {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], uint64(c.RecordingID))
	old := recs.Get(k[:])
	if old != nil {
		stored, err := decodeCheckpoint(c.RecordingID, old)
		if err != nil {
			return false, s.decodeErr(stream, fmt.Sprintf("recording %d", c.RecordingID), err)
		}
		if err := store.CheckAdvance(stream, stored, c); err != nil {
			var pe *store.PositionRegressedError
			if errors.As(err, &pe) {
				pe.File = s.path
			}
			return false, err
		}
	}
	v, err := encodeCheckpoint(c)
	if err != nil {
		return false, err
	}
	return old == nil, recs.Put(k[:], v)
}

// Reset implements [store.Store.Reset].
func (s *Store) Reset(name string) error {
	if err := store.ValidateName(name); err != nil {
		return err
	}
	if err := s.checkFile(); err != nil {
		// Deleted from the file ferry opened, the stream would still be in the one at path.
		return fmt.Errorf("reset stream %q: %w", name, err)
	}
	err := s.update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(metaBucket).Delete([]byte(savedPrefix + name)); err != nil {
			return err
		}
		streams := tx.Bucket(streamsBucket)
		if streams.Bucket([]byte(name)) == nil {
			// Nothing, or damage: a value where the stream's bucket belongs (Load calls it
			// corrupt and names this reset as the way out).
			return streams.Delete([]byte(name))
		}
		return s.deleteBucket(streams, []byte(name))
	})
	if err != nil {
		return fmt.Errorf("reset stream %q: %w", name, err)
	}
	return s.view(func(tx *bbolt.Tx) error { return s.verifyReset(tx, name) })
}

// verifyReset fails unless nothing of stream name is left (lesson 15).
func (s *Store) verifyReset(tx *bbolt.Tx, name string) error {
	streams := tx.Bucket(streamsBucket)
	if streams.Bucket([]byte(name)) != nil || streams.Get([]byte(name)) != nil || tx.Bucket(metaBucket).Get([]byte(savedPrefix+name)) != nil {
		return fmt.Errorf("checkpoint store %s: %w: stream %q is still stored after deleting it; "+
			"do not start the stream (it would resume, not restart): check the file's permissions and disk, "+
			"then run `%s` again", s.path, store.ErrResetFailed, name, store.ResetCommand(name))
	}
	return nil
}

// Close implements [store.Store.Close].
func (s *Store) Close() error {
	s.closed.Store(true)
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close checkpoint store %s: %w", s.path, err)
	}
	return nil
}

// streamBucket returns the bucket of stream name, or nil if nothing is stored for it.
func (s *Store) streamBucket(tx *bbolt.Tx, name string) (*bbolt.Bucket, error) {
	streams := tx.Bucket(streamsBucket)
	if streams == nil {
		return nil, nil // read only, a file with nothing in it (initSchema)
	}
	if sb := streams.Bucket([]byte(name)); sb != nil {
		return sb, nil
	}
	if streams.Get([]byte(name)) != nil {
		return nil, &store.CorruptError{File: s.path, Stream: name, Key: "stream bucket", Reason: "a value where the bucket belongs"}
	}
	return nil, nil
}

func (s *Store) checkDefinition(sb *bbolt.Bucket, def store.Stream) error {
	v := sb.Get(definitionKey)
	if v == nil {
		return &store.CorruptError{File: s.path, Stream: def.Name, Key: "definition", Reason: "missing"}
	}
	stored, err := decodeDefinition(def.Name, v)
	if err != nil {
		return s.decodeErr(def.Name, "definition", err)
	}
	if stored != def {
		return &store.StreamChangedError{File: s.path, Stored: stored, Configured: def}
	}
	return nil
}

// checkVersions fails with a [store.UnknownVersionError] if any value stored for the
// stream is in an encoding version this build does not read. That comes first: a newer
// ferry wrote it, and this build cannot judge what it holds — a definition that only looks
// changed, say, whose advised reset would delete the newer ferry's checkpoints (`ferry
// checkpoint reset` leaves such data alone unless forced). A value is taken for a newer
// ferry's only as open takes it, its checksum covering the version checked: a version byte
// raised by damage is left to the decode that follows, which reports it corrupt.
func (s *Store) checkVersions(sb *bbolt.Bucket, stream string) error {
	if _, err := decodeDefinition(stream, sb.Get(definitionKey)); newer(err) {
		return s.decodeErr(stream, "definition", err)
	}
	recs := sb.Bucket(recordingsBucket)
	if recs == nil {
		return nil // checkDefinition or Load says what is missing
	}
	return recs.ForEach(func(k, v []byte) error {
		if len(k) != 8 {
			return nil
		}
		id := int64(binary.BigEndian.Uint64(k))
		if _, err := decodeCheckpoint(id, v); newer(err) {
			return s.decodeErr(stream, fmt.Sprintf("recording %d", id), err)
		}
		return nil
	})
}

// newer reports whether err, a decode's, says a newer ferry wrote the value: an encoding
// version this build does not read, or a field it does not know.
func newer(err error) bool {
	var v errVersion
	var f errNewerField
	return errors.As(err, &v) || errors.As(err, &f)
}

// decodeErr names the file, stream and key of a decode failure.
func (s *Store) decodeErr(stream, key string, err error) error {
	var v errVersion
	if errors.As(err, &v) {
		return &store.UnknownVersionError{File: s.path, Stream: stream, Key: key, Version: uint32(v), Supported: uint32(valueVersion)}
	}
	var f errNewerField
	if errors.As(err, &f) {
		return &store.UnknownVersionError{File: s.path, Stream: stream, Key: key, Version: uint32(valueVersion), Supported: uint32(valueVersion), Field: int32(f)}
	}
	return &store.CorruptError{File: s.path, Stream: stream, Key: key, Reason: err.Error()}
}

func (s *Store) view(fn func(*bbolt.Tx) error) (err error) {
	defer recoverCorrupt(s.path, &err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return s.txErr(s.db.View(fn))
}

func (s *Store) update(fn func(*bbolt.Tx) error) (err error) {
	defer recoverCorrupt(s.path, &err)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return s.txErr(s.db.Update(fn))
}

// recoverCorrupt turns a bbolt panic on damaged pages ("assertion failed", or a fault in
// the mapped file, which SetPanicOnFault makes a panic) into an error naming the file.
// bbolt rolls a transaction back before the panic reaches here. A panic inside bbolt.Open
// leaves the file's descriptor and lock to the garbage collector; the store is not usable
// either way.
func recoverCorrupt(path string, err *error) {
	if r := recover(); r != nil {
		*err = &store.CorruptError{File: path, Reason: fmt.Sprintf("bbolt: %v", r)}
	}
}

func (s *Store) txErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, berrors.ErrDatabaseNotOpen):
		return fmt.Errorf("checkpoint store %s: %w", s.path, store.ErrClosed)
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrUnknownVersion),
		errors.Is(err, store.ErrStreamChanged), errors.Is(err, store.ErrPositionRegressed):
		return err // already names the file
	default:
		return fmt.Errorf("checkpoint store %s: %w", s.path, err)
	}
}
