package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
)

// captureWith runs take on a publisher over a log of the given geometry,
// draining the image into copied fragments whenever the publisher is
// back-pressured and at the end.
func captureWith(t testing.TB, p *Publisher, l *logbuf.Log, pub *logbuf.ExclusivePublication, img *logbuf.Image, take func(*Publisher) error) ([][]byte, error) {
	t.Helper()
	return captureWindow(t, p, l.TermWindowLength(), pub, img, take)
}

// captureWindow is captureWith with a reader that lets the publisher run
// window bytes ahead of it.
func captureWindow(t testing.TB, p *Publisher, window int, pub *logbuf.ExclusivePublication, img *logbuf.Image, take func(*Publisher) error) ([][]byte, error) {
	t.Helper()
	var frags [][]byte
	drain := func() {
		img.Poll(func(buf []byte, off, n int, _ logbuf.Header) {
			frags = append(frags, slices.Clone(buf[off:off+n]))
		}, 1<<30)
		pub.SetPositionLimit(img.Position() + int64(window))
	}
	pub.SetPositionLimit(img.Position() + int64(window))
	p.idle = func() error { drain(); return nil }
	err := take(p)
	drain()
	return frags, err
}

// linearTake builds the engine of s and returns it, a frozen clone and the
// clone's linear take in a log of geometry g.
func linearTake(t *testing.T, g geometry, s bookSpec) (*engine.Engine, *engine.Frozen, [][]byte) {
	t.Helper()
	e := buildEngine(t, s)
	f := e.Clone()
	lp, ll, lpub, limg := newParallel(t, g, 0)
	want, err := captureWith(t, lp, ll, lpub, limg, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
	if err != nil {
		t.Fatal(err)
	}
	return e, f, want
}

// newParallel returns a publisher with workers over a fresh log.
func newParallel(t testing.TB, g geometry, workers int) (*Publisher, *logbuf.Log, *logbuf.ExclusivePublication, *logbuf.Image) {
	t.Helper()
	l, pub, img := newLog(t, g.term, g.mtu)
	p, err := NewPublisher(&stream.PublicationClaimer{Pub: pub}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.ParallelMin = 0
	if err := p.StartWorkers(workers); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, l, pub, img
}

func sameFrags(t *testing.T, want, got [][]byte) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%d frames, linear has %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(want[i], got[i]) {
			t.Fatalf("frame %d of %d differs (lengths %d and %d)", i, len(want), len(got[i]), len(want[i]))
		}
	}
}

