package plot

import (
	"math"
	"strconv"
	"time"
)

// tick is one axis tick: a data value and its label ("" for minor ticks).
type tick struct {
	v     float64
	label string
}

// logTicks returns ticks for a log10 axis over [lo, hi] (nanoseconds,
// lo > 0) and the axis range, expanded outwards to whole decades. Every decade
// gets a labelled major tick; when the range spans at most three decades the
// 2× and 5× values are labelled too, otherwise 2..9× are unlabelled minor
// ticks.
func logTicks(lo, hi float64) (ticks []tick, axisLo, axisHi float64) {
	if !(lo > 0) || math.IsInf(lo, 0) {
		lo = 1
	}
	if !(hi >= lo) || math.IsInf(hi, 0) {
		hi = lo
	}
	eLo := math.Floor(math.Log10(lo))
	eHi := math.Ceil(math.Log10(hi))
	if eHi <= eLo {
		eHi = eLo + 1
	}
	axisLo, axisHi = math.Pow(10, eLo), math.Pow(10, eHi)
	dense := eHi-eLo <= 3
	for e := eLo; e <= eHi; e++ {
		base := math.Pow(10, e)
		ticks = append(ticks, tick{v: base, label: formatNanos(base)})
		if e == eHi {
			break
		}
		for m := 2.0; m <= 9; m++ {
			t := tick{v: m * base}
			if dense && (m == 2 || m == 5) {
				t.label = formatNanos(t.v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks, axisLo, axisHi
}

// niceStep returns a 1, 2 or 5 × 10^k step giving roughly n intervals over
// span.
func niceStep(span float64, n int) float64 {
	if !(span > 0) || math.IsInf(span, 0) || n < 1 {
		return 1
	}
	raw := span / float64(n)
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// linearTicks returns labelled ticks at multiples of a nice step covering
// [lo, hi], the axis range expanded to whole steps, and the step. format
// renders a tick value.
func linearTicks(lo, hi float64, n int, format func(v, step float64) string) (ticks []tick, axisLo, axisHi float64) {
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		lo = 0
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) || hi < lo {
		hi = lo
	}
	if !(hi > lo) {
		hi = lo + 1
	}
	if !(hi > lo) { // lo too large for +1 to register
		hi = lo + math.Abs(lo)*1e-6
	}
	step := niceStep(hi-lo, n)
	axisLo = math.Floor(lo/step) * step
	axisHi = math.Ceil(hi/step) * step
	if !(axisHi > axisLo) {
		axisLo, axisHi = lo, hi
	}
	for k := 0; ; k++ {
		v := axisLo + float64(k)*step
		if v > axisHi+step/2 || k > 1000 {
			break
		}
		ticks = append(ticks, tick{v: v, label: format(v, step)})
	}
	return ticks, axisLo, axisHi
}

// formatSeconds renders a nanosecond value as seconds with as many decimals
// as the step needs (no unit: the axis title says "s").
func formatSeconds(v, step float64) string {
	s := v / 1e9
	dec := 0
	if st := step / 1e9; st < 1 {
		dec = int(math.Ceil(-math.Log10(st) - 1e-9))
	}
	if math.Abs(s) < 1e-12 {
		s = 0
	}
	return strconv.FormatFloat(s, 'f', dec, 64)
}

// formatLinearNanos renders a latency tick on a linear axis.
func formatLinearNanos(v, _ float64) string { return formatNanos(v) }

// formatNanos renders a latency in nanoseconds with a unit: ns, µs, ms or s,
// e.g. 10µs, 2.5ms, 1s.
func formatNanos(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	a := roundSig(math.Abs(v), 3) // so 999.9996ms becomes 1s, not 1000ms
	unit, div := "ns", 1.0
	switch {
	case a >= 1e9:
		unit, div = "s", 1e9
	case a >= 1e6:
		unit, div = "ms", 1e6
	case a >= 1e3:
		unit, div = "µs", 1e3
	}
	return strconv.FormatFloat(roundSig(v/div, 3), 'f', -1, 64) + unit
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, float64(n)-math.Ceil(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

// FormatDuration renders a latency the way the chart's axis does, e.g.
// "250µs", "1.5ms", "2s". It is exported for captions and tables.
func FormatDuration(d time.Duration) string { return formatNanos(float64(d)) }
