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

// ErrLoad marks every error a [Loader] returns.
var ErrLoad = errors.New("snapshot: load")

// ErrEnded is returned (wrapped in ErrLoad) when the source runs dry before
// SnapshotMarker END.
var ErrEnded = fmt.Errorf("%w: snapshot ended before END", ErrLoad)

// LoadOptions bound and check a load.
type LoadOptions struct {
	// TypeID and AppVersion must equal the BEGIN marker's.
	TypeID     int64
	AppVersion int32
	// FragmentLimit is the fragment limit of each poll (default 64).
	FragmentLimit int
	// MaxFragments bounds the fragments read; 0 means no bound.
	MaxFragments int64
	// IdlePolls is how many consecutive empty polls mean the stream has
	// ended (default 1: the whole snapshot is already in the source, as
	// for a replay of a complete recording). Idle, if set, is called after
	// each empty poll that does not end the load; its error ends it.
	IdlePolls int
	Idle      func() error
}

// Loader reads a snapshot from a [stream.FragmentSource] and feeds an engine's
// [engine.Restorer] strictly; see the package documentation for what it
// checks. A Loader may be reused; it is not safe for concurrent use.
type Loader struct {
	opts   LoadOptions
	r      *engine.Restorer
	err    error
	stage  int
	frag   int64 // fragments seen
	sum    uint64
	begin  Marker
	md     aeronclustersbe.SnapshotMarkerDecoder
	bd     snapshotsbe.MeSnapshotBeginDecoder
	sd     snapshotsbe.SourceHwmDecoder
	kd     snapshotsbe.MarkDecoder
	td     snapshotsbe.TriggersDecoder
	ed     snapshotsbe.EndDecoder
	handle stream.FragmentHandler
	used   int // encoded length of the message being checked
}

const (
	stageBegin   = iota // expecting SnapshotMarker BEGIN
	stageHeader         // expecting MeSnapshotBegin
	stageRecords        // records or End
	stageEnd            // expecting SnapshotMarker END
	stageDone
)

// Load restores a new engine from src with a fresh [Loader].
func Load(src stream.FragmentSource, opts LoadOptions) (*engine.Engine, Marker, error) {
	var l Loader
	return l.Load(src, opts)
}

// Load restores a new engine from src and returns it with the BEGIN
// marker. On any error it returns a nil engine, never a partial one: the
// engine is built aside and handed over only once SnapshotMarker END has
// arrived and every check has passed.
func (l *Loader) Load(src stream.FragmentSource, opts LoadOptions) (*engine.Engine, Marker, error) {
	e := engine.New()
	if opts.FragmentLimit <= 0 {
		opts.FragmentLimit = 64
	}
	if opts.IdlePolls <= 0 {
		opts.IdlePolls = 1
	}
	*l = Loader{opts: opts, r: e.Restorer(), sum: checksumBasis, handle: l.handle}
	if l.handle == nil {
		l.handle = l.onFragment
	}
	idle := 0
	for l.err == nil && l.stage != stageDone {
		limit := opts.FragmentLimit
		if opts.MaxFragments > 0 {
			if l.frag >= opts.MaxFragments {
				l.err = fmt.Errorf("%w: no END within %d fragments", ErrLoad, opts.MaxFragments)
				break
			}
			limit = int(min(int64(limit), opts.MaxFragments-l.frag))
		}
		if src.Poll(l.handle, limit) > 0 {
			idle = 0
			continue
		}
		if idle++; idle >= opts.IdlePolls {
			l.err = fmt.Errorf("%w (after %d fragments)", ErrEnded, l.frag)
			break
		}
		if opts.Idle != nil {
			if err := opts.Idle(); err != nil {
				l.err = fmt.Errorf("%w: %w", ErrLoad, err)
			}
		}
	}
	if l.err == nil {
		if err := l.r.Err(); err != nil {
			l.err = fmt.Errorf("%w: %w", ErrLoad, err)
		}
	}
	l.r = nil
	if l.err != nil {
		return nil, Marker{}, l.err
	}
	return e, l.begin, nil
}

// failf records the first error, naming the fragment and its position.
func (l *Loader) failf(pos int64, format string, args ...any) {
	if l.err == nil {
		l.err = fmt.Errorf("%w: fragment %d (position %d): %s", ErrLoad, l.frag-1, pos, fmt.Sprintf(format, args...))
	}
}

