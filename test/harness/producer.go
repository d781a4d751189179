package harness

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Fault is what happens to one acknowledgement.
type Fault struct {
	kind  faultKind
	delay time.Duration
	err   error
}

type faultKind int

const (
	deliver faultKind = iota
	delayed
	held
	failed
	lost
	resent
)

// Deliver passes the acknowledgement on as the broker gave it.
func Deliver() Fault { return Fault{kind: deliver} }

// Delay passes it on d later, on another goroutine.
func Delay(d time.Duration) Fault { return Fault{kind: delayed, delay: d} }

// Hold keeps it until [Producer.Release]: held acknowledgements can be released in any
// order, which is how acknowledgements are reordered.
func Hold() Fault { return Fault{kind: held} }

// Fail replaces it with err, whatever the broker said (err nil: [ErrInjected]).
func Fail(err error) Fault {
	if err == nil {
		err = ErrInjected
	}
	return Fault{kind: failed, err: err}
}

// Lose drops it: the callback is never called.
func Lose() Fault { return Fault{kind: lost} }

// Resend loses the acknowledgement of a message the broker stored and sends the message
// again, as pulsar-client-go does with its pending messages after a reconnect (v0.19.0
// grabCnx): the re-send's acknowledgement — with deduplication, the broker's answer that it
// is a duplicate — is passed on instead. The client re-sends its pending queue in order, and
// matches each answer to the head of that queue (an answer for another sequence id is
// ignored), so the re-send waits until the real producer has called back every send it
// holds, and later sends wait for the re-send's answer. A message the broker refused is
// failed as it was.
func Resend() Fault { return Fault{kind: resent} }

// ErrInjected is the default error of [Fail].
var ErrInjected = errors.New("harness: injected send failure")

// Plan decides the fault for the acknowledgement of the n-th message sent through the
// producer (n from 0, in SendAsync call order). It is called on pulsar-client-go's
// goroutine and must not block.
type Plan func(n int, msg *pulsar.ProducerMessage) Fault

// Faults builds a plan from a table by message number; messages not in it are delivered.
func Faults(byNumber map[int]Fault) Plan {
	return func(n int, _ *pulsar.ProducerMessage) Fault {
		if f, ok := byNumber[n]; ok {
			return f
		}
		return Deliver()
	}
}

