package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/actors"
	"github.com/ferry-bridge/ferry/aeron"
	"github.com/ferry-bridge/ferry/messages"
	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/harness"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestTransportModePublishesLiveMessages: in transport mode ferry subscribes to the stream
// itself, with no archive and no store, and publishes every whole message it receives —
// small ones and ones of several fragments, reassembled — once, in order and intact, with
// the position, session and stream id properties and no recording id (there is none); its
// start-up log says that delivery is at most once.
func TestTransportModePublishesLiveMessages(t *testing.T) {
	const n = 3000
	sc, cfg := newTransportConfig(t)
	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t) // not recorded
	f := startFerry(t, cfg.write(t))
	waitSubscribed(t, f, pub)
	positions := pub.publish(t, 0, n)
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 60*time.Second)
	f.mustStop()

	want := payloads(0, n)
	fragmented := 0
	for _, p := range want {
		if len(p) > maxPayload {
			fragmented++
		}
	}
	if fragmented == 0 {
		t.Fatal("no message of several fragments: the test does not cover reassembly")
	}
	assertExactlyOnceInOrder(t, msgs, want)
	if stored := storedEntries(t, sc.Topic); stored != n {
		t.Fatalf("the broker stored %d entries, want %d", stored, n)
	}
	assertTransportProperties(t, msgs, sc, pub, positions)
	if !strings.Contains(f.Log(), "at most once") {
		t.Fatalf("the start-up log does not say that transport mode delivers at most once:\n%s", f.LogTail(30))
	}
	// Lesson 17: the mode is logged at start.
	if _, ok := failLogLine(f.Log(), "ferry starting", "mode=transport"); !ok {
		t.Fatalf("the start-up log does not name the mode:\n%s", f.LogTail(30))
	}
}

// TestTransportModeRidesOutABrokerOutage: the broker is killed with kill -9 while ferry runs
// in transport mode, and messages are published while it is down. ferry's sends never time
// out, and its credits hold the rest in the publication's log, so nothing is lost: after the
// broker's restart every message arrives, in order. Without sequence ids the broker cannot
// deduplicate the client's re-send of what it stored but never acknowledged, so a message
// may arrive twice (README, transport mode); the test counts those, and fails on any gap.
//
// Down for longer than twice health.stall_after (after which a producer that answers
// nothing is replaced), with pulsar.admin_url set: ferry asks the broker whether it lists
// the producer as connected; unreachable, it cannot tell, says so, and waits for the
// producer, reconnecting, instead of replacing it and losing what it held (as it did:
// transport mode took no admin API).
func TestTransportModeRidesOutABrokerOutage(t *testing.T) {
	for _, c := range []struct {
		name       string
		stallAfter time.Duration // 0: the default, a minute
		admin      bool
	}{
		{"within stall_after", 0, false},
		{"past twice stall_after, with the admin API", time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) { rideOutBrokerOutage(t, c.stallAfter, c.admin) })
	}
}

