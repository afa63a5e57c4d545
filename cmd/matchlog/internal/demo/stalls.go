package demo

import (
	"cmp"
	"context"
	"fmt"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/internal/probe"
	"github.com/matchlog/matchlog/server"
)

// Stall attribution.
//
// While the probes run, the demo keeps a timeline of what may delay a
// probe, from measurements the process and the node already take:
//
//   - a timer goroutine sleeps sampleEvery and notes how late it woke
//     (a hiccup meter): a late wake means the process got no processor —
//     the machine's other load, or a stop-the-world;
//   - on the same ticks the runtime's counts of GC cycles and of GC
//     stop-the-world pauses (runtime/metrics) tell when a GC cycle was
//     marking, to a tick; at the end debug.ReadGCStats gives each cycle's
//     stop-the-world total and its end;
//   - every pollEvery the node's Stats, read on its duty cycle and then
//     reset (Node.ResetMaxima): the longest log recording (archive write
//     and sync) and the longest DoWork in that interval, with their
//     start times, and the durable log position (a segment roll-over is a
//     segment boundary crossed between two polls);
//   - the snapshots and the restart, from request to completion.
//
// Nothing of this runs per order: the sampler wakes every few
// milliseconds, the poller a few dozen times a second.
//
// The worst probe of each window and the worst outside all windows are
// reported with every timeline span that overlaps [scheduled send,
// scheduled send + latency] — what happened while that probe waited.

const (
	sampleEvery = 5 * time.Millisecond
	pollEvery   = 20 * time.Millisecond
	// lateBy is how late the sampler must wake, and minSpan how long a
	// log recording or duty cycle must be, to go on the timeline.
	lateBy  = 2 * time.Millisecond
	minSpan = time.Millisecond
	// maxSpans bounds the timeline (a loaded machine wakes the sampler
	// late often); later spans are counted, not kept.
	maxSpans = 100_000
)

// Cause kinds (Cause.Kind).
const (
	CauseGCPause   = "gc_pause"     // GC stop-the-world pauses of one cycle
	CauseGCMark    = "gc_mark"      // a GC cycle marking (concurrent, with assists)
	CauseSched     = "sched_delay"  // the process's timer woke late: no processor
	CauseLogRecord = "log_record"   // the node's log recording: archive write and sync
	CauseDoWork    = "duty_cycle"   // one long DoWork of the node
	CauseSegment   = "segment_roll" // the log recording began a new segment file
	CauseSnapshot  = "snapshot"     // a snapshot, request to completion
	CauseRestart   = "restart"      // the node closed and reopened
)

// Cause is one kind of thing that happened while a probe waited: the
// longest of that kind, and how many there were.
type Cause struct {
	Kind string `json:"kind"`
	// AtS is when the longest started and Ms how long it lasted (as
	// measured: for a GC pause the cycle's stop-the-world total, for a
	// late timer how late it woke), seconds from the probes' start and
	// ms; Count how many of the kind overlapped the wait and TotalMs
	// their sum.
	AtS     float64 `json:"at_s"`
	Ms      float64 `json:"ms"`
	Count   int     `json:"count"`
	TotalMs float64 `json:"total_ms"`
	// What says it in words.
	What string `json:"what"`
}

// Stall is the worst probe of a window, or of the time outside all
// windows, and what overlapped it.
type Stall struct {
	// Window is "pauseless", "stw", "restart" or "outside".
	Window string `json:"window"`
	// AtS is the probe's scheduled send time, seconds from the probes'
	// start; LatencyMs its latency; Lost whether it never completed.
	AtS       float64 `json:"at_s"`
	LatencyMs float64 `json:"latency_ms"`
	Lost      bool    `json:"lost,omitempty"`
	// Causes are the kinds of timeline span that overlap the probe's
	// wait, the longest first: the first is what most likely held it.
	Causes []Cause `json:"causes"`
}

type span struct {
	kind     string
	from, to time.Time
	d        time.Duration // the measured quantity (see Cause.Ms)
	what     string
}

