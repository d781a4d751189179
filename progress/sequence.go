package progress

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxStreamNameLen bounds a stream name so that a producer name stays short.
const MaxStreamNameLen = 128

// producerPrefix starts every producer name made by [ProducerName].
const producerPrefix = "ferry-"

// SequenceID returns the Pulsar sequence id of the record ending at end in
// its recording: the end position itself. It is monotonic within the
// recording and identical on every replay of the record, whatever position
// the replay resumed from, so broker deduplication recognises a re-delivered
// record (lesson 20). Positions restart in every recording, so a sequence id
// is only meaningful for the producer of its own recording ([ProducerName]).
// end must be > 0: every record has a non-empty extent.
func SequenceID(end int64) (int64, error) {
	if end <= 0 {
		return 0, fmt.Errorf("sequence id of end position %d: %w", end, ErrInvalidPosition)
	}
	return end, nil
}

// ValidateStreamName returns an error wrapping [ErrInvalidStreamName] unless
// name is 1 to [MaxStreamNameLen] characters from [A-Za-z0-9._-].
func ValidateStreamName(name string) error {
	if name == "" || len(name) > MaxStreamNameLen {
		return fmt.Errorf("stream name of %d bytes, want 1 to %d: %w", len(name), MaxStreamNameLen, ErrInvalidStreamName)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("stream name %q: byte %#x at %d: %w", name, c, i, ErrInvalidStreamName)
		}
	}
	return nil
}

// ProducerName returns the Pulsar producer name for one recording of one
// stream: "ferry-<stream>-<recordingId>", recordingId in decimal. There must
// be exactly one producer per (stream, recording): its sequence ids
// ([SequenceID]) restart with the recording's positions, and Pulsar allows
// one connected producer per name, which also keeps two ferry instances from
// publishing the same recording at once. The name is deterministic and
// injective: distinct (stream, recording) pairs never share a name, because
// the recording id, which has no '-', follows the last '-'.
func ProducerName(stream string, recordingID int64) (string, error) {
	if err := ValidateStreamName(stream); err != nil {
		return "", err
	}
	if recordingID < 0 {
		return "", fmt.Errorf("producer name for recording %d: %w", recordingID, ErrInvalidRecordingID)
	}
	return producerPrefix + stream + "-" + strconv.FormatInt(recordingID, 10), nil
}

// ParseProducerName inverts [ProducerName]. It returns an error wrapping
// [ErrInvalidProducerName] for any name ProducerName cannot return.
func ParseProducerName(name string) (stream string, recordingID int64, err error) {
	rest, ok := strings.CutPrefix(name, producerPrefix)
	i := strings.LastIndexByte(rest, '-')
	if !ok || i < 0 {
		return "", 0, fmt.Errorf("producer name %q: %w", name, ErrInvalidProducerName)
	}
	stream, digits := rest[:i], rest[i+1:]
	id, perr := strconv.ParseInt(digits, 10, 64)
	if perr != nil || id < 0 || strconv.FormatInt(id, 10) != digits || ValidateStreamName(stream) != nil {
		return "", 0, fmt.Errorf("producer name %q: %w", name, ErrInvalidProducerName)
	}
	return stream, id, nil
}
