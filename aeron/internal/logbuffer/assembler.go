package logbuffer

import (
	"encoding/binary"
	"fmt"
)

// Reassembly of fragmented messages (aeron-protocol.md §5.7).
//
// A publisher splits a message longer than its MTU into consecutive frames
// flagged BEGIN, (none)…, END, all in one term. The assemblers below
// collect them per session id and hand the whole message on. They keep
// their state between polls, so a message whose fragments arrive over
// several polls (a small fragment limit, a poll that stopped in front of a
// frame not yet written) is delivered once it is complete. A caller must
// therefore keep one assembler for the life of an image and not create
// one per poll.

// AssemblerStats counts what an assembler did. Messages it discarded or
// fragments it could not use are data the application never sees; they
// are counted so that they never look like progress.
type AssemblerStats struct {
	// Delivered counts whole messages handed to the handler (for a
	// controlled assembler: not aborted).
	Delivered uint64
	// Discarded counts partial messages dropped: a continuation at the
	// wrong term offset (a fragment is missing), a new message starting
	// before the previous one ended, a message growing beyond the maximum
	// message length, or a Reset/FreeSession with a message in progress.
	Discarded uint64
	// Orphaned counts continuation fragments that could not be used: no
	// message was in progress for their session (the subscriber joined
	// mid-message, or the message was already discarded), or the fragment
	// did not continue the one in progress (which is then discarded too).
	Orphaned uint64
}

// FragmentAssembler is a [FragmentHandler] that reassembles fragmented
// messages and passes whole messages to its own handler. Unfragmented
// messages pass straight through, without a copy. A reassembled message is
// delivered from the assembler's buffer with a header whose FrameLength is
// HeaderLength + the message length, whose Flags are BEGIN|END, whose
// Position is the position after the last fragment and whose other fields
// are the first fragment's.
//
// A continuation fragment is accepted only if it is in the same term as
// the previous fragment of its session and starts at that fragment's
// aligned end; otherwise the partial message is discarded (see
// [AssemblerStats]). Each session's buffer grows at most to the maximum
// message length given to the constructor.
//
// If the handler panics on a reassembled message, the assembler forgets
// that message's last fragment, so that its delivery again (an image poll
// delivers again the fragment a handler panicked on) completes the same
// message.
//
// FragmentAssembler is not safe for concurrent use; it belongs to the
// goroutine that polls.
type FragmentAssembler struct {
	r       reassembly
	handler FragmentHandler
	// delivering is the partial message whose reassembled payload the
	// handler is being called with, for Detach; nil otherwise.
	delivering *partialMessage
	// whole is the payload of the unfragmented message the handler is
	// being called with (a view of the log), for Detach, while wholeHeld.
	whole     []byte
	wholeHeld bool
}

// NewFragmentAssembler returns an assembler that delivers whole messages
// of at most maxMessageLength bytes ([Log.MaxMessageLength]) to handler.
// maxMessageLength must be positive.
func NewFragmentAssembler(maxMessageLength int, handler FragmentHandler) *FragmentAssembler {
	return &FragmentAssembler{r: newReassembly(maxMessageLength), handler: handler}
}

// OnFragment is the [FragmentHandler] to poll with. Store the method value
// once (h := a.OnFragment) rather than creating it for every poll.
func (a *FragmentAssembler) OnFragment(payload []byte, header Header) {
	if a.r.inProgress == 0 && header.Flags().IsUnfragmented() {
		a.deliverWhole(payload, header)
		return
	}
	c, ok := a.r.add(payload, header)
	if !ok {
		return
	}
	a.delivering = c.partial
	if c.partial == nil {
		a.whole, a.wholeHeld = c.payload, true
	}
	returned := false
	defer func() {
		a.delivering, a.whole, a.wholeHeld = nil, nil, false // also if the handler panics
		if !returned {
			a.r.unwind(c)
		}
	}()
	a.handler(c.payload, c.header)
	returned = true
	a.r.finish(c)
}

// deliverWhole hands a message of one fragment to the handler while no session has a message
// in progress, the common case, kept apart from add: add's general path costs a map lookup
// and the copy of its completion, which at 32-byte messages was a third of a replay's
// reading (docs/performance.md, "Aeron replay").
func (a *FragmentAssembler) deliverWhole(payload []byte, header Header) {
	a.whole, a.wholeHeld = payload, true
	defer a.forgetWhole() // also if the handler panics
	a.handler(payload, header)
	a.r.stats.Delivered++
}

