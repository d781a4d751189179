package driver

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// A test message: sequence number (8 bytes), CRC-32 of the rest (4 bytes), then filler
// derived from the sequence, so the receiver can check each message on its own.
const messageHeader = 12

// messageSize picks sizes skewed the way market data is: mostly small, some around the
// MTU, a few that fragment into up to four frames. Deterministic per sequence number.
func messageSize(seq uint64, maxPayload int) int {
	r := rand.New(rand.NewPCG(seq, 0x5eed))
	switch p := r.IntN(100); {
	case p < 90:
		return messageHeader + r.IntN(128)
	case p < 99:
		return messageHeader + r.IntN(maxPayload)
	default:
		return maxPayload + r.IntN(3*maxPayload+1) // 1 to 4 MTU payloads, fragmented
	}
}

func fillMessage(buf []byte, seq uint64) []byte {
	binary.LittleEndian.PutUint64(buf, seq)
	for i := messageHeader; i < len(buf); i++ {
		buf[i] = byte(seq*31 + uint64(i))
	}
	binary.LittleEndian.PutUint32(buf[8:], crc32.ChecksumIEEE(buf[messageHeader:]))
	return buf
}

// checkMessage returns the message's sequence number, or an error if it is damaged.
func checkMessage(b []byte) (uint64, error) {
	if len(b) < messageHeader {
		return 0, fmt.Errorf("message of %d bytes is shorter than its header", len(b))
	}
	seq := binary.LittleEndian.Uint64(b)
	if got, want := crc32.ChecksumIEEE(b[messageHeader:]), binary.LittleEndian.Uint32(b[8:]); got != want {
		return seq, fmt.Errorf("message %d (%d bytes): checksum %08x, want %08x", seq, len(b), got, want)
	}
	return seq, nil
}

// TestMillionMessagesExactlyOnceInOrder sends 1,000,000 messages of mixed sizes through the
// real media driver with 64 KiB terms, so the log rotates thousands of times, and checks
// that each arrives exactly once, in order and intact.
func TestMillionMessagesExactlyOnceInOrder(t *testing.T) {
	const total = 1_000_000
	for _, tc := range []struct {
		name    string
		channel func(*testing.T) string
	}{
		{"ipc", func(*testing.T) string { return "aeron:ipc?term-length=64k" }},
		// The port is chosen when the subtest runs, not seconds before.
		{"udp", func(t *testing.T) string { return "aeron:udp?endpoint=" + freeUDPEndpoint(t) + "|term-length=64k" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := connect(t)
			sub, pub := pair(t, c, tc.channel(t), infra.UniqueStreamID())
			streamMessages(t, pub, sub, total)
		})
	}
}

// pair adds a subscription and an exclusive publication on channel and waits until the
// publication is connected.
func pair(t *testing.T, c *aeron.Client, channel string, stream int32) (*aeron.Subscription, *aeron.ExclusivePublication) {
	t.Helper()
	ctx := context.Background()
	sub, err := c.AddSubscription(ctx, channel, stream, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close() })
	pub, err := c.AddExclusivePublication(ctx, channel, stream)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pub.Close() })
	eventually.NoError(t, 10*time.Second, func() error {
		if !pub.IsConnected() || !sub.IsConnected() {
			return errors.New("publication and subscription not connected yet")
		}
		return nil
	})
	return sub, pub
}

// streamMessages offers total messages on one goroutine while this one polls, and fails on
// the first message lost, repeated, reordered or damaged.
func streamMessages(t *testing.T, pub *aeron.ExclusivePublication, sub *aeron.Subscription, total uint64) {
	t.Helper()
	sent := make(chan error, 1)
	go func() {
		buf := make([]byte, 4*pub.MaxPayloadLength())
		for seq := uint64(0); seq < total; seq++ {
			msg := fillMessage(buf[:messageSize(seq, pub.MaxPayloadLength())], seq)
			for {
				_, err := pub.Offer(msg)
				if err == nil {
					break
				}
				if !errors.Is(err, aeron.ErrBackPressured) && !errors.Is(err, aeron.ErrAdminAction) {
					sent <- fmt.Errorf("offer %d: %w", seq, err)
					return
				}
				// Leave the core to the subscriber and the driver, which must move the
				// publication limit before this offer can succeed.
				runtime.Gosched()
			}
		}
		sent <- nil
	}()

	var next uint64
	var failure error
	asm := aeron.NewFragmentAssembler(pub.MaxMessageLength(), func(b []byte, _ aeron.Header) {
		if failure != nil {
			return
		}
		seq, err := checkMessage(b)
		switch {
		case err != nil:
			failure = err
		case seq != next:
			failure = fmt.Errorf("got message %d, want %d", seq, next)
		case len(b) != messageSize(seq, pub.MaxPayloadLength()):
			failure = fmt.Errorf("message %d is %d bytes, want %d", seq, len(b), messageSize(seq, pub.MaxPayloadLength()))
		}
		next++
	})
	deadline := time.Now().Add(5 * time.Minute)
	for next < total && failure == nil {
		n, err := sub.Poll(asm.OnFragment, 256)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("received %d of %d messages in 5 minutes", next, total)
			}
			runtime.Gosched()
		}
	}
	if failure != nil {
		t.Fatal(failure)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if stats := asm.Stats(); stats.Discarded != 0 {
		t.Errorf("the assembler discarded %d partial messages", stats.Discarded)
	}
}

func freeUDPEndpoint(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return "127.0.0.1:" + strconv.Itoa(c.LocalAddr().(*net.UDPAddr).Port)
}
