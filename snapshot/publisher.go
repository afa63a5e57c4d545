package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/stream"
	"github.com/matchlog/matchlog/sbe/aeronclustersbe"
	"github.com/matchlog/matchlog/sbe/snapshotsbe"
)

// ErrPublish marks every error a [Publisher] returns.
var ErrPublish = errors.New("snapshot: publish")

// ServiceSnapshotTypeID is Aeron's snapshot type id of a clustered
// service's snapshot (ClusteredServiceContainer.Configuration.SNAPSHOT_TYPE_ID).
const ServiceSnapshotTypeID int64 = 2

// Marker is what Aeron's SnapshotMarker BEGIN and END carry. Index is
// always 0, as in Aeron.
type Marker struct {
	TypeID           int64
	LogPosition      int64
	LeadershipTermID int64
	TimeUnit         aeronclustersbe.ClusterTimeUnit
	AppVersion       int32 // 0 is SBE null: no version
}

// Encoded sizes of the messages and batch entries.
const (
	markerLength  = aeronclustersbe.MessageHeaderEncodedLength + aeronclustersbe.SnapshotMarkerBlockLength
	beginLength   = snapshotsbe.MessageHeaderEncodedLength + snapshotsbe.MeSnapshotBeginBlockLength
	sourceLength  = snapshotsbe.MessageHeaderEncodedLength + snapshotsbe.SourceHwmBlockLength
	markLength    = snapshotsbe.MessageHeaderEncodedLength + snapshotsbe.MarkBlockLength
	endLength     = snapshotsbe.MessageHeaderEncodedLength + snapshotsbe.EndBlockLength
	batchHeader   = snapshotsbe.MessageHeaderEncodedLength + snapshotsbe.GroupSizeEncodingEncodedLength // block length 0
	orderLength   = snapshotsbe.OrdersEntriesBlockLength
	triggerLength = snapshotsbe.TriggersEntriesBlockLength
	maxGroupCount = 65534
)

// BatchCapacity returns how many resting orders and armed triggers one
// claim of maxPayload bytes holds.
func BatchCapacity(maxPayload int) (orders, triggers int) {
	return min((maxPayload-batchHeader)/orderLength, maxGroupCount),
		min((maxPayload-batchHeader)/triggerLength, maxGroupCount)
}

const (
	batchNone = iota
	batchOrders
	batchTriggers
)

// Publisher is an [engine.Sink] that writes an engine's record stream as
// a service snapshot through a [stream.Claimer]; see the package documentation
// for the stream. A Publisher is reused from take to take: after the
// first, a take allocates nothing. It is not safe for concurrent use.
type Publisher struct {
	c          stream.Claimer
	ac         stream.AheadClaimer    // c, when it claims ahead (asked once: see TakeFrozen)
	ow         stream.Overwriter      // c, when it claims without zeroing
	aow        stream.AheadOverwriter // c, when it claims ahead without zeroing
	idle       func() error
	marker     Marker
	maxPayload int
	nOrders    int // batch capacities
	nTriggers  int

	err   error
	sum   uint64
	kind  int    // open batch kind
	buf   []byte // open batch claim
	me    aeronclustersbe.SnapshotMarkerEncoder
	begin snapshotsbe.MeSnapshotBeginEncoder
	src   snapshotsbe.SourceHwmEncoder
	mark  snapshotsbe.MarkEncoder
	ord   snapshotsbe.OrdersEncoder
	oi    int // entries written in the open Orders batch
	ocap  int // entries the open Orders batch holds
	trg   snapshotsbe.TriggersEncoder
	tg    *snapshotsbe.TriggersEntriesEncoder
	end   snapshotsbe.EndEncoder

	// The header's counts less the entries of the batches claimed since:
	// a batch is claimed for at most what is left, so the last of each
	// kind is exactly as long as its entries.
	ordersLeft, triggersLeft uint64

	// ParallelMin is the fewest resting orders for which [Publisher.TakeFrozen]
	// encodes in parallel (when workers were started with
	// [Publisher.StartWorkers]); smaller books are taken linearly.
	// NewPublisher sets it to [DefaultParallelMin].
	ParallelMin int
	// PartitionOrders is about how many resting orders one partition of a
	// parallel take holds (0: DefaultPartitionOrders; a take encoding into
	// claims ahead caps it so that two partitions' batches fit in the
	// claimer's window). Smaller partitions let the workers start sooner
	// and, in a copying take, bound the pooled chunks (2 partitions per
	// worker, about PartitionOrders*47 bytes each); larger ones cost fewer
	// hand-offs.
	PartitionOrders int
	par             *parallel
}

