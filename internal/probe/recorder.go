package probe

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range and precision used by Recorder.
const (
	// HistMin is the lowest discernible latency (values below it are still
	// counted, in the lowest bucket).
	HistMin = time.Microsecond
	// HistMax is the highest trackable latency; larger values are clamped to
	// it and counted in Summary.Clamped.
	HistMax = 60 * time.Second
	// HistDigits is the number of significant decimal digits kept.
	HistDigits = 3
	// MaxSeries bounds the per-probe time series kept by a Recorder. Probes
	// with an index at or beyond the series capacity are recorded in the
	// histogram only.
	MaxSeries = 10_000_000
)

// Per-probe series encoding (int64 per probe index):
//
//	0                 no completion seen (not sent, or in flight)
//	L+1 (> 0)         completed with latency L (L >= 0)
//	-(L+1) (< 0)      lost: no completion by Finish, latency L counted up to
//	                  the Finish time
const slotEmpty = 0

// maxSeriesLatency caps latencies stored in the series so that the encoding
// cannot overflow (about 146 years).
const maxSeriesLatency = time.Duration(1 << 62)

// encode returns the series slot value for latency l.
func encode(l time.Duration, lost bool) int64 {
	v := int64(min(max(l, 0), maxSeriesLatency)) + 1
	if lost {
		return -v
	}
	return v
}

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(int64(HistMin), int64(HistMax), HistDigits)
}

// Recorder records the latency of probes sent on a Schedule. It is safe for
// concurrent use: sends and completions usually happen on different
// goroutines.
//
// Latency is always measured from the probe's intended send time
// (Schedule.Intended), never from its actual send time.
//
// Every latency goes into an HdrHistogram (1 µs .. 60 s, 3 significant
// digits). In addition, the latency of each probe with index below the series
// capacity is kept in a preallocated array, giving a (intended offset,
// latency) time series used for windows and plots. Probes beyond the capacity
// are counted in Summary.SeriesDropped.
type Recorder struct {
	sched Schedule

	mu       sync.Mutex
	hist     *hdrhistogram.Histogram
	series   []int64
	done     int // completions accepted
	beyond   int // completions accepted for probes beyond the series capacity
	dup      int // duplicate, out-of-range or post-Finish completions
	clamped  int
	lost     int
	lostGone int // lost probes beyond the series (no latency known)
	finished bool
	sent     int
	marks    []Event
}

// Event is a named instant, such as the start or end of a snapshot or a node
// restart.
type Event struct {
	// Name identifies the event, e.g. "snapshot-start".
	Name string
	// At is when the event happened.
	At time.Time
}

// NewRecorder returns a Recorder for probes sent on s, keeping a per-probe
// series for the first capacity probes (clamped to [0, MaxSeries]). The
// series is preallocated (8 bytes per probe); pass the number of probes the
// run will send, e.g. s.Count(d).
func NewRecorder(s Schedule, capacity int) *Recorder {
	if capacity < 0 {
		capacity = 0
	}
	if capacity > MaxSeries {
		capacity = MaxSeries
	}
	return &Recorder{
		sched:  s,
		hist:   newHist(),
		series: make([]int64, capacity),
	}
}

// Schedule returns the schedule the recorder measures against.
func (r *Recorder) Schedule() Schedule { return r.sched }

// clampLatency converts a latency to the value stored in the histogram.
func clampLatency(l time.Duration) (v int64, clamped bool) {
	if l < 0 {
		return 0, false
	}
	if l > HistMax {
		return int64(HistMax), true
	}
	return int64(l), false
}

// Done records the completion of probe i at time now; its latency is
// now - Schedule.Intended(i) (negative values, which can only come from a
// caller bug or a clock without monotonic reading, are recorded as 0).
// It reports whether the completion was accepted: completions for a negative
// index, duplicates (detected for probes inside the series capacity) and
// completions after Finish are ignored and counted in Summary.Ignored.
//
// Done does not allocate.
func (r *Recorder) Done(i int, now time.Time) bool {
	lat := now.Sub(r.sched.Intended(i))
	r.mu.Lock()
	defer r.mu.Unlock()
	if i < 0 || r.finished {
		r.dup++
		return false
	}
	if i < len(r.series) && r.series[i] != slotEmpty {
		r.dup++
		return false
	}
	v, clamped := clampLatency(lat)
	if clamped {
		r.clamped++
	}
	_ = r.hist.RecordValue(v) // v is within range, so this cannot fail
	if i < len(r.series) {
		r.series[i] = encode(lat, false)
	} else {
		r.beyond++
	}
	r.done++
	return true
}

// Mark records a named event at time t (e.g. "snapshot-start").
func (r *Recorder) Mark(name string, t time.Time) {
	r.mu.Lock()
	r.marks = append(r.marks, Event{Name: name, At: t})
	r.mu.Unlock()
}

