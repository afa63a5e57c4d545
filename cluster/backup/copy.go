package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"slices"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/logbuf"
	"github.com/matchlog/matchlog/internal/vfs"
)

// drainEvery is how far the copy of a recording runs ahead of its recorder
// before it lets the recorder catch up.
const drainEvery = 1 << 20

// copyRecording records the frames [from, to) of recording d in srcDir (on
// srcFS, read through archive.RecordingReader) as a new recording of the
// archive in dstDir, through the archive's recorder: the frames, padding
// included, are laid into a log buffer at their term offsets, byte for
// byte, and the recorder writes them into the new recording's segment files
// and catalog entry exactly as it records a live log. The new recording
// has d's term length, segment length, MTU, initial term id, session and
// stream ids and channel, starts at from and stops at to. It returns the
// new recording's id and the SHA-256 of the frames copied.
func copyRecording(srcFS vfs.FS, srcDir string, d archive.RecordingDescriptor, from, to int64, dstFS vfs.FS, dstDir string) (int64, []byte, error) {
	a, err := archive.Open(dstFS, dstDir, archive.Options{SegmentLength: d.SegmentFileLength, FileSyncLevel: 1, CatalogSyncLevel: 1})
	if err != nil {
		return -1, nil, err
	}
	id, sum, err := copyInto(srcFS, srcDir, d, from, to, a)
	if cerr := a.Close(); err == nil {
		err = cerr
	}
	return id, sum, err
}

func copyInto(srcFS vfs.FS, srcDir string, d archive.RecordingDescriptor, from, to int64, a *archive.Archive) (int64, []byte, error) {
	log, err := logbuf.NewAt(int(d.TermBufferLength), int(d.MTULength), d.InitialTermID, d.SessionID, d.StreamID, from)
	if err != nil {
		return -1, nil, fmt.Errorf("backup: recording %d: %w", d.RecordingID, err)
	}
	img := log.ImageAt(from)
	r, err := archive.OpenRecordingReader(srcFS, srcDir, d, from, to)
	if err != nil {
		return -1, nil, err
	}
	defer r.Close()
	r.IncludePadding()
	rec, err := a.StartRecording(archive.Source{Log: log, Image: img, Channel: d.StrippedChannel, OriginalChannel: d.OriginalChannel,
		SourceIdentity: d.SourceIdentity, SparseSegments: true})
	if err != nil {
		return -1, nil, err
	}
	h := sha256.New()
	termLen := int64(d.TermBufferLength)
	term := from / termLen
	written := from
	drain := func() error {
		for img.Position() < written {
			n, err := rec.Poll()
			if err != nil {
				return err
			}
			if n == 0 {
				return fmt.Errorf("backup: the recorder of the copy of recording %d stopped at %d, before %d", d.RecordingID, img.Position(), written)
			}
		}
		return nil
	}
	var hdr [archive.FrameHeaderLength]byte
	copyErr := func() error {
		for {
			fh, payload, end, ok := r.Next()
			if !ok {
				break
			}
			start := end - archive.AlignedFrameLength(fh.FrameLength)
			if t := start / termLen; t != term {
				// The recorder must have taken the previous term before
				// its partition is reused; the new term's partition starts
				// clean, as a publication's.
				if err := drain(); err != nil {
					return err
				}
				clear(log.Term(logbuf.IndexByPosition(start, log.PositionBitsToShift())))
				term = t
			}
			buf := log.Term(logbuf.IndexByPosition(start, log.PositionBitsToShift()))
			off := int(start % termLen)
			copy(buf[off+archive.FrameHeaderLength:], payload)
			archive.EncodeFrameHeader(buf[off:], fh)
			archive.EncodeFrameHeader(hdr[:], fh)
			h.Write(hdr[:])
			h.Write(payload)
			written = end
			if written-img.Position() >= drainEvery {
				if err := drain(); err != nil {
					return err
				}
			}
		}
		if err := r.Err(); err != nil {
			return err
		}
		if written != to {
			return fmt.Errorf("backup: recording %d: frames end at %d, not at %d", d.RecordingID, written, to)
		}
		return drain()
	}()
	if err := errors.Join(copyErr, rec.Stop()); err != nil {
		return -1, nil, fmt.Errorf("backup: copy of recording %d [%d, %d): %w", d.RecordingID, from, to, err)
	}
	return rec.ID(), h.Sum(nil), nil
}

