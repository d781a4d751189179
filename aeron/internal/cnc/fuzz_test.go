package cnc

import (
	"bytes"
	"errors"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// FuzzWrap validates arbitrary bytes as a CnC image. Properties: no panic;
// failure is one of the documented errors; success means every section
// lies inside the image, in file order, and the header reads back.
func FuzzWrap(f *testing.F) {
	f.Add(newImage().build().Bytes())
	zero := newImage()
	zero.version = 0
	f.Add(zero.build().Bytes())
	short := newImage()
	short.extra = -100
	f.Add(short.build().Bytes())
	f.Add([]byte{0, 2, 0, 0})
	f.Add(bytes.Repeat([]byte{0xFF}, 256))

	f.Fuzz(func(t *testing.T, data []byte) {
		b := shm.Alloc(len(data))
		copy(b.Bytes(), data)
		file, err := Wrap(b)
		if err != nil {
			if file != nil {
				t.Fatal("error with a non-nil file")
			}
			var mismatch *VersionMismatchError
			if !errors.Is(err, ErrNotReady) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) && !errors.As(err, &mismatch) {
				t.Fatalf("undocumented error: %v", err)
			}
			return
		}
		h := file.Header()
		if !Compatible(h.Version, CNCVersion) {
			t.Fatalf("accepted version %v", h.Version)
		}
		if h.RequiredLength() > int64(len(data)) {
			t.Fatalf("accepted an image of %d bytes needing %d", len(data), h.RequiredLength())
		}
		for s := range Section(sectionCount) {
			sec := file.Section(s)
			if sec.Len() != int(h.SectionLengths[s]) {
				t.Fatalf("%v has %d bytes, header says %d", s, sec.Len(), h.SectionLengths[s])
			}
			if sec.Len() > 0 && &sec.Bytes()[0] != &b.Bytes()[h.SectionOffset(s)] {
				t.Fatalf("%v does not start at offset %d", s, h.SectionOffset(s))
			}
		}
		_ = file.DriverHeartbeat()
	})
}
