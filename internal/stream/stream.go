// Package stream holds the two small interfaces through which messages
// cross a stream without fragmentation: [Claimer], the publication side
// (one outstanding zero-copy claim, encoded in place, then committed or
// aborted), and [FragmentSource], the subscription side (an image's Poll
// handing over whole committed messages with the position after each).
//
// Both are shaped so that our log buffer (internal/logbuf, adapted by
// [PublicationClaimer] and [ImageSource]) and lirm/aeron-go's Publication
// and Image (adapted in cluster/aeronhost) satisfy them; the snapshot
// publisher and loader, the node's consensus-module state and the cluster
// services are written against them only. The package sits on the log
// buffer and imports nothing else of ours, so that packages which move
// messages (cluster) need not link the packages that produce them (the
// engine behind snapshot).
package stream

import (
	"github.com/matchlog/matchlog/internal/logbuf"
)

// Claimer is the publication side a publisher writes through (snapshot's
// Publisher, the consensus-module snapshot): one outstanding claim at a
// time, encoded in place and then committed or aborted. It is small on purpose so that both our log buffer
// ([PublicationClaimer]) and an Aeron client publication can satisfy it
// through a thin adapter.
type Claimer interface {
	// TryClaim claims a frame for a payload of exactly length bytes (at
	// most MaxPayloadLength) and returns the payload bytes to encode into,
	// and the position after the frame. A negative position with a nil
	// error asks the caller to retry later: [BackPressured] or
	// [AdminAction]. Any other negative position is a failure.
	TryClaim(length int) (buf []byte, position int64, err error)
	// Commit publishes the outstanding claim; Abort turns it into padding.
	Commit()
	Abort()
	// MaxPayloadLength is the longest claim, MTU - 32.
	MaxPayloadLength() int
}

// AheadClaimer is a [Claimer] that can hold several claims at once: a
// parallel snapshot take claims the batches its workers encode into ahead
// of them. A claim made with ClaimAhead stays outstanding until
// CommitAhead or AbortAhead with its ticket; they are called in the order
// the claims were made, and a reader stops at the first claim outstanding,
// so claims ahead keep the reader, and so the position limit, where they
// began. TryClaim, Commit and Abort must not be used while claims made
// ahead are outstanding.
type AheadClaimer interface {
	Claimer
	// ClaimAhead claims as TryClaim does, leaving earlier claims ahead
	// outstanding, and returns a ticket for CommitAhead or AbortAhead.
	ClaimAhead(length int) (buf []byte, position int64, ticket int, err error)
	// CommitAhead publishes the claim of ticket; AbortAhead turns it into
	// padding.
	CommitAhead(ticket int)
	AbortAhead(ticket int)
	// Window is the most bytes of frames that can be claimed ahead of
	// the slowest reader (the log's term window): more claims ahead than
	// that are back-pressured until the first of them is committed.
	Window() int
}

// Overwriter is a [Claimer] that can also claim without zeroing the
// payload, for a publisher that writes every byte of every claim before it
// commits (snapshot's Publisher). A claim zeroed and then written over
// costs its memory twice: internal/logbuf's package doc has the numbers.
type Overwriter interface {
	// TryClaimOverwrite is TryClaim whose payload holds unspecified bytes
	// (in our log buffer, those of an older term) until the caller writes
	// them all.
	TryClaimOverwrite(length int) (buf []byte, position int64, err error)
}

// AheadOverwriter is an [AheadClaimer] whose claims ahead can be made
// without zeroing the payload, as [Overwriter]'s.
type AheadOverwriter interface {
	ClaimAheadOverwrite(length int) (buf []byte, position int64, ticket int, err error)
}

// Aeron's publication results that mean "try again".
const (
	BackPressured int64 = -2 // Publication.BACK_PRESSURED
	AdminAction   int64 = -3 // Publication.ADMIN_ACTION
)

// PublicationClaimer adapts a [logbuf.ExclusivePublication] to [Claimer].
// It holds the outstanding claim, so claiming allocates nothing.
type PublicationClaimer struct {
	Pub *logbuf.ExclusivePublication
	// Checksum, if set, returns the reserved value of a frame with this
	// payload, written at Commit (archive.FrameChecksum, so that a torn
	// last frame is told from a whole one after a crash).
	Checksum func(payload []byte) int64
	c        logbuf.Claim
	// The claims made ahead, by ticket; reset once the last is done.
	ahead []logbuf.Claim
	done  int
}

// TryClaim implements [Claimer].
func (a *PublicationClaimer) TryClaim(length int) ([]byte, int64, error) {
	return a.tryClaim(a.Pub.TryClaim(length))
}

// TryClaimOverwrite implements [Overwriter].
func (a *PublicationClaimer) TryClaimOverwrite(length int) ([]byte, int64, error) {
	return a.tryClaim(a.Pub.TryClaimOverwrite(length))
}

