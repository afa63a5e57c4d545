package logbuf

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"
)

// BackPressured is the position [ExclusivePublication.TryClaim] and
// [ExclusivePublication.Offer] return, with a nil error, when the claim
// would start at or past the position limit. It is Aeron's
// Publication.BACK_PRESSURED value. Retry later.
const BackPressured int64 = -2

// ExclusivePublication appends unfragmented messages to a [Log]. It has a
// single writer: TryClaim, Offer, Commit and Abort must be called from one
// goroutine at a time. SetPositionLimit, Position and Close may be called
// from any goroutine.
type ExclusivePublication struct {
	log               *Log
	terms             [PartitionCount][]byte
	meta              []byte
	termLength        int
	termOffset        int
	termID            int32
	termBeginPosition int64
	activeIndex       int
	maxPayload        int
	maxPosition       int64
	headerWord        int64 // version, flags and type in the high half
	sessionStream     [8]byte

	position atomic.Int64
	limit    atomic.Int64
	closed   atomic.Bool
}

// Publication returns the log's exclusive publication, positioned at the
// log's current tail. A log has one writer: create one publication per log.
// Its position limit starts at the tail plus [Log.TermWindowLength].
func (l *Log) Publication() *ExclusivePublication {
	pos := l.TailPosition()
	dh := ReadFrameHeader(l.meta[DefaultFrameHeaderOffset:])
	p := &ExclusivePublication{
		log:               l,
		terms:             l.terms,
		meta:              l.meta,
		termLength:        l.termLength,
		termOffset:        ComputeTermOffset(pos, l.termLength),
		termID:            ComputeTermID(pos, l.shift, l.initialTermID),
		termBeginPosition: pos &^ int64(l.termLength-1),
		activeIndex:       IndexByPosition(pos, l.shift),
		maxPayload:        l.MaxPayloadLength(),
		maxPosition:       maxPossiblePosition(l.termLength),
		headerWord:        int64(dh.Version)<<32 | int64(dh.Flags)<<40 | int64(dh.Type)<<48,
	}
	binary.LittleEndian.PutUint32(p.sessionStream[0:], uint32(dh.SessionID))
	binary.LittleEndian.PutUint32(p.sessionStream[4:], uint32(dh.StreamID))
	p.position.Store(pos)
	p.limit.Store(pos + int64(l.TermWindowLength()))
	return p
}

// Log returns the log the publication writes to.
func (p *ExclusivePublication) Log() *Log { return p.log }

// Position is the position after the last claimed frame (committed or not).
func (p *ExclusivePublication) Position() int64 { return p.position.Load() }

// PositionLimit is the current position limit.
func (p *ExclusivePublication) PositionLimit() int64 { return p.limit.Load() }

// SetPositionLimit sets the position a claim must start before. A caller
// with readers sets it to the slowest reader's position plus a window of at
// most one term ([Log.TermWindowLength] is the usual choice): the partition
// a new term reuses is zeroed once the writer is inside the term before it,
// which is safe only if every reader has left that partition.
func (p *ExclusivePublication) SetPositionLimit(limit int64) { p.limit.Store(limit) }

// MaxPayloadLength is the longest claim: MTU - 32.
func (p *ExclusivePublication) MaxPayloadLength() int { return p.maxPayload }

// IsClosed reports whether Close was called.
func (p *ExclusivePublication) IsClosed() bool { return p.closed.Load() }

// Close closes the publication and records its position as the log's end of
// stream position. Later claims fail with [ErrClosed]. An uncommitted claim
// may still be committed or aborted.
func (p *ExclusivePublication) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	storeInt64(p.meta, EndOfStreamPositionOffset, p.position.Load())
	return nil
}

// Claim is a claimed frame: a header already written with a negative length
// and payload bytes to encode into in place. The frame becomes visible to
// readers only on Commit; Abort turns it into padding. A zero Claim is
// invalid.
type Claim struct {
	term        []byte
	offset      int
	frameLength int
}

// Buffer returns the claimed payload bytes, in the term itself.
func (c *Claim) Buffer() []byte {
	return c.term[c.offset+HeaderLength : c.offset+c.frameLength : c.offset+c.frameLength]
}

// Length is the payload length.
func (c *Claim) Length() int { return c.frameLength - HeaderLength }

// FrameOffset is the offset of the frame's header in its term.
func (c *Claim) FrameOffset() int { return c.offset }

// SetReservedValue sets the frame header's reserved value before Commit.
func (c *Claim) SetReservedValue(v int64) {
	binary.LittleEndian.PutUint64(c.term[c.offset+ReservedValueOffset:], uint64(v))
}

// Commit publishes the frame with an ordered store of its positive length.
func (c *Claim) Commit() {
	storeInt32(c.term, c.offset, int32(c.frameLength))
}

// Abort turns the frame into padding, which readers skip, and publishes it.
func (c *Claim) Abort() {
	binary.LittleEndian.PutUint16(c.term[c.offset+TypeFieldOffset:], TypePad)
	storeInt32(c.term, c.offset, int32(c.frameLength))
}

// TryClaim claims a frame for a payload of length bytes, at most
// [ExclusivePublication.MaxPayloadLength]: claims are never fragmented. On
// success it returns the claim and the new position (after the frame, aligned).
// The payload reads as zeros. The caller encodes into [Claim.Buffer] and
// then commits or aborts the claim. Several claims may be outstanding, as in
// Aeron: readers stop at the first frame not yet committed, so one
// outstanding claim holds back the frames claimed after it, and so the
// readers and the limit. When the current position is at or past the limit
// it returns [BackPressured] and a nil error. When the message does not fit
// in the rest of the term, the rest is filled with a padding frame, the log
// rotates to the next term and the claim is retried there.
func (p *ExclusivePublication) TryClaim(length int) (Claim, int64, error) {
	return p.claim(length, true)
}

