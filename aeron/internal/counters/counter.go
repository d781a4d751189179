package counters

import (
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/internal/shm"
)

// Counter is one counter: its values record and its metadata record. It is
// a small value obtained from a [Reader]; the zero Counter is not usable.
//
// The driver may free the counter and later reuse its id for another one
// at any time. Everything read from a Counter is therefore a snapshot, and
// code holding a Counter must re-check its state, type id and key before
// trusting its value.
type Counter struct {
	id       CounterID
	metadata shm.Buffer // MetadataLength bytes
	value    shm.Buffer // ValueLength bytes
}

// ID returns the counter id.
func (c Counter) ID() CounterID { return c.id }

// Value returns the counter's value.
func (c Counter) Value() int64 {
	// Acquire: pairs with the owner's release store of each new value
	// (driver positions and limits, the archive's recorded position, a
	// client's heartbeat), so what that owner wrote before the value is
	// visible to whoever acts on it.
	return c.value.LoadInt64(ValueOffset)
}

// RegistrationID returns the registration id of the entity the counter
// belongs to.
func (c Counter) RegistrationID() int64 {
	// Acquire: pairs with the driver's release store when it (re)assigns
	// the counter.
	return c.value.LoadInt64(RegistrationIDOffset)
}

// OwnerID returns the counter's owner id (the client id for counters a
// client added).
func (c Counter) OwnerID() int64 {
	// Atomic for a consistent 64-bit read; the driver sets it once per
	// allocation, before publishing the record state.
	return c.value.LoadInt64(OwnerIDOffset)
}

// ReferenceID returns the counter's reference id.
func (c Counter) ReferenceID() int64 {
	return c.value.LoadInt64(ReferenceIDOffset) // atomic: see OwnerID
}

// State returns the record's state.
func (c Counter) State() RecordState {
	// Acquire: pairs with the driver's release store of StateAllocated,
	// which it makes after writing the type id, key and label, so those
	// reads below see a complete record (unless it is freed meanwhile).
	return RecordState(c.metadata.LoadInt32(StateOffset))
}

// TypeID returns the counter's type id. Read the state first: the type id
// is meaningful only for an allocated counter.
func (c Counter) TypeID() TypeID {
	return TypeID(c.metadata.GetInt32(TypeIDOffset)) // published by the state load
}

// FreeForReuseDeadline returns the epoch-ms time after which the driver
// may reuse a freed counter's id; it is [NotFreeToReuse] while allocated.
func (c Counter) FreeForReuseDeadline() int64 {
	return c.metadata.LoadInt64(FreeForReuseDeadlineOffset) // atomic for a consistent 64-bit read
}

// Key returns a copy of the counter's key (MaxKeyLength bytes; how many of
// them are meaningful depends on the type id).
func (c Counter) Key() []byte {
	key := make([]byte, MaxKeyLength)
	copy(key, c.key())
	return key
}

// key returns the key in shared memory.
func (c Counter) key() []byte {
	return c.metadata.Sub(KeyOffset, MaxKeyLength).Bytes()
}

// Label returns the counter's label (ASCII). It returns an error matching
// [ErrCorrupt] if the stored length does not fit the label field.
func (c Counter) Label() (string, error) {
	// Acquire: the driver writes the label bytes, then the length with a
	// release store, also when it appends to an existing label, so the
	// bytes up to the length we load are complete.
	n := c.metadata.LoadInt32(LabelLengthOffset)
	if n < 0 || n > MaxLabelLength {
		return "", &CorruptError{ID: c.id, Reason: fmt.Sprintf("label length %d outside 0..%d", n, MaxLabelLength)}
	}
	return string(c.metadata.Sub(LabelOffset, int(n)).Bytes()), nil
}