func (a *FragmentAssembler) forgetWhole() { a.whole, a.wholeHeld = nil, false }

// Detach gives the handler the payload it is being called with, to keep.
// Called from the handler while it handles a reassembled message, it
// returns that message's buffer, which the assembler then forgets (it
// allocates a new one, of the same size, for the session's next message);
// while it handles a message of one fragment, whose payload is a view of
// the log, it returns a copy. It returns nil when no handler call is in
// progress, and when the message was detached already.
//
// A handler that keeps every message saves a copy of each reassembled one
// this way: the copy from the log into the assembler's buffer is the only
// one. It also saves most of an allocation: copies of one-fragment messages
// and the buffers that follow a detached one, of up to 32 KiB each, are
// carved one after the other from blocks of 256 KiB, so that a stream of
// such messages costs one allocation per block rather than one per message.
// A detached buffer therefore keeps its block alive (as does the buffer of
// a session that stops detaching): a handler that keeps only a few of many
// messages should copy those and not detach.
func (a *FragmentAssembler) Detach() []byte {
	if a.wholeHeld {
		a.wholeHeld = false
		msg := a.r.allocate(len(a.whole))[:len(a.whole)]
		copy(msg, a.whole)
		if msg == nil {
			msg = []byte{}
		}
		return msg
	}
	p := a.delivering
	if p == nil || p.buf == nil {
		return nil
	}
	msg := p.buf
	if a.r.pool == nil {
		// Cut to its length: a carved buffer's block goes on past it. A pool's buffer keeps
		// its whole capacity, its class's, for Put to take it back.
		msg = msg[:len(msg):len(msg)]
	}
	p.nextCapacity = len(msg)
	p.buf = nil
	return msg
}

// UsePool makes the assembler take the buffers it hands over from pool
// (and the buffers it grows while reassembling), instead of carving them
// from blocks: for a handler that gives every detached buffer back with
// [BufferPool.Put] once it is done with it. Call it before the first
// fragment.
func (a *FragmentAssembler) UsePool(pool *BufferPool) { a.r.pool = pool }

// Stats returns the assembler's counts.
func (a *FragmentAssembler) Stats() AssemblerStats { return a.r.stats }

// FreeSession discards any message in progress for sessionID and frees
// its buffer. Call it when that session's image goes away.
func (a *FragmentAssembler) FreeSession(sessionID int32) { a.r.freeSession(sessionID) }

// Reset discards every message in progress and frees every buffer, for a
// subscriber that moves to a different stream (say, the next recording).
func (a *FragmentAssembler) Reset() { a.r.reset() }

// ControlledFragmentAssembler is the [ControlledFragmentHandler]
// counterpart of [FragmentAssembler]: it returns its handler's [Action]
// for the fragment that completed a message, and [Continue] for every
// other fragment. When the handler aborts a reassembled message, or panics
// on it, the assembler forgets only the last fragment, so the redelivery
// of that fragment by the next poll completes the message again.
//
// ControlledFragmentAssembler is not safe for concurrent use.
type ControlledFragmentAssembler struct {
	r       reassembly
	handler ControlledFragmentHandler
}

// NewControlledFragmentAssembler is [NewFragmentAssembler] for a
// controlled handler.
func NewControlledFragmentAssembler(maxMessageLength int, handler ControlledFragmentHandler) *ControlledFragmentAssembler {
	return &ControlledFragmentAssembler{r: newReassembly(maxMessageLength), handler: handler}
}

// OnFragment is the [ControlledFragmentHandler] to poll with.
func (a *ControlledFragmentAssembler) OnFragment(payload []byte, header Header) Action {
	c, ok := a.r.add(payload, header)
	if !ok {
		return Continue
	}
	if c.partial == nil {
		// A message of one fragment: the assembler holds nothing of it to undo if the
		// handler panics, and the common case goes without deliverReassembled's defer.
		return a.settle(c, a.handler(c.payload, c.header))
	}
	return a.deliverReassembled(c)
}

// deliverReassembled hands a reassembled message to the handler and, if the handler
// panics, undoes the message's last fragment (see unwind). Its defer is paid per
// reassembled message, which has cost a copy of more than a frame already.
func (a *ControlledFragmentAssembler) deliverReassembled(c completion) Action {
	returned := false
	defer func() {
		if !returned {
			a.r.unwind(c)
		}
	}()
	action := a.handler(c.payload, c.header)
	returned = true
	return a.settle(c, action)
}

