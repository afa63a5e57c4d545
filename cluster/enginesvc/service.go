// Package enginesvc runs the matching engine as a clustered service: the one
// place that joins package engine and package cluster.
//
// Each session message is one enginesbe command (schema 7002, with its
// 8-byte header, encoded and decoded by package wire); the service applies it to its engine with the log's
// timestamp as Command.Time and offers each event, enginesbe-encoded, to the
// session's egress (the node releases it once the command is durable). A
// message that does not decode is skipped (and counted), as it is in the log
// and every replay must skip it the same way.
//
// A command the engine ignores as a duplicate — its (Source, Seq) at or below
// the source's high-water mark, so Apply returns no events — is answered
// with a Duplicate message ([wire.EvDuplicate]) so that a client resending
// after a reconnect learns it was applied before. Every other command ends with its
// Release event.
//
// # Depth subscriptions
//
// A SubscribeDepth command (enginesbe template 7) never reaches the engine:
// the service answers it with the instrument's current top levels (buy side
// best first, then sell side, as Depth messages carrying the subscription's
// source and seq) and a DepthSnapshotEnd, then adds the session to the
// instrument's subscribers. From then on every Depth event the engine emits
// for the instrument, for any session's command, is also offered to each
// subscribed session (the session whose command it is gets it once, in its
// own answer). Subscriptions are egress routing, not engine state: they are
// not in snapshots, and they end when the session closes. A node replaying
// its log rebuilds them with the sessions; after a restart from a snapshot
// the sessions of before the restart have no subscriptions, which is moot
// as the server closes those sessions anyway.
//
// Snapshots go through snapshot.Publisher: OnTakeSnapshot takes the live
// engine linearly (stop the world), or, with Options.Workers, a clone of it
// encoded by the workers before it returns; PrepareSnapshot clones the engine
// (engine.Engine.Clone, O(instruments)) and returns a task that encodes the
// frozen view with snapshot.Publisher.TakeFrozen — in parallel when
// Options.Workers > 0 — on the node's snapshot goroutine. OnStart restores
// through snapshot.Load, which is strict (markers, counts, checksum, and the
// engine restorer's check of End's state hash against the records), then
// checks the rebuilt engine's StateHash against End's once more.
package enginesvc

import (
	"errors"
	"fmt"
	"slices"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/enginesbe"
	"github.com/matchlog/matchlog/sbe/snapshotsbe"
	"github.com/matchlog/matchlog/snapshot"
	"github.com/matchlog/matchlog/wire"
)

// Options configure a Service.
type Options struct {
	// Workers, ParallelMin and PartitionOrders are the snapshot
	// publisher's snapshot.Parallel (Workers, Min, PartitionOrders; zero:
	// linear takes), applied by snapshot.Publisher.SetParallel. A
	// pauseless snapshot is encoded while the node's duty cycle runs: the
	// duty cycle needs a core of its own, and so does the snapshot
	// goroutine that writes the encoded records, so workers only help up
	// to snapshot.MaxLiveWorkers (0 on a 2-core host; docs/performance.md
	// has the pause measured with 0, 1 and 2 workers).
	Workers         int
	ParallelMin     int
	PartitionOrders int
	// AppVersion must match the snapshot's on restore.
	AppVersion int32
	// OnApplied, if set, is called after each command with its log
	// position and the events (valid during the call), for tests and
	// tracing.
	OnApplied func(logPosition int64, c *engine.Command, evs []engine.Event)
}

// Service is the matching engine as a cluster.PauselessService.
type Service struct {
	opts    Options
	eng     *engine.Engine
	c       cluster.Cluster
	pub     *snapshot.Publisher
	sw      switchClaimer
	cmd     engine.Command
	buf     []byte
	Skipped int64 // messages that did not decode
	// Rejected counts the engine's Rejected events by reason (indexed by
	// engine.Reason) and Duplicates the commands answered Duplicate. Like
	// Skipped they count every command applied, those replayed at start
	// included; read them on the node's goroutine.
	Rejected   [256]int64
	Duplicates int64
	// ParallelTakes counts the stop-the-world snapshots (OnTakeSnapshot)
	// encoded by the Workers; read it on the node's goroutine.
	ParallelTakes int64

	subs   map[uint32][]int64 // instrument -> subscribed sessions
	levels []engine.Level     // scratch of subscribe
}

var _ cluster.PauselessService = (*Service)(nil)

// New returns a service with an empty engine.
func New(opts Options) *Service {
	return &Service{opts: opts, eng: engine.New()}
}

// Engine is the live engine; use it only on the node's goroutine.
func (s *Service) Engine() *engine.Engine { return s.eng }

