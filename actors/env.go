package actors

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/aeron/archive"
	"github.com/ferry-bridge/ferry/aeron/channel"
	"github.com/ferry-bridge/ferry/config"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
	"github.com/ferry-bridge/ferry/supervisor"
)

// Archive is what the pipeline asks of the Aeron Archive. *archive.Client implements it.
// Every method blocks; actors call them only from their own goroutines.
type Archive interface {
	// ChannelRecordings lists the recordings of streamID on uri's media: those uri
	// selects, and the others (a configured channel that selects none of them is said).
	ChannelRecordings(ctx context.Context, uri channel.URI, streamID int32, pageSize int32) (selected, others []archive.RecordingDescriptor, err error)
	Recording(ctx context.Context, recordingID int64) (archive.RecordingDescriptor, error)
	MaxRecordedPosition(ctx context.Context, recordingID int64) (int64, error)
	StartReplay(ctx context.Context, recordingID, position, length int64, replayChannel string, replayStreamID int32) (int64, error)
	StopReplay(ctx context.Context, replaySessionID int64) error
}

// Subscriber adds Aeron subscriptions. *aeron.Client implements it.
type Subscriber interface {
	AddSubscription(ctx context.Context, channel string, streamID int32, handlers aeron.ImageHandlers) (*aeron.Subscription, error)
}

// ProducerFactory creates a Pulsar producer; it may block. Production code passes the
// client's CreateProducer; tests wrap the real producer in a fault-injecting decorator.
type ProducerFactory func(pulsar.ProducerOptions) (pulsar.Producer, error)

// LastStoredFunc reads the last message the broker stored from recording rec in the
// partition its producer publishes to (rec modulo by, the partitions it is routed by, or, by
// 0, modulo the topic's partitions), or, when it finds none near the partition's end, the
// partition's last message. ok is false for an empty partition. It reads on back, as far as
// it may, to a message of the recording at or below position from (where the sends start
// again), and says which of the recording's messages it found (StoredMessage.Ends). known,
// if not nil, is the id the broker gave a message of the recording's producer it stored, at
// or below from (the publisher's furthest remembered: storedIDs): a read back to the start
// of the partition's last ledger that did not reach from goes on from it, across the
// ledgers before (a broker restart or a topic unload opens a ledger; the records stored
// before it, and their re-sends answered as duplicates after it, are in the ledger before).
// [LastStoredWith] makes one of a Pulsar client.
type LastStoredFunc func(ctx context.Context, topic string, rec int64, by int, from int64, known pulsar.MessageID) (msg StoredMessage, ok bool, err error)

// Admin is what the deduplication check asks of the broker's admin API.
// *pulsaradmin.Client implements it.
type Admin interface {
	// Partitions returns how many partitions topic has: 0 if it is not partitioned.
	Partitions(ctx context.Context, topic string) (int, error)
	// Deduplication returns the broker's deduplication status of a topic or partition as
	// its stats report it ("Enabled", "Disabled", ...).
	Deduplication(ctx context.Context, topic string) (string, error)
	// Terminated reports whether a topic or partition is terminated.
	Terminated(ctx context.Context, topic string) (bool, error)
	// Publishers returns the names of the producers connected to a topic or partition.
	Publishers(ctx context.Context, topic string) ([]string, error)
}

// MaxMessageSizeFunc returns the maxMessageSize policy of a topic, the largest message the
// broker takes there as it receives it, metadata and framing included (0: none).
// *pulsaradmin.Client's MaxMessageSize is one.
type MaxMessageSizeFunc func(ctx context.Context, topic string) (int, error)

// DeduplicationFunc returns the broker's deduplication status ("Enabled", "Disabled", ...)
// of the partition recording rec's producer publishes to: rec modulo by, the partitions it
// is routed by, or, by 0, modulo the topic's partitions. [DeduplicationWith] makes one of
// an [Admin].
type DeduplicationFunc func(ctx context.Context, topic string, rec int64, by int) (string, error)

