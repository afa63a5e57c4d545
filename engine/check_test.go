package engine

import (
	"strings"
	"testing"
)

// TestCheckCatches corrupts a healthy engine one way at a time and requires
// the structure checker to notice each.
func TestCheckCatches(t *testing.T) {
	build := func(t *testing.T) (*Engine, *book) {
		s := newScript(t)
		s.do(limit(1, Buy, 100, 5))
		s.do(limit(2, Buy, 100, 3))
		s.do(limit(3, Sell, 105, 4))
		s.do(Command{OrderID: 4, Account: 4, Side: Buy, Type: Stop, TIF: IOC, Ref: RefMark, Stop: 200, Qty: 1})
		s.do(limit(5, Buy, 100, 2))
		s.do(Command{Kind: CmdCancel, Instrument: 1, OrderID: 1}) // slot 0 of level 100 becomes a tombstone below head
		if err := s.e.Check(); err != nil {
			t.Fatal(err)
		}
		return s.e, s.e.byID[1]
	}
	cases := []struct {
		name, want string
		corrupt    func(e *Engine, b *book)
	}{
		{"level total", "totals", func(e *Engine, b *book) { b.lmap[0].get(100).qty++ }},
		{"level count", "totals", func(e *Engine, b *book) { b.lmap[0].get(100).count++ }},
		{"empty level not counted", "empty levels kept", func(e *Engine, b *book) { b.addLevel(&e.lp, 0, 90) }},
		{"empty level with chunks", "empty level kept", func(e *Engine, b *book) {
			l := b.addLevel(&e.lp, 0, 90)
			b.empty[0]++
			e.lp.push(l, order{})
			l.count, l.qty = 0, 0
		}},
		{"empty levels miscounted", "the pool counts", func(e *Engine, b *book) { e.lp.empties++ }},
		{"inline entry past the list", "not in use, is not empty", func(e *Engine, b *book) {
			l := b.lmap[0].get(100)
			l.inl[l.nc].set(make([]order, 1<<l.shift), e.lp.epoch, 0)
		}},
		{"inline list past its capacity", "short chunk list", func(e *Engine, b *book) { b.lmap[0].get(100).nc = inlChunks + 1 }},
		{"chunk without its buffer", "buffer 0x0", func(e *Engine, b *book) { b.lmap[0].get(100).inl[0].p = nil }},
		{"last book stale", "last book", func(e *Engine, b *book) {
			nb := *b
			e.lastBook = &nb
		}},
		{"last high-water mark stale", "last high-water", func(e *Engine, b *book) {
			hw := *e.lastHW
			e.lastHW = &hw
		}},
		{"level totals negative", "bad totals", func(e *Engine, b *book) { b.lmap[0].get(100).qty = -1 }},
		{"index entry lost", "index", func(e *Engine, b *book) { e.index.del(2) }},
		{"index entry stale", "index", func(e *Engine, b *book) {
			x, _ := e.index.get(2)
			e.index.put(2, restEnt(x.slot(), x.px()+1, x.side()))
		}},
		{"index slot", "index", func(e *Engine, b *book) {
			x, _ := e.index.get(2)
			e.index.put(2, restEnt(x.slot()+1, x.px(), x.side()))
		}},
		{"index side", "index", func(e *Engine, b *book) {
			x, _ := e.index.get(2)
			e.index.put(2, restEnt(x.slot(), x.px(), Sell))
		}},
		{"resting entry marked armed", "index", func(e *Engine, b *book) {
			x, _ := e.index.get(2)
			e.index.put(2, x|1)
		}},
		{"trigger entry not armed", "names no armed position", func(e *Engine, b *book) {
			e.index.put(4, restEnt(0, b.ticks(200), Buy))
		}},
		{"trigger entry past the table", "names no armed position", func(e *Engine, b *book) {
			e.index.put(4, armedEnt(uint64(len(e.armed))))
		}},
		{"armed location stale", "does not match the tree", func(e *Engine, b *book) {
			x, _ := e.index.get(4)
			e.armed[x.pos()].px++
		}},
		{"armed location of another instrument", "does not match the tree", func(e *Engine, b *book) {
			x, _ := e.index.get(4)
			e.armed[x.pos()].inst++
		}},
		{"armed position not freed", "triggers and", func(e *Engine, b *book) {
			e.armed = append(e.armed, loc{})
		}},
		{"armed position freed and held", "free armed position", func(e *Engine, b *book) {
			x, _ := e.index.get(4)
			e.armed = append(e.armed, loc{})
			e.armFree = append(e.armFree, x.pos())
		}},
		{"free armed position not cleared", "free armed position", func(e *Engine, b *book) {
			e.armed = append(e.armed, loc{px: 1})
			e.armFree = append(e.armFree, uint64(len(e.armed)-1))
		}},
		{"two triggers on one position", "does not match the tree", func(e *Engine, b *book) {
			x, _ := e.index.get(4)
			t := trigger{stop: 210, sk: triggerSK(e.nextSeq, STPNone, false, Buy, RefMark), id: 6, account: 4, qty: 1, typ: Stop, tif: IOC, ref: RefMark}
			e.nextSeq++
			b.triggers[0].ReplaceOrInsert(t)
			e.armed[x.pos()] = loc{sk: t.sk, px: b.ticks(210), inst: b.id}
			e.index.put(6, x)
			e.armed = append(e.armed, loc{})
			e.armFree = append(e.armFree, uint64(len(e.armed)-1))
		}},
		{"next slot past the entries' bound", "past the index entries'", func(e *Engine, b *book) {
			l := b.lmap[1].get(105)
			l.first = maxSlots >> l.shift
			l.head, l.next = l.head+maxSlots, l.next+maxSlots
		}},
		{"crossed book", "crossed", func(e *Engine, b *book) {
			lv := b.lmap[1].get(105)
			o := e.lp.pop(lv, lv.head)
			b.emptied(&e.lp, 1, lv)
			b.occ[1].clear(int64(b.ticks(105)))
			o.setPx(b.ticks(99))
			nl := b.addLevel(&e.lp, 1, 99)
			s := e.lp.push(nl, o)
			b.occ[1].set(int64(b.ticks(99)))
			e.index.put(o.id, restEnt(s, o.px(), Sell))
		}},
		{"trigger should have fired", "should have fired", func(e *Engine, b *book) { b.mark = 300 }},
		{"bad quantity", "invalid order", func(e *Engine, b *book) {
			l := b.lmap[0].get(100)
			l.at(l.head).qty = 0
		}},
		{"chunk occupancy", "occupancy", func(e *Engine, b *book) { b.lmap[0].get(100).inl[0].w++ }},
		{"live order below head", "not a tombstone", func(e *Engine, b *book) { b.lmap[0].get(100).inl[0].buf()[0].id = 1 }},
		{"tombstone at head", "head 0 is a tombstone", func(e *Engine, b *book) { b.lmap[0].get(100).head = 0 }},
		{"arrival order", "not after", func(e *Engine, b *book) {
			s := b.lmap[0].get(100).inl[0].buf()
			s[1].sk, s[2].sk = s[2].sk, s[1].sk
		}},
		{"order at another price", "in the level at price", func(e *Engine, b *book) {
			l := b.lmap[0].get(100)
			l.at(l.head).setPx(b.ticks(101))
		}},
		{"level map", "in the map", func(e *Engine, b *book) {
			c := *b.lmap[0].get(100)
			b.lmap[0].put(100, &c)
		}},
		{"level missing from the map", "in the map", func(e *Engine, b *book) { b.lmap[0].del(100) }},
		{"level map count", "level map holds", func(e *Engine, b *book) { b.lmap[0].n++ }},
		{"level map entry off its probe run", "not reachable", func(e *Engine, b *book) {
			m := &b.lmap[0]
			i := m.home(100)
			for m.slots[i].price != 100 || m.slots[i].l == nil {
				i = (i + 1) & (len(m.slots) - 1)
			}
			j := (i + len(m.slots)/2) & (len(m.slots) - 1)
			for m.slots[j].l != nil {
				j = (j + 1) & (len(m.slots) - 1)
			}
			m.slots[i], m.slots[j] = lmSlot{}, m.slots[i]
		}},
		{"side count", "order count", func(e *Engine, b *book) { b.n[0]++ }},
		{"chunk size", "slots (want", func(e *Engine, b *book) {
			c := &b.lmap[0].get(100).inl[0]
			c.set(c.buf()[:2], c.epoch(), int(c.live()))
		}},
		{"chunk list", "chunks cover", func(e *Engine, b *book) { b.lmap[0].get(100).next += 8 }},
		{"chunk epoch", "epoch", func(e *Engine, b *book) { b.lmap[0].get(100).inl[0].w += 1 << chunkEpochBits }},
		{"chunk shift", "bad chunk shift", func(e *Engine, b *book) { b.lmap[0].get(100).shift = 3 }},
		{"level epoch", "bad chunk shift", func(e *Engine, b *book) { b.lmap[0].get(100).epoch = e.lp.epoch + 1 }},
		{"cached best bid", "cached best level", func(e *Engine, b *book) { b.bestL[0] = b.lmap[1].get(105) }},
		{"cached best ask", "cached best level", func(e *Engine, b *book) { b.bestL[1] = b.lmap[0].get(100) }},
		{"occupancy bit missing", "not in the occupancy map", func(e *Engine, b *book) { b.occ[0].clear(int64(b.ticks(100))) }},
		{"occupancy bit extra", "occupancy map holds", func(e *Engine, b *book) { b.occ[1].set(int64(b.ticks(110))) }},
		{"occupancy map count", "occupancy map holds", func(e *Engine, b *book) { b.occ[1].n++ }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, b := build(t)
			c.corrupt(e, b)
			err := e.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error about %q", err, c.want)
			}
		})
	}
}

