package aeron

import "github.com/ferry-bridge/ferry/aeron/internal/reentry"

// The conductor runs the handlers a user gives the client (ImageHandlers, Options.OnError)
// on its own goroutine. A call that waits for the conductor (Client.Close, the Add calls,
// Subscription.Close, ExclusivePublication.Close) made from one of them would wait for
// itself for ever: keepalive stops, the driver times the client out, and the process hangs
// looking alive. Such a call returns ErrReentrant instead, as Java's
// ClientConductor.ensureNotReentrant refuses it; package reentry says how a handler's call
// is told apart from another goroutine's, which must wait as usual.

// callback runs a user's handler on the conductor goroutine, marked as such.
func (d *conductor) callback(h func()) {
	// Stored on the conductor goroutine before the handler runs, so a call from the handler
	// loads the count raised. A call from another goroutine may load either value, and is
	// let through in both cases (by the stack walk if raised).
	d.c.inHandler.Add(1)
	defer d.c.inHandler.Add(-1)
	reentry.Run(h)
}

// reportError passes an error that belongs to no call to the user's OnError.
func (d *conductor) reportError(err error) {
	d.callback(func() { d.c.opts.OnError(err) })
}

// reentrant reports whether the caller is a handler that this client's conductor, or
// another client's while this one's runs a handler too, is running: a call that waits for
// the conductor must then return ErrReentrant. Other calls pay one atomic load.
func (c *Client) reentrant() bool {
	return c.inHandler.Load() > 0 && reentry.OnStack()
}
