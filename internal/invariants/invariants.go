// Package invariants switches expensive internal checks on and off at build
// time. Build or test with -tags invariants to turn them on; in normal builds
// [Enabled] is a false constant and the checks compile to nothing.
package invariants
