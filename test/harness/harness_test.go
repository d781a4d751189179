package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

var broker *infra.Pulsar

func TestMain(m *testing.M) {
	p, err := infra.Shared(context.Background(), infra.Need{Pulsar: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	broker = p.Pulsar
	code := m.Run()
	if err := p.Close(code != 0); err != nil {
		fmt.Fprintln(os.Stderr, "infra: stopping peers:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// TestProducerFaultsAcknowledgementsOfMessagesTheBrokerStored: through the decorator, one
// acknowledgement is delivered, one delayed, two held and released in reverse, one turned
// into a failure, one lost and one held and then released as a failure; the real broker
// stored all seven messages regardless.
func TestProducerFaultsAcknowledgementsOfMessagesTheBrokerStored(t *testing.T) {
	const delay = 300 * time.Millisecond
	client, topic, real, opts := realProducer(t, "harness")
	p := Wrap(real, opts, Faults(map[int]Fault{1: Delay(delay), 2: Hold(), 3: Hold(), 4: Fail(nil), 5: Lose(), 6: Hold()}))
	defer p.Close()

	type ack struct {
		n   int
		at  time.Time
		err error
	}
	var mu sync.Mutex
	var acks []ack
	sentAt := map[int]time.Time{}
	for n := range 7 {
		sentAt[n] = time.Now()
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(n))},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				mu.Lock()
				acks = append(acks, ack{n: n, at: time.Now(), err: err})
				mu.Unlock()
			})
	}
	numbers := func() []int {
		mu.Lock()
		defer mu.Unlock()
		var ns []int
		for _, a := range acks {
			ns = append(ns, a.n)
		}
		return ns
	}
	eventually.NoError(t, 10*time.Second, func() error {
		if got := numbers(); len(got) < 3 || len(p.Held()) < 3 || p.Lost() < 1 {
			return fmt.Errorf("acknowledged %v, held %d, lost %d", got, len(p.Held()), p.Lost())
		}
		return nil
	})
	p.Release(3, 2)
	p.ReleaseFailed(6)
	got := numbers()
	slices.Sort(got[:3]) // 0, 1 and 4 may come in any order relative to each other
	if want := []int{0, 1, 4, 3, 2, 6}; !slices.Equal(got, want) {
		t.Fatalf("acknowledgements in order %v, want 0, 1, 4 (any order) then 3, 2, 6", numbers())
	}
	mu.Lock()
	for _, a := range acks {
		switch {
		case a.n == 1 && a.at.Sub(sentAt[1]) < delay:
			t.Errorf("the delayed acknowledgement came %s after the send, before the %s delay", a.at.Sub(sentAt[1]), delay)
		case (a.n == 4 || a.n == 6) && !errors.Is(a.err, ErrInjected):
			t.Errorf("acknowledgement %d: %v, want the injected failure", a.n, a.err)
		case a.n != 4 && a.n != 6 && a.err != nil:
			t.Errorf("acknowledgement %d: %v", a.n, a.err)
		}
	}
	mu.Unlock()

	// The broker stored every message, those whose acknowledgement failed or was lost too.
	readEach(t, client, topic, 7)
}

// readEach reads topic from its start and fails unless it holds the messages 0 to n-1 (their
// number as payload), each once, in order, and nothing after them.
func readEach(t *testing.T, client pulsar.Client, topic string, n int) {
	t.Helper()
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range n {
		msg, err := reader.Next(ctx)
		if err != nil {
			t.Fatalf("reading message %d: %v", i, err)
		}
		if string(msg.Payload()) != fmt.Sprint(i) {
			t.Fatalf("stored message %d = %q; want each once, in order", i, msg.Payload())
		}
	}
	if reader.HasNext() {
		t.Fatalf("the topic holds more than the %d messages", n)
	}
}

// TestProducerClosedWhileSendingPanicsAsTheClientDoes: the send CloseWhileSending names
// closes the real producer and panics with the runtime's "send on closed channel" without
// calling it back; a send after it is failed by the real, closed producer.
func TestProducerClosedWhileSendingPanicsAsTheClientDoes(t *testing.T) {
	_, _, real, opts := realProducer(t, "harness-closed")
	p := Wrap(real, opts, Faults(nil)).CloseWhileSending(2)
	defer p.Close()

	var mu sync.Mutex
	acks := map[int]error{}
	send := func(n int) (panicked any) {
		defer func() { panicked = recover() }()
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(n))},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				mu.Lock()
				acks[n] = err
				mu.Unlock()
			})
		return nil
	}
	for n := range 2 {
		if r := send(n); r != nil {
			t.Fatalf("send %d panicked: %v", n, r)
		}
	}
	// Stored first: the real close drops, uncalled, sends its event loop has not taken in.
	eventually.NoError(t, 10*time.Second, func() error {
		mu.Lock()
		defer mu.Unlock()
		if acks[0] != nil || acks[1] != nil || len(acks) != 2 {
			return fmt.Errorf("sends 0 and 1 called back with %v; want both stored", acks)
		}
		return nil
	})
	r := send(2)
	if err, ok := r.(runtime.Error); !ok || err.Error() != "send on closed channel" {
		t.Fatalf("send 2 panicked with %v (%T), want the runtime's send on closed channel", r, r)
	}
	if r := send(3); r != nil {
		t.Fatalf("send 3, after the close, panicked: %v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	// A send after the close is called back at once: only send 2's callback is missing.
	if _, ok := acks[2]; ok || len(acks) != 3 {
		t.Fatalf("callbacks %v, want those of sends 0, 1 and 3", acks)
	}
	if !errors.Is(acks[3], pulsar.ErrProducerClosed) {
		t.Fatalf("send 3 called back with %v, want ErrProducerClosed", acks[3])
	}
}

// TestAHeldAcknowledgementIsNeverDeliveredAfterClose: the real producer calls nothing back
// once closed, so neither does the decorator: a release after Close delivers nothing.
func TestAHeldAcknowledgementIsNeverDeliveredAfterClose(t *testing.T) {
	_, _, real, opts := realProducer(t, "harness-close")
	p := Wrap(real, opts, Faults(map[int]Fault{0: Hold(), 1: Hold()}))
	var called atomic.Int32
	for range 2 {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
			func(pulsar.MessageID, *pulsar.ProducerMessage, error) { called.Add(1) })
	}
	eventually.NoError(t, 10*time.Second, func() error {
		if n := len(p.Held()); n != 2 {
			return fmt.Errorf("%d acknowledgements held, want 2", n)
		}
		return nil
	})
	p.Close()
	p.Release(0)
	p.ReleaseFailed(1)
	p.ReleaseAll()
	if n := called.Load(); n != 0 {
		t.Fatalf("%d callbacks after Close; want none", n)
	}
}