// Held is an acknowledgement kept by [Hold], as the broker gave it.
type Held struct {
	N   int // the message's number in send order
	ID  pulsar.MessageID
	Msg *pulsar.ProducerMessage
	Err error
	cb  func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

// Producer is a real pulsar.Producer whose acknowledgements go through a [Plan]. Every
// method it does not override is the real producer's; Flush and FlushWithCtx are
// overridden, as a flush promises that the callbacks of earlier sends have run. It is safe
// for concurrent use.
type Producer struct {
	pulsar.Producer
	plan Plan

	mu   sync.Mutex
	sent int    // messages sent so far, numbering them
	held []Held // acknowledgements kept by Hold, in arrival order
	lost int
	wg   sync.WaitGroup // delayed deliveries and releases in flight
	// undelivered has each send whose planned outcome has not reached its caller yet.
	undelivered map[int]*outstanding
	// slots is the real producer's pending queue as its callers see it: a send takes one,
	// and gives it back only when its outcome reaches the caller (see [Wrap]).
	slots       chan struct{}
	blockIfFull bool
	// closeAt is the number of the send the producer is closed under (see
	// [Producer.CloseWhileSending]); closeArmed says whether there is one.
	closeAt    int
	closeArmed bool
	closed     bool          // Close was called: held acknowledgements are never delivered
	closing    chan struct{} // closed by Close: a flush stops waiting for them
	// inReal counts the sends the real producer has not called back; resending, while a
	// Resend is under way, holds later sends back until it is closed.
	inReal    int
	resending chan struct{}
}

// outstanding is a send whose planned outcome has not reached its caller.
type outstanding struct {
	done chan struct{} // closed once the caller's callback has returned: what a flush waits for
	slot bool          // it holds one of the pending queue's slots
}

// Wrap puts plan between p and its callers' callbacks. opts must be the options p was
// created with: the decorator keeps p's pending queue (MaxPendingMessages, 1,000 if 0)
// full as long as an acknowledgement is delayed, held or lost. The real v0.19.0 producer
// frees a send's slot just before calling it back (sendRequest.done), so a genuinely late
// acknowledgement keeps its slot; the decorator's callers see that too. With
// DisableBlockIfQueueFull, a send that finds every slot taken is called back with
// pulsar.ErrSendQueueIsFull inside SendAsync, as the real one is; without it, SendAsync
// blocks until a slot frees or its ctx ends (then pulsar.ErrContextExpired, as the real
// one). The queue is counted across partitions, where the real one is per partition: the
// same for ferry, which routes a producer's sends to one partition. The client's memory
// limit (ClientOptions.MemoryLimitBytes) is not modelled.
func Wrap(p pulsar.Producer, opts pulsar.ProducerOptions, plan Plan) *Producer {
	capacity := opts.MaxPendingMessages
	if capacity <= 0 {
		capacity = 1000 // v0.19.0's default (newPartitionProducer)
	}
	return &Producer{
		Producer: p, plan: plan,
		undelivered: map[int]*outstanding{},
		slots:       make(chan struct{}, capacity), blockIfFull: !opts.DisableBlockIfQueueFull,
		closing: make(chan struct{}),
	}
}

// NumPartitions is the real producer's: how many partitions it publishes to. ferry's
// publisher asks before it sends.
func (p *Producer) NumPartitions() uint32 {
	return p.Producer.(interface{ NumPartitions() uint32 }).NumPartitions()
}

// CloseWhileSending has the n-th send (n from 0, in SendAsync order) meet the producer
// closing under it, as pulsar-client-go v0.19.0's own reconnect can when it closes a
// producer for good (TopicNotFound, TopicTerminated, fenced): SendAsync checks that the
// producer is open, then hands the message to its event loop on a channel the close has
// closed meanwhile. Here the real producer is closed (as its own close does, that fails the
// sends it has taken in and drops, never calling them back, those it has not) and
// SendAsync then panics with the runtime's own "send on closed channel", without taking
// the message, which is never called back either. It returns p.
func (p *Producer) CloseWhileSending(n int) *Producer {
	p.mu.Lock()
	p.closeAt, p.closeArmed = n, true
	p.mu.Unlock()
	return p
}

// SendAsync sends msg with the real producer and hands the broker's acknowledgement to
// the plan. A send the pending queue has no slot for (see [Wrap]) is not sent: its outcome
// is the real client's for a full queue, and goes through the plan as well.
func (p *Producer) SendAsync(ctx context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	p.mu.Lock()
	n := p.sent
	p.sent++
	closing := p.closeArmed && n == p.closeAt
	p.mu.Unlock()
	if closing {
		p.Close()
		handOver := make(chan *pulsar.ProducerMessage, 1)
		close(handOver)
		handOver <- msg // panics: send on closed channel
	}
	out := &outstanding{done: make(chan struct{})}
	p.mu.Lock()
	p.undelivered[n] = out
	p.mu.Unlock()
	outcome := func(id pulsar.MessageID, m *pulsar.ProducerMessage, err error) {
		switch f := p.plan(n, m); f.kind {
		case deliver:
			p.deliver(n, cb, id, m, err)
		case delayed:
			// Counted under the lock, while closed is false, as in release: a Close from
			// here on waits for it. Once Close has begun, nothing is counted: the real
			// Close may have returned at once (the client closed the producer itself) and
			// be waiting already, and an Add from zero then races its Wait. The outcome is
			// delivered now instead: the real producer calls back what it fails at close
			// on its own goroutine, without waiting, and a delay must not carry a callback
			// past Close.
			p.mu.Lock()
			if p.closed {
				p.mu.Unlock()
				p.deliver(n, cb, id, m, err)
				return
			}
			p.wg.Add(1)
			p.mu.Unlock()
			time.AfterFunc(f.delay, func() {
				defer p.wg.Done()
				p.deliver(n, cb, id, m, err)
			})
		case held:
			p.mu.Lock()
			p.held = append(p.held, Held{N: n, ID: id, Msg: m, Err: err, cb: cb})
			p.mu.Unlock()
		case failed:
			p.deliver(n, cb, nil, m, f.err)
		case lost:
			p.mu.Lock()
			p.lost++
			p.mu.Unlock()
		case resent:
			p.mu.Lock()
			if p.closed || err != nil || p.resending != nil {
				p.mu.Unlock()
				p.deliver(n, cb, id, m, err)
				return
			}
			gate := make(chan struct{})
			p.resending = gate
			p.wg.Add(1)
			p.mu.Unlock()
			// Not on the client's goroutine that called back: the real sends in flight are
			// called back on it.
			go func() {
				defer p.wg.Done()
				for {
					p.mu.Lock()
					idle, closed := p.inReal == 0, p.closed
					p.mu.Unlock()
					if idle || closed {
						break
					}
					time.Sleep(time.Millisecond)
				}
				p.real(ctx, msg, func(id pulsar.MessageID, m *pulsar.ProducerMessage, err error) {
					p.deliver(n, cb, id, m, err)
					p.mu.Lock()
					p.resending = nil
					p.mu.Unlock()
					close(gate)
				})
			}()
		}
	}
	p.mu.Lock()
	gate := p.resending
	p.mu.Unlock()
	if gate != nil {
		select { // the client writes nothing new before its pending queue is sent again
		case <-gate:
		case <-p.closing:
		}
	}
	if err := p.takeSlot(ctx, out); err != nil {
		outcome(nil, msg, err)
		return
	}
	p.real(ctx, msg, outcome)
}

// real sends msg with the real producer, counting it until it is called back.
func (p *Producer) real(ctx context.Context, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	p.mu.Lock()
	p.inReal++
	p.mu.Unlock()
	p.Producer.SendAsync(ctx, msg, func(id pulsar.MessageID, m *pulsar.ProducerMessage, err error) {
		p.mu.Lock()
		p.inReal--
		p.mu.Unlock()
		cb(id, m, err)
	})
}

// takeSlot takes a slot of the pending queue for out, or says why the real producer would
// fail the send. A closed producer or a context already ended takes none: the real one
// fails such a send before it reserves anything (internalSendAsync).
func (p *Producer) takeSlot(ctx context.Context, out *outstanding) error {
	select {
	case <-p.closing:
		return nil
	default:
	}
	if ctx.Err() != nil {
		return nil
	}
	if !p.blockIfFull {
		select {
		case p.slots <- struct{}{}:
			out.slot = true
			return nil
		default:
			return pulsar.ErrSendQueueIsFull
		}
	}
	select {
	case p.slots <- struct{}{}:
		out.slot = true
		return nil
	case <-ctx.Done():
		return pulsar.ErrContextExpired
	case <-p.closing: // the real producer fails it
		return nil
	}
}

// Send is SendAsync and a wait for the (planned) acknowledgement, bounded by ctx: a lost
// or held acknowledgement makes it return ctx's error, as a hung broker would.
func (p *Producer) Send(ctx context.Context, msg *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	type ack struct {
		id  pulsar.MessageID
		err error
	}
	done := make(chan ack, 1)
	p.SendAsync(ctx, msg, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { done <- ack{id, err} })
	select {
	case a := <-done:
		return a.id, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Held returns the acknowledgements kept so far, in the order the broker gave them.
func (p *Producer) Held() []Held {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.held)
}

// ReleaseAll releases every held acknowledgement, in the order they were held.
func (p *Producer) ReleaseAll() {
	held := p.Held()
	numbers := make([]int, len(held))
	for i, h := range held {
		numbers[i] = h.N
	}
	p.Release(numbers...)
}

// Release delivers the held acknowledgements whose numbers are listed, in the order
// listed (the order that reorders them), and forgets them. Unknown numbers are ignored,
// and after [Producer.Close] nothing is delivered: the real producer calls nothing back
// once closed.
func (p *Producer) Release(numbers ...int) { p.release(nil, numbers) }

// ReleaseFailed is [Producer.Release], but each acknowledgement becomes a failure
// ([ErrInjected]), whatever the broker said: a failure that arrives when the test says.
func (p *Producer) ReleaseFailed(numbers ...int) { p.release(ErrInjected, numbers) }

func (p *Producer) release(fail error, numbers []int) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	var out []Held
	for _, n := range numbers {
		if i := slices.IndexFunc(p.held, func(h Held) bool { return h.N == n }); i >= 0 {
			out = append(out, p.held[i])
			p.held = slices.Delete(p.held, i, i+1)
		}
	}
	if len(out) == 0 {
		p.mu.Unlock()
		return
	}
	// Counted before the lock goes, while closed is false: a Close from here on waits for
	// these callbacks, and none comes after it returns.
	p.wg.Add(len(out))
	p.mu.Unlock()
	defer p.wg.Add(-len(out))
	for _, h := range out {
		if fail != nil {
			p.deliver(h.N, h.cb, nil, h.Msg, fail)
			continue
		}
		p.deliver(h.N, h.cb, h.ID, h.Msg, h.Err)
	}
}

// deliver calls send n's callback with its planned outcome. Its queue slot is freed just
// before, as v0.19.0 frees it (sendRequest.done); a flush waiting for it goes on only after
// the callback returned, as in v0.19.0 pendingItem.done runs the flush's callback after
// the sends'.
func (p *Producer) deliver(n int, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error), id pulsar.MessageID, m *pulsar.ProducerMessage, err error) {
	p.mu.Lock()
	out := p.undelivered[n]
	delete(p.undelivered, n)
	p.mu.Unlock()
	if out != nil && out.slot {
		<-p.slots
	}
	cb(id, m, err)
	if out != nil {
		close(out.done)
	}
}

