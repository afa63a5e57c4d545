package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/matchlog/matchlog/internal/vfs"
)

// Layout of cluster-mark.dat (Aeron's ClusterMarkFile, mark codecs schema
// 110 version 2). Part of the file format: never change.
const (
	MarkFileName          = "cluster-mark.dat"
	markHeaderLength      = 8192
	markBlockLength       = 128
	markTemplateID        = 200
	markSchemaID          = 110
	markSchemaVersion     = 2
	markVersion           = 3 << 8 // compose(0, 3, 0)
	markComponentCM       = 1
	markErrorBufferLength = 64 * 1024
)

// writeMarkFile creates or refreshes cluster-mark.dat as a consensus
// module's, with the version written last.
func writeMarkFile(fsys vfs.FS, dir string, nowMs int64, clusterDir string) (vfs.File, error) {
	path := fsys.Join(dir, MarkFileName)
	f, err := fsys.OpenRW(path)
	created := false
	if errors.Is(err, vfs.ErrNotExist) {
		f, err = fsys.Create(path)
		created = true
	}
	if err != nil {
		return nil, err
	}
	b := make([]byte, markHeaderLength)
	le := binary.LittleEndian
	le.PutUint16(b[0:], markBlockLength)
	le.PutUint16(b[2:], markTemplateID)
	le.PutUint16(b[4:], markSchemaID)
	le.PutUint16(b[6:], markSchemaVersion)
	h := b[8:]
	le.PutUint32(h[4:], markComponentCM)
	le.PutUint64(h[8:], uint64(nowMs))  // activity
	le.PutUint64(h[16:], uint64(nowMs)) // start
	le.PutUint64(h[24:], uint64(os.Getpid()))
	le.PutUint64(h[32:], ^uint64(0)) // candidateTermId -1
	le.PutUint32(h[40:], 10)         // archive stream
	le.PutUint32(h[44:], 104)        // service stream
	le.PutUint32(h[48:], 105)        // consensus module stream
	le.PutUint32(h[52:], 101)        // ingress stream
	le.PutUint32(h[56:], 0)          // member id
	le.PutUint32(h[60:], ^uint32(0)) // service id -1
	le.PutUint32(h[64:], markHeaderLength)
	le.PutUint32(h[68:], markErrorBufferLength)
	le.PutUint32(h[72:], 0) // cluster id
	off := 8 + markBlockLength
	for _, s := range []string{"", "aeron:ipc?term-length=128k", "aeron:ipc", "matchlog", "", clusterDir} {
		le.PutUint32(b[off:], uint32(len(s)))
		off += 4 + copy(b[off+4:], s)
	}
	if _, err = f.WriteAt(b, 0); err == nil {
		err = f.Truncate(markHeaderLength + markErrorBufferLength)
	}
	if err == nil {
		var v [4]byte
		le.PutUint32(v[:], markVersion)
		_, err = f.WriteAt(v[:], 8)
	}
	if err == nil {
		err = f.Sync()
	}
	if err == nil && created {
		err = fsys.SyncDir(dir)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkMarkFile refuses a cluster directory whose cluster-mark.dat shows a
// running node: ready (version written), activity timestamp not -1 and
// within timeoutMs of nowMs (wall-clock epoch ms), as Aeron's
// ClusterMarkFile refuses an active mark file — unless the process id it
// names no longer exists on this host (a node killed with SIGKILL can be
// restarted at once). A missing or short file is no node.
func checkMarkFile(fsys vfs.FS, dir string, nowMs, timeoutMs int64) error {
	path := fsys.Join(dir, MarkFileName)
	f, err := fsys.Open(path)
	if errors.Is(err, vfs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cluster: mark file: %w", err)
	}
	defer f.Close()
	var b [40]byte
	if n, err := f.ReadAt(b[:], 0); n < len(b) {
		if err == nil || errors.Is(err, io.EOF) {
			return nil // torn at creation: rewritten by writeMarkFile
		}
		return fmt.Errorf("cluster: mark file: %w", err)
	}
	le := binary.LittleEndian
	version := le.Uint32(b[8:])
	activity := int64(le.Uint64(b[16:]))
	pid := int64(le.Uint64(b[32:]))
	if version == 0 || activity <= 0 {
		return nil
	}
	if pid > 0 && pid != int64(os.Getpid()) && processGone(int(pid)) {
		// The node that wrote it is gone (killed): no need to wait out
		// the timeout.
		return nil
	}
	if age := nowMs - activity; age <= timeoutMs {
		return fmt.Errorf("%w: %s shows activity %d ms ago (pid %d, timeout %d ms); stop that node first, or wait for the timeout if it crashed",
			ErrNodeRunning, path, age, pid, timeoutMs)
	}
	return nil
}

// stampMarkFile writes the activity timestamp (-1 after a clean stop).
func stampMarkFile(f vfs.File, ts int64) error {
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], uint64(ts))
	_, err := f.WriteAt(v[:], 16)
	return err
}
