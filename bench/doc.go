// Package bench holds matchlog's engine workloads and the measurements
// built on them: benchmark functions for `go test -bench` (wrapped in
// bench_test.go) and [EngineReport], behind `matchlog bench engine`.
// Tests and cmd import it; nothing else should.
//
// # Workloads
//
// Every book is built from an empty engine through new-order commands in
// random arrival order (seeded), never by restoring a snapshot: a restored
// book is laid out in walk order and measures faster than a book that
// grew from live traffic (DESIGN.md §7).
//
//   - [BookSpec] / [BuildBook]: passive books, orders spread at random over
//     a number of levels a side, or exactly PerLevel orders a level.
//   - [MixedSpec] / [NewMixed]: exchange-core's published mix, generated
//     up front into a slice of commands (82% move, 9% GTC, 3% IOC, 6%
//     cancel on a book held near 1,000 orders on about 750 levels). A
//     [Runner] replays it, rebuilding the engine when the stream runs out.
//   - [Sweep]: IOC takers that each fill exactly 1 or 10 makers, with the
//     eaten makers put back between batches.
//
// Workloads that apply a batch of commands over and over go through a
// [Driver], which stamps each command with the next sequence of the one
// ingress source (the engine ignores a sequence it has seen).
//
// # Measuring
//
// Timed loops hold the engine only: commands are built before the timer
// starts, rebuilds and refills happen with it stopped. Per-command latency
// is read with [Ticks] (the time-stamp counter on amd64, about 10 ns a read)
// and includes one read's overhead, reported beside it. The report runs
// each measurement several times and gives medians, alternates the two
// depth books round by round, and records the load average before and
// after: on a shared machine a figure taken with the load above the core
// count is an upper bound.
//
// Run the benchmarks with, for example,
//
//	cat /proc/loadavg; go test -run '^$' -bench . -count 3 -short ./bench; cat /proc/loadavg
//
// (-short skips the 5M-order sizes; without it the 5M books take several
// seconds each to build) and the report with
//
//	go run ./cmd/matchlog bench engine [--json] [--orders N] [--runs K]
package bench