func templateName(schema, template uint16) string {
	if schema == aeronclustersbe.SchemaID {
		if template == aeronclustersbe.SnapshotMarkerTemplateID {
			return "SnapshotMarker"
		}
		return fmt.Sprintf("cluster template %d", template)
	}
	if schema != snapshotsbe.SchemaID {
		return fmt.Sprintf("schema %d template %d", schema, template)
	}
	switch template {
	case snapshotsbe.MeSnapshotBeginTemplateID:
		return "MeSnapshotBegin"
	case snapshotsbe.SourceHwmTemplateID:
		return "SourceHwm"
	case snapshotsbe.MarkTemplateID:
		return "Mark"
	case snapshotsbe.OrdersTemplateID:
		return "Orders"
	case snapshotsbe.TriggersTemplateID:
		return "Triggers"
	case snapshotsbe.EndTemplateID:
		return "End"
	}
	return fmt.Sprintf("unknown template %d", template)
}

func (l *Loader) onFragment(buf []byte, offset, length int, pos int64) {
	l.frag++
	if l.err != nil {
		return
	}
	if l.stage == stageDone {
		l.failf(pos, "fragment after SnapshotMarker END")
		return
	}
	if offset < 0 || length < 0 || offset > len(buf) || length > len(buf)-offset {
		l.failf(pos, "fragment out of range")
		return
	}
	msg := buf[offset : offset+length]
	if len(msg) < snapshotsbe.MessageHeaderEncodedLength {
		l.failf(pos, "short message: %d bytes, no SBE header", len(msg))
		return
	}
	block := binary.LittleEndian.Uint16(msg[0:])
	template := binary.LittleEndian.Uint16(msg[2:])
	schema := binary.LittleEndian.Uint16(msg[4:])
	version := binary.LittleEndian.Uint16(msg[6:])
	name := templateName(schema, template)

	if l.stage == stageBegin || l.stage == stageEnd {
		l.onMarker(msg, pos, name, block, template, schema, version)
		return
	}
	if schema != snapshotsbe.SchemaID {
		l.failf(pos, "%s where a matchlog snapshot message (schema %d) is expected", name, snapshotsbe.SchemaID)
		return
	}
	if version == 0 || version > snapshotsbe.SchemaVersion {
		l.failf(pos, "%s: schema version %d not supported (%d)", name, version, snapshotsbe.SchemaVersion)
		return
	}
	if l.stage == stageHeader && template != snapshotsbe.MeSnapshotBeginTemplateID {
		l.failf(pos, "%s where MeSnapshotBegin is expected", name)
		return
	}
	var err error
	switch template {
	case snapshotsbe.MeSnapshotBeginTemplateID:
		if l.stage != stageHeader {
			l.failf(pos, "second MeSnapshotBegin")
			return
		}
		if !l.fixed(msg, pos, name, block, snapshotsbe.MeSnapshotBeginBlockLength) {
			return
		}
		d := &l.bd
		_ = d.WrapWithHeader(msg, 0)
		err = l.r.OnHeader(engine.Header{Version: d.RecordVersion(), NextSeq: d.NextSeq(), Sources: d.Sources(),
			Instruments: d.Instruments(), Orders: d.Orders(), Triggers: d.Triggers()})
		l.stage = stageRecords
	case snapshotsbe.SourceHwmTemplateID:
		if !l.fixed(msg, pos, name, block, snapshotsbe.SourceHwmBlockLength) {
			return
		}
		d := &l.sd
		_ = d.WrapWithHeader(msg, 0)
		err = l.r.OnSourceHighWater(d.Source(), d.Seq())
	case snapshotsbe.MarkTemplateID:
		if !l.fixed(msg, pos, name, block, snapshotsbe.MarkBlockLength) {
			return
		}
		d := &l.kd
		_ = d.WrapWithHeader(msg, 0)
		err = l.r.OnMark(d.Instrument(), d.Tick(), d.Lot(), d.MinPrice(), d.MaxPrice(), d.LastTrade(), d.Mark())
	case snapshotsbe.OrdersTemplateID:
		err = l.onOrders(msg, pos, block)
	case snapshotsbe.TriggersTemplateID:
		err = l.onTriggers(msg, pos, block)
	case snapshotsbe.EndTemplateID:
		if !l.fixed(msg, pos, name, block, snapshotsbe.EndBlockLength) {
			return
		}
		d := &l.ed
		_ = d.WrapWithHeader(msg, 0)
		if d.Checksum() != l.sum {
			l.failf(pos, "End: stream checksum %#016x, computed %#016x", d.Checksum(), l.sum)
			return
		}
		err = l.r.OnEnd(d.Sources(), d.Instruments(), d.Orders(), d.Triggers(), d.StateHash())
		l.stage = stageEnd
		if err == nil {
			err = l.r.Err()
		}
		if err != nil {
			l.failf(pos, "%s: %v", name, err)
		}
		return
	default:
		l.failf(pos, "%s", name)
		return
	}
	if err != nil {
		l.failf(pos, "%s: %v", name, err)
		return
	}
	if l.err == nil {
		l.sum = checksum(l.sum, msg[:l.used])
	}
}

