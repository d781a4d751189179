package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	pulsarlog "github.com/apache/pulsar-client-go/pulsar/log"

	"github.com/ferry-bridge/ferry/test/eventually"
	"github.com/ferry-bridge/ferry/test/infra"
)

// TestRealPulsarDeduplicatesBySequenceID proves the broker deduplicates what ferry relies
// on: a named producer with explicit sequence ids, no batching, no send timeout. 1,000
// messages are stored once each; 500 of them re-sent by a new producer of the same name
// (ferry after a restart) come back as duplicate receipts (ledger and entry -1) and are not
// stored again; a consumer reads exactly the 1,000, in order.
func TestRealPulsarDeduplicatesBySequenceID(t *testing.T) {
	const total, resendFrom, resendTo = 1000, 250, 750
	ctx := context.Background()
	topic := uniqueTopic(t)
	client := newPulsarClient(t, peers.Pulsar.ServiceURL)

	consumer, err := client.Subscribe(pulsar.ConsumerOptions{
		Topic:                       topic,
		SubscriptionName:            "verify",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest,
	})
	if err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	defer consumer.Close()

	producer := newDedupProducer(t, client, topic, "ferry-proof")
	waitDeduplicationEnabled(t, peers.Pulsar.AdminURL, topic)
	for seq := int64(0); seq < total; seq++ {
		id := send(t, producer, seq)
		if isDuplicateReceipt(id) {
			t.Fatalf("first send of sequence %d came back as a duplicate: %v", seq, id)
		}
	}
	producer.Close()

	again := newDedupProducer(t, client, topic, "ferry-proof")
	defer again.Close()
	for seq := int64(resendFrom); seq < resendTo; seq++ {
		if id := send(t, again, seq); !isDuplicateReceipt(id) {
			t.Fatalf("re-sent sequence %d was stored again as %v; want a duplicate receipt (ledger and entry -1)", seq, id)
		}
	}

	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for want := int64(0); want < total; want++ {
		msg, err := consumer.Receive(rctx)
		if err != nil {
			t.Fatalf("receive message %d of %d: %v", want, total, err)
		}
		checkMessage(t, msg, want)
		if err := consumer.Ack(msg); err != nil {
			t.Fatalf("ack: %v", err)
		}
	}
	// The broker's own count of stored entries: nothing beyond the 1,000 was written.
	if n := storedEntries(t, peers.Pulsar.AdminURL, topic); n != total {
		t.Fatalf("topic holds %d entries, want %d", n, total)
	}
}

// TestRealPulsarKeepsAcknowledgedMessagesAcrossKill9 proves a broker killed with kill -9
// and restarted on the same data still serves every message it acknowledged, and still
// knows the producer's last sequence id (the bookie journals entries before acknowledging
// them: see journalWriteData in test/infra/pulsar.go).
func TestRealPulsarKeepsAcknowledgedMessagesAcrossKill9(t *testing.T) {
	const total = 1000
	ctx := context.Background()
	broker := startOwnPulsar(t)
	topic := uniqueTopic(t)

	client := newPulsarClient(t, broker.ServiceURL)
	producer := newDedupProducer(t, client, topic, "ferry-durable")
	waitDeduplicationEnabled(t, broker.AdminURL, topic)
	for seq := int64(0); seq < total; seq++ {
		send(t, producer, seq)
	}
	// Every message above was acknowledged. Close the client first: pulsar-client-go
	// v0.19.0 can leave a producer closed while it is reconnecting registered on the broker
	// (reconnectToBroker's grabCnx races Close), which would hold the name after the
	// restart. Then crash the broker without letting it flush.
	producer.Close()
	client.Close()
	if err := broker.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := broker.Restart(ctx); err != nil {
		t.Fatalf("restart after kill -9: %v", err)
	}
	t.Logf("pulsar restarted after kill -9 in %s (%d process(es))", broker.StartupTime.Round(time.Millisecond), broker.StartAttempts)

	client = newPulsarClient(t, broker.ServiceURL)
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatalf("reader: %v", err)
	}
	defer reader.Close()
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for want := int64(0); want < total; want++ {
		msg, err := reader.Next(rctx)
		if err != nil {
			t.Fatalf("after kill -9: read message %d of %d: %v", want, total, err)
		}
		checkMessage(t, msg, want)
	}

	producer = newDedupProducer(t, client, topic, "ferry-durable")
	defer producer.Close()
	if id := send(t, producer, total-1); !isDuplicateReceipt(id) {
		t.Errorf("after kill -9 the broker stored sequence %d again (%v): its dedup state was lost", total-1, id)
	}
	if id := send(t, producer, total); isDuplicateReceipt(id) {
		t.Errorf("after kill -9 a new sequence %d was taken for a duplicate", total)
	}
}

