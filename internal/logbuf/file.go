//go:build unix

package logbuf

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
)

// CreateFile creates path (which must not exist) as a log buffer file of
// [ComputeLogLength] bytes, maps it shared and read-write, and initialises
// it as [New] does. The file has the layout of an Aeron driver's .logbuffer
// with a 4 KiB page size. Call [Log.Close] to unmap it. Nothing is synced to
// the device: durability is the archive's business.
func CreateFile(path string, termLength, mtu int, initialTermID, sessionID, streamID int32) (*Log, error) {
	if err := checkParams(termLength, mtu); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, fmt.Errorf("logbuf: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(ComputeLogLength(termLength))); err != nil {
		return nil, fmt.Errorf("logbuf: %w", err)
	}
	buf, err := mapFile(f, ComputeLogLength(termLength))
	if err != nil {
		return nil, err
	}
	l := newLog(buf, termLength, mtu, initialTermID, sessionID, streamID)
	l.unmap = syscall.Munmap
	l.initMetaData(0)
	return l, nil
}

// OpenFile maps an existing log buffer file read-write and takes its term
// length, MTU, initial term id and default header from its metadata. A
// publication made from it continues at the file's tail.
func OpenFile(path string) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("logbuf: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("logbuf: %w", err)
	}
	size := st.Size()
	if size < MinTermLength*PartitionCount+MetaDataLength || size > MaxTermLength*PartitionCount+MetaDataLength {
		return nil, fmt.Errorf("logbuf: %s: %d bytes is not a log buffer length", path, size)
	}
	var meta [MetaDataLength]byte
	if _, err := f.ReadAt(meta[:], size-MetaDataLength); err != nil {
		return nil, fmt.Errorf("logbuf: %w", err)
	}
	le := binary.LittleEndian
	termLength := int(le.Uint32(meta[TermLengthOffset:]))
	mtu := int(le.Uint32(meta[MTULengthOffset:]))
	if err := checkParams(termLength, mtu); err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	if int64(ComputeLogLength(termLength)) != size || le.Uint32(meta[PageSizeOffset:]) != PageSize {
		return nil, fmt.Errorf("logbuf: %s: length %d does not match term length %d and page size %d",
			path, size, termLength, le.Uint32(meta[PageSizeOffset:]))
	}
	dh := ReadFrameHeader(meta[DefaultFrameHeaderOffset:])
	buf, err := mapFile(f, int(size))
	if err != nil {
		return nil, err
	}
	l := newLog(buf, termLength, mtu, int32(le.Uint32(meta[InitialTermIDOffset:])), dh.SessionID, dh.StreamID)
	l.unmap = syscall.Munmap
	return l, nil
}

func mapFile(f *os.File, length int) ([]byte, error) {
	buf, err := syscall.Mmap(int(f.Fd()), 0, length, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("logbuf: mmap %s: %w", f.Name(), err)
	}
	return buf, nil
}