// fixed checks a fixed-size message: exact block length, nothing after it.
func (l *Loader) fixed(msg []byte, pos int64, name string, block uint16, want int) bool {
	if int(block) != want {
		l.failf(pos, "%s: block length %d, want %d", name, block, want)
		return false
	}
	if n := snapshotsbe.MessageHeaderEncodedLength + want; len(msg) != n {
		if len(msg) < n {
			l.failf(pos, "%s: short message: %d bytes, want %d", name, len(msg), n)
		} else {
			l.failf(pos, "%s: %d bytes of trailing garbage", name, len(msg)-n)
		}
		return false
	}
	l.used = len(msg)
	return true
}

// batch checks an Orders or Triggers message's framing and returns its
// entry count: a block length of 0, a group of entries of the expected
// length, at least one entry, and only zero bytes after the last entry
// (the claim's unused tail).
func (l *Loader) batch(msg []byte, pos int64, name string, block uint16, entry int) (int, bool) {
	if block != 0 {
		l.failf(pos, "%s: block length %d, want 0", name, block)
		return 0, false
	}
	if len(msg) < batchHeader {
		l.failf(pos, "%s: short message: %d bytes, no group header", name, len(msg))
		return 0, false
	}
	el := int(binary.LittleEndian.Uint16(msg[snapshotsbe.MessageHeaderEncodedLength:]))
	n := int(binary.LittleEndian.Uint16(msg[snapshotsbe.MessageHeaderEncodedLength+2:]))
	if el != entry {
		l.failf(pos, "%s: entry length %d, want %d", name, el, entry)
		return 0, false
	}
	if n == 0 {
		l.failf(pos, "%s: empty batch", name)
		return 0, false
	}
	used := batchHeader + n*entry
	if used > len(msg) {
		l.failf(pos, "%s: short message: %d entries need %d bytes, have %d", name, n, used, len(msg))
		return 0, false
	}
	for i, b := range msg[used:] {
		if b != 0 {
			l.failf(pos, "%s: trailing garbage at byte %d after %d entries", name, used+i, n)
			return 0, false
		}
	}
	l.used = used
	return n, true
}

// Field offsets of an Orders entry (snapshotsbe's OrdersEntries, block
// length orderLength): onOrders reads the entries in place.
const (
	ordOrderID    = 0
	ordAccount    = 8
	ordPrice      = 16
	ordQty        = 24
	ordSeq        = 32
	ordInstrument = 40
	ordSide       = 44
	ordSTP        = 45
	ordPostOnly   = 46
)

// onOrders feeds an Orders batch's entries to the restorer. batch has
// checked the group header (entry length orderLength, n entries that fit
// the message), so the entries are read in place at fixed offsets, with
// one bounds check an entry, rather than through the group decoder's
// per-field checks; the fields are those of snapshotsbe.OrdersEntries
// (TestOrdersOffsets holds the two together).
func (l *Loader) onOrders(msg []byte, pos int64, block uint16) error {
	n, ok := l.batch(msg, pos, "Orders", block, orderLength)
	if !ok {
		return nil
	}
	le := binary.LittleEndian
	ents := msg[batchHeader : batchHeader+n*orderLength]
	for len(ents) >= orderLength {
		e := ents[:orderLength:orderLength]
		ents = ents[orderLength:]
		post, err := boolFrom(snapshotsbe.Bool(e[ordPostOnly]))
		if err != nil {
			return err
		}
		if err := l.r.OnResting(le.Uint32(e[ordInstrument:]), engine.Side(e[ordSide]), le.Uint64(e[ordOrderID:]), le.Uint64(e[ordAccount:]),
			int64(le.Uint64(e[ordPrice:])), int64(le.Uint64(e[ordQty:])), le.Uint64(e[ordSeq:]), engine.STP(e[ordSTP]), post); err != nil {
			return err
		}
	}
	return nil
}

