package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/supervisor"
	"github.com/ferry-bridge/ferry/test/eventually"
)

// sendRecorder is a stand-in Pulsar producer for the publisher's unit tests: it keeps each
// send's callback for the test to answer, or fails the sends fail says to at once, inside
// SendAsync, as pulsar-client-go v0.19.0 does with a full queue. The end-to-end tests
// publish to a real broker; these drive the orders of outcomes a broker cannot be made to
// produce on cue.
type sendRecorder struct {
	fail func(end string) bool
	// closing, if set, holds Close until it is closed; closePanics has FlushWithCtx and
	// Close panic as v0.19.0's do when the client closed the producer as they were called.
	closing     chan struct{}
	closePanics bool

	mu    sync.Mutex
	sends []string // the ferry.position of each message sent
	held  map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error)
}

func (r *sendRecorder) SendAsync(_ context.Context, m *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	end := m.Properties[PropPosition]
	r.mu.Lock()
	r.sends = append(r.sends, end)
	failNow := r.fail != nil && r.fail(end)
	if !failNow {
		r.held[end] = cb
	}
	r.mu.Unlock()
	if failNow {
		cb(nil, m, pulsar.ErrSendQueueIsFull)
	}
}

// answer calls back the send of the record ending at end with err.
func (r *sendRecorder) answer(t *testing.T, end string, err error) {
	t.Helper()
	r.take(t, end)(nil, nil, err)
}

// answerDuplicate calls back the send of the record ending at end as pulsar-client-go
// v0.19.0 does for a message the broker's deduplication answered as a duplicate: no error,
// a message id of ledger and entry -1.
func (r *sendRecorder) answerDuplicate(t *testing.T, end string) {
	t.Helper()
	r.take(t, end)(pulsar.NewMessageID(-1, -1, -1, 0), nil, nil)
}

// take waits until the record ending at end was sent, and returns its callback, no longer
// held.
func (r *sendRecorder) take(t *testing.T, end string) func(pulsar.MessageID, *pulsar.ProducerMessage, error) {
	t.Helper()
	var cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)
	eventually.NoError(t, waitFor, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if cb = r.held[end]; cb == nil {
			return errors.New("the record ending at " + end + " was not sent")
		}
		delete(r.held, end)
		return nil
	})
	return cb
}

func (r *sendRecorder) sent() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.sends...)
}

func (r *sendRecorder) NumPartitions() uint32 { return 1 }
func (r *sendRecorder) Topic() string         { return "t" }
func (r *sendRecorder) Name() string          { return "ferry-s-7" }
func (r *sendRecorder) LastSequenceID() int64 { return -1 }
func (r *sendRecorder) Flush() error          { return nil }
func (r *sendRecorder) FlushWithCtx(context.Context) error {
	if r.closePanics {
		sendOnClosed()
	}
	return nil
}
func (r *sendRecorder) Close() {
	if r.closePanics {
		sendOnClosed()
	}
	if r.closing != nil {
		<-r.closing
	}
}

// sendOnClosed panics as a send on a closed channel does.
func sendOnClosed() {
	cmds := make(chan struct{}, 1)
	close(cmds)
	cmds <- struct{}{}
}

func (r *sendRecorder) Send(context.Context, *pulsar.ProducerMessage) (pulsar.MessageID, error) {
	return nil, errors.New("sendRecorder: Send is not used by ferry")
}

// startPublisher starts recording 7's publisher on rec among probe neighbours.
func startPublisher(t *testing.T, rec *sendRecorder) (*actor.ActorSystem, neighbours, *actor.PID) {
	t.Helper()
	return startPublisherWith(t, rec, func(*Env, *StreamConfig) {})
}

// startPublisherWith is startPublisher with the environment and the stream's settings
// changed by with. In archive mode the publisher is told the checkpointer's answer (the
// probe does not answer): nothing is stored for the recording but the partition count it is
// routed by, of a topic that is not partitioned.
func startPublisherWith(t *testing.T, rec *sendRecorder, with func(*Env, *StreamConfig)) (*actor.ActorSystem, neighbours, *actor.PID) {
	t.Helper()
	return startPublisherAt(t, rec, with, &messages.Watermark{RecordingId: 7, Partitions: 1})
}

// startPublisherAt is startPublisherWith, the publisher told w in archive mode.
func startPublisherAt(t *testing.T, rec *sendRecorder, with func(*Env, *StreamConfig), w *messages.Watermark) (*actor.ActorSystem, neighbours, *actor.PID) {
	t.Helper()
	env, cfg := testEnv(t)
	rec.held = map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}
	env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
	with(env, cfg)
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	pub := system.Root.Spawn(actor.PropsFromProducer(newPublisher(env, cfg, 7, pids)))
	t.Cleanup(func() { _ = system.Root.StopFuture(pub).Wait() })
	if !cfg.Transport {
		system.Root.Send(pub, w)
	}
	return system, nb, pub
}

// failuresOf takes what p received so far and returns the failures of kind among it, in
// order (kind "": every failure).
func failuresOf(p probe, kind string) []*messages.Failure {
	var fs []*messages.Failure
	for {
		select {
		case m := <-p:
			if f, ok := m.(*messages.FailureObserved); ok && (kind == "" || f.Failure.Kind == kind) {
				fs = append(fs, f.Failure)
			}
		default:
			return fs
		}
	}
}

// storedAt is what a read back found of the producer's messages of the recording: messages
// ending at ends, with the checksum batch's records have.
func storedAt(ends ...int64) []StoredEnd {
	var out []StoredEnd
	for _, end := range ends {
		out = append(out, StoredEnd{End: end})
	}
	return out
}

func batch(epoch uint64, ends ...int64) *messages.RecordBatch {
	b := &messages.RecordBatch{RecordingId: 7, Epoch: epoch}
	start := int64(0)
	for _, end := range ends {
		b.Records = append(b.Records, &messages.Record{Start: start, End: end, Payload: []byte("x")})
		start = end
	}
	return b
}

// Lesson 22's fail-stop: once a send of an epoch failed, no send of that epoch follows it —
// the records after it in the batch, and batches of the epoch that come later, are reported
// to the tracker as not sent (they are re-delivered with the failed one, and are not
// failures of their own). A send that followed could be stored above the failed record,
// whose re-send the broker's deduplication would then drop.
func TestNoSendOfAnEpochFollowsItsFailure(t *testing.T) {
	t.Run("a send failing inside SendAsync", func(t *testing.T) {
		rec := &sendRecorder{fail: func(end string) bool { return end == "64" }}
		system, nb, pub := startPublisher(t, rec)
		system.Root.Send(pub, batch(0, 64, 128, 192))
		for _, want := range []struct {
			end     int64
			notSent bool
		}{{64, false}, {128, true}, {192, true}} {
			f := next[*messages.PublishFailed](t, nb.tracker)
			if f.End != want.end || f.NotSent != want.notSent {
				t.Fatalf("outcome %+v; want the record ending at %d failed, not sent: %t", f, want.end, want.notSent)
			}
		}
		if s := rec.sent(); len(s) != 1 {
			t.Fatalf("sent %v; want only the record that failed", s)
		}
	})
	t.Run("a send failing later", func(t *testing.T) {
		rec := &sendRecorder{}
		system, nb, pub := startPublisher(t, rec)
		system.Root.Send(pub, batch(0, 64))
		rec.answer(t, "64", errors.New("broker said no"))
		if f := next[*messages.PublishFailed](t, nb.tracker); f.End != 64 || f.NotSent {
			t.Fatalf("outcome %+v; want the record ending at 64 failed", f)
		}
		b := batch(0, 128, 192) // read before the replay heard of the failure
		b.Records[0].Start = 64
		system.Root.Send(pub, b)
		for _, end := range []int64{128, 192} {
			if f := next[*messages.PublishFailed](t, nb.tracker); f.End != end || !f.NotSent {
				t.Fatalf("outcome %+v; want the record ending at %d not sent", f, end)
			}
		}
		// The re-delivery, a new epoch, is sent.
		system.Root.Send(pub, batch(1, 64))
		eventually.NoError(t, waitFor, func() error {
			if s := rec.sent(); !slices.Equal(s, []string{"64", "64"}) {
				return fmt.Errorf("sent %v; want 64, then its re-delivery", s)
			}
			return nil
		})
	})
}

// A producer the client closed for good may never call some sends back (pulsar-client-go
// v0.19.0 strands a send its event loop takes in while a reconnect closes the producer:
// docs/findings.md). When the publisher replaces it, every send of it still unanswered is
// reported failed — in archive mode it is re-delivered, in transport mode it is a counted
// loss — rather than hold its credit for ever and be lost without a word; a late callback
// of one then changes nothing.
func TestSendsAProducerClosedForGoodNeverCalledBackAreReportedFailed(t *testing.T) {
	for _, c := range []struct{ transport, closePanics bool }{{false, false}, {true, false}, {false, true}} {
		transport := c.transport
		// closePanics: its Flush and Close panic, the client closing it as they are called.
		t.Run(fmt.Sprintf("transport=%t,closePanics=%t", transport, c.closePanics), func(t *testing.T) {
			rec := &sendRecorder{closePanics: c.closePanics}
			system, nb, pub := startPublisherWith(t, rec, func(_ *Env, cfg *StreamConfig) { cfg.Transport = transport })
			system.Root.Send(pub, batch(0, 64, 128))
			rec.answer(t, "64", pulsar.ErrProducerClosed)
			for _, end := range []int64{64, 128} {
				if f := next[*messages.PublishFailed](t, nb.tracker); f.End != end || f.NotSent {
					t.Fatalf("outcome %+v; want the record ending at %d failed", f, end)
				}
			}
			rec.answer(t, "128", nil) // the stranded send's callback, late after all
			eventually.Always(t, 200*time.Millisecond, func() error {
				select {
				case m := <-nb.tracker:
					return fmt.Errorf("the tracker got %T %v after the send was reported failed", m, m)
				default:
					return nil
				}
			})
		})
	}
}

// The broker deduplicates a topic only while its deduplication status is Enabled
// (MessageDeduplication.isEnabled): Failed (it could not set it up) is no deduplication,
// reported as disabled is, with the failure; Recovering (reading its state back) and
// Initialized (not set up yet) are asked again soon (dedupRecheck), not after the back-off of
// a status not known, until it is one or the other.
func TestTheBrokersDeduplicationStatusIsTakenAsTheBrokerTakesIt(t *testing.T) {
	for _, c := range []struct {
		answers []string
		want    string
		failure bool
	}{
		{[]string{"Failed"}, "disabled", true},
		{[]string{"Recovering", "Recovering", "Enabled"}, "enabled", false},
		{[]string{"Recovering", "Failed"}, "disabled", true},
		{[]string{"Initialized", "Enabled"}, "enabled", false},
		{[]string{"Initialized", "Disabled"}, "disabled", true},
		// No answer (the admin API down, a timeout), or one this version does not know:
		// asked again, with back-off, until it says.
		{[]string{"error", "error", "Enabled"}, "enabled", false},
		{[]string{"Upgrading", "error", "Disabled"}, "disabled", true},
	} {
		t.Run(strings.Join(c.answers, ","), func(t *testing.T) {
			before := dedupRetry
			dedupRetry = supervisor.Backoff{Min: time.Millisecond, Max: 10 * time.Millisecond}
			if strings.HasPrefix(c.answers[0], "Initialized") {
				dedupRetry = supervisor.Backoff{Min: time.Hour, Max: time.Hour} // as a status not known would wait
			}
			t.Cleanup(func() { dedupRetry = before })
			var asked atomic.Int32
			_, nb, _ := startPublisherWith(t, &sendRecorder{}, func(env *Env, _ *StreamConfig) {
				env.Deduplication = func(context.Context, string, int64, int) (string, error) {
					n := int(asked.Add(1))
					if a := c.answers[min(n, len(c.answers))-1]; a != "error" {
						return a, nil
					}
					return "", errors.New("admin API: connection refused")
				}
			})
			var failure *messages.Failure
			for {
				switch m := next[any](t, nb.stream).(type) {
				case *messages.FailureObserved:
					if m.Failure.Kind == "deduplication" {
						failure = m.Failure
					}
					continue
				case *messages.DeduplicationChecked:
					if m.State == "unknown" {
						continue // Recovering, or no answer: asked again
					}
					if m.State != c.want || (failure != nil) != c.failure {
						t.Fatalf("deduplication %s, failure %v; want %s, a failure: %t", m.State, failure, c.want, c.failure)
					}
					if n := int(asked.Load()); n < len(c.answers) {
						t.Fatalf("asked %d times; want %d, until the status was Enabled or not", n, len(c.answers))
					}
					return
				}
			}
		})
	}
}

