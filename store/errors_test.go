package store_test

import (
	"strings"
	"testing"

	"github.com/ferry-bridge/ferry/store"
)

// The errors that advise a reset say what becomes of what is published again: the broker's
// deduplication drops it only while the broker remembers its producer, which it forgets idle.
func TestResetAdviceSaysTheBrokerForgetsAnIdleProducer(t *testing.T) {
	for _, err := range []error{
		&store.CorruptError{File: "f", Stream: "orders", Key: "recording 7", Reason: "checksum mismatch"},
		&store.StreamChangedError{File: "f", Stored: store.Stream{Name: "orders", Topic: "a"}, Configured: store.Stream{Name: "orders", Topic: "b"}},
	} {
		if msg := err.Error(); !strings.Contains(msg, store.ResetCommand("orders")) || !strings.Contains(msg, "brokerDeduplicationProducerInactivityTimeoutMinutes, 6 hours by default") {
			t.Errorf("%T: %q; want the reset command and that the broker forgets a producer idle for brokerDeduplicationProducerInactivityTimeoutMinutes", err, msg)
		}
	}
}