func (l *Loader) onTriggers(msg []byte, pos int64, block uint16) error {
	if _, ok := l.batch(msg, pos, "Triggers", block, triggerLength); !ok {
		return nil
	}
	d := &l.td
	if err := d.WrapWithHeader(msg[:l.used], 0); err != nil {
		return err
	}
	g, err := d.Entries()
	if err != nil {
		return err
	}
	for g.HasNext() {
		if _, err := g.Next(); err != nil {
			return err
		}
		post, err := boolFrom(g.PostOnly())
		if err != nil {
			return err
		}
		if err := l.r.OnArmedTrigger(g.Instrument(), engine.Side(g.Side()), g.OrderId(), g.Account(),
			engine.OrderType(g.OrderType()), engine.TimeInForce(g.Tif()), engine.TriggerRef(g.Ref()),
			g.Stop(), g.Price(), g.Qty(), g.Seq(), engine.STP(g.Stp()), post); err != nil {
			return err
		}
	}
	return nil
}

func boolFrom(b snapshotsbe.Bool) (bool, error) {
	switch b {
	case snapshotsbe.BoolFalse:
		return false, nil
	case snapshotsbe.BoolTrue:
		return true, nil
	}
	return false, fmt.Errorf("postOnly %d is not a Bool", b)
}

// onMarker checks SnapshotMarker BEGIN (stageBegin) or END (stageEnd).
func (l *Loader) onMarker(msg []byte, pos int64, name string, block, template, schema, version uint16) {
	want := "BEGIN"
	if l.stage == stageEnd {
		want = "END"
	}
	if schema != aeronclustersbe.SchemaID || template != aeronclustersbe.SnapshotMarkerTemplateID {
		l.failf(pos, "%s where SnapshotMarker %s is expected", name, want)
		return
	}
	// Every field exists from cluster schema version 4 (aeron-go writes 8,
	// Java 12); a version newer than the codec's is refused.
	if version < 4 || version > aeronclustersbe.SchemaVersion || block != aeronclustersbe.SnapshotMarkerBlockLength {
		l.failf(pos, "SnapshotMarker: version %d, block length %d not supported", version, block)
		return
	}
	if n := aeronclustersbe.MessageHeaderEncodedLength + int(block); len(msg) != n {
		l.failf(pos, "SnapshotMarker: %d bytes, want %d", len(msg), n)
		return
	}
	d := &l.md
	if err := d.WrapWithHeader(msg, 0); err != nil {
		l.failf(pos, "SnapshotMarker: %v", err)
		return
	}
	m := Marker{TypeID: d.TypeId(), LogPosition: d.LogPosition(), LeadershipTermID: d.LeadershipTermId(),
		TimeUnit: d.TimeUnit(), AppVersion: d.AppVersion()}
	if d.Index() != 0 {
		l.failf(pos, "SnapshotMarker %s: index %d, want 0", want, d.Index())
		return
	}
	if l.stage == stageBegin {
		if d.Mark() != aeronclustersbe.SnapshotMarkBEGIN {
			l.failf(pos, "SnapshotMarker %v where BEGIN is expected", d.Mark())
			return
		}
		if m.TypeID != l.opts.TypeID {
			l.failf(pos, "SnapshotMarker BEGIN: snapshot type %d, want %d", m.TypeID, l.opts.TypeID)
			return
		}
		if m.AppVersion != l.opts.AppVersion {
			l.failf(pos, "SnapshotMarker BEGIN: app version %d, want %d", m.AppVersion, l.opts.AppVersion)
			return
		}
		l.begin = m
		l.stage = stageHeader
		return
	}
	if d.Mark() != aeronclustersbe.SnapshotMarkEND {
		l.failf(pos, "SnapshotMarker %v where END is expected", d.Mark())
		return
	}
	if m != l.begin {
		l.failf(pos, "SnapshotMarker END %+v differs from BEGIN %+v", m, l.begin)
		return
	}
	l.stage = stageDone
}
