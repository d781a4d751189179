package test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// BenchmarkRawPulsarProducer is the baseline ferry's end-to-end throughput is measured
// against: a bare pulsar-client-go producer, with the settings ferry publishes with
// (named, explicit sequence ids, batching off, send timeout off, deduplication on), sending
// asynchronously to the same real broker. It reports bytes/s through b.SetBytes.
func BenchmarkRawPulsarProducer(b *testing.B) {
	for _, size := range []int{100, 1 << 10, 16 << 10} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			client := newPulsarClient(b, peers.Pulsar.ServiceURL)
			topic := uniqueTopic(b)
			producer := newDedupProducer(b, client, topic, "ferry-bench")
			defer producer.Close()
			waitDeduplicationEnabled(b, peers.Pulsar.AdminURL, topic)
			payload := make([]byte, size)

			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				firstErr error
			)
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				seq := int64(i)
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
			b.StopTimer()
			if firstErr != nil {
				b.Fatalf("send failed: %v", firstErr)
			}
		})
	}
}