// DeduplicationWith asks a for the deduplication status of the recording's partition.
func DeduplicationWith(a Admin) DeduplicationFunc {
	return func(ctx context.Context, topic string, rec int64, by int) (string, error) {
		topic, err := recordingTopic(ctx, a, topic, rec, by)
		if err != nil {
			return "", err
		}
		return a.Deduplication(ctx, topic)
	}
}

// TerminatedFunc reports whether the partition recording rec's producer publishes to (as
// for [DeduplicationFunc]; transport mode's is rec 0's) is terminated. [TerminatedWith]
// makes one of an [Admin].
type TerminatedFunc func(ctx context.Context, topic string, rec int64, by int) (bool, error)

// TerminatedWith asks a whether the recording's partition is terminated.
func TerminatedWith(a Admin) TerminatedFunc {
	return func(ctx context.Context, topic string, rec int64, by int) (bool, error) {
		topic, err := recordingTopic(ctx, a, topic, rec, by)
		if err != nil {
			return false, err
		}
		return a.Terminated(ctx, topic)
	}
}

// PublishersFunc returns the names of the producers connected to the partition recording
// rec's producer publishes to (as for [DeduplicationFunc]). [PublishersWith] makes one of an
// [Admin].
type PublishersFunc func(ctx context.Context, topic string, rec int64, by int) ([]string, error)

// PublishersWith asks a for the producers connected to the recording's partition.
func PublishersWith(a Admin) PublishersFunc {
	return func(ctx context.Context, topic string, rec int64, by int) ([]string, error) {
		topic, err := recordingTopic(ctx, a, topic, rec, by)
		if err != nil {
			return nil, err
		}
		return a.Publishers(ctx, topic)
	}
}

// recordingTopic is the partition of topic recording rec is published to (rec modulo by, or,
// by 0, modulo the topic's partitions), or topic itself if it is not partitioned.
func recordingTopic(ctx context.Context, a Admin, topic string, rec int64, by int) (string, error) {
	n, err := a.Partitions(ctx, topic)
	if err != nil || n == 0 {
		return topic, err
	}
	i, err := partitionOf(topic, rec, by, n)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s-partition-%d", topic, i), nil
}

// recordingPartition is the partition recording rec is published to, of n: a recording
// stays in one partition, so that order and deduplication hold on partitioned topics.
func recordingPartition(rec int64, n int) int { return int(rec % int64(max(n, 1))) }

// partitionOf is the partition of topic's n recording rec is routed to by by partitions
// (0: by n), or an error if the topic has fewer than that.
func partitionOf(topic string, rec int64, by, n int) (int, error) {
	i := recordingPartition(rec, cmp.Or(by, n))
	if i >= n {
		return 0, fmt.Errorf("topic %s has %d partitions, fewer than the %d recording %d is routed by: it was deleted and created again", topic, n, by, rec)
	}
	return i, nil
}

// StoredMessage is what the deduplication check (lesson 21) needs of a stored message.
type StoredMessage struct {
	Producer   string
	Properties map[string]string
	Checksum   uint32 // CRC-32C of the payload
	// Ends are the positions (ferry.position) and payload checksums of the messages of this
	// one's producer and recording that the read found, in the order stored, this one's
	// last; nil when this is not the recording's. The read is of the partition's last
	// entries, in order, and with deduplication a producer's messages are stored in the
	// order of their sequence ids: every message of the producer above Ends[0] that the
	// partition holds is among them (lesson 22). Ends[0] is at or below the from given to
	// the read, or the earliest the read reached (the start of the partition's last ledger,
	// the known message given to the read, or its bounds).
	Ends []StoredEnd
	// EarliestMs is the publish time (Unix epoch milliseconds, the producer's clock) of the
	// earliest message the read went through, every message after it read; 0: none.
	EarliestMs int64
	// ReachedFirst says the read went through the first message the partition still holds:
	// it holds no message of the producer below Ends[0] (retention may have deleted ledgers
	// before that one which did).
	ReachedFirst bool
}

// StoredEnd is a message of the recording that a read of what the broker stored found: its
// position (ferry.position, the end of its record) and the CRC-32C of its payload.
type StoredEnd struct {
	End      int64
	Checksum uint32
}

