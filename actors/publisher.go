package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/asynkron/protoactor-go/actor"

	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// Message properties ferry sets on every Pulsar message.
const (
	PropRecordingID = "ferry.recording-id"
	PropPosition    = "ferry.position" // the record's end position: its sequence id
	PropSessionID   = "ferry.session-id"
	PropStreamID    = "ferry.stream-id"
)

// flushTimeout bounds the flush before a producer is closed.
const flushTimeout = 10 * time.Second

// producerRetry is the back-off between attempts to create the producer.
var producerRetry = supervisor.Backoff{Min: 200 * time.Millisecond, Max: 10 * time.Second}

// publisher is the Publisher[r] actor: it owns the Pulsar producer of one recording,
// named ferry-<stream>-<recording> (architecture §3.3), and sends every record the tracker
// emitted with sequence id = its end position. Pulsar callbacks send the outcome to the
// tracker; besides, they touch only atomics shared with the actor (failedEpoch, outstanding
// and parked, verifyUpTo, storedAgainSent), documented below, and wake the actor with a
// message.
//
// Its mailbox holds the tracker's batches (bounded by the replay's credits), the producer
// creation result and wake-ups (at most one per outcome).
type publisher struct {
	env  *Env
	cfg  *StreamConfig
	rec  int64
	pids *recordingPIDs

	producer pulsar.Producer
	creating bool
	// handoff passes the producer a creation (on a task goroutine) made to the actor, or,
	// when the actor stopped meanwhile, to whoever of the two comes second, to close it.
	handoff  *handoff[pulsar.Producer]
	attempts int
	// dedupFailures counts the current producer's asks of the broker's deduplication status
	// in a row that got no answer it knows (asked again with back-off).
	dedupFailures int
	waiting       []*messages.RecordBatch // batches not sent yet, in arrival order
	// outstanding counts sends whose outcome has not arrived; sentEpoch is the epoch of
	// the last batch sent. A batch of a newer epoch (a re-delivery) waits until every
	// send of the older ones has its outcome: interleaving a re-delivery's lower sequence
	// ids with the failed epoch's sends still in flight makes the broker's duplicate
	// receipts arrive out of the client's order, and pulsar-client-go then drops the
	// connection. The callbacks decrement outstanding and, if the actor waits for zero
	// (parked), send it resumeSends. Both belong to one producer: a new producer gets its
	// own (see created).
	outstanding *atomic.Int64
	parked      *atomic.Bool
	sentEpoch   uint64
	// unanswered is the current producer's sends, oldest first, that may still await their
	// callback (answered ones are dropped from the front as sends go out): a producer the
	// client closes for good may never call some back, and replacing it reports those
	// failed (strand). The callback and strand each claim a send's answer; one wins.
	unanswered []*sendAnswer
	// answeredAt (shared with the callbacks) is when the current producer last called a
	// send back, by Env.Elapsed in milliseconds; watching is set while a look at how long
	// its sends have gone unanswered is due (answersDue).
	answeredAt *atomic.Int64
	watching   bool
	// maxSize is the topic's maxMessageSize policy as the admin API gave it when the
	// current producer was created (0: none, or not known); sizing holds the sends back
	// until it answers.
	maxSize int
	sizing  bool
	// sizeUnasked is set once the admin API could not be asked for the policy (said once).
	sizeUnasked bool
	// askingTerminated is set while the admin API is asked whether the topic is terminated;
	// askingUnheard while it is asked about a producer that answers nothing, and
	// reconnectingSaid is what the wait for the current producer was last said to be for
	// ("unlisted", "unasked"; "": nothing said).
	askingTerminated bool
	askingUnheard    bool
	reconnectingSaid string
	// unlisted counts the current producer's looks in a row that found it answering
	// nothing and not listed by a broker that answered; unheardEnd and unheardLast are the
	// oldest and newest sends of the last producer replaced for answering nothing (-1:
	// none); sizeErr is why the topic's policy could not be read for the current producer
	// (nil: read).
	unlisted    int
	unheardEnd  int64
	unheardLast int64
	sizeErr     error
	// failedEpoch is 1 + the highest epoch in which a send failed (0: none). The callback
	// of the failed send stores it, possibly on the actor's own goroutine in the middle of
	// a batch (pulsar-client-go fails a full queue inside SendAsync), and the send loop
	// reads it before every send: no send of a failed epoch follows its failure (lesson 22).
	failedEpoch  *atomic.Uint64
	recordingStr string
	streamIDStr  string
	// watermark is what the store held for the recording when the publisher started;
	// acked (shared with the callbacks; -1: none) is the end of the last record the broker
	// acknowledged to this publisher, stored or as a duplicate. dedupChecked is set once the
	// check of the broker's deduplication state began for the current producer (lesson 21):
	// it holds the broker to checkedUpTo, the checkpoint or, for a producer created again,
	// acked if that is further (brokerMustHold). verifying, while it reads what the broker
	// stored last, holds the sends back. verifyUpTo (shared with the callbacks; -1: nothing
	// to verify) is the last position the broker stored from the producer before it was
	// created: every record re-sent up to there must come back as a duplicate.
	watermark *messages.Watermark
	acked     *atomic.Int64
	// storedAt (shared with the callbacks) are ids the broker gave records it stored for
	// this publisher (not duplicates'): the reads of what the broker stored last go on
	// from one into the ledgers before the partition's last.
	storedAt     *storedIDs
	checkedUpTo  acknowledgedUpTo
	dedupChecked bool
	verifying    bool
	verifyGen    uint64 // numbers the reads, so that an earlier read's answer is ignored
	verifyTimer  *time.Timer
	rereads      int // reads made again after a failure (readAgainLater), for their back-off
	verifyUpTo   *atomic.Int64
	// mustHold: the broker must hold records of the recording (brokerMustHold), which the
	// read of its last message checks (lesson 21); else the read is for lesson 22 only
	// (sentBefore). readBack (shared with the callbacks; nil: not read) is what that read
	// found of the producer's messages of the recording: a record sent again among them
	// that the broker answers as a duplicate must be one of them.
	mustHold bool
	readBack *atomic.Pointer[storedEnds]
	// dupChecks are the records answered as duplicates where nothing read tells whether the
	// topic holds them, held back from the tracker until a read made since tells
	// (duplicatesRead); dupRead is the read under way (0: none), of the first dupCovered
	// of them, numbered by dupGen; dupUncheckedSaid: one of them was said unchecked.
	dupChecks        []*duplicateToCheck
	dupRead          uint64
	dupGen           uint64
	dupCovered       int
	dupTimer         *time.Timer
	dupUncheckedSaid bool
	// dupFruitless counts the reads in a row that could tell of none of the duplicates they
	// covered; at dupReadsFruitless, the duplicates that follow are not read for.
	dupFruitless int
	// stored are the producer's messages of the recording that the read back found past
	// the checkpoint, up to the broker's last, when that lies past it, ascending end: those
	// the sends have not passed yet (nil: none, or all checked). The record the archive
	// holds ending at each must be the same, or the records re-sent up to there are other
	// records the broker answers as duplicates of the old ones. sentEnd is the end of the
	// last record the current producer sent (-1: none).
	stored  []storedMark
	sentEnd int64
	// storedAgainSent is set by the first callback that finds a record stored again: one
	// report per publisher.
	storedAgainSent *atomic.Bool
	// routedBy is how many partitions the recording is routed by, in archive mode (0: not
	// yet known): the count its checkpoint keeps (Watermark), or, for a recording whose
	// checkpoint keeps none, the topic's count as the producer sees it before the first send,
	// stored first (RouteRecording; routeStored once the checkpointer answers, routing
	// while it is asked). Every producer's router reads it, so that a producer created again
	// routes where the first one did.
	routedBy    *atomic.Int64
	routeStored bool
	routing     bool
	name        string // the producer's name ("" in transport mode)
	incarnation int
}

// sendAnswer is one send's claim to its outcome: the callback's, or strand's for a send a
// producer closed for good never called back.
type sendAnswer struct {
	end      int64
	epoch    uint64
	sentMs   int64 // by Env.Elapsed
	answered atomic.Bool
}

// storedMark is the end and CRC-32C of a message the broker stored.
type storedMark struct {
	end      int64
	checksum uint32
}

// readStoredAgain has read gen of what the broker stored last made again (readAgainLater).
type readStoredAgain struct{ gen uint64 }

// lastStoredRead is what the broker stored last in the recording's partition, read for the
// deduplication check.
type lastStoredRead struct {
	gen      uint64
	msg      StoredMessage
	ok       bool
	err      error
	timedOut bool // sent by the timer, not the read
}

// storedEnds are the positions of the messages of the producer and recording that a read
// of the broker's last message found, sorted (StoredMessage.Ends): every one the partition
// holds above floor, the first of them or, when the read went back past the producer's
// first message, the seed.
type storedEnds struct {
	floor int64
	ends  []int64
	// from is where the sends started again (the checkpoint); unchecked is set by the first
	// callback that finds a duplicate between from and floor, which is said once.
	from      int64
	unchecked atomic.Bool
	// fresh: nothing was read, as nothing of the recording was published before this
	// producer by ferry's account (firstSends): a record answered as a duplicate at its
	// first send was published before under the producer's name, from what ferry's store
	// does not hold.
	fresh bool
}

// notReadBack marks what the topic holds of the recording as not read (notRead): a record
// sent again that is answered as a duplicate is said, unchecked (duplicateUnchecked).
func (p *publisher) notReadBack() {
	p.readBack.Store(&storedEnds{from: p.watermark.Position, floor: notRead})
}

// firstSends is the read-back of a producer that has nothing to check (checkDedupState):
// its records' first sends, answered as duplicates, are said (duplicateUnchecked).
func firstSends(from int64) *storedEnds { return &storedEnds{from: from, floor: notRead, fresh: true} }

// lacks reports whether the record ending at end, answered as a duplicate, is not stored:
// it lies above the floor and not above the last message read, and is none of them. The
// broker keeps only the producer's highest sequence id, so a later record stored while
// this one was not makes its re-send a duplicate (lesson 22).
func (s *storedEnds) lacks(end int64) bool {
	if s == nil || len(s.ends) == 0 || end <= s.floor || end > s.ends[len(s.ends)-1] {
		return false
	}
	_, found := slices.BinarySearch(s.ends, end)
	return !found
}

// beyondReach reports whether the record ending at end, answered as a duplicate, lies
// between where the sends started again and the floor (the first message read, or the
// seed), where what the topic holds was not read: it is not checked.
func (s *storedEnds) beyondReach(end int64) bool {
	return s != nil && end > s.from && end < s.floor
}

// notRead is the floor of a read-back that found none of the recording's messages: every
// record sent again is beyond its reach.
const notRead = math.MaxInt64

// duplicateUnchecked is a callback's news that a record answered as a duplicate is below
// where the read-back reached (storedEnds.beyondReach), once per read.
type duplicateUnchecked struct {
	end   int64
	floor int64
	fresh bool   // storedEnds.fresh: at its first send
	why   string // what the read made after the answer found (duplicatesRead); "": none made
}

// duplicateToCheck is a callback's news that the broker answered the record ending at end
// (epoch, its CRC-32C checksum) as a duplicate where no read tells whether the topic holds
// it (storedEnds.beyondReach with nothing read): a first send (fresh), or a send after a
// read that found none of the recording's messages above the checkpoint. Its outcome is
// the tracker's once a read made since tells (duplicatesRead).
type duplicateToCheck struct {
	end      int64
	epoch    uint64
	checksum uint32
	floor    int64
	fresh    bool
	why      string // why a read made since could not tell (duplicatesRead)
}

// duplicatesRead is the answer to read gen made for the duplicates to check.
type duplicatesRead struct {
	gen uint64
	msg StoredMessage
	ok  bool
	err error
}

