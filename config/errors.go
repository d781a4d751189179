package config

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrSyntax reports a file that is not one YAML document holding a mapping
// of keys. It is returned alone: nothing else is checked.
var ErrSyntax = errors.New("config: invalid YAML")

// ErrTooLarge reports a configuration larger than [MaxSize] bytes.
var ErrTooLarge = errors.New("config: file too large")

// ErrUnknownKey reports a key ferry does not know: a typo, or a key of
// another version. Every such [*KeyError] matches it with errors.Is.
var ErrUnknownKey = errors.New("config: unknown key")

// ErrWrongMode reports a key that belongs to the mode not selected by
// `mode`. It is decided by the key's presence (in the file or the
// environment), never by its value: a key set to its default value is
// rejected too.
var ErrWrongMode = errors.New("config: key of the other mode")

// ErrMissing reports a required key that is absent.
var ErrMissing = errors.New("config: required key missing")

// ErrInvalid reports a value of the wrong type, with a bad syntax, or out
// of range. Values are never clamped or silently ignored.
var ErrInvalid = errors.New("config: invalid value")

// ErrConflict reports keys that cannot be used together: mutually
// exclusive keys, a key given twice, or two streams with the same name,
// the same channel and stream id, or (in archive mode) the same topic.
var ErrConflict = errors.New("config: conflicting keys")

// KeyError describes one problem with one key. [Parse] and [Load] return
// every KeyError found, joined with errors.Join, in file order (errors not
// tied to a line of the file come first). A KeyError matches one of
// [ErrUnknownKey], [ErrWrongMode], [ErrMissing], [ErrInvalid] or
// [ErrConflict] with errors.Is, and its cause, if any, with errors.As (for
// example a *channel.ParamError).
type KeyError struct {
	// Path is the key, e.g. "pulsar.service_url" or
	// "streams[1].start_position".
	Path string
	// Value is the value as written, "" when the key is missing, and
	// "[redacted]" for secrets.
	Value string
	// Source is where the value came from: "line 14", the environment
	// variable's name, or "" when the key is missing.
	Source string
	// Line is the 1-based line in the file, or 0 when the problem is not
	// tied to a line (an environment variable, a missing top-level key).
	Line int
	// Problem says what is wrong.
	Problem string
	// Fix says what to write instead.
	Fix string
	// Kind is the sentinel the error matches.
	Kind error
	// Err is the underlying cause, or nil.
	Err error
}

// Error implements error. The form is
// `config: <path> = "<value>" (<source>): <problem>; fix: <fix>`; the
// value and source are left out when there are none.
func (e *KeyError) Error() string {
	s := "config: " + e.Path
	switch {
	case e.Source == "":
	case e.Value == "" && e.Line != 0: // a list, a mapping, or a key
		s += " (" + e.Source + ")"
	default:
		s += " = " + strconv.Quote(clip(e.Value)) + " (" + e.Source + ")"
	}
	s += ": " + e.Problem
	if e.Fix != "" {
		s += "; fix: " + e.Fix
	}
	return s
}

// Unwrap returns Kind and, if set, Err.
func (e *KeyError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// maxQuoted bounds how much of a value an error quotes.
const maxQuoted = 120

func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}

// syntaxError wraps a YAML decoder error.
func syntaxError(err error) error {
	return fmt.Errorf("%w: %w", ErrSyntax, err)
}