// Env is what every actor of the pipeline shares. Each field is safe for concurrent use.
type Env struct {
	Archive        Archive
	Aeron          Subscriber
	CreateProducer ProducerFactory
	// LastStored lets a publisher resuming from a checkpoint check that the broker still
	// deduplicates what it stored before (lesson 21); nil: no check.
	LastStored LastStoredFunc
	// Deduplication lets a publisher ask whether the broker deduplicates its recording's
	// partition (lesson 21: ferry promises effectively-once only where it holds); nil: not
	// asked, and the status says unchecked.
	Deduplication DeduplicationFunc
	// MaxMessageSize lets a publisher find a record over the topic's maxMessageSize policy
	// before it sends it: the broker's refusal of it is never called back (see
	// publisher.askMaxSize). nil: not asked.
	MaxMessageSize MaxMessageSizeFunc
	// Terminated lets a publisher whose producer the broker refuses as fenced find whether
	// the topic was terminated (see publisher.created); nil: not asked.
	Terminated TerminatedFunc
	// Publishers lets a publisher whose producer answers nothing tell a producer the client
	// no longer hears (connected to the broker) from one reconnecting (see
	// publisher.answersDue); nil: it is replaced either way.
	Publishers PublishersFunc
	Store      store.Store
	Logger     *slog.Logger
	// Now is the clock: the time of day things happened at (a checkpoint's UpdatedAtMs, a
	// failure's); nil means time.Now.
	Now func() time.Time
	// Elapsed is the clock intervals are measured by (the checkpoint policy's every_ms and
	// back-off, a hung write, the health rule's stall_after, the commit rate), which must
	// not follow the time of day when it is stepped;
	// nil means the time since the process started, by Go's monotonic clock.
	Elapsed func() time.Duration
	// Board receives each stream's status, pushed every statusPushInterval; nil: none.
	Board StatusBoard
	// Payloads recycles records' payloads: the readers copy messages out of the log into
	// its buffers, and the publisher gives each back once Pulsar has acknowledged its
	// record (pulsar-client-go has copied it into its own send buffer by then). nil: every
	// payload is left to the garbage collector.
	Payloads *aeron.BufferPool

	bg *tasks // set by NewPipeline
	// stopWait bounds Pipeline.Stop's wait for the actors' goroutines; 0: the const stopWait.
	stopWait time.Duration
	// statuses carries each stream's status from one pipeline to the next (Run's
	// reconnects) and across a supervisor's restarts; nil: each starts afresh.
	statuses *statusKeeper
	// sentMarks carries each transport stream's sent marks from one pipeline to the next;
	// nil: each starts afresh.
	sentMarks *sentMarksKeeper
}

func (e *Env) tasks() *tasks { return e.bg }

func (e *Env) nowMs() int64 {
	if e.Now == nil {
		return time.Now().UnixMilli()
	}
	return e.Now().UnixMilli()
}

// elapsedMs is Elapsed in milliseconds. The default counts from 1 at the process's start:
// the moments the actors keep take 0 for never.
func (e *Env) elapsedMs() int64 {
	if e.Elapsed == nil {
		return time.Since(processStart).Milliseconds() + 1
	}
	return e.Elapsed().Milliseconds()
}

// moment is when something happened, by both clocks: the time of day (Env.Now), which the
// status shows, and the elapsed time (Env.Elapsed), which its intervals are measured by.
type moment struct{ wallMs, elapsedMs int64 }

func (e *Env) now() moment { return moment{wallMs: e.nowMs(), elapsedMs: e.elapsedMs()} }

// processStart is when the process started, as Go's monotonic clock has it.
var processStart = time.Now()

// StatusBoard keeps the latest status of every stream for readers that must not wait on
// the pipeline (an HTTP status request, lesson 23). Implementations must be safe for
// concurrent use and must not block.
type StatusBoard interface {
	SetStream(*messages.StreamStatus)
	// SetConnection is the state of the connection to Aeron ([Run] reports it).
	SetConnection(*messages.Connection)
}