// NewPublisher returns a publisher writing through c. While c is
// back-pressured it calls idle (which may be nil) between retries, without
// limit; an error from idle fails the take.
func NewPublisher(c stream.Claimer, idle func() error) (*Publisher, error) {
	mp := c.MaxPayloadLength()
	if mp < batchHeader+triggerLength || mp < markerLength {
		return nil, fmt.Errorf("%w: max payload %d is too small for one batch entry", ErrPublish, mp)
	}
	p := &Publisher{c: c, idle: idle, maxPayload: mp, ParallelMin: DefaultParallelMin}
	p.ac, _ = c.(stream.AheadClaimer)
	p.ow, _ = c.(stream.Overwriter)
	p.aow, _ = c.(stream.AheadOverwriter)
	p.nOrders, p.nTriggers = BatchCapacity(mp)
	return p, nil
}

// MaxPayloadLength is the claimer's longest claim, as NewPublisher found
// it: what the publisher's batches are sized for.
func (p *Publisher) MaxPayloadLength() int { return p.maxPayload }

// Take writes e's state as one snapshot framed by m. The engine must not
// change meanwhile (take a [engine.Engine.Clone] to let it go on). On error
// the claim in progress is aborted; what was committed stays in the
// stream, and a strict [Loader] rejects it for lack of an END marker.
func (p *Publisher) Take(e *engine.Engine, m Marker) error {
	p.Reset(m)
	if err := e.SnapshotRunsTo(p); err != nil {
		return p.fail(err)
	}
	return nil
}

// Reset prepares the publisher for a new snapshot framed by m, for callers
// that drive the [engine.Sink] methods themselves. It aborts a claim left
// open by an earlier failed take.
func (p *Publisher) Reset(m Marker) {
	if p.kind != batchNone {
		p.c.Abort()
	}
	p.marker, p.err, p.sum, p.kind, p.buf = m, nil, checksumBasis, batchNone, nil
}

// fail records the first error and aborts any open claim.
func (p *Publisher) fail(err error) error {
	if p.err == nil {
		if !errors.Is(err, ErrPublish) {
			err = fmt.Errorf("%w: %w", ErrPublish, err)
		}
		p.err = err
	}
	if p.kind != batchNone {
		p.c.Abort()
		p.kind, p.buf = batchNone, nil
	}
	return p.err
}

// claim claims length bytes, retrying through back-pressure.
func (p *Publisher) claim(length int) ([]byte, error) {
	for {
		var buf []byte
		var pos int64
		var err error
		if p.ow != nil {
			buf, pos, err = p.ow.TryClaimOverwrite(length)
		} else {
			buf, pos, err = p.c.TryClaim(length)
		}
		if err != nil {
			return nil, p.fail(err)
		}
		if pos >= 0 {
			return buf, nil
		}
		if pos != stream.BackPressured && pos != stream.AdminAction {
			return nil, p.fail(fmt.Errorf("%w: claim failed with position %d", ErrPublish, pos))
		}
		if p.idle != nil {
			if err := p.idle(); err != nil {
				return nil, p.fail(err)
			}
		}
	}
}

// commit hashes the message (unless it is a marker) and commits it.
func (p *Publisher) commit(msg []byte, hash bool) {
	if hash {
		p.sum = checksum(p.sum, msg)
	}
	p.c.Commit()
}

func (p *Publisher) writeMarker(mark aeronclustersbe.SnapshotMark) error {
	buf, err := p.claim(markerLength)
	if err != nil {
		return err
	}
	if err := p.me.WrapAndApplyHeader(buf, 0); err != nil {
		p.c.Abort()
		return p.fail(err)
	}
	m := &p.marker
	p.me.TypeId(m.TypeID).LogPosition(m.LogPosition).LeadershipTermId(m.LeadershipTermID).Index(0).
		Mark(mark).TimeUnit(m.TimeUnit).AppVersion(m.AppVersion)
	p.commit(buf, false)
	return nil
}

