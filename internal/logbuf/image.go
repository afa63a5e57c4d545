package logbuf

import (
	"encoding/binary"
	"sync/atomic"
)

// FragmentHandler receives one committed data frame: buf is the whole term,
// the payload is buf[offset:offset+length], and hdr describes the frame.
// buf and hdr are valid only during the call.
type FragmentHandler func(buf []byte, offset, length int, hdr Header)

// Action is what a [ControlledFragmentHandler] asks the poll to do next.
type Action int

// Actions, with the meaning of Aeron's ControlledFragmentHandler.Action.
const (
	// Abort leaves the fragment unconsumed and stops the poll; the next poll
	// delivers it again.
	Abort Action = iota
	// Break consumes the fragment and stops the poll.
	Break
	// Commit consumes the fragment, publishes the position now, and goes on.
	Commit
	// Continue consumes the fragment and goes on.
	Continue
)

// ControlledFragmentHandler is a [FragmentHandler] that steers the poll.
type ControlledFragmentHandler func(buf []byte, offset, length int, hdr Header) Action

// Image reads the frames of a [Log] in order. It has a single reader: Poll,
// ControlledPoll and Drain must be called from one goroutine at a time.
// Position may be called from any goroutine, typically the writer's to set
// its position limit. Only frames whose length word holds a positive value
// are read: a claimed but uncommitted frame stops the reader.
type Image struct {
	log           *Log
	terms         [PartitionCount][]byte
	termLength    int
	shift         uint8
	initialTermID int32
	position      atomic.Int64
}

// Image returns a reader of the log starting at the log's current tail.
func (l *Log) Image() *Image {
	return l.ImageAt(l.TailPosition())
}

// ImageAt returns a reader of the log starting at position, which must be a
// frame boundary still held in the log.
func (l *Log) ImageAt(position int64) *Image {
	img := &Image{
		log:           l,
		terms:         l.terms,
		termLength:    l.termLength,
		shift:         l.shift,
		initialTermID: l.initialTermID,
	}
	img.position.Store(position)
	return img
}

// Position is the position after the last consumed frame.
func (img *Image) Position() int64 { return img.position.Load() }

// Poll hands up to fragmentLimit committed data frames to handler, skipping
// padding and following term rotation, and returns how many it handed over.
// The position is published once, after the last frame.
func (img *Image) Poll(handler FragmentHandler, fragmentLimit int) int {
	pos := img.position.Load()
	fragments := 0
	for fragments < fragmentLimit {
		term := img.terms[IndexByPosition(pos, img.shift)]
		offset := ComputeTermOffset(pos, img.termLength)
		start := offset
		for fragments < fragmentLimit && offset < img.termLength {
			frameLength := int(loadInt32(term, offset))
			if frameLength <= 0 {
				break
			}
			frameOffset := offset
			offset += Align(frameLength, FrameAlignment)
			if binary.LittleEndian.Uint16(term[frameOffset+TypeFieldOffset:]) == TypePad {
				continue
			}
			handler(term, frameOffset+HeaderLength, frameLength-HeaderLength,
				Header{term: term, offset: frameOffset, initialTermID: img.initialTermID, shift: img.shift})
			fragments++
		}
		pos += int64(offset - start)
		if offset < img.termLength {
			break
		}
	}
	img.position.Store(pos)
	return fragments
}

// ControlledPoll is [Image.Poll] with a handler that may abort, break or
// commit; see [Action].
func (img *Image) ControlledPoll(handler ControlledFragmentHandler, fragmentLimit int) int {
	pos := img.position.Load()
	fragments := 0
loop:
	for fragments < fragmentLimit {
		term := img.terms[IndexByPosition(pos, img.shift)]
		offset := ComputeTermOffset(pos, img.termLength)
		for fragments < fragmentLimit && offset < img.termLength {
			frameLength := int(loadInt32(term, offset))
			if frameLength <= 0 {
				break loop
			}
			frameOffset := offset
			aligned := Align(frameLength, FrameAlignment)
			if binary.LittleEndian.Uint16(term[frameOffset+TypeFieldOffset:]) == TypePad {
				offset += aligned
				pos += int64(aligned)
				continue
			}
			action := handler(term, frameOffset+HeaderLength, frameLength-HeaderLength,
				Header{term: term, offset: frameOffset, initialTermID: img.initialTermID, shift: img.shift})
			if action == Abort {
				break loop
			}
			offset += aligned
			pos += int64(aligned)
			fragments++
			switch action {
			case Break:
				break loop
			case Commit:
				img.position.Store(pos)
			}
		}
		if offset < img.termLength {
			break
		}
	}
	img.position.Store(pos)
	return fragments
}

// Drain advances the position over up to fragmentLimit committed data
// frames (padding is skipped and not counted) without handing them to
// anyone, and returns how many it passed. It is the cheapest consumer, for
// benchmarks and for readers that only need to release the writer.
func (img *Image) Drain(fragmentLimit int) int {
	pos := img.position.Load()
	fragments := 0
	for fragments < fragmentLimit {
		term := img.terms[IndexByPosition(pos, img.shift)]
		offset := ComputeTermOffset(pos, img.termLength)
		start := offset
		for fragments < fragmentLimit && offset < img.termLength {
			frameLength := int(loadInt32(term, offset))
			if frameLength <= 0 {
				break
			}
			if binary.LittleEndian.Uint16(term[offset+TypeFieldOffset:]) != TypePad {
				fragments++
			}
			offset += Align(frameLength, FrameAlignment)
		}
		pos += int64(offset - start)
		if offset < img.termLength {
			break
		}
	}
	img.position.Store(pos)
	return fragments
}
