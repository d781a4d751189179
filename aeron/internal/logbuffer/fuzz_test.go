package logbuffer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// FuzzDecodeFrameHeader: no panic; an error exactly when the input is
// shorter than a header, with a zero result; otherwise encoding the
// result gives back the first HeaderLength bytes.
func FuzzDecodeFrameHeader(f *testing.F) {
	f.Add(goldenHeaderBytes)
	f.Add(goldenHeaderBytes[:HeaderLength-1])
	f.Add(append(goldenHeader.AppendTo(nil), "payload"...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := DecodeFrameHeader(data)
		if len(data) < HeaderLength {
			if !errors.Is(err, ErrShortFrame) || h != (FrameHeader{}) {
				t.Fatalf("DecodeFrameHeader(%d bytes) = %+v, %v", len(data), h, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("DecodeFrameHeader(%d bytes): %v", len(data), err)
		}
		if got := h.AppendTo(nil); !bytes.Equal(got, data[:HeaderLength]) {
			t.Fatalf("round trip % x, want % x", got, data[:HeaderLength])
		}
	})
}

// FuzzPollTerm writes arbitrary bytes into a term at an arbitrary aligned
// offset and polls from there, plainly and with controlled actions taken
// from the payloads. Properties: no panic (every access is bounds-checked
// against the term, so reading beyond it would panic); every error
// matches ErrCorrupt; the position only moves forward, by aligned amounts,
// and never past the end of the term; every payload is the bytes of a
// frame that lies inside the term, at the position the header reports.
func FuzzPollTerm(f *testing.F) {
	// Seeds: real frames (with padding at the term end and fragments),
	// a negative length, a short length, a length past the term end.
	l := newTestLog(f, testParams())
	a := newTestAppender(f, l)
	fillTo(f, a, testTermLength-256)
	mustOffer(f, a, openFlow, make([]byte, 2*testMaxPayload+10)) // padding, rotation
	mustOffer(f, a, openFlow, make([]byte, 2*testMaxPayload+10))
	mustOffer(f, a, openFlow, []byte("after"))
	f.Add(bytes.Clone(l.Term(0).Bytes()[testTermLength-512:]), uint16((testTermLength-512)/FrameAlignment), uint8(0))
	f.Add(bytes.Clone(l.Term(1).Bytes()[:4096]), uint16(0), uint8(3))
	f.Add([]byte{0xE0, 0xFF, 0xFF, 0xFF, 0, 0xC0, 1, 0}, uint16(0), uint8(1))
	f.Add([]byte{8, 0, 0, 0, 0, 0xC0, 1, 0}, uint16(5), uint8(1))
	f.Add([]byte{0x00, 0x01, 0x00, 0x00, 0, 0xC0, 1, 0}, uint16(testTermLength/FrameAlignment-1), uint8(2))

	l = newTestLog(f, testParams()) // reused: each input starts from a zeroed term
	term := l.Term(0)
	f.Fuzz(func(t *testing.T, data []byte, at uint16, limit uint8) {
		clear(term.Bytes())
		base := int(at) * FrameAlignment % testTermLength
		copy(term.Bytes()[base:], data)
		fragmentLimit := 1 + int(limit%8)

		check := func(from int64, payload []byte, h Header) {
			frameStart := h.Position() - int64(align(int(h.FrameLength()), FrameAlignment))
			if frameStart < from || h.Position() > testTermLength || frameStart%FrameAlignment != 0 {
				t.Fatalf("fragment [%d, %d) outside [%d, %d)", frameStart, h.Position(), from, testTermLength)
			}
			want := term.Bytes()[frameStart+HeaderLength : frameStart+int64(h.FrameLength())]
			if !bytes.Equal(payload, want) || cap(payload) != len(payload) {
				t.Fatalf("payload at %d is not the frame's bytes", frameStart)
			}
		}

		position := int64(base)
		for range 16 {
			delivered := 0
			n, next, err := l.Poll(position, fragmentLimit, func(payload []byte, h Header) {
				check(position, payload, h)
				delivered++
			})
			checkStep(t, position, next, err)
			if n != delivered || n > fragmentLimit {
				t.Fatalf("Poll returned %d fragments, delivered %d, limit %d", n, delivered, fragmentLimit)
			}
			if err != nil || next == position {
				break
			}
			position = next
		}

		position = int64(base)
		for range 16 {
			delivered, consumed := 0, 0
			committed := position
			n, next, err := l.ControlledPoll(position, fragmentLimit, func(payload []byte, h Header) Action {
				check(position, payload, h)
				delivered++
				action := Action(crc32.ChecksumIEEE(payload) % 4)
				if action != Abort {
					consumed++
				}
				return action
			}, func(p int64) {
				if p <= committed || p > testTermLength {
					t.Fatalf("commit %d after %d", p, committed)
				}
				committed = p
			}, nil)
			checkStep(t, position, next, err)
			if n != consumed || next < committed {
				t.Fatalf("ControlledPoll = %d fragments, position %d; consumed %d, committed %d", n, next, consumed, committed)
			}
			if err != nil || next == position {
				break
			}
			position = next
		}
	})
}

func checkStep(t *testing.T, from, next int64, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrCorrupt) {
		t.Fatalf("error %v does not match ErrCorrupt", err)
	}
	if next < from || (next-from)%FrameAlignment != 0 || next > testTermLength {
		t.Fatalf("position moved from %d to %d", from, next)
	}
}

// FuzzAssemblerSplitDelivery publishes messages of fuzzed sizes with a
// fuzzed MTU (so, many fragments and rotations) and reassembles them
// twice: polling whole terms, and polling a few fragments at a time. A
// fuzzed cut drops every fragment that starts before it, as a subscriber
// joining mid-message would. Properties: both runs deliver exactly the
// messages that start at or after the cut, in order, intact, with the
// positions the offers returned; fragments are never lost or duplicated
// by where the polls stop.
func FuzzAssemblerSplitDelivery(f *testing.F) {
	f.Add([]byte{0, 0, 10, 0x05, 0x80, 0x20, 0x00, 0x00, 0x01}, uint8(0), uint32(0))
	f.Add([]byte{3, 0x1F, 0xFF, 0x1F, 0xFF, 0x1F, 0xFF, 0x00, 0x40}, uint8(1), uint32(7))
	f.Add([]byte{7, 0x01, 0x00, 0x02, 0x00, 0x04, 0x00, 0x08, 0x00, 0x10, 0x00}, uint8(5), uint32(40))
	f.Add([]byte{1, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00, 0x20, 0x00}, uint8(2), uint32(300))

	f.Fuzz(func(t *testing.T, script []byte, limit uint8, cut uint32) {
		if len(script) < 1 {
			return
		}
		mtu := 2*HeaderLength + FrameAlignment*int(script[0]%8) // 64 … 288
		maxMessage := MaxMessageLength(testTermLength)
		var sizes []int
		for i := 1; i+1 < len(script) && len(sizes) < 64; i += 2 {
			sizes = append(sizes, int(binary.BigEndian.Uint16(script[i:]))%(maxMessage+1))
		}
		cutPosition := int64(cut%(1<<14)) * FrameAlignment // within the stream

		whole, want := reassembleStream(t, mtu, sizes, noLimit, cutPosition)
		split, _ := reassembleStream(t, mtu, sizes, 1+int(limit%7), cutPosition)
		checkMessages(t, whole, want)
		checkMessages(t, split, want)
	})
}

// reassembleStream runs sizes through a stream and an assembler, dropping
// fragments that start before cut, and returns what the assembler
// delivered and what it should have delivered.
func reassembleStream(t *testing.T, mtu int, sizes []int, fragmentLimit int, cut int64) (got, want []message) {
	p := testParams()
	p.MTU = mtu
	s := newStream(t, p)
	rec := &recorder{tb: t}
	a := NewFragmentAssembler(s.log.MaxMessageLength(), rec.onMessage)
	handler := func(payload []byte, h Header) {
		if h.Position()-int64(align(int(h.FrameLength()), FrameAlignment)) >= cut {
			a.OnFragment(payload, h)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(len(sizes)), uint64(mtu)))
	for i, size := range sizes {
		msg := patterned(rng, i, size)
		end := s.offer(msg, fragmentLimit, handler)
		framed := align(HeaderLength+size, FrameAlignment)
		if size > mtu-HeaderLength {
			framed = fragmentedFrameLength(size, mtu-HeaderLength)
		}
		if end-int64(framed) >= cut {
			want = append(want, received(msg, end))
		}
	}
	s.drain(fragmentLimit, handler)
	if st := a.Stats(); st.Delivered != uint64(len(rec.msgs)) || st.Discarded != 0 {
		t.Fatalf("assembler stats %+v after %d messages", st, len(rec.msgs))
	}
	return rec.msgs, want
}

// FuzzAssemblerArbitraryFragments feeds fragments with arbitrary headers
// straight to an assembler. Properties: no panic; no reassembled message
// longer than the maximum; the buffers never grow beyond it; every
// delivery is counted; the count of messages in progress, which lets a
// message of one fragment skip the partial messages, is right.
func FuzzAssemblerArbitraryFragments(f *testing.F) {
	f.Add([]byte{0x80, 1, 0, 5, 0x00, 1, 1, 5, 0x40, 1, 2, 5})
	f.Add([]byte{0x80, 1, 0, 40, 0x80, 2, 0, 40, 0x40, 1, 2, 40, 0xC0, 2, 9, 1})
	const maxMessage = 100
	f.Fuzz(func(t *testing.T, data []byte) {
		calls := 0
		a := NewFragmentAssembler(maxMessage, func(payload []byte, h Header) {
			calls++
			if len(payload) > maxMessage || int(h.FrameLength()) != HeaderLength+len(payload) {
				t.Fatalf("message of %d bytes (header length %d), maximum %d", len(payload), h.FrameLength(), maxMessage)
			}
		})
		// The controlled assembler shares the reassembly; its handler aborts every third
		// message, which the poll delivers again (here: at once).
		handled := 0
		ca := NewControlledFragmentAssembler(maxMessage, func([]byte, Header) Action {
			if handled++; handled%3 == 1 {
				return Abort
			}
			return Continue
		})
		payload := make([]byte, 64)
		for i := 0; i+4 <= len(data); i += 4 {
			n := int(data[i+3]) % len(payload)
			h := headerOf(FrameHeader{
				FrameLength: int32(HeaderLength + n),
				Flags:       Flags(data[i]),
				Type:        FrameTypeData,
				TermOffset:  int32(data[i+2]) * FrameAlignment,
				SessionID:   int32(data[i+1] % 4),
				TermID:      int32(data[i+1] / 4),
			}, 0)
			before := a.Stats().Delivered
			a.OnFragment(payload[:n], h)
			if a.Stats().Delivered != before && a.Stats().Delivered != before+1 {
				t.Fatal("one fragment delivered more than one message")
			}
			checkInProgress(t, &a.r)
			if ca.OnFragment(payload[:n], h) == Abort {
				ca.OnFragment(payload[:n], h)
			}
			checkInProgress(t, &ca.r)
		}
		for _, p := range a.r.partials {
			if cap(p.buf) > maxMessage {
				t.Fatalf("buffer capacity %d beyond the maximum %d", cap(p.buf), maxMessage)
			}
		}
		if a.Stats().Delivered != uint64(calls) {
			t.Fatalf("stats %+v, %d deliveries", a.Stats(), calls)
		}
	})
}

// checkInProgress fails unless r counts as many messages in progress as it has.
func checkInProgress(t *testing.T, r *reassembly) {
	t.Helper()
	active := 0
	for _, p := range r.partials {
		if p.active {
			active++
		}
	}
	if r.inProgress != active {
		t.Fatalf("%d messages counted in progress, %d are", r.inProgress, active)
	}
}
