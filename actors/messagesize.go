package actors

import (
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// brokerSize is the size of the message a publisher sends for a payload of payload bytes,
// as the broker holds it to a topic's maxMessageSize policy (Pulsar 4.0,
// PersistentTopic.isExceedMaximumMessageSize: the frame after its command): the magic
// number (2 bytes) and checksum (4), the metadata's size (4) and the metadata, and the
// payload. The metadata is what pulsar-client-go v0.19.0 writes for an unbatched,
// uncompressed message (producer_partition.go genMetadata, updateMetadataSeqID): the
// producer's name, the sequence id, the publish time, the properties and the uncompressed
// size (PulsarApi.proto MessageMetadata fields 1, 2, 3, 4 and 9). The pipeline tests hold
// it to a real broker at the byte (TestARecordOverTheTopicsMaxMessageSizeStopsTheStream).
func brokerSize(producer string, seq uint64, props map[string]string, payload int) int {
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(producer)) +
		protowire.SizeTag(2) + protowire.SizeVarint(seq) +
		protowire.SizeTag(3) + protowire.SizeVarint(uint64(time.Now().UnixMilli())) +
		protowire.SizeTag(9) + protowire.SizeVarint(uint64(uint32(payload)))
	for k, v := range props {
		kv := protowire.SizeTag(1) + protowire.SizeBytes(len(k)) + protowire.SizeTag(2) + protowire.SizeBytes(len(v))
		n += protowire.SizeTag(4) + protowire.SizeBytes(kv)
	}
	return 2 + 4 + 4 + n + payload
}
