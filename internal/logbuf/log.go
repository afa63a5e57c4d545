package logbuf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/matchlog/matchlog/internal/hugepage"
)

// Errors returned by the log buffer.
var (
	// ErrClosed is returned by a publication after Close.
	ErrClosed = errors.New("logbuf: publication closed")
	// ErrMaxPositionExceeded is returned when the next term would pass the
	// highest position the log can address (termLength << 31).
	ErrMaxPositionExceeded = errors.New("logbuf: max position exceeded")
	// ErrClaimTooLong is returned for a claim or offer longer than the
	// maximum payload (MTU - 32): claims are never fragmented.
	ErrClaimTooLong = errors.New("logbuf: claim longer than max payload length")
	// ErrInvalidPosition is returned for a start position that is negative,
	// not frame aligned or beyond the log's range.
	ErrInvalidPosition = errors.New("logbuf: invalid start position")
)

// Log is one Aeron log buffer: three term partitions and the metadata block,
// in one contiguous byte slice laid out exactly as a driver's .logbuffer file.
type Log struct {
	buf           []byte
	terms         [PartitionCount][]byte
	meta          []byte
	termLength    int
	shift         uint8
	mtu           int
	initialTermID int32
	sessionID     int32
	streamID      int32
	unmap         func([]byte) error // nil for memory we allocated
}

// New allocates a log at position 0 with the given term length (a power of
// two in [64 KiB, 1 GiB]) and MTU (a multiple of 32 in (32, 65504], and no
// more than the max message length, as Aeron's driver requires).
func New(termLength, mtu int, initialTermID, sessionID, streamID int32) (*Log, error) {
	return NewAt(termLength, mtu, initialTermID, sessionID, streamID, 0)
}

// NewAt is [New] for a stream that starts at startPosition (a multiple of
// 32), as an exclusive publication created with Aeron's init-term-id,
// term-id and term-offset channel parameters does. The metadata is
// initialised as the driver does: the active partition's tail holds the
// start term id and offset, the other partitions hold the term ids three
// behind the ones they will carry next, and the active term count is set.
func NewAt(termLength, mtu int, initialTermID, sessionID, streamID int32, startPosition int64) (*Log, error) {
	if err := checkParams(termLength, mtu); err != nil {
		return nil, err
	}
	if startPosition < 0 || startPosition%FrameAlignment != 0 ||
		startPosition >= maxPossiblePosition(termLength) {
		return nil, fmt.Errorf("%w: %d", ErrInvalidPosition, startPosition)
	}
	l := newLog(alignedBytes(ComputeLogLength(termLength)), termLength, mtu, initialTermID, sessionID, streamID)
	l.initMetaData(startPosition)
	return l, nil
}

// Recycle lays a new log at position 0 over the memory of old, a log in
// allocated memory (not a mapped file) that nothing uses any more: old and
// every slice, claim, publication and image over it must not be used
// afterwards. The term length stays old's; the rest is as [New] takes it.
// What old's publication wrote is cleared first, so the result is byte for
// byte what New returns. Recycling saves the new allocation: a process
// that writes a log after log of the same size (the node's snapshots)
// takes no fresh pages from the system for each one, and on a virtual
// machine whose page faults are slow that is most of a snapshot's memory
// cost (docs/performance.md).
func Recycle(old *Log, mtu int, initialTermID, sessionID, streamID int32) (*Log, error) {
	if old == nil || old.unmap != nil || old.buf == nil {
		return nil, errors.New("logbuf: recycle needs a log in allocated memory")
	}
	if err := checkParams(old.termLength, mtu); err != nil {
		return nil, err
	}
	active := IndexByTermCount(int64(old.ActiveTermCount()))
	for i := range old.terms {
		// A partition's raw tail is where its last term's writes ended
		// (clamped to the term). Beyond it lie zeros, except in the active
		// partition once the log has wrapped: a term there may stop short
		// of an older term's bytes, which the publication never cleans (see
		// Cleaning in the package doc).
		n := TermOffsetFromTail(old.RawTail(i), old.termLength)
		if i == active && old.ActiveTermCount() >= PartitionCount {
			n = old.termLength
		}
		clear(old.terms[i][:n])
	}
	clear(old.meta)
	buf, termLength := old.buf, old.termLength
	*old = Log{} // old can no longer reach the memory
	l := newLog(buf, termLength, mtu, initialTermID, sessionID, streamID)
	l.initMetaData(0)
	return l, nil
}

