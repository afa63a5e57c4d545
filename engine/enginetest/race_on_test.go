//go:build race

package enginetest

// raceEnabled scales the long differential runs down under the race
// detector, which makes them several times slower and finds nothing in a
// single-goroutine engine.
const raceEnabled = true