// TryClaimOverwrite is [ExclusivePublication.TryClaim] for a caller that
// writes every byte of the payload before it commits: the payload is not
// zeroed, and holds whatever that place in the partition held (bytes of the
// term three before, or zeros). It saves writing the payload twice, once
// with zeros and once with the message; the zeros would go to memory a
// claim ahead of the message, so a large message pays for both. Abort
// leaves those bytes in the body of a padding frame, which readers skip.
func (p *ExclusivePublication) TryClaimOverwrite(length int) (Claim, int64, error) {
	return p.claim(length, false)
}

// claim is TryClaim, zeroing the payload when zero is set. Whatever a
// reader can reach before the writer writes it is zeroed before the raw
// tail moves past it (see Cleaning in the package doc): the alignment gap
// after the frame and the header slot where the next frame will start,
// which is the next partition's first when this frame ends the term.
func (p *ExclusivePublication) claim(length int, zero bool) (Claim, int64, error) {
	if length < 0 || length > p.maxPayload {
		return Claim{}, 0, fmt.Errorf("%w: %d > %d", ErrClaimTooLong, length, p.maxPayload)
	}
	if p.closed.Load() {
		return Claim{}, 0, ErrClosed
	}
	frameLength := length + HeaderLength
	aligned := Align(frameLength, FrameAlignment)
	for {
		if p.termBeginPosition+int64(p.termOffset) >= p.limit.Load() {
			return Claim{}, BackPressured, nil
		}
		term := p.terms[p.activeIndex]
		offset := p.termOffset
		next := offset + aligned
		if next <= p.termLength {
			from := offset + frameLength
			if zero {
				from = offset + HeaderLength
			}
			if next < p.termLength {
				clear(term[from : next+HeaderLength])
			} else {
				clear(term[from:next])
				p.cleanNextStart()
			}
			p.putRawTail(int32(next))
			p.writeHeader(term, offset, frameLength)
			p.termOffset = next
			pos := p.termBeginPosition + int64(next)
			p.position.Store(pos)
			return Claim{term: term, offset: offset, frameLength: frameLength}, pos, nil
		}
		p.putRawTail(int32(next))
		if offset < p.termLength {
			pad := p.termLength - offset
			p.cleanNextStart()
			p.writeHeader(term, offset, pad)
			binary.LittleEndian.PutUint16(term[offset+TypeFieldOffset:], TypePad)
			storeInt32(term, offset, int32(pad))
		}
		if err := p.rotate(); err != nil {
			return Claim{}, 0, err
		}
	}
}

// cleanNextStart zeroes the header slot at the start of the next
// partition, where a reader goes when it leaves the active term. That
// partition holds the term two before the active one, which every reader
// has left while the limit is at most the slowest reader's position plus
// one term (see [ExclusivePublication.SetPositionLimit]).
func (p *ExclusivePublication) cleanNextStart() {
	clear(p.terms[(p.activeIndex+1)%PartitionCount][:HeaderLength])
}

// Offer copies payload into a claimed frame and commits it. It returns the
// same results as [ExclusivePublication.TryClaim].
func (p *ExclusivePublication) Offer(payload []byte) (int64, error) {
	c, pos, err := p.TryClaimOverwrite(len(payload))
	if err != nil || pos < 0 {
		return pos, err
	}
	copy(c.Buffer(), payload)
	c.Commit()
	return pos, nil
}

func (p *ExclusivePublication) putRawTail(offset int32) {
	storeInt64(p.meta, TermTailCountersOffset+p.activeIndex*tailCounterStride, PackTail(p.termID, offset))
}

// writeHeader writes a frame header as Aeron's HeaderWriter does: an ordered
// store of -length with version, flags and type, then the plain fields. The
// reserved value is left as it is: zero, since the slot at the tail is.
func (p *ExclusivePublication) writeHeader(term []byte, offset, frameLength int) {
	storeInt64(term, offset, p.headerWord|int64(uint32(-int32(frameLength))))
	h := term[offset : offset+HeaderLength : offset+HeaderLength]
	binary.LittleEndian.PutUint32(h[TermOffsetFieldOffset:], uint32(offset))
	copy(h[SessionIDFieldOffset:TermIDFieldOffset], p.sessionStream[:])
	binary.LittleEndian.PutUint32(h[TermIDFieldOffset:], uint32(p.termID))
}

// rotate moves the publication to the next term, as Aeron's exclusive
// publication does: the next partition's tail is set to (termID+1, 0) and
// the active term count is advanced, both with ordered stores.
func (p *ExclusivePublication) rotate() error {
	if p.termBeginPosition+int64(p.termLength) >= p.maxPosition {
		return ErrMaxPositionExceeded
	}
	nextIndex := (p.activeIndex + 1) % PartitionCount
	p.termID++
	p.termOffset = 0
	p.termBeginPosition += int64(p.termLength)
	p.activeIndex = nextIndex
	p.position.Store(p.termBeginPosition)
	termCount := p.termID - p.log.initialTermID
	storeInt64(p.meta, TermTailCountersOffset+nextIndex*tailCounterStride, PackTail(p.termID, 0))
	storeInt32(p.meta, ActiveTermCountOffset, termCount)
	return nil
}
