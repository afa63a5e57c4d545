package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// RunStopped is how an offline tool changes a stopped node directory as a
// whole or not at all (`matchlog cluster snapshot`): it records the state
// of every file in the directory's ClusterDirName and ArchiveDirName,
// opens the node (Open: mark file, recovery, a new term), runs work on it,
// closes it, and runs check (nil: none) on the closed directory. When any
// step fails it puts the directory back as it found it — files created
// since are removed, changed files get their bytes and lengths back — and
// checks that it did; the error returned is the step's, joined with any
// failure to put a file back (naming the file). So a failed command leaves
// no half-added recording, TERM entry or log append behind.
//
// What is kept to put a file back: the bytes of every file up to
// rollbackWholeFile, and of larger files (the log's preallocated segments)
// which 1 MiB chunks hold only zeros: a node only writes into a large file
// past the end of what it holds. A chunk of a large file that held data and
// was changed anyway cannot be put back, and the error says so.
//
// Recording the state reads every file of the directory once (a cost in
// proportion to its size, paid before Open). It refuses (before writing
// anything) what Open refuses: a live node, a directory another program
// wrote.
func RunStopped(opts Options, work func(*Node) error, check func() error) error {
	opts.defaults()
	fsys := opts.FS
	subs := []string{fsys.Join(opts.Dir, ClusterDirName), fsys.Join(opts.Dir, ArchiveDirName)}
	before, err := captureDirs(fsys, subs)
	if err != nil {
		return fmt.Errorf("cluster: record the directory's state before changing it: %w", err)
	}
	runErr := func() error {
		n, err := Open(opts)
		if err != nil {
			return err
		}
		err = work(n)
		if cerr := n.Close(); err == nil {
			err = cerr
		}
		if err == nil && check != nil {
			err = check()
		}
		return err
	}()
	if runErr == nil {
		return nil
	}
	if rerr := before.restore(fsys); rerr != nil {
		return errors.Join(runErr, fmt.Errorf("%w: %w", ErrNotRestored, rerr))
	}
	return runErr
}

// ErrNotRestored is wrapped by a RunStopped error when the directory could
// not be put back as it was (the error names the files).
var ErrNotRestored = errors.New("cluster: the directory could not be put back as it was")

// rollbackWholeFile is the largest file RunStopped keeps whole.
const rollbackWholeFile = 8 << 20

// rollbackChunk is the unit in which RunStopped checks larger files.
const rollbackChunk = 1 << 20

// fileState is what RunStopped keeps of one file.
type fileState struct {
	size int64
	data []byte   // the whole file, when size <= rollbackWholeFile
	zero []bool   // per chunk of a larger file: only zeros
	sums []uint64 // per chunk of a larger file: FNV-1a of its bytes

	sizeOnly bool // only the length was kept (captureStart)
}

// dirState is the recorded state of the directories subs.
type dirState struct {
	dirs  []string
	files map[string]*fileState // path -> state
}

func captureDirs(fsys vfs.FS, subs []string) (*dirState, error) {
	return captureWith(fsys, subs, captureFile)
}

// startGuardWhole is the largest segment file a start keeps whole.
const startGuardWhole = 1 << 20

// captureStart records the state of the node directories subs for Open to
// put back when the start fails: every file but the segments whole (or by
// chunk sums), and segment files whole up to startGuardWhole bytes, larger
// ones by length only (a failed start that grew one is cut back; the
// bytes a crash repair cut from one are put back from what the archive
// handed over before cutting them, Node.restoreCuts; any other change
// inside a large segment cannot be undone, and restore says so). A
// segment the recorder prepared ahead of time (archive.PreparedSuffix: a
// whole segment's length of zeros, never a segment, removed by the
// archive's recovery) is kept like a segment: reading and summing it
// whole made every start after a crash past half a segment read one
// segment length more. So is a segment waiting to be unlinked
// (*.rec.deleted: a start only schedules its unlink): summing a 128 MiB
// snapshot segment a kill left pending cost a start 100 ms and more.
func captureStart(fsys vfs.FS, subs []string) (*dirState, error) {
	return captureWith(fsys, subs, func(fsys vfs.FS, p string) (*fileState, error) {
		if strings.HasSuffix(p, "/"+archive.CompactTempName) || strings.HasSuffix(p, "/"+recordinglog.CompactTempName) {
			return nil, nil // an interrupted compaction's leftover: the start removes it
		}
		if strings.HasSuffix(p, archive.SegmentSuffix) || strings.HasSuffix(p, archive.PreparedSuffix) ||
			strings.HasSuffix(p, archive.SegmentSuffix+archive.DeletedSuffix) {
			size, err := fsys.Stat(p)
			if err != nil {
				return nil, err
			}
			if size > startGuardWhole {
				return &fileState{size: size, sizeOnly: true}, nil
			}
		}
		return captureFile(fsys, p)
	})
}