// partitions is a topic's metadata as the client hands it to a message router.
type partitions uint32

func (n partitions) NumPartitions() uint32 { return uint32(n) }

// routingProducer is a sendRecorder that routes each message as a partitioned producer of
// pulsar-client-go v0.19.0 does, inside SendAsync, with the publisher's router and the
// topic's partitions as the test sets them, an index beyond them wrapped round as the client
// wraps it (producer.getProducer).
type routingProducer struct {
	*sendRecorder
	route      func(*pulsar.ProducerMessage, pulsar.TopicMetadata) int
	partitions atomic.Uint32

	mu     sync.Mutex
	routed []int
}

func (r *routingProducer) NumPartitions() uint32 { return r.partitions.Load() }

func (r *routingProducer) SendAsync(ctx context.Context, m *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	n := r.partitions.Load()
	i := r.route(m, partitions(n)) % int(n)
	r.mu.Lock()
	r.routed = append(r.routed, i)
	r.mu.Unlock()
	r.sendRecorder.SendAsync(ctx, m, cb)
}

// waitRouted waits until the producer routed want, in order.
func (r *routingProducer) waitRouted(t *testing.T, want ...int) {
	t.Helper()
	eventually.NoError(t, waitFor, func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if !slices.Equal(r.routed, want) {
			return fmt.Errorf("routed to %v, want %v", r.routed, want)
		}
		return nil
	})
}

// startRoutingPublisher starts recording 7's publisher, told w, on a routingProducer of a
// topic with n partitions, with the stream's settings changed by with.
func startRoutingPublisher(t *testing.T, n uint32, w *messages.Watermark, with func(*StreamConfig)) (*actor.ActorSystem, neighbours, *actor.PID, *routingProducer) {
	t.Helper()
	rp := &routingProducer{sendRecorder: &sendRecorder{}}
	rp.partitions.Store(n)
	system, nb, pub := startPublisherAt(t, rp.sendRecorder, func(env *Env, cfg *StreamConfig) {
		env.CreateProducer = func(o pulsar.ProducerOptions) (pulsar.Producer, error) {
			rp.route = o.MessageRouter
			return rp, nil
		}
		with(cfg)
	}, w)
	return system, nb, pub, rp
}

// asked returns the messages the checkpointer probe holds now, without waiting.
func asked(p probe) []any {
	var got []any
	for {
		select {
		case m := <-p:
			got = append(got, m)
		default:
			return got
		}
	}
}

// A recording stays in one partition (its order and its deduplication live there), across
// restarts too. A recording whose checkpoint names no partition count is routed by the
// topic's count as its producer sees it before the first send, and nothing is sent until the
// checkpointer has stored that count (RouteRecording, answered RecordingRouted): the count
// the checkpointer answers — another publisher's of the recording, if it asked first — is
// the one routed by. When the partitions grow while it is published (pulsar-client-go reads
// the count again every minute and routes with the new one), its records keep going to the
// partition it began in. A publisher whose watermark carries the count routes by it from its
// first record on, whatever the topic has grown to, asking nothing. In transport mode
// everything goes to partition 0.
func TestARecordingStaysInItsPartition(t *testing.T) {
	second := func(start int64) *messages.RecordBatch {
		b := batch(0, start+64)
		b.Records[0].Start = start
		return b
	}
	t.Run("nothing is sent before the count is stored", func(t *testing.T) {
		system, nb, pub, rp := startRoutingPublisher(t, 4, &messages.Watermark{RecordingId: 7}, func(*StreamConfig) {})
		system.Root.Send(pub, batch(0, 64))
		if r := next[*messages.RouteRecording](t, nb.checkpointer); r.RecordingId != 7 || r.Partitions != 4 {
			t.Fatalf("the checkpointer was asked %v; want recording 7 routed by 4 partitions", r)
		}
		eventually.Always(t, 100*time.Millisecond, func() error {
			if s := rp.sent(); len(s) > 0 {
				return fmt.Errorf("sent %v before the count was stored", s)
			}
			return nil
		})
		system.Root.Send(pub, &messages.RecordingRouted{RecordingId: 7, Partitions: 4})
		rp.waitRouted(t, 7%4)
		rp.partitions.Store(6)
		system.Root.Send(pub, second(64))
		rp.waitRouted(t, 7%4, 7%4)
		for _, m := range asked(nb.checkpointer) {
			if r, ok := m.(*messages.RouteRecording); ok {
				t.Fatalf("the checkpointer was asked again: %v", r)
			}
		}
	})
	t.Run("the count the checkpointer answers", func(t *testing.T) {
		system, nb, pub, rp := startRoutingPublisher(t, 6, &messages.Watermark{RecordingId: 7}, func(*StreamConfig) {})
		system.Root.Send(pub, batch(0, 64))
		next[*messages.RouteRecording](t, nb.checkpointer)
		system.Root.Send(pub, &messages.RecordingRouted{RecordingId: 7, Partitions: 4}) // another publisher's, stored first
		rp.waitRouted(t, 7%4)
	})
	t.Run("routed by its checkpoint", func(t *testing.T) {
		system, nb, pub, rp := startRoutingPublisher(t, 6, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 4}, func(*StreamConfig) {})
		system.Root.Send(pub, second(64))
		rp.waitRouted(t, 7%4)
		for _, m := range asked(nb.checkpointer) {
			if r, ok := m.(*messages.RouteRecording); ok {
				t.Fatalf("the checkpointer was asked %v; the checkpoint has the count", r)
			}
		}
	})
	t.Run("transport mode", func(t *testing.T) {
		system, nb, pub, rp := startRoutingPublisher(t, 3, nil, func(cfg *StreamConfig) { cfg.Transport = true })
		system.Root.Send(pub, batch(0, 64))
		rp.waitRouted(t, 0)
		for _, m := range asked(nb.checkpointer) {
			if r, ok := m.(*messages.RouteRecording); ok {
				t.Fatalf("the checkpointer was asked %v in transport mode", r)
			}
		}
	})
}

// A topic with fewer partitions than a recording is routed by was deleted and created again:
// the recording's partition is not the one its records would go to (the client wraps the
// router's index round). The publisher fails (poison: the stream stops, saying so) before it
// sends anything there: when its producer is created so, and when the client's count shrinks
// under a live producer (it reads the count again every minute).
func TestFewerPartitionsThanTheRecordingIsRoutedByFailThePublisherBeforeItSends(t *testing.T) {
	for _, live := range []bool{false, true} {
		t.Run(fmt.Sprintf("live producer %t", live), func(t *testing.T) {
			rp := &routingProducer{sendRecorder: &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}}
			rp.partitions.Store(2)
			if live {
				rp.partitions.Store(4)
			}
			env, cfg := testEnv(t)
			env.CreateProducer = func(o pulsar.ProducerOptions) (pulsar.Producer, error) {
				rp.route = o.MessageRouter
				return rp, nil
			}
			system := testSystem(t)
			_, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 4})
			b := batch(0, 128, 192, 256)
			b.Records[0].Start = 64
			var before int
			if live {
				system.Root.Send(pub, b)
				rp.waitRouted(t, 3, 3, 3)
				before = 3
				rp.partitions.Store(2)
				b = batch(0, 320)
				b.Records[0].Start = 256
			}
			system.Root.Send(pub, b)
			stoppedWith(t, givenUp, "fewer than the 4 recording 7 is routed by")
			if s := rp.sent(); len(s) > before {
				t.Fatalf("sent %v; the records after the first %d went to a topic with fewer partitions than the recording is routed by", s, before)
			}
		})
	}
}

// A publisher resuming from a stored checkpoint (64 here) takes what the broker stored last
// (LastStored) as lesson 21 needs: the recording's own message past the checkpoint (192) has
// a re-sent record the broker stores again (not a duplicate) reported, once; its own message
// before the checkpoint, or an empty partition, says the topic lost acknowledged messages
// (not for a completed checkpoint: an empty recording's may be one); another producer's
// message tells nothing, and the sends go on unchecked; so too after a failed read, which is
// reported, as the recording is not completed before a read answers.
func TestTheResumeCheckTakesWhatTheBrokerStoredLast(t *testing.T) {
	own := func(end string) StoredMessage {
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: end}}
	}
	withProducer := func(m StoredMessage, name string) StoredMessage { m.Producer = name; return m }
	withRecording := func(m StoredMessage, id string) StoredMessage {
		m.Properties = map[string]string{PropRecordingID: id, PropPosition: m.Properties[PropPosition]}
		return m
	}
	for _, c := range []struct {
		name      string
		msg       StoredMessage
		ok        bool
		err       error
		completed bool   // the checkpoint at 64 is the recording's stop
		report    string // in the deduplication failure; "": none
		lastEnd   int64  // the checkpoint's last record ends there (0: not known)
	}{
		{"own past the checkpoint", own("192"), true, nil, false, "stored again the record at 128", 0},
		{"own before the checkpoint", own("32"), true, nil, false, "the topic lost messages", 0},
		{"own at the checkpoint", own("64"), true, nil, false, "", 0},
		// A completed checkpoint is the recording's stop, which may lie past its last record.
		{"own before a completed checkpoint", own("32"), true, nil, true, "", 0},
		{"another producer's", withProducer(own("192"), "other"), true, nil, false, "", 0},
		{"another recording's under the producer's name", withRecording(own("192"), "8"), true, nil, false, "", 0},
		{"a failed read", StoredMessage{}, false, errors.New("reader on t: connection refused"), false, "the recording is not completed before a read answers", 0},
		{"a read that did not reach the recording's messages", StoredMessage{}, false, fmt.Errorf("no message of recording 7 among the last 64 MiB: %w", errNotSearchedBack), false, "", 0},
		{"an empty partition", StoredMessage{}, false, nil, false, "the topic lost messages", 0},
		{"an empty partition, a completed checkpoint", StoredMessage{}, false, nil, true, "", 0},
		// A checkpoint at the recording's stop not yet marked completed (the commit reached
		// the stop while the topic was being read, or ferry stopped between the two writes):
		// its last record ends below it, at 32.
		{"own at the last record of a checkpoint at the stop", own("32"), true, nil, false, "", 32},
		{"own before the last record of a checkpoint at the stop", own("16"), true, nil, false, "up to its last record there, ending at 32", 32},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sendRecorder{}
			system, nb, pub := startPublisherAt(t, rec, func(env *Env, _ *StreamConfig) {
				env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
					return c.msg, c.ok, c.err
				}
			}, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1, Completed: c.completed, LastRecord: lastRecordEnding(c.lastEnd)})
			b := batch(1, 128, 192)
			b.Records[0].Start = 64
			system.Root.Send(pub, b)
			rec.answer(t, "128", nil) // stored: not a duplicate's receipt
			rec.answer(t, "192", nil)
			if errors.Is(c.err, errNotSearchedBack) {
				// Reading again would find no more: the recording's completion does not wait.
				if r := next[*messages.TopicRead](t, nb.tracker); r.HoldsEnd != -1 {
					t.Fatalf("the tracker was told %v; want that the read found nothing", r)
				}
			}
			var reported []*messages.Failure
			deduplication := func() *messages.Failure {
				if reported = append(reported, failuresOf(nb.stream, "")...); len(reported) > 0 { // "deduplication", "topic-read"
					return reported[0]
				}
				return nil
			}
			if c.report == "" {
				eventually.Always(t, 200*time.Millisecond, func() error {
					if f := deduplication(); f != nil {
						return fmt.Errorf("reported %q", f.Message)
					}
					return nil
				})
				return
			}
			var f *messages.Failure
			eventually.NoError(t, waitFor, func() error {
				if f = deduplication(); f == nil {
					return errors.New("no deduplication failure")
				}
				return nil
			})
			if !strings.Contains(f.Message, c.report) || !strings.Contains(f.Message, "lesson 21") {
				t.Fatalf("reported %q; want %q", f.Message, c.report)
			}
		})
	}
}