// duplicateNotStored is a callback's news that the broker answered the record ending at
// end, sent again, as a duplicate although the topic does not hold it (storedEnds.lacks):
// the messages read back above floor end up to last, and none at end.
type duplicateNotStored struct{ end, floor, last int64 }

// storedAgain is a callback's news that a record at or below verifyUpTo was stored, not
// recognised as a duplicate: the broker does not deduplicate what ferry published.
type storedAgain struct{ end int64 }

// producerCreated says a creation of the producer ended (on a task goroutine); the
// producer, if any, is in the handoff.
type producerCreated struct {
	handoff *handoff[pulsar.Producer]
	err     error
}

// deduplicationRead is the broker's answer, for the producer that asked, to whether it
// deduplicates the recording's partition.
type deduplicationRead struct {
	producer pulsar.Producer
	status   string
	err      error
}

// askDeduplicationAgain is the publisher's self-message to ask the broker's deduplication
// status again (it was Recovering or Initialized) for producer.
type askDeduplicationAgain struct{ producer pulsar.Producer }

// dedupRecheck is how long after a Recovering or Initialized answer the broker is asked again.
const dedupRecheck = time.Second

// dedupRetry spaces the asks of the broker's deduplication status after one that failed,
// or that it answered with a status ferry does not know (a variable for tests).
var dedupRetry = supervisor.Backoff{Min: 5 * time.Second, Max: 5 * time.Minute}

// retryProducer is the publisher's self-message to try creating the producer again.
type retryProducer struct{}

// producerLost is a callback's news that the client closed the producer for good: the
// topic was deleted while topic auto-creation is off (TopicNotFound on the reconnect), or
// terminated, or the producer fenced. Every later send fails at once; the publisher
// creates the producer again (or, for a terminated topic, stops the stream).
type producerLost struct {
	producer pulsar.Producer
	err      error
}

// answersDue is the publisher's self-message to look at how long producer has left its
// sends unanswered.
type answersDue struct{ producer pulsar.Producer }

// maxSizeRead is the admin API's answer for the topic's maxMessageSize policy, asked for
// producer.
type maxSizeRead struct {
	producer pulsar.Producer
	size     int
	err      error
}

// unheardRead is the admin API's answer about producer, which answered none of its sends
// for long: whether the topic is terminated, and whether the producer is connected.
type unheardRead struct {
	producer              pulsar.Producer
	terminated, connected bool
	err                   error
}

// terminatedRead is the admin API's answer whether the topic is terminated, asked after a
// creation of the producer failed with cause.
type terminatedRead struct {
	terminated bool
	err, cause error
}

// recordTooLarge is a callback's news that a record is larger than the broker accepts:
// archive mode cannot skip it, and sending it again fails the same way.
type recordTooLarge struct {
	end, size int64
	err       error
}

// lostForGood reports whether err means the client closed the producer for good.
func lostForGood(err error) bool {
	return errors.Is(err, pulsar.ErrProducerClosed) || errors.Is(err, pulsar.ErrTopicNotfound) ||
		errors.Is(err, pulsar.ErrTopicTerminated) || errors.Is(err, pulsar.ErrProducerFenced)
}

// terminated reports whether err is the broker's answer for a terminated topic, which
// takes no more messages, ever.
func terminated(err error) bool {
	return errors.Is(err, pulsar.ErrTopicTerminated) || strings.Contains(err.Error(), "TopicTerminated")
}

func newPublisher(env *Env, cfg *StreamConfig, rec int64, pids *recordingPIDs) actor.Producer {
	incarnations := 0
	return func() actor.Actor {
		incarnations++
		p := &publisher{env: env, cfg: cfg, rec: rec, pids: pids, failedEpoch: new(atomic.Uint64),
			verifyUpTo: new(atomic.Int64), readBack: new(atomic.Pointer[storedEnds]), acked: new(atomic.Int64), storedAt: new(storedIDs), storedAgainSent: new(atomic.Bool), routedBy: new(atomic.Int64),
			recordingStr: strconv.FormatInt(rec, 10), streamIDStr: strconv.FormatInt(int64(cfg.Def.StreamID), 10), incarnation: incarnations,
			sentEnd: -1, unheardEnd: -1, unheardLast: -1}
		p.verifyUpTo.Store(-1)
		p.acked.Store(-1)
		return p
	}
}

func (p *publisher) Receive(ctx actor.Context) {
	switch msg := ctx.Message().(type) {
	case *actor.Started:
		if p.incarnation > 1 {
			// The failed incarnation took the batches it held and the bookkeeping of its
			// sends with it: records the tracker counts as in flight would never get an
			// outcome, and the recording would stall without a word. The stream stops,
			// loudly, instead; a new start resumes from the persisted checkpoint.
			refuseRestart(fmt.Sprintf("recording %d: the publisher", p.rec))
		}
		if !p.cfg.Transport {
			ctx.Request(p.pids.checkpointer, &messages.WatermarkRequest{RecordingId: p.rec})
		}
		p.create(ctx)
	case *retryProducer:
		p.create(ctx)
	case *messages.Watermark:
		p.watermarked(ctx, msg)
	case *lastStoredRead:
		p.lastStoredRead(ctx, msg)
	case *readStoredAgain:
		if msg.gen == p.verifyGen && p.producer != nil {
			p.readStored(ctx, msg.gen) // false: stopping
		}
	case *storedAgain:
		p.reportStoredAgain(ctx, msg.end)
	case *duplicateNotStored:
		p.notStored(msg)
	case *duplicateUnchecked:
		p.duplicateUnchecked(ctx, msg)
	case *duplicateToCheck:
		if p.dupFruitless >= dupReadsFruitless {
			msg.why = fmt.Sprintf("%d reads of what the topic holds made after such answers in a row told of none (the records far below the partition's last, as when a lost checkpoint store has the recording published again), so no more are made", p.dupFruitless)
			p.uncheckedDuplicates(ctx, []*duplicateToCheck{msg})
			return
		}
		p.dupChecks = append(p.dupChecks, msg)
		p.readForDuplicates(ctx)
	case *duplicatesRead:
		p.duplicatesRead(ctx, msg)
	case *producerCreated:
		p.created(ctx, msg)
	case *deduplicationRead:
		p.deduplicationRead(ctx, msg)
	case *messages.RecordingRouted:
		p.routed(ctx, msg)
	case *partitionsGrew:
		p.partitionsGrown(msg)
	case *partitionsFewer:
		p.routable(ctx)
	case *askDeduplicationAgain:
		if msg.producer == p.producer {
			p.askDeduplication(ctx)
		}
	case *producerLost:
		p.lost(ctx, msg)
	case *answersDue:
		p.answersDue(ctx, msg)
	case *maxSizeRead:
		p.maxSizeRead(ctx, msg)
	case *terminatedRead:
		p.terminatedRead(msg)
	case *unheardRead:
		p.unheardRead(ctx, msg)
	case *oldClosed:
		p.creating = false
		p.create(ctx)
	case *recordTooLarge:
		panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d: the record ending at %d (a payload of %d bytes) is larger, with its metadata, than the broker accepts (its maxMessageSize, 5 MB unless configured): it can never be published, and ferry does not skip records; raise maxMessageSize in the broker's configuration (broker.conf or standalone.conf) and restart ferry. (If the client found it too large only with its metadata, as it wrote it, Pulsar may have stored later records already: the restart then finds its re-send answered as a duplicate of them and stops again, naming the way on (lesson 22).) (%w)", p.rec, msg.end, msg.size, msg.err)))
	case *messages.RecordBatch:
		p.supersede(ctx, msg.Epoch)
		p.waiting = append(p.waiting, msg)
		p.pump(ctx)
	case *resumeSends:
		p.pump(ctx)
	case *actor.Restarting, *actor.Stopping:
		if n := len(p.dupChecks); n > 0 {
			// Not acknowledged: the checkpoint stays below them, and the next start sends
			// them again, to be checked then.
			p.env.Logger.Warn("records answered as duplicates were not checked against what the topic holds before the recording's publishing stopped: they are not counted as published, and are sent again from the checkpoint at the next start",
				"stream", p.cfg.Def.Name, "recording", p.rec, "records", n, "first_end", p.dupChecks[0].end)
			p.dupChecks = nil
		}
		if p.handoff != nil {
			if prod, ok := p.handoff.abandon(); ok {
				p.producer = prod // created, and its news not handled yet: closed below
			}
			p.handoff = nil
		}
		p.close()
	}
}

func (p *publisher) create(ctx actor.Context) {
	if p.creating || p.producer != nil {
		return
	}
	// Transport mode has no recording and no deduplication: Pulsar names the producer.
	name := ""
	if !p.cfg.Transport {
		var err error
		if name, err = progress.ProducerName(p.cfg.Def.Name, p.rec); err != nil {
			panic(supervisor.Fail(supervisor.Bug, err))
		}
		p.name = name
	}
	opts := pulsar.ProducerOptions{
		Topic: p.cfg.Def.Topic,
		Name:  name,
		// Deduplication needs one message per sequence id, sends that never time out (a
		// timeout leaves a gap that dedup turns into loss), and a bounded queue that fails
		// rather than blocks (the replay's credits keep it from filling).
		DisableBatching: true,
		SendTimeout:     -1,
		// Twice the credits, as headroom: the credits already keep the queue from filling
		// (v0.19.0 frees a slot just before the callback that leads to the credit's return),
		// and a full queue fails the send.
		MaxPendingMessages:      int(min(2*p.cfg.MaxInflightRecords, 1<<21)),
		DisableBlockIfQueueFull: true,
		// A recording stays in one partition, so order and dedup hold on partitioned topics.
		MessageRouter: p.router(ctx),
	}
	p.creating = true
	p.producerState(ctx, "creating")
	self, system, h := ctx.Self(), ctx.ActorSystem(), &handoff[pulsar.Producer]{}
	p.handoff = h
	p.env.tasks().Go(func() {
		prod, err := p.env.CreateProducer(opts)
		if err == nil && !h.offer(prod) {
			prod.Close()
			return
		}
		system.Root.Send(self, &producerCreated{handoff: h, err: err})
	})
}

// router routes every record of the recording to one partition: its id modulo the
// partitions it is routed by (routedBy, set before the first send: see routable). The
// client calls it inside SendAsync, on the actor's goroutine (pulsar-client-go v0.19.0,
// producer.getPartition), with the topic's count, which it reads again every minute:
// partitions only grow, so the recording's partition stays valid, and the publisher is told
// once that they grew. In transport mode everything goes to partition 0: one producer, one
// order, as there is no recording to choose a partition by.
func (p *publisher) router(ctx actor.Context) func(*pulsar.ProducerMessage, pulsar.TopicMetadata) int {
	if p.cfg.Transport {
		return func(*pulsar.ProducerMessage, pulsar.TopicMetadata) int { return 0 }
	}
	var grew, fewer atomic.Bool
	self, system, rec, routedBy := ctx.Self(), ctx.ActorSystem(), p.rec, p.routedBy
	return func(_ *pulsar.ProducerMessage, tm pulsar.TopicMetadata) int {
		by, n := routedBy.Load(), int64(tm.NumPartitions())
		switch {
		case n > by && grew.CompareAndSwap(false, true):
			system.Root.Send(self, &partitionsGrew{by: by, now: n})
		case n < by && fewer.CompareAndSwap(false, true):
			system.Root.Send(self, &partitionsFewer{}) // the count shrank inside a batch (routable)
		}
		return recordingPartition(rec, int(by))
	}
}

// partitionsFewer is the router's news that the topic has fewer partitions than the
// recording is routed by; routable says so, and stops the stream.
type partitionsFewer struct{}

// partitionsGrew is the router's news that the topic has more partitions than the
// recording is routed by.
type partitionsGrew struct{ by, now int64 }