// OnHeader implements [engine.Sink]: SnapshotMarker BEGIN, then
// MeSnapshotBegin.
func (p *Publisher) OnHeader(h engine.Header) error {
	if p.err != nil {
		return p.err
	}
	if err := p.writeMarker(aeronclustersbe.SnapshotMarkBEGIN); err != nil {
		return err
	}
	buf, err := p.claim(beginLength)
	if err != nil {
		return err
	}
	if err := p.begin.WrapAndApplyHeader(buf, 0); err != nil {
		p.c.Abort()
		return p.fail(err)
	}
	p.begin.NextSeq(h.NextSeq).Sources(h.Sources).Instruments(h.Instruments).Orders(h.Orders).
		Triggers(h.Triggers).RecordVersion(h.Version)
	p.commit(buf, true)
	p.ordersLeft, p.triggersLeft = h.Orders, h.Triggers
	return nil
}

// OnSourceHighWater implements [engine.Sink]: one SourceHwm message.
func (p *Publisher) OnSourceHighWater(source, seq uint64) error {
	if p.err != nil {
		return p.err
	}
	buf, err := p.claim(sourceLength)
	if err != nil {
		return err
	}
	if err := p.src.WrapAndApplyHeader(buf, 0); err != nil {
		p.c.Abort()
		return p.fail(err)
	}
	p.src.Source(source).Seq(seq)
	p.commit(buf, true)
	return nil
}

// OnMark implements [engine.Sink]: one Mark message.
func (p *Publisher) OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error {
	if p.err != nil {
		return p.err
	}
	buf, err := p.claim(markLength)
	if err != nil {
		return err
	}
	if err := p.mark.WrapAndApplyHeader(buf, 0); err != nil {
		p.c.Abort()
		return p.fail(err)
	}
	p.mark.Tick(tick).Lot(lot).MinPrice(minPrice).MaxPrice(maxPrice).LastTrade(lastTrade).Mark(mark).Instrument(instrument)
	p.commit(buf, true)
	return nil
}

// closeBatch closes the open batch: the group count becomes the number of
// entries written, the unused tail of the claim is zeroed (the frame keeps
// its claimed length; only a take that fails for an engine stream whose
// counts disagree with its header leaves one), and the claim is committed.
func (p *Publisher) closeBatch() {
	var n, entry int
	switch p.kind {
	case batchNone:
		return
	case batchOrders:
		n, entry = p.oi, orderLength
		setGroupCount(p.buf, n)
	case batchTriggers:
		n, entry = p.tg.ResetCountToIndex(), triggerLength
	}
	used := batchHeader + n*entry
	clear(p.buf[used:])
	p.kind = batchNone
	p.commit(p.buf[:used], true)
	p.buf = nil
}

// openBatch claims a batch of kind for as many entries as it holds, or as
// are left of the header's count when fewer (the last batch).
func (p *Publisher) openBatch(kind int) error {
	p.closeBatch()
	n, entry, left, what := p.nOrders, orderLength, &p.ordersLeft, "resting orders"
	if kind == batchTriggers {
		n, entry, left, what = p.nTriggers, triggerLength, &p.triggersLeft, "armed triggers"
	}
	if *left == 0 {
		return p.fail(fmt.Errorf("%w: more %s than the header's count", ErrPublish, what))
	}
	n = int(min(uint64(n), *left))
	*left -= uint64(n)
	buf, err := p.claim(batchHeader + n*entry)
	if err != nil {
		return err
	}
	p.buf, p.kind = buf, kind
	if kind == batchOrders {
		if err = p.ord.WrapAndApplyHeader(buf, 0); err == nil {
			_, err = p.ord.EntriesCount(n)
		}
		p.oi, p.ocap = 0, n
	} else {
		if err = p.trg.WrapAndApplyHeader(buf, 0); err == nil {
			p.tg, err = p.trg.EntriesCount(n)
		}
	}
	if err != nil {
		return p.fail(err)
	}
	return nil
}

// OnResting implements [engine.Sink]: one entry of an Orders batch,
// encoded in place in the claimed frame.
func (p *Publisher) OnResting(instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	if p.err != nil {
		return p.err
	}
	if p.kind != batchOrders || p.oi == p.ocap {
		if err := p.openBatch(batchOrders); err != nil {
			return err
		}
	}
	off := batchHeader + p.oi*orderLength
	putOrder(p.buf[off:off+orderLength], instrument, side, orderID, account, price, qty, seq, stp, post)
	p.oi++
	return nil
}

