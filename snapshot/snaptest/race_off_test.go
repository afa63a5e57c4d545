//go:build !race

package snaptest

const raceEnabled = false