// Flush is [Producer.FlushWithCtx] without a deadline, as the real Flush is: an
// acknowledgement held and never released, or lost, keeps it waiting until Close.
func (p *Producer) Flush() error { return p.FlushWithCtx(context.Background()) }

// FlushWithCtx flushes the real producer, then waits until every send made before it has
// had its planned outcome delivered to its caller. That is what a nil flush means in
// v0.19.0: internalFlush completes once the last pending send's receipt came, and the
// receipts call their sends back in order before that. A held or lost acknowledgement
// keeps it waiting, as an acknowledgement that never arrives keeps the real flush waiting:
// until it is released, ctx ends (ctx's error) or Close is called (ErrProducerClosed, what
// the real flush gives once its producer closes). An error of the real flush is returned
// at once, as the real one returns it whether or not every callback ran.
func (p *Producer) FlushWithCtx(ctx context.Context) error {
	p.mu.Lock()
	waits := make([]chan struct{}, 0, len(p.undelivered))
	for _, out := range p.undelivered {
		waits = append(waits, out.done)
	}
	p.mu.Unlock()
	if err := p.Producer.FlushWithCtx(ctx); err != nil {
		return err
	}
	for _, done := range waits {
		select {
		case <-done:
		case <-ctx.Done():
			return ctx.Err()
		case <-p.closing:
			return pulsar.ErrProducerClosed
		}
	}
	return nil
}

// Lost is how many acknowledgements the plan dropped.
func (p *Producer) Lost() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lost
}

// Close closes the real producer, which calls back every send it has taken in before it
// returns (and so has scheduled every delayed delivery; v0.19.0 drops, never calling them
// back, sends its event loop has not taken in yet), then waits for the delayed deliveries:
// like the real producer's, no callback comes after Close. An outcome the plan delays that
// comes once Close has begun is delivered at once. Held and lost acknowledgements are never
// delivered.
func (p *Producer) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.closing)
	}
	p.mu.Unlock()
	p.Producer.Close()
	p.wg.Wait()
}
