package demo

import (
	"runtime"
	"testing"
	"time"
)

// TestCausesOverlapAndOrder: only spans overlapping the wait count, one
// Cause per kind with the longest, its count and total, the longest kind
// first, and a duty cycle below the log recording it holds.
func TestCausesOverlapAndOrder(t *testing.T) {
	t0 := time.Now()
	at := func(msec int) time.Time { return t0.Add(time.Duration(msec) * time.Millisecond) }
	tl := &timeline{}
	add := func(kind string, from, to int, what string) {
		tl.add(span{kind: kind, from: at(from), to: at(to), d: at(to).Sub(at(from)), what: what})
	}
	add(CauseLogRecord, 90, 99, "before the wait")  // ends before it
	add(CauseGCMark, 300, 320, "after the wait")    // starts after it
	add(CauseSched, 100, 103, "late 3")             // inside
	add(CauseSched, 150, 160, "late 10")            // inside, the longest late wake
	add(CauseDoWork, 105, 245, "duty cycle 140")    // holds the log recording
	add(CauseLogRecord, 105, 240, "log record 135") // inside
	add(CauseSegment, 95, 101, "segment roll")      // overlaps the start
	add(CauseGCPause, 199, 200, "gc pause")         // inside
	cs := tl.causes(at(100), at(250), t0)
	kinds := make([]string, len(cs))
	for i, c := range cs {
		kinds[i] = c.Kind
	}
	want := []string{CauseLogRecord, CauseDoWork, CauseSched, CauseSegment, CauseGCPause}
	if len(kinds) != len(want) {
		t.Fatalf("causes %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("causes %v, want %v", kinds, want)
		}
	}
	if c := cs[0]; c.What != "log record 135" || c.Ms != 135 || c.Count != 1 || c.AtS != 0.105 {
		t.Errorf("log recording %+v", c)
	}
	if c := cs[2]; c.Count != 2 || c.Ms != 10 || c.TotalMs != 13 || c.AtS != 0.15 {
		t.Errorf("late wakes %+v: want the 10 ms one of 2, 13 ms in all", c)
	}
	if cs := tl.causes(at(400), at(500), t0); len(cs) != 0 {
		t.Errorf("causes of a quiet wait: %+v", cs)
	}
}

// TestMonitorSeesGC: a collection while the monitor runs puts its
// stop-the-world pause on the timeline, at the time it happened.
func TestMonitorSeesGC(t *testing.T) {
	tl := &timeline{}
	start := time.Now()
	m := startMonitor(tl, nil, 0)
	time.Sleep(3 * sampleEvery)
	before := time.Now()
	runtime.GC()
	after := time.Now()
	time.Sleep(3 * sampleEvery)
	m.finish(start)
	cs := tl.causes(before, after, start)
	var gc *Cause
	for i := range cs {
		if cs[i].Kind == CauseGCPause {
			gc = &cs[i]
		}
	}
	if gc == nil {
		t.Fatalf("no GC pause between %v and %v: %+v", before.Sub(start), after.Sub(start), cs)
	}
	if gc.Ms <= 0 || gc.AtS < before.Sub(start).Seconds()-0.001 || gc.AtS > after.Sub(start).Seconds() {
		t.Fatalf("GC pause %+v outside [%v, %v]", gc, before.Sub(start), after.Sub(start))
	}
}
