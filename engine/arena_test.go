package engine

import (
	"fmt"
	"testing"
	"unsafe"

	"github.com/matchlog/matchlog/internal/hugepage"
	"github.com/matchlog/matchlog/internal/invariants"
)

func addr(b []order) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// TestArenaCarves: an arena hands out disjoint buffers of exactly the size
// asked for (a buffer's capacity ends where the next begins), one after
// another, and a small restore's arena is the 32 KiB slab.
func TestArenaCarves(t *testing.T) {
	var a slotArena
	var prev []order
	for i, n := range []int{8, 8, 16, 4, 64, 32} {
		b := a.take(n, 100)
		if len(b) != n || cap(b) != n {
			t.Fatalf("buffer %d: len %d cap %d, want %d", i, len(b), cap(b), n)
		}
		if prev != nil && addr(b) != addr(prev)+uintptr(len(prev))*32 {
			t.Fatalf("buffer %d does not follow buffer %d", i, i-1)
		}
		prev = b
	}
	if got := a.carved; got != 132 {
		t.Fatalf("carved %d slots, want 132", got)
	}
	if len(a.free)+a.carved != arenaMinSlots {
		t.Fatalf("a restore of 100 slots made an arena of %d slots, want %d", len(a.free)+a.carved, arenaMinSlots)
	}
}

// TestArenaSpareFirst: an arena of whole huge pages leaves the head of its
// allocation spare; once the arena runs out, buffers come from that head,
// below the arena, before any new arena is made.
func TestArenaSpareFirst(t *testing.T) {
	var a slotArena
	first := a.take(64, arenaMaxSlots)
	if addr(first)%hugepage.Size != 0 {
		t.Skipf("the arena is not huge-page aligned (%#x): hugepage.Make made a plain slice", addr(first))
	}
	if len(a.spare) == 0 {
		t.Skip("the allocation happened to start on a huge page: no head")
	}
	base, spare := addr(first), addr(a.spare)
	end := base + uintptr(len(a.free)+64)*32
	for len(a.free) >= 64 {
		a.take(64, 1)
	}
	b := a.take(64, 1)
	if addr(b) != spare {
		t.Fatalf("after the arena [%#x, %#x) ran out, a buffer at %#x, want the spare head at %#x", base, end, addr(b), spare)
	}
}

// TestArenaWant: the header's count sizes arenas only up to
// arenaMaxSlots, and after the first orders at their ratio of slots.
func TestArenaWant(t *testing.T) {
	var a slotArena
	if got := a.want(1 << 40); got != arenaMaxSlots {
		t.Fatalf("a header of 2^40 orders asks for %d slots, want at most %d", got, arenaMaxSlots)
	}
	if got := a.want(800); got != 900 {
		t.Fatalf("before any order: want(800) = %d, want 900 (9/8)", got)
	}
	a.carved, a.orders = 3000, 2000
	if got := a.want(800); got != 1201 {
		t.Fatalf("at 1.5 slots an order: want(800) = %d, want 1201", got)
	}
}

// TestRestoreAcrossArenas restores a book of 200,000 orders with arenas
// lowered to 2 MiB, so that it takes many arenas, their spare heads and
// every chunk form (levels of one order to thousands: half-size tails,
// the long form), then checks the restored engine and continues it and
// the original with the same commands: every event and the state hash
// must agree.
func TestRestoreAcrossArenas(t *testing.T) {
	if invariants.Enabled {
		t.Skip("the invariants build checks the whole engine after every command: quadratic in this book; the test calls Check itself")
	}
	old := arenaMaxSlots
	arenaMaxSlots = hugepage.Size / 32
	defer func() { arenaMaxSlots = old }()

	e := New()
	var seq uint64
	apply := func(en *Engine, c Command) []Event {
		return en.Apply(&c)
	}
	cmd := func(c Command) Command { seq++; c.Source, c.Seq = 1, seq; return c }
	for i := uint32(1); i <= 3; i++ {
		apply(e, cmd(Command{Kind: CmdDefineInstrument, Instrument: i, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000}))
	}
	rng := uint64(0x9e3779b97f4a7c15)
	next := func(n uint64) uint64 {
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return rng % n
	}
	const orders = 200_000
	for id := uint64(1); id <= orders; id++ {
		c := Command{Kind: CmdNewOrder, Instrument: uint32(1 + next(3)), OrderID: id, Account: 1 + next(500),
			Type: Limit, TIF: GTC, Qty: 1 + int64(next(100))}
		// A few deep levels of thousands of orders, many of tens, a tail
		// of single orders.
		var off int64
		switch r := next(100); {
		case r < 30:
			off = int64(next(4))
		case r < 90:
			off = 4 + int64(next(2000))
		default:
			off = 2004 + int64(next(200_000))
		}
		if next(2) == 0 {
			c.Side, c.Price = Buy, 500_000-off
		} else {
			c.Side, c.Price = Sell, 500_001+off
		}
		for _, ev := range apply(e, cmd(c)) {
			if ev.Kind == EvRejected {
				t.Fatalf("order %d rejected: %v", id, ev.Reason)
			}
		}
	}
	r := New()
	rs := r.Restorer()
	if err := e.SnapshotTo(rs); err != nil || rs.Err() != nil {
		t.Fatalf("restore: %v, %v", err, rs.Err())
	}
	if rs.arena.carved <= 3*arenaMaxSlots {
		t.Fatalf("the restore carved %d slots, not enough to need several %d-slot arenas", rs.arena.carved, arenaMaxSlots)
	}
	if err := r.Check(); err != nil {
		t.Fatalf("restored engine: %v", err)
	}
	if a, b := e.StateHash(), r.StateHash(); a != b {
		t.Fatalf("state hash %016x restored as %016x", a, b)
	}
	// Cancels all over the book, orders that sweep a few levels, new
	// orders at the deep levels.
	for i := range 60_000 {
		var c Command
		switch i % 3 {
		case 0:
			c = Command{Kind: CmdCancel, OrderID: 1 + next(orders)}
		case 1:
			c = Command{Kind: CmdNewOrder, Instrument: uint32(1 + next(3)), OrderID: orders + 1 + uint64(i), Account: 1 + next(500),
				Type: Limit, TIF: IOC, Qty: 1 + int64(next(400))}
			if next(2) == 0 {
				c.Side, c.Price = Buy, 500_003
			} else {
				c.Side, c.Price = Sell, 499_998
			}
		default:
			c = Command{Kind: CmdNewOrder, Instrument: uint32(1 + next(3)), OrderID: orders + 1 + uint64(i), Account: 1 + next(500),
				Type: Limit, TIF: GTC, Qty: 1 + int64(next(100)), Side: Buy, Price: 500_000 - 4 - int64(next(50))}
		}
		c = cmd(c)
		want, got := fmt.Sprint(apply(e, c)), fmt.Sprint(apply(r, c))
		if want != got {
			t.Fatalf("command %d (%+v): original %s, restored %s", i, c, want, got)
		}
	}
	if err := r.Check(); err != nil {
		t.Fatalf("restored engine after the commands: %v", err)
	}
	if a, b := e.StateHash(), r.StateHash(); a != b {
		t.Fatalf("after the commands, state hash %016x against the restored engine's %016x", a, b)
	}
}
