package measure

import (
	"runtime"
	"testing"
	"time"
)

func TestMedianQuantile(t *testing.T) {
	for _, c := range []struct {
		xs        []float64
		med, q99  float64
		q50, q100 float64
	}{
		{nil, 0, 0, 0, 0},
		{[]float64{3}, 3, 3, 3, 3},
		{[]float64{4, 1, 3, 2}, 2.5, 4, 2, 4},
		{[]float64{5, 1, 4, 2, 3}, 3, 5, 3, 5},
	} {
		if got := Median(c.xs); got != c.med {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.med)
		}
		if got := Quantile(c.xs, 0.99); got != c.q99 {
			t.Errorf("Quantile(%v, 0.99) = %v, want %v", c.xs, got, c.q99)
		}
		if got := Quantile(c.xs, 0.5); got != c.q50 {
			t.Errorf("Quantile(%v, 0.5) = %v, want %v", c.xs, got, c.q50)
		}
		if got := Quantile(c.xs, 1); got != c.q100 {
			t.Errorf("Quantile(%v, 1) = %v, want %v", c.xs, got, c.q100)
		}
	}
	xs := []float64{3, 1, 2}
	Median(xs)
	if xs[0] != 3 {
		t.Fatal("Median sorted its argument")
	}
}

func TestLoadAvg(t *testing.T) {
	la := LoadAvg()
	for _, v := range la {
		if v < 0 {
			t.Fatalf("load average %v", la)
		}
	}
}

// TestProcessCPU: the process CPU clock advances over a busy loop, and by
// no more than its wall time on every processor (a bound, not a timing:
// the loop may be descheduled for any part of it).
func TestProcessCPU(t *testing.T) {
	c0, ok := ProcessCPU()
	if !ok {
		t.Skip("no process CPU clock on this platform")
	}
	w0 := time.Now()
	x := uint64(1)
	for time.Since(w0) < 50*time.Millisecond {
		for range 1000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	c1, _ := ProcessCPU()
	wall := time.Since(w0)
	cpu := c1 - c0
	if cpu <= 0 || cpu > wall*time.Duration(runtime.NumCPU()) {
		t.Fatalf("CPU %v over a wall time of %v of a busy loop (%d)", cpu, wall, x)
	}
}
