package logbuffer

import (
	"fmt"
	"strings"
)

// FrameType is the type field of an Aeron frame header. Only [FrameTypePad]
// and [FrameTypeData] appear in log buffers; the others are the UDP
// protocol's control frames and are listed so that String can name them.
type FrameType uint16

// Frame types (HeaderFlyweight HDR_TYPE_*).
const (
	FrameTypePad            FrameType = 0x00   // padding: fills the end of a term; readers skip it
	FrameTypeData           FrameType = 0x01   // data: one message or one fragment of a message
	FrameTypeNAK            FrameType = 0x02   // negative acknowledgement (UDP)
	FrameTypeStatusMessage  FrameType = 0x03   // status message: receiver position and window (UDP)
	FrameTypeError          FrameType = 0x04   // error (UDP)
	FrameTypeSetup          FrameType = 0x05   // stream setup (UDP)
	FrameTypeRTTMeasurement FrameType = 0x06   // round-trip time measurement (UDP)
	FrameTypeResolution     FrameType = 0x07   // name resolution (UDP)
	FrameTypeResponseSetup  FrameType = 0x0B   // response-channel setup (UDP)
	FrameTypeExtension      FrameType = 0xFFFF // extension (UDP)
)

// String returns the Aeron name of the type, such as "PAD" or "DATA", or
// "FrameType(0x…)" for an unknown value.
func (t FrameType) String() string {
	switch t {
	case FrameTypePad:
		return "PAD"
	case FrameTypeData:
		return "DATA"
	case FrameTypeNAK:
		return "NAK"
	case FrameTypeStatusMessage:
		return "SM"
	case FrameTypeError:
		return "ERR"
	case FrameTypeSetup:
		return "SETUP"
	case FrameTypeRTTMeasurement:
		return "RTTM"
	case FrameTypeResolution:
		return "RES"
	case FrameTypeResponseSetup:
		return "RSP_SETUP"
	case FrameTypeExtension:
		return "EXT"
	default:
		return fmt.Sprintf("FrameType(%#x)", uint16(t))
	}
}

// Flags is the flags byte of a data frame header.
type Flags uint8

// Data frame flags (DataHeaderFlyweight *_FLAG).
const (
	// FlagBegin marks the first fragment of a message.
	FlagBegin Flags = 0x80
	// FlagEnd marks the last fragment of a message.
	FlagEnd Flags = 0x40
	// FlagEOS marks the end of the stream (set by UDP publishers on their
	// last frame).
	FlagEOS Flags = 0x20
	// FlagsUnfragmented marks a message carried whole in one frame.
	FlagsUnfragmented = FlagBegin | FlagEnd
)

// IsBegin reports whether the frame is the first fragment of a message.
func (f Flags) IsBegin() bool { return f&FlagBegin != 0 }

// IsEnd reports whether the frame is the last fragment of a message.
func (f Flags) IsEnd() bool { return f&FlagEnd != 0 }

// IsUnfragmented reports whether the frame carries a whole message.
func (f Flags) IsUnfragmented() bool { return f&FlagsUnfragmented == FlagsUnfragmented }

// IsEOS reports whether the end-of-stream flag is set.
func (f Flags) IsEOS() bool { return f&FlagEOS != 0 }

// String lists the set flags, such as "BEGIN|END", with any unknown bits
// in hex; "0" if none is set.
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var names []string
	for _, n := range []struct {
		flag Flags
		name string
	}{{FlagBegin, "BEGIN"}, {FlagEnd, "END"}, {FlagEOS, "EOS"}} {
		if f&n.flag != 0 {
			names = append(names, n.name)
			f &^= n.flag
		}
	}
	if f != 0 {
		names = append(names, fmt.Sprintf("%#x", uint8(f)))
	}
	return strings.Join(names, "|")
}
