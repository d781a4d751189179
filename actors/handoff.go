package actors

import "sync"

// handoff passes what a task goroutine made — a Pulsar producer, an opened replay, the
// transport mode's live subscription — to the actor incarnation that asked for it, which may
// have let go meanwhile (stopped with its stream or its recording, restarted, drained): then
// whichever of the two comes second closes it. Sent to a stopped actor, it would be a dead
// letter, and left open a producer keeps its name taken on the broker (ProducerBusy: the
// recording's next publisher in this process could never create its own), a replay keeps
// the archive replaying — a live recording for ever — to a subscription nobody reads, and a
// live IPC or spy subscription nobody polls holds the application's publisher back.
type handoff[T any] struct {
	mu        sync.Mutex
	v         T
	has       bool
	abandoned bool
}

// offer hands over v; false: the incarnation let go, and the caller closes v.
func (h *handoff[T]) offer(v T) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.abandoned {
		return false
	}
	h.v, h.has = v, true
	return true
}

// take returns what was offered, once; ok is false if nothing was, or the incarnation let go
// of it (and closed it).
func (h *handoff[T]) take() (v T, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.takeLocked()
}

// abandon says the incarnation let go: it returns what was offered and not taken (ok), for
// the caller to close; what is offered later is closed by the goroutine that made it.
func (h *handoff[T]) abandon() (v T, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.abandoned = true
	return h.takeLocked()
}

func (h *handoff[T]) takeLocked() (v T, ok bool) {
	v, ok = h.v, h.has
	var zero T
	h.v, h.has = zero, false
	return v, ok
}
