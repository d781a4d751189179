package cnc

import (
	"errors"
	"fmt"
)

// ErrDriverNotFound reports that cnc.dat does not exist: no media driver
// has run with this Aeron directory. Start the media driver, or point the
// client at the driver's aeron.dir. [Wait] retries it until its deadline.
var ErrDriverNotFound = errors.New("cnc: no media driver found (cnc.dat does not exist; start the media driver or check aeron.dir)")

// ErrNotReady reports that cnc.dat exists but the driver has not finished
// initialising it (file empty or shorter than the header, or version still
// 0). [Wait] retries it until its deadline.
var ErrNotReady = errors.New("cnc: media driver not ready (cnc.dat is still being initialised)")

// ErrTruncated reports that cnc.dat is shorter than its header says. Aeron
// clients unmap and retry, so [Wait] retries it until its deadline; if it
// persists, the file is damaged: stop the driver and delete aeron.dir.
var ErrTruncated = errors.New("cnc: cnc.dat is shorter than its header declares")

// ErrDriverInactive reports that the driver's heartbeat is missing, marks a
// shut-down driver, or is older than the driver timeout: the cnc.dat is
// left over from a driver that exited, or the driver is hung. Start or
// restart the media driver. [Wait] retries it until its deadline; for a
// connected client it means the driver is dead.
var ErrDriverInactive = errors.New("cnc: media driver inactive (no recent heartbeat; start or restart the media driver)")

// ErrVersionMismatch reports a CnC layout this client cannot use. It is
// never retried. Every *VersionMismatchError matches it with errors.Is.
var ErrVersionMismatch = errors.New("cnc: incompatible CnC version")

// ErrCorrupt reports a header that no correct driver writes (negative
// section lengths, a to-driver section that is not a ring buffer). It is
// never retried: stop the driver and delete aeron.dir.
var ErrCorrupt = errors.New("cnc: corrupt cnc.dat")

// ErrInvalidWaitConfig reports a [WaitConfig] with a missing or
// non-positive duration. It is a bug in the caller.
var ErrInvalidWaitConfig = errors.New("cnc: invalid wait configuration")

// VersionMismatchError names the CnC version found and the one this client
// implements. It unwraps to [ErrVersionMismatch].
type VersionMismatchError struct {
	Source string          // the file (or buffer) read
	File   SemanticVersion // version in the file
	Client SemanticVersion // version this client implements, CNCVersion
}

// Error implements error.
func (e *VersionMismatchError) Error() string {
	return fmt.Sprintf("cnc: %s has CnC version %v, incompatible with this client's %v "+
		"(needs major %d and minor >= %d): run a media driver whose CnC layout matches Aeron 1.47",
		e.Source, e.File, e.Client, e.Client.Major(), e.Client.Minor())
}

// Unwrap returns [ErrVersionMismatch].
func (e *VersionMismatchError) Unwrap() error { return ErrVersionMismatch }