// partitionsGrown says that the recording stays in its partition while the topic's
// partitions grew.
func (p *publisher) partitionsGrown(g *partitionsGrew) {
	p.env.Logger.Info("the topic has more partitions than when the recording began: it stays in the partition it began in, across restarts too (its checkpoint keeps the count); recordings begun later are spread over all of them",
		"stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "partition", recordingPartition(p.rec, int(g.by)), "routed_by", g.by, "partitions", g.now)
}

// PartitionCounter is what a publisher asks of its producer before it sends: how many
// partitions it publishes to (1 for a topic that is not partitioned). pulsar-client-go
// v0.19.0's producers have it; a producer decorator must pass it on.
type PartitionCounter interface{ NumPartitions() uint32 }

// watermarked takes what the store holds for the recording: the partitions it is routed
// by, where the dedup check begins. The sends wait for it (routable).
func (p *publisher) watermarked(ctx actor.Context, w *messages.Watermark) {
	p.watermark = w
	if w.Partitions > 0 {
		p.routedBy.Store(int64(w.Partitions))
		p.routeStored = true
	}
	if p.producer != nil {
		p.askDeduplication(ctx)
	}
	p.checkDedupState(ctx)
	p.pump(ctx)
}

// routable reports whether the current producer may send. In archive mode that needs the
// watermark, and the count of partitions the recording is routed by stored: for a
// recording whose checkpoint keeps none, the checkpointer is asked to store the topic's
// count as the producer sees it (RouteRecording), and the sends wait for its answer, so
// that no record is in Pulsar whose partition a restart could not find again. A producer
// that publishes to fewer partitions than that (the topic was deleted and created again
// with fewer) fails the stream before it sends anything.
func (p *publisher) routable(ctx actor.Context) bool {
	if p.cfg.Transport {
		return p.producer != nil
	}
	if p.producer == nil || p.watermark == nil || p.routing {
		return false
	}
	pc, ok := p.producer.(PartitionCounter)
	if !ok {
		panic(supervisor.Fail(supervisor.Bug, fmt.Errorf("recording %d: the producer (%T) does not tell how many partitions it publishes to", p.rec, p.producer)))
	}
	n := int64(max(pc.NumPartitions(), 1))
	if !p.routeStored {
		if w := p.watermark; w.Stored && !w.Seed && n > 1 {
			p.env.Logger.Warn("the recording's checkpoint, written by an earlier ferry, does not say how many partitions the recording was routed by: it is routed by the topic's count now; if partitions were added since its first records were published, the rest of it goes to another partition, where its order and deduplication do not reach",
				"stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "partitions", n, "partition", recordingPartition(p.rec, int(n)))
		}
		p.routing = true
		ctx.Request(p.pids.checkpointer, &messages.RouteRecording{RecordingId: p.rec, Partitions: int32(n)})
		return false
	}
	if by := p.routedBy.Load(); n < by {
		// Checked before every batch: the client reads the count again every minute, and
		// a topic deleted and created again with fewer partitions shrinks it under a live
		// producer too (the router's news of a shrink inside a batch comes after it).
		panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("topic %s has %d partitions, fewer than the %d recording %d is routed by (it was deleted and created again): ferry sends no record of it to another partition than the one it began in (%d), where its order and deduplication do not reach. Give the stream a new topic, or reset its checkpoint (%s) to publish its recordings again from the start position",
			p.cfg.Def.Topic, n, by, p.rec, recordingPartition(p.rec, int(by)), store.ResetCommand(p.cfg.Def.Name))))
	}
	return true
}

// routed takes the checkpointer's answer: the count the recording is routed by is stored.
func (p *publisher) routed(ctx actor.Context, r *messages.RecordingRouted) {
	p.routing = false
	p.routedBy.Store(int64(r.Partitions))
	p.routeStored = true
	p.pump(ctx)
}

func (p *publisher) created(ctx actor.Context, res *producerCreated) {
	if res.handoff != p.handoff {
		// Not the creation this publisher waits for: an earlier incarnation's, late (the
		// same PID after a restart).
		if prod, ok := res.handoff.abandon(); ok {
			prod.Close()
		}
		return
	}
	p.creating = false
	p.handoff = nil
	prod, _ := res.handoff.take() // none when the creation failed
	if res.err != nil && terminated(res.err) {
		panic(supervisor.Fail(supervisor.Poison, topicTerminated(p.cfg.Def, res.err)))
	}
	if res.err != nil && strings.Contains(res.err.Error(), "TopicFenced") {
		p.askTerminated(ctx, res.err)
	}
	if res.err != nil {
		p.attempts++
		d := producerRetry.Delay(p.attempts, rand.Float64()) // jittered: every recording's publisher may retry at once
		why, msg := "cannot create the Pulsar producer; retrying", fmt.Sprintf("%s: %v", p.cfg.Def.Topic, res.err)
		switch {
		case isProducerBusy(res.err):
			why = "the Pulsar producer name is taken (another ferry publishes this recording, or the broker has not released an earlier producer); retrying"
		case strings.Contains(res.err.Error(), "TopicNotFound"):
			why = "the topic does not exist and the broker does not create topics automatically there; create it (pulsar-admin topics create) or allow topic auto-creation; retrying"
			msg = fmt.Sprintf("%s does not exist and is not created automatically: create it (pulsar-admin topics create) or allow topic auto-creation (%v)", p.cfg.Def.Topic, res.err)
		}
		p.env.Logger.Warn(why, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "attempt", p.attempts, "retry_in", d, "error", res.err)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "producer", Message: msg}})
		p.producerState(ctx, "retrying")
		self, system := ctx.Self(), ctx.ActorSystem()
		time.AfterFunc(d, func() { system.Root.Send(self, &retryProducer{}) })
		return
	}
	p.attempts = 0
	p.producer = prod
	// The ordering that outstanding keeps is within one producer's pending queue. The one
	// this producer replaces was closed for good, and a closed producer may never call
	// some sends back: pulsar-client-go v0.19.0 strands, unwritten, a send its event loop
	// takes in while a reconnect closes the producer (TopicNotFound). Counted on, they
	// would hold the re-delivery back for ever. Its late callbacks count on its counters.
	p.outstanding, p.parked, p.answeredAt = new(atomic.Int64), new(atomic.Bool), new(atomic.Int64)
	p.watching, p.askingUnheard, p.reconnectingSaid, p.unlisted = false, false, "", 0 // an earlier producer's ask is ignored
	p.dedupChecked = false                                                            // a producer created again may find the broker's state lost
	p.dedupFailures, p.rereads = 0, 0
	p.sentEnd = -1 // and it has sent nothing yet: what it sends again is checked (lastStoredRead)
	p.producerState(ctx, "ready")
	p.askMaxSize(ctx)
	if p.cfg.Transport || p.watermark != nil {
		p.askDeduplication(ctx) // else once the watermark says which partition to ask about
	}
	p.checkDedupState(ctx)
	p.pump(ctx)
}

// askTerminated asks the broker's admin API whether the topic is terminated, after the broker
// refused the producer as fenced (cause): a topic terminated while messages were being
// written to it can stay fenced for good, and the creation would be retried for ever
// (Pulsar 4.0.8, docs/findings.md). Not asked again while an answer is awaited.
func (p *publisher) askTerminated(ctx actor.Context, cause error) {
	if p.env.Terminated == nil || p.cfg.Transport || p.askingTerminated { // archive mode's (config)
		return
	}
	p.askingTerminated = true
	ask, topic, rec, by := p.env.Terminated, p.cfg.Def.Topic, p.rec, int(p.routedBy.Load())
	p.askAdmin(ctx, func(call context.Context) any {
		terminated, err := ask(call, topic, rec, by)
		return &terminatedRead{terminated: terminated, err: err, cause: cause}
	})
}

// askAdmin runs ask, a question to the broker's admin API, on a task goroutine, bounded by
// the stream's call timeout (at least a second), and sends its answer to the publisher.
func (p *publisher) askAdmin(ctx actor.Context, ask func(call context.Context) any) {
	self, system := ctx.Self(), ctx.ActorSystem()
	timeout := max(p.cfg.CallTimeout, time.Second)
	p.env.tasks().Go(func() {
		call, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		system.Root.Send(self, ask(call))
	})
}

// terminatedRead stops the stream if the topic is terminated; otherwise the creation goes
// on being retried, its failures in the status.
func (p *publisher) terminatedRead(r *terminatedRead) {
	p.askingTerminated = false
	if r.terminated {
		panic(supervisor.Fail(supervisor.Poison, topicTerminated(p.cfg.Def, fmt.Errorf("the broker refuses the producer as fenced, and the admin API says the topic is terminated: %w", r.cause))))
	}
	if r.err != nil {
		p.env.Logger.Debug("cannot ask the broker's admin API whether the fenced topic is terminated", "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "error", r.err)
	}
}

// askDeduplication asks the broker's admin API whether it deduplicates the partition the new
// producer publishes to (the producer exists, so the topic does): if not, effectively-once
// does not hold, and the stream says so (lesson 21). The sends do not wait for the answer:
// the records are published either way, at least once.
func (p *publisher) askDeduplication(ctx actor.Context) {
	if p.cfg.Transport {
		return // no sequence ids: nothing to deduplicate by (at most once)
	}
	if p.env.Deduplication == nil {
		ctx.Send(p.pids.stream, &messages.DeduplicationChecked{RecordingId: p.rec, State: "unchecked"})
		return
	}
	ask, topic, rec, by, prod := p.env.Deduplication, p.cfg.Def.Topic, p.rec, int(p.routedBy.Load()), p.producer
	p.askAdmin(ctx, func(call context.Context) any {
		status, err := ask(call, topic, rec, by)
		return &deduplicationRead{producer: prod, status: status, err: err}
	})
}

// deduplicationRead says what the broker answered: in the status always, in the log and as
// a failure when it does not deduplicate or could not be asked.
func (p *publisher) deduplicationRead(ctx actor.Context, r *deduplicationRead) {
	if r.producer != p.producer {
		return // asked for a producer since replaced: its successor asks again
	}
	state := "unknown"
	if r.err == nil && knownDedupStatus(r.status) && p.dedupFailures > 0 {
		p.env.Logger.Info("the broker's admin API answered whether it deduplicates the topic", "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "status", r.status, "failed_asks", p.dedupFailures)
		p.dedupFailures = 0
	}
	switch {
	case r.err != nil || !knownDedupStatus(r.status):
		p.dedupFailures++
		d := dedupRetry.Delay(p.dedupFailures, rand.Float64())
		what := "cannot ask the broker's admin API whether it deduplicates the topic (see the error; pulsar.admin_url must be the broker's web service, and ferry's role needs permission to look the topic up); going on unchecked, asking again"
		if r.err == nil {
			what = "the broker's deduplication of the topic is neither enabled nor disabled; going on unchecked, asking again"
		}
		level := slog.LevelWarn
		if p.dedupFailures > 1 {
			level = slog.LevelDebug // said once per producer
		}
		p.env.Logger.Log(context.Background(), level, what, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "status", r.status, "error", r.err, "retry_in", d)
		self, system, prod := ctx.Self(), ctx.ActorSystem(), r.producer
		time.AfterFunc(d, func() { system.Root.Send(self, &askDeduplicationAgain{producer: prod}) })
	case r.status == "Enabled":
		state = "enabled"
	case r.status == "Recovering" || r.status == "Initialized":
		// Enabled, its state being read back, or not yet set up (the topic just loaded);
		// the broker deduplicates nothing until it is Enabled (MessageDeduplication.isEnabled),
		// which may end Failed or Disabled: asked again.
		self, system, prod := ctx.Self(), ctx.ActorSystem(), r.producer
		time.AfterFunc(dedupRecheck, func() { system.Root.Send(self, &askDeduplicationAgain{producer: prod}) })
	case r.status == "Disabled" || r.status == "Removing" || r.status == "Failed": // Failed: it could not set it up
		state = "disabled"
		msg := fmt.Sprintf("the broker does not deduplicate %s (its deduplication status is %s): ferry publishes recording %d at least once, not effectively once; a record sent again after a crash, a restart or a failed publish is stored twice (lesson 21). "+
			"Turn deduplication on for the topic (pulsar-admin topics set-deduplication --enable), its namespace (pulsar-admin namespaces set-deduplication --enable) or the broker (brokerDeduplicationEnabled=true)",
			p.cfg.Def.Topic, r.status, p.rec)
		p.env.Logger.Warn(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "deduplication", Message: msg}})
	}
	ctx.Send(p.pids.stream, &messages.DeduplicationChecked{RecordingId: p.rec, State: state})
}