func (a *PublicationClaimer) tryClaim(c logbuf.Claim, pos int64, err error) ([]byte, int64, error) {
	if err != nil || pos < 0 {
		return nil, pos, err
	}
	a.c = c
	return a.c.Buffer(), pos, nil
}

// Commit implements [Claimer].
func (a *PublicationClaimer) Commit() {
	if a.Checksum != nil {
		a.c.SetReservedValue(a.Checksum(a.c.Buffer()))
	}
	a.c.Commit()
}

// Abort implements [Claimer].
func (a *PublicationClaimer) Abort() { a.c.Abort() }

// MaxPayloadLength implements [Claimer].
func (a *PublicationClaimer) MaxPayloadLength() int { return a.Pub.MaxPayloadLength() }

// ClaimAhead implements [AheadClaimer]. After the claims ahead of the first
// take, claiming allocates nothing.
func (a *PublicationClaimer) ClaimAhead(length int) ([]byte, int64, int, error) {
	return a.claimAhead(a.Pub.TryClaim(length))
}

// ClaimAheadOverwrite implements [AheadOverwriter].
func (a *PublicationClaimer) ClaimAheadOverwrite(length int) ([]byte, int64, int, error) {
	return a.claimAhead(a.Pub.TryClaimOverwrite(length))
}

func (a *PublicationClaimer) claimAhead(c logbuf.Claim, pos int64, err error) ([]byte, int64, int, error) {
	if err != nil || pos < 0 {
		return nil, pos, 0, err
	}
	a.ahead = append(a.ahead, c)
	t := len(a.ahead) - 1
	return a.ahead[t].Buffer(), pos, t, nil
}

// CommitAhead implements [AheadClaimer], with the frame's checksum as
// Commit writes it.
func (a *PublicationClaimer) CommitAhead(ticket int) {
	c := &a.ahead[ticket]
	if a.Checksum != nil {
		c.SetReservedValue(a.Checksum(c.Buffer()))
	}
	c.Commit()
	a.doneAhead()
}

// AbortAhead implements [AheadClaimer].
func (a *PublicationClaimer) AbortAhead(ticket int) {
	a.ahead[ticket].Abort()
	a.doneAhead()
}

func (a *PublicationClaimer) doneAhead() {
	if a.done++; a.done == len(a.ahead) {
		clear(a.ahead) // drop the terms
		a.ahead, a.done = a.ahead[:0], 0
	}
}

// Window implements [AheadClaimer]: the log's term window.
func (a *PublicationClaimer) Window() int { return a.Pub.Log().TermWindowLength() }

// FragmentHandler receives one committed, unfragmented message:
// buf[offset:offset+length], and the stream position just after its frame.
type FragmentHandler func(buf []byte, offset, length int, position int64)

// FragmentSource is the subscription side a loader reads through
// (snapshot's Loader, the node's snapshot and log readers), an image's
// Poll: it hands up to limit committed fragments, in order, to handler and
// returns how many it handed over.
type FragmentSource interface {
	Poll(handler FragmentHandler, limit int) int
}

// ImageSource adapts a [logbuf.Image] to [FragmentSource].
type ImageSource struct {
	Img *logbuf.Image
	h   FragmentHandler
	fn  logbuf.FragmentHandler // bound once, so Poll allocates nothing
}

// NewImageSource returns img as a [FragmentSource].
func NewImageSource(img *logbuf.Image) *ImageSource {
	s := &ImageSource{Img: img}
	s.fn = s.onFragment
	return s
}

func (s *ImageSource) onFragment(buf []byte, offset, length int, hdr logbuf.Header) {
	s.h(buf, offset, length, hdr.Position())
}

// Poll implements [FragmentSource].
func (s *ImageSource) Poll(handler FragmentHandler, limit int) int {
	s.h = handler
	n := s.Img.Poll(s.fn, limit)
	s.h = nil
	return n
}

// FrameSource is a FragmentSource over payloads already copied out of their
// frames, in stream order: a snapshot read from a file or captured for a
// benchmark. Positions advance by each frame's aligned length, as they
// would in the log the frames came from (starting at 0).
type FrameSource struct {
	frames [][]byte
	i      int
	pos    int64
}

// NewFrameSource returns a FrameSource at the first of frames.
func NewFrameSource(frames [][]byte) *FrameSource { return &FrameSource{frames: frames} }

// Poll implements [FragmentSource].
func (s *FrameSource) Poll(handler FragmentHandler, limit int) int {
	n := 0
	for n < limit && s.i < len(s.frames) {
		f := s.frames[s.i]
		s.i++
		s.pos += int64(logbuf.Align(len(f)+logbuf.HeaderLength, logbuf.FrameAlignment))
		handler(f, 0, len(f), s.pos)
		n++
	}
	return n
}
