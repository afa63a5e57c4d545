package aeronhost

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/lirm/aeron-go/aeron"
	"github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	"github.com/lirm/aeron-go/aeron/logbuffer/term"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/stream"
)

// claimPublication is the part of *aeron.Publication the snapshot side
// uses. It is an interface so that the mapping of aeron-go's results can be
// tested without a media driver.
type claimPublication interface {
	TryClaim(length int32, claim *logbuffer.Claim) int64
	Offer(buffer *atomic.Buffer, offset, length int32, rvs term.ReservedValueSupplier) int64
}

var _ claimPublication = (*aeron.Publication)(nil)

// ErrClaimOutstanding is returned by a snapshot publication's TryClaim or
// Offer while an earlier claim has been neither committed nor aborted.
var ErrClaimOutstanding = errors.New("aeronhost: snapshot publication: a claim is outstanding")

// snapshotPublication adapts an aeron-go publication to cluster.Publication.
//
// Results: a position >= 0 is success. BackPressured and AdminAction are
// returned as they are, with a nil error (retry after idling); so is
// NotConnected (the archive has not yet connected to the recorded
// publication) until it has lasted connectTimeout, after which it is an
// error. PublicationClosed, MaxPositionExceeded and any other negative
// result are errors.
type snapshotPublication struct {
	p              claimPublication
	maxPayload     int
	connectTimeout time.Duration
	now            func() time.Time

	claim        logbuffer.Claim
	claimed      bool
	buf          atomic.Buffer
	notConnSince time.Time
}

var _ cluster.Publication = (*snapshotPublication)(nil)

func newSnapshotPublication(p claimPublication, maxPayload int, connectTimeout time.Duration) *snapshotPublication {
	return &snapshotPublication{p: p, maxPayload: maxPayload, connectTimeout: connectTimeout, now: time.Now}
}

// result maps an aeron-go publication result to the cluster.Publication
// convention.
func (s *snapshotPublication) result(r int64, what string) (int64, error) {
	if r >= 0 {
		s.notConnSince = time.Time{}
		return r, nil
	}
	switch r {
	case aeron.BackPressured, aeron.AdminAction:
		s.notConnSince = time.Time{}
		return r, nil
	case aeron.NotConnected:
		now := s.now()
		if s.notConnSince.IsZero() {
			s.notConnSince = now
		}
		if now.Sub(s.notConnSince) < s.connectTimeout {
			return stream.BackPressured, nil
		}
		return r, fmt.Errorf("aeronhost: snapshot publication %s: not connected for %v", what, now.Sub(s.notConnSince))
	case aeron.PublicationClosed:
		return r, fmt.Errorf("aeronhost: snapshot publication %s: publication closed", what)
	case aeron.MaxPositionExceeded:
		return r, fmt.Errorf("aeronhost: snapshot publication %s: max position exceeded", what)
	}
	return r, fmt.Errorf("aeronhost: snapshot publication %s: unexpected result %d", what, r)
}

// TryClaim implements cluster.Publication.
func (s *snapshotPublication) TryClaim(n int) ([]byte, int64, error) {
	if s.claimed {
		return nil, aeron.PublicationClosed, ErrClaimOutstanding
	}
	if n < 0 || n > s.maxPayload {
		// aeron-go panics on a claim longer than its max payload.
		return nil, aeron.PublicationClosed, fmt.Errorf("aeronhost: snapshot claim of %d bytes, max payload is %d", n, s.maxPayload)
	}
	r := s.p.TryClaim(int32(n), &s.claim)
	pos, err := s.result(r, "claim")
	if err != nil || pos < 0 {
		return nil, pos, err
	}
	b, ok := bytesOf(s.claim.Buffer(), s.claim.Offset(), int32(n))
	if !ok {
		s.claim.Abort()
		return nil, aeron.PublicationClosed, fmt.Errorf("aeronhost: snapshot claim of %d bytes returned a frame of %d", n, s.claim.Buffer().Capacity())
	}
	s.claimed = true
	return b, pos, nil
}

// Commit implements cluster.Publication.
func (s *snapshotPublication) Commit() {
	if s.claimed {
		s.claimed = false
		s.claim.Commit()
	}
}

// Abort implements cluster.Publication.
func (s *snapshotPublication) Abort() {
	if s.claimed {
		s.claimed = false
		s.claim.Abort()
	}
}

// MaxPayloadLength implements cluster.Publication.
func (s *snapshotPublication) MaxPayloadLength() int { return s.maxPayload }

// Offer implements cluster.Publication. Messages are offered unfragmented:
// at most MaxPayloadLength bytes.
func (s *snapshotPublication) Offer(msg []byte) (int64, error) {
	if s.claimed {
		return aeron.PublicationClosed, ErrClaimOutstanding
	}
	if len(msg) > s.maxPayload || len(msg) > math.MaxInt32 {
		return aeron.PublicationClosed, fmt.Errorf("aeronhost: snapshot offer of %d bytes, max payload is %d", len(msg), s.maxPayload)
	}
	wrapBytes(&s.buf, msg)
	r := s.p.Offer(&s.buf, 0, int32(len(msg)), nil)
	s.buf.Wrap(nil, 0)
	return s.result(r, "offer")
}