// askMaxSize asks the broker's admin API for the topic's maxMessageSize policy, which the
// sends wait for: the broker refuses a larger message with a send error after which
// pulsar-client-go v0.19.0 no longer hears the producer (internal/connection.go
// handleSendError drops it as a listener), and the sends after it, which the broker stores,
// are never called back (docs/findings.md). Asked again for each producer: the policy may
// have changed.
func (p *publisher) askMaxSize(ctx actor.Context) {
	if p.env.MaxMessageSize == nil || p.cfg.Transport {
		return
	}
	p.sizing = true
	ask, topic, prod := p.env.MaxMessageSize, p.cfg.Def.Topic, p.producer
	p.askAdmin(ctx, func(call context.Context) any {
		size, err := ask(call, topic)
		return &maxSizeRead{producer: prod, size: size, err: err}
	})
}

// maxSizeRead takes the topic's maxMessageSize policy, or, when the admin API gave none,
// goes on without it: a record over a policy then goes unanswered, and the watch of the
// answers (answersDue) replaces the producer, which asks again.
func (p *publisher) maxSizeRead(ctx actor.Context, r *maxSizeRead) {
	if r.producer != p.producer {
		return // asked for a producer since replaced: its successor asks again
	}
	p.sizing, p.maxSize, p.sizeErr = false, max(r.size, 0), r.err
	if r.err != nil {
		level := slog.LevelWarn
		if p.sizeUnasked {
			level = slog.LevelDebug
		}
		p.sizeUnasked = true
		p.env.Logger.Log(context.Background(), level, "cannot ask the broker's admin API for the topic's maxMessageSize policy; sending unchecked: a record over it would go unanswered until the producer is created again",
			"stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "error", r.err)
	}
	p.pump(ctx)
}

// overMaxSize is the stop of a record over the topic's maxMessageSize policy, found before
// it is sent.
func (p *publisher) overMaxSize(r *messages.Record, size int) error {
	after := ""
	if p.unheardEnd >= 0 && r.End >= p.unheardEnd && r.End <= p.unheardLast { // sent by a producer replaced for leaving its sends unanswered
		// The policy came after the producer before this one was created: it sent the record
		// and the records after it, the broker refused the one and stored the others.
		after = ". (A producer before this one sent it and the records after it, unanswered: Pulsar may hold those already, and the restart then finds its re-send answered as a duplicate of them and stops again, naming the way on (lesson 22).)"
	}
	return fmt.Errorf("recording %d: the record ending at %d is %d bytes as the broker receives it (a payload of %d bytes and its metadata), over the maxMessageSize policy of topic %s, %d bytes: it can never be published there, and ferry does not skip records; raise the policy (pulsar-admin topics set-max-message-size) or remove it (pulsar-admin topics remove-max-message-size; for a global policy, pulsar-admin topicPolicies with --global), and start ferry again%s",
		p.rec, r.End, size, len(r.Payload), p.cfg.Def.Topic, p.maxSize, after)
}

// answerTimeout is how long a producer may leave every send outstanding unanswered before
// the publisher replaces it: twice the stream's stall_after.
func (p *publisher) answerTimeout() time.Duration {
	return 2 * cmp.Or(p.cfg.StallAfter, defaultStallAfter)
}

// watchAnswers has the publisher look at its producer's unanswered sends after d, unless a
// look is due already.
func (p *publisher) watchAnswers(ctx actor.Context, d time.Duration) {
	if p.watching {
		return
	}
	p.watching = true
	self, system, prod := ctx.Self(), ctx.ActorSystem(), p.producer
	time.AfterFunc(d, func() { system.Root.Send(self, &answersDue{producer: prod}) })
}

// answersDue replaces a producer that has answered none of its sends for answerTimeout
// since the oldest of them went out or its last answer, and that the broker lists as
// connected: with send timeouts off (deduplication needs them off), nothing else ends the
// wait of a producer pulsar-client-go v0.19.0 no longer hears after the broker refused one
// of its sends (a record over the topic's maxMessageSize policy, not checked because the
// admin API could not be asked or the policy changed; a topic terminated under it). Its
// sends are reported failed (strand) and sent again by the new producer; one the broker did
// store is answered as a duplicate. A producer the broker does not list is reconnecting
// (the broker unreachable, the topic moving): it sends them again itself once connected,
// and closing it meanwhile can leave its name taken on the broker for good
// (docs/findings.md), so it is waited for. A terminated topic stops the stream. Without the
// admin API the producer is replaced either way.
func (p *publisher) answersDue(ctx actor.Context, m *answersDue) {
	if m.producer != p.producer || p.producer == nil {
		return // a replaced producer's: the new one is watched afresh
	}
	p.watching = false
	waited, overdue := p.overdue(ctx)
	switch {
	case !overdue:
	case p.env.Publishers == nil:
		p.unheard(ctx, waited)
	case !p.askingUnheard:
		p.askingUnheard = true
		prod, topic, name, rec, by := p.producer, p.cfg.Def.Topic, p.name, p.rec, int(p.routedBy.Load())
		if p.cfg.Transport {
			name = prod.Name() // the broker names a transport producer
		}
		publishers, terminated := p.env.Publishers, p.env.Terminated
		p.askAdmin(ctx, func(call context.Context) any {
			r := &unheardRead{producer: prod}
			if terminated != nil {
				r.terminated, r.err = terminated(call, topic, rec, by)
			}
			if r.err == nil && !r.terminated {
				var names []string
				names, r.err = publishers(call, topic, rec, by)
				r.connected = slices.Contains(names, name)
			}
			return r
		})
	}
}

// overdue drops the answered sends and reports how long the producer has answered none of
// the others, and whether that is answerTimeout or more; if not, and some are left, the
// answers are watched again when they would be. A producer not overdue starts its count of
// unlisted looks afresh: they are looks in a row of one spell without answers.
func (p *publisher) overdue(ctx actor.Context) (time.Duration, bool) {
	p.dropAnswered()
	if len(p.unanswered) == 0 {
		p.unlisted = 0
		return 0, false
	}
	limit := p.answerTimeout()
	since := max(p.unanswered[0].sentMs, p.answeredAt.Load())
	waited := time.Duration(p.env.elapsedMs()-since) * time.Millisecond
	if waited < limit {
		p.unlisted = 0
		p.watchAnswers(ctx, limit-waited)
		return waited, false
	}
	return waited, true
}

// unheardRead acts on the admin API's answer about a producer that answers nothing (see
// answersDue).
func (p *publisher) unheardRead(ctx actor.Context, r *unheardRead) {
	p.askingUnheard = false
	if r.producer != p.producer || p.producer == nil {
		return
	}
	waited, overdue := p.overdue(ctx)
	switch {
	case !overdue:
	case r.terminated:
		panic(supervisor.Fail(supervisor.Poison, topicTerminated(p.cfg.Def, fmt.Errorf("the broker answered none of the producer's sends for %s, and the admin API says the topic is terminated", waited.Round(time.Second)))))
	case r.connected:
		p.unheard(ctx, waited)
	case r.err == nil && p.unlisted+1 >= unlistedLooks:
		// The broker answers for the topic, and has not listed the producer for that long:
		// not reconnecting (it would have, to a broker that answers), but dropped by the
		// broker after the client stopped hearing it (an unload, a restart): the client
		// never learns of the drop, and the producer waits for ever.
		p.unheard(ctx, waited)
	default:
		if r.err == nil {
			p.unlisted++
		} else {
			p.unlisted = 0 // in a row: a look that could not tell breaks the row
		}
		said, why := "unlisted", "the broker does not list it as connected: it is reconnecting, the broker unreachable or the topic moving"
		if r.err != nil {
			said, why = "unasked", fmt.Sprintf("the admin API could not be asked whether the broker lists it as connected (%v): if it is reconnecting, closing it could leave its name taken on the broker; with pulsar.admin_url wrong or refused, ferry cannot tell that from a producer the client no longer hears", r.err)
		}
		if p.reconnectingSaid != said {
			p.reconnectingSaid = said
			msg := fmt.Sprintf("%s: the broker answered none of the producer's %d sends for %s, and %s; waiting for it",
				p.cfg.Def.Topic, len(p.unanswered), waited.Round(time.Second), why)
			p.env.Logger.Warn(msg, "stream", p.cfg.Def.Name, "recording", p.rec)
			ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "producer", Message: msg}})
		}
		p.watchAnswers(ctx, p.answerTimeout())
	}
}

// unlistedLooks is how many looks in a row (answerTimeout apart) must find a producer that
// answers nothing unlisted by a broker that answers before it is taken for dropped rather
// than reconnecting (pulsar-client-go v0.19.0 tries again within a minute).
const unlistedLooks = 3

// unheard replaces a producer that answered none of its sends for waited (see answersDue).
// With the admin API, when the topic's policy could not be read, a producer replaced for it
// whose successor, too, answers nothing from the same record on stops the stream: the broker
// refuses that record each time, most likely over the policy. (With the policy read, the
// same could be storage that takes nothing for that long, which the broker holds its
// producers connected through: replaced again, the stream stalled, the failures saying so.)
func (p *publisher) unheard(ctx actor.Context, waited time.Duration) {
	n, oldest := len(p.unanswered), p.unanswered[0].end
	if p.env.Publishers != nil && p.sizeErr != nil && oldest == p.unheardEnd {
		panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d: two producers in a row answered none of their sends from the record ending at %d on, each for %s (the Pulsar client stops hearing a producer whose send the broker refused): the broker refuses a record from there on, most likely one over the topic's maxMessageSize policy, which ferry could not read (%v), and ferry does not skip records: raise or remove the policy, or let ferry's role read it, and start ferry again. (A broker whose storage took nothing for that long looks the same: then start ferry again once it takes messages.)",
			p.rec, oldest, waited.Round(time.Second), p.sizeErr)))
	}
	p.unheardEnd, p.unheardLast = oldest, p.unanswered[n-1].end
	msg := fmt.Sprintf("%s: the broker answered none of the producer's %d sends outstanding for %s, the oldest the record ending at %d; creating the producer again. The Pulsar client no longer hears a producer whose send the broker refused (a record over the topic's maxMessageSize policy, a terminated topic)",
		p.cfg.Def.Topic, n, waited.Round(time.Second), oldest)
	switch {
	case p.env.Publishers == nil && p.cfg.Transport:
		msg += ", or the broker was unreachable all that time (with pulsar.admin_url set, ferry tells the two apart); in transport mode the sends it held are lost"
	case p.env.Publishers == nil:
		msg += ", or the broker was unreachable all that time (with pulsar.admin_url set, ferry tells the two apart, and reads the topic's policy before it sends)"
	case p.cfg.Transport:
		msg += "; in transport mode the sends it held are lost"
	}
	p.env.Logger.Warn(msg, "stream", p.cfg.Def.Name, "recording", p.rec)
	ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "producer", Message: msg}})
	p.strand(ctx, fmt.Sprintf("the broker answered none of the producer's sends for %s: replaced without calling this send back", waited.Round(time.Second)))
	p.replace(ctx)
}