// captureWith records every entry of the directories subs with capture (a
// nil state: not tracked); a missing directory has nothing to record.
func captureWith(fsys vfs.FS, subs []string, capture func(vfs.FS, string) (*fileState, error)) (*dirState, error) {
	s := &dirState{dirs: subs, files: map[string]*fileState{}}
	for _, d := range subs {
		names, err := fsys.List(d)
		if errors.Is(err, vfs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			p := fsys.Join(d, name)
			fs, err := capture(fsys, p)
			if err != nil {
				return nil, err
			}
			if fs != nil {
				s.files[p] = fs
			}
		}
	}
	return s, nil
}

// captureFile records a file; nil for a directory.
func captureFile(fsys vfs.FS, p string) (*fileState, error) {
	size, err := fsys.Stat(p)
	if err != nil {
		if _, lerr := fsys.List(p); lerr == nil {
			return nil, nil // a directory: not ours to track
		}
		return nil, err
	}
	st := &fileState{size: size}
	if size <= rollbackWholeFile {
		// Read straight into the copy kept: no chunk buffer to allocate
		// and copy from (a start captures every small file).
		st.data = make([]byte, size)
		err = readInto(fsys, p, st.data)
		return st, err
	}
	err = readChunks(fsys, p, size, func(off int64, b []byte) {
		st.zero = append(st.zero, allZeroBytes(b))
		st.sums = append(st.sums, sum64(b))
	})
	return st, err
}

// readInto fills b from the start of p.
func readInto(fsys vfs.FS, p string, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	if n, err := f.ReadAt(b, 0); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("read %s: %w", p, err)
	}
	return nil
}

// readChunks reads [0, size) of p in rollbackChunk pieces.
func readChunks(fsys vfs.FS, p string, size int64, fn func(off int64, b []byte)) error {
	f, err := fsys.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, min(rollbackChunk, size))
	for off := int64(0); off < size; off += rollbackChunk {
		b := buf[:min(int64(rollbackChunk), size-off)]
		if n, err := f.ReadAt(b, off); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("read %s at %d: %w", p, off, err)
		}
		fn(off, b)
	}
	return nil
}

// restore puts the directories back: removes the files created since,
// gives changed files their bytes and lengths back, and syncs; then it
// checks the result.
func (s *dirState) restore(fsys vfs.FS) error {
	var errs []error
	for _, d := range s.dirs {
		names, err := fsys.List(d)
		if err != nil {
			continue
		}
		for _, name := range names {
			p := fsys.Join(d, name)
			if _, ok := s.files[p]; ok {
				continue
			}
			if _, err := fsys.Stat(p); err != nil {
				continue // a directory
			}
			if err := fsys.Remove(p); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", p, err))
			}
		}
	}
	for p, st := range s.files {
		if err := st.restore(fsys, p); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range s.dirs {
		if _, err := fsys.List(d); err == nil {
			if err := fsys.SyncDir(d); err != nil {
				errs = append(errs, fmt.Errorf("sync %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (st *fileState) restore(fsys vfs.FS, p string) error {
	size, err := fsys.Stat(p)
	if err != nil {
		return fmt.Errorf("%s: %w (it was %d bytes)", p, err, st.size)
	}
	if st.sizeOnly {
		switch {
		case size == st.size:
			return nil
		case size < st.size:
			return fmt.Errorf("%s: cut from %d to %d bytes; the cut bytes were not kept", p, st.size, size)
		}
		return rewrite(fsys, p, func(f vfs.File) error { return f.Truncate(st.size) })
	}
	if st.data != nil || st.size == 0 {
		if size == st.size {
			same := true
			off := int64(0)
			if err := readChunks(fsys, p, size, func(_ int64, b []byte) {
				same = same && bytes.Equal(b, st.data[off:off+int64(len(b))])
				off += int64(len(b))
			}); err != nil {
				return err
			}
			if same {
				return nil
			}
		}
		return rewrite(fsys, p, func(f vfs.File) error {
			if err := f.Truncate(st.size); err != nil {
				return err
			}
			_, err := f.WriteAt(st.data, 0)
			return err
		})
	}
	// A large file: lengths back, zero chunks zeroed again, data chunks
	// checked.
	var bad []int64
	var zeroAt []int64
	i := 0
	if err := readChunks(fsys, p, min(size, st.size), func(off int64, b []byte) {
		if sum64(b) != st.sums[i] {
			if st.zero[i] {
				zeroAt = append(zeroAt, off)
			} else {
				bad = append(bad, off)
			}
		}
		i++
	}); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: data at offsets %v changed and was not kept", p, bad)
	}
	if size == st.size && len(zeroAt) == 0 {
		return nil
	}
	return rewrite(fsys, p, func(f vfs.File) error {
		if err := f.Truncate(st.size); err != nil {
			return err
		}
		z := make([]byte, rollbackChunk)
		for _, off := range zeroAt {
			if _, err := f.WriteAt(z[:min(int64(rollbackChunk), st.size-off)], off); err != nil {
				return err
			}
		}
		return nil
	})
}

// rewrite opens p for writing, runs fn and syncs.
func rewrite(fsys vfs.FS, p string, fn func(vfs.File) error) error {
	f, err := fsys.OpenRW(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	err = fn(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return nil
}

func allZeroBytes(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func sum64(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}
