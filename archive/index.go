package archive

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"

	"github.com/matchlog/matchlog/internal/vfs"
)

// The sidecar index, <recordingId>.idx, is ours: Aeron's archive and
// ArchiveTool never look at it (they index only "*.rec" names and the
// catalog), and nothing in the catalog or the segments depends on it.
//
// It records, for each segment of a recording, the latest position and the
// largest timestamp written into it, so that retention by age can follow
// Kafka's largestTimestamp rule (a segment may go once its newest byte is
// older than the cutoff). Layout, all little-endian:
//
//	header, 32 bytes
//	 0 magic [8]byte "mlogidx1"
//	 8 version uint32 = 1
//	12 record length uint32 = 32
//	16 recordingId int64
//	24 reserved uint32 = 0
//	28 crc32c uint32 of bytes 0..27
//	records, 32 bytes each, appended
//	 0 segmentBase int64   the segment's base position
//	 8 position int64      recorded position when the record was written
//	16 timestamp int64     largest timestamp (epoch ms) written into the segment
//	24 reserved uint32 = 0
//	28 crc32c uint32 of bytes 0..27
//
// Records are only ever appended, never rewritten. A reader takes records up
// to the first one that is short or whose checksum does not match (a torn or
// lost append) and ignores the rest; a writer opening the file cuts that
// rest off before appending. For each segment base the last record's
// position wins and the timestamp is the largest seen.
//
// Durability: a record is appended after a block whose timestamp is newer
// than the last one indexed for its segment, so at most one record per clock
// tick. At file sync level >= 1 the index is synced when a segment fills,
// when the recording stops and when the archive closes, but not after every
// block (that would double the syncs of the recording). After a crash the
// newest records may be lost: recovery then gives every segment holding
// bytes past the last indexed position the recovery time as its timestamp.
// The recovery time is never older than the lost timestamp, so retention
// by age never deletes such a segment too early.
//
// Compaction: records pile up (up to one per clock tick under load, and
// those of segments a detach or purge removed stay), so the index is
// rewritten with one record per segment — only segments at or above the
// recording's start, when it is opened for appending — whenever it holds
// more than 2 × its segments + indexCompactSlack records, and whenever it
// is opened for appending with records of segments below the start. The
// new file is written to <id>.idx.compacting (synced at file sync level
// >= 1) and renamed over the index; the directory is not synced: a crash
// that loses the rename keeps the old, longer index, and one that loses
// the new file's data leaves an index whose header does not read, which
// openIndex starts afresh and recovery then treats as lost records (the
// conservative recovery time above). A leftover <id>.idx.compacting is
// removed when the index is next opened for appending.
const (
	IndexSuffix       = ".idx"
	indexMagic        = "mlogidx1"
	indexVersion      = 1
	indexHeaderLength = 32
	indexRecordLength = 32
	// IndexCompactSuffix follows IndexFileName in the name of a
	// compaction's new index before its rename.
	IndexCompactSuffix = ".compacting"
	// indexCompactSlack is the records beyond 2 × segments an index may
	// hold before it is rewritten.
	indexCompactSlack = 1024
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// IndexFileName is "<recordingID>.idx".
func IndexFileName(recordingID int64) string {
	return strconv.FormatInt(recordingID, 10) + IndexSuffix
}

// SegmentTime is what the sidecar index knows about one segment.
type SegmentTime struct {
	// Base is the segment's base position.
	Base int64
	// Position is the recorded position when the segment was last indexed.
	Position int64
	// LastTimestamp is the largest timestamp (epoch ms) written into it.
	LastTimestamp int64
}

// indexFile is an open sidecar index being appended to.
type indexFile struct {
	f    vfs.File
	size int64 // offset of the next record
	segs []SegmentTime
	// For compaction: where the file is, how many records it holds, the
	// lowest segment base kept, whether to sync the new file.
	fs      vfs.FS
	name    string
	id      int64
	records int64
	minBase int64
	sync    bool
	rec     [indexRecordLength]byte
	// filedBase, filedTs and filedPos are the last appended record.
	filedBase int64
	filedTs   int64
	filedPos  int64
}

func putIndexCRC(b []byte) {
	binary.LittleEndian.PutUint32(b[28:], crc32.Checksum(b[:28], castagnoli))
}

func indexCRCOK(b []byte) bool {
	return binary.LittleEndian.Uint32(b[28:]) == crc32.Checksum(b[:28], castagnoli)
}

// decodeIndex parses an index file's bytes. It returns the segments and the
// length of the valid prefix. A bad header is an error.
func decodeIndex(b []byte, recordingID int64) ([]SegmentTime, int64, error) {
	if len(b) < indexHeaderLength || string(b[:8]) != indexMagic || !indexCRCOK(b[:indexHeaderLength]) {
		return nil, 0, corruptf("archive: index of recording %d: bad header", recordingID)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != indexVersion {
		return nil, 0, corruptf("archive: index of recording %d: version %d, want %d", recordingID, v, indexVersion)
	}
	if id := int64(binary.LittleEndian.Uint64(b[16:])); id != recordingID {
		return nil, 0, corruptf("archive: index of recording %d holds recording %d", recordingID, id)
	}
	var segs []SegmentTime
	off := int64(indexHeaderLength)
	for off+indexRecordLength <= int64(len(b)) {
		r := b[off : off+indexRecordLength]
		if !indexCRCOK(r) {
			break
		}
		st := SegmentTime{
			Base:          int64(binary.LittleEndian.Uint64(r[0:])),
			Position:      int64(binary.LittleEndian.Uint64(r[8:])),
			LastTimestamp: int64(binary.LittleEndian.Uint64(r[16:])),
		}
		segs = mergeSegmentTime(segs, st)
		off += indexRecordLength
	}
	return segs, off, nil
}

// mergeSegmentTime applies one record: the last position wins, the largest
// timestamp is kept. Segments stay sorted by base.
func mergeSegmentTime(segs []SegmentTime, st SegmentTime) []SegmentTime {
	for i := len(segs) - 1; i >= 0; i-- {
		if segs[i].Base == st.Base {
			segs[i].Position = st.Position
			segs[i].LastTimestamp = max(segs[i].LastTimestamp, st.LastTimestamp)
			return segs
		}
		if segs[i].Base < st.Base {
			segs = append(segs, SegmentTime{})
			copy(segs[i+2:], segs[i+1:])
			segs[i+1] = st
			return segs
		}
	}
	segs = append(segs, SegmentTime{})
	copy(segs[1:], segs)
	segs[0] = st
	return segs
}

// ReadIndex reads the sidecar index of a recording. A missing file gives an
// empty list and no error.
func ReadIndex(fsys vfs.FS, dir string, recordingID int64) ([]SegmentTime, error) {
	f, err := fsys.Open(fsys.Join(dir, IndexFileName(recordingID)))
	if errors.Is(err, vfs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("archive: open index: %w", err)
	}
	defer f.Close()
	b, err := readAll(f)
	if err != nil {
		return nil, err
	}
	segs, _, err := decodeIndex(b, recordingID)
	return segs, err
}

func readAll(f vfs.File) ([]byte, error) {
	size, err := f.Size()
	if err != nil {
		return nil, fmt.Errorf("archive: %s: %w", f.Name(), err)
	}
	b := make([]byte, size)
	if n, err := f.ReadAt(b, 0); int64(n) < size {
		if err == nil || errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("archive: read %s: %w", f.Name(), err)
	}
	return b, nil
}

// openIndex opens (or creates) the index of a recording for appending: a
// missing or unreadable file is started afresh, a torn tail is cut off,
// and the file is compacted (records of segments below minBase dropped)
// when it holds more records than it needs. fresh reports that a new
// header was written. sync: the file sync level is >= 1.
func openIndex(fsys vfs.FS, dir string, recordingID, minBase int64, sync bool) (x *indexFile, fresh bool, err error) {
	name := fsys.Join(dir, IndexFileName(recordingID))
	if err := fsys.Remove(name + IndexCompactSuffix); err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return nil, false, fmt.Errorf("archive: remove the leftover %s%s of an index compaction: %w", name, IndexCompactSuffix, err)
	}
	f, err := fsys.OpenRW(name)
	if errors.Is(err, vfs.ErrNotExist) {
		f, err = fsys.Create(name)
	}
	if err != nil {
		return nil, false, fmt.Errorf("archive: open index: %w", err)
	}
	x = &indexFile{f: f, filedBase: -1, filedTs: NullTimestamp, filedPos: NullPosition,
		fs: fsys, name: name, id: recordingID, minBase: minBase, sync: sync}
	b, err := readAll(f)
	if err != nil {
		f.Close()
		return nil, false, err
	}
	segs, valid, derr := decodeIndex(b, recordingID)
	if derr != nil {
		// Unreadable header: start again (the index is advisory).
		var h [indexHeaderLength]byte
		copy(h[:], indexMagic)
		binary.LittleEndian.PutUint32(h[8:], indexVersion)
		binary.LittleEndian.PutUint32(h[12:], indexRecordLength)
		binary.LittleEndian.PutUint64(h[16:], uint64(recordingID))
		putIndexCRC(h[:])
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("archive: reset index %s: %w", name, err)
		}
		if _, err := f.WriteAt(h[:], 0); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("archive: write index %s: %w", name, err)
		}
		segs, valid, fresh = nil, indexHeaderLength, true
	} else if valid < int64(len(b)) {
		if err := f.Truncate(valid); err != nil {
			f.Close()
			return nil, false, fmt.Errorf("archive: cut index %s: %w", name, err)
		}
	}
	x.segs, x.size = segs, valid
	x.records = (valid - indexHeaderLength) / indexRecordLength
	if n := len(segs); n > 0 {
		x.filedBase, x.filedTs, x.filedPos = segs[n-1].Base, segs[n-1].LastTimestamp, segs[n-1].Position
	}
	if x.overfull() || (len(segs) > 0 && segs[0].Base < minBase) {
		if err := x.rewrite(); err != nil {
			x.close()
			return nil, false, err
		}
	}
	return x, fresh, nil
}