// lastRecordEnding is a last record of 16 bytes ending at end (0: none known).
func lastRecordEnding(end int64) *messages.RecordMark {
	if end == 0 {
		return nil
	}
	return &messages.RecordMark{Start: end - 16, End: end}
}

// A resume reads back which of the recording's records the topic holds above the
// checkpoint (lesson 22): a record sent again that the broker answers as a duplicate
// though the topic does not hold it (a later record of the producer was stored while it
// was not, before ferry stopped) is not counted as published: the tracker is told it
// failed, and the stream stops, naming it. A record the topic holds, or one below where the
// read reached (the partition's last ledger began after the checkpoint), answered as a
// duplicate, is published. Above a seed stored before the pipeline started (an earlier run
// may have sent records that no commit was made of) the read is made too, and reaches the
// seed when it went back past a message published before the seed was stored: nothing of
// the recording is sent before that. Above a seed of this pipeline nothing was sent before,
// and nothing is read. A duplicate below where the read reached is said, once, to be
// unchecked.
func TestAResumeTellsADuplicateTheTopicDoesNotHold(t *testing.T) {
	const storedAtMs = 1_800_000_000_000
	checkpoint := &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1}
	seed := &messages.Watermark{RecordingId: 7, Stored: true, Seed: true, Earlier: true, Position: 64, Partitions: 1, StoredAtMs: storedAtMs}
	seedOfThisRun := &messages.Watermark{RecordingId: 7, Stored: true, Seed: true, Position: 64, Partitions: 1, StoredAtMs: storedAtMs}
	for _, c := range []struct {
		name       string
		w          *messages.Watermark
		ends       []int64 // of the producer's messages of the recording, read back
		earliestMs int64   // the publish time of the earliest message read
		lacking    int64   // the record the stream stops at; -1: none
		reads      int32
		unchecked  int // warnings of a duplicate not checked
		// reachedFirst: the read went through the partition's first message
		reachedFirst bool
	}{
		{"the topic holds every record sent again", checkpoint, []int64{64, 128, 192, 256}, 0, -1, 1, 0, false},
		{"the topic lacks one", checkpoint, []int64{64, 128, 256}, 0, 192, 1, 0, false},
		{"read back to past the checkpoint only", checkpoint, []int64{192, 256}, 0, -1, 1, 1, false},
		// Below an acknowledged record, or across runs, the partition's first message still
		// held may follow ledgers retention deleted: not taken as its first ever.
		{"read back through the partition's first message, past the checkpoint", checkpoint, []int64{192, 256}, 0, -1, 1, 1, true},
		{"a seed of an earlier run, read back past it", seed, []int64{192, 256}, storedAtMs - 2*time.Minute.Milliseconds(), 128, 1, 0, false},
		{"a seed of an earlier run, read back to its first record", seed, []int64{128, 192, 256}, storedAtMs, -1, 1, 0, false},
		{"a seed of an earlier run, not read back past it", seed, []int64{192, 256}, storedAtMs, -1, 1, 1, false},
		{"a seed of an earlier run, read back through the partition's first message", seed, []int64{192, 256}, storedAtMs, -1, 1, 1, true},
		{"a seed of this run", seedOfThisRun, []int64{192, 256}, storedAtMs - 2*time.Minute.Milliseconds(), -1, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			env, cfg := testEnv(t)
			logged := &lockedBuffer{}
			env.Logger = slog.New(slog.NewTextHandler(logged, nil))
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
			var reads atomic.Int32
			env.LastStored = func(_ context.Context, _ string, _ int64, _ int, from int64, _ pulsar.MessageID) (StoredMessage, bool, error) {
				reads.Add(1)
				if from != 64 {
					return StoredMessage{}, false, fmt.Errorf("read back to %d; want the checkpoint, 64", from)
				}
				return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "256"}, Ends: storedAt(c.ends...), EarliestMs: c.earliestMs, ReachedFirst: c.reachedFirst}, true, nil
			}
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, c.w)
			b := batch(1, 128, 192, 256)
			b.Records[0].Start = 64
			system.Root.Send(pub, b)
			for _, end := range []string{"128", "192", "256"} {
				rec.answerDuplicate(t, end)
			}
			// First what the read found (the tracker finishes the recording only once told):
			// the topic's last message of the recording, or, not read, nothing.
			holds := int64(256)
			if c.reads == 0 {
				holds = -1
			}
			if m, ok := next[any](t, nb.tracker).(*messages.TopicRead); !ok || m.HoldsEnd != holds || m.Producer != "ferry-s-7" {
				t.Fatalf("the tracker was told %v first; want that the topic holds the recording to %d (TopicRead)", m, holds)
			}
			for _, end := range []int64{128, 192, 256} {
				switch m := next[any](t, nb.tracker).(type) {
				case *messages.PublishAcked:
					if m.End != end || !m.Duplicate || end == c.lacking {
						t.Fatalf("the tracker was told %v; want the record ending at %d (lacking %d)", m, end, c.lacking)
					}
				case *messages.PublishFailed:
					if m.End != end || end != c.lacking || !strings.Contains(m.Error, "lesson 22") {
						t.Fatalf("the tracker was told %v; want the record ending at %d (lacking %d)", m, end, c.lacking)
					}
				default:
					t.Fatalf("the tracker was told %T %v; want the outcome of the record ending at %d", m, m, end)
				}
			}
			if n := reads.Load(); n != c.reads {
				t.Fatalf("%d reads of what the broker stored last; want %d", n, c.reads)
			}
			warned := func() error {
				if n := strings.Count(logged.String(), "whether the topic holds it is not checked"); n != c.unchecked {
					return fmt.Errorf("%d warnings of a duplicate not checked; want %d:\n%s", n, c.unchecked, logged.String())
				}
				return nil
			}
			if c.unchecked > 0 {
				eventually.NoError(t, waitFor, warned)
			}
			eventually.Always(t, 200*time.Millisecond, warned)
			if c.lacking < 0 {
				wentOn(t, givenUp)
				return
			}
			stoppedWith(t, givenUp, fmt.Sprintf("the broker answered the record ending at %d, sent again, as a duplicate, though the topic does not hold it", c.lacking), "lesson 22")
		})
	}
}

// A read of what the broker stored last that fails (the real one ends at its own deadline),
// or outlasts the time the sends wait for it (a reader reconnecting can), lets them go, but
// does not tell the tracker that the topic holds nothing past the checkpoint: the recording
// would complete before a read could say that it stops before records the topic holds. The
// wait is reported; a failed read is made again; the answer, when it comes, tells the
// tracker. Reads failing for good (no permission to consume the topic) are given up after
// topicReads, loudly: the tracker is told that nothing was read. A broker refusing the
// read is named, with the permission to grant.
func TestAReadFailingOrOutlastingItsTimeTellsTheTrackerOnlyWhenOneAnswers(t *testing.T) {
	for _, c := range []struct {
		name    string
		fails   int32 // the first reads fail at once; none: the first outlasts its time
		refused bool  // failing as the broker refuses a role without consume permission
	}{
		{"failing, then read again", 1, false},
		{"outlasting its time", 0, false},
		{"failing for good", 1000, false},
		{"refused for good", 1000, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			env, cfg := testEnv(t)
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
			release := make(chan struct{})
			t.Cleanup(func() {
				select {
				case <-release:
				default:
					close(release)
				}
			})
			var reads, dupReads atomic.Int32
			env.LastStored = func(_ context.Context, _ string, _ int64, _ int, from int64, _ pulsar.MessageID) (StoredMessage, bool, error) {
				if from != 64 { // not the resume check's, from the checkpoint: a duplicate's
					dupReads.Add(1)
					return StoredMessage{}, false, errors.New("the duplicate's read fails")
				}
				if reads.Add(1) <= c.fails && c.refused {
					// As pulsar-client-go v0.19.0 hands on the refusal of Pulsar 4.0.8.
					return StoredMessage{}, false, errors.New("reader on persistent://public/default/t: server error: AuthorizationError: Client is not authorized to subscribe")
				}
				if reads.Load() <= c.fails {
					return StoredMessage{}, false, fmt.Errorf("reading the last message: %w", context.DeadlineExceeded)
				}
				<-release // past its own context's deadline, as a reader reconnecting can
				return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "256"}, Ends: storedAt(128, 192, 256)}, true, nil
			}
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1})
			b := batch(1, 128)
			b.Records[0].Start = 64
			system.Root.Send(pub, b)
			rec.answerDuplicate(t, "128") // sent once the read failed, or the wait is over (6 s here)
			for acked := false; !acked; {
				switch m := next[any](t, nb.tracker).(type) {
				case *messages.TopicRead:
					t.Fatalf("the tracker was told %v before a read answered; want nothing, which would let the recording complete", m)
				case *messages.PublishAcked:
					if m.End != 128 {
						t.Fatalf("outcome %+v; want the record ending at 128", m)
					}
					acked = true
				}
			}
			// Answered as a duplicate with no read of the resume check's to tell: read for
			// after its answer (failing here, so said), not taken on the broker's word.
			if n := dupReads.Load(); n != 1 {
				t.Errorf("%d reads for the duplicate; want one", n)
			}
			if c.fails > topicReads {
				var fs []*messages.Failure
				eventually.NoError(t, waitFor, func() error {
					if fs = append(fs, failuresOf(nb.stream, "topic-read")...); len(fs) != topicReads || !strings.Contains(fs[len(fs)-1].Message, "5 reads failed") {
						return fmt.Errorf("failures %v; want %d, the last saying the reads are given up", fs, topicReads)
					}
					return nil
				})
				for _, f := range fs {
					if named := strings.Contains(f.Message, "grant the role consume as well as produce (`pulsar-admin topics grant-permission --role ROLE --actions produce,consume "+cfg.Def.Topic+"`"); named != c.refused {
						t.Fatalf("failure %q names the permission to grant: %t; want %t", f.Message, named, c.refused)
					}
				}
				if r := next[*messages.TopicRead](t, nb.tracker); r.HoldsEnd != -1 {
					t.Fatalf("the tracker was told %v; want that nothing was read", r)
				}
				if n := reads.Load(); n != topicReads {
					t.Fatalf("%d reads; want %d", n, topicReads)
				}
				wentOn(t, givenUp)
				return
			}
			eventually.NoError(t, waitFor, func() error {
				if fs := failuresOf(nb.stream, "topic-read"); len(fs) != 1 || !strings.Contains(fs[0].Message, "the recording is not completed before") {
					return fmt.Errorf("failures %v; want one saying the recording waits for the read", fs)
				}
				return nil
			})
			if c.fails > 0 {
				eventually.NoError(t, waitFor, func() error {
					if n := reads.Load(); n != 2 {
						return fmt.Errorf("%d reads; want the failed one made again", n)
					}
					return nil
				})
			}
			close(release)
			if r := next[*messages.TopicRead](t, nb.tracker); r.HoldsEnd != 256 {
				t.Fatalf("the tracker was told %v; want that the topic holds the recording to 256", r)
			}
			wentOn(t, givenUp)
		})
	}
}