// TestCheckCatchesLongForm corrupts the segments of a long level (41
// chunks of the largest size, the first dropped, the level copied after a
// clone so that one segment is shared) one way at a time.
func TestCheckCatchesLongForm(t *testing.T) {
	const n, front = 40<<maxShift + 10, 1<<maxShift + 44
	build := func(t *testing.T) (*Engine, *level) {
		s := newScript(t)
		apply := func(c Command) {
			s.seq++
			c.Source, c.Seq, c.Instrument = 1, s.seq, 1
			if ev := s.e.Apply(&c); ev[0].Kind != EvAccepted {
				t.Fatalf("%+v", ev[0])
			}
		}
		for id := uint64(1); id <= n; id++ {
			apply(Command{Kind: CmdNewOrder, OrderID: id, Account: 1, Side: Buy, Type: Limit, TIF: GTC, Price: 100, Qty: 1})
		}
		for id := uint64(1); id <= front; id++ {
			apply(Command{Kind: CmdCancel, OrderID: id})
		}
		s.e.Clone()
		apply(Command{Kind: CmdCancel, OrderID: n})
		l := s.e.byID[1].lmap[0].get(100)
		if l.long == nil || len(l.long.segs) != 2 || l.first != 1 || l.long.segs[0].epoch == l.epoch || l.long.segs[1].epoch != l.epoch {
			t.Fatalf("level not in the long form wanted: first %d, long %+v", l.first, l.long)
		}
		if err := s.e.Check(); err != nil {
			t.Fatal(err)
		}
		return s.e, l
	}
	cases := []struct {
		name, want string
		corrupt    func(e *Engine, l *level)
	}{
		{"segment newer than its level", "newer than the level", func(e *Engine, l *level) { l.long.segs[0].epoch = l.epoch + 1 }},
		{"segment missing", "missing", func(e *Engine, l *level) { l.long.segs[1] = nil }},
		{"segment too many", "segments for chunks", func(e *Engine, l *level) {
			l.long.segs = append(l.long.segs, &chunkSeg{epoch: l.epoch})
		}},
		{"chunk count", "chunks cover", func(e *Engine, l *level) { l.long.n++ }},
		{"segment base after the first chunk", "segments from chunk", func(e *Engine, l *level) { l.long.base = l.first + 1 }},
		{"segment base a segment too far back", "segments from chunk", func(e *Engine, l *level) { l.long.base = l.first - 1 - segChunks }},
		{"entry past the last chunk", "past the last chunk", func(e *Engine, l *level) {
			l.long.segs[1].c[(l.first+uint64(l.long.n))%segChunks].w = 1
		}},
		{"inline count beside segments", "long form with", func(e *Engine, l *level) { l.nc = 1 }},
		{"inline entry beside segments", "not in use, is not empty", func(e *Engine, l *level) { l.inl[0] = *l.chunkAt(l.first) }},
		{"long form of a smaller chunk size", "long form with", func(e *Engine, l *level) { l.shift = maxShift - shiftStep }},
		{"chunk newer than its segment", "segment's", func(e *Engine, l *level) {
			c := &l.long.segs[0].c[5]
			c.set(c.buf(), l.epoch, int(c.live()))
		}},
		{"chunk occupancy in a segment", "occupancy", func(e *Engine, l *level) { l.long.segs[1].c[0].w-- }},
		{"short list too long", "short chunk list", func(e *Engine, l *level) {
			for k := range inlChunks {
				l.inl[k] = *l.chunkAt(l.first + uint64(k))
			}
			l.nc, l.long = inlChunks+1, nil
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, l := build(t)
			c.corrupt(e, l)
			err := e.Check()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error about %q", err, c.want)
			}
		})
	}
}

