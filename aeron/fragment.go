package aeron

import "github.com/ferry-bridge/ferry/aeron/internal/logbuffer"

// Header describes a delivered fragment (or, through a [FragmentAssembler], a whole
// message): session, stream, term id and offset, flags, reserved value, and Position, the
// stream position just after it. Like the payload it is a view, valid only during the
// handler call: keep the values you need, or Frame(), a decoded copy of the frame header.
type Header = logbuffer.Header

// FrameHeader is a decoded copy of a frame header ([Header.Frame]): a value to keep.
type FrameHeader = logbuffer.FrameHeader

// Flags are a frame's fragmentation and end-of-stream flags ([Header.Flags]).
type Flags = logbuffer.Flags

// FrameType is a frame's type ([Header.Type]).
type FrameType = logbuffer.FrameType

// FragmentHandler receives one fragment per call. The payload is a view into the log
// buffer, valid only during the call: copy what you keep.
type FragmentHandler = logbuffer.FragmentHandler

// ControlledFragmentHandler receives one fragment per call and says what the poll does
// next: [Continue], [Break] (stop after this fragment), [Abort] (stop and deliver it
// again next time) or [Commit] (consume it and store the position now).
type ControlledFragmentHandler = logbuffer.ControlledFragmentHandler

// Action is a [ControlledFragmentHandler]'s decision.
type Action = logbuffer.Action

// The actions of a controlled poll.
const (
	Continue = logbuffer.Continue
	Abort    = logbuffer.Abort
	Break    = logbuffer.Break
	Commit   = logbuffer.Commit
)

// FragmentAssembler reassembles fragmented messages per session and hands whole messages
// to its handler; pass its OnFragment method to Poll. It belongs to the polling goroutine.
type FragmentAssembler = logbuffer.FragmentAssembler

// AssemblerStats are a [FragmentAssembler]'s counts: messages delivered, messages dropped
// unfinished, fragments without their message's beginning.
type AssemblerStats = logbuffer.AssemblerStats

// NewFragmentAssembler returns an assembler delivering whole messages of up to
// maxMessageLength bytes (a publication's [ExclusivePublication.MaxMessageLength], or
// [Image.MaxMessageLength]) to h.
func NewFragmentAssembler(maxMessageLength int, h FragmentHandler) *FragmentAssembler {
	return logbuffer.NewFragmentAssembler(maxMessageLength, h)
}

// BufferPool recycles the buffers a [FragmentAssembler] hands over (see
// [FragmentAssembler.UsePool]): a handler gives each back with Put once nothing reads it any
// more. Its zero value is ready to use; it is safe for concurrent use.
type BufferPool = logbuffer.BufferPool