// Marks returns a copy of the recorded events in the order they were marked.
func (r *Recorder) Marks() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.marks...)
}

// Summary describes a finished (or in-progress) recording.
type Summary struct {
	// Sent is the number of probes sent, as passed to Finish.
	Sent int
	// Completed is the number of completions accepted by Done.
	Completed int
	// Lost is the number of sent probes without a completion at Finish.
	// Those inside the series capacity are recorded with latency
	// finish - intended and flagged as lost in the series.
	Lost int
	// LostUnmeasured is the part of Lost beyond the series capacity: their
	// completion state is unknown per probe, so no latency is recorded.
	LostUnmeasured int
	// Ignored counts duplicate, invalid or post-Finish completions.
	Ignored int
	// Clamped counts latencies above HistMax recorded as HistMax.
	Clamped int
	// SeriesDropped counts completions recorded in the histogram only
	// because the probe index was beyond the series capacity.
	SeriesDropped int
	// Count is the number of latencies in the histogram (Completed plus the
	// measured lost probes).
	Count int64
	// P50, P99, P999 and Max are latency quantiles over all recorded probes.
	P50, P99, P999, Max time.Duration
}

// Finish ends the recording at time now, given the number of probes that
// were sent (probes 0..sent-1, e.g. the count returned by Schedule.Run).
//
// Policy for probes that never completed: each sent probe inside the series
// capacity with no completion is counted as lost AND recorded with latency
// now - intended (its latency up to the end of the run, a lower bound of its
// true latency), flagged as lost in the series; this keeps a hung node visible
// in the quantiles instead of silently dropping its probes. Lost probes beyond
// the series capacity cannot be identified individually; they are counted in
// Summary.LostUnmeasured only. After Finish, Done ignores further
// completions. Calling Finish again changes nothing and returns the current
// summary.
func (r *Recorder) Finish(now time.Time, sent int) Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finished {
		r.finished = true
		if sent < 0 {
			sent = 0
		}
		r.sent = sent
		inSeries := min(sent, len(r.series))
		for i := 0; i < inSeries; i++ {
			if r.series[i] != slotEmpty {
				continue
			}
			lat := max(now.Sub(r.sched.Intended(i)), 0)
			v, clamped := clampLatency(lat)
			if clamped {
				r.clamped++
			}
			_ = r.hist.RecordValue(v)
			r.series[i] = encode(lat, true)
			r.lost++
		}
		if sent > len(r.series) {
			r.lostGone = max(0, (sent-len(r.series))-r.beyond)
		}
	}
	return r.summaryLocked()
}

// Summary returns the current counts and quantiles. Before Finish, Lost is 0
// and in-flight probes are not included.
func (r *Recorder) Summary() Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.summaryLocked()
}

func (r *Recorder) summaryLocked() Summary {
	return Summary{
		Sent:           r.sent,
		Completed:      r.done,
		Lost:           r.lost + r.lostGone,
		LostUnmeasured: r.lostGone,
		Ignored:        r.dup,
		Clamped:        r.clamped,
		SeriesDropped:  r.beyond,
		Count:          r.hist.TotalCount(),
		P50:            quantile(r.hist, 0.50),
		P99:            quantile(r.hist, 0.99),
		P999:           quantile(r.hist, 0.999),
		Max:            time.Duration(r.hist.Max()),
	}
}

// Quantile returns the latency at quantile q in [0, 1] over all recorded
// probes (histogram precision: 3 significant digits). It returns 0 when
// nothing was recorded.
func (r *Recorder) Quantile(q float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return quantile(r.hist, q)
}

// quantile returns the value at quantile q in [0, 1] of h, or 0 if h is
// empty.
func quantile(h *hdrhistogram.Histogram, q float64) time.Duration {
	if h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(h.ValueAtQuantile(clampQ(q) * 100))
}

func clampQ(q float64) float64 {
	if math.IsNaN(q) || q < 0 {
		return 0
	}
	return min(q, 1)
}

// seriesRange returns the series index range [lo, hi) of probes whose
// intended time lies in [from, to].
func (r *Recorder) seriesRange(from, to time.Time) (lo, hi int) {
	if to.Before(from) {
		return 0, 0
	}
	s := r.sched
	lo = s.firstAtOrAfter(from.Sub(s.Start))
	toOff := to.Sub(s.Start)
	if toOff < 0 {
		return 0, 0
	}
	hi = s.Count(toOff)
	for s.Offset(hi) <= toOff { // include a probe exactly at to
		hi++
	}
	hi = min(hi, len(r.series))
	lo = min(lo, hi)
	return lo, hi
}