// TestCheckCatchesHalfChunks builds a level of 20 orders (16-slot chunks,
// its last chunk half-size with 4 orders) and corrupts the half-size rule:
// a half-size chunk that is not the last, a last one holding more than
// its half, and a half-size chunk at a size that is always whole.
func TestCheckCatchesHalfChunks(t *testing.T) {
	build := func(t *testing.T) (*Engine, *book, *level) {
		s := newScript(t)
		for id := uint64(1); id <= 20; id++ {
			s.do(limit(id, Buy, 100, 1))
		}
		s.do(limit(21, Sell, 105, 1))
		b := s.e.byID[1]
		l := b.lmap[0].get(100)
		if l.shift != 4 || l.nc != 2 || len(l.inl[1].buf()) != 8 {
			t.Fatalf("level not as wanted: shift %d, %d chunks, last of %d slots", l.shift, l.nc, len(l.inl[l.nc-1].buf()))
		}
		return s.e, b, l
	}
	cases := []struct {
		name    string
		corrupt func(e *Engine, b *book, l *level)
	}{
		{"half-size chunk not the last", func(e *Engine, b *book, l *level) {
			c := &l.inl[0]
			c.set(c.buf()[:8], c.epoch(), int(c.live()))
		}},
		{"last chunk past its half", func(e *Engine, b *book, l *level) {
			c := &l.inl[1]
			nb := append(make([]order, 0, 8), c.buf()[:4]...)[:8]
			for i := 4; i < 8; i++ {
				nb[i] = order{pa: pxAcct(b.ticks(100), 0), sk: packSK(e.nextSeq+uint64(i), STPNone, false, Buy), id: 100 + uint64(i), qty: 1}
			}
			c.set(nb, c.epoch(), 8)
			l.next = 16 + 9
		}},
		{"half-size chunk of an always whole size", func(e *Engine, b *book, l *level) {
			c := &b.lmap[1].get(105).inl[0]
			c.set(c.buf()[:2], c.epoch(), int(c.live()))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, b, l := build(t)
			c.corrupt(e, b, l)
			err := e.Check()
			if err == nil || !strings.Contains(err.Error(), "slots (want") {
				t.Fatalf("Check() = %v, want an error about the chunk's slots", err)
			}
		})
	}
}
