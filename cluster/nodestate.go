package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/internal/vfs"
)

// node-state.dat is Aeron's NodeStateFile: the node's persistent local
// state that is not in any snapshot — the highest candidate term id it
// has started (node-state codecs, schema 112 version 10). Part of the file
// format: never change. Layout, little-endian, as Aeron writes it:
//
//	[0, 8)    NodeStateHeader body: version int32 (semantic 0.3.0), padding
//	[8, 24)   message header: blockLength 24, templateId 301 (CandidateTerm),
//	          schemaId 112, version 10, frameLength 40, padding
//	[24, 48)  CandidateTerm: candidateTermId, timestamp (epoch ms),
//	          logPosition
//	[48, 64)  message header of NodeStateFooter (templateId 304, blockLength
//	          0, frameLength 16)
//	... zeros to 1 MiB
//
// Entries are found by walking the message headers' frame lengths
// (aligned to 8) from offset 8 until the footer, so entries Aeron adds in
// later versions (ClusterMembers) are skipped.
const (
	NodeStateFileName = "node-state.dat"

	nodeStateFileLength    = 1 << 20
	nodeStateSchemaID      = 112
	nodeStateSchemaVersion = 10
	nodeStateHeaderLength  = 8
	nodeStateMsgHeaderLen  = 16
	nodeStateCandidateTmpl = 301
	nodeStateFooterTmpl    = 304
	nodeStateCandidateLen  = 24
	nodeStateAlignment     = 8
	nodeStateMajorVersion  = 0
)

// NodeState is the content of node-state.dat.
type NodeState struct {
	// Version is the file's semantic version (major<<16 | minor<<8 | patch).
	Version int32
	// CandidateTermID is the highest leadership term the node has started
	// (-1 if none); Timestamp (epoch ms) and LogPosition say when and where
	// it was set.
	CandidateTermID int64
	Timestamp       int64
	LogPosition     int64
}

// ErrNodeStateCorrupt reports a node-state.dat that cannot be read.
var ErrNodeStateCorrupt = errors.New("cluster: node-state.dat corrupt")

// DecodeNodeState decodes node-state.dat from b (the file's bytes).
func DecodeNodeState(b []byte) (NodeState, error) {
	le := binary.LittleEndian
	if len(b) < nodeStateHeaderLength+nodeStateMsgHeaderLen {
		return NodeState{}, fmt.Errorf("%w: %d bytes, shorter than its header", ErrNodeStateCorrupt, len(b))
	}
	st := NodeState{Version: int32(le.Uint32(b))}
	if major := st.Version >> 16 & 0xff; major != nodeStateMajorVersion {
		return NodeState{}, fmt.Errorf("%w: major version %d, this software reads %d", ErrNodeStateCorrupt, major, nodeStateMajorVersion)
	}
	// Aeron 1.4x writes 0.3.0; any other version (or non-zero header
	// padding) is damage or a file this software does not know, and is
	// refused rather than rewritten.
	if st.Version != markVersion || le.Uint32(b[4:]) != 0 {
		return NodeState{}, fmt.Errorf("%w: header version %d.%d.%d (padding %#x), this software reads %d.%d.%d",
			ErrNodeStateCorrupt, st.Version>>16&0xff, st.Version>>8&0xff, st.Version&0xff, le.Uint32(b[4:]),
			markVersion>>16&0xff, markVersion>>8&0xff, markVersion&0xff)
	}
	found := false
	for off := nodeStateHeaderLength; ; {
		if off+nodeStateMsgHeaderLen > len(b) {
			return NodeState{}, fmt.Errorf("%w: no footer entry before offset %d (end of file)", ErrNodeStateCorrupt, off)
		}
		h := b[off:]
		block, tmpl, schema := int(le.Uint16(h)), le.Uint16(h[2:]), le.Uint16(h[4:])
		frame := int64(int32(le.Uint32(h[8:])))
		if schema != nodeStateSchemaID {
			return NodeState{}, fmt.Errorf("%w: entry at offset %d has schema id %d, want %d", ErrNodeStateCorrupt, off, schema, nodeStateSchemaID)
		}
		if tmpl == nodeStateFooterTmpl {
			break
		}
		if frame < nodeStateMsgHeaderLen || frame > int64(len(b)-off) || block > int(frame)-nodeStateMsgHeaderLen {
			return NodeState{}, fmt.Errorf("%w: entry at offset %d (template %d) has frame length %d, block length %d", ErrNodeStateCorrupt, off, tmpl, frame, block)
		}
		if tmpl == nodeStateCandidateTmpl {
			if block < nodeStateCandidateLen {
				return NodeState{}, fmt.Errorf("%w: CandidateTerm at offset %d has block length %d, want %d", ErrNodeStateCorrupt, off, block, nodeStateCandidateLen)
			}
			body := h[nodeStateMsgHeaderLen:]
			st.CandidateTermID = int64(le.Uint64(body))
			st.Timestamp = int64(le.Uint64(body[8:]))
			st.LogPosition = int64(le.Uint64(body[16:]))
			found = true
		}
		off += int((frame + nodeStateAlignment - 1) &^ (nodeStateAlignment - 1))
	}
	if !found {
		return NodeState{}, fmt.Errorf("%w: no CandidateTerm entry", ErrNodeStateCorrupt)
	}
	return st, nil
}