// A record larger than the broker takes stops the stream, naming the record and the
// broker's maxMessageSize, as pulsar-client-go v0.19.0 refuses it either way: inside
// SendAsync for a payload over the limit (ErrMessageTooLarge), or, for a payload under it
// that its metadata takes over, as its event loop writes it, with an error of its internal
// package.
func TestARecordTooLargeForTheBrokerStopsTheStream(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
	}{
		{"the payload over the limit", pulsar.ErrMessageTooLarge},
		{"the metadata taking it over", fmt.Errorf("%w, size: 5242970, MaxMessageSize: 5242880", errors.New("encryptedPayload exceeds MaxMessageSize"))},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			env, cfg := testEnv(t)
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
			system := testSystem(t)
			_, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
			system.Root.Send(pub, batch(1, 64))
			rec.answer(t, "64", c.err)
			stoppedWith(t, givenUp, "the record ending at 64", "raise maxMessageSize")
		})
	}
}

// A producer created again (the client closed the last one for good) resumes the check the
// first one made (lesson 21 and the rewrite check): the records it sends again up to the
// broker's last message from the recording's producer are compared with that message, so
// a record the archive now holds there that differs stops the stream before it is sent
// (answered as a duplicate of the old one, it would be counted as published); records
// sent from past that message are not compared with it.
func TestAProducerCreatedAgainChecksWhatItSendsAgain(t *testing.T) {
	own := func(end string) StoredMessage {
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: end}}
	}
	for _, c := range []struct {
		name   string
		resend *messages.RecordBatch // after the producer was created again
		fails  bool
	}{
		{"rewritten up to the broker's last", func() *messages.RecordBatch {
			b := batch(2, 128, 192)
			b.Records[0].Start = 64
			b.Records[1].Checksum = 0xdead
			return b
		}(), true},
		{"sent from past the broker's last", func() *messages.RecordBatch {
			b := batch(2, 256)
			b.Records[0].Start = 192
			return b
		}(), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var reads atomic.Int32
			rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			env, cfg := testEnv(t)
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
			env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
				if reads.Add(1) == 1 {
					return own("128"), true, nil // what the first producer resumes past
				}
				return own("192"), true, nil // what it stored before the client closed it
			}
			system := testSystem(t)
			_, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1})
			b := batch(1, 128, 192, 256)
			b.Records[0].Start = 64
			system.Root.Send(pub, b)
			rec.answer(t, "128", nil)
			rec.answer(t, "192", nil)
			rec.answer(t, "256", pulsar.ErrProducerClosed) // closed for good: created again
			eventually.NoError(t, waitFor, func() error {
				if n := reads.Load(); n < 2 {
					return fmt.Errorf("%d reads of what the broker stored last; want one for each producer", n)
				}
				return nil
			})
			before := len(rec.sent())
			system.Root.Send(pub, c.resend)
			if !c.fails {
				rec.answer(t, "256", nil)
				wentOn(t, givenUp)
				return
			}
			stoppedWith(t, givenUp, "recording 7 changed below what the topic stored")
			if s := rec.sent()[before:]; slices.Contains(s, "192") {
				t.Fatalf("sent %v again; the rewritten record ending at 192 went out", s)
			}
		})
	}
}

// A producer created again holds the broker to what Pulsar acknowledged to the publisher, not
// only to the checkpoint it started from (lesson 21): of a recording ferry took on at a seed
// (nothing published before this run), the broker holds records once it acknowledged them,
// and a partition that has lost them (the topic deleted and created again while the client
// re-created the producer) is said as for a restarted ferry. Before, such a producer went on
// unchecked: the seed said nothing was published.
func TestAProducerCreatedAgainHoldsTheBrokerToItsReceipts(t *testing.T) {
	own := func(end string) StoredMessage {
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: end}}
	}
	for _, c := range []struct {
		name   string
		msg    StoredMessage
		ok     bool
		report string // in the deduplication failure; "": none
	}{
		{"an empty partition", StoredMessage{}, false, "holds no message, though Pulsar acknowledged the recording's records up to 192"},
		{"own before the last receipt", own("128"), true, "at position 128, though Pulsar acknowledged the recording's records up to 192"},
		{"own at the last receipt", own("192"), true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var reads atomic.Int32
			rec := &sendRecorder{}
			system, nb, pub := startPublisherAt(t, rec, func(env *Env, _ *StreamConfig) {
				env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
					reads.Add(1)
					return c.msg, c.ok, nil
				}
			}, &messages.Watermark{RecordingId: 7, Stored: true, Seed: true, Position: 0, Partitions: 1})
			system.Root.Send(pub, batch(1, 128, 192, 256))
			rec.answer(t, "128", nil)
			rec.answer(t, "192", nil)
			if n := reads.Load(); n != 0 {
				t.Fatalf("%d reads of what the broker stored last for a producer resuming at a seed; want none", n)
			}
			rec.answer(t, "256", pulsar.ErrProducerClosed) // closed for good: created again
			eventually.NoError(t, waitFor, func() error {
				if n := reads.Load(); n != 1 {
					return fmt.Errorf("%d reads of what the broker stored last; want one, for the producer created again", n)
				}
				return nil
			})
			var reported []string
			collect := func() {
				for _, f := range failuresOf(nb.stream, "deduplication") {
					reported = append(reported, f.Message)
				}
			}
			if c.report == "" {
				eventually.Always(t, 200*time.Millisecond, func() error {
					if collect(); len(reported) > 0 {
						return fmt.Errorf("reported %q", reported)
					}
					return nil
				})
				return
			}
			eventually.NoError(t, waitFor, func() error {
				if collect(); !slices.ContainsFunc(reported, func(m string) bool { return strings.Contains(m, c.report) }) {
					return fmt.Errorf("deduplication failures %q; want one saying %q", reported, c.report)
				}
				return nil
			})
		})
	}
}

// A producer created again that finds the topic lost messages (its last one from the
// producer below the last receipt) says so and still checks what it sends again up to that
// message: a record the archive now holds there that differs stops the stream.
func TestAProducerCreatedAgainThatFindsALossStillChecksWhatItSendsAgain(t *testing.T) {
	rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
	env, cfg := testEnv(t)
	env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
	env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "128"}, Checksum: 0xbeef}, true, nil
	}
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
	system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Stored: true, Seed: true, Position: 0, Partitions: 1})
	b := batch(1, 128, 192, 256)
	b.Records[0].Checksum = 0xbeef
	system.Root.Send(pub, b)
	rec.answer(t, "128", nil)
	rec.answer(t, "192", nil)
	rec.answer(t, "256", pulsar.ErrProducerClosed) // closed for good: created again
	eventually.NoError(t, waitFor, func() error {
		for _, f := range failuresOf(nb.stream, "") {
			if strings.Contains(f.Message, "at position 128, though Pulsar acknowledged") {
				return nil
			}
		}
		return errors.New("the loss below the last receipt is not said")
	})
	again := batch(2, 128)
	again.Records[0].Checksum = 0xdead
	system.Root.Send(pub, again)
	stoppedWith(t, givenUp, "recording 7 changed below what the topic stored")
}

// The records sent again from the checkpoint must reach the broker's last message exactly
// (a record ending there, the same): a record that passes over it, after a gap the
// original recording did not have (padding up to a term's end, in a recording rewritten
// since), stops the stream too.
func TestARecordPassingOverTheBrokersLastMessageStopsTheStream(t *testing.T) {
	rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
	env, cfg := testEnv(t)
	env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
	env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "192"}}, true, nil
	}
	system := testSystem(t)
	_, pids := spawnNeighbours(system)
	pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
	system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1})
	b := batch(1, 128, 256)
	b.Records[0].Start = 64
	b.Records[1].Start = 200 // [128, 200) padding
	system.Root.Send(pub, b)
	stoppedWith(t, givenUp, "recording 7 changed below what the topic stored")
	if s := rec.sent(); slices.Contains(s, "256") {
		t.Fatalf("sent %v; the record passing over the broker's last message went out", s)
	}
}

// Every record sent again from the checkpoint is compared with the producer's message the
// read back found ending there, not only the broker's last: a recording truncated above the
// checkpoint while ferry was down and recorded again in other bytes, in records of the same
// sizes, short of the old records' end (its records never reach the broker's last message),
// would otherwise have them answered as duplicates of the old ones and counted as published.
// The stream stops before the first record that differs is sent, or one that passes over a
// message read back (the records no longer end there).
func TestARecordSentAgainIsComparedWithEveryMessageReadBack(t *testing.T) {
	stored := []StoredEnd{{End: 64, Checksum: 1}, {End: 128, Checksum: 2}, {End: 192, Checksum: 3}, {End: 256, Checksum: 4}}
	for _, c := range []struct {
		name      string
		ends      []int64
		checksums []uint32
		changed   int64 // the record the stream stops at; -1: none
	}{
		{"unchanged", []int64{128, 192, 256}, []uint32{2, 3, 4}, -1},
		{"the recording rewritten from the middle, up to its old end", []int64{128, 192, 256}, []uint32{2, 9, 9}, 192},
		{"the recording rewritten short of its old end", []int64{128, 192}, []uint32{2, 9}, 192},
		{"a record passing over a message read back", []int64{128, 256}, []uint32{2, 4}, 256},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			env, cfg := testEnv(t)
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
			env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
				return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "256"}, Checksum: 4, Ends: stored}, true, nil
			}
			system := testSystem(t)
			_, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1})
			b := batch(1, c.ends...)
			b.Records[0].Start = 64
			for i, sum := range c.checksums {
				b.Records[i].Checksum = sum
			}
			system.Root.Send(pub, b)
			if c.changed < 0 {
				for _, end := range c.ends {
					rec.answerDuplicate(t, strconv.FormatInt(end, 10))
				}
				wentOn(t, givenUp)
				return
			}
			stoppedWith(t, givenUp, "recording 7 changed below what the topic stored from its producer ferry-s-7 (up to 256)", fmt.Sprintf("message from it ending at %d", min(c.changed, 192)))
			if s := rec.sent(); slices.Contains(s, strconv.FormatInt(c.changed, 10)) {
				t.Fatalf("sent %v; the changed record ending at %d went out", s, c.changed)
			}
		})
	}
}

