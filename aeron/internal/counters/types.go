package counters

import "fmt"

// CounterID identifies a counter: its index in the values and metadata
// buffers.
type CounterID int32

// NullCounterID means "no counter" (Aeron's NULL_COUNTER_ID), e.g. the
// channel status of an IPC subscription, which has none.
const NullCounterID CounterID = -1

// RecordState is the state word of a metadata record.
type RecordState int32

const (
	// StateUnused: the record was never allocated. Counters are allocated
	// in id order, so iteration stops at the first unused record.
	StateUnused RecordState = 0
	// StateAllocated: the counter is live.
	StateAllocated RecordState = 1
	// StateReclaimed: the counter was freed; its id may be reused after
	// its free-for-reuse deadline.
	StateReclaimed RecordState = -1
)

// String returns the state's name.
func (s RecordState) String() string {
	switch s {
	case StateUnused:
		return "unused"
	case StateAllocated:
		return "allocated"
	case StateReclaimed:
		return "reclaimed"
	default:
		return fmt.Sprintf("RecordState(%d)", int32(s))
	}
}

// TypeID identifies what a counter counts and the layout of its key
// (Aeron's AeronCounters).
type TypeID int32

// Counter type ids of the media driver and the archive.
const (
	TypeSystemCounter            TypeID = 0
	TypePublisherLimit           TypeID = 1 // "pub-lmt"; stream key
	TypeSenderPosition           TypeID = 2 // stream key
	TypeReceiverHWM              TypeID = 3 // stream key
	TypeSubscriberPosition       TypeID = 4 // "sub-pos"; stream key
	TypeReceiverPosition         TypeID = 5 // stream key
	TypeSendChannelStatus        TypeID = 6
	TypeReceiveChannelStatus     TypeID = 7
	TypeSenderLimit              TypeID = 9 // stream key
	TypePerImage                 TypeID = 10
	TypeClientHeartbeat          TypeID = 11 // "client-heartbeat"; heartbeat key
	TypePublisherPosition        TypeID = 12 // "pub-pos (sampled)"; stream key
	TypeSenderBPE                TypeID = 13
	TypeLocalSocketAddressStatus TypeID = 14 // local socket key
	TypeNameResolverNeighbors    TypeID = 15
	TypeNameResolverCacheEntries TypeID = 16
	TypeFlowControlReceivers     TypeID = 17
	TypeMDCDestinations          TypeID = 18
	TypeRecordingPosition        TypeID = 100 // "rec-pos"; recording position key
	TypeArchiveErrorCount        TypeID = 101
	TypeArchiveControlSessions   TypeID = 102
)

var typeNames = map[TypeID]string{
	TypeSystemCounter:            "system counter",
	TypePublisherLimit:           "publisher limit",
	TypeSenderPosition:           "sender position",
	TypeReceiverHWM:              "receiver high-water mark",
	TypeSubscriberPosition:       "subscriber position",
	TypeReceiverPosition:         "receiver position",
	TypeSendChannelStatus:        "send channel status",
	TypeReceiveChannelStatus:     "receive channel status",
	TypeSenderLimit:              "sender limit",
	TypePerImage:                 "per-image",
	TypeClientHeartbeat:          "client heartbeat",
	TypePublisherPosition:        "publisher position",
	TypeSenderBPE:                "sender back-pressure events",
	TypeLocalSocketAddressStatus: "local socket address status",
	TypeNameResolverNeighbors:    "name resolver neighbors",
	TypeNameResolverCacheEntries: "name resolver cache entries",
	TypeFlowControlReceivers:     "flow control receivers",
	TypeMDCDestinations:          "MDC destinations",
	TypeRecordingPosition:        "recording position",
	TypeArchiveErrorCount:        "archive error count",
	TypeArchiveControlSessions:   "archive control sessions",
}

// String returns the type's name, or "TypeID(n)" for one ferry does not
// know.
func (t TypeID) String() string {
	if name, ok := typeNames[t]; ok {
		return name
	}
	return fmt.Sprintf("TypeID(%d)", int32(t))
}

// ChannelStatus is the value of a send or receive channel status counter.
type ChannelStatus int64

const (
	// ChannelErrored: the channel failed; the driver's error log says why.
	ChannelErrored ChannelStatus = -1
	// ChannelInitializing: the channel is being set up.
	ChannelInitializing ChannelStatus = 0
	// ChannelActive: the channel is up.
	ChannelActive ChannelStatus = 1
	// ChannelClosing: the channel is being closed.
	ChannelClosing ChannelStatus = 2
)

// String returns the status's name.
func (s ChannelStatus) String() string {
	switch s {
	case ChannelErrored:
		return "errored"
	case ChannelInitializing:
		return "initializing"
	case ChannelActive:
		return "active"
	case ChannelClosing:
		return "closing"
	default:
		return fmt.Sprintf("ChannelStatus(%d)", int64(s))
	}
}
