package supervisor

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/asynkron/protoactor-go/actor"
)

// KeepStack wraps the producer of an actor so that a panic in its Receive keeps its stack
// with the panic's reason, for the [Strategy] to log with a bug: protoactor's mailbox
// recovers the panic and hands the parent only the reason, and the parent's strategy runs
// on another goroutine, where the panic's stack is gone. The wrapper recovers only to
// panic again at once with the reason wrapped (see [StackOf]); the reason's class
// ([Classify]) and text are kept, but a reason that is not an error becomes a Bug
// [*Failure] saying what it was. It costs a deferred call per message, nothing allocated.
func KeepStack(p actor.Producer) actor.Producer {
	return func() actor.Actor { return &stackKeeper{p()} }
}

// stackKeeper is an actor whose panics keep their stack.
type stackKeeper struct{ actor.Actor }

func (k *stackKeeper) Receive(c actor.Context) {
	defer func() {
		if r := recover(); r != nil {
			panic(withStack(r, debug.Stack()))
		}
	}()
	k.Actor.Receive(c)
}

// stacked is a panic's reason with the stack of the goroutine that panicked with it.
type stacked struct {
	err   error
	stack []byte
}

func (s *stacked) Error() string { return s.err.Error() }
func (s *stacked) Unwrap() error { return s.err }

// withStack wraps reason with stack, keeping its class: a reason that is not an error (a
// Bug) becomes a Bug [Failure] saying what it was.
func withStack(reason any, stack []byte) error {
	err, ok := reason.(error)
	if !ok {
		err = Fail(Bug, fmt.Errorf("%v", reason))
	}
	return &stacked{err: err, stack: stack}
}

// StackOf returns the stack [KeepStack] kept with a panic's reason, or nil.
func StackOf(reason any) []byte {
	err, ok := reason.(error)
	var s *stacked
	if !ok || !errors.As(err, &s) {
		return nil
	}
	return s.stack
}
