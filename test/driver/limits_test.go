package driver

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestBackPressureLosesNothing: a subscriber that does not poll makes the publication
// report back-pressure once a term window is in flight; every offer that returned a
// position then arrives, and none that was refused does.
func TestBackPressureLosesNothing(t *testing.T) {
	c := connect(t)
	sub, pub := pair(t, c, "aeron:ipc?term-length=64k", infra.UniqueStreamID())
	payload := make([]byte, 200)
	accepted := 0
	for {
		fillMessage(payload, uint64(accepted))
		_, err := pub.Offer(payload)
		if errors.Is(err, aeron.ErrBackPressured) {
			break
		}
		if err != nil && !errors.Is(err, aeron.ErrAdminAction) {
			t.Fatal(err)
		}
		if err == nil {
			accepted++
		}
		if accepted > 10_000 {
			t.Fatal("10,000 messages accepted with nobody polling: no back-pressure")
		}
	}
	t.Logf("back-pressured after %d messages (%d bytes in flight)", accepted, pub.Position())
	if pub.Position() > int64(pub.TermLength()) {
		t.Errorf("%d bytes in flight with a %d-byte term: the publication limit was not respected", pub.Position(), pub.TermLength())
	}
	received := 0
	eventually.NoError(t, 10*time.Second, func() error {
		_, err := sub.Poll(func(b []byte, _ aeron.Header) {
			seq, cerr := checkMessage(b)
			if cerr != nil || seq != uint64(received) {
				t.Fatalf("message %d: seq %d, %v", received, seq, cerr)
			}
			received++
		}, 100)
		if err != nil {
			t.Fatal(err)
		}
		if received < accepted {
			return fmt.Errorf("received %d of %d accepted messages", received, accepted)
		}
		return nil
	})
	if extra, _ := sub.Poll(func([]byte, aeron.Header) {}, 100); extra != 0 {
		t.Errorf("%d messages arrived that Offer had refused", extra)
	}
	// Once the subscriber caught up, the publication takes messages again.
	eventually.NoError(t, 10*time.Second, func() error { _, err := pub.Offer(payload); return err })
}

// TestOneMebibyteMessagesReassembled: a 1 MiB message (the most an 8 MiB term allows)
// arrives byte-identical through the fragment assembler; one byte more is refused.
func TestOneMebibyteMessagesReassembled(t *testing.T) {
	c := connect(t)
	sub, pub := pair(t, c, "aeron:ipc?term-length=8m", infra.UniqueStreamID())
	if pub.MaxMessageLength() != 1<<20 {
		t.Fatalf("max message length = %d with an 8 MiB term, want 1 MiB", pub.MaxMessageLength())
	}
	if _, err := pub.Offer(make([]byte, 1<<20+1)); !errors.Is(err, aeron.ErrMessageTooLong) {
		t.Errorf("offer of 1 MiB + 1 = %v, want ErrMessageTooLong", err)
	}
	const count = 12 // more than a term's worth, so one lands across a rotation
	var got [][]byte
	asm := aeron.NewFragmentAssembler(pub.MaxMessageLength(), func(b []byte, _ aeron.Header) { got = append(got, bytes.Clone(b)) })
	want := make([][]byte, count)
	for i := range want {
		want[i] = bytes.Repeat([]byte{byte(i + 1)}, 1<<20)
		copy(want[i], fmt.Sprintf("message %d", i))
		eventually.NoError(t, 10*time.Second, func() error {
			if _, err := sub.Poll(asm.OnFragment, 1000); err != nil {
				t.Fatal(err)
			}
			_, err := pub.Offer(want[i])
			return err
		})
	}
	eventually.NoError(t, 10*time.Second, func() error {
		if _, err := sub.Poll(asm.OnFragment, 1000); err != nil {
			t.Fatal(err)
		}
		if len(got) < count {
			return fmt.Errorf("received %d of %d", len(got), count)
		}
		return nil
	})
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("message %d differs (%d bytes received)", i, len(got[i]))
		}
	}
}

// TestMessageThatDoesNotFitTheTermGoesToTheNext: a fragmented message offered near the end
// of a term pads the term (ErrAdminAction), is retried, and arrives intact at the start of
// the next term; the subscriber's position passes over the padding.
func TestMessageThatDoesNotFitTheTermGoesToTheNext(t *testing.T) {
	c := connect(t)
	sub, pub := pair(t, c, "aeron:ipc?term-length=64k", infra.UniqueStreamID())
	term := int64(pub.TermLength())
	small := make([]byte, 100) // 160-byte frames
	big := bytes.Repeat([]byte("straddle"), 4*pub.MaxPayloadLength()/8)
	drain := func() {
		if _, err := sub.Poll(func([]byte, aeron.Header) {}, 1000); err != nil {
			t.Fatal(err)
		}
	}
	for pub.Position() < term-int64(len(big)/2) {
		eventually.NoError(t, 5*time.Second, func() error { drain(); _, err := pub.Offer(small); return err })
	}
	before := pub.Position()
	var err error
	eventually.NoError(t, 5*time.Second, func() error {
		drain()
		if _, err = pub.Offer(big); errors.Is(err, aeron.ErrBackPressured) {
			// The driver moves the publication's limit on its own duty cycle: just after a
			// drain it may not yet let the publisher past the position it held before.
			return err
		}
		return nil
	})
	if !errors.Is(err, aeron.ErrAdminAction) {
		t.Fatalf("offer of %d bytes at %d of a %d-byte term = %v, want ErrAdminAction", len(big), before, term, err)
	}
	var pos int64
	eventually.NoError(t, 5*time.Second, func() error { // the same: the limit follows the drain
		drain()
		pos, err = pub.Offer(big)
		return err
	})
	var got []byte
	var position int64
	var termOffset int32
	asm := aeron.NewFragmentAssembler(pub.MaxMessageLength(), func(b []byte, h aeron.Header) {
		got, position, termOffset = bytes.Clone(b), h.Position(), h.TermOffset()
	})
	eventually.NoError(t, 5*time.Second, func() error {
		if _, err := sub.Poll(asm.OnFragment, 10); err != nil {
			t.Fatal(err)
		}
		if got == nil {
			return errors.New("the message has not arrived")
		}
		return nil
	})
	if !bytes.Equal(got, big) {
		t.Fatalf("message differs: %d bytes, want %d", len(got), len(big))
	}
	if position != pos || termOffset != 0 {
		t.Errorf("message header: position %d, term offset %d; want position %d (returned by Offer), term offset 0", position, termOffset, pos)
	}
	if img := sub.Images()[0]; img.Position() != pos {
		t.Errorf("image position %d, want %d", img.Position(), pos)
	}
}
