// Package reentry tells whether a goroutine is running a user's handler that a client's
// own goroutine called, so that a call that would wait for that goroutine can refuse
// instead of waiting for itself for ever.
//
// The aeron client's conductor runs image handlers and OnError; the archive client's agent
// runs its OnError. A Close or request made from one of them waits for the goroutine that
// is running it. Java refuses such calls (ClientConductor.ensureNotReentrant): its check
// reads a flag under the client lock, which the conductor holds while a handler runs, so
// only the handler's own thread can see it set. Go gives a goroutine no identity, and a
// flag alone would also refuse a legitimate call from another goroutine that merely runs
// while a handler does. So a client runs every handler under the frame of [Run], and a
// call is a handler's when that frame is on its own goroutine's stack ([OnStack]): no
// other goroutine's stack holds it. Walking the stack costs; a client keeps a count of the
// handlers it is running and walks only while it is non-zero.
//
// The frame does not say which client runs it: a handler of one client calling into
// another client that is running a handler too is refused as well. Its wait could be a
// deadlock (the other handler may be calling into the first client); refused, two
// clients' handlers never wait for each other.
package reentry

import (
	"reflect"
	"runtime"
)

// Run runs a user's handler; its frame marks the stack, so it must not be inlined.
//
//go:noinline
func Run(h func()) { h() }

// runEntry is Run's entry address, as a stack frame reports it.
var runEntry = reflect.ValueOf(Run).Pointer()

// OnStack reports whether Run's frame is on the calling goroutine's stack.
func OnStack() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs)) // a deep stack: Run may be at its root
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Entry == runEntry {
			return true
		}
		if !more {
			return false
		}
	}
}