// settle records what the handler did with a whole message: an aborted one waits for
// its last fragment again, any other is delivered.
func (a *ControlledFragmentAssembler) settle(c completion, action Action) Action {
	if action == Abort {
		a.r.abort(c)
	} else {
		a.r.finish(c)
	}
	return action
}

// Stats returns the assembler's counts.
func (a *ControlledFragmentAssembler) Stats() AssemblerStats { return a.r.stats }

// FreeSession is [FragmentAssembler.FreeSession].
func (a *ControlledFragmentAssembler) FreeSession(sessionID int32) { a.r.freeSession(sessionID) }

// Reset is [FragmentAssembler.Reset].
func (a *ControlledFragmentAssembler) Reset() { a.r.reset() }

// reassembly is the state both assemblers share: one partial message per
// session.
type reassembly struct {
	maxMessageLength int
	partials         map[int32]*partialMessage
	// inProgress is how many of partials are active: while it is 0, a message of one
	// fragment has nothing to discard.
	inProgress int
	stats      AssemblerStats
	// block is what is left of the block detached copies and the buffers
	// after a detached one are carved from (see allocate); with a pool,
	// they come from it instead.
	block []byte
	pool  *BufferPool
}

// The blocks detached copies and the buffers after a detached one are
// carved from. A buffer carved from a block keeps all of it alive, so only
// buffers of up to carveMax bytes, an eighth of a block, are carved.
const (
	blockSize = 256 << 10
	carveMax  = blockSize / 8
)

// partialMessage is a session's message in progress.
type partialMessage struct {
	active bool
	// header is a copy of the BEGIN fragment's header, which becomes the
	// whole message's when the END fragment arrives.
	header         [HeaderLength]byte
	buf            []byte // payload so far, of at most maxMessageLength bytes (a pool may round its capacity up)
	nextTermOffset int64  // where the next fragment must start
	// nextCapacity is the capacity to give buf when it is allocated again
	// after [FragmentAssembler.Detach] took it: the size of the message
	// detached, which the next one is likely to have.
	nextCapacity int
}

// completion is a whole message ready for delivery.
type completion struct {
	payload  []byte
	header   Header
	partial  *partialMessage // nil for an unfragmented message
	rollback int             // length of partial.buf before the last fragment
}

func newReassembly(maxMessageLength int) reassembly {
	if maxMessageLength <= 0 {
		panic(fmt.Sprintf("assertion failed: logbuffer: maximum message length %d is not positive", maxMessageLength))
	}
	return reassembly{maxMessageLength: maxMessageLength, partials: make(map[int32]*partialMessage)}
}

// add takes one fragment and reports whether a whole message is ready.
func (r *reassembly) add(payload []byte, h Header) (completion, bool) {
	sessionID, flags := h.SessionID(), h.Flags()
	p := r.partials[sessionID]
	if flags.IsUnfragmented() {
		// A session's fragments are contiguous, so a whole message means
		// the rest of any partial one is lost.
		r.discard(p)
		return completion{payload: payload, header: h}, true
	}
	if flags.IsBegin() {
		if p == nil {
			p = &partialMessage{}
			r.partials[sessionID] = p
		}
		r.discard(p)
		if r.append(p, payload) {
			r.activate(p)
			p.header = *h.frame // a copy: the fragment's view is gone after this call
			p.nextTermOffset = nextTermOffset(h)
		}
		return completion{}, false
	}

	if p == nil || !p.active {
		r.stats.Orphaned++
		return completion{}, false
	}
	first := Header{frame: &p.header}
	if h.TermID() != first.TermID() || int64(h.TermOffset()) != p.nextTermOffset {
		r.discard(p)
		r.stats.Orphaned++
		return completion{}, false
	}
	rollback := len(p.buf)
	if !r.append(p, payload) {
		return completion{}, false
	}
	if !flags.IsEnd() {
		p.nextTermOffset = nextTermOffset(h)
		return completion{}, false
	}
	// The whole message's header: the first fragment's, with the message's
	// length (≤ HeaderLength + maxMessageLength ≤ HeaderLength + 16 MiB) and
	// the END flag. Both are rewritten, not accumulated, so that an aborted
	// delivery completes the same way when the END fragment comes again.
	binary.LittleEndian.PutUint32(p.header[FrameLengthOffset:], uint32(HeaderLength+len(p.buf)))
	p.header[FlagsOffset] |= uint8(flags)
	whole := Header{frame: &p.header, position: h.Position()}
	return completion{payload: p.buf, header: whole, partial: p, rollback: rollback}, true
}