// TestCloseWaitsForARelease: a release under way when Close is called has its callbacks
// return before Close does — the real producer calls nothing back once Close returned.
func TestCloseWaitsForARelease(t *testing.T) {
	_, _, real, opts := realProducer(t, "harness-release-close")
	p := Wrap(real, opts, Faults(map[int]Fault{0: Hold()}))
	entered, leave := make(chan struct{}), make(chan struct{})
	var leaveOnce sync.Once
	letGo := func() { leaveOnce.Do(func() { close(leave) }) }
	t.Cleanup(letGo) // a failed test leaves no callback waiting
	var returned atomic.Bool
	p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
		func(pulsar.MessageID, *pulsar.ProducerMessage, error) {
			close(entered)
			<-leave
			returned.Store(true)
		})
	eventually.NoError(t, 10*time.Second, func() error {
		if n := len(p.Held()); n != 1 {
			return fmt.Errorf("%d acknowledgements held, want 1", n)
		}
		return nil
	})
	go p.ReleaseAll()
	<-entered
	closed := make(chan struct{})
	go func() {
		p.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a released acknowledgement's callback was still running")
	case <-time.After(200 * time.Millisecond):
	}
	letGo()
	<-closed
	if !returned.Load() {
		t.Fatal("Close returned before the released acknowledgement's callback did")
	}
}

// realProducer returns a client of the test broker (closed when t ends), a new topic named
// after prefix, a real producer on it with ferry's settings (batching and the send timeout
// off, a bounded queue that fails a send rather than block) and those settings.
func realProducer(t *testing.T, prefix string) (pulsar.Client, string, pulsar.Producer, pulsar.ProducerOptions) {
	t.Helper()
	return realProducerWith(t, prefix, pulsar.ProducerOptions{
		DisableBatching: true, SendTimeout: -1, MaxPendingMessages: 2000, DisableBlockIfQueueFull: true,
	})
}

// realProducerWith is realProducer with opts (their topic is set).
func realProducerWith(t *testing.T, prefix string, opts pulsar.ProducerOptions) (pulsar.Client, string, pulsar.Producer, pulsar.ProducerOptions) {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: broker.ServiceURL, Logger: pulsarlog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	topic := fmt.Sprintf("persistent://public/default/%s-%d", prefix, time.Now().UnixNano())
	opts.Topic = topic
	real, err := client.CreateProducer(opts)
	if err != nil {
		t.Fatal(err)
	}
	return client, topic, real, opts
}