// A re-delivery waits until every send of the failed epoch has its outcome: a re-send
// that overtook an unanswered send of the failed epoch would have the broker answer
// receipts out of the client's order, and pulsar-client-go v0.19.0 drops the connection
// for that (docs/findings.md).
func TestAReDeliveryWaitsForTheOutcomesOfTheFailedEpoch(t *testing.T) {
	rec := &sendRecorder{}
	system, nb, pub := startPublisher(t, rec)
	system.Root.Send(pub, batch(0, 64, 128))
	rec.answer(t, "64", errors.New("broker said no"))
	if f := next[*messages.PublishFailed](t, nb.tracker); f.End != 64 || f.NotSent {
		t.Fatalf("outcome %+v; want the record ending at 64 failed", f)
	}
	system.Root.Send(pub, batch(1, 64, 128))
	eventually.Always(t, 200*time.Millisecond, func() error {
		if s := rec.sent(); !slices.Equal(s, []string{"64", "128"}) {
			return fmt.Errorf("sent %v while the send of 128 of the failed epoch has no outcome; want only 64 and 128 of epoch 0", s)
		}
		return nil
	})
	rec.answer(t, "128", nil)
	eventually.NoError(t, waitFor, func() error {
		if s := rec.sent(); !slices.Equal(s, []string{"64", "128", "64", "128"}) {
			return fmt.Errorf("sent %v; want epoch 0's 64 and 128, then their re-delivery", s)
		}
		return nil
	})
}

// A failure's time is the wall clock's, in milliseconds since the epoch, as the status
// shows it (lesson 25).
func TestAFailureIsTimedByTheWallClockInMilliseconds(t *testing.T) {
	before := time.Now().UnixMilli()
	_, nb, _ := startPublisherWith(t, &sendRecorder{}, func(env *Env, _ *StreamConfig) {
		env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) {
			return nil, errors.New("connection refused")
		}
	})
	for {
		m, ok := next[any](t, nb.stream).(*messages.FailureObserved)
		if !ok || m.Failure.Kind != "producer" {
			continue
		}
		after := time.Now().UnixMilli()
		if at := m.Failure.AtMs; at < before || at > after {
			t.Fatalf("the failure of the producer's creation is at %d; want the wall clock in milliseconds, between %d and %d", at, before, after)
		}
		return
	}
}

// A producer that has called back none of its sends for twice stall_after since the oldest
// went out, or since its last answer, is replaced, its sends reported failed: pulsar-client-go
// v0.19.0 no longer hears a producer whose send the broker refused (a record over the
// topic's maxMessageSize policy, a terminated topic: docs/findings.md), and with send
// timeouts off nothing else would end the wait. A producer that answers, however slowly, is
// kept. The successor is created once the producer is closed. The clock the wait is
// measured by is the test's.
func TestAProducerThatAnswersNoneOfItsSendsIsReplaced(t *testing.T) {
	for _, transport := range []bool{false, true} {
		t.Run(fmt.Sprintf("transport=%t", transport), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(1000)
			first, second := &sendRecorder{closing: make(chan struct{})}, &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			var created atomic.Int32
			system, nb, pub := startPublisherWith(t, first, func(env *Env, cfg *StreamConfig) {
				cfg.Transport, cfg.StallAfter = transport, 50*time.Millisecond // answers awaited 100 ms
				env.Elapsed = func() time.Duration { return time.Duration(clock.Load()) * time.Millisecond }
				env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) {
					if created.Add(1) == 1 {
						return first, nil
					}
					return second, nil
				}
			})
			system.Root.Send(pub, batch(0, 64, 128, 192))
			first.take(t, "192") // all three sent
			clock.Store(1090)
			first.answer(t, "64", nil)
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != 64 {
				t.Fatalf("outcome %+v; want the record ending at 64 acknowledged", a)
			}
			clock.Store(1180) // 180 ms since the oldest send, 90 since the last answer
			eventually.Always(t, 300*time.Millisecond, func() error {
				if n := created.Load(); n != 1 {
					return fmt.Errorf("%d producers created while the first still answered", n)
				}
				return nil
			})
			clock.Store(1191)
			for _, end := range []int64{128, 192} {
				f := next[*messages.PublishFailed](t, nb.tracker)
				if f.End != end || f.NotSent || !strings.Contains(f.Error, "answered none of the producer's sends for") {
					t.Fatalf("outcome %+v; want the record ending at %d failed, unanswered", f, end)
				}
			}
			// Its successor is created once it is closed (its pending sends failed).
			eventually.Always(t, 200*time.Millisecond, func() error {
				if n := created.Load(); n != 1 {
					return fmt.Errorf("%d producers created while the first was being closed", n)
				}
				return nil
			})
			close(first.closing)
			eventually.NoError(t, waitFor, func() error {
				if n := created.Load(); n != 2 {
					return fmt.Errorf("%d producers created; want the first replaced", n)
				}
				return nil
			})
			fs := failuresOf(nb.stream, "producer")
			if len(fs) != 1 || !strings.Contains(fs[0].Message, "answered none of the producer's 2 sends outstanding for") || !strings.Contains(fs[0].Message, "the oldest the record ending at 128") {
				t.Fatalf("producer failures %v; want one saying the producer answered none of 2 sends", fs)
			}
			// Without the admin API: pulsar.admin_url advised; in transport mode, the sends
			// held said lost.
			if lost := strings.Contains(fs[0].Message, "in transport mode the sends it held are lost"); lost != transport || !strings.Contains(fs[0].Message, "with pulsar.admin_url set, ferry tells the two apart") {
				t.Errorf("the failure says %q; want pulsar.admin_url advised, and the sends held said lost in transport mode (%t)", fs[0].Message, transport)
			}
			redelivery := batch(1, 128, 192)
			redelivery.Records[0].Start = 64
			system.Root.Send(pub, redelivery)
			second.answer(t, "192", nil) // the new producer sends them
		})
	}
}

// Lesson 22 within a run, for a recording new to ferry: the broker
// refused the record ending at 64 (over a maxMessageSize policy ferry could not read) and
// stored 128 and 192, answering none of the three (the refusal goes out at once, the
// answers once stored, and the client stops hearing a producer after a refusal). The
// producer is replaced; the policy is raised meanwhile, and the broker answers 64, sent
// again, as a duplicate of 192. Nothing was acknowledged, yet the new producer reads back
// what the broker stored (through the partition's first message): 64 is not among it, so
// it is a failure and the stream stops, rather than count it as published.
func TestARecordRefusedBeforeAnyAnswerIsNotCountedAsADuplicate(t *testing.T) {
	through := StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "192"}, Ends: storedAt(128, 192), EarliestMs: 1001, ReachedFirst: true}
	others := StoredMessage{Producer: "other", Properties: map[string]string{PropRecordingID: "8", PropPosition: "4096"}}
	t.Run("read back through the partition's first message", func(t *testing.T) { refusedFirst(t, through, true) })
	// Other producers' messages after the recording's, beyond the read's reach: the
	// duplicate cannot be checked, which is a deduplication failure in the status.
	t.Run("none of the recording's messages read back", func(t *testing.T) { refusedFirst(t, others, false) })
}

// refusedFirst is TestARecordRefusedBeforeAnyAnswerIsNotCountedAsADuplicate with read as
// what the broker stored last: the stream stops if stops, else goes on, saying the
// duplicate was not checked.
func refusedFirst(t *testing.T, read StoredMessage, stops bool) {
	var clock atomic.Int64
	clock.Store(1000)
	held := func() map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error) {
		return map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}
	}
	first, second := &sendRecorder{held: held()}, &sendRecorder{held: held()}
	env, cfg := testEnv(t)
	cfg.StallAfter = 50 * time.Millisecond // answers awaited 100 ms
	env.Elapsed = func() time.Duration { return time.Duration(clock.Load()) * time.Millisecond }
	var created, reads atomic.Int32
	env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) {
		if created.Add(1) == 1 {
			return first, nil
		}
		return second, nil
	}
	env.LastStored = func(_ context.Context, _ string, _ int64, _ int, from int64, _ pulsar.MessageID) (StoredMessage, bool, error) {
		if reads.Add(1) == 1 && from != 0 { // the second producer's (later: for its duplicates)
			return StoredMessage{}, false, fmt.Errorf("read back to %d; want 0, nothing stored", from)
		}
		return read, true, nil
	}
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
	// Nothing stored yet as the publisher starts, as for a recording new to ferry (its seed
	// may be on its way to the store): nothing was sent before.
	system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
	system.Root.Send(pub, batch(0, 64, 128, 192))
	first.take(t, "192")
	if n := reads.Load(); n != 0 {
		t.Fatalf("%d reads of what the broker stored before the first producer's sends; want none (nothing sent before)", n)
	}
	clock.Store(1200)
	for _, end := range []int64{64, 128, 192} {
		if f := next[*messages.PublishFailed](t, nb.tracker); f.End != end || f.NotSent {
			t.Fatalf("outcome %+v; want the record ending at %d failed, unanswered", f, end)
		}
	}
	system.Root.Send(pub, batch(1, 64, 128, 192))
	for _, end := range []string{"64", "128", "192"} {
		second.answerDuplicate(t, end)
	}
	if !stops {
		for _, end := range []int64{64, 128, 192} {
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != end || !a.Duplicate {
				t.Fatalf("outcome %+v; want the record ending at %d answered as a duplicate", a, end)
			}
		}
		if n := reads.Load(); n < 2 {
			t.Fatalf("%d reads of what the broker stored; want the second producer's, and one made after the duplicates' answers", n)
		}
		eventually.NoError(t, waitFor, func() error {
			if fs := failuresOf(nb.stream, "deduplication"); len(fs) != 1 || !strings.Contains(fs[0].Message, "the record ending at 64, sent again, was answered as a duplicate and the read of what the topic holds, made after the answer, found none of the recording's messages") {
				return fmt.Errorf("deduplication failures %v; want one saying the duplicate was not checked", fs)
			}
			return nil
		})
		wentOn(t, givenUp)
		return
	}
	if f := next[*messages.PublishFailed](t, nb.tracker); f.End != 64 || !strings.Contains(f.Error, "lesson 22") {
		t.Fatalf("outcome %+v; want the record ending at 64 failed: answered as a duplicate, not stored", f)
	}
	stoppedWith(t, givenUp, "the broker answered the record ending at 64, sent again, as a duplicate, though the topic does not hold it", "lesson 22")
	if n := reads.Load(); n != 1 {
		t.Fatalf("%d reads of what the broker stored; want one, by the second producer", n)
	}
}

// A record over the policy that a producer replaced for answering nothing never sent is
// not said to have been sent by it (which would point at lesson 22's duplicates): the first
// producer, under no policy yet, sent the record ending at 64 only, and its successor finds
// the one ending at 2048 over the policy set meanwhile.
func TestARecordOverThePolicyIsSaidSentBeforeOnlyIfItWas(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1000)
	first, second := &sendRecorder{}, &sendRecorder{}
	for _, r := range []*sendRecorder{first, second} {
		r.held = map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}
	}
	env, cfg := testEnv(t)
	cfg.StallAfter = 50 * time.Millisecond // answers awaited 100 ms
	env.Elapsed = func() time.Duration { return time.Duration(clock.Load()) * time.Millisecond }
	var created atomic.Int32
	env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) {
		if created.Add(1) == 1 {
			return first, nil
		}
		return second, nil
	}
	env.MaxMessageSize = func(context.Context, string) (int, error) {
		if created.Load() == 1 {
			return 0, nil
		}
		return 1000, nil
	}
	system := testSystem(t)
	nb, pids := spawnNeighbours(system)
	pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
	system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
	system.Root.Send(pub, batch(0, 64))
	first.take(t, "64")
	clock.Store(1200)
	if f := next[*messages.PublishFailed](t, nb.tracker); f.End != 64 {
		t.Fatalf("outcome %+v; want the record ending at 64 failed, unanswered", f)
	}
	system.Root.Send(pub, &messages.RecordBatch{RecordingId: 7, Epoch: 1, Records: []*messages.Record{
		{Start: 0, End: 64, Payload: make([]byte, 64)},
		{Start: 64, End: 2048, Payload: make([]byte, 1984)},
	}})
	err := stoppedWith(t, givenUp, "the record ending at 2048", "over the maxMessageSize policy of topic")
	if strings.Contains(err.Error(), "A producer before this one sent it") {
		t.Fatalf("stopped saying a producer before sent the record ending at 2048, which none did: %v", err)
	}
}

