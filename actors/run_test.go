package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// TestRunBacksOffFromConnectionsLostAsSoonAsMade: a driver or archive that accepts ferry and
// drops it at once is reconnected to with back-off, not at full speed (every reconnect
// builds a pipeline, reloads the store and creates producers), and the board says ferry is
// not connected, with the cause.
func TestRunBacksOffFromConnectionsLostAsSoonAsMade(t *testing.T) {
	var connects atomic.Int32
	dead := make(chan struct{})
	close(dead)
	board := &connectionBoard{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, RunOptions{
			Connect: func(context.Context) (*Connection, error) {
				connects.Add(1)
				return &Connection{Aeron: noSubscriptions{}, Dead: dead,
					Err: func() error { return errors.New("dropped by the archive") }, Close: func() error { return nil }}, nil
			},
			Streams: func() ([]StreamConfig, error) { return nil, nil },
			CreateProducer: func(pulsar.ProducerOptions) (pulsar.Producer, error) {
				return nil, errors.New("no producer in this test")
			},
			Board:        board,
			Reconnect:    supervisor.Backoff{Min: 50 * time.Millisecond, Max: 400 * time.Millisecond},
			DrainTimeout: time.Second,
			Logger:       slog.New(slog.DiscardHandler),
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	})
	// Back-off from 50 ms doubling to 400 ms, each at least half its base: at most 8
	// connections in a second. At full speed it would be hundreds.
	eventually.Always(t, time.Second, func() error {
		if n := connects.Load(); n > 10 {
			return fmt.Errorf("%d connections in a second, each lost at once: no back-off", n)
		}
		return nil
	})
	if n := connects.Load(); n < 3 {
		t.Fatalf("%d connections in a second: it stopped reconnecting", n)
	}
	eventually.NoError(t, 5*time.Second, func() error {
		if c := board.last(); c == nil || c.Connected || c.Error != "connection lost: dropped by the archive" {
			return fmt.Errorf("board's connection %v; want down, with the cause", c)
		}
		return nil
	})
}

// noSubscriptions is an Aeron client a pipeline of no streams never asks for anything.
type noSubscriptions struct{}

func (noSubscriptions) AddSubscription(context.Context, string, int32, aeron.ImageHandlers) (*aeron.Subscription, error) {
	return nil, errors.New("no subscriptions in this test")
}

// connectionBoard keeps the last connection state Run reported.
type connectionBoard struct {
	mu   sync.Mutex
	conn *messages.Connection
}

func (b *connectionBoard) SetStream(*messages.StreamStatus) {}

func (b *connectionBoard) SetConnection(c *messages.Connection) {
	b.mu.Lock()
	b.conn = c
	b.mu.Unlock()
}

func (b *connectionBoard) last() *messages.Connection {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.conn
}
