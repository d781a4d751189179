package supervisor

import "errors"

// Errors this package returns. Test them with errors.Is.
var (
	// ErrInvalidPolicy is wrapped by [Policy.Validate] and [NewStrategy] when a policy
	// cannot be applied; the message names the offending field. It is a configuration
	// error: fix the settings, retrying cannot help.
	ErrInvalidPolicy = errors.New("supervisor: invalid restart policy")
	// ErrNoGiveUp is returned by [NewStrategy] without a [GiveUp] callback: a stream that
	// is given up must always be reported.
	ErrNoGiveUp = errors.New("supervisor: no GiveUp callback")
)
