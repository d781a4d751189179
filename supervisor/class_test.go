package supervisor

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/store"
)

// recovered runs f and returns what it panicked with.
func recovered(f func()) (reason any) {
	defer func() { reason = recover() }()
	f()
	return nil
}

func nilMapWrite() any {
	return recovered(func() {
		var m map[string]int
		m["x"] = 1
	})
}

func indexOutOfRange() any {
	return recovered(func() {
		s := []int{1, 2, 3}
		i := len(s)
		_ = s[i]
	})
}

func TestClassify(t *testing.T) {
	errPlain := errors.New("pulsar: connection refused")
	for _, tc := range []struct {
		name   string
		reason any
		want   Class
	}{
		{"transient failure", Fail(Transient, errPlain), Transient},
		{"poison failure", Fail(Poison, errPlain), Poison},
		{"corrupt failure", Fail(Corrupt, errPlain), Corrupt},
		{"bug failure", Fail(Bug, errPlain), Bug},
		{"failure without cause", Fail(Poison, nil), Poison},
		{"wrapped failure", fmt.Errorf("replay: %w", Fail(Poison, errPlain)), Poison},
		{"failure class wins over its cause", Fail(Transient, store.ErrCorrupt), Transient},
		{"failure of no valid class", Fail(0, errPlain), Bug},
		{"nil failure", (*Failure)(nil), Bug},
		{"store corrupt error", &store.CorruptError{File: "f.db", Stream: "s", Key: "k", Reason: "checksum mismatch"}, Corrupt},
		{"wrapped store corrupt error", fmt.Errorf("load: %w", &store.CorruptError{File: "f.db"}), Corrupt},
		{"store unknown version", &store.UnknownVersionError{File: "f.db", Version: 9, Supported: 1}, Corrupt},
		{"store stream changed", &store.StreamChangedError{File: "f.db"}, Corrupt},
		{"store reset failed", fmt.Errorf("reset s: %w", store.ErrResetFailed), Corrupt},
		{"store sentinel corrupt", store.ErrCorrupt, Corrupt},
		{"store locked is transient", fmt.Errorf("open: %w", store.ErrLocked), Transient},
		// A save the store refuses as it stands is refused again: retried, it would hold
		// every recording's checkpoint of the stream back for good.
		{"store checkpoint regressed", fmt.Errorf("save: %w", store.ErrPositionRegressed), Corrupt},
		{"store invalid argument", fmt.Errorf("save: %w", store.ErrInvalid), Bug},
		{"store closed", fmt.Errorf("save: %w", store.ErrClosed), Bug},
		{"recording unknown", archive.ErrRecordingUnknown, Poison},
		{"wrapped recording unknown", fmt.Errorf("replay recording 7: %w", archive.ErrRecordingUnknown), Poison},
		{"archive refusal for an unknown recording", &archive.Error{Request: "replay", Code: 5, Message: "unknown recording id: 7"}, Poison},
		{"other archive refusal", &archive.Error{Request: "replay", Code: 1, Message: "generic"}, Transient},
		{"archive unavailable", fmt.Errorf("connect: %w", archive.ErrArchiveUnavailable), Transient},
		{"nil map write", nilMapWrite(), Bug},
		{"index out of range", indexOutOfRange(), Bug},
		{"wrapped runtime error", fmt.Errorf("step: %w", indexOutOfRange().(error)), Bug},
		{"string panic", "assertion failed: ack floor moved backwards", Bug},
		{"int panic", 42, Bug},
		{"nil reason", nil, Bug},
		{"plain error", errPlain, Transient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Classify(tc.reason); got != tc.want {
				t.Errorf("Classify(%#v) = %v, want %v", tc.reason, got, tc.want)
			}
		})
	}
}

// TestRuntimeErrorsAreReal guards TestClassify's Bug rows: they must really be runtime errors.
func TestRuntimeErrorsAreReal(t *testing.T) {
	for name, reason := range map[string]any{"nil map write": nilMapWrite(), "index out of range": indexOutOfRange()} {
		if _, ok := reason.(runtime.Error); !ok {
			t.Errorf("%s recovered %T, want a runtime.Error", name, reason)
		}
	}
}

func TestClassString(t *testing.T) {
	for _, tc := range []struct {
		c    Class
		want string
	}{
		{Transient, "transient"},
		{Poison, "poison"},
		{Corrupt, "corrupt"},
		{Bug, "bug"},
		{0, "class(0)"},
		{9, "class(9)"},
	} {
		if got := tc.c.String(); got != tc.want {
			t.Errorf("Class(%d).String() = %q, want %q", uint8(tc.c), got, tc.want)
		}
	}
}

func TestFailure(t *testing.T) {
	cause := &store.CorruptError{File: "f.db", Reason: "bad"}
	f := Fail(Corrupt, cause)
	if f.Class != Corrupt || f.Err != cause {
		t.Fatalf("Fail(Corrupt, cause) = %+v", f)
	}
	if got, want := f.Error(), "corrupt: "+cause.Error(); got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(f, store.ErrCorrupt) {
		t.Error("errors.Is(Fail(Corrupt, cause), store.ErrCorrupt) = false, want true")
	}
	var ce *store.CorruptError
	if !errors.As(fmt.Errorf("wrapped: %w", f), &ce) || ce != cause {
		t.Error("errors.As through a wrapped Failure did not find the cause")
	}
	if got := Fail(Poison, nil).Error(); got != "poison" {
		t.Errorf("Fail(Poison, nil).Error() = %q, want %q", got, "poison")
	}
	// A failure handed on in the class it has is not wrapped again; in another, it is.
	if again := Fail(Corrupt, f); again != f {
		t.Errorf("Fail(Corrupt, Fail(Corrupt, cause)) = %q, want the failure itself", again)
	}
	if got, want := Fail(Poison, f).Error(), "poison: corrupt: "+cause.Error(); got != want {
		t.Errorf("Fail(Poison, Fail(Corrupt, cause)).Error() = %q, want %q", got, want)
	}
}