func rideOutBrokerOutage(t *testing.T, stallAfter time.Duration, admin bool) {
	const before, during, after = 500, 300, 200
	own, broker := startOwnBroker(t)
	sc, cfg := newTransportConfig(t)
	cfg.Pulsar.ServiceURL = own.serviceURL
	if admin {
		cfg.Pulsar.AdminURL = own.adminURL
	}
	if stallAfter > 0 {
		cfg.Health = &healthSection{StallAfter: stallAfter.String()}
	}
	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t)
	w := own.watch(t, sc.Topic)
	f := startFerry(t, cfg.write(t))
	waitSubscribed(t, f, pub)

	positions := pub.publish(t, 0, before)
	w.waitDistinct(t, f, before, 60*time.Second)
	if err := broker.Kill(); err != nil {
		t.Fatal(err)
	}
	positions = append(positions, pub.publish(t, before, before+during)...)
	if stallAfter > 0 {
		// The producer overdue, the broker unreachable: said, and waited for.
		waitFor(t, f, 30*time.Second, "ferry's word that it waits for the producer", func() error {
			if _, ok := failLogLine(f.Log(), "the admin API could not be asked whether the broker lists it as connected", "waiting for it"); !ok {
				return errors.New("not said yet")
			}
			return nil
		})
	}
	began := time.Now()
	if err := broker.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := own.serves(60 * time.Second); err != nil {
		t.Fatalf("INFRA, not ferry: the test's broker does not store messages after its restart: %v", err)
	}
	t.Logf("broker restarted and serving in %s", time.Since(began).Round(time.Millisecond))
	positions = append(positions, pub.publish(t, before+during, before+during+after)...)
	n := len(positions)
	w.waitDistinct(t, f, n, 120*time.Second)
	f.mustStop()

	stored := own.storedEntries(t, sc.Topic)
	msgs := readTopic(t, own.serviceURL, sc.Topic, int(stored), 60*time.Second)
	repeats := assertInOrderNoGaps(t, msgs, payloads(0, n))
	t.Logf("%d messages, %d stored twice across the broker's kill -9", n, repeats)
	if line, lost := failLogLine(f.Log(), "level=ERROR", "is lost"); lost {
		t.Fatalf("ferry reported a loss although every message arrived: %s", line)
	}
	if line, replaced := failLogLine(f.Log(), "creating the producer again"); replaced {
		t.Fatalf("ferry replaced the producer while the broker was down: %s", line)
	}
}

// newTransportConfig is a stream and a transport-mode configuration for it: the shared
// broker, and none of the archive mode's sections.
func newTransportConfig(t *testing.T) (streamConfig, *ferryConfig) {
	t.Helper()
	sc := newStreamConfig(t, "")
	sc.StartPosition = "" // an archive-mode key
	cfg := newFerryConfig(t, sc)
	cfg.Mode = "transport"
	cfg.Archive, cfg.Replay, cfg.Store, cfg.Checkpoint = archiveSection{}, replaySection{}, storeSection{}, checkpointConfig{}
	cfg.Pulsar.AdminURL = ""
	return sc, cfg
}

// waitSubscribed waits until ferry's live subscription is the publication's subscriber.
func waitSubscribed(t *testing.T, f *ferryProc, pub *publisher) {
	t.Helper()
	waitFor(t, f, 30*time.Second, "ferry's subscription to the stream", func() error {
		if !pub.pub.IsConnected() {
			return errors.New("the publication has no subscriber")
		}
		return nil
	})
}

// assertTransportProperties checks the ferry.* properties of msgs, the messages published
// at positions by pub, in order: position, session and stream id, and no recording id
// (transport mode has none).
func assertTransportProperties(t *testing.T, msgs []pulsar.Message, sc streamConfig, pub *publisher, positions []int64) {
	t.Helper()
	var bad []string
	for k, m := range msgs {
		props := m.Properties()
		for key, v := range map[string]string{
			propPosition:  strconv.FormatInt(positions[k], 10),
			propSessionID: strconv.FormatInt(int64(pub.pub.SessionID()), 10),
			propStreamID:  strconv.FormatInt(int64(sc.StreamID), 10),
		} {
			if props[key] != v {
				bad = append(bad, fmt.Sprintf("message %d: %s = %q, want %q", k, key, props[key], v))
			}
		}
		if v, ok := props[propRecordingID]; ok {
			bad = append(bad, fmt.Sprintf("message %d: %s = %q in transport mode, which has no recording", k, propRecordingID, v))
		}
		if len(bad) >= 10 {
			break
		}
	}
	if len(bad) > 0 {
		t.Fatalf("properties of the published messages:\n%s", strings.Join(bad, "\n"))
	}
}

