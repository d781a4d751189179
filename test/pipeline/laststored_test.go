package pipeline

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"

	"github.com/ferry-bridge/ferry/actors"
)

// TestLastStoredReadsWhatTheBrokerStoredLast: the read a resuming publisher checks lesson 21
// with, against the real broker. An empty topic is empty; then the last message is read —
// producer, properties, checksum — after one message (the first entry of its ledger), after
// three, and after the topic was unloaded (its ledger rolled: the message is the first entry
// of a new ledger, the entry before it in none); on a partitioned topic, in the recording's
// partition only (the producer's router: recording id modulo the partitions it is routed
// by, or the topic's), also after the topic grew; and not at all when the topic has fewer
// partitions than the recording is routed by.
func TestLastStoredReadsWhatTheBrokerStoredLast(t *testing.T) {
	client := newPulsarClient(t, peers.Pulsar.ServiceURL)
	lastStored := actors.LastStoredWith(client)
	sent := map[string]int64{} // messages sent to each topic: the next one's sequence id
	send := func(topic string, n int) {
		t.Helper()
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "last-stored", DisableBatching: true})
		if err != nil {
			t.Fatalf("producer on %s: %v", topic, err)
		}
		defer p.Close()
		for range n {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			seq := sent[topic]
			_, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: payloadFor(int(seq)), SequenceID: &seq, Properties: map[string]string{"n": fmt.Sprint(seq)}})
			cancel()
			sent[topic]++
			if err != nil {
				t.Fatalf("send to %s: %v", topic, err)
			}
		}
	}
	expectBy := func(topic string, rec int64, by, want int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		msg, ok, err := lastStored(ctx, topic, rec, by, 0, nil)
		switch {
		case err != nil:
			t.Fatalf("%s, recording %d: %v", topic, rec, err)
		case want < 0 && ok:
			t.Fatalf("%s, recording %d: read %+v from an empty partition", topic, rec, msg)
		case want < 0:
			return
		case !ok:
			t.Fatalf("%s, recording %d: empty, want message %d", topic, rec, want)
		case msg.Producer != "last-stored" || msg.Properties["n"] != fmt.Sprint(want) ||
			msg.Checksum != crc32.Checksum(payloadFor(want), crc32.MakeTable(crc32.Castagnoli)):
			t.Fatalf("%s, recording %d: read %+v, want message %d (checksum %d) of producer last-stored",
				topic, rec, msg, want, crc32.Checksum(payloadFor(want), crc32.MakeTable(crc32.Castagnoli)))
		}
		t.Logf("%s, recording %d: message %d in %v", topic, rec, want, time.Since(start).Round(time.Millisecond))
	}
	expect := func(topic string, rec int64, want int) { t.Helper(); expectBy(topic, rec, 0, want) }

	topic := newStreamConfig(t, "").Topic
	adminMust(t, http.MethodPut, topicPath(topic), "") // created, empty
	expect(topic, 7, -1)
	send(topic, 1)
	expect(topic, 7, 0)
	send(topic, 2)
	expect(topic, 7, 2)
	type messageID struct{ LedgerID, EntryID int64 }
	var before, after messageID
	if err := adminGet(topicPath(topic)+"/lastMessageId", &before); err != nil || before.EntryID != 2 {
		t.Fatalf("the last message id is %+v (%v), want the third entry of a ledger", before, err)
	}
	adminMust(t, http.MethodPut, topicPath(topic)+"/unload", "")
	send(topic, 1)
	if err := adminGet(topicPath(topic)+"/lastMessageId", &after); err != nil || after.LedgerID == before.LedgerID || after.EntryID != 0 {
		t.Fatalf("after the unload, the last message id is %+v (%v), want the first entry of a ledger after %d", after, err, before.LedgerID)
	}
	expect(topic, 7, 3)

	partitioned := newStreamConfig(t, "").Topic
	adminMust(t, http.MethodPut, topicPath(partitioned)+"/partitions", "2")
	send(partitioned+"-partition-1", 2)
	expect(partitioned, 7, 1)  // 7 mod 2 = 1
	expect(partitioned, 8, -1) // partition 0 is empty

	// Grown to three partitions: a recording routed by two is read where two put it.
	adminMust(t, http.MethodPost, topicPath(partitioned)+"/partitions", "3")
	send(partitioned+"-partition-2", 1)
	expect(partitioned, 8, 0)       // 8 mod 3 = 2
	expectBy(partitioned, 8, 2, -1) // 8 mod 2 = 0, empty
	expectBy(partitioned, 9, 2, 1)  // 9 mod 2 = 1 (9 mod 3 = 0: empty)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := lastStored(ctx, partitioned, 7, 8, 0, nil); err == nil || !strings.Contains(err.Error(), "fewer than the 8 recording 7 is routed by") {
		t.Fatalf("recording 7 routed by 8 partitions, of a topic of 3: err = %v; want the topic's partitions named fewer", err)
	}
}

