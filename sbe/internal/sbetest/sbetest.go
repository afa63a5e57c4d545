// Package sbetest holds helpers shared by the tests of the generated codec
// packages.
package sbetest

import (
	"encoding/hex"
	"strings"
	"testing"
)

// Unhex joins hand-written hex lines (one field a line, spaces ignored)
// into bytes, failing the test on a malformed line.
func Unhex(t testing.TB, lines ...string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(strings.Join(lines, ""), " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