// overfull reports whether the index holds more records than compaction
// lets it.
func (x *indexFile) overfull() bool { return x.records > 2*int64(len(x.segs))+indexCompactSlack }

// rewrite replaces the index by one record per segment at or above
// minBase (see the compaction note above) and goes on appending to the new
// file.
func (x *indexFile) rewrite() error {
	keep := x.segs[:0:0]
	for _, s := range x.segs {
		if s.Base >= x.minBase {
			keep = append(keep, s)
		}
	}
	b := make([]byte, indexHeaderLength, indexHeaderLength+indexRecordLength*len(keep))
	copy(b, indexMagic)
	binary.LittleEndian.PutUint32(b[8:], indexVersion)
	binary.LittleEndian.PutUint32(b[12:], indexRecordLength)
	binary.LittleEndian.PutUint64(b[16:], uint64(x.id))
	putIndexCRC(b[:indexHeaderLength])
	for _, s := range keep {
		var r [indexRecordLength]byte
		binary.LittleEndian.PutUint64(r[0:], uint64(s.Base))
		binary.LittleEndian.PutUint64(r[8:], uint64(s.Position))
		binary.LittleEndian.PutUint64(r[16:], uint64(s.LastTimestamp))
		putIndexCRC(r[:])
		b = append(b, r[:]...)
	}
	tmp := x.name + IndexCompactSuffix
	if err := x.fs.Remove(tmp); err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return fmt.Errorf("archive: compact index %s: %w", x.name, err)
	}
	f, err := x.fs.Create(tmp)
	if err != nil {
		return fmt.Errorf("archive: compact index %s: %w", x.name, err)
	}
	fail := func(err error) error {
		f.Close()
		_ = x.fs.Remove(tmp)
		return fmt.Errorf("archive: compact index %s: %w", x.name, err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return fail(err)
	}
	if x.sync {
		if err := f.Sync(); err != nil {
			return fail(err)
		}
	}
	if err := x.fs.Rename(tmp, x.name); err != nil {
		return fail(err)
	}
	old := x.f
	x.f, x.segs, x.size, x.records = f, keep, int64(len(b)), int64(len(keep))
	x.filedBase, x.filedTs, x.filedPos = -1, NullTimestamp, NullPosition
	if n := len(keep); n > 0 {
		x.filedBase, x.filedTs, x.filedPos = keep[n-1].Base, keep[n-1].LastTimestamp, keep[n-1].Position
	}
	if err := old.Close(); err != nil {
		return fmt.Errorf("archive: compact index %s: close the old file: %w", x.name, err)
	}
	return nil
}

