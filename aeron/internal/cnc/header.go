package cnc

import (
	"fmt"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Header is a snapshot of the CnC header. The driver never changes it after
// publishing the version.
type Header struct {
	Version SemanticVersion
	// Section lengths in bytes, indexed by [Section].
	SectionLengths [sectionCount]int32
	// ClientLivenessTimeout is how long the driver waits for a client's
	// heartbeat before timing it out; it is also the client's
	// inter-service timeout.
	ClientLivenessTimeout time.Duration
	// DriverStartTime is when the driver started (millisecond precision).
	DriverStartTime time.Time
	// DriverPID is the driver's process id.
	DriverPID int64
}

// SectionOffset returns the offset of section s in the file: the end of
// the header plus the lengths of the sections before it.
func (h Header) SectionOffset(s Section) int64 {
	if s < 0 || s > sectionCount {
		panic(fmt.Sprintf("assertion failed: cnc: no section %v", s))
	}
	offset := int64(EndOfMetadataOffset)
	for prev := range s {
		offset += int64(h.SectionLengths[prev])
	}
	return offset
}

// RequiredLength returns how long the file must be to hold the header and
// every section.
func (h Header) RequiredLength() int64 {
	return h.SectionOffset(sectionCount)
}

// ReadHeader reads and validates the header at the start of b, which must
// be 8-byte aligned (a mapping always is). source names b in errors (the
// file path). It returns an error wrapping [ErrNotReady] if b is shorter
// than the header or the version is still 0, a [*VersionMismatchError] if
// the version is incompatible with [CNCVersion], and one wrapping
// [ErrCorrupt] if a section length is negative. It does not check that
// the sections fit in b (see [Wrap]).
func ReadHeader(b shm.Buffer, source string) (Header, error) {
	if b.Len() < MetadataLength {
		return Header{}, fmt.Errorf("%w: %s is %d bytes, shorter than the %d-byte header", ErrNotReady, source, b.Len(), MetadataLength)
	}
	if err := b.CheckAlignment(sizeofInt64); err != nil {
		return Header{}, fmt.Errorf("cnc: %s: %w", source, err)
	}
	// Acquire: pairs with the driver's release store of the version, the
	// last write of its initialisation, so every other header field (and
	// the initial state of every section) is visible once it is non-zero.
	version := SemanticVersion(b.LoadInt32(VersionOffset))
	if version == 0 {
		return Header{}, fmt.Errorf("%w: %s has version 0", ErrNotReady, source)
	}
	if !Compatible(version, CNCVersion) {
		return Header{}, &VersionMismatchError{Source: source, File: version, Client: CNCVersion}
	}

	h := Header{
		Version:               version,
		ClientLivenessTimeout: time.Duration(b.GetInt64(ClientLivenessTimeoutOffset)),
		DriverStartTime:       time.UnixMilli(b.GetInt64(StartTimestampOffset)),
		DriverPID:             b.GetInt64(PIDOffset),
	}
	for s := range Section(sectionCount) {
		n := b.GetInt32(s.lengthOffset())
		if n < 0 {
			return Header{}, fmt.Errorf("%w: %s declares a %v of %d bytes", ErrCorrupt, source, s, n)
		}
		h.SectionLengths[s] = n
	}
	return h, nil
}