// frameDigest is the SHA-256 of the frames [from, to) of recording d, as
// copyRecording computes it: a second read of a running node's log, to
// tell that the bytes copied were not caught mid-write.
func frameDigest(fsys vfs.FS, dir string, d archive.RecordingDescriptor, from, to int64) ([]byte, error) {
	r, err := archive.OpenRecordingReader(fsys, dir, d, from, to)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	r.IncludePadding()
	h := sha256.New()
	var hdr [archive.FrameHeaderLength]byte
	for {
		fh, payload, _, ok := r.Next()
		if !ok {
			break
		}
		archive.EncodeFrameHeader(hdr[:], fh)
		h.Write(hdr[:])
		h.Write(payload)
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	if r.Position() != to {
		return nil, fmt.Errorf("backup: recording %d: frames end at %d, not at %d", d.RecordingID, r.Position(), to)
	}
	return h.Sum(nil), nil
}

// copyChunk is the unit of copyTree; a chunk of zeros is not written, so
// a sparse segment stays sparse in the copy.
const copyChunk = 1 << 20

// imageDirs are the directories of an image: a node directory's.
var imageDirs = []string{"cluster", "archive"}

// copyTree copies the files of the image directories of src into dst
// (which must be new or empty), syncing each file and directory, and
// returns each file with its size and SHA-256, sorted by path, the total
// of the sizes and the bytes written (a sparse file's holes are not). It copies
// bytes and never interprets them: a restore. When want is not nil, every
// file must be there with its size and digest and no other file may be:
// a difference fails the copy, naming the file.
func copyTree(fsys vfs.FS, src, dst string, want []File) ([]File, int64, int64, error) {
	var out []File
	var total, written int64
	for _, sub := range imageDirs {
		names, err := fsys.List(fsys.Join(src, sub))
		if errors.Is(err, vfs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, 0, 0, err
		}
		if err := fsys.MkdirAll(fsys.Join(dst, sub)); err != nil {
			return nil, 0, 0, err
		}
		for _, name := range names {
			rel := sub + "/" + name
			from, to := fsys.Join(src, sub, name), fsys.Join(dst, sub, name)
			size, err := fsys.Stat(from)
			if err != nil {
				return nil, 0, 0, fmt.Errorf("backup: %s: not a file of an image: %w", from, err)
			}
			sum, n, err := copyFile(fsys, from, to, size)
			if err != nil {
				return nil, 0, 0, err
			}
			written += n
			out = append(out, File{Path: rel, Size: size, SHA256: sum})
			total += size
		}
		if err := fsys.SyncDir(fsys.Join(dst, sub)); err != nil {
			return nil, 0, 0, err
		}
	}
	if err := fsys.SyncDir(dst); err != nil {
		return nil, 0, 0, err
	}
	slices.SortFunc(out, func(a, b File) int {
		if a.Path < b.Path {
			return -1
		}
		if a.Path > b.Path {
			return 1
		}
		return 0
	})
	if want != nil {
		if err := compareFiles(out, want); err != nil {
			return nil, 0, 0, err
		}
	}
	return out, total, written, nil
}

// compareFiles fails unless got and want list the same files with the
// same sizes and digests.
func compareFiles(got, want []File) error {
	g := map[string]File{}
	for _, f := range got {
		g[f.Path] = f
	}
	var errs []error
	for _, w := range want {
		f, ok := g[w.Path]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s is missing", w.Path))
		case f.Size != w.Size:
			errs = append(errs, fmt.Errorf("%s has %d bytes, the manifest says %d", w.Path, f.Size, w.Size))
		case f.SHA256 != w.SHA256:
			errs = append(errs, fmt.Errorf("%s has SHA-256 %s, the manifest says %s", w.Path, f.SHA256, w.SHA256))
		}
		delete(g, w.Path)
	}
	for p := range g {
		errs = append(errs, fmt.Errorf("%s is not in the manifest", p))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrImageChanged, errors.Join(errs...))
	}
	return nil
}

// ErrImageChanged: the image's files are not those its manifest lists.
var ErrImageChanged = errors.New("backup: the image differs from its manifest")

func copyFile(fsys vfs.FS, from, to string, size int64) (string, int64, error) {
	in, err := fsys.Open(from)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	out, err := fsys.Create(to)
	if err != nil {
		return "", 0, err
	}
	h := sha256.New()
	n, err := copyData(in, out, size, h)
	if err == nil {
		err = out.Truncate(size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", 0, fmt.Errorf("backup: copy %s to %s: %w", from, to, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

var zeroChunk = make([]byte, copyChunk)

func copyData(in, out vfs.File, size int64, h hash.Hash) (int64, error) {
	var written int64
	buf := make([]byte, copyChunk)
	for off := int64(0); off < size; off += copyChunk {
		b := buf[:min(copyChunk, size-off)]
		if n, err := in.ReadAt(b, off); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return written, err
		}
		h.Write(b)
		if bytes.Equal(b, zeroChunk[:len(b)]) {
			continue
		}
		if _, err := out.WriteAt(b, off); err != nil {
			return written, err
		}
		written += int64(len(b))
	}
	return written, nil
}

// removeTree removes dir and everything under it.
func removeTree(fsys vfs.FS, dir string) error {
	names, err := fsys.List(dir)
	if errors.Is(err, vfs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		p := fsys.Join(dir, n)
		if _, err := fsys.Stat(p); err == nil {
			errs = append(errs, fsys.Remove(p))
		} else {
			errs = append(errs, removeTree(fsys, p))
		}
	}
	errs = append(errs, fsys.Remove(dir))
	return errors.Join(errs...)
}

// emptyOrNew checks that dir is new or an empty directory; it reports
// whether dir does not exist.
func emptyOrNew(fsys vfs.FS, dir, what string) (bool, error) {
	if _, err := fsys.Stat(dir); err == nil {
		return false, fmt.Errorf("backup: %s %s is a file: give a new or empty directory", what, dir)
	}
	names, err := fsys.List(dir)
	switch {
	case errors.Is(err, vfs.ErrNotExist):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("backup: %s %s: %w", what, dir, err)
	case len(names) > 0:
		return false, fmt.Errorf("backup: %s %s is not empty (it holds %s): give a new or empty directory; nothing was written", what, dir, names[0])
	}
	return false, nil
}
