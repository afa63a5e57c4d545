//go:build race

package snaptest

// raceEnabled scales the runs down under the race detector.
const raceEnabled = true
