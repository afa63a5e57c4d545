//go:build race

package logbuf

const raceEnabled = true
