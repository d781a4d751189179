package cnc

import "fmt"

// SemanticVersion is Agrona's packed semantic version:
// major << 16 | minor << 8 | patch, one byte each.
type SemanticVersion int32

const (
	majorShift    = 16
	minorShift    = 8
	componentMask = 0xFF
)

// CNCVersion is the CnC layout version this client implements: 0.2.0,
// stored as 512 (Aeron 1.47.3 CncFileDescriptor.CNC_VERSION).
const CNCVersion SemanticVersion = 0<<majorShift | 2<<minorShift | 0

// NewSemanticVersion packs a version.
func NewSemanticVersion(major, minor, patch uint8) SemanticVersion {
	return SemanticVersion(int32(major)<<majorShift | int32(minor)<<minorShift | int32(patch))
}

// Major returns the major component.
func (v SemanticVersion) Major() uint8 { return uint8(v >> majorShift & componentMask) }

// Minor returns the minor component.
func (v SemanticVersion) Minor() uint8 { return uint8(v >> minorShift & componentMask) }

// Patch returns the patch component.
func (v SemanticVersion) Patch() uint8 { return uint8(v & componentMask) }

// String returns "major.minor.patch".
func (v SemanticVersion) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major(), v.Minor(), v.Patch())
}

// Compatible reports whether a client implementing version client can use
// a CnC file of version file: the majors are equal and the file's minor is
// at least the client's (a newer driver only adds to the layout). This is
// the check of Aeron's Context.connectToDriver.
func Compatible(file, client SemanticVersion) bool {
	return file.Major() == client.Major() && file.Minor() >= client.Minor()
}
