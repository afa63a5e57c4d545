package stream_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
)

type frag struct {
	payload []byte
	pos     int64
}

func drain(src stream.FragmentSource, limit int) []frag {
	var out []frag
	for {
		n := src.Poll(func(buf []byte, off, length int, pos int64) {
			out = append(out, frag{bytes.Clone(buf[off : off+length]), pos})
		}, limit)
		if n == 0 {
			return out
		}
	}
}

// Messages claimed through PublicationClaimer come out of an ImageSource
// whole, in order, with the position after each frame; an aborted claim is
// padding the image skips, and the checksum function fills the reserved
// value.
func TestClaimAndPoll(t *testing.T) {
	l, err := logbuf.New(64*1024, 1408, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var sums int
	c := &stream.PublicationClaimer{Pub: l.Publication(), Checksum: func(p []byte) int64 { sums++; return int64(len(p)) }}
	if c.MaxPayloadLength() != 1408-logbuf.HeaderLength {
		t.Fatalf("MaxPayloadLength %d", c.MaxPayloadLength())
	}
	var want []frag
	for i, n := range []int{1, 31, 100, c.MaxPayloadLength()} {
		buf, pos, err := c.TryClaim(n)
		if err != nil || pos < 0 || len(buf) != n {
			t.Fatalf("claim %d: %d bytes, position %d, %v", n, len(buf), pos, err)
		}
		for j := range buf {
			buf[j] = byte(i + j)
		}
		if i == 2 {
			c.Abort()
			continue
		}
		c.Commit()
		want = append(want, frag{bytes.Clone(buf), pos})
	}
	if sums != 3 {
		t.Errorf("checksum called %d times for 3 commits", sums)
	}
	var reserved []int64
	l.ImageAt(0).Poll(func(_ []byte, _, _ int, hdr logbuf.Header) { reserved = append(reserved, hdr.ReservedValue()) }, 10)
	if want := []int64{1, 31, int64(c.MaxPayloadLength())}; !slices.Equal(reserved, want) {
		t.Errorf("reserved values %v, want %v (the checksum of each committed payload)", reserved, want)
	}
	got := drain(stream.NewImageSource(l.ImageAt(0)), 1)
	if len(got) != len(want) {
		t.Fatalf("polled %d fragments, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].payload, want[i].payload) || got[i].pos != want[i].pos {
			t.Errorf("fragment %d: %d bytes at %d, want %d bytes at %d", i, len(got[i].payload), got[i].pos, len(want[i].payload), want[i].pos)
		}
	}
}

// Claims made ahead stay outstanding together: a reader stops at the first
// one not committed and then reads them all, in order, once they are; an
// aborted one is padding; each commit writes its frame's checksum; and the
// tickets start again from 0 once every claim ahead is done. Window is
// the log's term window.
func TestClaimAhead(t *testing.T) {
	l, err := logbuf.New(64*1024, 1408, 0, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := &stream.PublicationClaimer{Pub: l.Publication(), Checksum: func(p []byte) int64 { return int64(p[0]) }}
	var ac stream.AheadClaimer = c
	if ac.Window() != l.TermWindowLength() {
		t.Fatalf("Window %d, want the term window %d", ac.Window(), l.TermWindowLength())
	}
	src := stream.NewImageSource(l.ImageAt(0))
	for round := range 2 {
		var bufs [][]byte
		var tickets []int
		for i := range 4 {
			buf, pos, tk, err := ac.ClaimAhead(40)
			if err != nil || pos < 0 {
				t.Fatalf("round %d claim %d: position %d, %v", round, i, pos, err)
			}
			if tk != i {
				t.Fatalf("round %d claim %d: ticket %d, want %d", round, i, tk, i)
			}
			buf[0] = byte(10*round + i + 1)
			bufs, tickets = append(bufs, buf), append(tickets, tk)
		}
		if got := drain(src, 10); len(got) != 0 {
			t.Fatalf("round %d: %d fragments read before any commit", round, len(got))
		}
		ac.CommitAhead(tickets[0])
		if got := drain(src, 10); len(got) != 1 || got[0].payload[0] != bufs[0][0] {
			t.Fatalf("round %d: after the first commit read %d fragments, want the first", round, len(got))
		}
		ac.AbortAhead(tickets[1])
		ac.CommitAhead(tickets[2])
		ac.CommitAhead(tickets[3])
		got := drain(src, 10)
		if len(got) != 2 || got[0].payload[0] != bufs[2][0] || got[1].payload[0] != bufs[3][0] {
			t.Fatalf("round %d: read %d fragments after the rest, want claims 2 and 3 (1 aborted)", round, len(got))
		}
	}
	var reserved []int64
	l.ImageAt(0).Poll(func(_ []byte, _, _ int, hdr logbuf.Header) { reserved = append(reserved, hdr.ReservedValue()) }, 10)
	if want := []int64{1, 3, 4, 11, 13, 14}; !slices.Equal(reserved, want) {
		t.Errorf("reserved values %v, want %v (each committed frame's checksum)", reserved, want)
	}
}

// A FrameSource hands its payloads in order, limit at a time, with
// positions advancing by each frame's aligned length from 0.
func TestFrameSource(t *testing.T) {
	frames := [][]byte{make([]byte, 1), make([]byte, 32), make([]byte, 100)}
	got := drain(stream.NewFrameSource(frames), 2)
	// Frames of 33, 64 and 132 bytes, each aligned to 32.
	wantPos := []int64{64, 128, 288}
	if len(got) != 3 {
		t.Fatalf("%d fragments", len(got))
	}
	for i, f := range got {
		if len(f.payload) != len(frames[i]) || f.pos != wantPos[i] {
			t.Errorf("fragment %d: %d bytes at %d, want %d at %d", i, len(f.payload), f.pos, len(frames[i]), wantPos[i])
		}
	}
}
