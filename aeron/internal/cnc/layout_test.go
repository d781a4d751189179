package cnc

import "testing"

// Golden values from Aeron 1.47.3 CncFileDescriptor, as listed in
// aeron-protocol.md §1.2-1.4. Change them only when the pinned Aeron
// version changes.
func TestLayoutGolden(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want int
	}{
		{"version", VersionOffset, 0},
		{"to-driver buffer length", ToDriverBufferLengthOffset, 4},
		{"to-clients buffer length", ToClientsBufferLengthOffset, 8},
		{"counters metadata buffer length", CountersMetadataBufferLengthOffset, 12},
		{"counters values buffer length", CountersValuesBufferLengthOffset, 16},
		{"error log buffer length", ErrorLogBufferLengthOffset, 20},
		{"client liveness timeout", ClientLivenessTimeoutOffset, 24},
		{"driver start timestamp", StartTimestampOffset, 32},
		{"driver pid", PIDOffset, 40},
		{"metadata length", MetadataLength, 48},
		{"end of metadata", EndOfMetadataOffset, 128},
		{"CnC version", int(CNCVersion), 512},
		{"section count", sectionCount, 5},
		{"ToDriver length field", ToDriver.lengthOffset(), 4},
		{"ToClients length field", ToClients.lengthOffset(), 8},
		{"CountersMetadata length field", CountersMetadata.lengthOffset(), 12},
		{"CountersValues length field", CountersValues.lengthOffset(), 16},
		{"ErrorLog length field", ErrorLog.lengthOffset(), 20},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
	if FileName != "cnc.dat" {
		t.Errorf("FileName = %q", FileName)
	}
}

func TestSectionString(t *testing.T) {
	for _, tc := range []struct {
		s    Section
		want string
	}{
		{ToDriver, "to-driver buffer"},
		{ToClients, "to-clients buffer"},
		{CountersMetadata, "counters metadata buffer"},
		{CountersValues, "counters values buffer"},
		{ErrorLog, "error log buffer"},
		{Section(7), "Section(7)"},
	} {
		if got := tc.s.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestSemanticVersion(t *testing.T) {
	v := NewSemanticVersion(1, 2, 3)
	if int32(v) != 0x010203 {
		t.Fatalf("NewSemanticVersion(1, 2, 3) = %#x, want 0x010203", int32(v))
	}
	if v.Major() != 1 || v.Minor() != 2 || v.Patch() != 3 || v.String() != "1.2.3" {
		t.Fatalf("components %d.%d.%d, String %q", v.Major(), v.Minor(), v.Patch(), v.String())
	}
	if CNCVersion != NewSemanticVersion(0, 2, 0) || CNCVersion.String() != "0.2.0" {
		t.Fatalf("CNCVersion = %v", CNCVersion)
	}
	if w := NewSemanticVersion(255, 255, 255); w.Major() != 255 || w.Minor() != 255 || w.Patch() != 255 {
		t.Fatalf("maximal version decodes to %v", w)
	}
}

func TestCompatible(t *testing.T) {
	client := NewSemanticVersion(0, 2, 0)
	for _, tc := range []struct {
		file SemanticVersion
		want bool
	}{
		{NewSemanticVersion(0, 2, 0), true},
		{NewSemanticVersion(0, 2, 9), true},
		{NewSemanticVersion(0, 3, 0), true},
		{NewSemanticVersion(0, 1, 9), false},
		{NewSemanticVersion(1, 2, 0), false},
		{NewSemanticVersion(1, 0, 0), false},
	} {
		if got := Compatible(tc.file, client); got != tc.want {
			t.Errorf("Compatible(%v, %v) = %v, want %v", tc.file, client, got, tc.want)
		}
	}
}