// AppendNodeState appends the first 64 bytes of node-state.dat holding st
// (the rest of the 1 MiB file is zeros) to dst.
func AppendNodeState(dst []byte, st NodeState) []byte {
	le := binary.LittleEndian
	var b [64]byte
	le.PutUint32(b[0:], uint32(st.Version))
	h := b[8:]
	le.PutUint16(h[0:], nodeStateCandidateLen)
	le.PutUint16(h[2:], nodeStateCandidateTmpl)
	le.PutUint16(h[4:], nodeStateSchemaID)
	le.PutUint16(h[6:], nodeStateSchemaVersion)
	le.PutUint32(h[8:], nodeStateMsgHeaderLen+nodeStateCandidateLen)
	body := b[24:]
	le.PutUint64(body[0:], uint64(st.CandidateTermID))
	le.PutUint64(body[8:], uint64(st.Timestamp))
	le.PutUint64(body[16:], uint64(st.LogPosition))
	f := b[48:]
	le.PutUint16(f[2:], nodeStateFooterTmpl)
	le.PutUint16(f[4:], nodeStateSchemaID)
	le.PutUint16(f[6:], nodeStateSchemaVersion)
	le.PutUint32(f[8:], nodeStateMsgHeaderLen)
	return append(dst, b[:]...)
}

// ReadNodeState reads dir's node-state.dat; vfs.ErrNotExist if there is
// none.
func ReadNodeState(fsys vfs.FS, dir string) (NodeState, error) {
	path := fsys.Join(dir, NodeStateFileName)
	f, err := fsys.Open(path)
	if err != nil {
		return NodeState{}, err
	}
	defer f.Close()
	// The entries sit in the first page; read 4 KiB (or the whole file if
	// shorter) and scan.
	b := make([]byte, 4096)
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return NodeState{}, fmt.Errorf("cluster: %s: %w", path, err)
	}
	st, err := DecodeNodeState(b[:n])
	if err != nil {
		return NodeState{}, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// writeNodeState makes dir's node-state.dat hold st. A new file is written
// whole under a temporary name and renamed into place (a crash leaves the
// old file or the new one); an existing file has its CandidateTerm body
// rewritten in place (24 bytes in one page), then synced at sync (as Aeron's
// NodeStateFile does at file sync level > 0).
func writeNodeState(fsys vfs.FS, dir string, st NodeState, exists bool, sync archive.SyncLevel) error {
	path := fsys.Join(dir, NodeStateFileName)
	if exists {
		f, err := fsys.OpenRW(path)
		if err != nil {
			return err
		}
		b := AppendNodeState(nil, st)
		_, err = f.WriteAt(b[24:48], 24)
		if err == nil {
			err = sync.Sync(f)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	tmp := path + ".tmp"
	if err := fsys.Remove(tmp); err != nil && !errors.Is(err, vfs.ErrNotExist) {
		return err
	}
	f, err := fsys.Create(tmp)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(AppendNodeState(nil, st), 0)
	if err == nil {
		err = f.Truncate(nodeStateFileLength)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err == nil {
		err = fsys.SyncDir(dir)
	}
	return err
}

// proposeCandidateTerm reads node-state.dat (creating it if missing) and
// returns the term the node starts: termID, or one past the candidate term
// recorded there if that is higher (a crash after a term started but
// before its TERM entry reached recording.log: Aeron never reuses a
// candidate term id). It records the result with logPosition and nowMs.
func proposeCandidateTerm(fsys vfs.FS, dir string, termID, logPosition, nowMs int64, sync archive.SyncLevel) (int64, error) {
	st, err := ReadNodeState(fsys, dir)
	exists := err == nil
	switch {
	case errors.Is(err, vfs.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("%w; it holds only the highest leadership term started, which recording.log also records: move it away to start", err)
	case st.CandidateTermID >= termID:
		termID = st.CandidateTermID + 1
	}
	st = NodeState{Version: markVersion, CandidateTermID: termID, Timestamp: nowMs, LogPosition: logPosition}
	if err := writeNodeState(fsys, dir, st, exists, sync); err != nil {
		return 0, fmt.Errorf("cluster: %s: %w", fsys.Join(dir, NodeStateFileName), err)
	}
	return termID, nil
}