// finish records a delivered message and empties its partial buffer for
// the session's next message.
func (r *reassembly) finish(c completion) {
	r.stats.Delivered++
	if c.partial != nil {
		r.deactivate(c.partial)
		c.partial.buf = c.partial.buf[:0]
	}
}

// abort undoes the last fragment of an aborted message, leaving the
// partial message as it was before that fragment arrived.
func (r *reassembly) abort(c completion) {
	if c.partial != nil {
		c.partial.buf = c.partial.buf[:c.rollback]
	}
}

// unwind undoes the last fragment of a message whose handler panicked. An image poll
// delivers the fragment a handler panicked on again (aeron.Image.Poll), and that delivery
// must complete the same message, as after an Abort: were the fragment left in the
// buffer, it would be appended a second time and the message delivered with its tail
// twice. A handler that detached the buffer ([FragmentAssembler.Detach]) before it
// panicked took the message with it, and the fragments before the last are gone: the
// message is discarded (counted), and the last fragment, when it comes again, counted
// orphaned rather than delivered alone as if it were the message.
func (r *reassembly) unwind(c completion) {
	p := c.partial
	if p == nil || !p.active {
		return // a message of one fragment, or a session the handler freed (FreeSession, Reset)
	}
	if p.buf == nil {
		r.discard(p)
		return
	}
	r.abort(c)
}

// append adds payload to p's buffer, growing it at most to the maximum
// message length. A message that would grow beyond it is discarded and
// append reports false.
func (r *reassembly) append(p *partialMessage, payload []byte) bool {
	need := len(p.buf) + len(payload)
	if need > r.maxMessageLength {
		r.activate(p) // so that discard counts it
		r.discard(p)
		return false
	}
	if need > cap(p.buf) {
		capacity := min(max(2*cap(p.buf), need, p.nextCapacity), r.maxMessageLength)
		var grown []byte
		switch {
		case r.pool != nil:
			grown = r.pool.Get(capacity)[:len(p.buf)]
		case p.buf == nil && p.nextCapacity > 0:
			grown = r.allocate(capacity) // the first buffer after a detached one
		default:
			grown = make([]byte, len(p.buf), capacity)
		}
		copy(grown, p.buf)
		r.pool.Put(p.buf) // the partial message's own: nothing else holds it
		p.buf = grown
	}
	p.buf = append(p.buf, payload...)
	return true
}

// allocate returns an empty buffer of the given capacity for a detached
// copy or the message after a detached one: carved from the current block
// if it is small enough (capped, so that appending to one buffer never
// writes into the next), a buffer of its own otherwise.
func (r *reassembly) allocate(capacity int) []byte {
	if r.pool != nil {
		return r.pool.Get(capacity)
	}
	if capacity > carveMax {
		return make([]byte, 0, capacity)
	}
	if capacity > len(r.block) {
		r.block = make([]byte, blockSize)
	}
	b := r.block[:0:capacity]
	r.block = r.block[capacity:]
	return b
}

// activate marks p as a message in progress.
func (r *reassembly) activate(p *partialMessage) {
	if !p.active {
		p.active = true
		r.inProgress++
	}
}

// deactivate marks p as no message in progress.
func (r *reassembly) deactivate(p *partialMessage) {
	if p.active {
		p.active = false
		r.inProgress--
	}
}

// discard drops p's message in progress, if any, counting it.
func (r *reassembly) discard(p *partialMessage) {
	if p == nil || !p.active {
		return
	}
	r.stats.Discarded++
	r.deactivate(p)
	p.buf = p.buf[:0]
}

func (r *reassembly) freeSession(sessionID int32) {
	r.discard(r.partials[sessionID])
	delete(r.partials, sessionID)
}

func (r *reassembly) reset() {
	for id := range r.partials {
		r.freeSession(id)
	}
}

// nextTermOffset returns where the frame after the fragment h describes
// starts. It is computed in 64 bits: the header may come from anywhere.
func nextTermOffset(h Header) int64 {
	return int64(h.TermOffset()) + int64(align(int(h.FrameLength()), FrameAlignment))
}
