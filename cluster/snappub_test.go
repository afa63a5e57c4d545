package cluster

import (
	"testing"

	"github.com/matchlog/matchlog/internal/logbuf"
)

// TestSnapPubClaimsZeroed: a service's claims through the node's snapshot
// publication (TryClaim, ClaimAhead) read as zeros even over a log full of
// an older snapshot's bytes; only the overwriting claims, for a writer that
// covers every byte, leave those bytes.
func TestSnapPubClaimsZeroed(t *testing.T) {
	l, err := logbuf.New(64<<10, 1408, 0, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range logbuf.PartitionCount {
		b := l.Term(i)
		if i == 0 {
			b = b[logbuf.HeaderLength:] // the header slot at the tail
		}
		for j := range b {
			b[j] = 0x5a
		}
	}
	s := &snapPub{log: l, pub: l.Publication()}
	s.c.Pub = s.pub
	zero := func(b []byte) bool {
		for _, c := range b {
			if c != 0 {
				return false
			}
		}
		return true
	}
	claims := []struct {
		name   string
		claim  func() ([]byte, int64, error)
		zeroed bool
		commit func()
	}{
		{"TryClaim", func() ([]byte, int64, error) { return s.TryClaim(100) }, true, s.Commit},
		{"TryClaimOverwrite", func() ([]byte, int64, error) { return s.TryClaimOverwrite(100) }, false, s.Commit},
		{"ClaimAhead", func() ([]byte, int64, error) { b, p, _, err := s.ClaimAhead(100); return b, p, err }, true, func() { s.CommitAhead(0) }},
		{"ClaimAheadOverwrite", func() ([]byte, int64, error) { b, p, _, err := s.ClaimAheadOverwrite(100); return b, p, err }, false, func() { s.CommitAhead(0) }},
	}
	for _, c := range claims {
		b, pos, err := c.claim()
		if err != nil || pos < 0 {
			t.Fatalf("%s: position %d, %v", c.name, pos, err)
		}
		if zero(b) != c.zeroed {
			t.Fatalf("%s: payload zeroed %v, want %v", c.name, zero(b), c.zeroed)
		}
		for j := range b {
			b[j] = 1
		}
		c.commit()
	}
}