// TestParallelIdentical checks parallel takes byte for byte against the
// linear take of the same frozen book, at batch-boundary sizes, for
// several worker counts and both MTUs, and that the stream restores.
func TestParallelIdentical(t *testing.T) {
	for _, g := range geometries {
		no, _ := BatchCapacity(g.mtu - 32)
		sizes := []int{0, 1, no - 1, no, no + 1, 2 * no, 2*no + 1, 3001}
		if testing.Short() {
			sizes = []int{0, 1, no - 1, no, no + 1, 2 * no, 3001}
		}
		for _, n := range sizes {
			e, f, want := linearTake(t, g, bookSpec{instruments: 5, sources: 4, orders: n, triggers: 30})
			sameFrags(t, capture(t, e, g.term, g.mtu), want) // a frozen take is the engine's take
			for _, c := range []struct{ w, per int }{{1, 0}, {2, 0}, {3, 0}, {8, 0}, {1, 7}, {2, 7}, {3, 100}, {2, no}} {
				w := c.w
				t.Run(fmt.Sprintf("mtu%d/orders%d/workers%d/per%d", g.mtu, n, w, c.per), func(t *testing.T) {
					p, l, pub, img := newParallel(t, g, w)
					p.PartitionOrders = c.per
					for range 2 { // the second take reuses the pooled buffers
						got, err := captureWith(t, p, l, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
						if err != nil {
							t.Fatal(err)
						}
						sameFrags(t, want, got)
						if p.par.count != uint64(n) || (n > 0 && !p.par.direct) { // the direct parallel path ran
							t.Fatalf("workers encoded %d orders (direct %v), want %d directly", p.par.count, p.par.direct, n)
						}
					}
					r, err := loadFrags(want)
					if err != nil {
						t.Fatal(err)
					}
					if r.StateHash() != f.StateHash() {
						t.Fatal("restored state hash differs")
					}
				})
			}
		}
	}
}

// claimOnly hides a claimer's claims ahead: a parallel take through it
// copies.
type claimOnly struct{ stream.Claimer }

// copyThrough makes p's claimer one that cannot claim ahead, as if p had
// been created with it.
func copyThrough(p *Publisher) {
	p.c = claimOnly{p.c}
	p.ac, p.ow, p.aow = nil, nil, nil
}

// TestParallelCopying: through a claimer that cannot claim ahead, a
// parallel take copies the workers' chunks and is byte-identical to the
// linear take, at batch-boundary sizes, several worker counts and
// partition sizes (including partitions of more than one chunk).
func TestParallelCopying(t *testing.T) {
	for _, g := range geometries {
		no, _ := BatchCapacity(g.mtu - 32)
		for _, n := range []int{1, no, no + 1, 2*no + 1, 3001, 6 * chunkEntries} {
			e := buildEngine(t, bookSpec{instruments: 5, sources: 4, orders: n, triggers: 30})
			f := e.Clone()
			want := capture(t, e, g.term, g.mtu)
			// {1, 2*chunkEntries}: partitions of more than one chunk
			for _, c := range []struct{ w, per int }{{1, 0}, {2, 7}, {3, 100}, {1, 2 * chunkEntries}} {
				t.Run(fmt.Sprintf("mtu%d/orders%d/workers%d/per%d", g.mtu, n, c.w, c.per), func(t *testing.T) {
					_, pub, img := newLog(t, g.term, g.mtu)
					p, err := NewPublisher(claimOnly{&stream.PublicationClaimer{Pub: pub}}, nil)
					if err != nil {
						t.Fatal(err)
					}
					p.ParallelMin, p.PartitionOrders = 0, c.per
					if err := p.StartWorkers(c.w); err != nil {
						t.Fatal(err)
					}
					defer p.Close()
					for range 2 {
						got, err := captureWindow(t, p, g.term/2, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
						if err != nil {
							t.Fatal(err)
						}
						sameFrags(t, want, got)
						if p.par.direct || p.par.count != uint64(n) {
							t.Fatalf("direct %v, workers encoded %d orders: want a copying take of %d", p.par.direct, p.par.count, n)
						}
					}
				})
			}
		}
	}
}

// TestParallelNarrowWindow: a reader that keeps the publisher closer than
// the log's window, so that a partition's claims ahead wait on the reader
// they hold back: the owner encodes such partitions itself, committing as
// it goes, and the take stays byte-identical to the linear one. With the
// log's own window the workers encode every partition.
func TestParallelNarrowWindow(t *testing.T) {
	g := geometries[0]
	no, _ := BatchCapacity(g.mtu - 32)
	frame := logbufFrame(batchHeader + no*orderLength)
	_, f, want := linearTake(t, g, bookSpec{instruments: 5, sources: 4, orders: 40 * no, triggers: 30})
	for _, window := range []int{frame, 3 * frame, 10 * frame, g.term / 2} {
		t.Run(fmt.Sprintf("window%d", window), func(t *testing.T) {
			p, l, pub, img := newParallel(t, g, 2)
			p.PartitionOrders = 8 * no
			if l.TermWindowLength() < 20*frame {
				t.Fatalf("the log's window holds %d frames: too few for this test", l.TermWindowLength()/frame)
			}
			for range 2 {
				got, err := captureWindow(t, p, window, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
				if err != nil {
					t.Fatal(err)
				}
				sameFrags(t, want, got)
				owned := p.par.owned
				switch {
				case window < 8*frame && owned == 0:
					t.Fatalf("window of %d frames: the owner encoded no partition", window/frame)
				case window == l.TermWindowLength() && owned != 0:
					t.Fatalf("the log's window: the owner encoded %d partitions, want the workers all", owned)
				}
			}
		})
	}
}

// TestParallelCountsChecked: a cut whose partition counts do not add up
// to the book's orders (one over, one under) fails the take, before
// anything is claimed when the cut comes first (copying), where the orders
// belong when the cut runs there (direct), leaving no END either way;
// counts that add up but misplace orders (one partition over its count,
// one under) fail the take in both ways of taking, leaving no END; the
// next take is whole and identical.
func TestParallelCountsChecked(t *testing.T) {
	g := geometries[0]
	e := buildEngine(t, bookSpec{instruments: 3, sources: 2, orders: 500, triggers: 7})
	f := e.Clone()
	want := capture(t, e, g.term, g.mtu)
	for _, copying := range []bool{false, true} {
		p, l, pub, img := newParallel(t, g, 2)
		if copying {
			copyThrough(p)
		}
		p.PartitionOrders = 40
		take := func(p *Publisher) error { return p.TakeFrozen(f, testMarker) }

		// The last partition is off: its count is the only one no worker
		// sees before the cut is over, so the sum is what must catch it.
		last := len(f.Partitions(max(minPartitionsPerWorker*2, (500+39)/40))) - 1
		for _, off := range []int{1, -1} {
			p.par.recut = func(i int, pt engine.Partition) engine.Partition {
				if i == last {
					pt.Estimate = uint64(int(pt.Estimate) + off)
				}
				return pt
			}
			frags, err := captureWith(t, p, l, pub, img, take)
			if !errors.Is(err, ErrPublish) || !strings.Contains(err.Error(), "partitions count") {
				t.Fatalf("copying %v: counts %+d off the book: error %v", copying, off, err)
			}
			if copying && len(frags) != 0 {
				t.Fatalf("copying %v: counts %+d off the book: %d frames written", copying, off, len(frags))
			}
			if _, err := loadFrags(frags); err == nil {
				t.Fatalf("copying %v: counts %+d off the book: the take loaded", copying, off)
			}
		}

		p.par.recut = func(i int, pt engine.Partition) engine.Partition {
			switch i {
			case 1:
				pt.Estimate++
			case 2:
				pt.Estimate--
			}
			return pt
		}
		frags, err := captureWith(t, p, l, pub, img, take)
		if !errors.Is(err, ErrPublish) {
			t.Fatalf("copying %v: misplaced counts: error %v", copying, err)
		}
		if _, err := loadFrags(frags); err == nil {
			t.Fatalf("copying %v: a take with misplaced counts loaded", copying)
		}

		p.par.recut = nil
		got, err := captureWith(t, p, l, pub, img, take)
		if err != nil {
			t.Fatal(err)
		}
		sameFrags(t, want, got)
	}
}

// TestParallelWorkerFailure injects a worker failure: the take fails with
// ErrPublish, leaves no END, and the next take is whole and identical.
func TestParallelWorkerFailure(t *testing.T) {
	g := geometries[0]
	e := buildEngine(t, bookSpec{instruments: 3, sources: 2, orders: 500, triggers: 7})
	f := e.Clone()
	want := capture(t, e, g.term, g.mtu)
	for _, c := range []struct {
		bad  int
		copy bool
	}{{0, false}, {1, false}, {2, false}, {7, false}, {12, false}, {0, true}, {7, true}, {12, true}} {
		bad := c.bad
		p, l, pub, img := newParallel(t, g, 3)
		if c.copy {
			copyThrough(p)
		}
		p.PartitionOrders = 40 // 13 partitions through 6 slots
		injected := errors.New("injected")
		p.par.fail = func(part int) error {
			if part == bad {
				return injected
			}
			return nil
		}
		frags, err := captureWith(t, p, l, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
		if !errors.Is(err, ErrPublish) || !errors.Is(err, injected) || !errors.Is(err, errWorker) {
			t.Fatalf("partition %d: error %v", bad, err)
		}
		if p.par.direct == c.copy {
			t.Fatalf("partition %d: direct %v, want %v", bad, p.par.direct, !c.copy)
		}
		if _, err := loadFrags(frags); err == nil {
			t.Fatal("a failed take loaded")
		}
		p.par.fail = nil
		got, err := captureWith(t, p, l, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
		if err != nil {
			t.Fatal(err)
		}
		sameFrags(t, want, got)
	}
}

// TestParallelThreshold: below ParallelMin the take is linear (the workers
// never run), and without workers TakeFrozen is linear.
func TestParallelThreshold(t *testing.T) {
	g := geometries[0]
	e := buildEngine(t, bookSpec{instruments: 2, sources: 1, orders: 100, triggers: 2})
	f := e.Clone()
	p, l, pub, img := newParallel(t, g, 2)
	p.ParallelMin = 101
	p.par.fail = func(int) error { return errors.New("a worker ran") }
	got, err := captureWith(t, p, l, pub, img, func(p *Publisher) error { return p.TakeFrozen(f, testMarker) })
	if err != nil {
		t.Fatal(err)
	}
	sameFrags(t, capture(t, e, g.term, g.mtu), got)
	if (&Publisher{}).ParallelMin != 0 || p.ParallelMin == DefaultParallelMin {
		t.Fatal("unexpected")
	}
	q, _ := NewPublisher(&stream.PublicationClaimer{Pub: pub}, nil)
	if q.ParallelMin != DefaultParallelMin {
		t.Fatalf("default ParallelMin %d", q.ParallelMin)
	}
}

// TestParallelTakeAllocs: after the first take, a parallel take allocates
// nothing at all: the partitions are cut into a reused slice and encoded
// into pooled slots.
func TestParallelTakeAllocs(t *testing.T) {
	g := geometries[0]
	for _, n := range []int{3000, 30000} {
		e := buildEngine(t, bookSpec{instruments: 4, sources: 3, orders: n, triggers: 100})
		f := e.Clone()
		p, l, pub, img := newParallel(t, g, 2)
		p.PartitionOrders = 1000
		window := int64(l.TermWindowLength())
		p.idle = func() error {
			img.Drain(1 << 30)
			pub.SetPositionLimit(img.Position() + window)
			return nil
		}
		take := func() {
			if err := p.TakeFrozen(f, testMarker); err != nil {
				t.Fatal(err)
			}
		}
		take()
		if a := testing.AllocsPerRun(10, take); a != 0 {
			t.Fatalf("orders %d: %v allocations per parallel take", n, a)
		}
	}
}

// TestSetParallel: SetParallel is where workers, threshold and partition
// size are decided; it refuses negative fields and then changes nothing.
func TestSetParallel(t *testing.T) {
	g := geometries[0]
	_, pub, _ := newLog(t, g.term, g.mtu)
	p, err := NewPublisher(&stream.PublicationClaimer{Pub: pub}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, o := range []Parallel{{Workers: -1}, {Min: -1}, {PartitionOrders: -1}} {
		if err := p.SetParallel(o); !errors.Is(err, ErrPublish) {
			t.Fatalf("%+v: %v, want ErrPublish", o, err)
		}
		if p.par != nil || p.ParallelMin != DefaultParallelMin || p.PartitionOrders != 0 {
			t.Fatalf("%+v refused but applied: workers %v, min %d, partition %d", o, p.par != nil, p.ParallelMin, p.PartitionOrders)
		}
	}
	if err := p.SetParallel(Parallel{}); err != nil || p.par != nil || p.ParallelMin != DefaultParallelMin {
		t.Fatalf("zero value: %v, workers %v, min %d", err, p.par != nil, p.ParallelMin)
	}
	if err := p.SetParallel(Parallel{Workers: 2, Min: 1, PartitionOrders: 32}); err != nil {
		t.Fatal(err)
	}
	if p.par == nil || p.par.workers != 2 || p.ParallelMin != 1 || p.PartitionOrders != 32 {
		t.Fatalf("workers %v, min %d, partition %d", p.par, p.ParallelMin, p.PartitionOrders)
	}
	if err := p.SetParallel(Parallel{Workers: 1}); !errors.Is(err, ErrPublish) || p.ParallelMin != 1 {
		t.Fatalf("second SetParallel: %v, min %d (want a refusal that changes nothing)", err, p.ParallelMin)
	}
	if MaxLiveWorkers() != max(0, runtime.GOMAXPROCS(0)-2) {
		t.Fatalf("MaxLiveWorkers %d at GOMAXPROCS %d", MaxLiveWorkers(), runtime.GOMAXPROCS(0))
	}
}

// TestPartJobFillsItsLines: a worker's slot is exactly two cache lines,
// so the slots the workers fill at once share none; its padding is written
// for the fields' size and must follow them.
func TestPartJobFillsItsLines(t *testing.T) {
	if n := unsafe.Sizeof(partJob{}); n != 128 {
		t.Fatalf("partJob is %d bytes, want 128: adjust its padding", n)
	}
}
