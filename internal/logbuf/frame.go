package logbuf

import "encoding/binary"

// Wire constants of the Aeron data frame header. They are part of the format
// that Aeron's driver, archive and tools read: never change them.
const (
	// HeaderLength is the length of a data frame header; the payload starts
	// right after it (Aeron's DATA_OFFSET).
	HeaderLength = 32
	// FrameAlignment is the alignment of every frame inside a term.
	FrameAlignment = 32

	// Field offsets inside the header.
	FrameLengthFieldOffset = 0
	VersionFieldOffset     = 4
	FlagsFieldOffset       = 5
	TypeFieldOffset        = 6
	TermOffsetFieldOffset  = 8
	SessionIDFieldOffset   = 12
	StreamIDFieldOffset    = 16
	TermIDFieldOffset      = 20
	ReservedValueOffset    = 24

	// CurrentVersion is the protocol version written into new frames.
	CurrentVersion = 0

	// Frame flags.
	FlagBegin               = 0x80
	FlagEnd                 = 0x40
	FlagEOS                 = 0x20
	FlagUnfragmented        = FlagBegin | FlagEnd
	TypePad          uint16 = 0x00
	TypeData         uint16 = 0x01
)

// FrameHeader is a decoded data frame header. It is a plain value for tools
// and tests; the publication and image work on the term bytes directly.
type FrameHeader struct {
	FrameLength   int32
	Version       uint8
	Flags         uint8
	Type          uint16
	TermOffset    int32
	SessionID     int32
	StreamID      int32
	TermID        int32
	ReservedValue int64
}

// ReadFrameHeader decodes the header at the start of b, which must hold at
// least [HeaderLength] bytes. It reads plainly: use it only on frames known
// to be committed.
func ReadFrameHeader(b []byte) FrameHeader {
	b = b[:HeaderLength]
	return FrameHeader{
		FrameLength:   int32(binary.LittleEndian.Uint32(b[FrameLengthFieldOffset:])),
		Version:       b[VersionFieldOffset],
		Flags:         b[FlagsFieldOffset],
		Type:          binary.LittleEndian.Uint16(b[TypeFieldOffset:]),
		TermOffset:    int32(binary.LittleEndian.Uint32(b[TermOffsetFieldOffset:])),
		SessionID:     int32(binary.LittleEndian.Uint32(b[SessionIDFieldOffset:])),
		StreamID:      int32(binary.LittleEndian.Uint32(b[StreamIDFieldOffset:])),
		TermID:        int32(binary.LittleEndian.Uint32(b[TermIDFieldOffset:])),
		ReservedValue: int64(binary.LittleEndian.Uint64(b[ReservedValueOffset:])),
	}
}

// Put encodes h into the first [HeaderLength] bytes of b with plain stores.
func (h FrameHeader) Put(b []byte) {
	b = b[:HeaderLength]
	binary.LittleEndian.PutUint32(b[FrameLengthFieldOffset:], uint32(h.FrameLength))
	b[VersionFieldOffset] = h.Version
	b[FlagsFieldOffset] = h.Flags
	binary.LittleEndian.PutUint16(b[TypeFieldOffset:], h.Type)
	binary.LittleEndian.PutUint32(b[TermOffsetFieldOffset:], uint32(h.TermOffset))
	binary.LittleEndian.PutUint32(b[SessionIDFieldOffset:], uint32(h.SessionID))
	binary.LittleEndian.PutUint32(b[StreamIDFieldOffset:], uint32(h.StreamID))
	binary.LittleEndian.PutUint32(b[TermIDFieldOffset:], uint32(h.TermID))
	binary.LittleEndian.PutUint64(b[ReservedValueOffset:], uint64(h.ReservedValue))
}

// Header is the view of one committed frame handed to a [FragmentHandler].
// It decodes fields on demand from the term bytes and is valid only during
// the handler call.
type Header struct {
	term          []byte
	offset        int
	initialTermID int32
	shift         uint8
}

// Offset is the frame's offset in its term (the start of its header).
func (h Header) Offset() int { return h.offset }

// FrameLength is the frame length: header plus payload, without alignment.
func (h Header) FrameLength() int32 {
	return int32(binary.LittleEndian.Uint32(h.term[h.offset+FrameLengthFieldOffset:]))
}

// Version is the frame's protocol version.
func (h Header) Version() uint8 { return h.term[h.offset+VersionFieldOffset] }

// Flags are the frame's BEGIN/END/EOS flags.
func (h Header) Flags() uint8 { return h.term[h.offset+FlagsFieldOffset] }

// Type is the frame type ([TypeData] for fragments handed to handlers).
func (h Header) Type() uint16 { return binary.LittleEndian.Uint16(h.term[h.offset+TypeFieldOffset:]) }

// TermOffset is the term offset field as written in the frame.
func (h Header) TermOffset() int32 {
	return int32(binary.LittleEndian.Uint32(h.term[h.offset+TermOffsetFieldOffset:]))
}

// SessionID is the frame's session id.
func (h Header) SessionID() int32 {
	return int32(binary.LittleEndian.Uint32(h.term[h.offset+SessionIDFieldOffset:]))
}

// StreamID is the frame's stream id.
func (h Header) StreamID() int32 {
	return int32(binary.LittleEndian.Uint32(h.term[h.offset+StreamIDFieldOffset:]))
}

// TermID is the frame's term id.
func (h Header) TermID() int32 {
	return int32(binary.LittleEndian.Uint32(h.term[h.offset+TermIDFieldOffset:]))
}

// ReservedValue is the frame's reserved 64-bit value.
func (h Header) ReservedValue() int64 {
	return int64(binary.LittleEndian.Uint64(h.term[h.offset+ReservedValueOffset:]))
}

// InitialTermID is the initial term id of the log the frame belongs to.
func (h Header) InitialTermID() int32 { return h.initialTermID }

// Position is the stream position just after this frame (aligned), which is
// where a reader stands once it has consumed the frame.
func (h Header) Position() int64 {
	end := Align(h.offset+int(h.FrameLength()), FrameAlignment)
	return ComputePosition(h.TermID(), end, h.shift, h.initialTermID)
}
