package snaptest

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/snapshot"
)

const (
	appVersion = 1
	sessionID  = 1
	streamID   = 106
)

var (
	errTakeEnded  = errors.New("the take ended before SnapshotMarker END")
	errReaderGone = errors.New("the reader stopped before the take ended")
)

// minTerm is the shortest term a log of this MTU may have: the MTU must not
// exceed the max message length, term/8.
func minTerm(mtu int) int {
	t := logbuf.MinTermLength
	for logbuf.ComputeMaxMessageLength(t) < mtu {
		t *= 2
	}
	return t
}

// estimate is about the number of bytes a snapshot of s takes in a log.
func estimate(s *SnapshotInfo) int64 {
	frame := func(payload int) int64 {
		return int64(logbuf.Align(logbuf.HeaderLength+payload, logbuf.FrameAlignment))
	}
	capO, capT := snapshot.BatchCapacity(s.MTU - logbuf.HeaderLength)
	batches := func(n uint64, per int) int64 { return int64((n + uint64(per) - 1) / uint64(per)) }
	est := 2*frame(48) + frame(52) + frame(56) + 64*frame(60) // markers, begin, end, sources and instruments
	est += batches(s.Orders, capO) * frame(12+capO*47)
	est += batches(s.Triggers, capT) * frame(12+capT*58)
	return est
}

// geometry draws the log a snapshot is written to.
func (r *runner) geometry(s *SnapshotInfo) {
	rng := r.rng
	s.MTU = [2]int{logbuf.DefaultMTU, logbuf.MaxMTU}[rng.IntN(2)]
	lo := minTerm(s.MTU)
	est := estimate(s)
	switch rng.IntN(3) {
	case 0:
		s.Term = lo
	case 1:
		s.Term = 2 * lo
	default: // large enough to hold the whole snapshot in half a term: never back-pressured
		s.Term = min(max(lo, 1<<bits.Len64(uint64(4*est))), logbuf.MaxTermLength)
	}
	term := int64(s.Term)
	if rng.IntN(3) > 0 { // start just before the end of a term, to rotate
		back := int64(logbuf.Align(int(rng.Int64N(min(est, term))), logbuf.FrameAlignment))
		s.Start = int64(1+rng.IntN(4))*term - back
	}
	switch rng.IntN(3) { // how far the publisher may run ahead of the reader
	case 0:
		s.Window = s.Term / 2 // Aeron's IPC default, logbuf's TermWindowLength
	case 1:
		s.Window = 2 * s.MTU
	default:
		s.Window = logbuf.FrameAlignment // one frame at a time
	}
	switch rng.IntN(4) {
	case 0: // term ids wrap through math.MaxInt32
		s.TermID = math.MaxInt32 - int32(rng.IntN(3))
	case 1:
		s.TermID = 0
	default:
		s.TermID = int32(rng.Uint32())
	}
}