// StreamConfig is one stream's settings and the state its store held at start.
type StreamConfig struct {
	// Def is the stream's definition as the store keeps it.
	Def store.Stream
	// Channel is Def.Channel parsed.
	Channel channel.URI
	// Transport selects transport mode: a live subscription, at most once, no archive, no
	// checkpoints. Spy subscribes with "aeron-spy:" to a publication of the same driver.
	Transport bool
	Spy       bool
	// Start applies to recordings the store holds nothing for (lesson 18).
	Start config.StartPosition
	// Stored is what the store held at start.
	Stored store.State
	// ReplayChannel and ReplayStreamID are where the archive sends replays; each replay
	// subscribes with its own session id added.
	ReplayChannel  channel.URI
	ReplayStreamID int32
	// Checkpoint is the checkpoint policy.
	Checkpoint progress.CheckpointConfig
	// MaxInflightRecords and MaxInflightBytes bound, per recording, what was read from the
	// replay and not yet committed (the replay's credits).
	MaxInflightRecords int64
	MaxInflightBytes   int64
	// DiscoveryInterval is how often the archive's catalog is listed.
	DiscoveryInterval time.Duration
	// CallTimeout bounds each archive call.
	CallTimeout time.Duration
	// Restart is how failed actors of the stream are restarted.
	Restart supervisor.Policy
	// RestartGrace is how long a new recording waits for an earlier live one that stopped
	// growing (progress.Schedule); zero publishes them side by side at once.
	RestartGrace time.Duration
	// StallAfter is how long records may be pending without the committed position moving
	// before the stream reports itself unhealthy (0: 60 s).
	StallAfter time.Duration
}

// Validate reports settings the pipeline cannot run with.
func (c StreamConfig) Validate() error {
	switch {
	case c.Def.Name == "":
		return fmt.Errorf("actors: stream without a name")
	case c.MaxInflightRecords < 1 || c.MaxInflightBytes < 1:
		return fmt.Errorf("actors: stream %s: in-flight limits must be positive", c.Def.Name)
	case c.CallTimeout <= 0:
		return fmt.Errorf("actors: stream %s: call timeout must be positive", c.Def.Name)
	case c.Transport:
		return c.Restart.Validate()
	case c.DiscoveryInterval <= 0:
		return fmt.Errorf("actors: stream %s: discovery interval must be positive", c.Def.Name)
	}
	if err := c.Checkpoint.Validate(); err != nil {
		return fmt.Errorf("actors: stream %s: %w", c.Def.Name, err)
	}
	return c.Restart.Validate()
}

// tasks tracks the goroutines actors start for blocking work, so that the pipeline can
// wait for them at shutdown. It is safe for concurrent use.
type tasks struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	closing bool
	ended   chan struct{} // closed once closing and every goroutine ended
}

// Go runs f on a new goroutine unless the pipeline is shutting down; it reports whether f
// was started.
func (t *tasks) Go(f func()) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		f()
	}()
	return true
}

// Close refuses new goroutines and waits for the running ones.
func (t *tasks) Close() { <-t.close() }

// CloseWithin refuses new goroutines and waits for the running ones, at most d; it reports
// whether they all ended.
func (t *tasks) CloseWithin(d time.Duration) bool { return doneWithin(t.close(), d) }

// doneWithin waits for done to be closed, at most d, and reports whether it was.
func doneWithin(done <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}

// done is closed once close was called and the goroutines ended; nil before close.
func (t *tasks) done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended
}

// close refuses new goroutines and returns a channel closed once the running ones ended.
func (t *tasks) close() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.closing {
		t.closing, t.ended = true, make(chan struct{})
		go func() {
			t.wg.Wait()
			close(t.ended)
		}()
	}
	return t.ended
}

