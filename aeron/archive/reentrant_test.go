package archive

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferry-bridge/ferry/aeron/archive/internal/codec"
)

// OnError runs on the agent goroutine, which Close and every request wait for: from
// OnError they would wait for themselves for ever, and the session with them. They return
// ErrReentrant there instead, whether OnError reports an error after an accepted request
// or the session's end. A request another goroutine makes while OnError runs is not
// OnError's, and is served as usual (here: queued, and waiting for an agent that this
// test does not run, until its context ends).
func TestACallFromOnErrorIsRefusedNotDeadlocked(t *testing.T) {
	for _, c := range []struct {
		name  string
		raise func(*agent)
	}{
		{"an error after an accepted request", func(a *agent) {
			a.onControlResponse(codec.ControlResponse{CorrelationID: 99, Code: codec.ResponseCodeError, ErrorMessage: "replay failed"})
		}},
		{"the session's end", func(a *agent) { a.stop(ErrArchiveUnavailable) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			type outcome struct {
				closed, stopped, other error
			}
			got := make(chan outcome, 1)
			cl := &Client{requests: make(chan *call, 1), signals: make(chan Signal), stopping: make(chan struct{}), dead: make(chan struct{}), done: make(chan struct{})}
			cl.opts.OnError = func(error) {
				var o outcome
				o.closed = cl.Close()
				o.stopped = cl.StopReplay(context.Background(), 5)
				other := make(chan error, 1)
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
					defer cancel()
					other <- cl.StopReplay(ctx, 6)
				}()
				o.other = <-other
				got <- o
			}
			a := &agent{c: cl, waiting: map[int64]*call{}, accepted: map[int64]string{}}
			go c.raise(a)
			select {
			case o := <-got:
				if !errors.Is(o.closed, ErrReentrant) || !errors.Is(o.stopped, ErrReentrant) {
					t.Fatalf("from OnError: Close = %v, StopReplay = %v; want ErrReentrant for both", o.closed, o.stopped)
				}
				if !errors.Is(o.other, context.DeadlineExceeded) {
					t.Fatalf("StopReplay from another goroutine while OnError ran = %v; want it served (here: its context's end)", o.other)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("OnError's calls into the client did not return: they wait for the agent running OnError")
			}
		})
	}
}
