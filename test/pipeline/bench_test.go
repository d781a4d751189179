package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/progress"
	"github.com/ferry-bridge/ferry/store"
)

// BenchmarkFerryVersusRawProducer measures ferry end to end — a stopped recording in the
// real archive replayed, published and acknowledged by the real broker, checkpoint
// persisted — beside a bare pulsar-client-go producer sending the same messages with the
// same producer settings (named, explicit sequence ids, batching off, send timeout off,
// deduplication on, the same queue) to the same broker in the same run. It reports both
// rates, their ratio ferry/raw (the target is ≥ 0.9) and the store writes per 100,000
// records. Like the raw producer's, ferry's rate is timed from the moment its producer is
// ready; its whole run, start included (discovery, opening the replay, creating the
// producer), is reported as ferry-total-s. A warm-up send precedes the first size, so the
// broker's JIT favours neither side. Each size runs once, whatever b.N: the runs are
// seconds long.
func BenchmarkFerryVersusRawProducer(b *testing.B) {
	warm := make([]int64, 5000)
	for i := range warm {
		warm[i] = int64(i + 1)
	}
	rawRate(b, bytes.Repeat([]byte{'w'}, 1<<10), warm)
	for _, c := range []struct{ size, n int }{{100, 50_000}, {1 << 10, 40_000}, {16 << 10, 15_000}} {
		b.Run(fmt.Sprintf("%dB", c.size), func(b *testing.B) {
			sc := newStreamConfig(b, "")
			rs, pub := newRecordedStream(b, sc.Channel, sc.StreamID)
			payload := bytes.Repeat([]byte{'f'}, c.size)
			positions := make([]int64, c.n)
			for i := range positions {
				p, err := pub.offer(payload, 10*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				positions[i] = p
			}
			last := positions[c.n-1]
			rs.stopRecording(b, pub)
			watchTopic(b, sc.Topic)

			raw := rawRate(b, payload, positions)

			writes := &failingStore{}
			start := time.Now()
			ip := startInProcess(b, inProcessOptions{
				wrapStore:  func(s store.Store) store.Store { writes.Store = s; return writes },
				checkpoint: progress.CheckpointConfig{EveryRecords: 1000, EveryMs: 10, RetryMinMs: 50, RetryMaxMs: 400},
			}, sc)
			for ip.checkpoint(sc, pub.recordingID).Position != last {
				if time.Since(start) > 5*time.Minute {
					b.Fatalf("ferry did not finish within 5 minutes")
				}
				time.Sleep(2 * time.Millisecond) // polling for the end of a measured run
			}
			total := time.Since(start)
			ip.mu.Lock()
			ready := ip.producedAt
			ip.mu.Unlock()
			ferry := float64(c.n) / time.Since(ready).Seconds()
			b.ReportMetric(total.Seconds(), "ferry-total-s")
			b.ReportMetric(ferry, "ferry-msg/s")
			b.ReportMetric(raw, "raw-msg/s")
			b.ReportMetric(ferry/raw, "ferry/raw")
			b.ReportMetric(float64(writes.saves())*100_000/float64(c.n), "writes/100k")
			b.ReportMetric(ferry*float64(c.size)/1e6, "ferry-MB/s")
		})
	}
}

// rawRate sends payload once per position, with the position as sequence id, through a bare
// producer with ferry's settings to a fresh topic, and returns messages per second.
func rawRate(b *testing.B, payload []byte, positions []int64) float64 {
	b.Helper()
	client := newPulsarClient(b, peers.Pulsar.ServiceURL)
	topic := fmt.Sprintf("persistent://public/default/raw-%d", time.Now().UnixNano())
	watchTopic(b, topic)
	producer, err := client.CreateProducer(pulsar.ProducerOptions{
		Topic:           topic,
		Name:            fmt.Sprintf("raw-%d", time.Now().UnixNano()),
		DisableBatching: true,
		SendTimeout:     -1,
		// ferry holds at most its credits (1,000 records by default) in flight; the raw
		// producer gets the same bound, and blocks on it (it has no credits).
		MaxPendingMessages: 1000,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer producer.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for _, p := range positions {
		seq := p
		wg.Add(1)
		producer.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: payload, SequenceID: &seq},
			func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
				}
				wg.Done()
			})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		b.Fatalf("raw send failed: %v", firstErr)
	}
	return float64(len(positions)) / elapsed.Seconds()
}
