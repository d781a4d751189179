package cnc

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/ringbuffer"
	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

func TestWrapExposesHeaderAndSections(t *testing.T) {
	im := newImage()
	f, err := Wrap(im.build())
	if err != nil {
		t.Fatal(err)
	}
	h := f.Header()
	if h.Version != CNCVersion || h.ClientLivenessTimeout != im.liveness || !h.DriverStartTime.Equal(im.start) || h.DriverPID != im.pid {
		t.Fatalf("header = %+v", h)
	}
	if h.SectionLengths != im.lengths {
		t.Fatalf("section lengths = %v, want %v", h.SectionLengths, im.lengths)
	}
	wantOffset := int64(EndOfMetadataOffset)
	for s := range Section(sectionCount) {
		if got := h.SectionOffset(s); got != wantOffset {
			t.Errorf("%v offset = %d, want %d", s, got, wantOffset)
		}
		sec := f.Section(s)
		if sec.Len() != int(im.lengths[s]) {
			t.Errorf("%v length = %d, want %d", s, sec.Len(), im.lengths[s])
		}
		// First and last bytes carry this section's marker (the ring's
		// trailer is zeroed, so check its data area's end instead).
		last := sec.Len() - 1
		if s == ToDriver {
			last = sec.Len() - ringbuffer.TrailerLength - 1
		}
		if sec.GetUint8(0) != sectionMarker(s) || sec.GetUint8(last) != sectionMarker(s) {
			t.Errorf("%v holds bytes %#x..%#x, want marker %#x", s, sec.GetUint8(0), sec.GetUint8(last), sectionMarker(s))
		}
		wantOffset += int64(im.lengths[s])
	}
	if got := h.RequiredLength(); got != wantOffset {
		t.Errorf("RequiredLength = %d, want %d", got, wantOffset)
	}
	if f.ToDriver().Capacity() != 64 {
		t.Errorf("to-driver ring capacity = %d, want 64", f.ToDriver().Capacity())
	}
	if got := f.DriverHeartbeat(); got != im.heartbeat {
		t.Errorf("DriverHeartbeat = %d, want %d", got, im.heartbeat)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close of a wrapped buffer: %v", err)
	}
}

func TestReadHeaderRejectsBadHeaders(t *testing.T) {
	short := shm.Alloc(MetadataLength - 1)
	if _, err := ReadHeader(short, "short"); !errors.Is(err, ErrNotReady) {
		t.Errorf("short buffer: err = %v, want ErrNotReady", err)
	}

	zero := newImage()
	zero.version = 0
	if _, err := ReadHeader(zero.build(), "zero"); !errors.Is(err, ErrNotReady) {
		t.Errorf("version 0: err = %v, want ErrNotReady", err)
	}

	for _, v := range []SemanticVersion{NewSemanticVersion(0, 1, 0), NewSemanticVersion(1, 2, 0)} {
		im := newImage()
		im.version = v
		_, err := ReadHeader(im.build(), "old.dat")
		var mismatch *VersionMismatchError
		if !errors.As(err, &mismatch) || !errors.Is(err, ErrVersionMismatch) {
			t.Errorf("version %v: err = %v, want *VersionMismatchError", v, err)
			continue
		}
		if mismatch.File != v || mismatch.Client != CNCVersion || mismatch.Source != "old.dat" {
			t.Errorf("version %v: %+v", v, mismatch)
		}
		if msg := err.Error(); !strings.Contains(msg, v.String()) || !strings.Contains(msg, CNCVersion.String()) || !strings.Contains(msg, "old.dat") {
			t.Errorf("message %q does not name both versions and the file", msg)
		}
	}

	negative := newImage()
	negative.lengths[CountersValues] = -128
	if _, err := ReadHeader(negative.build(), "neg"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("negative length: err = %v, want ErrCorrupt", err)
	}

	misaligned := shm.Wrap(shm.Alloc(256).Bytes()[4:])
	if _, err := ReadHeader(misaligned, "odd"); !errors.Is(err, shm.ErrMisaligned) {
		t.Errorf("misaligned buffer: err = %v, want shm.ErrMisaligned", err)
	}
}

