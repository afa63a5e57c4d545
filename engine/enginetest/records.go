package enginetest

import (
	"fmt"
	"strings"

	"github.com/matchlog/matchlog/engine"
)

// Recorder is an [engine.Sink] (and [engine.RestingSink]) that keeps every
// record it receives as one line of text, for comparing record streams and
// printing them.
type Recorder struct {
	Lines []string
}

func (r *Recorder) add(kind string, parts ...any) error {
	var b strings.Builder
	b.WriteString(kind)
	for _, p := range parts {
		b.WriteByte(' ')
		fmt.Fprint(&b, p)
	}
	r.Lines = append(r.Lines, b.String())
	return nil
}

// OnHeader implements [engine.Sink].
func (r *Recorder) OnHeader(h engine.Header) error {
	return r.add("header", h.Version, h.NextSeq, h.Sources, h.Instruments, h.Orders, h.Triggers)
}

// OnSourceHighWater implements [engine.Sink].
func (r *Recorder) OnSourceHighWater(source, seq uint64) error { return r.add("source", source, seq) }

// OnMark implements [engine.Sink].
func (r *Recorder) OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error {
	return r.add("mark", instrument, tick, lot, minPrice, maxPrice, lastTrade, mark)
}

// OnResting implements [engine.Sink] and [engine.RestingSink].
func (r *Recorder) OnResting(instrument uint32, side engine.Side, orderID, account uint64, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	return r.add("resting", instrument, side, orderID, account, price, qty, seq, stp, post)
}

// OnArmedTrigger implements [engine.Sink].
func (r *Recorder) OnArmedTrigger(instrument uint32, side engine.Side, orderID, account uint64, typ engine.OrderType, tif engine.TimeInForce, ref engine.TriggerRef,
	stop, price, qty int64, seq uint64, stp engine.STP, post bool) error {
	return r.add("trigger", instrument, side, orderID, account, typ, tif, ref, stop, price, qty, seq, stp, post)
}

// OnEnd implements [engine.Sink].
func (r *Recorder) OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error {
	return r.add("end", sources, instruments, orders, triggers, stateHash)
}

// Records returns the record stream that snapshot writes, one line per
// record (the error, if any, as a last line).
func Records(snapshot func(engine.Sink) error) []string {
	var r Recorder
	if err := snapshot(&r); err != nil {
		r.Lines = append(r.Lines, "error "+err.Error())
	}
	return r.Lines
}

// DiffLines describes the first difference between two record streams, or
// returns "" when they are equal.
func DiffLines(a, b []string, nameA, nameB string) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("record %d differs (of %d / %d):\n  %s: %s\n  %s: %s", i, len(a), len(b), nameA, x, nameB, y)
		}
	}
	return ""
}