// TestAFlushReturnsOnlyAfterEveryEarlierSendWasCalledBack: the real v0.19.0 flush returns
// nil only once the callbacks of the sends before it have run. Through the decorator, a
// delayed acknowledgement makes the flush wait for it; a held or lost one makes it wait
// until its context ends, as an acknowledgement that never arrives does, and a held one
// released lets a later flush succeed.
func TestAFlushReturnsOnlyAfterEveryEarlierSendWasCalledBack(t *testing.T) {
	for _, c := range []struct {
		name  string
		fault Fault
		waits bool // the flush waits until its context ends
	}{
		{"delivered", Deliver(), false},
		{"delayed", Delay(500 * time.Millisecond), false},
		{"failed", Fail(nil), false},
		{"held", Hold(), true},
		{"lost", Lose(), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, real, opts := realProducer(t, "harness-flush")
			p := Wrap(real, opts, Faults(map[int]Fault{1: c.fault}))
			defer p.Close()
			var called atomic.Int32
			for range 3 {
				p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
					func(pulsar.MessageID, *pulsar.ProducerMessage, error) { called.Add(1) })
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			err := p.FlushWithCtx(ctx)
			if !c.waits {
				if err != nil || called.Load() != 3 {
					t.Fatalf("flush = %v with %d of 3 sends called back; want nil after all 3", err, called.Load())
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) || called.Load() != 2 {
				t.Fatalf("flush = %v with %d of 3 sends called back; want the context's deadline, send 1 not called back", err, called.Load())
			}
			if c.fault.kind != held {
				return
			}
			p.Release(1)
			if err := p.Flush(); err != nil || called.Load() != 3 {
				t.Fatalf("flush after the release = %v with %d of 3 sends called back; want nil after all 3", err, called.Load())
			}
		})
	}
}

// TestAnAcknowledgementNotYetDeliveredKeepsItsQueueSlot: the real producer frees a send's
// slot of its pending queue just before calling it back, so an acknowledgement that comes
// late keeps its slot, and with DisableBlockIfQueueFull a send that finds none free fails
// with ErrSendQueueIsFull inside SendAsync. Through the decorator a held and a lost
// acknowledgement fill a queue of two; a release frees a slot again.
func TestAnAcknowledgementNotYetDeliveredKeepsItsQueueSlot(t *testing.T) {
	_, _, real, opts := realProducerWith(t, "harness-queue", pulsar.ProducerOptions{
		DisableBatching: true, SendTimeout: -1, MaxPendingMessages: 2, DisableBlockIfQueueFull: true,
	})
	p := Wrap(real, opts, Faults(map[int]Fault{0: Hold(), 1: Lose()}))
	defer p.Close()
	for range 2 {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
			func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	}
	eventually.NoError(t, 10*time.Second, func() error {
		if len(p.Held()) != 1 || p.Lost() != 1 {
			return fmt.Errorf("%d acknowledgements held and %d lost, want 1 and 1", len(p.Held()), p.Lost())
		}
		return nil
	})
	var full error
	var calledBack bool
	p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { full, calledBack = err, true })
	if !calledBack || !errors.Is(full, pulsar.ErrSendQueueIsFull) {
		t.Fatalf("a send with the queue full: called back inside SendAsync %t, with %v; want ErrSendQueueIsFull", calledBack, full)
	}
	p.Release(0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("x")}); err != nil {
		t.Fatalf("a send after the held acknowledgement was released: %v", err)
	}
}

