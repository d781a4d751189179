package cnc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/internal/ringbuffer"
	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// image describes a CnC file for tests: a small driver's worth of sections.
type image struct {
	version   SemanticVersion
	lengths   [sectionCount]int32
	liveness  time.Duration
	start     time.Time
	pid       int64
	heartbeat int64 // epoch ms in the to-driver ring trailer
	extra     int   // bytes added (or, if negative, removed) at the end
}

var testEpoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newImage() image {
	return image{
		version: CNCVersion,
		lengths: [sectionCount]int32{
			ToDriver:         64 + ringbuffer.TrailerLength,
			ToClients:        64 + 128,
			CountersMetadata: 2 * 512,
			CountersValues:   2 * 128,
			ErrorLog:         64,
		},
		liveness:  10 * time.Second,
		start:     testEpoch.Add(-time.Hour),
		pid:       4242,
		heartbeat: testEpoch.UnixMilli(),
	}
}

// sectionMarker is the byte each section is filled with, so that a test
// can tell sections apart by content.
func sectionMarker(s Section) byte { return byte(0xA0 + s) }

// build lays the image out as a driver would, writing the version last.
// Every section is filled with its marker, except the to-driver ring's
// trailer, which carries the heartbeat.
func (im image) build() shm.Buffer {
	length := EndOfMetadataOffset
	for _, n := range im.lengths {
		length += int(n)
	}
	b := shm.Alloc(max(length+im.extra, 0))
	if b.Len() < MetadataLength {
		return b
	}
	offset := EndOfMetadataOffset
	for s := range Section(sectionCount) {
		b.PutInt32(s.lengthOffset(), im.lengths[s])
		for i := offset; i < offset+int(im.lengths[s]) && i < b.Len(); i++ {
			b.PutUint8(i, sectionMarker(s))
		}
		if s == ToDriver {
			trailer := offset + int(im.lengths[s]) - ringbuffer.TrailerLength
			if trailer >= offset && trailer+ringbuffer.TrailerLength <= b.Len() {
				clear(b.Bytes()[trailer : trailer+ringbuffer.TrailerLength])
				b.PutInt64(trailer+ringbuffer.ConsumerHeartbeatOffset, im.heartbeat)
			}
		}
		offset += int(im.lengths[s])
	}
	b.PutInt64(ClientLivenessTimeoutOffset, int64(im.liveness))
	b.PutInt64(StartTimestampOffset, im.start.UnixMilli())
	b.PutInt64(PIDOffset, im.pid)
	b.StoreInt32(VersionOffset, int32(im.version))
	return b
}

// writeTo writes the image as <dir>/cnc.dat, replacing any previous one.
func (im image) writeTo(tb testing.TB, dir string) {
	tb.Helper()
	if err := os.WriteFile(filepath.Join(dir, FileName), im.build().Bytes(), 0o600); err != nil {
		tb.Fatal(err)
	}
}
