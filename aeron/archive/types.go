package archive

import (
	"fmt"

	"github.com/ferry-bridge/ferry/aeron/archive/internal/codec"
	"github.com/ferry-bridge/ferry/aeron/channel"
)

// NullPosition is the archive's "no position": the stop position of a live recording, the
// recording position of one no longer recorded.
const NullPosition = codec.NullPosition

// ReplayToEnd as a replay length replays the whole recording and, for a live recording,
// follows it until it stops.
const ReplayToEnd = codec.NullLength

// RecordingDescriptor is the archive's catalog entry for one recording.
type RecordingDescriptor struct {
	RecordingID       int64
	StartTimestampMs  int64 // Unix epoch milliseconds
	StopTimestampMs   int64 // Unix epoch milliseconds, or NullPosition while live
	StartPosition     int64 // need not be 0: recording starts at the image's join position
	StopPosition      int64 // NullPosition while the recording is live
	InitialTermID     int32
	SegmentFileLength int32
	TermBufferLength  int32
	MTULength         int32
	SessionID         int32 // the recorded publication's session id
	StreamID          int32
	StrippedChannel   string
	OriginalChannel   string
	SourceIdentity    string
}

// ContinuationChannel returns base set up to continue the stopped recording d (for
// [Client.ExtendRecording]): a publication on it starts at d's stop position, with d's
// initial term id, term length and MTU.
func (d RecordingDescriptor) ContinuationChannel(base channel.URI) (channel.URI, error) {
	if d.IsLive() {
		return channel.URI{}, fmt.Errorf("recording %d is live: only a stopped recording can be continued", d.RecordingID)
	}
	return channel.BuilderFrom(base).InitialPosition(d.StopPosition, d.InitialTermID, d.TermBufferLength).MTU(d.MTULength).Build()
}

// IsLive reports whether the recording was still being recorded when described.
func (d RecordingDescriptor) IsLive() bool { return d.StopPosition == NullPosition }

func descriptorFrom(m codec.RecordingDescriptor) RecordingDescriptor {
	return RecordingDescriptor{
		RecordingID:       m.RecordingID,
		StartTimestampMs:  m.StartTimestamp,
		StopTimestampMs:   m.StopTimestamp,
		StartPosition:     m.StartPosition,
		StopPosition:      m.StopPosition,
		InitialTermID:     m.InitialTermID,
		SegmentFileLength: m.SegmentFileLength,
		TermBufferLength:  m.TermBufferLength,
		MTULength:         m.MTULength,
		SessionID:         m.SessionID,
		StreamID:          m.StreamID,
		StrippedChannel:   m.StrippedChannel,
		OriginalChannel:   m.OriginalChannel,
		SourceIdentity:    m.SourceIdentity,
	}
}

// SignalKind is what happened to a recording.
type SignalKind = codec.RecordingSignal

// The recording signals.
const (
	SignalStart        = codec.SignalStart
	SignalStop         = codec.SignalStop
	SignalExtend       = codec.SignalExtend
	SignalReplicate    = codec.SignalReplicate
	SignalMerge        = codec.SignalMerge
	SignalSync         = codec.SignalSync
	SignalDelete       = codec.SignalDelete
	SignalReplicateEnd = codec.SignalReplicateEnd
)

// Signal is a recording signal from the archive: a recording of this session started,
// stopped, was extended, truncated or deleted …
type Signal struct {
	Kind           SignalKind
	RecordingID    int64
	SubscriptionID int64 // the archive's recording subscription
	Position       int64 // START: the join position; STOP: the final recorded position
	// Dropped counts signals lost just before this one because the consumer of
	// [Client.Signals] fell behind; when it is not zero, re-list what you track.
	Dropped uint64
}

// SourceLocation says where a recorded publication is: in this media driver (LOCAL, the
// archive records it as a spy) or remote (REMOTE, it arrives over the network).
type SourceLocation = codec.SourceLocation

// The source locations.
const (
	SourceLocal  = codec.SourceLocal
	SourceRemote = codec.SourceRemote
)

// ReplayImageSessionID is the session id of a replay's image: the low 32 bits of the
// replay session id [Client.StartReplay] returns.
func ReplayImageSessionID(replaySessionID int64) int32 { return int32(replaySessionID) }
