package probe

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestScheduleNoDrift runs 2,000 probes at 20k/s and checks the intended
// times handed to send: every probe exactly once, in order, at exactly
// Start + i/Rate (no accumulated drift), and never sent before its intended
// time.
func TestScheduleNoDrift(t *testing.T) {
	const n = 2000
	s := Schedule{Rate: 20000, Start: time.Now().Add(5 * time.Millisecond)}
	intended := make([]time.Time, 0, n)
	idx := make([]int, 0, n)
	early := 0
	sent, err := s.Run(context.Background(), n, func(i int, at time.Time) error {
		if time.Now().Before(at) {
			early++
		}
		idx = append(idx, i)
		intended = append(intended, at)
		return nil
	})
	if err != nil || sent != n {
		t.Fatalf("Run = %d, %v; want %d, nil", sent, err, n)
	}
	if early != 0 {
		t.Errorf("%d probes were sent before their intended time", early)
	}
	const interval = 50 * time.Microsecond // 1/20000 s
	for k, i := range idx {
		if i != k {
			t.Fatalf("probe #%d has index %d; want %d (skipped or reordered)", k, i, k)
		}
		if got, want := intended[k].Sub(s.Start), time.Duration(k)*interval; got != want {
			t.Fatalf("probe %d intended offset %v; want %v", k, got, want)
		}
	}
	if got, want := intended[n-1].Sub(intended[0]), (n-1)*interval; got != want {
		t.Errorf("span of intended times = %v; want %v", got, want)
	}
}

// TestScheduleNoDriftLargeIndex checks that offsets are computed from the
// index, not accumulated: at a rate whose interval is not a whole number of
// nanoseconds, the offset after many probes is still exact to the nanosecond.
func TestScheduleNoDriftLargeIndex(t *testing.T) {
	s := Schedule{Rate: 3, Start: time.Unix(100, 0)} // 333,333,333.33 ns interval
	for _, i := range []int{1, 3, 300, 3_000_000, 299_999_999} {
		want := time.Duration((int64(i)*1_000_000_000 + 1) / 3) // round(i/3 s) in ns
		if got := s.Offset(i); got != want {
			t.Errorf("Offset(%d) = %d; want %d", i, got, want)
		}
	}
	if got := s.Count(time.Second); got != 3 {
		t.Errorf("Count(1s) at 3/s = %d; want 3", got)
	}
	if got := s.Count(time.Second + 1); got != 4 {
		t.Errorf("Count(1s+1ns) at 3/s = %d; want 4", got)
	}
	if got := (Schedule{Rate: 20000}).Count(100 * time.Millisecond); got != 2000 {
		t.Errorf("Count(100ms) at 20k/s = %d; want 2000", got)
	}
}

func TestScheduleValidate(t *testing.T) {
	send := func(int, time.Time) error { return nil }
	for _, s := range []Schedule{{Rate: 0, Start: time.Now()}, {Rate: -1, Start: time.Now()}, {Rate: 10}} {
		if _, err := s.Run(context.Background(), 1, send); err == nil {
			t.Errorf("Run(%+v) succeeded; want error", s)
		}
	}
}

