package logbuf

import "encoding/binary"

// BlockHandler receives one block of whole committed frames: the term
// holding it, the block's offset in the term and its length, and the
// stream position of its first byte. The term is valid only during the
// call.
type BlockHandler func(term []byte, offset, length int, position int64) error

// BlockPoll is Aeron's Image.blockPoll: it hands handler the run of whole
// committed frames from the image's position, within one term and at most
// blockLengthLimit bytes (a padding frame is always a block of its own, and
// a block ends just before one), then advances the position past the block
// in one step. A frame longer than blockLengthLimit is passed whole when it
// is the first of the block. It returns the block's length (0 when nothing
// is committed) and the handler's error; on an error the position does not
// move.
func (img *Image) BlockPoll(handler BlockHandler, blockLengthLimit int) (int, error) {
	pos := img.position.Load()
	term := img.terms[IndexByPosition(pos, img.shift)]
	offset := ComputeTermOffset(pos, img.termLength)
	limit := min(offset+max(blockLengthLimit, 0), img.termLength)
	end := scanBlock(term, offset, limit)
	length := end - offset
	if length == 0 {
		return 0, nil
	}
	if err := handler(term, offset, length, pos); err != nil {
		return 0, err
	}
	img.position.Store(pos + int64(length))
	return length, nil
}

// scanBlock is Aeron's TermBlockScanner.scan: the end offset of the block
// of whole committed frames starting at offset and ending by limit.
func scanBlock(term []byte, offset, limit int) int {
	start := offset
	for offset < len(term) {
		frameLength := int(loadInt32(term, offset))
		if frameLength <= 0 {
			break
		}
		aligned := Align(frameLength, FrameAlignment)
		if binary.LittleEndian.Uint16(term[offset+TypeFieldOffset:]) == TypePad {
			if offset == start {
				offset += aligned
			}
			break
		}
		if offset+aligned > limit {
			if offset == start {
				offset += aligned // one frame larger than the limit
			}
			break
		}
		offset += aligned
	}
	return offset
}
