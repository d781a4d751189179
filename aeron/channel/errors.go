package channel

import (
	"errors"
	"fmt"
)

// ErrSyntax reports a string that is not an Aeron channel URI: wrong
// prefix, unknown media, a parameter without "=", an empty key, a byte
// outside printable ASCII, or more than [MaxLength] bytes. Every
// [*SyntaxError] matches it with errors.Is. It is a configuration error:
// retrying does not help.
var ErrSyntax = errors.New("channel: invalid URI syntax")

// ErrInvalidParam reports a parameter whose value Aeron would reject (or
// silently misread), or parameters that contradict each other. Every
// [*ParamError] matches it with errors.Is. It is a configuration error:
// retrying does not help.
var ErrInvalidParam = errors.New("channel: invalid parameter")

// maxQuoted bounds how much of a URI or value an error message quotes.
const maxQuoted = 120

// SyntaxError describes where and why a string is not a channel URI. It
// unwraps to [ErrSyntax].
type SyntaxError struct {
	// URI is the string given to Parse.
	URI string
	// Offset is the byte offset in URI where the problem was found.
	Offset int
	// Reason says what was wrong and what was expected.
	Reason string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("channel: invalid URI %q at offset %d: %s", clip(e.URI), e.Offset, e.Reason)
}

// Unwrap returns [ErrSyntax].
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// ParamError describes a rejected parameter. It unwraps to
// [ErrInvalidParam].
type ParamError struct {
	// Key is the offending parameter's key, e.g. "term-length"; "media"
	// or "uri" when the problem is the media or the URI's total length
	// (from [Builder.Build]).
	Key string
	// Value is its value as given ("" if the problem is that it is
	// missing).
	Value string
	// Allowed says what is allowed instead.
	Allowed string
}

// Error implements error.
func (e *ParamError) Error() string {
	return fmt.Sprintf("channel: invalid %s=%q: %s", e.Key, clip(e.Value), e.Allowed)
}

// Unwrap returns [ErrInvalidParam].
func (e *ParamError) Unwrap() error { return ErrInvalidParam }

func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}
