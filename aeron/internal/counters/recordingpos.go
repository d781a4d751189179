package counters

import (
	"encoding/binary"
	"fmt"
)

// AnyArchive matches every archive in the recording-position lookups
// (Aeron's NULL_VALUE as an archive id).
const AnyArchive int64 = -1

// RecordingPosKey is the key of an archive recording-position ("rec-pos")
// counter: which recording the counter tracks, in which archive.
type RecordingPosKey struct {
	RecordingID    int64
	SessionID      int32  // session id of the recorded image
	SourceIdentity string // source identity of the recorded image
	ArchiveID      int64
}

// DecodeRecordingPosKey decodes a rec-pos key. key may be a counter's whole
// key field; bytes after the archive id are ignored. It returns an error
// matching [ErrCorrupt] if the source identity length is negative, longer
// than the archive ever writes, or runs past the key.
func DecodeRecordingPosKey(key []byte) (RecordingPosKey, error) {
	if len(key) < recordingPosKeyFixedLength {
		return RecordingPosKey{}, &CorruptError{ID: NullCounterID, Reason: fmt.Sprintf("rec-pos key of %d bytes, need at least %d", len(key), recordingPosKeyFixedLength)}
	}
	n, ok := sourceIdentityLength(key)
	if !ok || len(key) < recordingPosKeyFixedLength+n {
		return RecordingPosKey{}, &CorruptError{ID: NullCounterID, Reason: fmt.Sprintf("rec-pos source identity length %d does not fit a %d-byte key", int32(binary.LittleEndian.Uint32(key[RecordingPosKeySourceIdentityLengthOffset:])), len(key))}
	}
	return RecordingPosKey{
		RecordingID:    int64(binary.LittleEndian.Uint64(key[RecordingPosKeyRecordingIDOffset:])),
		SessionID:      int32(binary.LittleEndian.Uint32(key[RecordingPosKeySessionIDOffset:])),
		SourceIdentity: string(key[RecordingPosKeySourceIdentityOffset : RecordingPosKeySourceIdentityOffset+n]),
		ArchiveID:      int64(binary.LittleEndian.Uint64(key[RecordingPosKeySourceIdentityOffset+n:])),
	}, nil
}

// Append appends the key's encoding to dst, as the archive writes it:
// the source identity is truncated to [RecordingPosKeyMaxSourceIdentityLength]
// bytes. Tests and in-process fakes of the archive use it.
func (k RecordingPosKey) Append(dst []byte) []byte {
	id := k.SourceIdentity[:min(len(k.SourceIdentity), RecordingPosKeyMaxSourceIdentityLength)]
	dst = binary.LittleEndian.AppendUint64(dst, uint64(k.RecordingID))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(k.SessionID))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(id)))
	dst = append(dst, id...)
	return binary.LittleEndian.AppendUint64(dst, uint64(k.ArchiveID))
}

// FindRecordingPosition returns the rec-pos counter of the recording with
// the given id in the given archive (or [AnyArchive]), and whether it
// exists. It exists while the archive is recording; its value is the
// recorded position.
func (r *Reader) FindRecordingPosition(recordingID, archiveID int64) (Counter, bool) {
	return r.Find(TypeRecordingPosition, func(key []byte) bool {
		return int64(binary.LittleEndian.Uint64(key[RecordingPosKeyRecordingIDOffset:])) == recordingID &&
			archiveMatches(key, archiveID)
	})
}

// FindRecordingPositionBySession returns the rec-pos counter recording the
// image with the given session id in the given archive (or [AnyArchive]),
// and whether it exists: how a client finds the recording it has just
// started.
func (r *Reader) FindRecordingPositionBySession(sessionID int32, archiveID int64) (Counter, bool) {
	return r.Find(TypeRecordingPosition, func(key []byte) bool {
		return int32(binary.LittleEndian.Uint32(key[RecordingPosKeySessionIDOffset:])) == sessionID &&
			archiveMatches(key, archiveID)
	})
}

// IsRecordingPosition reports whether c is (still) the rec-pos counter of
// recordingID: allocated, of the rec-pos type, with that recording id. The
// archive frees the counter when the recording stops, and the id may then
// be reused.
func (c Counter) IsRecordingPosition(recordingID int64) bool {
	return c.State() == StateAllocated &&
		c.TypeID() == TypeRecordingPosition &&
		int64(binary.LittleEndian.Uint64(c.key()[RecordingPosKeyRecordingIDOffset:])) == recordingID
}

// archiveMatches reports whether a rec-pos key (a whole key field) belongs
// to archiveID. A key whose source identity length is out of range matches
// only AnyArchive: its archive id cannot be located.
func archiveMatches(key []byte, archiveID int64) bool {
	if archiveID == AnyArchive {
		return true
	}
	n, ok := sourceIdentityLength(key)
	if !ok {
		return false
	}
	return int64(binary.LittleEndian.Uint64(key[RecordingPosKeySourceIdentityOffset+n:])) == archiveID
}

// sourceIdentityLength returns the source identity length L of a rec-pos
// key if 0 <= L <= RecordingPosKeyMaxSourceIdentityLength. key must hold at
// least recordingPosKeyFixedLength bytes.
func sourceIdentityLength(key []byte) (int, bool) {
	n := int32(binary.LittleEndian.Uint32(key[RecordingPosKeySourceIdentityLengthOffset:]))
	if n < 0 || n > RecordingPosKeyMaxSourceIdentityLength {
		return 0, false
	}
	return int(n), true
}