// TestTransportReaderRestartedAfterAFailureLosesNothingElse: in transport mode (at most
// once) a message whose publish failed is lost, and counted. When the live reader then
// fails (its subscription closed under it) and its supervisor restarts it, every message
// published after it subscribed again reaches Pulsar. A restarted reader that started over
// at epoch 1 had its first batch skipped by the publisher as part of the failed epoch:
// messages lost without any failure.
func TestTransportReaderRestartedAfterAFailureLosesNothingElse(t *testing.T) {
	const n = 100
	sc := newStreamConfig(t, "")
	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t)
	adminMust(t, http.MethodPut, topicPath(sc.Topic), "")
	subs := &subscriptions{}
	// The first message's acknowledgement becomes a failure (the broker stored it).
	plan := harness.Faults(map[int]harness.Fault{0: harness.Fail(nil)})
	ip := startInProcess(t, inProcessOptions{transport: true, plan: plan, wrapAeron: subs.wrap}, sc)
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 0)))
	pub.publish(t, 0, 1)
	eventually.NoError(t, 30*time.Second, func() error {
		if !ip.logs.contains("is lost") {
			return errors.New("the failed publish is not reported as a loss yet")
		}
		return nil
	})
	if err := subs.get(t, 0).Close(); err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 1)))
	pub.publish(t, 1, 1+n)
	eventually.NoError(t, 30*time.Second, func() error {
		var stats struct {
			NumberOfEntries int64 `json:"numberOfEntries"`
		}
		if err := adminGet(topicPath(sc.Topic)+"/internalStats", &stats); err != nil {
			return err
		}
		if stats.NumberOfEntries != 1+n {
			return fmt.Errorf("the topic holds %d messages, want %d: the failed one (stored by the broker) and the %d published after the restart", stats.NumberOfEntries, 1+n, n)
		}
		return nil
	})
	// The count alone would hide a loss made up by a duplicate: compare every message.
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, 1+n, 30*time.Second), payloads(0, 1+n))

	// The loss is in the status (lesson 24, 26): counted as failed, not as published, and
	// the last publish failure says so; so does the last read failure of the subscription
	// closed under the reader; the stream is live and healthy again.
	eventually.NoError(t, 10*time.Second, func() error {
		var st *messages.StreamStatus
		for _, s := range ip.board.Snapshot().Streams {
			if s.Name == sc.Name {
				st = s
			}
		}
		switch {
		case st == nil || len(st.Recordings) != 1:
			return fmt.Errorf("status %v; want the live stream as one row", st)
		case st.Recordings[0].Failed != 1 || st.Recordings[0].Acknowledged != n || st.Recordings[0].Published != 1+n:
			r := st.Recordings[0]
			return fmt.Errorf("sent %d, acknowledged %d, failed %d; want %d, %d, 1", r.Published, r.Acknowledged, r.Failed, 1+n, n)
		case len(st.Failures) != 2 || st.Failures[0].Kind != "publish" || !strings.Contains(st.Failures[0].Message, "lost") ||
			st.Failures[1].Kind != "read" || !strings.Contains(st.Failures[1].Message, "the live subscription was closed"):
			return fmt.Errorf("failures %v; want the loss as the last publish failure, the closed subscription as the last read failure", st.Failures)
		case st.State != "live" || !st.Healthy:
			return fmt.Errorf("state %s, healthy %t; want live and healthy", st.State, st.Healthy)
		}
		return nil
	})
}

// TestTransportSubscribeFailureIsInTheStatus: the live subscription cannot be added at
// first (the decorator refuses the first attempt, as a driver refusing it would). The
// reader is restarted and subscribes; the status keeps the failure (kind read), so that an
// operator whose stream never goes live sees why.
func TestTransportSubscribeFailureIsInTheStatus(t *testing.T) {
	sc := newStreamConfig(t, "")
	adminMust(t, http.MethodPut, topicPath(sc.Topic), "")
	refuse := &refuseFirstSubscription{}
	ip := startInProcess(t, inProcessOptions{transport: true, wrapAeron: func(real actors.Subscriber) actors.Subscriber {
		refuse.Subscriber = real
		return refuse
	}}, sc)
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		read := failureOf(st, "read")
		if st.State != "live" || read == nil || !strings.Contains(read.Message, errRefused.Error()) {
			return fmt.Errorf("state %s, failures %v; want live, with the refused subscription as a read failure", st.State, st.Failures)
		}
		return nil
	})
}

