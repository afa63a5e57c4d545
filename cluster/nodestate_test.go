package cluster_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestNodeStateFixture decodes Aeron's node-state.dat and re-encodes it
// byte for byte over the whole 1 MiB file.
func TestNodeStateFixture(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(fixtures.AeronSingleNode(t), "cluster", cluster.NodeStateFileName))
	if err != nil {
		t.Fatal(err)
	}
	st, err := cluster.DecodeNodeState(raw)
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's single node started term 0 at position 0.
	if st.CandidateTermID != 0 || st.LogPosition != 0 || st.Timestamp <= 1_600_000_000_000 || st.Version != 3<<8 {
		t.Fatalf("decoded %+v", st)
	}
	enc := AppendNodeStateFile(st)
	if !bytes.Equal(enc, raw) {
		for i := range raw {
			if i >= len(enc) || enc[i] != raw[i] {
				t.Fatalf("re-encoded file differs at byte %d (len %d vs %d)", i, len(enc), len(raw))
			}
		}
	}
}

// AppendNodeStateFile is the whole 1 MiB file for st.
func AppendNodeStateFile(st cluster.NodeState) []byte {
	b := cluster.AppendNodeState(nil, st)
	return append(b, make([]byte, 1<<20-len(b))...)
}

// TestNodeStateCorrupt: every damage is an error naming the problem.
func TestNodeStateCorrupt(t *testing.T) {
	good := AppendNodeStateFile(cluster.NodeState{Version: 3 << 8, CandidateTermID: 4, Timestamp: 1, LogPosition: 96})
	if st, err := cluster.DecodeNodeState(good); err != nil || st.CandidateTermID != 4 || st.LogPosition != 96 {
		t.Fatalf("good file: %+v %v", st, err)
	}
	// A later Aeron's extra entry before the footer is skipped.
	withMembers := append([]byte(nil), good[:48]...)
	extra := make([]byte, 16+20)
	binary.LittleEndian.PutUint16(extra[0:], 16)
	binary.LittleEndian.PutUint16(extra[2:], 303)
	binary.LittleEndian.PutUint16(extra[4:], 112)
	binary.LittleEndian.PutUint32(extra[8:], uint32(len(extra)))
	withMembers = append(withMembers, extra...)
	withMembers = append(withMembers, make([]byte, 4)...) // align to 8
	withMembers = append(withMembers, good[48:64]...)
	if st, err := cluster.DecodeNodeState(withMembers); err != nil || st.CandidateTermID != 4 {
		t.Fatalf("with an extra entry: %+v %v", st, err)
	}
	for _, c := range []struct {
		name string
		mod  func(b []byte) []byte
	}{
		{"empty", func(b []byte) []byte { return b[:0] }},
		{"header only", func(b []byte) []byte { return b[:8] }},
		{"major version 1", func(b []byte) []byte { binary.LittleEndian.PutUint32(b, 1<<16); return b }},
		{"wrong schema", func(b []byte) []byte { binary.LittleEndian.PutUint16(b[12:], 111); return b }},
		{"zero frame length", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], 0); return b }},
		{"negative frame length", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], 0xffffffff); return b }},
		{"frame past the end", func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], 1<<21); return b }},
		{"short candidate block", func(b []byte) []byte { binary.LittleEndian.PutUint16(b[8:], 8); return b }},
		{"no footer", func(b []byte) []byte { return b[:48] }},
		{"no candidate term", func(b []byte) []byte { return append(append(b[:8:8], b[48:64]...), make([]byte, 64)...) }},
		{"zeroed file", func(b []byte) []byte { clear(b); return b }},
	} {
		b := c.mod(append([]byte(nil), good...))
		if _, err := cluster.DecodeNodeState(b); !errors.Is(err, cluster.ErrNodeStateCorrupt) {
			t.Errorf("%s: err %v, want ErrNodeStateCorrupt", c.name, err)
		}
	}
}

// TestNodeStateTracksTerms: each start records its term in node-state.dat;
// a node-state.dat ahead of recording.log (a crash between the two) makes
// the next start skip that term, as Aeron never reuses a candidate term;
// a damaged node-state.dat stops the start with its name.
func TestNodeStateTracksTerms(t *testing.T) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	for run := int64(0); run < 3; run++ {
		f.open()
		st, err := cluster.ReadNodeState(mem, "n/cluster")
		if err != nil {
			t.Fatal(err)
		}
		if st.CandidateTermID != run || st.CandidateTermID != f.node.LeadershipTermID() {
			t.Fatalf("run %d: node-state %+v, node term %d", run, st, f.node.LeadershipTermID())
		}
		s, _ := f.node.Connect("aeron:ipc", 102)
		f.node.Offer(s, msg(uint64(run)+1, 0))
		f.work(3)
		f.close()
	}
	// Simulate a start that recorded term 5 in node-state.dat and crashed.
	raw := AppendNodeStateFile(cluster.NodeState{Version: 3 << 8, CandidateTermID: 5, Timestamp: 1})
	w, err := mem.OpenRW("n/cluster/" + cluster.NodeStateFileName)
	if err != nil {
		t.Fatal(err)
	}
	w.WriteAt(raw[:64], 0)
	w.Close()
	f.open()
	if got := f.node.LeadershipTermID(); got != 6 {
		t.Fatalf("term after node-state 5: %d, want 6", got)
	}
	f.close()
	l, err := recordinglog.Open(mem, "n/cluster", recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var terms []int64
	for _, e := range l.Entries() {
		if e.Type == recordinglog.TypeTerm {
			terms = append(terms, e.LeadershipTermID)
		}
	}
	l.Close()
	if want := []int64{0, 1, 2, 6}; !equalInts(terms, want) {
		t.Fatalf("TERM entries %v, want %v", terms, want)
	}
	// Damage it: the start fails naming the file.
	w, _ = mem.OpenRW("n/cluster/" + cluster.NodeStateFileName)
	w.WriteAt([]byte{0, 0, 1, 0}, 0) // major version 1
	w.Close()
	o := f.opts
	o.Service = f.svc
	_, err = cluster.Open(o)
	if !errors.Is(err, cluster.ErrNodeStateCorrupt) || !bytes.Contains([]byte(err.Error()), []byte(cluster.NodeStateFileName)) {
		t.Fatalf("open with a damaged node-state.dat: %v", err)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
