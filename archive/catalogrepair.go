package archive

import (
	"encoding/binary"
	"errors"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Catalog repairs Open runs, with Options.RepairCatalog, when it refuses a
// catalog in a state that a crash inside Aeron's Catalog.addNewRecording
// leaves when its writes (descriptor body, descriptor header,
// nextRecordingId, then one sync) were not all made durable. Each such
// entry was never synced, so nothing outside the archive (a recording.log
// entry) can name it, and dropping it loses nothing. Other damage is left
// alone and reported by Open.

// repairCatalog applies the repairs below; true if it changed the file.
// keepZeros: a catalog of zeros (or of no bytes) is not removed (its owner
// knows of recordings it has lost). capacity is the length the archive
// creates a catalog with: a file shorter than that was cut, not torn.
func repairCatalog(fsys vfs.FS, dir string, keepZeros bool, capacity int64) (bool, error) {
	path := fsys.Join(dir, CatalogFileName)
	if !keepZeros && zeroFile(fsys, path) {
		// Created, never written: no recording to lose.
		return true, fsys.Remove(path)
	}
	fixed, err := dropTornEntry(fsys, dir, capacity)
	if err != nil {
		return fixed, err
	}
	f2, err := fixNextRecordingID(fsys, dir)
	return fixed || f2, err
}

// dropTornEntry repairs the other thing a crash inside addNewRecording can
// leave when its writes were not yet synced: the last entry's header
// (VALID) without its body, so that the entry reads as recording 0 after a
// higher id, which the catalog refuses. Such an entry was never synced,
// so nothing (no recording.log entry) can name it: when the bad entry is
// the last one and only zeros follow it, it is zeroed and the file synced.
func dropTornEntry(fsys vfs.FS, dir string, capacity int64) (bool, error) {
	path := fsys.Join(dir, CatalogFileName)
	f, err := fsys.OpenRW(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil || size > 256<<20 || size < CatalogHeaderLength {
		return false, err
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil {
		return false, err
	}
	le := binary.LittleEndian
	align := int64(le.Uint32(b[16:]))
	if align == 0 {
		return false, nil // legacy layout: leave it to the operator
	}
	off, prev := int64(CatalogHeaderLength), int64(-1)
	for off+DescriptorHeaderLength <= size {
		length := int64(int32(le.Uint32(b[off:])))
		if length <= 0 {
			return false, nil // clean end: nothing to drop
		}
		end := off + DescriptorHeaderLength + length // length includes the alignment padding
		state := int32(le.Uint32(b[off+4:]))
		if end > size && size < capacity {
			// The file ends inside the entry and is shorter than the
			// archive creates it: it was cut, which no crash does (a
			// crash during a grow leaves the file at its old length).
			return false, nil
		}
		bad := end > size || length < DescriptorBlockLength
		var id int64
		if !bad {
			id = int64(le.Uint64(b[off+DescriptorHeaderLength+16:]))
			bad = state == int32(StateValid) && id <= prev
		}
		if !bad {
			if state == int32(StateValid) {
				prev = id
			}
			off = end
			continue
		}
		for _, c := range b[min(end, size):] {
			if c != 0 {
				return false, nil // not the last entry: real damage
			}
		}
		zero := make([]byte, min(end, size)-off)
		if _, err := f.WriteAt(zero, off); err != nil {
			return false, err
		}
		return true, f.SyncAll()
	}
	return false, nil
}

// fixNextRecordingID repairs what a crash inside Aeron's addNewRecording
// can leave: the entry written but the header's nextRecordingId not yet
// advanced, which a writable open refuses. It sets nextRecordingId to the
// last id + 1 and syncs.
func fixNextRecordingID(fsys vfs.FS, dir string) (bool, error) {
	cat, err := OpenCatalogFile(fsys, dir, CatalogOptions{ReadOnly: true})
	if err != nil {
		return false, err
	}
	last := int64(-1)
	for _, e := range cat.Entries() {
		last = max(last, e.Descriptor.RecordingID)
	}
	next := cat.NextRecordingID()
	legacy := cat.Legacy()
	cat.Close()
	if legacy || next >= last+1 {
		return false, nil
	}
	f, err := fsys.OpenRW(fsys.Join(dir, CatalogFileName))
	if err != nil {
		return false, err
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(last+1))
	if _, err = f.WriteAt(b[:], 8); err == nil {
		err = f.Sync()
	}
	return true, errors.Join(err, f.Close())
}

// zeroFile reports whether the file holds nothing but zeros.
func zeroFile(fsys vfs.FS, path string) bool {
	f, err := fsys.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil || size > 64<<20 {
		return false
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && size > 0 {
		return false
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
