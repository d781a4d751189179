package supervisor

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/store"
)

// Class is what kind of failure a child actor died of; it decides the directive.
type Class uint8

const (
	// Transient means the peer or resource may come back: the archive or broker is down,
	// a request timed out, a publish failed and its records need re-delivery. The child
	// is restarted with backoff, up to [Policy.MaxRestarts] times within [Policy.Window].
	Transient Class = iota + 1
	// Poison means the input cannot be processed and retrying cannot help, e.g. a
	// recording that no longer exists (lesson 14). The child is stopped at once and the
	// stream is given up, loudly.
	Poison
	// Corrupt means stored state is damaged or unusable by this build (store.ErrCorrupt,
	// store.ErrUnknownVersion, store.ErrStreamChanged, store.ErrResetFailed,
	// store.ErrReplaced). The child is
	// stopped at once and the stream is given up; the operator must act.
	Corrupt
	// Bug means a programming error: a panic with a runtime.Error, a failed assertion or
	// any non-error value. The child is restarted once, with backoff, and logged at error
	// level with the reason (and the panic's stack, [KeepStack]); a second Bug while the
	// first still counts stops it.
	Bug
)

// String returns the class's lower-case name: "transient", "poison", "corrupt" or "bug";
// "class(N)" for a value that is none of them.
func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Poison:
		return "poison"
	case Corrupt:
		return "corrupt"
	case Bug:
		return "bug"
	default:
		return fmt.Sprintf("class(%d)", uint8(c))
	}
}

// valid reports whether c is one of the four classes.
func (c Class) valid() bool { return c >= Transient && c <= Bug }

// Failure is an error tagged with its class. Actors panic with a *Failure (built by
// [Fail]), or return one to the code that panics, so that the supervisor applies the
// directive of its class rather than a guess.
type Failure struct {
	// Class decides what the supervisor does: see the constants of [Class].
	Class Class
	// Err is the cause; it may be nil.
	Err error
	// Expected marks a Transient failure that is no fault ([Restart]): the child starts
	// again from its checkpoint because what it works on changed under it. It does not
	// count within the window, only in a row without progress (a child that restarts so
	// for ever without progress is still given up), and restarts after the shortest
	// back-off, logged at info.
	Expected bool
}

// Error returns the class and the cause, e.g. "transient: archive: archive unavailable".
func (f *Failure) Error() string {
	if f.Err == nil {
		return f.Class.String()
	}
	return f.Class.String() + ": " + f.Err.Error()
}

// Unwrap returns the cause, so errors.Is and errors.As see through a Failure.
func (f *Failure) Unwrap() error { return f.Err }

// Fail returns a Failure of class c caused by err. An actor fails with
// panic(supervisor.Fail(supervisor.Transient, err)). A Failure of class c already is one:
// it is returned as it is, so that its class is said once.
func Fail(c Class, err error) *Failure {
	if f, ok := err.(*Failure); ok && f != nil && f.Class == c {
		return f
	}
	return &Failure{Class: c, Err: err}
}

// Restart returns the Failure of a child that starts again on purpose, because what it
// works on changed under it (for ferry: a recording extended while its replay read it),
// caused by err: Transient and [Failure.Expected]. An actor restarts with
// panic(supervisor.Restart(err)).
func Restart(err error) *Failure { return &Failure{Class: Transient, Err: err, Expected: true} }

// expected reports whether reason is a [Restart].
func expected(reason any) bool {
	err, ok := reason.(error)
	var f *Failure
	return ok && errors.As(err, &f) && f != nil && f.Class == Transient && f.Expected
}

// Classify returns the class of a failure reason, the value a child actor panicked with.
// The first rule that matches wins:
//
//  1. an error wrapping a [*Failure] has that Failure's class ([Bug] if the class is not
//     one of the four, or the Failure is nil);
//  2. an error matching store.ErrCorrupt, store.ErrUnknownVersion, store.ErrStreamChanged,
//     store.ErrResetFailed, store.ErrReplaced or store.ErrPositionRegressed (the store holds
//     a later checkpoint than ferry's: a second writer, or a bug) is [Corrupt]; one matching
//     store.ErrInvalid or store.ErrClosed (a call the store can never take) is [Bug];
//  3. an error matching archive.ErrRecordingUnknown is [Poison];
//  4. an error wrapping a runtime.Error is [Bug];
//  5. any other error is [Transient];
//  6. any value that is not an error (a string, nil, ...) is [Bug].
func Classify(reason any) Class {
	err, ok := reason.(error)
	if !ok {
		return Bug
	}
	var f *Failure
	if errors.As(err, &f) {
		if f == nil || !f.Class.valid() {
			return Bug
		}
		return f.Class
	}
	switch {
	case errors.Is(err, store.ErrCorrupt),
		errors.Is(err, store.ErrUnknownVersion),
		errors.Is(err, store.ErrStreamChanged),
		errors.Is(err, store.ErrResetFailed),
		errors.Is(err, store.ErrReplaced),
		errors.Is(err, store.ErrPositionRegressed):
		return Corrupt
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrClosed):
		return Bug
	case errors.Is(err, archive.ErrRecordingUnknown):
		return Poison
	}
	var re runtime.Error
	if errors.As(err, &re) {
		return Bug
	}
	return Transient
}