// OnRestingRun implements [engine.RunSink]: the run's entries, encoded in
// place in the claimed frames, a batch's share at a time.
func (p *Publisher) OnRestingRun(r engine.RestingRun) error {
	if p.err != nil {
		return p.err
	}
	for i, n := 0, r.Len(); i < n; {
		if p.kind != batchOrders || p.oi == p.ocap {
			if err := p.openBatch(batchOrders); err != nil {
				return err
			}
		}
		k := min(n-i, p.ocap-p.oi)
		off := batchHeader + p.oi*orderLength
		putRun(p.buf[off:off+k*orderLength], &r, i)
		p.oi += k
		i += k
	}
	return nil
}

// putRun encodes len(b)/orderLength entries of r from its record from on
// into b, with putOrder.
func putRun(b []byte, r *engine.RestingRun, from int) {
	for i := from; len(b) >= orderLength; i++ {
		id, acct, qty, seq, stp, post := r.At(i)
		putOrder(b[:orderLength], r.Instrument, r.Side, id, acct, r.Price, qty, seq, stp, post)
		b = b[orderLength:]
	}
}

// putOrder encodes one Orders entry into b, its orderLength bytes, at the
// offsets of the generated flyweight (snapshotsbe.OrdersEntriesEncoder;
// TestPutOrderMatchesFlyweight checks they agree): one bounds check and
// nine stores in place of a flyweight call a field. The linear publisher
// and the parallel workers share it, so their bytes are the same.
func putOrder(b []byte, instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) {
	_ = b[orderLength-1]
	binary.LittleEndian.PutUint64(b[0:], orderID)
	binary.LittleEndian.PutUint64(b[8:], account)
	binary.LittleEndian.PutUint64(b[16:], uint64(price))
	binary.LittleEndian.PutUint64(b[24:], uint64(qty))
	binary.LittleEndian.PutUint64(b[32:], seq)
	binary.LittleEndian.PutUint32(b[40:], instrument)
	b[44] = byte(snapshotsbe.Side(side))
	b[45] = byte(snapshotsbe.STP(stp))
	b[46] = byte(boolOf(post))
}

// setGroupCount rewrites the entry count of the Orders batch at the start
// of b (the group header ends the batch header: block length, then count).
func setGroupCount(b []byte, n int) {
	binary.LittleEndian.PutUint16(b[batchHeader-2:], uint16(n))
}

// OnArmedTrigger implements [engine.Sink]: one entry of a Triggers batch.
func (p *Publisher) OnArmedTrigger(instrument uint32, side engine.Side, orderID, account uint64, typ engine.OrderType, tif engine.TimeInForce, ref engine.TriggerRef,
	stop, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	if p.err != nil {
		return p.err
	}
	if p.kind != batchTriggers || p.tg.Index() == p.tg.Count() {
		if err := p.openBatch(batchTriggers); err != nil {
			return err
		}
	}
	g, err := p.tg.Next()
	if err != nil {
		return p.fail(err)
	}
	g.OrderId(orderID).Account(account).Stop(stop).Price(price).Qty(qty).Seq(seq).Instrument(instrument).
		Side(snapshotsbe.Side(side)).OrderType(snapshotsbe.OrderType(typ)).Tif(snapshotsbe.TimeInForce(tif)).
		Ref(snapshotsbe.TriggerRef(ref)).Stp(snapshotsbe.STP(stp)).PostOnly(boolOf(post))
	return nil
}

// OnEnd implements [engine.Sink]: it closes the open batch, writes End
// with the counts, the state hash and the stream checksum, then
// SnapshotMarker END.
func (p *Publisher) OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error {
	if p.err != nil {
		return p.err
	}
	p.closeBatch()
	buf, err := p.claim(endLength)
	if err != nil {
		return err
	}
	if err := p.end.WrapAndApplyHeader(buf, 0); err != nil {
		p.c.Abort()
		return p.fail(err)
	}
	p.end.Sources(sources).Instruments(instruments).Orders(orders).Triggers(triggers).StateHash(stateHash).Checksum(p.sum)
	p.commit(buf, false)
	return p.writeMarker(aeronclustersbe.SnapshotMarkEND)
}

func boolOf(b bool) snapshotsbe.Bool {
	if b {
		return snapshotsbe.BoolTrue
	}
	return snapshotsbe.BoolFalse
}