func checkParams(termLength, mtu int) error {
	if !littleEndian() {
		return errors.New("logbuf: big-endian platforms are not supported")
	}
	if err := CheckTermLength(termLength); err != nil {
		return err
	}
	if err := CheckMTU(mtu); err != nil {
		return err
	}
	if maxMsg := ComputeMaxMessageLength(termLength); mtu > maxMsg {
		return fmt.Errorf("logbuf: MTU %d greater than max message length %d for term length %d",
			mtu, maxMsg, termLength)
	}
	return nil
}

// newLog lays a log over buf, which holds at least 3*termLength+4096 bytes.
func newLog(buf []byte, termLength, mtu int, initialTermID, sessionID, streamID int32) *Log {
	l := &Log{
		buf:           buf,
		meta:          buf[PartitionCount*termLength : PartitionCount*termLength+MetaDataLength],
		termLength:    termLength,
		shift:         PositionBitsToShift(termLength),
		mtu:           mtu,
		initialTermID: initialTermID,
		sessionID:     sessionID,
		streamID:      streamID,
	}
	for i := range l.terms {
		l.terms[i] = buf[i*termLength : (i+1)*termLength : (i+1)*termLength]
	}
	return l
}

func (l *Log) initMetaData(startPosition int64) {
	m := l.meta
	le := binary.LittleEndian
	termCount := startPosition >> l.shift
	termID := ComputeTermID(startPosition, l.shift, l.initialTermID)
	termOffset := ComputeTermOffset(startPosition, l.termLength)
	active := IndexByTermCount(termCount)
	storeInt64(m, TermTailCountersOffset+active*tailCounterStride, PackTail(termID, int32(termOffset)))
	for i := 1; i < PartitionCount; i++ {
		idx := (active + i) % PartitionCount
		storeInt64(m, TermTailCountersOffset+idx*tailCounterStride, PackTail(termID+int32(i)-PartitionCount, 0))
	}
	storeInt32(m, ActiveTermCountOffset, int32(termCount))
	le.PutUint64(m[EndOfStreamPositionOffset:], math.MaxInt64)
	le.PutUint32(m[IsConnectedOffset:], 1)
	le.PutUint32(m[InitialTermIDOffset:], uint32(l.initialTermID))
	le.PutUint32(m[DefaultFrameHeaderLengthOffset:], HeaderLength)
	le.PutUint32(m[MTULengthOffset:], uint32(l.mtu))
	le.PutUint32(m[TermLengthOffset:], uint32(l.termLength))
	le.PutUint32(m[PageSizeOffset:], PageSize)
	le.PutUint32(m[PublicationWindowLengthOffset:], uint32(l.TermWindowLength()))
	FrameHeader{
		Version:   CurrentVersion,
		Flags:     FlagUnfragmented,
		Type:      TypeData,
		SessionID: l.sessionID,
		StreamID:  l.streamID,
		TermID:    l.initialTermID,
	}.Put(m[DefaultFrameHeaderOffset:])
}

// PreTouch writes every page of the three terms once, as Aeron's driver
// does to a log buffer when aeron.pre.touch.mapped.memory is set: a
// compare-and-set of 0 with 0 at each 4 KiB, which makes the kernel map
// the page for writing (fresh memory is mapped on its first write, at a
// page fault each) and changes no byte of what was written. Call it before
// the log's publication writes: the compare-and-set never changes a byte,
// but alongside a claimant's plain writes Go's memory model would count it
// a data race. The writer then meets no page fault in its first pass over
// the terms; on a virtual machine each fault costs microseconds. The pages
// stay resident for the log's life: three terms of memory.
func (l *Log) PreTouch() {
	for _, t := range l.terms {
		for off := 0; off < len(t); off += PageSize {
			casInt32(t, off, 0, 0)
		}
	}
}

