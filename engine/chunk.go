package engine

import "unsafe"

// chunk is the entry of a run of 1<<shift order slots of one level (see
// [level]): its buffer, the epoch that buffer was written in, and its live
// count, in 16 bytes. A level's inline list of inlChunks entries then
// fills one cache line, and the level 128 bytes in all: with entries of a
// slice header, an epoch and a count (40 bytes), a level took 256, 8 B an
// order in a book of levels of about 30 (docs/performance.md).
//
// The buffer is kept as a pointer to its first slot and a length, and
// turned back into a slice by buf, with unsafe.Slice: the one use of
// package unsafe in the engine (internal/lint confines it to this file).
// It is memory-safe because the pointer and the length are only ever
// written together, by set, from one slice: no other code writes the
// length bits, and the live count is changed by addLive, which wraps
// within its own byte and never carries into them.
type chunk struct {
	// p is the buffer's first slot, nil when the entry holds no buffer.
	p *order
	// w packs the chunk's epoch (bits 16-63, see maxChunkEpoch), its
	// buffer's length in slots (bits 8-15: 1<<shift, or half as many for
	// a level's last chunk, see halfShift) and its live count (bits 0-7:
	// the live, non-tombstone, slots below the level's next, at most
	// 1<<maxShift).
	w uint64
}

const (
	chunkLenBits   = 8
	chunkEpochBits = 16
	// maxChunkEpoch is the largest epoch a chunk entry holds: 2^48-1
	// clones, one a microsecond for nine years (see Engine.Clone).
	maxChunkEpoch = 1<<(64-chunkEpochBits) - 1
)

// buf returns the chunk's buffer.
func (c *chunk) buf() []order { return unsafe.Slice(c.p, c.len()) }

// len returns the length of the chunk's buffer in slots.
func (c *chunk) len() int { return int(c.w >> chunkLenBits & 0xff) }

// epoch returns the epoch the chunk's buffer was written in.
func (c *chunk) epoch() uint64 { return c.w >> chunkEpochBits }

// live returns the chunk's live count.
func (c *chunk) live() int32 { return int32(c.w & 0xff) }

// addLive adds d to the chunk's live count, within its byte.
func (c *chunk) addLive(d int) { c.w = c.w&^0xff | uint64(uint8(int(c.w)+d)) }

// set makes c hold buffer b (len(b) <= 1<<maxShift), written in epoch
// (at most maxChunkEpoch), with live live slots.
func (c *chunk) set(b []order, epoch uint64, live int) {
	c.p, c.w = unsafe.SliceData(b), epoch<<chunkEpochBits|uint64(uint8(len(b)))<<chunkLenBits|uint64(uint8(live))
}

// setBuf makes c hold buffer b, written in epoch, keeping its live count.
func (c *chunk) setBuf(b []order, epoch uint64) { c.set(b, epoch, int(c.live())) }