// LastStoredWith reads the last stored message with readers of client on the recording's
// partition (the publisher's router: rec modulo the partitions it is routed by). The readers need permission
// to consume the topic.
//
// Not with one reader that starts at the latest message inclusive: pulsar-client-go v0.19.0
// makes that reader seek to the last message as it is created, the broker closes the
// subscription to seek and the client subscribes again, and a reader asked anything in
// between is answered "consumer not found". In one CI run such a reader neither delivered the
// message nor answered for 13 s (docs/findings.md). Nor HasNext: v0.19.0's answers false for
// an error as for an empty topic.
func LastStoredWith(client pulsar.Client) LastStoredFunc {
	type result struct {
		msg StoredMessage
		ok  bool
		err error
	}
	return func(ctx context.Context, topic string, rec int64, by int, from int64, known pulsar.MessageID) (StoredMessage, bool, error) {
		// The client's calls here do not take ctx (and a reader reconnecting retries without
		// end): they run on a goroutine of their own, which the caller does not wait for.
		done := make(chan result, 1)
		go func() {
			msg, ok, err := lastStored(ctx, client, topic, rec, by, from, known)
			done <- result{msg, ok, err}
		}()
		select {
		case r := <-done:
			return r.msg, r.ok, r.err
		case <-ctx.Done():
			return StoredMessage{}, false, fmt.Errorf("reading the last message of %s: %w", topic, ctx.Err())
		}
	}
}

// scanBack are how far back from a partition's last entry lastStored looks for the
// recording's own last message, span after span, newest first: the records a restart sends
// again are those acknowledged since its checkpoint, and what other producers stored after
// them (concurrent publishers' recordings, lesson 11, all in partition 0 of a topic without
// partitions) is, in the usual case, a few entries. Once it found that message, it reads on
// back to the recording's message at or below where the sends start again, in the same
// spans: a restart sends again at most the records acknowledged since the last checkpoint,
// the credits and the checkpoint interval, in the usual case. The search ends at the start
// of the last entry's ledger (a topic reloaded since, which opens a ledger, is not searched
// before it, but from a known message of the producer on: Pulsar's ledger ids are not
// consecutive, and a reader cannot step back to the ledger before without one), and once
// it read scanBytes of payload after the first span (large messages):
// looking for the last message, it fails, which the publisher says, going on unchecked;
// reading on back, it keeps what it found, as it does once half the time left when it found
// that message has passed, or a read fails.
var scanBack = []int64{16, 256, 4096}

const scanBytes = 64 << 20

// errNotSearchedBack is lastStored's failure to find the recording's last message within
// scanBytes of other producers' messages: reading again finds no more (more messages only
// push it further back), so it tells nothing, as none of the recording's messages among
// the partition's last does.
var errNotSearchedBack = errors.New("not searched further back")