// TestABlockingQueueWaitsForAnAcknowledgementToBeDelivered: without
// DisableBlockIfQueueFull the real producer blocks a send until a slot frees, or fails it
// with ErrContextExpired when its context ends first. A held acknowledgement keeps its
// slot until it is released.
func TestABlockingQueueWaitsForAnAcknowledgementToBeDelivered(t *testing.T) {
	_, _, real, opts := realProducerWith(t, "harness-queue-block", pulsar.ProducerOptions{
		DisableBatching: true, SendTimeout: -1, MaxPendingMessages: 1,
	})
	p := Wrap(real, opts, Faults(map[int]Fault{0: Hold()}))
	defer p.Close()
	p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
		func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	eventually.NoError(t, 10*time.Second, func() error {
		if n := len(p.Held()); n != 1 {
			return fmt.Errorf("%d acknowledgements held, want 1", n)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var expired error
	p.SendAsync(ctx, &pulsar.ProducerMessage{Payload: []byte("x")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { expired = err })
	if !errors.Is(expired, pulsar.ErrContextExpired) {
		t.Fatalf("a send blocked on the full queue until its context ended: called back with %v, want ErrContextExpired", expired)
	}
	acked := make(chan error, 1)
	go p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { acked <- err })
	p.Release(0)
	select {
	case err := <-acked:
		if err != nil {
			t.Fatalf("the send that waited for the slot: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the send that waited for a slot was not called back after the release freed one")
	}
}

// TestEveryFaultThatDeliversHandsBackTheRealFailure: the real producer, closed, fails
// every send with ErrProducerClosed. Whatever the plan does to that outcome, it may only
// make it later or worse: each fault that delivers it must hand back the real error, a
// failure injected by Fail or ReleaseFailed its own, and Lose nothing.
func TestEveryFaultThatDeliversHandsBackTheRealFailure(t *testing.T) {
	failure := errors.New("planned failure")
	for _, c := range []struct {
		name    string
		fault   Fault
		release func(*Producer) // after the acknowledgement was held
		want    error           // nil: no callback
	}{
		{"delivered", Deliver(), nil, pulsar.ErrProducerClosed},
		{"delayed", Delay(200 * time.Millisecond), nil, pulsar.ErrProducerClosed},
		{"held and released", Hold(), func(p *Producer) { p.Release(0) }, pulsar.ErrProducerClosed},
		{"held and all released", Hold(), (*Producer).ReleaseAll, pulsar.ErrProducerClosed},
		{"held and released failed", Hold(), func(p *Producer) { p.ReleaseFailed(0) }, ErrInjected},
		{"failed", Fail(failure), nil, failure},
		{"lost", Lose(), nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, real, opts := realProducer(t, "harness-real-failure")
			real.Close() // the decorator is not told: the client closed its producer itself
			p := Wrap(real, opts, Faults(map[int]Fault{0: c.fault}))
			defer p.Close()
			got := make(chan error, 1)
			p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
				func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { got <- err })
			if c.release != nil {
				if n := len(p.Held()); n != 1 {
					t.Fatalf("%d acknowledgements held, want 1", n)
				}
				c.release(p)
			}
			if c.want == nil {
				if p.Lost() != 1 {
					t.Fatalf("%d acknowledgements lost, want 1", p.Lost())
				}
				select {
				case err := <-got:
					t.Fatalf("a lost acknowledgement was delivered: %v", err)
				default:
				}
				return
			}
			select {
			case err := <-got:
				if !errors.Is(err, c.want) {
					t.Fatalf("called back with %v, want %v", err, c.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("not called back")
			}
		})
	}
}

// TestADelayedOutcomeThatComesAfterCloseIsDeliveredAtOnce: a send after Close is failed by
// the real producer with ErrProducerClosed inside SendAsync. Delaying that outcome would
// call back after Close returned, which the real producer never does, and count a delayed
// delivery that Close no longer waits for: it is delivered at once.
func TestADelayedOutcomeThatComesAfterCloseIsDeliveredAtOnce(t *testing.T) {
	_, _, real, opts := realProducer(t, "harness-delay-close")
	p := Wrap(real, opts, Faults(map[int]Fault{0: Delay(time.Hour)}))
	p.Close()
	var got error
	var calledBack bool
	p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte("x")},
		func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) { got, calledBack = err, true })
	if !calledBack || !errors.Is(got, pulsar.ErrProducerClosed) {
		t.Fatalf("a send after Close: called back inside SendAsync %t, with %v; want ErrProducerClosed", calledBack, got)
	}
}

// TestAResentMessageIsAnsweredAsADuplicate: with Resend, the first acknowledgement of a
// message the broker stored is lost and the message sent again, as the client does after a
// reconnect; the broker's deduplication answers the re-send as a duplicate (ledger and entry
// -1), which is what the caller gets, and the topic holds the message once.
func TestAResentMessageIsAnsweredAsADuplicate(t *testing.T) {
	client, topic, real, opts := realProducerWith(t, "harness-resend", pulsar.ProducerOptions{Name: "resender", DisableBatching: true, SendTimeout: -1})
	p := Wrap(real, opts, Faults(map[int]Fault{1: Resend()}))
	defer p.Close()
	ids := make(chan pulsar.MessageID, 3)
	for n := range 3 {
		seq := int64(n)
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(fmt.Sprint(n)), SequenceID: &seq},
			func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					t.Errorf("message %d: %v", n, err)
				}
				ids <- id
			})
	}
	dups := 0
	for range 3 {
		select {
		case id := <-ids:
			if id != nil && id.LedgerID() == -1 && id.EntryID() == -1 {
				dups++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not every message was acknowledged")
		}
	}
	if dups != 1 {
		t.Fatalf("%d acknowledgements were the broker's duplicate answer; want one, the re-send's", dups)
	}
	readEach(t, client, topic, 3)
}
