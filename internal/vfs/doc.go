// Package vfs is the file-system interface every file access of the archive
// and the cluster node goes through.
//
// Three implementations exist:
//
//   - [Default], the operating system: [File.Sync] is fdatasync,
//     [File.SyncAll] is fsync, [File.Preallocate] is fallocate (mode 0) on
//     Linux, through golang.org/x/sys/unix, with a fallback that extends the
//     file with ftruncate where fallocate is not supported.
//   - [NewMem], in memory, with the crash model below: [MemFS.CrashClone]
//     returns the file system a restart after a crash could find.
//   - [NewInjector], which wraps another FS, counts its operations by kind
//     ([Op]) and fails the i-th operation of chosen kinds with [ErrInjected],
//     so that tests can sweep every failure point.
//
// All three are safe for concurrent use, within the limits [File] states.
//
// # Paths
//
// Paths are slash-separated. [Default] passes them to the operating system
// unchanged. [MemFS] cleans them and resolves them below a root of its own,
// so "a/b", "/a/b" and "/x/../a/b" name the same file and "" or "/" names
// the root.
//
// # Errors
//
// Error strings start with "vfs: ". A missing file is reported by an error
// satisfying errors.Is(err, [ErrNotExist]) that names the operation and the
// path, as in "vfs: open /x: file does not exist"; Create of an existing name
// satisfies errors.Is(err, [ErrExist]). File.ReadAt returns io.EOF,
// unwrapped, when it reads past the end. Operations on a closed File satisfy
// errors.Is(err, os.ErrClosed).
//
// # Durability contract
//
// Code written against FS may rely on exactly this much after a crash:
//
//   - The bytes and the length of a file, as they were when [File.Sync] or
//     [File.SyncAll] last returned nil, survive (provided the file can still
//     be reached, see next point). Sync is fdatasync, which also makes a
//     changed length durable; SyncAll adds the remaining metadata.
//   - A directory entry created by Create or MkdirAll, moved by Rename, or
//     deleted by Remove is durable only once [FS.SyncDir] of the directory
//     holding it has returned nil. A rename between two directories needs both
//     synced. A directory made by MkdirAll needs its parent synced, at every
//     level MkdirAll created. The root always exists.
//   - Everything else may or may not survive, in the combinations the memory
//     FS's model allows.
//
// # Crash model of the memory FS
//
// A [MemFS] keeps, for every file:
//
//   - its current bytes;
//   - its bytes as of its last Sync or SyncAll (the synced bytes; an empty
//     file before the first sync);
//   - the changes made since then (WriteAt, Truncate, Preallocate), oldest
//     first.
//
// and for every directory:
//
//   - its current entries;
//   - its entries as of its last SyncDir (the durable entries; none before
//     the first);
//   - the entry changes made since then (create, mkdir, remove, rename; a
//     rename inside one directory is one change), oldest first.
//
// [MemFS.CrashClone] builds a new MemFS from these, with p the configured
// UnsyncedDataPercent clamped to [0, 100]:
//
//  1. Directories, starting at the root: begin with the durable entries,
//     then replay the unsynced entry changes in order, keeping each with
//     probability p/100 and stopping at the first one not kept. A directory
//     therefore comes back as it was at some point since its last SyncDir
//     (the journal commits entry changes in order), and a rename inside one
//     directory is atomic. A rename between two directories is two changes,
//     one per directory, so without both SyncDirs the file may come back
//     under both names (as one file, like a hard link) or under neither.
//  2. Files reached from the root in step 1 (including files removed or
//     replaced since the directory's last SyncDir, if the entry naming them
//     comes back): begin with the synced bytes, then replay each unsynced
//     change in order, keeping each one independently with probability
//     p/100 (writeback has no order). Finally cut the file, or extend it
//     with zeros, to a length drawn uniformly from [min(s, c), max(s, c)],
//     where s is the synced length and c the current length. So unsynced
//     bytes may be lost or kept in any mix, a kept write may be cut short,
//     and an extension whose data was lost reads as zeros.
//  3. At p = 0 nothing unsynced is kept and files have their synced length:
//     the clone is exactly the durable state. At p = 100 everything is kept
//     and files have their current length: the clone equals the current
//     state.
//
// Everything in the clone counts as synced. Handles open on the original do
// not carry over, and the original is left unchanged. The random choices are
// drawn from [CrashCloneConfig.Rand] in a fixed order (depth-first, names in
// sorted order), so a seed reproduces a crash.
//
// Unsynced writes are kept or lost whole, never partly, except for the cut
// at the end of the file; [MemFS.CutFile] tears a file at an exact byte for
// tests that need a particular torn tail.
package vfs