func lastStored(ctx context.Context, client pulsar.Client, topic string, rec int64, by int, from int64, known pulsar.MessageID) (StoredMessage, bool, error) {
	parts, err := client.TopicPartitions(topic)
	if err != nil {
		return StoredMessage{}, false, fmt.Errorf("partitions of %s: %w", topic, err)
	}
	if len(parts) > 1 {
		i, err := partitionOf(topic, rec, by, len(parts))
		if err != nil {
			return StoredMessage{}, false, err
		}
		topic = parts[i]
	}
	last, err := lastMessageID(ctx, client, topic)
	switch {
	case err != nil:
		return StoredMessage{}, false, err
	case last.EntryID() < 0:
		return StoredMessage{}, false, nil // empty
	}
	recStr := strconv.FormatInt(rec, 10)
	var (
		newest StoredMessage
		own    *StoredMessage
		marks  []ownMark // the recording's messages read, in the order stored
		// earliestMs is the publish time of the first message of the earliest span read.
		earliestMs int64
		// ledgerStart: the spans read went back to the start of last's ledger.
		ledgerStart bool
	)
	// reached: the marks go back to a message of own's producer at or below from.
	reached := func() bool {
		return own != nil && slices.ContainsFunc(marks, func(m ownMark) bool { return m.msg.Producer == own.Producer && m.end >= 0 && m.end <= from })
	}
	// found completes own with what was read.
	found := func() (StoredMessage, bool, error) {
		own.Ends, own.EarliestMs = endsOf(marks, own.Producer), earliestMs
		return *own, true, nil
	}
	// Reading on back takes the first half of the time left; what was found stands.
	read := ctx
	hi, budget := last.EntryID(), int64(-1) // the first span is read whole: it holds the last message
	for _, back := range scanBack {
		lo := max(last.EntryID()-back, -1) // a ledger's entry -1 is before its first
		if lo >= hi {
			break
		}
		span, err := readSpan(read, client, topic, last, entryAt(last, lo), entryAt(last, hi), recStr, budget)
		switch {
		case err != nil && own != nil:
			return found() // reading on back: what was read stands
		case err != nil:
			return StoredMessage{}, false, err
		}
		if hi == last.EntryID() {
			newest = span.last
		}
		switch {
		case span.overBudget && own != nil:
			// The span's last entries were not read: its messages would leave a gap.
			return found()
		case span.overBudget:
			// The recording's last message may be in what was not read: an older one would
			// be taken for the topic having lost messages.
			return StoredMessage{}, false, fmt.Errorf("no message of recording %d among the last %d MiB of other producers' messages in %s: %w", rec, scanBytes>>20, topic, errNotSearchedBack)
		}
		marks = append(span.marks, marks...)
		if span.firstMs > 0 {
			earliestMs = span.firstMs
		}
		ledgerStart = lo == -1
		if own == nil && len(span.marks) > 0 {
			m := span.marks[len(span.marks)-1].msg
			own = &m
			var cancel context.CancelFunc
			read, cancel = halfLeft(ctx)
			defer cancel()
		}
		if reached() {
			break
		}
		hi = lo
		if budget < 0 {
			budget = scanBytes
		} else {
			budget -= span.bytes
		}
	}
	if ledgerStart && !reached() && known != nil && known.LedgerID() < last.LedgerID() {
		// From the known message (its entry the first read) up to last's ledger: whole, or
		// not at all (a gap below last's ledger would hide a message the topic lacks). In
		// half the time left at most, as reading on back; a read that fails fails the whole,
		// which the caller says as such, rather than pass for a read that reached no further.
		if own == nil {
			var cancel context.CancelFunc
			read, cancel = halfLeft(ctx)
			defer cancel()
		}
		before, err := readSpan(read, client, topic, last, entryAt(known, known.EntryID()-1), entryAt(last, -1), recStr, scanBytes)
		switch {
		case err != nil:
			return StoredMessage{}, false, fmt.Errorf("reading on back from %v, a message the broker stored for the recording, to the ledger of the last: %w", known, err)
		case !before.overBudget && before.firstMs > 0: // (none read: known's ledger deleted since, say)
			marks, ledgerStart = append(before.marks, marks...), false
			if before.firstMs > 0 {
				earliestMs = before.firstMs
			}
			if own == nil && len(before.marks) > 0 {
				m := before.marks[len(before.marks)-1].msg
				own = &m
			}
		}
	}
	if own == nil {
		return newest, true, nil
	}
	msg, ok, err := found()
	msg.ReachedFirst = ledgerStart && firstInLedger(read, client, topic, last)
	return msg, ok, err
}

// halfLeft is ctx with half its time left, if it has a deadline.
func halfLeft(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, time.Now().Add(time.Until(d)/2))
	}
	return ctx, func() {}
}

// firstInLedger reports whether the partition's first message is in last's ledger, so that
// a read back to that ledger's start went through every message the partition holds.
func firstInLedger(ctx context.Context, client pulsar.Client, topic string, last pulsar.MessageID) bool {
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID(), ReceiverQueueSize: 1})
	if err != nil {
		return false
	}
	stop := context.AfterFunc(ctx, r.Close) // a close ends the reader's reconnect loop
	defer func() { stop(); r.Close() }()
	m, err := r.Next(ctx)
	return err == nil && m.ID().LedgerID() == last.LedgerID()
}

// ownMark is a message of the recording that readSpan read, and its position (-1: none
// that parses).
type ownMark struct {
	msg StoredMessage
	end int64
}

// endsOf is the positions and checksums of marks' messages of producer, in order.
func endsOf(marks []ownMark, producer string) []StoredEnd {
	var ends []StoredEnd
	for _, m := range marks {
		if m.msg.Producer == producer && m.end >= 0 {
			ends = append(ends, StoredEnd{End: m.end, Checksum: m.msg.Checksum})
		}
	}
	return ends
}

// span is what readSpan found: the messages of the recording, in the order stored, the
// publish time of its first message (Unix epoch milliseconds; 0: none), the last message
// read (the partition's last, if the span ends there), the payload bytes read, and whether
// it stopped there, over its budget.
type span struct {
	marks      []ownMark
	firstMs    int64
	last       StoredMessage
	bytes      int64
	overBudget bool
}