func TestRunStopsOnErrorAndContext(t *testing.T) {
	s := Schedule{Rate: 1e6, Start: time.Now()}
	boom := errors.New("boom")
	sent, err := s.Run(context.Background(), 100, func(i int, _ time.Time) error {
		if i == 10 {
			return boom
		}
		return nil
	})
	if sent != 10 || !errors.Is(err, boom) {
		t.Errorf("Run = %d, %v; want 10, boom", sent, err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	s = Schedule{Rate: 1000, Start: time.Now()}
	sent, err = s.Run(ctx, 1_000_000, func(i int, _ time.Time) error {
		if i == 5 {
			cancel()
		}
		return nil
	})
	if sent != 6 || !errors.Is(err, context.Canceled) {
		t.Errorf("Run after cancel = %d, %v; want 6, context.Canceled", sent, err)
	}
}

func TestRunFor(t *testing.T) {
	s := Schedule{Rate: 1000, Start: time.Now()}
	var idx []int
	sent, err := s.RunFor(context.Background(), 10*time.Millisecond, func(i int, at time.Time) error {
		idx = append(idx, i)
		return nil
	})
	if err != nil || sent != 10 || len(idx) != 10 || idx[9] != 9 {
		t.Errorf("RunFor(10ms) at 1000/s = %d, %v, indices %v; want 10 probes 0..9", sent, err, idx)
	}
}

// TestCoordinatedOmission blocks one send for 50 ms. Probes scheduled during
// the stall must be sent late (not skipped) and their latency must include
// the wait: it is measured from the recorded intended time, so for each
// probe j sent after the stall, latency >= stallEnd - intended(j).
func TestCoordinatedOmission(t *testing.T) {
	const (
		n     = 200
		stall = 50 * time.Millisecond
		at    = 20
	)
	s := Schedule{Rate: 1000, Start: time.Now().Add(2 * time.Millisecond)}
	rec := NewRecorder(s, n)
	type req struct{ i int }
	reqs := make(chan req, n)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the "server": completes probes on another goroutine
		defer wg.Done()
		for r := range reqs {
			rec.Done(r.i, time.Now())
		}
	}()
	var stallEnd time.Time
	got := make([]time.Time, n)
	sent, err := s.Run(context.Background(), n, func(i int, intended time.Time) error {
		got[i] = intended
		if i == at {
			time.Sleep(stall)
			stallEnd = time.Now()
		}
		reqs <- req{i}
		return nil
	})
	close(reqs)
	wg.Wait()
	if err != nil || sent != n {
		t.Fatalf("Run = %d, %v", sent, err)
	}
	sum := rec.Finish(time.Now(), sent)
	if sum.Completed != n || sum.Lost != 0 {
		t.Fatalf("summary %+v; want %d completed, 0 lost", sum, n)
	}
	lat := make([]time.Duration, n)
	rec.Each(func(i int, off, l time.Duration, lost bool) {
		if off != got[i].Sub(s.Start) {
			t.Errorf("probe %d offset %v; send saw %v", i, off, got[i].Sub(s.Start))
		}
		lat[i] = l
	})
	if lat[at] < stall {
		t.Errorf("stalled probe latency %v; want >= %v", lat[at], stall)
	}
	behind := 0
	for j := at + 1; j < n; j++ {
		wait := stallEnd.Sub(got[j])
		if wait <= 0 {
			break
		}
		behind++
		if lat[j] < wait {
			t.Errorf("probe %d latency %v does not include its wait %v", j, lat[j], wait)
		}
	}
	// At least the probes intended during the 50 ms stall were behind.
	if behind < int(stall/time.Millisecond)-1 {
		t.Errorf("only %d probes were scheduled during the stall", behind)
	}
	// The correction shows up in the distribution: > 10% of 200 probes are
	// >= 10 ms (an uncorrected measurement would have about one).
	if q := rec.Quantile(0.85); q < 10*time.Millisecond {
		t.Errorf("p85 = %v; want >= 10ms with coordinated-omission correction", q)
	}
}

// synthetic fills a recorder with probes at 1000/s (intended offset i ms) and
// latency lat(i), all completed.
func synthetic(t *testing.T, n int, lat func(i int) time.Duration) (*Recorder, Schedule) {
	t.Helper()
	s := Schedule{Rate: 1000, Start: time.Unix(1000, 0)}
	r := NewRecorder(s, n)
	for i := 0; i < n; i++ {
		if !r.Done(i, s.Intended(i).Add(lat(i))) {
			t.Fatalf("Done(%d) rejected", i)
		}
	}
	return r, s
}

func within(got, want time.Duration) bool {
	d := got - want
	if d < 0 {
		d = -d
	}
	return d <= want/500+time.Microsecond // 3 significant digits
}

func TestWindowMaxAndQuantileOutside(t *testing.T) {
	// Base latency 100µs+i%10 µs; a 300 ms "pause" ramp for probes 500..519
	// (intended 500..519 ms) and a 40 ms spike at probe 800.
	lat := func(i int) time.Duration {
		switch {
		case i >= 500 && i < 520:
			return time.Duration(300-(i-500)) * time.Millisecond
		case i == 800:
			return 40 * time.Millisecond
		}
		return 100*time.Microsecond + time.Duration(i%10)*time.Microsecond
	}
	r, s := synthetic(t, 1000, lat)
	ms := func(k int) time.Time { return s.Start.Add(time.Duration(k) * time.Millisecond) }

	if got := r.WindowMax(ms(490), ms(530)); got != 300*time.Millisecond {
		t.Errorf("WindowMax(pause) = %v; want 300ms", got)
	}
	// Inclusive bounds: a window exactly [501ms, 501ms] holds probe 501 only.
	if got := r.WindowMax(ms(501), ms(501)); got != 299*time.Millisecond {
		t.Errorf("WindowMax([501,501]) = %v; want 299ms", got)
	}
	if got := r.WindowMax(ms(100), ms(200)); got != 109*time.Microsecond {
		t.Errorf("WindowMax(quiet) = %v; want 109µs", got)
	}
	if got := r.WindowMax(ms(2000), ms(3000)); got != 0 {
		t.Errorf("WindowMax(after end) = %v; want 0", got)
	}
	if got := r.WindowMax(ms(600), ms(500)); got != 0 {
		t.Errorf("WindowMax(reversed) = %v; want 0", got)
	}

	// Expected values computed directly from the synthetic data.
	win := [][2]time.Time{{ms(495), ms(525)}, {ms(-100), ms(-1)}}
	var outside []time.Duration
	var maxOut time.Duration
	for i := 0; i < 1000; i++ {
		if i >= 495 && i <= 525 {
			continue
		}
		outside = append(outside, lat(i))
		maxOut = max(maxOut, lat(i))
	}
	if got := r.QuantileOutside(win, 1); !within(got, maxOut) || maxOut != 40*time.Millisecond {
		t.Errorf("QuantileOutside max = %v; want %v (40ms)", got, maxOut)
	}
	slices.Sort(outside)
	lo, hi := outside[(len(outside)-1)/2], outside[len(outside)/2]
	if got := r.QuantileOutside(win, 0.5); !within(got, lo) && !within(got, hi) {
		t.Errorf("QuantileOutside p50 = %v; want the median of the probes outside, %v..%v", got, lo, hi)
	}
	// Excluding the spike too leaves only base latencies.
	win2 := append(win, [2]time.Time{ms(800), ms(800)})
	if got := r.QuantileOutside(win2, 1); !within(got, 109*time.Microsecond) {
		t.Errorf("QuantileOutside max without spike = %v; want 109µs", got)
	}
	// Without windows the pause dominates the max.
	if got := r.QuantileOutside(nil, 1); !within(got, 300*time.Millisecond) {
		t.Errorf("QuantileOutside(nil) max = %v; want 300ms", got)
	}
	// Overlapping, unsorted windows.
	win3 := [][2]time.Time{{ms(510), ms(600)}, {ms(400), ms(515)}}
	if got := r.QuantileOutside(win3, 1); !within(got, 40*time.Millisecond) {
		t.Errorf("QuantileOutside(overlapping) max = %v; want 40ms", got)
	}
	if got := r.QuantileOutside([][2]time.Time{{ms(-10), ms(2000)}}, 0.5); got != 0 {
		t.Errorf("QuantileOutside(all excluded) = %v; want 0", got)
	}
}

// TestWorst: the worst probe in a window and outside all windows, with
// its index and intended offset, exact (not histogram-rounded).
func TestWorst(t *testing.T) {
	lat := func(i int) time.Duration {
		switch {
		case i >= 500 && i < 520:
			return time.Duration(300-(i-500)) * time.Millisecond
		case i == 800:
			return 40*time.Millisecond + 7*time.Microsecond
		case i == 900:
			return 40 * time.Millisecond // below the spike at 800
		}
		return 100*time.Microsecond + time.Duration(i%10)*time.Microsecond
	}
	r, s := synthetic(t, 1000, lat)
	ms := func(k int) time.Time { return s.Start.Add(time.Duration(k) * time.Millisecond) }
	w, ok := r.WindowWorst(ms(490), ms(530))
	if !ok || w.Index != 500 || w.Latency != 300*time.Millisecond || w.Offset != s.Offset(500) {
		t.Errorf("WindowWorst(pause) = %+v, %v; want probe 500 at 300ms", w, ok)
	}
	if w, ok := r.WindowWorst(ms(2000), ms(3000)); ok {
		t.Errorf("WindowWorst(after end) = %+v; want none", w)
	}
	// Outside the pause's window the spike is the worst: the one a
	// window around the pause would hide from a report of windows only.
	w, ok = r.WorstOutside([][2]time.Time{{ms(495), ms(525)}})
	if !ok || w.Index != 800 || w.Latency != 40*time.Millisecond+7*time.Microsecond || w.Offset != s.Offset(800) {
		t.Errorf("WorstOutside = %+v, %v; want probe 800 at 40.007ms", w, ok)
	}
	// Overlapping, unsorted windows that cover the pause and the spike.
	w, ok = r.WorstOutside([][2]time.Time{{ms(790), ms(810)}, {ms(510), ms(600)}, {ms(400), ms(515)}})
	if !ok || w.Index != 900 {
		t.Errorf("WorstOutside(pause and spike excluded) = %+v, %v; want probe 900", w, ok)
	}
	if w, ok := r.WorstOutside([][2]time.Time{{ms(-10), ms(2000)}}); ok {
		t.Errorf("WorstOutside(all excluded) = %+v; want none", w)
	}
}

func TestMarks(t *testing.T) {
	r := NewRecorder(Schedule{Rate: 1, Start: time.Unix(0, 0)}, 0)
	r.Mark("snapshot-start", time.Unix(1, 0))
	r.Mark("snapshot-end", time.Unix(2, 0))
	m := r.Marks()
	if len(m) != 2 || m[0].Name != "snapshot-start" || !m[1].At.Equal(time.Unix(2, 0)) {
		t.Errorf("Marks() = %+v", m)
	}
	m[0].Name = "changed"
	if r.Marks()[0].Name != "snapshot-start" {
		t.Error("Marks returned an alias of internal state")
	}
}

// TestLostAndDuplicates: probes never completed are lost, recorded with
// latency up to Finish and flagged; duplicates and late completions are
// ignored.
func TestLostAndDuplicates(t *testing.T) {
	s := Schedule{Rate: 1000, Start: time.Unix(1000, 0)}
	r := NewRecorder(s, 10)
	for i := 0; i < 10; i++ {
		if i == 3 || i == 7 {
			continue
		}
		r.Done(i, s.Intended(i).Add(time.Millisecond))
	}
	if r.Done(2, s.Intended(2).Add(time.Second)) {
		t.Error("duplicate completion accepted")
	}
	if r.Done(-1, s.Start) {
		t.Error("negative index accepted")
	}
	// Beyond the series capacity: histogram only.
	if !r.Done(12, s.Intended(12).Add(2*time.Millisecond)) {
		t.Error("completion beyond capacity rejected")
	}
	end := s.Start.Add(time.Second)
	sum := r.Finish(end, 14) // probes 10, 11, 13 lost beyond capacity
	if sum.Lost != 5 || sum.LostUnmeasured != 3 || sum.Completed != 9 || sum.Ignored != 2 || sum.SeriesDropped != 1 {
		t.Errorf("summary %+v", sum)
	}
	if sum.Count != 11 { // 9 completed + 2 measured lost
		t.Errorf("histogram count %d; want 11", sum.Count)
	}
	if r.Done(3, end) {
		t.Error("completion after Finish accepted")
	}
	lost := map[int]time.Duration{}
	r.Each(func(i int, _, l time.Duration, isLost bool) {
		if isLost {
			lost[i] = l
		}
	})
	if len(lost) != 2 || lost[3] != end.Sub(s.Intended(3)) || lost[7] != end.Sub(s.Intended(7)) {
		t.Errorf("lost probes %v; want 3 and 7 with latency until finish", lost)
	}
	if got := r.WindowMax(s.Intended(0), s.Intended(9)); got != end.Sub(s.Intended(3)) {
		t.Errorf("WindowMax with lost = %v; want %v", got, end.Sub(s.Intended(3)))
	}
	sum.Ignored++ // the late Done above
	if again := r.Finish(end.Add(time.Hour), 20); again != sum {
		t.Errorf("second Finish changed summary: %+v", again)
	}
}

func TestClampAndNegative(t *testing.T) {
	s := Schedule{Rate: 1000, Start: time.Unix(1000, 0)}
	r := NewRecorder(s, 2)
	r.Done(0, s.Intended(0).Add(2*time.Minute))
	r.Done(1, s.Intended(1).Add(-time.Second))
	sum := r.Summary()
	if sum.Clamped != 1 || sum.Count != 2 {
		t.Errorf("summary %+v", sum)
	}
	if !within(sum.Max, HistMax) {
		t.Errorf("max %v; want clamped to %v", sum.Max, HistMax)
	}
	if got := r.WindowMax(s.Intended(1), s.Intended(1)); got != 0 {
		t.Errorf("negative latency stored as %v; want 0", got)
	}
}

// TestDoneNoAlloc checks the record path does not allocate.
func TestDoneNoAlloc(t *testing.T) {
	s := Schedule{Rate: 1e5, Start: time.Now()}
	r := NewRecorder(s, 1000)
	i := 0
	now := time.Now()
	allocs := testing.AllocsPerRun(2000, func() {
		r.Done(i, now) // beyond capacity after 1000: histogram path
		i++
	})
	if allocs != 0 {
		t.Errorf("Done allocates %v times per call", allocs)
	}
}

// TestConcurrentDone exercises Done from several goroutines (run with -race).
func TestConcurrentDone(t *testing.T) {
	s := Schedule{Rate: 1e6, Start: time.Now()}
	const n = 40000
	r := NewRecorder(s, n)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := g; i < n; i += 4 {
				r.Done(i, time.Now())
				if i%1000 == 0 {
					r.Mark("m", time.Now())
					_ = r.Summary()
				}
			}
		}(g)
	}
	wg.Wait()
	if sum := r.Finish(time.Now(), n); sum.Completed != n || sum.Lost != 0 {
		t.Errorf("summary %+v", sum)
	}
}