var errRefused = errors.New("injected: the subscription was refused")

// refuseFirstSubscription fails the first AddSubscription and passes the others on.
type refuseFirstSubscription struct {
	actors.Subscriber
	calls atomic.Int32
}

func (r *refuseFirstSubscription) AddSubscription(ctx context.Context, ch string, stream int32, h aeron.ImageHandlers) (*aeron.Subscription, error) {
	if r.calls.Add(1) == 1 {
		return nil, errRefused
	}
	return r.Subscriber.AddSubscription(ctx, ch, stream, h)
}

// TestTransportStreamThatCannotPublishTurnsStalled: in transport mode the producer can never
// be created (a topic the broker refuses, say); the live reader's messages wait, pending,
// and after the stall threshold the stream is stalled and unhealthy, naming what is pending,
// instead of looking live for ever (lesson 16).
func TestTransportStreamThatCannotPublishTurnsStalled(t *testing.T) {
	sc := newStreamConfig(t, "")
	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t)
	subs := &subscriptions{}
	ip := startInProcess(t, inProcessOptions{transport: true, wrapAeron: subs.wrap, stallAfter: time.Second,
		createProducer: func(actors.ProducerFactory) actors.ProducerFactory {
			return func(pulsar.ProducerOptions) (pulsar.Producer, error) { return nil, errors.New("refused by the test") }
		}}, sc)
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 0)))
	pub.publish(t, 0, 10)
	eventually.NoError(t, 30*time.Second, func() error {
		for _, s := range ip.board.Snapshot().Streams {
			if s.Name == sc.Name && s.State == "stalled" && !s.Healthy && strings.Contains(s.Reason, "10 records pending") {
				return nil
			}
		}
		return fmt.Errorf("status %v; want stalled with 10 records pending", ip.board.Snapshot().Streams)
	})
}

// TestTransportOneFailedPublishLosesThatMessageOnly: in transport mode a message the client
// refuses (6 MB, above the broker's 5 MB limit: it fails inside SendAsync, in the middle of
// a batch) is lost, and only it: the messages after it in the same batch are published.
// Fail-stop protects deduplication, which transport mode does not have.
func TestTransportOneFailedPublishLosesThatMessageOnly(t *testing.T) {
	const n, big = 10, 3
	sc := newStreamConfig(t, "")
	sc.Channel += "|term-length=64m" // a message may take up to an eighth of a term
	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t)
	adminMust(t, http.MethodPut, topicPath(sc.Topic), "")
	subs := &subscriptions{}
	ip := startInProcess(t, inProcessOptions{transport: true, wrapAeron: subs.wrap}, sc)
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 0)))
	want := make([][]byte, 0, n-1)
	for i := range n {
		msg := payloadFor(i)
		if i == big {
			msg = append(msg, make([]byte, 6<<20)...)
		} else {
			want = append(want, msg)
		}
		if _, err := pub.offer(msg, 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n-1, 30*time.Second), want)
	eventually.NoError(t, 10*time.Second, func() error {
		for _, s := range ip.board.Snapshot().Streams {
			if s.Name == sc.Name && len(s.Recordings) == 1 && s.Recordings[0].Failed == 1 && s.Recordings[0].Acknowledged == n-1 {
				return nil
			}
		}
		return fmt.Errorf("status %v; want %d acknowledged, 1 lost", ip.board.Snapshot().Streams, n-1)
	})
}