// dropAnswered drops the answered sends from the front of unanswered.
func (p *publisher) dropAnswered() {
	for len(p.unanswered) > 0 && p.unanswered[0].answered.Load() {
		p.unanswered[0] = nil
		p.unanswered = p.unanswered[1:]
	}
}

// knownDedupStatus reports whether status is one the broker's stats give (see
// pulsaradmin.Client.Deduplication).
func knownDedupStatus(status string) bool {
	switch status {
	case "Initialized", "Enabled", "Disabled", "Recovering", "Removing", "Failed":
		return true
	}
	return false
}

// lost replaces a producer the client closed for good. The sends that failed on it were
// reported to the tracker, which has the replay deliver them again (lesson 4): they wait
// for the new producer. Creating it retries with back-off while the topic is missing, and
// says so in the status.
func (p *publisher) lost(ctx actor.Context, m *producerLost) {
	if p.producer == nil || p.producer != m.producer {
		return // replaced already: one report per failed send
	}
	if terminated(m.err) {
		panic(supervisor.Fail(supervisor.Poison, topicTerminated(p.cfg.Def, m.err)))
	}
	p.env.Logger.Warn("the Pulsar client closed the producer for good (the topic was deleted while auto-creation is off, or the producer was fenced); creating it again",
		"stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic, "error", m.err)
	ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "producer",
		Message: fmt.Sprintf("%s: the client closed the producer (%v); creating it again", p.cfg.Def.Topic, m.err)}})
	p.strand(ctx, fmt.Sprintf("the client closed the producer for good (%v) without calling this send back", m.err))
	p.close()
	p.create(ctx)
}

// strand reports failed, as why says, every send of the producer being replaced that it has
// not called back: pulsar-client-go v0.19.0 strands, unwritten, a send its event loop takes
// in while a reconnect closes the producer, and calls back none of a producer's sends after
// the broker refused one (docs/findings.md); a send without an outcome would hold its
// credit for ever — in transport mode, a loss never counted. In archive mode the failure
// has the record re-delivered; one the broker did store is then answered as a duplicate. A
// late callback of one changes nothing (sendAnswer).
func (p *publisher) strand(ctx actor.Context, why string) {
	n := 0
	for _, a := range p.unanswered {
		if a.answered.CompareAndSwap(false, true) {
			n++
			if !p.cfg.Transport {
				// As for any failed send (lesson 22). The failure that closed the producer
				// raised it already, for an epoch at least as new (a newer epoch is not sent
				// before the older one's sends have their outcome); said here, not reasoned.
				raise(p.failedEpoch, a.epoch+1)
			}
			ctx.Send(p.pids.tracker, &messages.PublishFailed{RecordingId: p.rec, Epoch: a.epoch, End: a.end, Error: why})
		}
	}
	p.unanswered = nil
	if n > 0 {
		p.env.Logger.Warn("sends the replaced producer never called back are reported failed", "stream", p.cfg.Def.Name, "recording", p.rec, "sends", n)
	}
}

func topicTerminated(def store.Stream, err error) error {
	return fmt.Errorf("topic %s is terminated: it takes no more messages (pulsar-admin topics terminate); point the stream at another topic, which needs a new stream name or `%s` (%w)", def.Topic, store.ResetCommand(def.Name), err)
}

// lastStoredTimeout is the least time the read of what the broker stored last is given (the
// archive's call timeout, if longer): it reads back up to 4,096 entries, or 64 MiB, past
// other producers' messages (LastStoredWith), about a second for 1 KiB messages here.
const lastStoredTimeout = 5 * time.Second

// acknowledgedUpTo is how far Pulsar acknowledged a recording's records, as the resume check
// holds the broker to it: up to position, by the checkpoint the publisher started from
// (stop: the recording's stop, completed, which may lie past its last record; checkpoint:
// the checkpoint's position, when position is the end of the last record it covers) or by
// the receipts of this publisher's producers.
type acknowledgedUpTo struct {
	position      int64
	stop, receipt bool
	checkpoint    int64
}

func (a acknowledgedUpTo) String() string {
	switch {
	case a.receipt:
		return fmt.Sprintf("Pulsar acknowledged the recording's records up to %d to this ferry", a.position)
	case a.checkpoint > a.position:
		return fmt.Sprintf("ferry's checkpoint at %d says Pulsar acknowledged the recording's records up to its last record there, ending at %d", a.checkpoint, a.position)
	}
	return fmt.Sprintf("ferry's checkpoint at %d says Pulsar acknowledged the recording's records up to there", a.position)
}

// brokerMustHold is what the check of a new producer holds the broker to: the checkpoint the
// publisher started from (a seed, where ferry took the recording on, says nothing was
// published), or the last receipt of this publisher's earlier producers if that is further:
// a topic deleted and created again loses what it acknowledged during the run as well as
// before it (ok false: nothing acknowledged).
func (p *publisher) brokerMustHold() (acknowledgedUpTo, bool) {
	from, ok := acknowledgedUpTo{position: -1}, false
	if w := p.watermark; w.Stored && !w.Seed {
		from, ok = acknowledgedUpTo{position: w.Position, stop: w.Completed, checkpoint: w.Position}, true
		if r := w.LastRecord; r != nil && r.End > 0 && r.End < w.Position && !w.Completed {
			// At the recording's stop before it is marked completed (the commit reached it
			// while the topic was still being read, or a crash came between the two writes):
			// past the last record lie padding or a message never finished, nothing stored.
			from.position = r.End
		}
	}
	if acked := p.acked.Load(); acked > from.position {
		from, ok = acknowledgedUpTo{position: acked, receipt: true}, true
	}
	return from, ok
}

// sentBefore reports whether records of the recording may have been sent above its seed
// before this pipeline started, their outcomes read by no commit tracker: a seed is stored
// before anything of the recording is sent, and replaced by its first commit.
func (p *publisher) sentBefore() bool {
	w := p.watermark
	return w.Stored && w.Seed && w.Earlier
}

// checkDedupState begins the check of the broker's deduplication state for a producer that
// resumes where Pulsar acknowledged records of the recording (lesson 21, brokerMustHold): it
// reads the last message the broker stored in the recording's partition, holding the sends
// back meanwhile. pulsar-client-go v0.19.0 does not tell the broker's last sequence id for
// the producer's name (LastSequenceID is -1 until a receipt: docs/findings.md), so the
// check watches the receipts instead. The same read serves lesson 22 where records may have
// been sent before without an answer: by an earlier pipeline (sentBefore), or by this one,
// whose failed sends the broker may have refused while storing later ones (a refusal is
// answered at once, the sends before it once stored, so it can overtake all of them: a new
// recording's first records, none answered, are no exception).
func (p *publisher) checkDedupState(ctx actor.Context) {
	if p.dedupChecked || p.cfg.Transport || p.producer == nil || p.watermark == nil || p.env.LastStored == nil {
		return
	}
	p.dedupChecked = true
	p.verifyUpTo.Store(-1)
	p.readBack.Store(nil)
	p.stored = nil
	if p.checkedUpTo, p.mustHold = p.brokerMustHold(); !p.mustHold && !p.sentBefore() && p.failedEpoch.Load() == 0 {
		p.readBack.Store(firstSends(p.watermark.Position))
		p.tellTopicRead(ctx, -1)
		return // nothing acknowledged, sent before this pipeline, or failed: nothing to check
	}
	p.verifying = true
	p.verifyGen++
	self, system, gen := ctx.Self(), ctx.ActorSystem(), p.verifyGen
	if !p.readStored(ctx, gen) {
		p.verifying = false
		p.tellTopicRead(ctx, -1) // stopping: not read
		return
	}
	// The client's calls can outlast their own timeouts (a reader reconnecting retries
	// without end): the sends wait no longer than this.
	timeout := max(p.cfg.CallTimeout, lastStoredTimeout)
	p.verifyTimer = time.AfterFunc(timeout+time.Second, func() {
		system.Root.Send(self, &lastStoredRead{gen: gen, timedOut: true, err: fmt.Errorf("no answer within %s", timeout+time.Second)})
	})
}

// readStored starts read gen of what the broker stored last in the recording's partition,
// from where this producer's sends start again (or below it: a producer created again),
// answered by a lastStoredRead; false when the publisher is stopping.
func (p *publisher) readStored(ctx actor.Context, gen uint64) bool {
	return p.readLast(ctx, p.watermark.Position, func(msg StoredMessage, ok bool, err error) any {
		return &lastStoredRead{gen: gen, msg: msg, ok: ok, err: err}
	})
}

// readLast starts a read of what the broker stored last in the recording's partition, back
// to a message of the recording at or below from (Env.LastStored), whose outcome answer
// makes into the message the actor gets; false when the publisher is stopping.
func (p *publisher) readLast(ctx actor.Context, from int64, answer func(StoredMessage, bool, error) any) bool {
	self, system, read, topic, rec, by, known := ctx.Self(), ctx.ActorSystem(), p.env.LastStored, p.cfg.Def.Topic, p.rec, int(p.routedBy.Load()), p.storedAt.below(from)
	timeout := max(p.cfg.CallTimeout, lastStoredTimeout)
	return p.env.tasks().Go(func() {
		call, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		msg, ok, err := read(call, topic, rec, by, from, known)
		system.Root.Send(self, answer(msg, ok, err))
	})
}

// topicReads bounds the reads of what the broker stored last made for one producer when
// they fail: one that can never succeed (a token that may produce but not consume, a scan
// always slower than its time) must not hold the recording, and the stream's later
// recordings, back for ever.
const topicReads = 5

// readAgainLater reads what the broker stored last again, after a back-off, when read gen
// failed (err): the sends go on unchecked meanwhile, but the recording is not completed
// before a read tells the tracker where the topic holds it to (TopicRead), which is
// reported. It reports false, reading nothing, once topicReads reads failed.
func (p *publisher) readAgainLater(ctx actor.Context, gen uint64, err error) bool {
	p.rereads++
	if p.rereads >= topicReads {
		msg := fmt.Sprintf("cannot read what the broker stored last in %s (%v; %d reads failed), which checks the records sent again (lesson 21, 22) and where the topic holds the recording to: the records sent again go unchecked, and the recording's end is not checked against what the topic holds of it (a truncation of the recording below records ferry published, while ferry was down, goes unseen)%s", p.cfg.Def.Topic, err, p.rereads, consumeRefused(err, p.cfg.Def.Topic))
		p.env.Logger.Error(msg, "stream", p.cfg.Def.Name, "recording", p.rec)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "topic-read", Message: msg}})
		return false
	}
	d := producerRetry.Delay(p.rereads, rand.Float64())
	msg := fmt.Sprintf("cannot read what the broker stored last in %s (%v), which checks the records sent again (lesson 21, 22) and where the topic holds the recording to: the records sent again go unchecked, and the recording is not completed before a read answers; reading again in %s%s", p.cfg.Def.Topic, err, d.Round(time.Millisecond), consumeRefused(err, p.cfg.Def.Topic))
	p.env.Logger.Warn(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "attempt", p.rereads)
	ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "topic-read", Message: msg}})
	self, system := ctx.Self(), ctx.ActorSystem()
	time.AfterFunc(d, func() { system.Root.Send(self, &readStoredAgain{gen: gen}) })
	return true
}

// consumeRefused is what to do, said after a failed read of topic, when err is the broker
// refusing ferry's role a reader on it (Pulsar's AuthorizationError, which pulsar-client-go
// v0.19.0 hands on as text only); "" for any other error.
func consumeRefused(err error, topic string) string {
	if !strings.Contains(err.Error(), "AuthorizationError") {
		return ""
	}
	return fmt.Sprintf(". The broker refuses ferry's role a reader on the topic: grant the role consume as well as produce (`pulsar-admin topics grant-permission --role ROLE --actions produce,consume %s`, or the same on its namespace), and the next start makes the check", topic)
}