// startOwnPulsar starts a broker only this test uses, for tests that crash it. Its logs are
// kept when the test fails.
func startOwnPulsar(t *testing.T) *infra.Pulsar {
	t.Helper()
	dir, err := infra.NewRunDir()
	if err != nil {
		t.Fatal(err)
	}
	broker, err := infra.StartPulsar(context.Background(), infra.PulsarOptions{Dir: filepath.Join(dir, "pulsar")})
	if err != nil {
		t.Fatalf("%v\n(logs kept in %s)", err, dir)
	}
	t.Logf("own pulsar ready in %s (%s)", broker.StartupTime.Round(time.Millisecond), dir)
	t.Cleanup(func() {
		if err := broker.Stop(); err != nil {
			t.Errorf("stop own pulsar: %v", err)
		}
		if t.Failed() {
			t.Logf("own pulsar log tail (%s):\n%s", broker.Log(), broker.LogTail())
			return
		}
		_ = os.RemoveAll(dir)
	})
	return broker
}

func uniqueTopic(t testing.TB) string {
	// Subtest names hold '/', which would nest the topic path.
	name := strings.ReplaceAll(t.Name(), "/", "-")
	return fmt.Sprintf("persistent://public/default/%s-%d", name, time.Now().UnixNano())
}

func newPulsarClient(t testing.TB, url string) pulsar.Client {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:              url,
		OperationTimeout: 30 * time.Second,
		Logger: pulsarlog.NewLoggerWithSlog(slog.New(slog.NewTextHandler(os.Stderr,
			&slog.HandlerOptions{Level: slog.LevelWarn}))),
	})
	if err != nil {
		t.Fatalf("pulsar client: %v", err)
	}
	t.Cleanup(client.Close)
	return client
}

// newDedupProducer creates a producer with the settings ferry uses with deduplication: a
// fixed name, batching off (a Go batch is deduplicated on its lowest id only), and no send
// timeout (an expired send leaves a gap that dedup turns into loss).
//
// The broker allows one connected producer per name; after a crash the previous session's
// producer can stay registered for a while (until its connection is found dead), so creation
// is retried while the broker answers ProducerBusy.
func newDedupProducer(t testing.TB, client pulsar.Client, topic, name string) pulsar.Producer {
	t.Helper()
	var p pulsar.Producer
	eventually.NoError(t, 30*time.Second, func() error {
		var err error
		p, err = client.CreateProducer(pulsar.ProducerOptions{
			Topic:           topic,
			Name:            name,
			DisableBatching: true,
			SendTimeout:     -1,
		})
		// pulsar-client-go v0.19.0 has no typed error for it: the broker's answer arrives
		// as "server error: ProducerBusy: …".
		if err != nil && !strings.Contains(err.Error(), "ProducerBusy") {
			t.Fatalf("create producer %q: %v", name, err)
		}
		return err
	})
	return p
}

func send(t *testing.T, p pulsar.Producer, seq int64) pulsar.MessageID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, err := p.Send(ctx, &pulsar.ProducerMessage{
		Payload:    []byte(payloadOf(seq)),
		SequenceID: &seq,
		Properties: map[string]string{"seq": strconv.FormatInt(seq, 10)},
	})
	if err != nil {
		t.Fatalf("send sequence %d: %v", seq, err)
	}
	return id
}

func payloadOf(seq int64) string { return fmt.Sprintf("message %06d", seq) }

// isDuplicateReceipt reports the broker's answer to a message it already stored: success
// with ledger and entry id -1.
func isDuplicateReceipt(id pulsar.MessageID) bool {
	return id.LedgerID() == -1 && id.EntryID() == -1
}

