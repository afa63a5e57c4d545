// Package logbuf is an Aeron log buffer in Go: three term partitions and a
// metadata block laid out byte for byte as Aeron's .logbuffer file, the
// 32-byte data frame header, an exclusive (single writer) publication that
// claims frames for zero-copy encoding, and an image that reads committed
// frames in order.
//
// It follows Aeron's Java client (LogBufferDescriptor, FrameDescriptor,
// HeaderWriter, ExclusiveTermAppender, ExclusivePublication, TermReader,
// Image). lirm/aeron-go's logbuffer packages cover the frame flyweights and
// a term reader, but its appender needs a memory-mapped file and does not
// rotate terms, so this package owns its memory and its rotation. Its terms
// are read by aeron-go's term.Read over an atomic.Buffer just as by our
// own Image (aeron_test.go checks it).
//
// A log lives in memory we allocate ([New], [NewAt]) or in a shared mapping
// of a file with the driver's .logbuffer layout ([CreateFile], [OpenFile]).
//
// # Data frame header
//
// All fields little-endian. A frame starts on a 32-byte boundary; the next
// one starts at align(frameLength, 32). The gap is not part of the length.
//
//	 0                   1                   2                   3
//	 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//	+---------------------------------------------------------------+
//	|R|                 Frame Length (int32)                        |  0
//	+---------------+---------------+-------------------------------+
//	|    Version    |B|E|S| Flags   |          Type (uint16)        |  4
//	+---------------+---------------+-------------------------------+
//	|                      Term Offset (int32)                      |  8
//	+---------------------------------------------------------------+
//	|                      Session ID (int32)                       | 12
//	+---------------------------------------------------------------+
//	|                      Stream ID (int32)                        | 16
//	+---------------------------------------------------------------+
//	|                       Term ID (int32)                         | 20
//	+---------------------------------------------------------------+
//	|                                                               | 24
//	+                   Reserved Value (int64)                      +
//	|                                                               | 28
//	+---------------------------------------------------------------+
//	|                      Payload ...                              | 32
//
// Frame length 0 means nothing has been written there yet; a negative length
// marks a frame being written. Type is [TypeData] or [TypePad]; flags are
// [FlagUnfragmented] (this package never fragments).
//
// # Log layout
//
//	offset 0          T            2T           3T            3T+4096
//	+------------+------------+------------+---------------+
//	|  term 0    |  term 1    |  term 2    |  metadata     |
//	+------------+------------+------------+---------------+
//	                                          |
//	      0 tail counter 0   (termID<<32 | termOffset, int64)
//	      8 tail counter 1
//	     16 tail counter 2
//	     24 active term count (int32)
//	    128 end of stream position (int64)
//	    264 initial term id, 268 default header length (32),
//	    272 MTU, 276 term length, 280 page size, 284 window
//	    320 default frame header (32 of 128 bytes)
//
// T is the term length, a power of two in [64 KiB, 1 GiB]. Positions map to
// terms as
//
//	position   = int64(int32(termID - initialTermID)) << log2(T) + termOffset
//	termID     = int32(position >> log2(T)) + initialTermID
//	termOffset = position & (T - 1)
//	partition  = (position >> log2(T)) % 3
//
// so term ids wrap around through math.MaxInt32 without breaking positions.
// The highest position is T << 31 ([ErrMaxPositionExceeded]).
//
// # Publication
//
// [ExclusivePublication.TryClaim] reserves align(32+length, 32) bytes at the
// tail, stores the raw tail, writes the header with a negative length (an
// ordered 8-byte store of -length with version, flags and type, then the
// other fields), and returns a [Claim] over the payload bytes in the term.
// [Claim.Commit] publishes the frame with an ordered store of +length;
// [Claim.Abort] makes it padding first. A claim is at most MTU-32 bytes. If
// the frame does not fit in the rest of the term, that rest becomes one
// padding frame, the next partition's tail is set to (termID+1, 0), the
// active term count is advanced, and the claim is retried in the new term.
//
// Back-pressure: a claim that would start at or past the position limit
// returns [BackPressured] (not an error); a claim that starts before the
// limit may end past it. The limit starts at the tail plus
// [Log.TermWindowLength] and the caller moves it with
// [ExclusivePublication.SetPositionLimit].
//
// Cleaning: a term reuses the partition of the term three before it, and
// a reader needs zeros only where it looks for the next frame: it reads
// frames while their length word is positive and stops at the first that
// is not. So the publication keeps one invariant: the header slot at the
// raw tail reads as zeros (or as a frame header it wrote). Before the tail
// moves past a claim it zeroes the alignment gap after the frame and the
// header slot after the gap; when the frame ends the term, or padding fills
// its rest, that slot is the first of the next partition, zeroed before the
// frame or the padding is committed. The next partition holds the term two
// before the active one, which every reader has left while the limit is at
// most the slowest reader's position plus one term. (So a header's reserved value
// is zero until the caller sets it.) [ExclusivePublication.TryClaim] also
// zeroes the payload, just before the caller writes it;
// [ExclusivePublication.TryClaimOverwrite] and [ExclusivePublication.Offer]
// leave it to the caller, who writes every byte. Beyond the slot at the
// tail, a partition holds the older term's bytes until the writer comes to
// them, and no reader reaches them.
//
// Aeron's driver cleans instead a whole partition a term ahead of the
// writer, so its writer's stores land on zeros written long before: on a
// log larger than the caches every payload byte then goes to memory twice,
// once as zeros and once as data, and in a snapshot of 1M orders that was
// about 2.5 ns of the writer's time an order (docs/performance.md).
//
// With no limit (no reader keeping up) a reader may be lapped: only the
// terms behind the active one are safe to read.
//
// # Image
//
// [Image.Poll], [Image.ControlledPoll] and [Image.Drain] read frames at the
// image's position while their length word, loaded atomically, is positive,
// skip padding frames, and continue into the next term at a term's end.
//
// # Concurrency
//
// One goroutine writes (the publication) and one reads (each image); they
// may be different goroutines. The frame length word, the tail counters, the
// active term count and both positions are accessed with sync/atomic, which
// orders the plain header and payload writes before the commit. Neither the
// publication nor the image is safe for use by several writers or several
// readers at once.
package logbuf