// lastStoredRead takes what the broker stored last and lets the sends go. The last message
// from this recording's producer at position X, past the checkpoint: the records re-sent up
// to X were stored before, and each must come back as a duplicate (the callbacks watch for
// it). An empty partition, or none of the recording's messages among the partition's last
// (LastStoredWith looks back up to 4,096 entries past other producers'), tells nothing.
func (p *publisher) lastStoredRead(ctx actor.Context, r *lastStoredRead) {
	if r.gen != p.verifyGen || r.timedOut && !p.verifying {
		return // an earlier read's, or the timer after the answer
	}
	if p.verifyTimer != nil {
		p.verifyTimer.Stop()
	}
	if p.verifying {
		p.verifying = false
		defer p.pump(ctx)
	} // else: the answer after the timer let the sends go; the records not yet acknowledged are still checked
	holds, answered := int64(-1), r.err == nil || errors.Is(r.err, errNotSearchedBack)
	defer func() {
		if answered {
			p.tellTopicRead(ctx, holds) // before the sends the read held back (deferred earlier)
		}
	}()
	switch {
	case r.timedOut:
		// The answer, when it comes, still checks the records not yet answered, and tells
		// the tracker, which finishes the recording only then: reported as it keeps the
		// recording from completing.
		msg := fmt.Sprintf("the read of what the broker stored last in %s gave %v: the records sent again go unchecked until it answers, and the recording is not completed before", p.cfg.Def.Topic, r.err)
		p.env.Logger.Warn(msg, "stream", p.cfg.Def.Name, "recording", p.rec)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "topic-read", Message: msg}})
		p.notReadBack() // meanwhile, a duplicate is read for after its answer
		return
	case r.err != nil && answered:
		p.env.Logger.Warn("none of the recording's messages is among what the read of the partition's last reached (other producers published after it): the records sent again from the checkpoint are checked neither for deduplication nor against rewrites, nor is where the topic holds the recording to", "stream", p.cfg.Def.Name, "recording", p.rec, "error", r.err)
		p.notReadBack()
		return
	case r.err != nil:
		answered = !p.readAgainLater(ctx, r.gen, r.err) // given up: the tracker is told nothing was read
		p.notReadBack()                                 // a duplicate is read for after its answer
		return
	case !r.ok && p.mustHold && !p.checkedUpTo.stop:
		// Pulsar acknowledged records of the recording: an empty partition lost them, the
		// extreme of a last message below them (below). (A completed checkpoint may be an
		// empty recording's.)
		msg := fmt.Sprintf("the partition of %s the recording is routed to holds no message, though %s: the topic lost messages ferry had published (deleted and created again, truncated, or trimmed by retention), and its deduplication state for them (lesson 21)", p.cfg.Def.Topic, p.checkedUpTo)
		p.env.Logger.Error(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "deduplication", Message: msg}})
		p.notReadBack() // a record sent again answered as a duplicate is not in it, unless stored since: read again
		return
	case !r.ok || (r.msg.Producer != p.name || r.msg.Properties[PropRecordingID] != p.recordingStr) && !p.mustHold:
		// Nothing of the recording found, as usual when nothing was sent before; but records
		// sent and not answered may have been stored and the read not reach them (other
		// producers' messages after them, a ledger opened since): a record sent again and
		// answered as a duplicate cannot be checked, which is said (notRead).
		p.notReadBack()
		return
	case r.msg.Producer != p.name || r.msg.Properties[PropRecordingID] != p.recordingStr:
		// The search reads back 4,096 entries at most, in the partition's last ledger (a
		// topic reloaded since, which loses a deduplication state not snapshotted, opens
		// one): what it cannot see is unchecked, and said so.
		p.env.Logger.Warn("none of the recording's messages is among the partition's last (other producers published after it, or the topic was reloaded since): the records sent again from the checkpoint are checked neither for deduplication nor against rewrites", "stream", p.cfg.Def.Name, "recording", p.rec, "last_producer", r.msg.Producer)
		p.notReadBack()
		return
	}
	last, err := strconv.ParseInt(r.msg.Properties[PropPosition], 10, 64)
	if err != nil {
		// The producer's name and the recording's id, but no position: not a message ferry
		// wrote. What the topic holds of the recording is not known, as when none is found.
		p.env.Logger.Warn("the partition's last message has the recording's producer and id but no ferry.position ferry could have written: the records sent again from the checkpoint are checked neither for deduplication nor against rewrites", "stream", p.cfg.Def.Name, "recording", p.rec, "position", r.msg.Properties[PropPosition])
		p.notReadBack()
		return
	}
	if last < p.checkedUpTo.position && !p.checkedUpTo.stop {
		// (A completed checkpoint is the recording's stop, which can lie past its last
		// record: padding, or a fragmented message its publisher never finished.)
		msg := fmt.Sprintf("the broker's last message from producer %s is at position %d, though %s: the topic lost messages ferry had published and Pulsar acknowledged (truncated, or trimmed by retention), and its deduplication state for them (lesson 21)", p.name, last, p.checkedUpTo)
		p.env.Logger.Error(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "deduplication", Message: msg}})
	}
	if last > p.watermark.Position {
		// Past where this publisher's sends began (the checkpoint; a producer created again
		// sends again from the last commit, above it): what it sends again up to there is
		// compared (checkStored), and must come back as duplicates. So too below a loss
		// said above: what the topic kept of the records sent again is checked still.
		if last > p.watermark.ForgottenTo {
			holds = last // else: ferry checkpoint forget accepted the archive's loss up to there
		}
		p.verifyUpTo.Store(last)
		p.readBack.Store(p.storedEnds(r.msg))
		p.stored = storedMarks(r.msg, last, p.watermark.Position)
		if p.stored[0].end <= p.sentEnd {
			p.stored = slices.DeleteFunc(p.stored, func(m storedMark) bool { return m.end <= p.sentEnd })
			p.env.Logger.Warn("what the broker stored was read after the sends had passed some of it: the records sent again up to there are not compared with it (a rewrite of the recording there would go unseen)", "stream", p.cfg.Def.Name, "recording", p.rec, "sent_to", p.sentEnd, "broker_last", last)
		}
		p.env.Logger.Info("resuming past what the broker stored: the records sent again up to there must come back as duplicates", "stream", p.cfg.Def.Name, "recording", p.rec, "checkpoint", p.watermark.Position, "broker_last", last)
		return
	}
	// The broker's last message of the recording is at or below the checkpoint (below it: a
	// loss, said above): a record sent again answered as a duplicate was not stored before
	// the read; the topic is read again to tell whether it was since.
	p.notReadBack()
}

// tellTopicRead tells the tracker what this producer's read of the topic found: where the
// topic's last message of the recording ends past the checkpoint (holdsEnd), or -1 for
// none, no answer, or no read. The tracker reports the recording finished only once it has
// heard the first, and never at a stop before holdsEnd: a truncation below records ferry
// published. (A producer created again later in the run may find this run's own records,
// which the recording holds unless truncated too.)
func (p *publisher) tellTopicRead(ctx actor.Context, holdsEnd int64) {
	ctx.Send(p.pids.tracker, &messages.TopicRead{RecordingId: p.rec, HoldsEnd: holdsEnd, Producer: p.name})
}

// storedEnds is what a read of the broker's last message, msg, tells of the recording's
// messages above the checkpoint (nil: nothing). Its floor is the first message read; or,
// for a seed, the seed if the read went back past a message published before the seed was
// stored (give or take clockTolerance): nothing of the recording is sent before that; or,
// for a recording nothing of which was sent before this publisher or acknowledged, the
// watermark's position (0 for nothing stored) if the read went through the partition's
// first message.
// Records sent again below the floor are not checked, which is said when one is answered
// as a duplicate.
func (p *publisher) storedEnds(msg StoredMessage) *storedEnds {
	if len(msg.Ends) == 0 {
		return nil
	}
	w := p.watermark
	s := &storedEnds{from: w.Position}
	for _, e := range msg.Ends {
		s.ends = append(s.ends, e.End)
	}
	slices.Sort(s.ends)
	s.floor = s.ends[0]
	switch {
	case w.Seed && msg.EarliestMs > 0 && msg.EarliestMs < w.StoredAtMs-clockTolerance.Milliseconds():
		s.floor = w.Position
	case msg.ReachedFirst && !p.mustHold && !p.sentBefore():
		// Every record of the recording at issue was sent by this publisher, in this run:
		// the partition's first message still held is the first ever but for a ledger
		// rolled and deleted by retention since this publisher's first send. (Across runs,
		// or below an acknowledged record, the partition may have lost ledgers before it
		// that held the recording's records: their re-sends are answered as duplicates.)
		s.floor = min(s.floor, w.Position)
	}
	return s
}

// duplicateUnchecked says, as a deduplication failure, that a record sent again was
// answered as a duplicate where the read-back did not reach: Pulsar may not hold it (lesson
// 22), and ferry cannot tell.
func (p *publisher) duplicateUnchecked(ctx actor.Context, d *duplicateUnchecked) {
	if d.fresh {
		// (A reconnect in the middle of the sends explains it too: the client sends its pending
		// messages again, and one the broker stored before its answer was lost comes back as a
		// duplicate. Nothing is lost then, and the advice to rename would store every record
		// again: it is given for the case it is for.)
		read := ""
		if d.why != "" {
			read = "; " + d.why
		}
		msg := fmt.Sprintf("recording %d: the record ending at %d, sent for the first time, was answered as a duplicate: the topic's deduplication knows producer %s past it%s. "+
			"If the Pulsar client reconnected to the broker while the record was in flight (a broker restart, a topic unload: its warnings say so), this is its own re-send of a record the broker had stored, and nothing is lost. "+
			"If not, messages were published under that name that ferry's checkpoint store does not hold — the store lost, moved (a relative store.path run from another directory) or reset without renaming the stream, "+
			"or another ferry publishing a stream of this name to the topic: if those were these records (the same archive), nothing is lost; "+
			"if they were another archive's (whose recording ids start again at 0), every record so answered is not in the topic, and then: %s",
			p.rec, d.end, p.name, read, renameToGoOn)
		p.env.Logger.Error(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic)
		ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "deduplication", Message: msg}})
		return
	}
	where := fmt.Sprintf("below where what the topic holds was read back to (%d: the partition's last ledger begins after it, or the read's bounds)", d.floor)
	switch {
	case d.why != "":
		where = "and " + d.why
	case d.floor == notRead:
		where = "and the read back of what the topic holds found none of the recording's messages (other producers' messages after them, or a ledger opened since)"
	}
	msg := fmt.Sprintf("recording %d: the record ending at %d, sent again, was answered as a duplicate %s: whether the topic holds it is not checked (lesson 22: if a later record was stored while it was not, it is not published)",
		p.rec, d.end, where)
	p.env.Logger.Warn(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "checkpoint", p.watermark.Position)
	ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "deduplication", Message: msg}})
}

// readForDuplicates reads what the broker stored last for the duplicates to check, unless
// a read is under way: its answer reads again for those that came after it began.
func (p *publisher) readForDuplicates(ctx actor.Context) {
	if p.dupRead != 0 || len(p.dupChecks) == 0 {
		return
	}
	p.dupGen++
	p.dupRead, p.dupCovered = p.dupGen, len(p.dupChecks)
	self, system, gen := ctx.Self(), ctx.ActorSystem(), p.dupGen
	// Back to below the lowest held (the read stops at a message of the recording at or
	// below from): a client's re-sends are among the partition's last, a short read.
	from := p.dupChecks[0].end
	for _, c := range p.dupChecks {
		from = min(from, c.end)
	}
	if !p.readLast(ctx, max(from-1, p.watermark.Position), func(msg StoredMessage, ok bool, err error) any {
		return &duplicatesRead{gen: gen, msg: msg, ok: ok, err: err}
	}) {
		return // stopping: Stopping leaves them unanswered
	}
	// As the resume check's: the client's calls can outlast their own timeouts.
	timeout := max(p.cfg.CallTimeout, lastStoredTimeout)
	p.dupTimer = time.AfterFunc(timeout+time.Second, func() {
		system.Root.Send(self, &duplicatesRead{gen: gen, err: fmt.Errorf("no answer within %s", timeout+time.Second)})
	})
}