// entry is an entry's place in a partition, ordered by ledger, then entry id.
type entry struct{ ledger, id int64 }

// entryAt is entry id of the ledger of in.
func entryAt(in pulsar.MessageID, id int64) entry { return entry{in.LedgerID(), id} }

func (e entry) compare(o entry) int {
	return cmp.Or(cmp.Compare(e.ledger, o.ledger), cmp.Compare(e.id, o.id))
}

// readSpan reads the messages of the entries after after, up to upTo (at most last's), of
// the partition whose last message is last. The reader starts at after (a reader starts
// after the entry it is given; entry -1 of a ledger is before its first) and skips what
// comes before: Pulsar 4.0.8 with v0.19.0 delivers a reader's start message although the
// reader is not inclusive, which the broker's and the client's documentation do not promise
// either way. Messages of an entry below last's are read up to the first of an entry after
// upTo (one is there: last is), of whichever ledger; at last, up to last (its batch index,
// if batched: not ferry's, whose producers do not batch). It stops once it read more than
// budget bytes of payload (budget < 0: no bound).
func readSpan(ctx context.Context, client pulsar.Client, topic string, last pulsar.MessageID, after, upTo entry, rec string, budget int64) (span, error) {
	// A small queue: the broker sends a reader as much ahead as its queue holds (1,000
	// messages by default), also past upTo and the budget.
	queue := 64
	if after.ledger == upTo.ledger {
		queue = int(min(upTo.id-after.id+1, 64))
	}
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, ReceiverQueueSize: queue,
		StartMessageID: pulsar.NewMessageID(after.ledger, after.id, -1, last.PartitionIdx())})
	if err != nil {
		return span{}, fmt.Errorf("reader on %s: %w", topic, err)
	}
	stop := context.AfterFunc(ctx, r.Close) // a close ends the reader's reconnect loop
	defer func() { stop(); r.Close() }()
	lastAt := entryAt(last, last.EntryID())
	var out span
	for {
		m, err := r.Next(ctx)
		if err != nil {
			return span{}, fmt.Errorf("reading the messages of %s before its last (%v): %w", topic, last, err)
		}
		id := m.ID()
		at := entryAt(id, id.EntryID())
		switch {
		case at.compare(after) <= 0:
			continue
		case at.compare(lastAt) > 0:
			return span{}, fmt.Errorf("reading the last message of %s (%v): the reader passed it, at %v", topic, last, id)
		case at.compare(upTo) > 0:
			return out, nil // the span read, up to the first message after it
		}
		out.last = StoredMessage{Producer: m.ProducerName(), Properties: m.Properties(), Checksum: crc32.Checksum(m.Payload(), castagnoli)}
		if out.firstMs == 0 {
			out.firstMs = m.PublishTime().UnixMilli()
		}
		if out.last.Properties[PropRecordingID] == rec {
			end, err := strconv.ParseInt(out.last.Properties[PropPosition], 10, 64)
			if err != nil {
				end = -1
			}
			out.marks = append(out.marks, ownMark{msg: out.last, end: end})
		}
		if out.bytes += int64(len(m.Payload())); budget >= 0 && out.bytes > budget {
			out.overBudget = true
			return out, nil
		}
		if at == lastAt && (last.BatchIdx() < 0 || id.BatchIdx() >= last.BatchIdx()) {
			return out, nil // the partition's last message
		}
	}
}

// lastMessageID asks the broker for the id of the last message of topic (a partition), with
// a reader that starts after it and so never seeks. An entry id below 0: the topic is empty.
func lastMessageID(ctx context.Context, client pulsar.Client, topic string) (pulsar.MessageID, error) {
	r, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID()})
	if err != nil {
		return nil, fmt.Errorf("reader on %s: %w", topic, err)
	}
	stop := context.AfterFunc(ctx, r.Close)
	defer func() { stop(); r.Close() }()
	last, err := r.GetLastMessageID()
	if err != nil {
		return nil, fmt.Errorf("the last message id of %s: %w", topic, err)
	}
	return last, nil
}