// TestTransportModeServesEveryPublisherWhileCreditsAreShort: two publishers on one stream,
// and Pulsar slower than they are (inflight.max_messages 4: ferry reads again only as
// acknowledgements return). A publishes small messages without pause, so its image always
// has a backlog;
// B then publishes a few messages. Each of ferry's polls starts at the next image, so B's
// messages arrive while A still publishes: a poll that always began with A's image would
// give A every credit an acknowledgement returns, and B none for as long as A keeps up.
func TestTransportModeServesEveryPublisherWhileCreditsAreShort(t *testing.T) {
	const nB, fromB = 20, 1 << 40 // B's payload indices, far from any of A's
	sc, cfg := newTransportConfig(t)
	rs := newStream(t, sc.Channel, sc.StreamID)
	a := rs.newPublication(t)
	w := watchTopic(t, sc.Topic)
	f := startFerry(t, writeConfigWithTop(t, cfg, map[string]any{"inflight": map[string]any{"max_messages": 4}}))
	waitSubscribed(t, f, a)

	stop := make(chan struct{})
	aDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				aDone <- nil
				return
			default:
			}
			// Of one fragment each: while a poll is inside a message of several, it leaves
			// the credits to the next image, and A would not hold them all.
			if _, err := a.offer(sizedPayload(i, 100), 20*time.Second); err != nil {
				aDone <- err
				return
			}
		}
	}()
	defer func() {
		close(stop)
		if err := <-aDone; err != nil {
			t.Errorf("publisher A: %v", err)
		}
	}()
	waitFor(t, f, 30*time.Second, "A's messages arriving", func() error {
		if n := w.distinct(); n < 100 {
			return fmt.Errorf("%d arrived", n)
		}
		return nil
	})

	b := rs.newPublication(t)
	b.publish(t, fromB, fromB+nB)
	waitFor(t, f, 30*time.Second, "B's messages arriving while A publishes", func() error {
		w.check(t)
		got := 0
		for _, r := range w.received() {
			if r.index >= fromB {
				got++
			}
		}
		if got < nB {
			return fmt.Errorf("%d of B's %d arrived (%d messages in all)", got, nB, w.distinct())
		}
		return nil
	})
}

// TestTransportModeCountsMessagesThatBrokeOff: on a channel subscribed with reliable=false,
// the media driver fills what the network lost with padding instead of asking for it again,
// so a message of several fragments can break off before its end. Here the driver drops 5%
// of the data frames it receives (Aeron's own DebugReceiveChannelEndpoint, in a driver of the
// test's own) while a publisher sends 600 messages of three fragments over UDP. Messages
// that broke off are lost (at most once), and each is counted: the status shows them failed
// and the log says so. Every message that reaches Pulsar is whole.
func TestTransportModeCountsMessagesThatBrokeOff(t *testing.T) {
	const n, size = 600, 3 * maxPayload
	own := failOwnArchive(t, lossyReceiver(16))
	sc, cfg := newTransportConfig(t)
	endpoint := fmt.Sprintf("aeron:udp?endpoint=%s:%d", infra.Loopback, freeUDPPort(t))
	sc.Channel = endpoint + "|reliable=false"
	cfg.Streams[0].Channel = sc.Channel
	cfg.Aeron.Dir = own.AeronDir
	pub := failStreamOn(t, failConnectArchiveAt(t, own.AeronDir), endpoint, sc.StreamID).newPublication(t)
	f := startFerry(t, cfg.write(t))
	waitSubscribed(t, f, pub)
	for i := range n {
		if _, err := pub.offer(sizedPayload(i, size), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	var st *messages.RecordingStatus
	waitFor(t, f, 60*time.Second, "messages counted lost, and none pending", func() error {
		s, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
		if err != nil {
			return err
		}
		if st = recordingOf(s, 0); st == nil || st.GetFailed() == 0 || st.GetPendingRecords() != 0 {
			return fmt.Errorf("status %v", st)
		}
		return nil
	})
	if st.GetAcknowledged()+st.GetFailed() > n {
		t.Fatalf("%d acknowledged and %d lost, of %d messages sent", st.GetAcknowledged(), st.GetFailed(), n)
	}
	msgs := readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, int(st.GetAcknowledged()), 30*time.Second)
	for _, m := range msgs {
		if i := indexOf(m.Payload()); i < 0 || i >= n || !bytes.Equal(m.Payload(), sizedPayload(i, size)) {
			t.Fatalf("a message in Pulsar is not one that was sent, whole: %d bytes, index %d", len(m.Payload()), i)
		}
	}
	failMustContain(t, f.Log(), "ferry's log", "messages broke off before their end and are lost")
	s, err := findStream(t, "http://"+cfg.HTTP.Listen, sc.Name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(s.Failures, func(fl *messages.Failure) bool {
		return fl.Kind == "partial" && strings.Contains(fl.Message, "broke off before their end and are lost")
	}) {
		t.Fatalf("the stream's failures %v do not say, as kind partial, that messages broke off", s.Failures)
	}
	// The rest lost their first fragment: the assembler cannot tell those from a message
	// begun before ferry subscribed, and they are not counted (README, transport mode).
	t.Logf("%d messages sent, %d in Pulsar, %d counted lost", n, len(msgs), st.GetFailed())
}

// wantPublishers waits until the transport stream's status counts n publishers, in state
// (any, if empty).
func wantPublishers(t *testing.T, ip *inProcess, stream string, n int32, state, after string) {
	t.Helper()
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(stream)
		if err != nil {
			return err
		}
		r := recordingOf(st, 0)
		switch {
		case r == nil || r.Publishers == nil:
			return fmt.Errorf("no publisher count in the status (state %s, recordings %v)", st.State, st.Recordings)
		case *r.Publishers != n || (state != "" && st.State != state):
			return fmt.Errorf("%s: %d publishers connected, state %s; want %d (state %q, empty for any)", after, *r.Publishers, st.State, n, state)
		}
		return nil
	})
}