// timeline collects spans; safe for concurrent use.
type timeline struct {
	mu      sync.Mutex
	spans   []span
	dropped int
}

func (tl *timeline) add(s span) {
	tl.mu.Lock()
	if len(tl.spans) < maxSpans {
		tl.spans = append(tl.spans, s)
	} else {
		tl.dropped++
	}
	tl.mu.Unlock()
}

// causes returns the spans overlapping [from, to], one Cause per kind
// (times relative to start), the longest first.
func (tl *timeline) causes(from, to, start time.Time) []Cause {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var cs []Cause
	var worst []span
	for _, s := range tl.spans {
		if s.to.Before(from) || s.from.After(to) {
			continue
		}
		k := slices.IndexFunc(cs, func(c Cause) bool { return c.Kind == s.kind })
		if k < 0 {
			cs = append(cs, Cause{Kind: s.kind})
			worst = append(worst, s)
			k = len(cs) - 1
		} else if s.d > worst[k].d {
			worst[k] = s
		}
		cs[k].Count++
		cs[k].TotalMs += ms(s.d)
	}
	for k := range cs {
		w := worst[k]
		cs[k].AtS, cs[k].Ms = w.from.Sub(start).Seconds(), ms(w.d)
		cs[k].What = w.what
		switch {
		case w.kind == CauseSched && cs[k].Count > 1:
			cs[k].What = fmt.Sprintf("the process got no processor: a %v timer woke %.1f ms late (%d late wakes, %.1f ms in all): machine load or a stop-the-world", sampleEvery, cs[k].Ms, cs[k].Count, cs[k].TotalMs)
		case cs[k].Count > 1:
			cs[k].What += fmt.Sprintf("; the longest of %d", cs[k].Count)
		}
	}
	slices.SortStableFunc(cs, func(a, b Cause) int { return cmp.Compare(rank(b), rank(a)) })
	return cs
}

// rank orders causes: by length, except that a long duty cycle ranks
// below a cause of at least 90% its length, which it holds (a log
// recording, a stop-the-world snapshot) or which held it (a late timer).
func rank(c Cause) float64 {
	if c.Kind == CauseDoWork {
		return c.Ms * 0.9
	}
	return c.Ms
}