func TestWrapRejectsTruncatedAndCorruptImages(t *testing.T) {
	truncated := newImage()
	truncated.extra = -1
	if _, err := Wrap(truncated.build()); !errors.Is(err, ErrTruncated) {
		t.Errorf("file one byte short: err = %v, want ErrTruncated", err)
	}

	longer := newImage()
	longer.extra = 4096 // a driver page-aligns the file
	if _, err := Wrap(longer.build()); err != nil {
		t.Errorf("page-aligned file: %v", err)
	}

	notARing := newImage()
	notARing.lengths[ToDriver] = 100 + ringbuffer.TrailerLength
	_, err := Wrap(notARing.build())
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, ringbuffer.ErrInvalidBuffer) {
		t.Errorf("to-driver section not a ring: err = %v, want ErrCorrupt and ringbuffer.ErrInvalidBuffer", err)
	}
}

func TestMapSharesTheFileWithTheDriver(t *testing.T) {
	dir := t.TempDir()
	im := newImage()
	im.writeTo(t, dir)

	f, err := Map(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if want := filepath.Join(dir, FileName); f.Path() != want {
		t.Errorf("Path = %q, want %q", f.Path(), want)
	}
	if f.Header().DriverPID != im.pid || f.DriverHeartbeat() != im.heartbeat {
		t.Errorf("header %+v, heartbeat %d", f.Header(), f.DriverHeartbeat())
	}

	// A second mapping (the "driver") sees what the client writes.
	driver, err := shm.Map(filepath.Join(dir, FileName), shm.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = driver.Close() })
	if err := f.ToDriver().Write(1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	payloadOffset := EndOfMetadataOffset + ringbuffer.HeaderLength
	if got := string(driver.Buffer().Bytes()[payloadOffset : payloadOffset+5]); got != "hello" {
		t.Errorf("driver mapping sees %q at the first record's payload", got)
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMapReadOnly(t *testing.T) {
	dir := t.TempDir()
	newImage().writeTo(t, dir)
	f, err := MapReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	if !f.Section(CountersValues).ReadOnly() {
		t.Fatal("read-only mapping has writable sections")
	}
	if f.Section(CountersMetadata).GetUint8(0) != sectionMarker(CountersMetadata) {
		t.Fatal("read-only mapping reads the wrong bytes")
	}
}

func TestMapErrors(t *testing.T) {
	missing := t.TempDir()
	if _, err := Map(missing); !errors.Is(err, ErrDriverNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("no cnc.dat: err = %v, want ErrDriverNotFound naming the directory", err)
	}

	empty := t.TempDir()
	if err := os.WriteFile(filepath.Join(empty, FileName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Map(empty); !errors.Is(err, ErrNotReady) {
		t.Errorf("empty cnc.dat: err = %v, want ErrNotReady", err)
	}

	starting := t.TempDir()
	im := newImage()
	im.version = 0
	im.writeTo(t, starting)
	if _, err := Map(starting); !errors.Is(err, ErrNotReady) {
		t.Errorf("version 0: err = %v, want ErrNotReady", err)
	}

	old := t.TempDir()
	im = newImage()
	im.version = NewSemanticVersion(0, 1, 0)
	im.writeTo(t, old)
	var mismatch *VersionMismatchError
	if _, err := Map(old); !errors.As(err, &mismatch) || mismatch.Source != filepath.Join(old, FileName) {
		t.Errorf("old version: err = %v, want *VersionMismatchError naming the file", err)
	}

	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Map(notADir); err == nil || retryable(err) {
		t.Errorf("aeron.dir is a file: err = %v, want a non-retryable error", err)
	}
}

func TestCheckDriverActive(t *testing.T) {
	const timeout = 10 * time.Second
	now := testEpoch
	for _, tc := range []struct {
		name      string
		heartbeat int64
		active    bool
		mention   string
	}{
		{"fresh", now.UnixMilli(), true, ""},
		{"exactly the timeout old", now.Add(-timeout).UnixMilli(), true, ""},
		{"a millisecond too old", now.Add(-timeout - time.Millisecond).UnixMilli(), false, "ago"},
		{"from the future (clock skew)", now.Add(time.Second).UnixMilli(), true, ""},
		{"never", 0, false, "no driver heartbeat yet"},
		{"shut down", -1, false, "shut down"},
		{"invalid", -7, false, "invalid"},
	} {
		im := newImage()
		im.heartbeat = tc.heartbeat
		f, err := Wrap(im.build())
		if err != nil {
			t.Fatal(err)
		}
		err = f.CheckDriverActive(now, timeout)
		if tc.active {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, ErrDriverInactive) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%s: err = %v, want ErrDriverInactive mentioning %q", tc.name, err, tc.mention)
		}
	}
}