// pulsar-client-go v0.19.0's Close can wait for ever, or panic, when the client closes the
// producer for good as it is called (closeProducer): the publisher replacing a producer
// that answers nothing then creates its successor all the same, once the wait is over or
// at once, and the process goes on.
func TestAReplacedProducerWhoseCloseHangsOrPanicsIsSucceeded(t *testing.T) {
	defer func(d time.Duration) { producerCloseWait = d }(producerCloseWait)
	producerCloseWait = 300 * time.Millisecond
	for _, c := range []struct {
		name  string
		first *sendRecorder
	}{
		{"Close waits for ever", &sendRecorder{closing: make(chan struct{})}},
		{"Close panics", &sendRecorder{closePanics: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.first.closing != nil {
				t.Cleanup(func() { close(c.first.closing) })
			}
			var clock atomic.Int64
			clock.Store(1000)
			second := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			var created atomic.Int32
			system, nb, pub := startPublisherWith(t, c.first, func(env *Env, cfg *StreamConfig) {
				cfg.StallAfter = 50 * time.Millisecond // answers awaited 100 ms
				env.Elapsed = func() time.Duration { return time.Duration(clock.Load()) * time.Millisecond }
				env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) {
					if created.Add(1) == 1 {
						return c.first, nil
					}
					return second, nil
				}
			})
			system.Root.Send(pub, batch(0, 64))
			c.first.take(t, "64")
			clock.Store(1200)
			if f := next[*messages.PublishFailed](t, nb.tracker); f.End != 64 {
				t.Fatalf("outcome %+v; want the record ending at 64 failed, unanswered", f)
			}
			eventually.NoError(t, waitFor, func() error {
				if n := created.Load(); n != 2 {
					return fmt.Errorf("%d producers created; want the first one's successor", n)
				}
				return nil
			})
			redelivery := batch(1, 64)
			system.Root.Send(pub, redelivery)
			second.answer(t, "64", nil)
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != 64 {
				t.Fatalf("outcome %+v; want the record ending at 64 acknowledged by the successor", a)
			}
		})
	}
}

// The broker holds a message to the topic's maxMessageSize policy as it receives it, with
// its metadata and framing: Pulsar 4.0.8 took this message with a payload of 839 bytes and
// never answered it with 840 under a policy of 1000 (checked on 2026-12-03 with
// pulsar-client-go v0.19.0; the publish time's varint is 6 bytes until 2039).
func TestBrokerSizeIsWhatTheBrokerMeasures(t *testing.T) {
	props := map[string]string{PropPosition: "123456", PropSessionID: "-12345", PropStreamID: "1001", PropRecordingID: "7"}
	name := "ferry-probe-1764759999999999999"
	if got := brokerSize(name, 123456, props, 839); got != 1000 {
		t.Errorf("brokerSize of the 839-byte payload = %d; want 1000 (taken under a policy of 1000)", got)
	}
	if got := brokerSize(name, 123456, props, 840); got != 1001 {
		t.Errorf("brokerSize of the 840-byte payload = %d; want 1001 (refused)", got)
	}
}

// A record over the topic's maxMessageSize policy, which the admin API gives before the
// first send, is not sent: the stream stops, naming the record, the policy and the way on,
// the records before it sent. The sends wait for the admin API's answer.
func TestARecordOverTheTopicsMaxMessageSizeIsNotSent(t *testing.T) {
	const limit = 1000
	big := &messages.RecordBatch{RecordingId: 7, Records: []*messages.Record{
		{Start: 0, End: 64, Payload: make([]byte, 64)},
		{Start: 64, End: 2048, Payload: make([]byte, 1984)},
		{Start: 2048, End: 2112, Payload: make([]byte, 64)},
	}}
	rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
	env, cfg := testEnv(t)
	env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
	answer := make(chan struct{})
	env.MaxMessageSize = func(ctx context.Context, topic string) (int, error) {
		select {
		case <-answer:
			return limit, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	system := testSystem(t)
	_, pids := spawnNeighbours(system)
	pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
	system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
	system.Root.Send(pub, big)
	eventually.Always(t, 200*time.Millisecond, func() error {
		if s := rec.sent(); len(s) > 0 {
			return fmt.Errorf("sent %v before the admin API gave the topic's policy", s)
		}
		return nil
	})
	close(answer)
	stoppedWith(t, givenUp, "the record ending at 2048 is 2", "over the maxMessageSize policy of topic", ", 1000 bytes", "pulsar-admin topics set-max-message-size")
	if s := rec.sent(); !slices.Equal(s, []string{"64"}) {
		t.Fatalf("sent %v; want only the record before the one over the policy", s)
	}
}

// A topic terminated while messages were written to it can stay fenced for good (Pulsar
// 4.0.8): every creation of the producer fails with TopicFenced, not TopicTerminated. The
// publisher asks the admin API whether the topic is terminated, and if so stops the stream
// as for a terminated topic, naming the way on; a fenced topic that is not terminated is
// retried.
func TestAFencedTopicThatIsTerminatedStopsTheStream(t *testing.T) {
	fenced := errors.New("server error: ServiceNotReady: org.apache.pulsar.broker.service.BrokerServiceException$TopicFencedException: fenced")
	for _, terminated := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminated=%t", terminated), func(t *testing.T) {
			env, cfg := testEnv(t)
			var creations, asks atomic.Int32
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) {
				creations.Add(1)
				return nil, fenced
			}
			env.Terminated = func(_ context.Context, topic string, rec int64, by int) (bool, error) {
				asks.Add(1)
				return terminated, nil
			}
			system := testSystem(t)
			_, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
			if terminated {
				stoppedWith(t, givenUp, "is terminated", "new stream name", "TopicFenced")
				return
			}
			eventually.NoError(t, waitFor, func() error {
				if c, a := creations.Load(), asks.Load(); c < 3 || a < 2 {
					return fmt.Errorf("%d creations, %d asks; want the creation retried and the admin API asked again", c, a)
				}
				return nil
			})
			select {
			case err := <-givenUp:
				t.Fatalf("gave up on a fenced topic that is not terminated: %v", err)
			default:
			}
		})
	}
}

// With the admin API, a producer that answers nothing is replaced if the broker lists it as
// connected (the client no longer hears it), or if a broker that answers has not listed it
// for three looks in a row (the broker dropped it, and the client never learned); while the
// broker cannot be asked it is reconnecting, and closing it then can leave its name taken
// on the broker for good (docs/findings.md): it is waited for, and asked about again. A
// terminated topic stops the stream, and so does a second producer in a row that answers
// nothing from the same record on (the broker refuses that record).
func TestAProducerThatAnswersNothingIsReplacedOnlyIfConnected(t *testing.T) {
	start := func(t *testing.T, transport bool, publishers func() ([]string, error)) (*actor.ActorSystem, neighbours, *actor.PID, *sendRecorder, *atomic.Int32, *atomic.Int32) {
		var asks, created atomic.Int32
		rec := &sendRecorder{}
		system, nb, pub := startPublisherWith(t, rec, func(env *Env, cfg *StreamConfig) {
			cfg.Transport, cfg.StallAfter = transport, 25*time.Millisecond // answers awaited 50 ms
			env.Publishers = func(context.Context, string, int64, int) ([]string, error) {
				asks.Add(1)
				return publishers()
			}
			create := env.CreateProducer
			env.CreateProducer = func(o pulsar.ProducerOptions) (pulsar.Producer, error) {
				created.Add(1)
				return create(o)
			}
		})
		system.Root.Send(pub, batch(0, 64))
		rec.take(t, "64")
		return system, nb, pub, rec, &asks, &created
	}
	replacedAfter := func(t *testing.T, nb neighbours, asks, created *atomic.Int32, want int32) {
		t.Helper()
		if f := next[*messages.PublishFailed](t, nb.tracker); f.End != 64 || !strings.Contains(f.Error, "answered none") {
			t.Fatalf("outcome %+v; want the record ending at 64 failed, unanswered", f)
		}
		eventually.NoError(t, waitFor, func() error {
			if n := created.Load(); n != 2 {
				return fmt.Errorf("%d producers created; want the unheard one replaced", n)
			}
			return nil
		})
		if n := asks.Load(); n != want {
			t.Fatalf("replaced after %d looks; want %d", n, want)
		}
	}
	// In transport mode the broker names the producer: the one listed is the producer's Name.
	for _, transport := range []bool{false, true} {
		t.Run(fmt.Sprintf("transport=%t", transport), func(t *testing.T) {
			t.Run("the broker unreachable", func(t *testing.T) {
				_, nb, _, _, asks, created := start(t, transport, func() ([]string, error) { return nil, errors.New("connection refused") })
				eventually.NoError(t, waitFor, func() error {
					if n := asks.Load(); n < 6 {
						return fmt.Errorf("asked %d times whether the producer is connected; want it asked again and again", n)
					}
					return nil
				})
				if n := created.Load(); n != 1 {
					t.Fatalf("%d producers created while the broker could not be asked; want the producer waited for", n)
				}
				if fs := failuresOf(nb.stream, "producer"); len(fs) != 1 || !strings.Contains(fs[0].Message, "the admin API could not be asked whether the broker lists it as connected (connection refused)") {
					t.Fatalf("producer failures %v; want one, saying the admin API could not be asked", fs)
				}
			})
			t.Run("connected", func(t *testing.T) {
				_, nb, _, _, asks, created := start(t, transport, func() ([]string, error) { return []string{"other", "ferry-s-7"}, nil })
				replacedAfter(t, nb, asks, created, 1)
			})
			t.Run("unlisted by a broker that answers", func(t *testing.T) {
				_, nb, _, _, asks, created := start(t, transport, func() ([]string, error) { return []string{"other"}, nil })
				replacedAfter(t, nb, asks, created, unlistedLooks)
				if fs := failuresOf(nb.stream, "producer"); len(fs) < 1 || !strings.Contains(fs[0].Message, "does not list it as connected") {
					t.Fatalf("producer failures %v; want the first saying the broker does not list the producer", fs)
				}
			})
			t.Run("unlisted looks broken by looks that could not tell", func(t *testing.T) {
				var looks atomic.Int32
				_, _, _, _, asks, created := start(t, transport, func() ([]string, error) {
					if looks.Add(1)%3 == 0 {
						return nil, errors.New("connection refused")
					}
					return []string{"other"}, nil
				})
				eventually.NoError(t, waitFor, func() error {
					if n := asks.Load(); n < 10 {
						return fmt.Errorf("asked %d times whether the producer is connected", n)
					}
					return nil
				})
				if n := created.Load(); n != 1 {
					t.Fatalf("%d producers created; want none replaced without %d unlisted looks in a row", n, unlistedLooks)
				}
			})
		})
	}
	t.Run("terminated", func(t *testing.T) {
		rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
		env, cfg := testEnv(t)
		cfg.StallAfter = 25 * time.Millisecond
		env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
		env.Publishers = func(context.Context, string, int64, int) ([]string, error) { return nil, nil }
		env.Terminated = func(context.Context, string, int64, int) (bool, error) { return true, nil }
		system := testSystem(t)
		_, pids := spawnNeighbours(system)
		pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
		system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
		system.Root.Send(pub, batch(0, 64))
		stoppedWith(t, givenUp, "is terminated", "answered none of the producer's sends", "new stream name")
	})
	t.Run("the same record refused twice", func(t *testing.T) {
		rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
		env, cfg := testEnv(t)
		cfg.StallAfter = 25 * time.Millisecond
		env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
		env.Publishers = func(context.Context, string, int64, int) ([]string, error) { return []string{"ferry-s-7"}, nil }
		env.MaxMessageSize = func(context.Context, string) (int, error) { return 0, errors.New("403 Forbidden") }
		system := testSystem(t)
		nb, pids := spawnNeighbours(system)
		pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
		system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
		system.Root.Send(pub, batch(0, 64, 128))
		rec.take(t, "128")
		next[*messages.PublishFailed](t, nb.tracker)
		system.Root.Send(pub, batch(1, 64)) // the re-delivery, to the next producer
		stoppedWith(t, givenUp, "two producers in a row answered none of their sends from the record ending at 64", "could not read (403 Forbidden)")
	})
	t.Run("the same record unheard twice under a policy read", func(t *testing.T) {
		// Storage that takes nothing for that long looks the same: replaced again, not
		// stopped.
		rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
		env, cfg := testEnv(t)
		cfg.StallAfter = 25 * time.Millisecond
		var created atomic.Int32
		env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { created.Add(1); return rec, nil }
		env.Publishers = func(context.Context, string, int64, int) ([]string, error) { return []string{"ferry-s-7"}, nil }
		env.MaxMessageSize = func(context.Context, string) (int, error) { return 0, nil }
		system := testSystem(t)
		nb, pids := spawnNeighbours(system)
		pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
		system.Root.Send(pub, &messages.Watermark{RecordingId: 7, Partitions: 1})
		system.Root.Send(pub, batch(0, 64))
		next[*messages.PublishFailed](t, nb.tracker)
		system.Root.Send(pub, batch(1, 64))
		next[*messages.PublishFailed](t, nb.tracker)
		eventually.NoError(t, waitFor, func() error {
			if n := created.Load(); n < 3 {
				return fmt.Errorf("%d producers created; want each unheard one replaced", n)
			}
			return nil
		})
		select {
		case err := <-givenUp:
			t.Fatalf("stopped: %v; want the producer replaced again", err)
		default:
		}
	})
}

