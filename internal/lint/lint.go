// Package lint holds no code: its tests enforce the import table of
// DESIGN.md §2 on the repository, so a forbidden import fails the tests
// rather than a review.
//
// Every package of the module has a row (a package without one fails):
// the packages of ours its non-test files may import directly, standard
// packages it must not use (the engine: no I/O, clock or goroutines), and
// packages it must not link through any chain of imports — cluster does not
// link the engine, client links neither cluster, archive nor server. The
// tests read the packages as the build does on this platform (go/build,
// build constraints applied), which is what `go list -deps` reports.
package lint