// TestTransportStatusCountsTheConnectedPublishers: a transport stream's status says how many
// publications ferry reads from — none before the first publisher, then each as it connects —
// and follows one that leaves; the stream is live throughout.
func TestTransportStatusCountsTheConnectedPublishers(t *testing.T) {
	sc := newStreamConfig(t, "")
	adminMust(t, http.MethodPut, topicPath(sc.Topic), "")
	ip := startInProcess(t, inProcessOptions{transport: true}, sc)
	rs := newStream(t, sc.Channel, sc.StreamID)
	wantPublishers(t, ip, sc.Name, 0, "live", "subscribed, no publisher yet")
	a := rs.newPublication(t)
	wantPublishers(t, ip, sc.Name, 1, "live", "one publisher")
	rs.newPublication(t)
	wantPublishers(t, ip, sc.Name, 2, "live", "a second publisher")
	a.close(t)
	wantPublishers(t, ip, sc.Name, 1, "live", "the first publisher closed")
}

// TestTransportPublisherCountFollowsWhileTheWindowIsFull: Pulsar takes nothing (the producer
// cannot be created), the window fills and the reader stops polling; the status still follows
// a publisher that leaves.
func TestTransportPublisherCountFollowsWhileTheWindowIsFull(t *testing.T) {
	sc := newStreamConfig(t, "")
	ip := startInProcess(t, inProcessOptions{transport: true, maxInflightRecords: 4,
		createProducer: func(actors.ProducerFactory) actors.ProducerFactory {
			return func(pulsar.ProducerOptions) (pulsar.Producer, error) { return nil, errors.New("refused by the test") }
		}}, sc)
	rs := newStream(t, sc.Channel, sc.StreamID)
	a, b := rs.newPublication(t), rs.newPublication(t)
	wantPublishers(t, ip, sc.Name, 2, "", "two publishers")
	a.publish(t, 0, 10)
	eventually.NoError(t, 30*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		if r := recordingOf(st, 0); r == nil || r.PendingRecords != 4 {
			return fmt.Errorf("status %v; want the window of 4 records full", r)
		}
		return nil
	})
	b.close(t)
	wantPublishers(t, ip, sc.Name, 1, "", "the publisher without messages closed, the window full")
}