// fakeAdmin answers the admin questions of one topic with n partitions, noting the topic
// (partition) each question of a partition was asked of.
type fakeAdmin struct {
	n     int
	asked []string
}

func (a *fakeAdmin) Partitions(context.Context, string) (int, error) { return a.n, nil }
func (a *fakeAdmin) Deduplication(_ context.Context, topic string) (string, error) {
	a.asked = append(a.asked, topic)
	return "Enabled", nil
}
func (a *fakeAdmin) Terminated(_ context.Context, topic string) (bool, error) {
	a.asked = append(a.asked, topic)
	return false, nil
}
func (a *fakeAdmin) Publishers(_ context.Context, topic string) ([]string, error) {
	a.asked = append(a.asked, topic)
	return nil, nil
}

// The questions about a recording's producer are asked of the partition it publishes to: its
// id modulo the partitions it is routed by, or, by 0, modulo the topic's; a topic that is not
// partitioned is asked itself.
func TestTheAdminIsAskedAboutTheRecordingsPartition(t *testing.T) {
	for _, c := range []struct {
		n, by int
		want  string
	}{{0, 0, "persistent://p/ns/t"}, {4, 4, "persistent://p/ns/t-partition-3"}, {4, 0, "persistent://p/ns/t-partition-3"}, {8, 2, "persistent://p/ns/t-partition-1"}} {
		a := &fakeAdmin{n: c.n}
		ctx := context.Background()
		_, _ = DeduplicationWith(a)(ctx, "persistent://p/ns/t", 7, c.by)
		_, _ = TerminatedWith(a)(ctx, "persistent://p/ns/t", 7, c.by)
		_, _ = PublishersWith(a)(ctx, "persistent://p/ns/t", 7, c.by)
		if want := []string{c.want, c.want, c.want}; !slices.Equal(a.asked, want) {
			t.Errorf("%d partitions, routed by %d: asked %v; want %v", c.n, c.by, a.asked, want)
		}
	}
}

// A record answered as a duplicate at its first send, of a recording nothing of which was
// published before by ferry's account (nothing stored but this run's seed, no send failed),
// was published before under the producer's name from what ferry's store does not hold (a
// store lost or reset without a rename, another ferry with the stream's name): if those were
// other records, this one is not in the topic. It is said, once, as a deduplication
// failure. A record sent again (a newer epoch) may be a duplicate of its own first send:
// not news.
func TestAFirstSendAnsweredAsADuplicateIsSaid(t *testing.T) {
	fresh := &messages.Watermark{RecordingId: 7, Partitions: 1}
	var reads atomic.Int32
	noRead := func(env *Env, _ *StreamConfig) {
		env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
			reads.Add(1) // the read made for the duplicates finds none of the recording's messages
			return StoredMessage{}, false, nil
		}
	}
	t.Run("first sends", func(t *testing.T) {
		rec := &sendRecorder{}
		system, nb, pub := startPublisherAt(t, rec, noRead, fresh)
		system.Root.Send(pub, batch(0, 64, 128))
		rec.answerDuplicate(t, "64")
		rec.answerDuplicate(t, "128")
		var fs []*messages.Failure
		eventually.NoError(t, waitFor, func() error {
			if fs = append(fs, failuresOf(nb.stream, "deduplication")...); len(fs) == 0 {
				return errors.New("no deduplication failure")
			}
			return nil
		})
		if len(fs) != 1 || !strings.Contains(fs[0].Message, "the record ending at 64, sent for the first time, was answered as a duplicate") || !strings.Contains(fs[0].Message, "give the stream a new name") {
			t.Fatalf("failures %v; want one, saying the first send of 64 was answered as a duplicate, and the way on", fs)
		}
		never[*messages.FailureObserved](t, nb.stream, 300*time.Millisecond, "the duplicate of 128 was said too: once is enough")
		if reads.Load() == 0 {
			t.Error("the topic was not read for the duplicates")
		}
	})
	t.Run("sent again", func(t *testing.T) {
		reads.Store(0)
		t.Cleanup(func() {
			if n := reads.Load(); n > 0 {
				t.Errorf("the topic was read %d times for a record sent again after a failure", n)
			}
		})
		rec := &sendRecorder{}
		system, nb, pub := startPublisherAt(t, rec, noRead, fresh)
		system.Root.Send(pub, batch(1, 64))
		rec.answerDuplicate(t, "64")
		if a := next[*messages.PublishAcked](t, nb.tracker); a.End != 64 || !a.Duplicate {
			t.Fatalf("acknowledged %v; want 64, a duplicate", a)
		}
		never[*messages.FailureObserved](t, nb.stream, 300*time.Millisecond, "a record sent again, answered as a duplicate, was said to be a first send's")
	})
}

// A record sent again from a checkpoint — Pulsar acknowledged the recording's records up to
// it — answered as a duplicate where the read back found none of the recording's messages
// (other producers' messages after them: the last one is another's, or the search did not
// reach back; or the last has the producer's name and no position ferry wrote) is not
// checked, and said so, as it is after a seed's read.
func TestADuplicateTheReadBackDidNotReachIsSaid(t *testing.T) {
	other := StoredMessage{Producer: "other", Properties: map[string]string{PropRecordingID: "9", PropPosition: "999"}}
	for _, tt := range []struct {
		name string
		msg  StoredMessage
		ok   bool
		err  error
	}{
		{"another producer's last", other, true, nil},
		{"not searched back", StoredMessage{}, false, fmt.Errorf("read: %w", errNotSearchedBack)},
		{"the producer's last without a position", StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: "x"}}, true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &sendRecorder{}
			system, nb, pub := startPublisherAt(t, rec, func(env *Env, _ *StreamConfig) {
				env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
					return tt.msg, tt.ok, tt.err
				}
			}, &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1})
			b := batch(1, 128)
			b.Records[0].Start = 64
			system.Root.Send(pub, b)
			rec.answerDuplicate(t, "128")
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != 128 || !a.Duplicate {
				t.Fatalf("acknowledged %v; want 128, a duplicate", a)
			}
			eventually.NoError(t, waitFor, func() error {
				for _, f := range failuresOf(nb.stream, "deduplication") {
					if strings.Contains(f.Message, "the record ending at 128, sent again, was answered as a duplicate") && strings.Contains(f.Message, "is not checked") {
						return nil
					}
				}
				return errors.New("no deduplication failure saying the duplicate of 128 is not checked")
			})
		})
	}
}

// A replay restarted for another reason than a failed send (its image closed, an archive
// error: a new epoch, nothing failed) reads again, from the commit, the records of its
// batches still waiting in the publisher (here behind the read of what the topic holds):
// those are reported not sent, not sent a second time (stored twice without
// deduplication).
func TestABatchOfAReplayRestartedSupersedesTheWaitingOnesOfTheEpochBefore(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	let := func() { once.Do(func() { close(release) }) }
	rec := &sendRecorder{}
	system, nb, pub := startPublisherAt(t, rec, func(env *Env, _ *StreamConfig) {
		env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
			<-release
			return StoredMessage{}, false, nil
		}
	}, &messages.Watermark{RecordingId: 7, Stored: true, Position: 0, Partitions: 1, Seed: true, Earlier: true})
	t.Cleanup(let) // registered after the publisher's stop, which waits for the read: runs before it
	system.Root.Send(pub, batch(0, 64, 128))
	system.Root.Send(pub, batch(1, 64, 128))
	for _, end := range []int64{64, 128} {
		if f := next[*messages.PublishFailed](t, nb.tracker); f.Epoch != 0 || f.End != end || !f.NotSent {
			t.Fatalf("the tracker was told %v; want epoch 0's record ending at %d not sent", f, end)
		}
	}
	let()
	rec.answer(t, "64", nil)
	rec.answer(t, "128", nil)
	eventually.Always(t, 200*time.Millisecond, func() error {
		if got := rec.sent(); !slices.Equal(got, []string{"64", "128"}) {
			return fmt.Errorf("sent %v; want each record once", got)
		}
		return nil
	})
}