// TestLastStoredLooksBackPastOtherProducers: the recording's own last message is read also
// when other producers (concurrent publishers' recordings, in one partition) stored after
// it: 20 entries back (the second span looked at), 320 back (the third); a recording with
// no message near the end gets the partition's last, as does one whose last is in an
// earlier ledger (the search ends at the start of the last one). With it come the
// positions and checksums of the recording's messages read back to the one at or below where the sends
// start again (lesson 22): across spans, and no further than that one's span needs. The read
// says whether it went through the partition's first message (StoredMessage.ReachedFirst):
// back to the start of the ledger that holds it, and not once the topic was unloaded (a new
// ledger: the earlier one may hold the recording's messages). Given a message of the
// producer the broker stored, the read goes on from it across the ledger before.
func TestLastStoredLooksBackPastOtherProducers(t *testing.T) {
	client := newPulsarClient(t, peers.Pulsar.ServiceURL)
	lastStored := actors.LastStoredWith(client)
	topic := newStreamConfig(t, "").Topic
	producers := map[string]pulsar.Producer{}
	n := 0
	ids := map[int]pulsar.MessageID{} // the id the broker gave each message
	send := func(rec string, count int) {
		t.Helper()
		p := producers[rec]
		if p == nil {
			var err error
			if p, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: "rec-" + rec, DisableBatching: true}); err != nil {
				t.Fatal(err)
			}
			producers[rec] = p
		}
		for range count {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			id, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: payloadFor(n), Properties: map[string]string{actors.PropRecordingID: rec, actors.PropPosition: fmt.Sprint(n), "n": fmt.Sprint(n)}})
			cancel()
			ids[n] = id
			n++
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	defer func() {
		for _, p := range producers {
			p.Close()
		}
	}()
	// expectKnown reads recording rec's last message from position from, the message of
	// known stored (nil: none known), and wants message want of producer, with the
	// positions of the producer's messages of the recording from ends (ends < 0: none,
	// another recording's message) to want, each with its payload's CRC-32C.
	expectKnown := func(rec int64, from int64, known pulsar.MessageID, producer string, want, ends int) actors.StoredMessage {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		msg, ok, err := lastStored(ctx, topic, rec, 0, from, known)
		if err != nil || !ok || msg.Producer != producer || msg.Properties["n"] != fmt.Sprint(want) {
			t.Fatalf("recording %d: read %+v (ok %t, %v); want message %d of producer %s", rec, msg, ok, err, want, producer)
		}
		var wantEnds []actors.StoredEnd
		for e := ends; ends >= 0 && e <= want; e++ {
			wantEnds = append(wantEnds, actors.StoredEnd{End: int64(e), Checksum: crc32.Checksum(payloadFor(e), crc32.MakeTable(crc32.Castagnoli))})
		}
		if !slices.Equal(msg.Ends, wantEnds) {
			t.Fatalf("recording %d from %d: the recording's messages read back end at %v; want %v", rec, from, msg.Ends, wantEnds)
		}
		return msg
	}
	expect := func(rec int64, from int64, producer string, want, ends int) actors.StoredMessage {
		t.Helper()
		return expectKnown(rec, from, nil, producer, want, ends)
	}
	// reachedFirst wants the read to have gone through the partition's first message, or not.
	reachedFirst := func(msg actors.StoredMessage, want bool) {
		t.Helper()
		if msg.ReachedFirst != want {
			t.Fatalf("the read of message %s went through the partition's first message: %t, want %t", msg.Properties["n"], msg.ReachedFirst, want)
		}
	}
	send("7", 3)                                    // messages 0-2
	send("8", 20)                                   // 3-22
	reachedFirst(expect(7, 0, "rec-7", 2, 0), true) // the second span goes back to the ledger's start
	reachedFirst(expect(8, 3, "rec-8", 22, 3), true)
	send("8", 300) // 23-322
	expect(7, 0, "rec-7", 2, 0)
	expect(9, 0, "rec-8", 322, -1)                         // none of its own: the partition's last
	reachedFirst(expect(8, 3, "rec-8", 322, 3), true)      // back across the three spans
	reachedFirst(expect(8, 310, "rec-8", 322, 307), false) // the first span, 307-322, reaches it: the second is not read
	reachedFirst(expect(8, 300, "rec-8", 322, 67), false)  // the second span, 67-306, reaches it: the third is not read
	// Closed first: a producer the unload makes reconnect while it sends meets the client's
	// own data race (docs/findings.md), which -race reports in this process.
	for rec, p := range producers {
		p.Close()
		delete(producers, rec)
	}
	adminMust(t, http.MethodPut, topicPath(topic)+"/unload", "")
	send("8", 1) // 323, the first entry of a new ledger
	expect(7, 0, "rec-8", 323, -1)
	// Read back to the start of the last ledger only, which does not hold the partition's
	// first message: the earlier ledger may hold the recording's.
	reachedFirst(expect(8, 3, "rec-8", 323, 323), false)
	// From a message the broker is known to have stored, at or below where the read must
	// reach, on across the ledgers before the last (the publisher's furthest stored below a
	// duplicate: the records after it a restart or a reconnect sends again): back to it,
	// every message of the producer after it read.
	reachedFirst(expectKnown(8, 300, ids[300], "rec-8", 323, 300), false)
	expectKnown(7, 2, ids[2], "rec-7", 2, 2)         // none in the last ledger: its last in the one before
	expectKnown(8, 323, ids[300], "rec-8", 323, 323) // the last ledger reaches from: not read before it
}