// switchClaimer lets one Publisher write into each snapshot's publication.
type switchClaimer struct {
	c    cluster.Publication
	a    cluster.AheadPublication // c, when it claims ahead; else nil
	o    stream.Overwriter        // c, when it claims without zeroing; else nil
	ao   stream.AheadOverwriter   // likewise for claims ahead
	idle func() error
}

// use switches to pub. Its kind is asked here, once a snapshot, not at
// every claim: a type assertion costs a call on a miss of its cache, and
// the runtime grows that cache, at random, with an allocation.
func (w *switchClaimer) use(pub cluster.Publication, idle func() error) {
	w.c, w.idle = pub, idle
	w.a, _ = pub.(cluster.AheadPublication)
	w.o, _ = pub.(stream.Overwriter)
	w.ao, _ = pub.(stream.AheadOverwriter)
}

// TryClaimOverwrite implements stream.Overwriter: the publisher writes
// every byte of its claims, so they need not be zeroed where the
// publication can skip it.
func (w *switchClaimer) TryClaimOverwrite(n int) ([]byte, int64, error) {
	if w.o != nil {
		return w.o.TryClaimOverwrite(n)
	}
	return w.c.TryClaim(n)
}

// ClaimAheadOverwrite implements stream.AheadOverwriter, as
// TryClaimOverwrite.
func (w *switchClaimer) ClaimAheadOverwrite(n int) ([]byte, int64, int, error) {
	if w.ao != nil {
		return w.ao.ClaimAheadOverwrite(n)
	}
	return w.ClaimAhead(n)
}

func (w *switchClaimer) TryClaim(n int) ([]byte, int64, error) { return w.c.TryClaim(n) }
func (w *switchClaimer) Commit()                               { w.c.Commit() }
func (w *switchClaimer) Abort()                                { w.c.Abort() }
func (w *switchClaimer) MaxPayloadLength() int                 { return w.c.MaxPayloadLength() }

// The claims ahead of a parallel take go to a publication that can hold
// them (cluster.AheadPublication); with any other (an Aeron host's),
// Window is 0 and the publisher's parallel take copies instead, so
// ClaimAhead is never called.
var errNoAhead = errors.New("enginesvc: the snapshot publication cannot claim ahead")

func (w *switchClaimer) ClaimAhead(n int) ([]byte, int64, int, error) {
	if w.a != nil {
		return w.a.ClaimAhead(n)
	}
	return nil, 0, 0, errNoAhead
}

func (w *switchClaimer) CommitAhead(t int) {
	if w.a != nil {
		w.a.CommitAhead(t)
	}
}

func (w *switchClaimer) AbortAhead(t int) {
	if w.a != nil {
		w.a.AbortAhead(t)
	}
}

func (w *switchClaimer) Window() int {
	if w.a != nil {
		return w.a.Window()
	}
	return 0
}