// A record answered as a duplicate where nothing read tells whether the topic holds it — at
// its first send, or sent again after a read that found the recording's messages end at or
// below the checkpoint — is held back from the tracker until a read made after the answer
// tells: the record in the topic, the same (the client's own re-send after a reconnect of a
// record the broker had stored), is acknowledged and nothing is said; another record there,
// or none where the producer's messages are, is not stored, and the stream stops; a read that
// cannot tell (the record below where it reached, nothing of the recording found) leaves it
// acknowledged and said, unchecked.
func TestADuplicateNothingReadCouldTellOfIsCheckedByAReadAfterItsAnswer(t *testing.T) {
	own := func(ends ...StoredEnd) StoredMessage {
		last := ends[len(ends)-1].End
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: strconv.FormatInt(last, 10)}, Ends: ends}
	}
	fresh := &messages.Watermark{RecordingId: 7, Partitions: 1}
	atCheckpoint := &messages.Watermark{RecordingId: 7, Stored: true, Position: 64, Partitions: 1}
	for _, c := range []struct {
		name      string
		w         *messages.Watermark
		resume    StoredMessage // the resume check's read (a checkpoint only)
		read      StoredMessage // the read after the answer
		ok        bool
		stop      string // the stream stops saying it; "": acknowledged
		said      string // a deduplication failure says it; "": none
		wantReads int32
	}{
		{"a first send, in the topic, the same", fresh, StoredMessage{}, own(StoredEnd{32, 0}, StoredEnd{64, 0}), true, "", "", 1},
		{"a first send, another record there", fresh, StoredMessage{}, own(StoredEnd{32, 0}, StoredEnd{64, 0xbad}, StoredEnd{96, 0}), true, "holds another record of producer ferry-s-7 there", "", 1},
		{"a first send, another record there, the first read", fresh, StoredMessage{}, own(StoredEnd{64, 0xbad}), true, "holds another record of producer ferry-s-7 there", "", 1},
		{"a first send, none there among the producer's", fresh, StoredMessage{}, own(StoredEnd{32, 0}, StoredEnd{96, 0}), true, "holds none of producer ferry-s-7's messages ending there", "", 1},
		{"a first send above the producer's last", fresh, StoredMessage{}, own(StoredEnd{32, 0}), true, "holds none of producer ferry-s-7's messages ending there", "", 1},
		{"a first send below where the read reached", fresh, StoredMessage{}, own(StoredEnd{96, 0}, StoredEnd{128, 0}), true, "", "reached back to 96 only", 1},
		{"a first send, nothing of the recording found", fresh, StoredMessage{}, StoredMessage{}, false, "", "sent for the first time, was answered as a duplicate", 1},
		{"sent again past the broker's last, since stored, the same", atCheckpoint, own(StoredEnd{64, 0}), own(StoredEnd{64, 0}, StoredEnd{128, 0}), true, "", "", 2},
		{"sent again past the broker's last, not stored since", atCheckpoint, own(StoredEnd{64, 0}), own(StoredEnd{64, 0}), true, "holds none of producer ferry-s-7's messages ending there", "", 2},
		{"sent again after a loss, since stored", atCheckpoint, own(StoredEnd{32, 0}), own(StoredEnd{32, 0}, StoredEnd{128, 0}), true, "", "the topic lost messages", 2},
		{"sent again after a loss, not stored since", atCheckpoint, own(StoredEnd{32, 0}), own(StoredEnd{32, 0}), true, "holds none of producer ferry-s-7's messages ending there", "", 2},
		{"sent again into an empty partition, since stored", atCheckpoint, StoredMessage{}, own(StoredEnd{128, 0}), true, "", "holds no message", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &sendRecorder{held: map[string]func(pulsar.MessageID, *pulsar.ProducerMessage, error){}}
			env, cfg := testEnv(t)
			env.CreateProducer = func(pulsar.ProducerOptions) (pulsar.Producer, error) { return rec, nil }
			var reads atomic.Int32
			env.LastStored = func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
				if reads.Add(1) == 1 && c.w.Stored {
					return c.resume, c.resume.Producer != "", nil // none: an empty partition
				}
				return c.read, c.ok, nil
			}
			system := testSystem(t)
			nb, pids := spawnNeighbours(system)
			pub, givenUp := spawnSupervised(t, system, env, cfg, newPublisher(env, cfg, 7, pids))
			system.Root.Send(pub, c.w)
			b := batch(0, 64)
			if c.w.Stored {
				b = batch(0, 128)
				b.Records[0].Start = 64
			}
			system.Root.Send(pub, b)
			end := strconv.FormatInt(b.Records[0].End, 10)
			rec.answerDuplicate(t, end)
			if c.stop != "" {
				stoppedWith(t, givenUp, c.stop, "give the stream a new name", "turn deduplication off for the topic")
				never[*messages.PublishAcked](t, nb.tracker, 200*time.Millisecond, "a duplicate the topic does not hold was acknowledged")
				return
			}
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != b.Records[0].End || !a.Duplicate {
				t.Fatalf("acknowledged %v; want %s, a duplicate", a, end)
			}
			if n := reads.Load(); n != c.wantReads {
				t.Errorf("the topic was read %d times, want %d", n, c.wantReads)
			}
			if c.said == "" {
				never[*messages.FailureObserved](t, nb.stream, 300*time.Millisecond, "a duplicate the topic holds was said")
				return
			}
			var fs []*messages.Failure
			eventually.NoError(t, waitFor, func() error {
				fs = append(fs, failuresOf(nb.stream, "deduplication")...)
				for _, f := range fs {
					if strings.Contains(f.Message, c.said) {
						return nil
					}
				}
				return fmt.Errorf("no deduplication failure saying %q among %d", c.said, len(fs))
			})
		})
	}
}

// The reads made for duplicates: one under way covers the duplicates answered before it
// began, and those answered meanwhile get a read of their own after it; a read that does not
// answer in time leaves its duplicates acknowledged and said, unchecked; after three reads in
// a row that told of none, no more are made; a publisher stopping with duplicates held
// acknowledges none of them (the checkpoint stays below them, the next start sends them
// again).
func TestTheReadsForDuplicates(t *testing.T) {
	own := func(ends ...StoredEnd) StoredMessage {
		return StoredMessage{Producer: "ferry-s-7", Properties: map[string]string{PropRecordingID: "7", PropPosition: strconv.FormatInt(ends[len(ends)-1].End, 10)}, Ends: ends}
	}
	fresh := &messages.Watermark{RecordingId: 7, Partitions: 1}
	start := func(t *testing.T, read LastStoredFunc) (*sendRecorder, neighbours, *actor.PID, *actor.ActorSystem) {
		rec := &sendRecorder{}
		system, nb, pub := startPublisherAt(t, rec, func(env *Env, _ *StreamConfig) { env.LastStored = read }, fresh)
		return rec, nb, pub, system
	}
	acked := func(t *testing.T, nb neighbours, ends ...int64) {
		t.Helper()
		for _, end := range ends {
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != end || !a.Duplicate {
				t.Fatalf("acknowledged %v; want %d, a duplicate", a, end)
			}
		}
	}
	t.Run("a second read for those answered during the first", func(t *testing.T) {
		release := make(chan struct{})
		var once sync.Once
		let := func() { once.Do(func() { close(release) }) }
		var reads atomic.Int32
		var froms sync.Map
		rec, nb, pub, system := start(t, func(ctx context.Context, _ string, _ int64, _ int, from int64, _ pulsar.MessageID) (StoredMessage, bool, error) {
			n := reads.Add(1)
			froms.Store(n, from)
			if n == 1 {
				<-release
			}
			return own(StoredEnd{0, 0}, StoredEnd{64, 0}, StoredEnd{128, 0}), true, nil
		})
		t.Cleanup(let)
		system.Root.Send(pub, batch(0, 64, 128))
		rec.answerDuplicate(t, "64")
		eventually.NoError(t, waitFor, func() error {
			if reads.Load() == 0 {
				return errors.New("no read for the duplicate")
			}
			return nil
		})
		rec.answerDuplicate(t, "128")
		never[*messages.PublishAcked](t, nb.tracker, 100*time.Millisecond, "a duplicate acknowledged before a read told")
		let()
		acked(t, nb, 64, 128)
		if n := reads.Load(); n != 2 {
			t.Errorf("%d reads; want one for 64 and one for 128, answered while it ran", n)
		}
		for n, want := range map[int32]int64{1: 63, 2: 127} { // back to below the lowest held
			if from, _ := froms.Load(n); from != want {
				t.Errorf("read %d back to %v; want %d", n, from, want)
			}
		}
		never[*messages.FailureObserved](t, nb.stream, 200*time.Millisecond, "a duplicate the topic holds was said")
	})
	t.Run("on from the furthest record stored below", func(t *testing.T) {
		// The read is given the id the broker gave the furthest record it stored below the
		// duplicate (the ledger before a restart's holds it: LastStoredWith goes on from
		// there), not that of a record stored after, in the ledger the restart opened.
		knowns, release := make(chan pulsar.MessageID, 4), make(chan struct{})
		var once sync.Once
		let := func() { once.Do(func() { close(release) }) }
		rec, nb, pub, system := start(t, func(_ context.Context, _ string, _ int64, _ int, _ int64, known pulsar.MessageID) (StoredMessage, bool, error) {
			knowns <- known
			<-release
			return own(StoredEnd{64, 0}, StoredEnd{128, 0}, StoredEnd{192, 0}, StoredEnd{256, 0}), true, nil
		})
		t.Cleanup(let)
		system.Root.Send(pub, batch(0, 64, 128, 192, 256))
		at64, at256 := pulsar.NewMessageID(5, 1, -1, 0), pulsar.NewMessageID(6, 0, -1, 0)
		rec.take(t, "64")(at64, nil, nil)
		rec.answerDuplicate(t, "128")
		if known := <-knowns; known != at64 {
			t.Errorf("the read for 128 was given %v; want %v, the id of 64", known, at64)
		}
		rec.answerDuplicate(t, "192") // held, the read for 128 under way
		rec.take(t, "256")(at256, nil, nil)
		for _, end := range []int64{64, 256} {
			if a := next[*messages.PublishAcked](t, nb.tracker); a.End != end || a.Duplicate {
				t.Fatalf("acknowledged %v; want %d, stored", a, end)
			}
		}
		let()
		if known := <-knowns; known != at64 {
			t.Errorf("the read for 192 was given %v; want %v, the id of 64, the furthest stored below it", known, at64)
		}
		acked(t, nb, 128, 192)
	})
	t.Run("a read that does not answer", func(t *testing.T) {
		release := make(chan struct{})
		rec, nb, pub, system := start(t, func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
			<-release // past its context's end, as a client's call can be
			return StoredMessage{}, false, nil
		})
		t.Cleanup(func() { close(release) })
		system.Root.Send(pub, batch(0, 64))
		rec.answerDuplicate(t, "64")
		began := time.Now()
		if a := nextWithin[*messages.PublishAcked](t, nb.tracker, lastStoredTimeout+5*time.Second); a.End != 64 || !a.Duplicate {
			t.Fatalf("acknowledged %v; want 64, a duplicate", a)
		}
		if took := time.Since(began); took < lastStoredTimeout {
			t.Errorf("acknowledged after %s; want it held for the read's time", took)
		}
		if f := next[*messages.FailureObserved](t, nb.stream); !strings.Contains(f.Failure.Message, "no answer within") {
			t.Errorf("said %q; want the read unanswered named", f.Failure.Message)
		}
	})
	t.Run("no more reads after three that told of none", func(t *testing.T) {
		var reads atomic.Int32
		rec, nb, pub, system := start(t, func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
			reads.Add(1)
			return StoredMessage{}, false, nil
		})
		system.Root.Send(pub, batch(0, 64, 128, 192, 256, 320))
		for _, end := range []int64{64, 128, 192, 256, 320} {
			rec.answerDuplicate(t, strconv.FormatInt(end, 10))
			acked(t, nb, end)
		}
		if n := reads.Load(); n != dupReadsFruitless {
			t.Errorf("%d reads; want %d, none after them", n, dupReadsFruitless)
		}
	})
	t.Run("stopping with duplicates held", func(t *testing.T) {
		release, reading := make(chan struct{}), make(chan struct{}, 1)
		rec, nb, pub, system := start(t, func(context.Context, string, int64, int, int64, pulsar.MessageID) (StoredMessage, bool, error) {
			reading <- struct{}{}
			<-release
			return own(StoredEnd{0, 0}, StoredEnd{64, 0}), true, nil
		})
		system.Root.Send(pub, batch(0, 64))
		rec.answerDuplicate(t, "64")
		<-reading // the duplicate is held
		stopped := system.Root.StopFuture(pub)
		close(release)
		if err := stopped.Wait(); err != nil {
			t.Fatal(err)
		}
		never[*messages.PublishAcked](t, nb.tracker, 300*time.Millisecond, "a duplicate held at the stop was acknowledged")
	})
}