// monitor runs the sampler and the node poller until stop.
type monitor struct {
	tl     *timeline
	srv    atomic.Pointer[server.Server]
	segLen int64
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startMonitor(tl *timeline, s *server.Server, segLen int64) *monitor {
	m := &monitor{tl: tl, segLen: segLen, stop: make(chan struct{})}
	m.srv.Store(s)
	m.wg.Add(2)
	go m.sample()
	go m.poll()
	return m
}

// setServer points the poller at the restarted server (nil: none).
func (m *monitor) setServer(s *server.Server) { m.srv.Store(s) }

// finish stops the goroutines and adds the GC pauses since since.
func (m *monitor) finish(since time.Time) {
	close(m.stop)
	m.wg.Wait()
	st := debug.GCStats{Pause: make([]time.Duration, 256), PauseEnd: make([]time.Time, 256)}
	debug.ReadGCStats(&st)
	for i := range st.Pause {
		if i >= len(st.PauseEnd) || st.PauseEnd[i].Before(since) {
			break
		}
		end := st.PauseEnd[i]
		m.tl.add(span{kind: CauseGCPause, from: end.Add(-st.Pause[i]), to: end, d: st.Pause[i],
			what: fmt.Sprintf("GC stop-the-world pauses of %.2f ms (cycle ended at %s)", ms(st.Pause[i]), end.Format("15:04:05.000"))})
	}
}

// gcCounts reads the GC cycles completed and the GC stop-the-world
// pauses so far; ok false when the runtime lacks the metrics.
func gcCounts(ss []metrics.Sample) (cycles, pauses uint64, ok bool) {
	metrics.Read(ss)
	if ss[0].Value.Kind() != metrics.KindUint64 || ss[1].Value.Kind() != metrics.KindFloat64Histogram {
		return 0, 0, false
	}
	for _, c := range ss[1].Value.Float64Histogram().Counts {
		pauses += c
	}
	return ss[0].Value.Uint64(), pauses, true
}

// sample is the hiccup meter and the GC phase watcher.
func (m *monitor) sample() {
	defer m.wg.Done()
	ss := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/sched/pauses/total/gc:seconds"}}
	prev := time.Now()
	var markFrom time.Time // the tick before a cycle was first seen marking
	t := time.NewTimer(sampleEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		due := prev.Add(sampleEvery)
		if late := now.Sub(due); late >= lateBy {
			m.tl.add(span{kind: CauseSched, from: due, to: now, d: late,
				what: fmt.Sprintf("the process got no processor: a %v timer woke %.1f ms late: machine load or a stop-the-world", sampleEvery, ms(late))})
		}
		// Each cycle stops the world twice, at its start and at the end
		// of marking: one pause more than two per cycle is a cycle
		// marking now.
		if cycles, pauses, ok := gcCounts(ss); ok {
			marking := pauses == 2*cycles+1
			switch {
			case marking && markFrom.IsZero():
				markFrom = prev
			case !marking && !markFrom.IsZero():
				m.tl.add(span{kind: CauseGCMark, from: markFrom, to: now, d: now.Sub(markFrom),
					what: fmt.Sprintf("a GC cycle was marking (at most %.0f ms, to a %v tick; its assists and workers take processor time from every goroutine)", ms(now.Sub(markFrom)), sampleEvery)})
				markFrom = time.Time{}
			}
		}
		prev = now
		t.Reset(sampleEvery)
	}
}

// poll reads the node's maxima and log position on its duty cycle.
func (m *monitor) poll() {
	defer m.wg.Done()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	lastSeg := int64(-1)
	lastAt := time.Now()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		s := m.srv.Load()
		if s == nil {
			continue
		}
		var st cluster.Stats
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.Inspect(ctx, func(n *cluster.Node, _ *enginesvc.Service) { st = n.Stats(); n.ResetMaxima() })
		cancel()
		now := time.Now()
		if err != nil {
			continue
		}
		if st.MaxLogRecord >= minSpan {
			m.tl.add(span{kind: CauseLogRecord, from: st.MaxLogRecordAt, to: st.MaxLogRecordAt.Add(st.MaxLogRecord), d: st.MaxLogRecord,
				what: fmt.Sprintf("the node's log recording (archive write and file sync) took %.1f ms", ms(st.MaxLogRecord))})
		}
		if st.MaxDoWork >= minSpan {
			sp := st.MaxDoWorkSplit
			m.tl.add(span{kind: CauseDoWork, from: st.MaxDoWorkAt, to: st.MaxDoWorkAt.Add(st.MaxDoWork), d: st.MaxDoWork,
				what: fmt.Sprintf("one duty cycle of the node took %.1f ms (sequencing %.1f, service and egress %.1f, log recording %.1f, snapshot completion %.1f, mark file %.1f ms)",
					ms(st.MaxDoWork), ms(sp.Sequence), ms(sp.Service), ms(sp.Record), ms(sp.Snapshot), ms(sp.MarkFile))})
		}
		if seg := st.DurableLog / m.segLen; m.segLen > 0 && seg != lastSeg {
			if lastSeg >= 0 {
				m.tl.add(span{kind: CauseSegment, from: lastAt, to: now, d: now.Sub(lastAt),
					what: fmt.Sprintf("the log recording began segment file %d (durable position %d), between two polls %.0f ms apart", seg, st.DurableLog, ms(now.Sub(lastAt)))})
			}
			lastSeg = seg
		}
		lastAt = now
	}
}

// stallOf is the worst probe w of window as a Stall with its causes.
func stallOf(window string, w probe.Worst, start time.Time, tl *timeline) Stall {
	from := start.Add(w.Offset)
	return Stall{Window: window, AtS: w.Offset.Seconds(), LatencyMs: ms(w.Latency), Lost: w.Lost,
		Causes: tl.causes(from, from.Add(w.Latency), start)}
}