func decode(v int64) (lat time.Duration, lost, ok bool) {
	switch {
	case v > 0:
		return time.Duration(v - 1), false, true
	case v < 0:
		return time.Duration(-v - 1), true, true
	}
	return 0, false, false
}

// WindowMax returns the worst latency among probes whose intended send time
// lies in [from, to] (both inclusive), including lost probes after Finish, and
// 0 if there are none. Only probes inside the series capacity are considered.
// The demo uses it to report the pause caused by a snapshot as the worst
// probe latency in a window around it.
func (r *Recorder) WindowMax(from, to time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	lo, hi := r.seriesRange(from, to)
	var m time.Duration
	for _, v := range r.series[lo:hi] {
		if l, _, ok := decode(v); ok && l > m {
			m = l
		}
	}
	return m
}

// seriesSpan is a half-open range [lo, hi) of series indices.
type seriesSpan struct{ lo, hi int }

// excluded returns the series ranges of the windows that hold probes,
// sorted by their start (they may overlap). Call it with r.mu held.
func (r *Recorder) excluded(windows [][2]time.Time) []seriesSpan {
	excl := make([]seriesSpan, 0, len(windows))
	for _, w := range windows {
		if lo, hi := r.seriesRange(w[0], w[1]); lo < hi {
			excl = append(excl, seriesSpan{lo, hi})
		}
	}
	sort.Slice(excl, func(a, b int) bool { return excl[a].lo < excl[b].lo })
	return excl
}

// QuantileOutside returns the latency at quantile q in [0, 1] over the probes
// inside the series capacity whose intended send time lies outside every
// window [w[0], w[1]] (inclusive bounds; windows may overlap and need not be
// sorted). Lost probes recorded by Finish are included. The result has
// histogram precision (3 significant digits); it is 0 when no probe
// qualifies.
func (r *Recorder) QuantileOutside(windows [][2]time.Time, q float64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	excl := r.excluded(windows)
	h := newHist()
	add := func(vals []int64) {
		for _, v := range vals {
			if l, _, ok := decode(v); ok {
				x, _ := clampLatency(l)
				_ = h.RecordValue(x)
			}
		}
	}
	next := 0
	for _, e := range excl {
		if e.lo > next {
			add(r.series[next:e.lo])
		}
		next = max(next, e.hi)
	}
	if next < len(r.series) {
		add(r.series[next:])
	}
	return quantile(h, q)
}

// Each calls fn, in index order, for every probe in the series that has a
// latency: completed probes, and after Finish the lost ones (lost == true,
// latency counted until Finish). offset is the intended send time relative to
// Schedule.Start. fn runs with the recorder locked and must not call its
// methods.
func (r *Recorder) Each(fn func(i int, offset, latency time.Duration, lost bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, v := range r.series {
		if l, lost, ok := decode(v); ok {
			fn(i, r.sched.Offset(i), l, lost)
		}
	}
}

// Worst is the probe with the highest latency in a range of the series.
type Worst struct {
	// Index is the probe's index, Offset its intended send time relative
	// to Schedule.Start.
	Index  int
	Offset time.Duration
	// Latency is its latency (up to Finish when Lost).
	Latency time.Duration
	Lost    bool
}

// WindowWorst returns the probe with the highest latency among those whose
// intended send time lies in [from, to] (both inclusive), as WindowMax
// does, and false if there is none. Ties go to the earliest probe.
func (r *Recorder) WindowWorst(from, to time.Time) (Worst, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lo, hi := r.seriesRange(from, to)
	return r.worstDone(r.worstIn(lo, hi, Worst{Index: -1}))
}

// worstIn returns the worse of w and the worst probe in series[lo:hi]
// (Index -1: none yet).
func (r *Recorder) worstIn(lo, hi int, w Worst) Worst {
	for i, v := range r.series[lo:hi] {
		if l, lost, ok := decode(v); ok && (w.Index < 0 || l > w.Latency) {
			w = Worst{Index: lo + i, Latency: l, Lost: lost}
		}
	}
	return w
}

func (r *Recorder) worstDone(w Worst) (Worst, bool) {
	if w.Index < 0 {
		return Worst{}, false
	}
	w.Offset = r.sched.Offset(w.Index)
	return w, true
}

// WorstOutside returns the probe with the highest latency among those
// inside the series capacity whose intended send time lies outside every
// window (the probes QuantileOutside counts), and false if there is none.
// Ties go to the earliest probe.
func (r *Recorder) WorstOutside(windows [][2]time.Time) (Worst, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	excl := r.excluded(windows)
	w := Worst{Index: -1}
	next := 0
	for _, e := range excl {
		if e.lo > next {
			w = r.worstIn(next, e.lo, w)
		}
		next = max(next, e.hi)
	}
	if next < len(r.series) {
		w = r.worstIn(next, len(r.series), w)
	}
	return r.worstDone(w)
}
