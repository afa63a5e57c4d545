package bench

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/snapshot"
)

// Snapshot benchmark book: the shape issue 4 fixes.
const (
	SnapInstruments = 8
	SnapTicks       = 2_000 // price levels a side an instrument spreads over
	SnapSources     = 4
	snapBid         = 10_000 // best possible bid; asks start one tick above
)

// SnapshotBook grows the snapshot benchmark book the way a live book
// grows: orders new-order commands in random arrival order, SnapInstruments
// instruments, prices uniform over SnapTicks ticks a side (bids at or below
// 10,000, asks above it, so nothing crosses), quantities uniform in
// 1..1,000, accounts in 1..1,000, commands from SnapSources sources;
// seeded. It never restores a snapshot: a restored book's memory is laid
// out in walk order and would take faster than a book that grew.
func SnapshotBook(orders int, seed uint64) (*engine.Engine, error) {
	e := engine.New()
	rng := rand.New(rand.NewPCG(seed, 0x5a9))
	var seq uint64
	var c engine.Command
	apply := func() error {
		seq++
		c.Source, c.Seq = 1+seq%SnapSources, seq
		for _, ev := range e.Apply(&c) {
			if ev.Kind == engine.EvRejected {
				return fmt.Errorf("bench: snapshot book: command %d rejected: %v", seq, ev.Reason)
			}
		}
		return nil
	}
	for i := 1; i <= SnapInstruments; i++ {
		c = engine.Command{Kind: engine.CmdDefineInstrument, Instrument: uint32(i), Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 1_000_000}
		if err := apply(); err != nil {
			return nil, err
		}
	}
	for id := uint64(1); id <= uint64(orders); id++ {
		c = engine.Command{Kind: engine.CmdNewOrder, Instrument: uint32(1 + rng.IntN(SnapInstruments)), OrderID: id,
			Account: 1 + rng.Uint64N(1000), Type: engine.Limit, TIF: engine.GTC, Qty: 1 + rng.Int64N(1000)}
		if rng.IntN(2) == 0 {
			c.Side, c.Price = engine.Buy, snapBid-int64(rng.IntN(SnapTicks))
		} else {
			c.Side, c.Price = engine.Sell, snapBid+1+int64(rng.IntN(SnapTicks))
		}
		if err := apply(); err != nil {
			return nil, err
		}
	}
	if e.Orders() != orders {
		return nil, fmt.Errorf("bench: snapshot book: %d orders rest, want %d", e.Orders(), orders)
	}
	return e, nil
}

// SnapMarker frames the benchmark snapshots; SnapLoad is its load options.
var (
	SnapMarker = snapshot.Marker{TypeID: snapshot.ServiceSnapshotTypeID, LogPosition: 0, LeadershipTermID: 0,
		TimeUnit: aeronclustersbe.ClusterTimeUnitNANOS, AppVersion: 1}
	SnapLoad = snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: 1}
)

// SnapTermLength is the term length of the benchmark log: 16 MiB, so a
// term window (8 MiB) holds several thousand full batches at either MTU.
const SnapTermLength = 16 << 20

// SnapMTU is the MTU of the benchmarks' snapshot log: what the node's
// stop-the-world snapshots use with terms of SnapTermLength
// (cluster.Options.SnapshotMTU's default, [cluster.DefaultSnapshotMTU]).
const SnapMTU = logbuf.MaxMTU

// SnapRig is a publisher over an in-memory log whose only reader is a
// drain: the publisher's idle function (called when back-pressured)
// advances the image over whatever was committed and moves the position
// limit a term window ahead. It is the take with the cheapest possible
// consumer: what is timed is the encode, never a reader's work.
type SnapRig struct {
	Log *logbuf.Log
	Pub *logbuf.ExclusivePublication
	Img *logbuf.Image
	P   *snapshot.Publisher
	// Reader, when set, is called with each committed frame's payload
	// instead of draining (for checks, not for timing).
	Reader func(payload []byte)
}

