package aeron

import (
	"reflect"
	"runtime"
)

// The conductor runs the handlers a user gives the client (ImageHandlers, Options.OnError)
// on its own goroutine. A call that waits for the conductor (Client.Close, the Add calls,
// Subscription.Close, ExclusivePublication.Close) made from one of them would wait for
// itself for ever: keepalive stops, the driver times the client out, and the process hangs
// looking alive. Such a call returns ErrReentrant instead, as Java's
// ClientConductor.ensureNotReentrant refuses it.
//
// A call from another goroutine that merely runs while a handler does is legitimate, and
// must wait as usual. A flag set while a handler runs cannot tell the two apart (Java's
// can: it is read under the client lock, which the conductor holds while a handler runs),
// and Go gives a goroutine no identity. So the conductor runs every handler under the
// frame of runHandler, and a call is a handler's when that frame is on its own goroutine's
// stack: no other goroutine's stack holds it. The stack is walked only while the client's
// conductor runs a handler (Client.inHandler); other calls pay one atomic load.
//
// The frame does not say which client's conductor runs it: a handler of one client calling
// into another client whose conductor is running a handler too is refused as well. Its
// wait could be a deadlock (the other handler may be calling into the first client);
// refused, two clients' handlers never wait for each other, as the second of two such
// calls finds the first client's count raised.

// runHandler runs a user's handler; its frame marks the stack (see above), so it must not
// be inlined.
//
//go:noinline
func runHandler(h func()) { h() }

// runHandlerEntry is runHandler's entry address, as a stack frame reports it.
var runHandlerEntry = reflect.ValueOf(runHandler).Pointer()

// callback runs a user's handler on the conductor goroutine, marked as such.
func (d *conductor) callback(h func()) {
	// Stored on the conductor goroutine before the handler runs, so a call from the handler
	// loads the count raised. A call from another goroutine may load either value, and is
	// let through in both cases (by the stack walk if raised).
	d.c.inHandler.Add(1)
	defer d.c.inHandler.Add(-1)
	runHandler(h)
}

// reportError passes an error that belongs to no call to the user's OnError.
func (d *conductor) reportError(err error) {
	d.callback(func() { d.c.opts.OnError(err) })
}

// reentrant reports whether the caller is a handler that this client's conductor, or
// another client's while this one's runs a handler too, is running (see above): a call
// that waits for the conductor must then return ErrReentrant.
func (c *Client) reentrant() bool {
	return c.inHandler.Load() > 0 && onHandlerStack()
}

// onHandlerStack reports whether runHandler's frame is on the calling goroutine's stack.
func onHandlerStack() bool {
	pcs := make([]uintptr, 64)
	for {
		n := runtime.Callers(2, pcs)
		if n < len(pcs) {
			pcs = pcs[:n]
			break
		}
		pcs = make([]uintptr, 2*len(pcs)) // a deep stack: runHandler may be at its root
	}
	frames := runtime.CallersFrames(pcs)
	for {
		f, more := frames.Next()
		if f.Entry == runHandlerEntry {
			return true
		}
		if !more {
			return false
		}
	}
}
