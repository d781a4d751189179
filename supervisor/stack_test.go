package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// A child whose producer KeepStack wraps panics: the strategy is given the reason with the
// panic's stack, of the same class as the bare reason, and logs a bug with that stack —
// not the parent's, where the strategy runs.
func TestKeepStackGivesTheStrategyThePanicsStack(t *testing.T) {
	errDown := errors.New("pulsar: broker unavailable")
	for _, c := range []struct {
		name      string
		reason    any
		class     Class
		text      string // of the reason given up with
		wantStack bool   // in the log
	}{
		{"a runtime error", nilMapWrite(), Bug, "assignment to entry in nil map", true},
		{"a value that is not an error", "assertion failed: ack floor moved backwards", Bug, "bug: assertion failed: ack floor moved backwards", true},
		{"a transient failure", Fail(Transient, errDown), Transient, "transient: pulsar: broker unavailable", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			gaveUp := make(chan any, 1)
			logs := &stackLog{stacks: make(chan string, 4)}
			strategy, err := NewStrategy(Policy{Backoff: Backoff{Min: time.Millisecond, Max: time.Millisecond}, Window: time.Minute},
				func(_ *actor.PID, class Class, reason any) {
					if class != c.class {
						t.Errorf("given up with class %s; want %s", class, c.class)
					}
					gaveUp <- reason
				}, slog.New(logs))
			if err != nil {
				t.Fatal(err)
			}
			system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
			t.Cleanup(system.Shutdown)
			children := make(chan *actor.PID, 1)
			terminated := make(chan struct{})
			parentPID := system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
				switch ctx.Message().(type) {
				case *actor.Started:
					children <- ctx.Spawn(actor.PropsFromProducer(KeepStack(func() actor.Actor { return actor.ReceiveFunc(stackChild) })))
				case *actor.Terminated:
					close(terminated)
				}
			}, actor.WithSupervisor(strategy)))
			t.Cleanup(func() { _ = system.Root.StopFuture(parentPID).Wait() })
			system.Root.Send(receive(t, children, "the child"), &failWith{reason: c.reason})
			reason := receive(t, gaveUp, "the strategy to give up")
			// Stopped before the parent is: its stop would reach the dead child through dead
			// letters, whose throttle leaves a goroutine behind (TestMain's goleak).
			receive(t, terminated, "the child to stop")
			if err, ok := reason.(error); !ok || err.Error() != c.text {
				t.Fatalf("given up with %v; want %q", reason, c.text)
			}
			if stack := string(StackOf(reason)); !strings.Contains(stack, "supervisor.failHere") {
				t.Fatalf("StackOf the reason = %q; want the panic's stack, through failHere", stack)
			}
			select {
			case stack := <-logs.stacks:
				if !c.wantStack {
					t.Fatalf("a %s failure was logged with its stack", c.class)
				}
				if !strings.Contains(stack, "supervisor.failHere") {
					t.Fatalf("logged the stack %q; want the panic's, through failHere", stack)
				}
			default:
				if c.wantStack {
					t.Fatal("the bug was logged without its stack")
				}
			}
		})
	}
}

// stackChild fails with what failWith says, from failHere, and is given up at once.
func stackChild(ctx actor.Context) {
	if m, ok := ctx.Message().(*failWith); ok {
		failHere(m.reason)
	}
}

//go:noinline
func failHere(reason any) { panic(reason) }

// stackLog keeps the stack attribute of each record logged with one.
type stackLog struct {
	slog.Handler
	stacks chan string
}

func (l *stackLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *stackLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *stackLog) WithGroup(string) slog.Handler            { return l }
func (l *stackLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "stack" {
			l.stacks <- a.Value.String()
		}
		return true
	})
	return nil
}