// NewSnapRig builds a rig at the given MTU with workers encoding goroutines
// (0: linear only). Close it to stop the workers.
func NewSnapRig(mtu, workers int) (*SnapRig, error) {
	l, err := logbuf.New(SnapTermLength, mtu, 0, 1, 106)
	if err != nil {
		return nil, err
	}
	// Fresh memory is mapped at its first write, a page fault a page: the
	// first takes of a small book would be timing those, not the encode,
	// until the writer had been round the log once.
	l.PreTouch()
	r := &SnapRig{Log: l, Pub: l.Publication(), Img: l.Image()}
	window := int64(l.TermWindowLength())
	r.P, err = snapshot.NewPublisher(&stream.PublicationClaimer{Pub: r.Pub}, func() error {
		r.drain()
		r.Pub.SetPositionLimit(r.Img.Position() + window)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := r.P.SetParallel(snapshot.Parallel{Workers: workers, Min: 1}); err != nil {
		return nil, err
	}
	r.Pub.SetPositionLimit(window)
	return r, nil
}

func (r *SnapRig) drain() {
	if r.Reader == nil {
		r.Img.Drain(1 << 30)
		return
	}
	r.Img.Poll(func(buf []byte, off, n int, _ logbuf.Header) { r.Reader(buf[off : off+n]) }, 1<<30)
}

// Take takes f (through the workers when the rig has any) and drains the
// rest; it returns the bytes the snapshot occupies in the log.
func (r *SnapRig) Take(f *engine.Frozen) (int64, error) {
	start := r.Pub.Position()
	if err := r.P.TakeFrozen(f, SnapMarker); err != nil {
		return 0, err
	}
	r.drain()
	r.Pub.SetPositionLimit(r.Img.Position() + int64(r.Log.TermWindowLength()))
	return r.Pub.Position() - start, nil
}

// Close stops the rig's workers.
func (r *SnapRig) Close() error { return r.P.Close() }

// Frames is a snapshot captured as copies of its frames' payloads, in
// order: the input of a restore measured apart from any take.
type Frames [][]byte

// Capture takes f linearly at the given MTU and returns its frames.
func Capture(f *engine.Frozen, mtu int) (Frames, error) {
	r, err := NewSnapRig(mtu, 0)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var fr Frames
	r.Reader = func(p []byte) { fr = append(fr, append([]byte(nil), p...)) }
	if _, err := r.Take(f); err != nil {
		return nil, err
	}
	return fr, nil
}

// Source returns a fresh stream.FragmentSource over the frames.
func (fr Frames) Source() stream.FragmentSource { return stream.NewFrameSource(fr) }

// SnapSizes are the snapshot benchmarks' default book sizes; 5M is added by
// the bench package's -snap5m test flag.
var SnapSizes = []int{10_000, 100_000, 1_000_000}

// snapBooks caches frozen benchmark books by size within a process.
var snapBooks = map[int]*engine.Frozen{}

func snapBook(b *testing.B, n int) *engine.Frozen {
	if f, ok := snapBooks[n]; ok {
		return f
	}
	e, err := SnapshotBook(n, 1)
	if err != nil {
		b.Fatal(err)
	}
	f := e.Clone()
	snapBooks[n] = f
	return f
}

// BenchSnapshotTake times takes of the snapshot book against a drain-only
// reader, linear and with 2 workers, at [SnapMTU], one take per op, after
// one untimed take that fills the pools. Metrics: ns/order, wire-B/order
// (log bytes of one snapshot per resting order), allocs/op.
func BenchSnapshotTake(b *testing.B, sizes []int) {
	eachTake(b, sizes, func(b *testing.B, f *engine.Frozen, n, w int) {
		r, err := NewSnapRig(SnapMTU, w)
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		wire, err := r.Take(f)
		if err != nil {
			b.Fatal(err)
		}
		timeTakes(b, n, func() error { _, err := r.Take(f); return err })
		b.ReportMetric(float64(wire)/float64(n), "wire-B/order")
	})
}

// eachTake runs fn as a sub-benchmark for each size, linear and with 2
// workers, on the snapshot book of that size.
func eachTake(b *testing.B, sizes []int, fn func(b *testing.B, f *engine.Frozen, n, workers int)) {
	for _, n := range sizes {
		for _, w := range []int{0, 2} {
			name := "linear"
			if w > 0 {
				name = fmt.Sprintf("workers=%d", w)
			}
			b.Run(sizeName(n)+"/"+name, func(b *testing.B) { fn(b, snapBook(b, n), n, w) })
		}
	}
}

// timeTakes times take once per op after an untimed one that fills the
// pools and the runtime's caches of wait records (see warmWaitRecords),
// and reports allocs/op and ns/order for a book of n orders.
func timeTakes(b *testing.B, n int, take func() error) {
	if err := take(); err != nil {
		b.Fatal(err)
	}
	warmWaitRecords() // as bench snapshot does before it counts
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := take(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/order")
}

// flatClaimer is a [stream.Claimer] over a ring of the log's size (three
// terms of [SnapTermLength]) with no log in it: a claim is the next length
// bytes, from the start again when they do not fit, and Commit and Abort
// do nothing. There are no frame headers, no terms to clean and no
// reader, so a take through it is the take's own work (the walk, the state
// hash's digests, the entries, the batch headers and the stream checksum)
// over the same memory, without the log's.
type flatClaimer struct {
	buf        []byte
	off        int
	claimed    int64 // bytes claimed since the last reset
	maxPayload int
}

func (c *flatClaimer) TryClaim(length int) ([]byte, int64, error) {
	if length < 0 || length > c.maxPayload {
		return nil, 0, fmt.Errorf("bench: flat claim of %d bytes, at most %d", length, c.maxPayload)
	}
	if c.off+length > len(c.buf) {
		c.off = 0
	}
	end := c.off + length
	b := c.buf[c.off:end:end]
	c.off = end
	c.claimed += int64(length)
	return b, c.claimed, nil
}

func (c *flatClaimer) Commit()               {}
func (c *flatClaimer) Abort()                {}
func (c *flatClaimer) MaxPayloadLength() int { return c.maxPayload }

// ClaimAhead, CommitAhead, AbortAhead and Window make it a
// [stream.AheadClaimer] for parallel takes, with the log's window.
func (c *flatClaimer) ClaimAhead(length int) ([]byte, int64, int, error) {
	b, pos, err := c.TryClaim(length)
	return b, pos, 0, err
}
func (c *flatClaimer) CommitAhead(int) {}
func (c *flatClaimer) AbortAhead(int)  {}
func (c *flatClaimer) Window() int     { return SnapTermLength / 2 }

// BenchSnapshotTakeNoLog times the takes of [BenchSnapshotTake] with the
// same publisher and batches (MTU [SnapMTU]) written into a flat ring of the
// log's size instead of a log: what a take costs before the log's frames, claims,
// cleaning and reader. The difference between the two is the log's share.
// Metrics: ns/order, payload-B/order (bytes claimed per resting order),
// allocs/op.
func BenchSnapshotTakeNoLog(b *testing.B, sizes []int) {
	eachTake(b, sizes, func(b *testing.B, f *engine.Frozen, n, w int) {
		c := &flatClaimer{buf: make([]byte, 3*SnapTermLength), maxPayload: SnapMTU - logbuf.HeaderLength}
		clear(c.buf) // fault it in before the timing
		p, err := snapshot.NewPublisher(c, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := p.SetParallel(snapshot.Parallel{Workers: w, Min: 1}); err != nil {
			b.Fatal(err)
		}
		defer p.Close()
		timeTakes(b, n, func() error { c.claimed = 0; return p.TakeFrozen(f, SnapMarker) })
		b.ReportMetric(float64(c.claimed)/float64(n), "payload-B/order")
	})
}

// BenchSnapshotRestore times a strict load of a captured snapshot of the
// benchmark book into a fresh engine, one restore per op; the captured
// frames are in memory, so no take and no log is in the timing.
func BenchSnapshotRestore(b *testing.B, sizes []int) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			f := snapBook(b, n)
			fr, err := Capture(f, SnapMTU)
			if err != nil {
				b.Fatal(err)
			}
			var l snapshot.Loader
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				e, _, err := l.Load(fr.Source(), SnapLoad)
				if err != nil {
					b.Fatal(err)
				}
				if e.Orders() != n {
					b.Fatalf("restored %d orders, want %d", e.Orders(), n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/order")
		})
	}
}

// nullSink receives a record stream and drops it, resting orders a run at
// a time ([engine.RunSink]): what is left is the engine's walk of its
// trees and the state hash, the floor under a take.
type nullSink struct{}

func (nullSink) OnHeader(engine.Header) error                                  { return nil }
func (nullSink) OnSourceHighWater(uint64, uint64) error                        { return nil }
func (nullSink) OnMark(uint32, int64, int64, int64, int64, int64, int64) error { return nil }
func (nullSink) OnEnd(uint64, uint64, uint64, uint64, uint64) error            { return nil }
func (nullSink) OnResting(uint32, engine.Side, uint64, uint64, int64, int64, uint64, engine.STP, bool) error {
	return nil
}
func (nullSink) OnRestingRun(engine.RestingRun) error { return nil }
func (nullSink) OnArmedTrigger(uint32, engine.Side, uint64, uint64, engine.OrderType, engine.TimeInForce, engine.TriggerRef,
	int64, int64, int64, uint64, engine.STP, bool) error {
	return nil
}

// BenchSnapshotWalk times the engine's record stream of the snapshot book
// into a sink that drops it: the walk and the state hash without encoding
// or a log, to set the take's figures against.
func BenchSnapshotWalk(b *testing.B, sizes []int) {
	for _, n := range sizes {
		b.Run(sizeName(n), func(b *testing.B) {
			f := snapBook(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if err := f.SnapshotTo(nullSink{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/order")
		})
	}
}