// duplicatesRead checks the duplicates the read covers against what it found of the
// producer's messages of the recording (Ends): one the topic holds, with the record's
// checksum, was stored (the client's own re-send after a reconnect, or, at a first send,
// this archive's record published before under the name from a checkpoint store ferry no
// longer has), and is acknowledged; one among what the read found that the topic does not
// hold, or holds with another checksum, is not stored, and the stream stops; one the read
// cannot tell of (below where it reached, above the last, nothing of the recording found,
// a failed read) is acknowledged and said, unchecked, as before there was a read.
func (p *publisher) duplicatesRead(ctx actor.Context, r *duplicatesRead) {
	if r.gen != p.dupRead {
		return // an earlier read's, or the timer after the answer
	}
	if p.dupTimer != nil {
		p.dupTimer.Stop()
	}
	checks := p.dupChecks[:p.dupCovered]
	p.dupChecks, p.dupRead = p.dupChecks[p.dupCovered:], 0
	var ends []StoredEnd
	why := "the read of what the topic holds, made after the answer, found none of the recording's messages (other producers' messages after them, or a ledger opened since)"
	switch {
	case r.err != nil:
		why = fmt.Sprintf("the read of what the topic holds, made after the answer, failed (%v)", r.err)
	case r.ok && r.msg.Producer == p.name && r.msg.Properties[PropRecordingID] == p.recordingStr:
		ends = slices.SortedFunc(slices.Values(r.msg.Ends), func(a, b StoredEnd) int { return cmp.Compare(a.End, b.End) })
	}
	var unchecked []*duplicateToCheck
	for _, c := range checks {
		i, found := slices.BinarySearchFunc(ends, c.end, func(e StoredEnd, end int64) int { return cmp.Compare(e.End, end) })
		switch {
		case found && ends[i].Checksum == c.checksum:
			p.env.Logger.Info("a record answered as a duplicate is in the topic, the same: stored before its answer was lost (the client sent it again after a reconnect), or published before under the producer's name",
				"stream", p.cfg.Def.Name, "recording", p.rec, "end", c.end, "first_send", c.fresh)
			raiseInt(p.acked, c.end)
			ctx.Send(p.pids.tracker, &messages.PublishAcked{RecordingId: p.rec, Epoch: c.epoch, End: c.end, Duplicate: true})
		case found:
			p.duplicateNotHeld(c, fmt.Sprintf("holds another record of producer %s there (CRC-32C %08x, this one's %08x)", p.name, ends[i].Checksum, c.checksum), ends)
		case len(ends) > 0 && c.end > ends[0].End:
			// Every message of the producer above the first read is among those read (a
			// producer's messages are stored in the order of their sequence ids), the
			// partition's last among them, and the broker answers a duplicate only once a
			// message of the producer at or past it is stored.
			p.duplicateNotHeld(c, fmt.Sprintf("holds none of producer %s's messages ending there", p.name), ends)
		default:
			switch c.why = why; {
			case len(ends) > 0:
				c.why = fmt.Sprintf("the read of what the topic holds, made after the answer, reached back to %d only", ends[0].End)
			}
			unchecked = append(unchecked, c)
		}
	}
	if len(unchecked) < len(checks) {
		p.dupFruitless = 0
	} else {
		p.dupFruitless++
	}
	p.uncheckedDuplicates(ctx, unchecked)
	p.readForDuplicates(ctx)
}

// dupReadsFruitless is how many reads in a row for duplicates may tell of none before no
// more are made for the publisher: each holds the records it covers back from the commit.
const dupReadsFruitless = 3

// duplicateNotHeld stops the stream: the broker answered c as a duplicate, though the
// topic, read after the answer (ends: what it found of the producer's messages of the
// recording), does not hold it (held says how). Its re-send would be dropped too. It is
// not reported to the tracker, which keeps the checkpoint below it all the same.
func (p *publisher) duplicateNotHeld(c *duplicateToCheck, held string, ends []StoredEnd) {
	raise(p.failedEpoch, c.epoch+1)
	panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d: the broker answered the record ending at %d as a duplicate, though the topic %s: read after the answer, the producer's messages of the recording end at %d and go back to %d. "+
		"The topic's deduplication knows the producer past the record from messages that are not this recording's (another archive's recording of the same id, published under the stream's name by a ferry whose checkpoint store this one does not have), "+
		"or the topic lost messages while keeping its deduplication state (truncated, or trimmed by retention); its re-send is dropped as well, so the stream stops rather than count it as published. "+
		"If another archive's recording was published under the name: %s. If the topic lost messages: %s.",
		p.rec, c.end, held, ends[len(ends)-1].End, ends[0].End, renameToGoOn, lesson22Recovery(p.cfg.Def.Name))))
}

// uncheckedDuplicates acknowledges the duplicates no read could check, saying the first of
// them (once per publisher) as a deduplication failure.
func (p *publisher) uncheckedDuplicates(ctx actor.Context, checks []*duplicateToCheck) {
	for _, c := range checks {
		raiseInt(p.acked, c.end)
		ctx.Send(p.pids.tracker, &messages.PublishAcked{RecordingId: p.rec, Epoch: c.epoch, End: c.end, Duplicate: true})
		if !p.dupUncheckedSaid {
			p.dupUncheckedSaid = true
			p.duplicateUnchecked(ctx, &duplicateUnchecked{end: c.end, floor: c.floor, fresh: c.fresh, why: c.why})
		}
	}
}

// notStored stops the stream: the broker answered a record sent again as a duplicate,
// though the topic does not hold it.
func (p *publisher) notStored(n *duplicateNotStored) {
	panic(supervisor.Fail(supervisor.Poison, fmt.Errorf("recording %d: the broker answered the record ending at %d, sent again, as a duplicate, though the topic does not hold it: "+
		"of producer %s's messages of the recording above %d (read back as the producer was created, ferry's checkpoint at %d), up to its last, ending at %d, none ends there. "+
		"Pulsar stored later records of the producer while this one was not stored (lesson 22), before ferry stopped, restarted the stream or replaced the producer; the topic's deduplication drops its re-send, so the stream stops rather than count it as published. %s",
		p.rec, n.end, p.name, n.floor, p.watermark.Position, n.last, lesson22Recovery(p.cfg.Def.Name))))
}

// reportStoredAgain says that the broker stored a record again (once per publisher).
func (p *publisher) reportStoredAgain(ctx actor.Context, end int64) {
	last := p.verifyUpTo.Load()
	msg := fmt.Sprintf("the broker stored again the record at %d, which it had stored before from producer %s (up to %d): deduplication is off for the topic, or its state for this producer was lost "+
		"(topic reloaded before a snapshot, or the producer was inactive longer than the broker keeps it); the records ferry sends again from its checkpoint %d up to %d are stored twice, effectively-once does not hold for them (lesson 21)",
		end, p.name, last, p.watermark.Position, last)
	p.env.Logger.Error(msg, "stream", p.cfg.Def.Name, "recording", p.rec, "topic", p.cfg.Def.Topic)
	ctx.Send(p.pids.stream, &messages.FailureObserved{Failure: &messages.Failure{AtMs: p.env.nowMs(), Kind: "deduplication", Message: msg}})
}

// producerState tells the stream's status what the producer is doing (in transport mode,
// recording 0 is the live stream).
func (p *publisher) producerState(ctx actor.Context, state string) {
	ctx.Send(p.pids.stream, &messages.ProducerChanged{RecordingId: p.rec, State: state})
}

// resumeSends tells the publisher that the sends it waited for have their outcomes.
type resumeSends struct{}

// supersede drops the batches waiting to be sent of epochs before epoch: the replay
// restarted (its image closed, an archive error, not only a failed send, which failedEpoch
// covers) and reads their records again from the commit, below them, so sent they would go
// twice (stored twice without deduplication). Each record is reported not sent, as every
// record handed to the publisher gets an outcome.
func (p *publisher) supersede(ctx actor.Context, epoch uint64) {
	if len(p.waiting) == 0 || p.waiting[0].Epoch >= epoch {
		return // the waiting batches come in epoch order: none is older
	}
	p.waiting = slices.DeleteFunc(p.waiting, func(b *messages.RecordBatch) bool {
		if b.Epoch >= epoch {
			return false
		}
		for _, r := range b.Records {
			ctx.Send(p.pids.tracker, &messages.PublishFailed{RecordingId: p.rec, Epoch: b.Epoch, End: r.End,
				Error: fmt.Sprintf("not sent: the replay restarted (epoch %d) and reads it again", epoch), NotSent: true})
		}
		return true
	})
}

// pump sends the waiting batches that may go now, in order.
func (p *publisher) pump(ctx actor.Context) {
	for len(p.waiting) > 0 && !p.verifying && !p.sizing && p.routable(ctx) {
		b := p.waiting[0]
		if b.Epoch != p.sentEpoch && p.outstanding.Load() > 0 {
			// Park first, then look again: a callback that brings outstanding to zero
			// after this store sees parked and wakes the actor.
			p.parked.Store(true)
			if p.outstanding.Load() > 0 {
				return
			}
		}
		p.parked.Store(false)
		p.waiting = p.waiting[1:]
		p.send(ctx, b)
	}
}

// tooLarge matches pulsar-client-go v0.19.0's refusals of a message larger than the
// broker's maxMessageSize: ErrMessageTooLarge, which SendAsync returns for a payload over
// it, and the error of its internal package (not importable) for a payload under it that
// its metadata takes over, found only as the event loop writes the message, after later
// sends were handed to it (internal/commands.go: "encryptedPayload exceeds
// MaxMessageSize").
func tooLarge(err error) bool {
	return errors.Is(err, pulsar.ErrMessageTooLarge) || strings.Contains(err.Error(), "exceeds MaxMessageSize")
}

// isProducerBusy matches the broker's ProducerBusy error: pulsar-client-go v0.19.0 has no
// typed error for it (docs/findings.md).
func isProducerBusy(err error) bool { return strings.Contains(err.Error(), "ProducerBusy") }

