//go:build !race

package logbuf

const raceEnabled = false