// snapshot takes snapshot k of the primary, restores it and makes the
// restored engine the shadow.
func (r *runner) snapshot(k int) error {
	// The outgoing shadow is compared one last time.
	ph := r.e.StateHash()
	if err := r.compareShadow(ph, "state hash of the restored engine differs"); err != nil {
		return err
	}
	info := &SnapshotInfo{Index: k, At: r.idx + 1, Kind: Linear,
		Orders: uint64(r.e.Orders()), Triggers: uint64(r.e.Triggers())}
	if r.opts.Workers > 0 && k%2 == 1 {
		info.Kind, info.Workers = Parallel, r.opts.Workers
	}
	r.geometry(info)
	r.res.Snapshots++
	if info.Kind == Parallel {
		r.res.Parallel++
	} else {
		r.res.Linear++
	}
	r.res.MaxOrders = max(r.res.MaxOrders, info.Orders)
	r.shadow, r.shadowSnap, r.since = nil, info, 0
	defer func() { r.res.Points = append(r.res.Points, *info) }()

	marker := snapshot.Marker{TypeID: snapshot.ServiceSnapshotTypeID, LogPosition: int64(info.At),
		LeadershipTermID: int64(k), TimeUnit: aeronclustersbe.ClusterTimeUnitNANOS, AppVersion: appVersion}
	src := &source{damage: -1, mismatch: -1}
	if r.opts.damage != nil {
		if f, off, ok := r.opts.damage(k); ok {
			src.damage, src.damageAt = f, off
		}
	}
	take := func(p *snapshot.Publisher) error { return p.Take(r.e, marker) }
	if info.Kind == Parallel {
		f := r.e.Clone()
		ref, err := capture(info.MTU, take) // the linear take of the same state
		if err != nil {
			d := r.diverge("linear reference take failed", "")
			d.Err = err
			return d
		}
		if r.opts.alterRef != nil {
			r.opts.alterRef(k, ref)
		}
		src.ref = ref
		take = func(p *snapshot.Publisher) error { return p.TakeFrozen(f, marker) }
	}

	st := streamSnapshot(info, take, src)
	switch {
	case st.takeErr != nil && !errors.Is(st.takeErr, errReaderGone):
		d := r.diverge("snapshot take failed", loadDetail(st.loadErr))
		d.Err = st.takeErr
		return d
	case st.loadErr != nil:
		d := r.diverge("snapshot load failed", "")
		d.Err = st.loadErr
		return d
	case st.takeErr != nil:
		d := r.diverge("snapshot take failed", "")
		d.Err = st.takeErr
		return d
	}
	if src.ref != nil {
		r.res.ByteChecks++
		if src.mismatch < 0 && src.n != len(src.ref) {
			src.mismatch, src.detail = min(src.n, len(src.ref)), fmt.Sprintf("parallel take has %d fragments, linear %d", src.n, len(src.ref))
		}
		if src.mismatch >= 0 {
			return r.diverge("parallel take differs from the linear take", fmt.Sprintf("fragment %d: %s", src.mismatch, src.detail))
		}
	}
	if st.marker != marker {
		return r.diverge("loaded BEGIN marker differs", fmt.Sprintf("wrote %+v\nloaded %+v", marker, st.marker))
	}
	if st.readerAt != st.writerAt {
		return r.diverge("the loader did not read exactly the snapshot",
			fmt.Sprintf("reader at position %d, writer at %d", st.readerAt, st.writerAt))
	}

	restored := st.e
	rh := restored.StateHash()
	r.res.HashChecks++
	if ph != rh {
		d := r.diverge("restored engine's state hash differs",
			enginetest.DiffLines(enginetest.Records(r.e.SnapshotTo), enginetest.Records(restored.SnapshotTo), "primary", "restored"))
		d.PrimaryHash, d.ShadowHash = ph, rh
		return d
	}
	if diff := r.compareDepth(restored); diff != "" {
		return r.diverge("restored engine's depth differs", diff)
	}
	if err := restored.Check(); err != nil {
		return r.diverge("restored engine's check failed", err.Error())
	}
	if r.opts.afterRestore != nil {
		r.opts.afterRestore(k, restored)
	}
	r.shadow = restored
	r.res.Restores++
	r.res.Bytes += info.Bytes
	if info.Rotated {
		r.res.Rotated++
	}
	if info.Waits > 0 {
		r.res.BackPressured++
	}
	return nil
}

func loadDetail(err error) string {
	if err == nil {
		return ""
	}
	return "load: " + err.Error()
}

// streamed is the outcome of a take read back concurrently.
type streamed struct {
	e                  *engine.Engine
	marker             snapshot.Marker
	takeErr, loadErr   error
	readerAt, writerAt int64
}

// streamSnapshot writes a snapshot with take into a new log of info's geometry
// while a goroutine loads it from the log's image through src. The
// publisher, when back-pressured, moves its position limit to the reader's
// position plus the term window; each side stops when the other has
// finished without it.
func streamSnapshot(info *SnapshotInfo, take func(*snapshot.Publisher) error, src *source) (st streamed) {
	l, err := logbuf.NewAt(info.Term, info.MTU, info.TermID, sessionID, streamID, info.Start)
	if err != nil {
		st.takeErr = err
		return st
	}
	pub, img := l.Publication(), l.Image()
	window := int64(info.Window)
	pub.SetPositionLimit(info.Start + window)
	src.inner = stream.NewImageSource(img)

	var takeDone, loadDone atomic.Bool
	type loaded struct {
		e   *engine.Engine
		m   snapshot.Marker
		err error
	}
	ch := make(chan loaded, 1)
	defer takeDone.Store(true) // even if the take panics: the reader then stops
	go func() {
		var bo backoff
		ended := 0
		defer func() {
			if p := recover(); p != nil {
				loadDone.Store(true)
				ch <- loaded{err: fmt.Errorf("%w: panic: %v\n%s", snapshot.ErrLoad, p, debug.Stack())}
			}
		}()
		e, m, err := snapshot.Load(src, snapshot.LoadOptions{
			TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: appVersion,
			IdlePolls: math.MaxInt,
			Idle: func() error {
				// An empty poll that began after the take had ended
				// means that nothing more will come.
				if takeDone.Load() {
					if ended++; ended >= 2 {
						return errTakeEnded
					}
				}
				bo.wait(int64(src.n))
				return nil
			},
		})
		loadDone.Store(true)
		ch <- loaded{e, m, err}
	}()

	var bo backoff
	p, err := snapshot.NewPublisher(&stream.PublicationClaimer{Pub: pub}, func() error {
		if loadDone.Load() {
			return errReaderGone
		}
		info.Waits++
		pos := img.Position()
		pub.SetPositionLimit(pos + window)
		bo.wait(pos)
		return nil
	})
	if err == nil && info.Workers > 0 {
		if err = p.SetParallel(snapshot.Parallel{Workers: info.Workers, Min: 1}); err == nil {
			defer p.Close()
		}
	}
	if err == nil {
		err = take(p)
	}
	st.takeErr = err
	takeDone.Store(true)
	ld := <-ch
	st.e, st.marker, st.loadErr = ld.e, ld.m, ld.err
	st.readerAt, st.writerAt = img.Position(), pub.Position()
	info.Frames = src.n
	info.Bytes = st.writerAt - info.Start
	if info.Bytes > 0 {
		term := int64(info.Term)
		info.Rotated = (st.writerAt-1)/term != info.Start/term
	}
	return st
}

