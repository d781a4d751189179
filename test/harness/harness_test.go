package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
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
	client, err := pulsar.NewClient(pulsar.ClientOptions{URL: broker.ServiceURL, Logger: pulsarlog.DefaultNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	topic := fmt.Sprintf("persistent://public/default/harness-%d", time.Now().UnixNano())
	real, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, DisableBatching: true, SendTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	p := Wrap(real, Faults(map[int]Fault{1: Delay(delay), 2: Hold(), 3: Hold(), 4: Fail(nil), 5: Lose(), 6: Hold()}))
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
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for n := range 7 {
		msg, err := reader.Next(ctx)
		if err != nil {
			t.Fatalf("reading message %d: %v", n, err)
		}
		if string(msg.Payload()) != fmt.Sprint(n) {
			t.Fatalf("stored message %d = %q", n, msg.Payload())
		}
	}
}