func checkMessage(t *testing.T, msg pulsar.Message, want int64) {
	t.Helper()
	if got := string(msg.Payload()); got != payloadOf(want) {
		t.Fatalf("message %d: payload %q, want %q (out of order, lost or duplicated)", want, got, payloadOf(want))
	}
	if got := msg.Properties()["seq"]; got != strconv.FormatInt(want, 10) {
		t.Fatalf("message %d: property seq = %q", want, got)
	}
}

// waitDeduplicationEnabled waits until the broker reports deduplication active on the topic:
// until then every message counts as new.
func waitDeduplicationEnabled(t testing.TB, adminURL, topic string) {
	t.Helper()
	eventually.NoError(t, 30*time.Second, func() error {
		var stats struct {
			DeduplicationStatus string `json:"deduplicationStatus"`
		}
		if err := adminGet(adminURL, topicPath(topic)+"/stats", &stats); err != nil {
			return err
		}
		if stats.DeduplicationStatus != "Enabled" {
			return fmt.Errorf("deduplicationStatus = %q", stats.DeduplicationStatus)
		}
		return nil
	})
}

// storedEntries is the number of entries the broker holds for a non-partitioned topic.
func storedEntries(t *testing.T, adminURL, topic string) int64 {
	t.Helper()
	var stats struct {
		NumberOfEntries int64 `json:"numberOfEntries"`
	}
	if err := adminGet(adminURL, topicPath(topic)+"/internalStats", &stats); err != nil {
		t.Fatal(err)
	}
	return stats.NumberOfEntries
}

// topicPath turns persistent://tenant/ns/topic into the admin API's path for it.
func topicPath(topic string) string {
	const scheme = "persistent://"
	return "/admin/v2/persistent/" + topic[len(scheme):]
}

func adminGet(adminURL, path string, into any) error {
	resp, err := http.Get(adminURL + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", path, resp.Status, body)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return errors.Join(fmt.Errorf("GET %s: decode %s", path, body), err)
	}
	return nil
}

// TestABrokerStoppedGracefullyLeavesNoBookieRegistrationBehind pins the fact
// infra.Pulsar.Restart relies on to get out of the bookie's registration-lock loop
// (docs/findings.md): after kill -9 the standalone's RocksDB metadata store keeps the dead
// bookie's registration, which the next start deletes before it registers — the delete whose
// late notification can set the lock invalidating itself for ever. After a graceful stop
// (SIGTERM) nothing is left to delete, so a start that follows one cannot enter the loop.
func TestABrokerStoppedGracefullyLeavesNoBookieRegistrationBehind(t *testing.T) {
	broker := startOwnPulsar(t)
	for _, c := range []struct {
		how       string
		stop      func() error
		wantStale bool
	}{
		{"kill -9", broker.Kill, true},
		{"SIGTERM", broker.Stop, false},
	} {
		if err := c.stop(); err != nil {
			t.Fatalf("%s: %v", c.how, err)
		}
		mark := logSize(t, broker.Log())
		if err := broker.Restart(context.Background()); err != nil {
			t.Fatalf("restart after %s: %v", c.how, err)
		}
		// Restart notes each start it stopped for looping: the first start met what c.stop
		// left, each later one what the graceful stop of the start before it left.
		starts := strings.Split(logFrom(t, broker.Log(), mark), "never became healthy")
		t.Logf("after %s: %d start(s)", c.how, len(starts))
		for i, start := range starts {
			want := c.wantStale && i == 0
			if got, ok := registrationDeleted(start); !ok {
				t.Errorf("after %s, start %d: the bookie's registration is not in the broker's log", c.how, i+1)
			} else if got != want {
				t.Errorf("after %s, start %d: the bookie found an old registration to delete: %v, want %v", c.how, i+1, got, want)
			}
		}
	}
}

// registrationDeleted tells whether the bookie whose start log is given deleted an existing
// registration of its own before it registered (ok: the log shows it registering).
func registrationDeleted(log string) (deleted, ok bool) {
	from := strings.Index(log, "RegisterBookie ")
	if from < 0 {
		return false, false
	}
	log = log[from:]
	to := strings.Index(log, "Acquired resource lock on /ledgers/available/")
	if to < 0 {
		return false, false
	}
	return strings.Contains(log[:to], "Deleting path: /ledgers/available/"), true
}

func logSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// logFrom returns what path holds from offset on.
func logFrom(t *testing.T, path string, offset int64) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[min(offset, int64(len(b))):])
}
