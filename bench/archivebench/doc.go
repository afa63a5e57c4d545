// Package archivebench measures the archive's recorder against the disk:
// BenchReport (behind `matchlog bench archive`) and BenchmarkRecord record
// a stream of 8 KiB frames from an in-memory log into a new archive on the
// OS file system, at each block size (FileIoMaxLength) and sync level, and
// write the same bytes in the same blocks with the same syncs into a
// preallocated file as the raw baseline. Only the recorder's own time is
// counted; the runs alternate and the report gives medians with the load
// average, because a figure taken on a loaded machine is an upper bound.
//
// It is a harness, not part of the archive: it uses only the archive's
// public API, so what it measures is what a user of the package gets.
package archivebench
