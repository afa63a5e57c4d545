// Package measure holds the small statistics every report of ours uses:
// the machine's load average and medians and quantiles of repeated
// measurements. Reports print the load average with every figure, because
// this project's machines are shared and a figure taken while the load
// exceeds the core count is an upper bound, not a measurement.
package measure

import (
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// LoadAvg reads the 1, 5 and 15-minute load averages from /proc/loadavg
// (zeros where it is not available).
func LoadAvg() [3]float64 {
	var la [3]float64
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return la
	}
	f := strings.Fields(string(b))
	for i := 0; i < 3 && i < len(f); i++ {
		la[i], _ = strconv.ParseFloat(f[i], 64)
	}
	return la
}

// Median returns the median of xs (0 for none). It sorts a copy.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Quantile returns the q-th quantile (0 < q <= 1) of xs by the
// nearest-rank rule (0 for none). It sorts a copy.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}