// TestTransportReaderRestartedBehindASlowerSubscriberSendsNothingTwice: the media driver
// joins a new subscription at the slowest subscriber's position of the stream, and another
// subscriber here reads nothing. When the live reader is restarted (its subscription closed
// under it), its new subscription begins where that one is: every message ferry had sent
// already comes again, and must not be sent again — ferry sends each message once.
func TestTransportReaderRestartedBehindASlowerSubscriberSendsNothingTwice(t *testing.T) {
	const n, more = 20, 5
	sc := newStreamConfig(t, "")
	rs := newStream(t, sc.Channel, sc.StreamID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	slow, err := rs.s.aeron.AddSubscription(ctx, sc.Channel, sc.StreamID, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = slow.Close() })
	ip, subs, pub := transportPublished(t, sc, rs, n)
	if err := subs.get(t, 0).Close(); err != nil {
		t.Fatal(err)
	}
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 1)))
	pub.publish(t, n, n+more)
	eventually.NoError(t, 30*time.Second, func() error {
		if got, err := topicEntries(sc.Topic); err != nil || got < n+more {
			return fmt.Errorf("the topic holds %d messages (%v), want %d", got, err, n+more)
		}
		return nil
	})
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n+more, 30*time.Second), payloads(0, n+more))
	eventually.NoError(t, 10*time.Second, func() error {
		if !ip.logs.contains("already sent") {
			return errors.New("the messages read again and not sent are not reported")
		}
		return nil
	})
}

// TestTransportReaderRestartedBehindAFasterSubscriberSaysWhatItLost: as above, but the
// other subscriber reads eagerly, and messages are published while the restarted reader
// waits to subscribe again. Its new subscription joins where the other one has read to,
// past them: lost (at most once), as if ferry had been down — and said, at error level and
// as a skipped failure with the bytes lost. (Before, nothing said so.) The messages after
// reach Pulsar, each once.
func TestTransportReaderRestartedBehindAFasterSubscriberSaysWhatItLost(t *testing.T) {
	const n, gap, more = 20, 10, 5
	sc := newStreamConfig(t, "")
	rs := newStream(t, sc.Channel, sc.StreamID)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fast, err := rs.s.aeron.AddSubscription(ctx, sc.Channel, sc.StreamID, aeron.ImageHandlers{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fast.Close() }) // after the reading ends (LIFO)
	read := readEagerly(t, fast)
	ip, subs, pub := transportPublished(t, sc, rs, n)
	subs.hold(t)
	if err := subs.get(t, 0).Close(); err != nil {
		t.Fatal(err)
	}
	pub.publish(t, n, n+gap)
	eventually.NoError(t, 30*time.Second, func() error {
		if got := read.Load(); got < n+gap {
			return fmt.Errorf("the other subscriber read %d messages, want %d", got, n+gap)
		}
		return nil
	})
	subs.release()
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 1)))
	pub.publish(t, n+gap, n+gap+more)
	eventually.NoError(t, 30*time.Second, func() error {
		if got, err := topicEntries(sc.Topic); err != nil || got < n+more {
			return fmt.Errorf("the topic holds %d messages (%v), want %d", got, err, n+more)
		}
		return nil
	})
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n+more, 30*time.Second), append(payloads(0, n), payloads(n+gap, n+gap+more)...))
	eventually.NoError(t, 10*time.Second, func() error {
		st, err := ip.status(sc.Name)
		if err != nil {
			return err
		}
		if f := failureOf(st, "skipped"); f == nil || !strings.Contains(f.Message, "bytes published in between are lost") {
			return fmt.Errorf("failures %v; want the messages published while the reader was away said lost", st.Failures)
		}
		if !ip.logs.contains("level=ERROR msg=\"transport mode: the reader subscribed again past where it had read a publication to") {
			return errors.New("the loss is not logged at error level")
		}
		return nil
	})
}