// capture runs take into a log of the given MTU, draining its image into
// copied fragments whenever the publisher is back-pressured and at the end.
func capture(mtu int, take func(*snapshot.Publisher) error) ([][]byte, error) {
	l, err := logbuf.New(minTerm(mtu), mtu, 0, sessionID, streamID)
	if err != nil {
		return nil, err
	}
	pub, img := l.Publication(), l.Image()
	window := int64(l.TermWindowLength())
	var frags [][]byte
	drain := func() {
		img.Poll(func(buf []byte, off, n int, _ logbuf.Header) {
			frags = append(frags, slices.Clone(buf[off:off+n]))
		}, math.MaxInt32)
		pub.SetPositionLimit(img.Position() + window)
	}
	p, err := snapshot.NewPublisher(&stream.PublicationClaimer{Pub: pub}, func() error { drain(); return nil })
	if err != nil {
		return nil, err
	}
	err = take(p)
	drain()
	return frags, err
}

// source is the loader's FragmentSource: the log's image, with each
// fragment compared against a reference take (when ref is set) and one
// fragment damaged on the way (a test hook).
type source struct {
	inner stream.FragmentSource
	h     stream.FragmentHandler
	fn    stream.FragmentHandler
	n     int // fragments handed over

	ref      [][]byte
	mismatch int // first fragment that differs from ref, or -1
	detail   string

	damage, damageAt int // fragment and byte offset to flip; damage -1 for none
	scratch          []byte
}

func (s *source) Poll(h stream.FragmentHandler, limit int) int {
	if s.fn == nil {
		s.fn = s.onFragment
	}
	s.h = h
	n := s.inner.Poll(s.fn, limit)
	s.h = nil
	return n
}

func (s *source) onFragment(buf []byte, offset, length int, pos int64) {
	frag := buf[offset : offset+length]
	i := s.n
	s.n++
	if s.ref != nil && s.mismatch < 0 {
		switch {
		case i >= len(s.ref):
			s.mismatch, s.detail = i, fmt.Sprintf("parallel take has more fragments than the linear take's %d", len(s.ref))
		case !bytes.Equal(s.ref[i], frag):
			s.mismatch, s.detail = i, describe(s.ref[i], frag)
		}
	}
	if i == s.damage && length > 0 {
		s.scratch = append(s.scratch[:0], frag...)
		s.scratch[s.damageAt%length] ^= 0x5a
		s.h(s.scratch, 0, length, pos)
		return
	}
	s.h(buf, offset, length, pos)
}

// describe says where two fragments first differ.
func describe(linear, parallel []byte) string {
	for i := range min(len(linear), len(parallel)) {
		if linear[i] != parallel[i] {
			return fmt.Sprintf("byte %d: linear %#02x, parallel %#02x (lengths %d and %d)", i, linear[i], parallel[i], len(linear), len(parallel))
		}
	}
	return fmt.Sprintf("lengths differ: linear %d, parallel %d", len(linear), len(parallel))
}

// backoff yields, then sleeps, while a side waits for the other.
type backoff struct {
	last  int64
	spins int
}

func (b *backoff) wait(progress int64) {
	if progress != b.last {
		b.last, b.spins = progress, 0
	}
	if b.spins++; b.spins < 64 {
		runtime.Gosched()
		return
	}
	time.Sleep(20 * time.Microsecond)
}