func (s *Service) publisher(pub cluster.Publication, idle func() error) (*snapshot.Publisher, error) {
	s.sw.use(pub, idle)
	if s.pub != nil {
		if s.pub.MaxPayloadLength() == pub.MaxPayloadLength() {
			return s.pub, nil
		}
		// The node writes stop-the-world snapshots at its snapshot MTU and
		// pauseless ones at the log's: a node that does both gets a
		// publisher of the other size (and its workers) for the switch.
		if err := s.pub.Close(); err != nil {
			return nil, err
		}
		s.pub = nil
	}
	p, err := snapshot.NewPublisher(&s.sw, func() error {
		if s.sw.idle != nil {
			return s.sw.idle()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := p.SetParallel(snapshot.Parallel{Workers: s.opts.Workers, Min: s.opts.ParallelMin, PartitionOrders: s.opts.PartitionOrders}); err != nil {
		return nil, err
	}
	s.pub = p
	return p, nil
}

func marker(info cluster.SnapshotInfo) snapshot.Marker {
	return snapshot.Marker{TypeID: snapshot.ServiceSnapshotTypeID, LogPosition: info.LogPosition,
		LeadershipTermID: info.LeadershipTermID, TimeUnit: info.TimeUnit, AppVersion: info.AppVersion}
}

// OnStart implements cluster.Service: restore from img when there is one.
func (s *Service) OnStart(c cluster.Cluster, img cluster.SnapshotImage) error {
	if err := (snapshot.Parallel{Workers: s.opts.Workers, Min: s.opts.ParallelMin, PartitionOrders: s.opts.PartitionOrders}).Validate(); err != nil {
		return fmt.Errorf("enginesvc: %w", err)
	}
	s.c = c
	if img == nil {
		return nil
	}
	src := &endWatcher{src: img}
	eng, m, err := snapshot.Load(src, snapshot.LoadOptions{TypeID: snapshot.ServiceSnapshotTypeID, AppVersion: s.opts.AppVersion})
	if err != nil {
		return err
	}
	if m.LogPosition != c.LogPosition() {
		return fmt.Errorf("enginesvc: engine snapshot is at log position %d, the service snapshot at %d", m.LogPosition, c.LogPosition())
	}
	// The restorer has checked End's hash against the records; check the
	// engine it built against it too, independently.
	if !src.seen {
		return fmt.Errorf("enginesvc: snapshot at log position %d has no End record", m.LogPosition)
	}
	if h := eng.StateHash(); h != src.hash {
		return fmt.Errorf("enginesvc: restored state hash %016x differs from the snapshot End's %016x (log position %d)", h, src.hash, m.LogPosition)
	}
	s.eng = eng
	return nil
}

// endWatcher passes a snapshot through and keeps the state hash of its End
// record.
type endWatcher struct {
	src  stream.FragmentSource
	hash uint64
	seen bool
}

func (w *endWatcher) Poll(h stream.FragmentHandler, limit int) int {
	return w.src.Poll(func(buf []byte, off, n int, pos int64) {
		b := buf[off : off+n]
		if hd, err := snapshotsbe.WrapMessageHeader(b, 0); err == nil &&
			hd.SchemaId() == snapshotsbe.SchemaID && hd.TemplateId() == snapshotsbe.EndTemplateID {
			var d snapshotsbe.EndDecoder
			if d.WrapWithHeader(b, 0) == nil {
				w.hash, w.seen = d.StateHash(), true
			}
		}
		h(buf, off, n, pos)
	}, limit)
}

// OnSessionOpen implements cluster.Service.
func (s *Service) OnSessionOpen(*cluster.ClientSession, int64) error { return nil }

// OnSessionClose implements cluster.Service: the session's depth
// subscriptions end.
func (s *Service) OnSessionClose(sess *cluster.ClientSession, _ int64, _ cluster.CloseReason) error {
	for inst, ids := range s.subs {
		if i := slices.Index(ids, sess.ID); i >= 0 {
			ids = slices.Delete(ids, i, i+1)
			if len(ids) == 0 {
				delete(s.subs, inst)
			} else {
				s.subs[inst] = ids
			}
		}
	}
	return nil
}

// DepthSubscribers returns how many sessions subscribe to an instrument's
// depth (call it on the node's goroutine).
func (s *Service) DepthSubscribers(instrument uint32) int { return len(s.subs[instrument]) }

// isSubscribe reports whether msg is a SubscribeDepth command.
func isSubscribe(msg []byte) bool {
	h, err := enginesbe.WrapMessageHeader(msg, 0)
	return err == nil && h.SchemaId() == enginesbe.SchemaID && h.TemplateId() == enginesbe.SubscribeDepthTemplateID
}

// subscribe answers a SubscribeDepth with the current levels and adds the
// session to the instrument's subscribers.
func (s *Service) subscribe(sess *cluster.ClientSession, msg []byte) {
	source, seq, inst, levels, err := wire.DecodeSubscribeDepth(msg)
	if err != nil {
		s.Skipped++
		return
	}
	n := int(levels)
	switch {
	case n == 0:
		n = wire.DefaultDepthLevels
	case n > wire.MaxDepthLevels:
		n = wire.MaxDepthLevels
	}
	for _, side := range [2]engine.Side{engine.Buy, engine.Sell} {
		s.levels = s.eng.Depth(inst, side, n, s.levels[:0])
		for _, l := range s.levels {
			ev := engine.Event{Kind: engine.EvDepth, Source: source, Seq: seq, Instrument: inst, Side: side,
				Price: l.Price, Qty: l.Qty, Count: l.Count}
			s.buf = wire.AppendEvent(s.buf[:0], &ev)
			s.c.Offer(sess.ID, s.buf)
		}
	}
	s.buf = wire.AppendDepthSnapshotEnd(s.buf[:0], source, seq, inst, uint16(n))
	s.c.Offer(sess.ID, s.buf)
	if s.subs == nil {
		s.subs = map[uint32][]int64{}
	}
	if !slices.Contains(s.subs[inst], sess.ID) {
		s.subs[inst] = append(s.subs[inst], sess.ID)
	}
}

// OnSessionMessage implements cluster.Service: one command in, its events
// out to the session (and Depth events to the instrument's subscribers);
// a SubscribeDepth is handled here, not by the engine.
func (s *Service) OnSessionMessage(sess *cluster.ClientSession, ts int64, msg []byte, pos int64) error {
	if err := wire.DecodeCommand(msg, &s.cmd); err != nil {
		if isSubscribe(msg) {
			s.subscribe(sess, msg)
			return nil
		}
		s.Skipped++
		return nil
	}
	s.cmd.Time = ts
	evs := s.eng.Apply(&s.cmd)
	if len(evs) == 0 {
		// At or below the source's high-water mark: applied before.
		s.buf = wire.AppendDuplicate(s.buf[:0], s.cmd.Source, s.cmd.Seq)
		s.c.Offer(sess.ID, s.buf)
		s.Duplicates++
	}
	for i := range evs {
		if evs[i].Kind == engine.EvRejected {
			s.Rejected[evs[i].Reason]++
		}
		s.buf = wire.AppendEvent(s.buf[:0], &evs[i])
		s.c.Offer(sess.ID, s.buf)
		if evs[i].Kind == engine.EvDepth && len(s.subs) != 0 {
			for _, id := range s.subs[evs[i].Instrument] {
				if id != sess.ID {
					s.c.Offer(id, s.buf)
				}
			}
		}
	}
	if s.opts.OnApplied != nil {
		s.opts.OnApplied(pos, &s.cmd, evs)
	}
	return nil
}

// OnRefused implements cluster.Refuser: a command the node did not
// sequence (its archive volume is short of space) is answered with a
// Rejected event of reason engine.RejStorageFull and its Release, as the
// engine answers a command it rejects; a SubscribeDepth likewise. The
// engine never saw it: its source's high-water mark stays where it was,
// so the client may send the same command again once space returns. A
// message that does not decode is dropped, as a replay would skip it.
func (s *Service) OnRefused(c cluster.Cluster, sessionID int64, msg []byte, _ error) {
	var src, seq uint64
	var inst uint32
	var id uint64
	if err := wire.DecodeCommand(msg, &s.cmd); err == nil {
		src, seq, inst, id = s.cmd.Source, s.cmd.Seq, s.cmd.Instrument, s.cmd.OrderID
	} else if source, sq, in, _, err := wire.DecodeSubscribeDepth(msg); err == nil {
		src, seq, inst = source, sq, in
	} else {
		return
	}
	s.Rejected[engine.RejStorageFull]++
	ev := engine.Event{Kind: engine.EvRejected, Source: src, Seq: seq, Instrument: inst, OrderID: id, Reason: engine.RejStorageFull}
	s.buf = wire.AppendEvent(s.buf[:0], &ev)
	c.Offer(sessionID, s.buf)
	ev = engine.Event{Kind: engine.EvRelease, Source: src, Seq: seq, Instrument: inst}
	s.buf = wire.AppendEvent(s.buf[:0], &ev)
	c.Offer(sessionID, s.buf)
}

var _ cluster.Refuser = (*Service)(nil)

// OnTimerEvent implements cluster.Service (the engine schedules none).
func (s *Service) OnTimerEvent(int64, int64) error { return nil }

// OnTakeSnapshot implements cluster.Service: the snapshot is written
// before it returns (the world stopped, as Aeron's containers require).
// With Workers it encodes a copy-on-write clone of the engine with them
// (snapshot.Publisher.TakeFrozen, the same bytes as a linear take; linear
// below ParallelMin resting orders), else it takes the live engine
// linearly.
func (s *Service) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	p, err := s.publisher(pub, idle)
	if err != nil {
		return err
	}
	if s.opts.Workers > 0 {
		f := s.eng.Clone()
		if f.Orders() >= uint64(max(p.ParallelMin, 1)) {
			s.ParallelTakes++
		}
		return p.TakeFrozen(f, marker(info))
	}
	return p.Take(s.eng, marker(info))
}

// PrepareSnapshot implements cluster.PauselessService: a frozen clone now,
// encoded later by the returned task.
func (s *Service) PrepareSnapshot(info cluster.SnapshotInfo) (cluster.SnapshotTask, error) {
	return &task{s: s, f: s.eng.Clone(), m: marker(info)}, nil
}

type task struct {
	s *Service
	f *engine.Frozen
	m snapshot.Marker
}

// Write implements cluster.SnapshotTask.
func (t *task) Write(pub cluster.Publication, idle func() error) error {
	p, err := t.s.publisher(pub, idle)
	if err != nil {
		return err
	}
	return p.TakeFrozen(t.f, t.m)
}

// OnRoleChange implements cluster.Service.
func (s *Service) OnRoleChange(cluster.Role) error { return nil }

// OnTerminate implements cluster.Service: stops the encoding workers.
func (s *Service) OnTerminate(cluster.Cluster) error {
	if s.pub != nil {
		return s.pub.Close()
	}
	return nil
}