// Prefault advises the log's memory for huge pages and faults it in on a
// goroutine of its own, a huge page at a time from the first term on
// ([hugepage.Advise], [hugepage.Prefault]); it returns at once, and wait
// returns when that is done. The kernel maps and zeroes each page as a
// first write would and leaves a page already written as it is, so the
// publication may write meanwhile, and no byte changes: a writer that
// starts at once meets few page faults, because the goroutine runs ahead
// of it on another core. Only the 2 MiB-aligned part of the memory is
// advised and faulted in. It is meant for a log that lives long (a huge
// page stays whole only while all of it is in use); a mapped file's log
// is left alone.
func (l *Log) Prefault() (wait func()) {
	if l.unmap != nil {
		return func() {}
	}
	hugepage.Advise(l.buf)
	return hugepage.Prefault(l.buf)
}

// Bytes returns the whole log: the three terms then the metadata block,
// byte for byte the layout of a driver's .logbuffer file.
func (l *Log) Bytes() []byte { return l.buf }

// Term returns partition i's bytes.
func (l *Log) Term(i int) []byte { return l.terms[i] }

// MetaData returns the 4096-byte metadata block.
func (l *Log) MetaData() []byte { return l.meta }

// TermLength is the length of each term partition.
func (l *Log) TermLength() int { return l.termLength }

// PositionBitsToShift is log2 of the term length.
func (l *Log) PositionBitsToShift() uint8 { return l.shift }

// MTU is the maximum frame length, header included.
func (l *Log) MTU() int { return l.mtu }

// MaxPayloadLength is the longest payload one claim may hold: MTU - 32.
func (l *Log) MaxPayloadLength() int { return l.mtu - HeaderLength }

// MaxMessageLength is min(termLength/8, 16 MiB).
func (l *Log) MaxMessageLength() int { return ComputeMaxMessageLength(l.termLength) }

// TermWindowLength is the default distance a publication may run ahead of
// its slowest reader: half a term, Aeron's IPC default. A window of more
// than one term is never safe (see the package documentation).
func (l *Log) TermWindowLength() int { return l.termLength / 2 }

// InitialTermID is the term id at position 0.
func (l *Log) InitialTermID() int32 { return l.initialTermID }

// SessionID is the session id written into every frame.
func (l *Log) SessionID() int32 { return l.sessionID }

// StreamID is the stream id written into every frame.
func (l *Log) StreamID() int32 { return l.streamID }

// ActiveTermCount reads the metadata's active term count.
func (l *Log) ActiveTermCount() int32 { return loadInt32(l.meta, ActiveTermCountOffset) }

// RawTail reads partition i's raw tail counter.
func (l *Log) RawTail(i int) int64 {
	return loadInt64(l.meta, TermTailCountersOffset+i*tailCounterStride)
}

// TailPosition is the publication's position as the metadata shows it: the
// active partition's tail, clamped to the term length.
func (l *Log) TailPosition() int64 {
	count := int64(l.ActiveTermCount())
	raw := l.RawTail(IndexByTermCount(count))
	return ComputePosition(TermIDFromTail(raw), TermOffsetFromTail(raw, l.termLength), l.shift, l.initialTermID)
}

// EndOfStreamPosition reads the end-of-stream position (MaxInt64 while open).
func (l *Log) EndOfStreamPosition() int64 {
	return loadInt64(l.meta, EndOfStreamPositionOffset)
}

// Close unmaps a file-backed log; the log and every slice, claim,
// publication and image over it must not be used afterwards. For a log in
// allocated memory it does nothing.
func (l *Log) Close() error {
	if l.unmap == nil {
		return nil
	}
	unmap := l.unmap
	l.unmap = nil
	if err := unmap(l.buf); err != nil {
		return fmt.Errorf("logbuf: munmap: %w", err)
	}
	return nil
}
