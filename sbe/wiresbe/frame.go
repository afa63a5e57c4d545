package wiresbe

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Framing on TCP: each message (an SBE message, header included, of this
// schema or of enginesbe's) is preceded by its length as a 4-byte
// little-endian unsigned integer. A frame shorter than a message header or
// longer than MaxFrameLength is malformed. This file is hand-written.
const (
	// FrameHeaderLength is the size of the length prefix.
	FrameHeaderLength = 4
	// MaxFrameLength is the longest message a frame may hold (the length
	// prefix excluded).
	MaxFrameLength = 1024
	// MinFrameLength is the shortest: a bare message header.
	MinFrameLength = MessageHeaderEncodedLength
	// ProtocolVersion is the session protocol's version, sent in Connect
	// and Connected.
	ProtocolVersion = 1
	// MaxReasonLength bounds SessionClosed's reason text.
	MaxReasonLength = 200
)

// ErrFrameLength is wrapped by the error of a frame whose length prefix is
// out of range; ErrTruncated by that of a stream ending inside a frame.
var (
	ErrFrameLength = errors.New("wiresbe: bad frame length")
	ErrTruncated   = errors.New("wiresbe: truncated frame")
)

// FrameReader reads frames from a stream into one reused buffer.
type FrameReader struct {
	r   *bufio.Reader
	hdr [FrameHeaderLength]byte
	buf [MaxFrameLength]byte
}

// NewFrameReader returns a FrameReader over r.
func NewFrameReader(r io.Reader) *FrameReader {
	return &FrameReader{r: bufio.NewReaderSize(r, 16<<10)}
}

// Next reads the next frame and returns its message, a view valid until
// the next call. It returns io.EOF when the stream ends between frames, an
// error wrapping ErrTruncated when it ends inside one, one wrapping
// ErrFrameLength for a length out of range, or the stream's error.
func (f *FrameReader) Next() ([]byte, error) {
	hdr := f.hdr[:]
	if n, err := io.ReadFull(f.r, hdr); err != nil {
		if err == io.ErrUnexpectedEOF {
			return nil, fmt.Errorf("%w: stream ended after %d of the 4 bytes of a length", ErrTruncated, n)
		}
		return nil, err
	}
	n := binary.LittleEndian.Uint32(hdr)
	if n < MinFrameLength || n > MaxFrameLength {
		return nil, fmt.Errorf("%w: %d, want %d to %d", ErrFrameLength, n, MinFrameLength, MaxFrameLength)
	}
	if got, err := io.ReadFull(f.r, f.buf[:n]); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return nil, fmt.Errorf("%w: stream ended after %d of %d bytes", ErrTruncated, got, n)
		}
		return nil, err
	}
	return f.buf[:n], nil
}

// Buffered is how many bytes the reader holds that Next has not returned.
func (f *FrameReader) Buffered() int { return f.r.Buffered() }

// AppendFrame appends msg with its length prefix to dst.
func AppendFrame(dst, msg []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(msg)))
	return append(dst, msg...)
}

// BeginFrame appends a length prefix to be filled in by EndFrame, and
// returns dst and the prefix's offset, so a message can be encoded in place.
func BeginFrame(dst []byte) ([]byte, int) {
	return append(dst, 0, 0, 0, 0), len(dst)
}

// EndFrame sets the length prefix at off to the bytes after it.
func EndFrame(dst []byte, off int) []byte {
	binary.LittleEndian.PutUint32(dst[off:], uint32(len(dst)-off-FrameHeaderLength))
	return dst
}

// grow appends n zero bytes to dst and returns it and the old length.
func grow(dst []byte, n int) ([]byte, int) {
	off := len(dst)
	return append(dst, make([]byte, n)...), off
}

// AppendConnect appends a Connect message (no frame) to dst.
func AppendConnect(dst []byte, clientID uint64) []byte {
	dst, off := grow(dst, MessageHeaderEncodedLength+ConnectBlockLength)
	var e ConnectEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.ClientId(clientID).ProtocolVersion(ProtocolVersion)
	return dst
}

// AppendConnected appends a Connected message to dst.
func AppendConnected(dst []byte, sessionID int64, clientID uint64, keepaliveMs, timeoutMs uint32, highWater uint64) []byte {
	dst, off := grow(dst, MessageHeaderEncodedLength+ConnectedBlockLength)
	var e ConnectedEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.SessionId(sessionID).ClientId(clientID).KeepaliveIntervalMs(keepaliveMs).SessionTimeoutMs(timeoutMs).ProtocolVersion(ProtocolVersion).SourceHighWater(highWater)
	return dst
}

// AppendKeepalive appends a Keepalive message to dst.
func AppendKeepalive(dst []byte, sessionID int64) []byte {
	dst, off := grow(dst, MessageHeaderEncodedLength+KeepaliveBlockLength)
	var e KeepaliveEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.SessionId(sessionID)
	return dst
}

// AppendCloseSession appends a CloseSession message to dst.
func AppendCloseSession(dst []byte, sessionID int64) []byte {
	dst, off := grow(dst, MessageHeaderEncodedLength+CloseSessionBlockLength)
	var e CloseSessionEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.SessionId(sessionID)
	return dst
}

// AppendSubscribeDepth appends a SubscribeDepth message to dst.
func AppendSubscribeDepth(dst []byte, instrument uint32, levels uint16) []byte {
	dst, off := grow(dst, MessageHeaderEncodedLength+SubscribeDepthBlockLength)
	var e SubscribeDepthEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.Instrument(instrument).Levels(levels)
	return dst
}

// AppendSessionClosed appends a SessionClosed message to dst; a reason
// longer than MaxReasonLength is cut, non-ASCII bytes become '?'.
func AppendSessionClosed(dst []byte, sessionID int64, code CloseCode, reason string) []byte {
	if len(reason) > MaxReasonLength {
		reason = reason[:MaxReasonLength]
	}
	dst, off := grow(dst, MessageHeaderEncodedLength+SessionClosedBlockLength+2+len(reason))
	var e SessionClosedEncoder
	_ = e.WrapAndApplyHeader(dst, off)
	e.SessionId(sessionID).Code(code)
	_ = e.PutReasonString(reason)
	for i := len(dst) - len(reason); i < len(dst); i++ {
		if dst[i] >= 0x80 || dst[i] < 0x20 {
			dst[i] = '?'
		}
	}
	return dst
}

// Header returns a message's schema id, template id and block length; ok
// is false for a message shorter than a header.
func Header(msg []byte) (schema, template, blockLength uint16, ok bool) {
	if len(msg) < MessageHeaderEncodedLength {
		return 0, 0, 0, false
	}
	return binary.LittleEndian.Uint16(msg[4:]), binary.LittleEndian.Uint16(msg[2:]), binary.LittleEndian.Uint16(msg), true
}

// CheckFixed checks that msg is exactly a header and a block of at least
// want bytes (a message of this schema without var data).
func CheckFixed(msg []byte, want int) error {
	_, template, bl, ok := Header(msg)
	if !ok {
		return fmt.Errorf("wiresbe: message of %d bytes is shorter than a header", len(msg))
	}
	if int(bl) < want {
		return fmt.Errorf("wiresbe: template %d with block length %d, want at least %d", template, bl, want)
	}
	if len(msg) != MessageHeaderEncodedLength+int(bl) {
		return fmt.Errorf("wiresbe: template %d of %d bytes, its header says %d", template, len(msg), MessageHeaderEncodedLength+int(bl))
	}
	return nil
}