func (p *publisher) send(ctx actor.Context, b *messages.RecordBatch) {
	system, self, tracker, payloads := ctx.ActorSystem(), ctx.Self(), p.pids.tracker, p.env.Payloads
	outstanding, parked, failedEpoch, verifyUpTo, storedAgainSent, acked, storedAt, readBack, answeredAt, elapsedMs := p.outstanding, p.parked, p.failedEpoch, p.verifyUpTo, p.storedAgainSent, p.acked, p.storedAt, p.readBack, p.answeredAt, p.env.elapsedMs
	prod := p.producer
	stopped := func() bool { return b.Epoch < failedEpoch.Load() }
	// skip reports records of a failed epoch as not sent: every record handed to the
	// publisher gets an outcome, so no credit leaks (fail-stop, lesson 22).
	skip := func(rs []*messages.Record) {
		for _, r := range rs {
			system.Root.Send(tracker, &messages.PublishFailed{RecordingId: p.rec, Epoch: b.Epoch, End: r.End, Error: "not sent: an earlier send of this epoch failed", NotSent: true})
		}
	}
	if stopped() {
		skip(b.Records)
		return
	}
	p.sentEpoch = b.Epoch
	p.dropAnswered()
	p.watchAnswers(ctx, p.answerTimeout())
	done := func() {
		answeredAt.Store(elapsedMs())
		if outstanding.Add(-1) == 0 && parked.Load() {
			system.Root.Send(self, &resumeSends{})
		}
	}
	session := strconv.FormatInt(int64(b.SessionId), 10)
	for i, r := range b.Records {
		if stopped() {
			skip(b.Records[i:])
			return
		}
		if p.sentEnd < 0 {
			// The producer's first send: what the broker stored up to its start is not sent
			// again (a producer created again sends again from the last commit, past the
			// checkpoint). (A later record starting past a stored message's end, after a
			// gap, is checked: the archive's records no longer end there.)
			p.stored = slices.DeleteFunc(p.stored, func(m storedMark) bool { return m.end <= r.Start })
		}
		if len(p.stored) > 0 && r.End >= p.stored[0].end {
			p.checkStored(r)
		}
		p.sentEnd = r.End
		end, epoch, payload, checksum := r.End, b.Epoch, r.Payload, r.Checksum
		msg := &pulsar.ProducerMessage{
			Payload: r.Payload,
			Properties: map[string]string{
				PropPosition:  strconv.FormatInt(end, 10),
				PropSessionID: session,
				PropStreamID:  p.streamIDStr,
			},
		}
		if !p.cfg.Transport {
			seq, err := progress.SequenceID(end)
			if err != nil {
				panic(supervisor.Fail(supervisor.Bug, err))
			}
			msg.SequenceID = &seq
			msg.Properties[PropRecordingID] = p.recordingStr
		}
		if p.maxSize > 0 { // archive mode only (askMaxSize)
			if size := brokerSize(prod.Name(), uint64(*msg.SequenceID), msg.Properties, len(r.Payload)); size > p.maxSize {
				panic(supervisor.Fail(supervisor.Poison, p.overMaxSize(r, size)))
			}
		}
		answer := &sendAnswer{end: end, epoch: epoch, sentMs: elapsedMs()}
		p.unanswered = append(p.unanswered, answer)
		outstanding.Add(1)
		sendAsync(p.producer, msg, func(id pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			defer done()
			if !answer.answered.CompareAndSwap(false, true) {
				return // reported failed when its producer was replaced (strand)
			}
			if err != nil {
				// Fail-stop protects deduplication (lesson 22). Transport mode has none to
				// protect and re-sends nothing: a failure loses that message only.
				if !p.cfg.Transport {
					raise(failedEpoch, epoch+1)
				}
				system.Root.Send(tracker, &messages.PublishFailed{RecordingId: p.rec, Epoch: epoch, End: end, Error: err.Error()})
				switch {
				case lostForGood(err):
					system.Root.Send(self, &producerLost{producer: prod, err: err})
				case tooLarge(err) && !p.cfg.Transport:
					system.Root.Send(self, &recordTooLarge{end: end, size: int64(len(payload)), err: err})
				}
				return
			}
			// Stored (or known as a duplicate): the client read the payload before the broker
			// could receive it (v0.19.0 copies it inside SendAsync, and serializes the
			// message before writing it; a reconnect re-sends the serialized bytes), so its
			// buffer can take another message. Failed or never sent, a payload is left to the
			// garbage collector: the client may still hold it. The tests scribble over every
			// buffer given back and compare the topics byte for byte (ferry_scribble).
			payloads.Put(payload)
			dup := id != nil && id.LedgerID() == -1 && id.EntryID() == -1
			rb := readBack.Load()
			// (A record sent again after a failure, epoch > 0, may be a duplicate of its own
			// first send: for fresh, only a first send's is news.)
			if dup && rb.beyondReach(end) && (!rb.fresh || epoch == 0) {
				if rb.floor == notRead {
					// Nothing read could tell, and the record is among the partition's last
					// if it was the client's own re-send after a reconnect (the broker stored
					// it before its answer was lost): a read made now tells.
					system.Root.Send(self, &duplicateToCheck{end: end, epoch: epoch, checksum: checksum, floor: rb.floor, fresh: rb.fresh})
					return
				}
				if rb.unchecked.CompareAndSwap(false, true) {
					system.Root.Send(self, &duplicateUnchecked{end: end, floor: rb.floor, fresh: rb.fresh})
				}
			}
			if dup && rb.lacks(end) {
				// Not stored, and never will be under this sequence id: a failure, which
				// keeps the checkpoint below it, and the stream stops.
				raise(failedEpoch, epoch+1)
				system.Root.Send(tracker, &messages.PublishFailed{RecordingId: p.rec, Epoch: epoch, End: end, Error: "answered as a duplicate, though the topic does not hold it (lesson 22)"})
				system.Root.Send(self, &duplicateNotStored{end: end, floor: rb.floor, last: rb.ends[len(rb.ends)-1]})
				return
			}
			raiseInt(acked, end)
			if !dup && id != nil {
				storedAt.add(end, id)
			}
			if !dup && end <= verifyUpTo.Load() && storedAgainSent.CompareAndSwap(false, true) {
				system.Root.Send(self, &storedAgain{end: end})
			}
			system.Root.Send(tracker, &messages.PublishAcked{RecordingId: p.rec, Epoch: epoch, End: end, Duplicate: dup})
		})
	}
}

// sendAsync is prod.SendAsync, with pulsar-client-go v0.19.0's race against its own close
// turned into the failure it is. SendAsync checks that the producer is open and then hands
// the message to the producer's event loop on a channel; a reconnect that closes the
// producer for good (TopicNotFound, TopicTerminated, fenced) closes that channel, and a
// SendAsync between the check and the hand-over panics with a send on a closed channel. The
// message was not taken, and nothing else will call it back: cb gets ErrProducerClosed here,
// as a send made just after the close would, and the publisher replaces the producer.
func sendAsync(prod pulsar.Producer, msg *pulsar.ProducerMessage, cb func(pulsar.MessageID, *pulsar.ProducerMessage, error)) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if closedChannel(r) {
			cb(nil, msg, fmt.Errorf("%w: the client closed it while it took a message in (%v)", pulsar.ErrProducerClosed, r))
			return
		}
		panic(r)
	}()
	prod.SendAsync(context.Background(), msg, cb)
}

// checkStored compares r, a record that reaches the end of one of the producer's messages
// the broker stored past the checkpoint (p.stored), with the messages it reaches: it must
// end where the first of them ends, with the same checksum. Up to the broker's last message
// from the producer the records sent again are answered as duplicates: if the archive now
// holds other records there (truncated and recorded on above ferry's checkpoint, while
// ferry was down), they would be dropped as duplicates of the old ones and counted as
// published — those of a recording recorded again short of the old records' end too, which
// never reach the broker's last message. The stream stops instead. (Only what the read back
// found is compared: messages stored below where it reached are not.)
func (p *publisher) checkStored(r *messages.Record) {
	s := p.stored[0]
	if r.End == s.end && r.Checksum == s.checksum {
		p.stored = p.stored[1:]
		return
	}
	found := fmt.Sprintf("the record [%d, %d) with CRC-32C %08x there", r.Start, r.End, r.Checksum)
	if r.End > s.end {
		found = fmt.Sprintf("no record ending there, but the record [%d, %d) with CRC-32C %08x", r.Start, r.End, r.Checksum)
	}
	last := p.verifyUpTo.Load()
	panic(changedRecording(p.rec, fmt.Sprintf("what the topic stored from its producer %s (up to %d)", p.name, last),
		fmt.Sprintf("the topic's message from it ending at %d has CRC-32C %08x; the archive now holds %s", s.end, s.checksum, found),
		last, "sent again, they are answered as duplicates of the old records and dropped"))
}

// storedMarks are the producer's messages of the recording that msg, the broker's last
// from the producer (at position last), and the read back that found it tell above from,
// ascending end: one for each end, the last the partition stored of it (without
// deduplication, a record sent again is stored again).
func storedMarks(msg StoredMessage, last, from int64) []storedMark {
	checksums := map[int64]uint32{}
	for _, e := range msg.Ends {
		if e.End > from {
			checksums[e.End] = e.Checksum
		}
	}
	checksums[last] = msg.Checksum
	marks := make([]storedMark, 0, len(checksums))
	for end, checksum := range checksums {
		marks = append(marks, storedMark{end: end, checksum: checksum})
	}
	slices.SortFunc(marks, func(a, b storedMark) int { return cmp.Compare(a.end, b.end) })
	return marks
}

// oldClosed tells the publisher that the producer it replaces is closed.
type oldClosed struct{}

// replace closes the producer without flushing it (a flush would wait for the answers that
// do not come), and creates its successor once the close returned: pulsar-client-go
// v0.19.0's Close fails the sends still pending (doClose, failPendingMessages), so none of
// them is written after the successor's first send — a producer reconnecting to a broker
// back just then would write them again. (In archive mode the broker keeps two producers of
// one name apart anyway; in transport mode nothing else would.) Its sends were reported
// failed (strand).
func (p *publisher) replace(ctx actor.Context) {
	prod := p.producer
	p.producer, p.creating = nil, true
	p.producerState(ctx, "creating")
	self, system, log, stream, rec := ctx.Self(), ctx.ActorSystem(), p.env.Logger, p.cfg.Def.Name, p.rec
	if !p.env.tasks().Go(func() {
		if !closeProducer(prod) {
			log.Warn("the replaced producer's Close did not return: taken for closed by the client meanwhile; creating its successor", "stream", stream, "recording", rec, "waited", producerCloseWait)
		}
		system.Root.Send(self, &oldClosed{})
	}) {
		closeProducer(prod) // the pipeline stops: nothing to create
	}
}

// closedChannel reports whether r, recovered from a call of pulsar-client-go v0.19.0, is the
// panic of a send on a channel the client closed as it closed the producer for good
// (SendAsync, Flush and Close check that the producer is open, then hand their request over
// on a channel the client's doClose may close in between).
func closedChannel(r any) bool {
	err, ok := r.(runtime.Error)
	return ok && err.Error() == "send on closed channel"
}

// pastClosedChannel calls f, a call of the producer's that calls nothing back (Flush,
// Close), and recovers the panic of a send on a channel the client closed (closedChannel):
// the producer is closed, which is what the caller waits for.
func pastClosedChannel(f func()) {
	defer func() {
		if r := recover(); r != nil && !closedChannel(r) {
			panic(r)
		}
	}()
	f()
}

// producerCloseWait bounds the wait for a producer's Close (closeProducer): well above the
// Pulsar client's operation timeout, which bounds the close request to the broker.
var producerCloseWait = time.Minute

// closeProducer closes prod, waiting at most producerCloseWait, and reports whether Close
// returned. pulsar-client-go v0.19.0's Close races the client's own close of the producer
// for good (a reconnect ending in doClose: TopicNotFound, TopicTerminated, fenced), which
// closes the channel Close hands its request to: the request is left untaken and Close
// waits for ever, or the hand-over sends on the closed channel and panics. Either way the
// producer is closed; the caller goes on.
func closeProducer(prod pulsar.Producer) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pastClosedChannel(prod.Close)
	}()
	return doneWithin(done, producerCloseWait)
}

// close flushes and closes the producer on a goroutine: the flush gives the sends in flight
// up to flushTimeout to be answered, where Close (pulsar-client-go v0.19.0) would fail every
// pending one at once with ErrProducerClosed, to be sent again.
func (p *publisher) close() {
	prod := p.producer
	p.producer = nil
	if prod == nil {
		return
	}
	log := p.env.Logger
	if !p.env.tasks().Go(func() {
		// Bounded: with send timeouts off, a flush to an unreachable broker never returns.
		ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
		defer cancel()
		pastClosedChannel(func() {
			if err := prod.FlushWithCtx(ctx); err != nil {
				log.Debug("flushing a producer before close", "error", err)
			}
		})
		closeProducer(prod)
	}) {
		closeProducer(prod)
	}
}

// raise sets a to v unless it holds more already.
func raise(a *atomic.Uint64, v uint64) {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return
		}
	}
}

// raiseInt is raise for an int64.
func raiseInt(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if old >= v || a.CompareAndSwap(old, v) {
			return
		}
	}
}