// note records that data up to position was written into segment base at
// timestamp ts. It appends a record when the segment changed or the
// timestamp grew, or, with force, when the position moved since the last
// record. It does not allocate except for the first record of a segment.
func (x *indexFile) note(base, position, ts int64, force bool) error {
	if n := len(x.segs); n > 0 && x.segs[n-1].Base == base {
		x.segs[n-1].Position = position
		x.segs[n-1].LastTimestamp = max(x.segs[n-1].LastTimestamp, ts)
	} else {
		x.segs = mergeSegmentTime(x.segs, SegmentTime{Base: base, Position: position, LastTimestamp: ts})
	}
	s := x.segs[len(x.segs)-1]
	if s.Base != base {
		for _, t := range x.segs {
			if t.Base == base {
				s = t
			}
		}
	}
	if base == x.filedBase && s.LastTimestamp <= x.filedTs && (!force || position == x.filedPos) {
		return nil
	}
	r := x.rec[:]
	binary.LittleEndian.PutUint64(r[0:], uint64(base))
	binary.LittleEndian.PutUint64(r[8:], uint64(position))
	binary.LittleEndian.PutUint64(r[16:], uint64(s.LastTimestamp))
	binary.LittleEndian.PutUint32(r[24:], 0)
	putIndexCRC(r)
	if _, err := x.f.WriteAt(r, x.size); err != nil {
		return fmt.Errorf("archive: append to index %s: %w", x.f.Name(), err)
	}
	x.size += indexRecordLength
	x.records++
	x.filedBase, x.filedTs, x.filedPos = base, s.LastTimestamp, position
	if x.overfull() {
		return x.rewrite()
	}
	return nil
}

// flush appends a record if the in-memory state of the last segment is
// ahead of the file.
func (x *indexFile) flush() error {
	if n := len(x.segs); n > 0 {
		s := x.segs[n-1]
		return x.note(s.Base, s.Position, s.LastTimestamp, true)
	}
	return nil
}

func (x *indexFile) close() error {
	if x == nil || x.f == nil {
		return nil
	}
	err := x.f.Close()
	x.f = nil
	return err
}