// TestTransportInflightBytesBoundWhatAwaitsAcknowledgement: with every acknowledgement held,
// the live reader hands the producer at most inflight.max_bytes of messages, plus the one
// that straddles the bound — not a whole poll's worth (up to a thousand fragments) past it.
func TestTransportInflightBytesBoundWhatAwaitsAcknowledgement(t *testing.T) {
	const n, size, window = 40, 1024, 4096
	sc := newStreamConfig(t, "")
	pub := newStream(t, sc.Channel, sc.StreamID).newPublication(t)
	adminMust(t, http.MethodPut, topicPath(sc.Topic), "")
	var holding atomic.Bool
	holding.Store(true)
	subs := &subscriptions{}
	ip := startInProcess(t, inProcessOptions{transport: true, plan: holdAcks(&holding), wrapAeron: subs.wrap, maxInflightBytes: window}, sc)
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 0)))
	msgs := make([][]byte, n)
	for i := range msgs {
		msgs[i] = bytes.Repeat([]byte{byte('a' + i%26)}, size)
	}
	pub.publishPayloads(t, msgs)
	p := ip.producer(0)
	bound := window/size + 1
	eventually.NoError(t, 30*time.Second, func() error {
		if k := len(p.Held()); k < window/size {
			return fmt.Errorf("%d messages await acknowledgement; the window holds %d", k, window/size)
		}
		return nil
	})
	eventually.Always(t, time.Second, func() error {
		if k := len(p.Held()); k > bound {
			return fmt.Errorf("%d messages of %d bytes await acknowledgement with a window of %d bytes (at most %d may)", k, size, window, bound)
		}
		return nil
	})
	holding.Store(false)
	eventually.NoError(t, 30*time.Second, func() error {
		p.ReleaseAll() // a send racing the switch is held too
		var stats struct {
			NumberOfEntries int64 `json:"numberOfEntries"`
		}
		if err := adminGet(topicPath(sc.Topic)+"/internalStats", &stats); err != nil {
			return err
		}
		if stats.NumberOfEntries != n {
			return fmt.Errorf("the topic holds %d messages, want %d", stats.NumberOfEntries, n)
		}
		return nil
	})
	assertExactlyOnceInOrder(t, readTopic(t, peers.Pulsar.ServiceURL, sc.Topic, n, 30*time.Second), msgs)
}

// imageJoined is, for eventually, whether ferry's subscription sub has an image of the
// publication yet.
func imageJoined(sub *aeron.Subscription) func() error {
	return func() error {
		if len(sub.Images()) == 0 {
			return errors.New("ferry's subscription has no image of the publication yet")
		}
		return nil
	}
}

// topicEntries is storedEntries for an eventually: an admin API error is returned.
func topicEntries(topic string) (int64, error) {
	var stats struct {
		NumberOfEntries int64 `json:"numberOfEntries"`
	}
	err := adminGet(topicPath(topic)+"/internalStats", &stats)
	return stats.NumberOfEntries, err
}

// readEagerly polls sub on a goroutine of its own until the test ends, as another program
// reading the stream as fast as it can: it returns the count of fragments read.
func readEagerly(t *testing.T, sub *aeron.Subscription) *atomic.Int64 {
	var read atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if k, _ := sub.Poll(func([]byte, aeron.Header) { read.Add(1) }, 100); k == 0 {
				runtime.Gosched()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-stopped })
	return &read
}

// transportPublished starts a transport stream sc whose subscriptions subs records, and
// publishes n messages on a new publication of rs, until the topic holds them.
func transportPublished(t *testing.T, sc streamConfig, rs *recordedStream, n int) (*inProcess, *subscriptions, *publisher) {
	t.Helper()
	pub := rs.newPublication(t)
	adminMust(t, http.MethodPut, topicPath(sc.Topic), "")
	subs := &subscriptions{}
	ip := startInProcess(t, inProcessOptions{transport: true, wrapAeron: subs.wrap}, sc)
	eventually.NoError(t, 30*time.Second, imageJoined(subs.get(t, 0)))
	pub.publish(t, 0, n)
	eventually.NoError(t, 30*time.Second, func() error {
		if got, err := topicEntries(sc.Topic); err != nil || got != int64(n) {
			return fmt.Errorf("the topic holds %d messages (%v), want %d", got, err, n)
		}
		return nil
	})
	return ip, subs, pub
}
