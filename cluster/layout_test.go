package cluster_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestDirectoryForAeronTools checks the node directory the way Aeron's
// tools read it: ArchiveTool verify -a finds every recording valid,
// recording.log holds one TERM per start, all in the log recording,
// each committed at the next term's base, and snapshot pairs (service,
// then consensus module) at one position; the recovery plan replays from
// the last snapshot to the log's stop; cluster-mark.dat is a consensus
// module's mark file.
func TestDirectoryForAeronTools(t *testing.T) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	var bases []int64
	for run := 0; run < 3; run++ {
		f.open()
		bases = append(bases, f.node.LogPosition()-96) // the term starts before its NewLeadershipTermEvent (96 bytes)
		s, _ := f.node.Connect("aeron:ipc", 102)
		for i := uint64(1); i <= 40; i++ {
			f.node.Offer(s, msg(uint64(run)*100+i, 0))
			f.work(1)
			if i == 20 {
				f.node.RequestSnapshot()
				f.work(1)
				if err := f.node.AwaitSnapshot(5 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
		}
		f.close()
	}
	rep, err := archive.Verify(mem, "n/archive", archive.VerifyOptions{AllSegments: true})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || len(rep.Recordings) != 7 {
		for _, r := range rep.Recordings {
			t.Logf("recording %d: %v %v", r.RecordingID, r.Status, r.Problems)
		}
		t.Fatalf("verify: ok %v, %d recordings (want 1 log + 3 snapshot pairs)", rep.OK(), len(rep.Recordings))
	}

	l, err := recordinglog.Open(mem, "n/cluster", recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var terms, snaps []recordinglog.Entry
	for _, e := range l.Entries() {
		if e.Type == recordinglog.TypeTerm {
			terms = append(terms, e)
		} else {
			snaps = append(snaps, e)
		}
	}
	if len(terms) != 3 || len(snaps) != 6 {
		t.Fatalf("%d TERM and %d SNAPSHOT entries: %s", len(terms), len(snaps), recordinglog.Format(l.Entries()))
	}
	for i, e := range terms {
		if e.RecordingID != 0 || e.LeadershipTermID != int64(i) || e.TermBaseLogPosition != bases[i] {
			t.Fatalf("TERM %d: %v (bases %v)", i, e, bases)
		}
		if i+1 < len(terms) && e.LogPosition != bases[i+1] {
			t.Fatalf("TERM %d committed at %d, want the next base %d", i, e.LogPosition, bases[i+1])
		}
	}
	for i := 0; i < len(snaps); i += 2 {
		if snaps[i].ServiceID != 0 || snaps[i+1].ServiceID != -1 || snaps[i].LogPosition != snaps[i+1].LogPosition {
			t.Fatalf("snapshot set %d: %v %v", i/2, snaps[i], snaps[i+1])
		}
	}
	cat, err := archive.OpenCatalogFile(mem, "n/archive", archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	plan, err := l.CreateRecoveryPlan(cat, 1)
	if err != nil || plan.Err() != nil {
		t.Fatal(err, plan.Err())
	}
	last := snaps[len(snaps)-1]
	d, _ := cat.Descriptor(0)
	if plan.ReplayFrom != last.LogPosition || plan.ReplayTo != d.StopPosition || len(plan.Snapshots) != 2 {
		t.Fatalf("plan %v, log stop %d", plan, d.StopPosition)
	}
	t.Logf("recording-log: %s", recordinglog.Format(l.Entries()))
	t.Logf("recovery-plan: %v", plan)

	mf, err := mem.Open("n/cluster/" + cluster.MarkFileName)
	if err != nil {
		t.Fatal(err)
	}
	defer mf.Close()
	b := make([]byte, 136)
	mf.ReadAt(b, 0)
	le := binary.LittleEndian
	if le.Uint16(b[0:]) != 128 || le.Uint16(b[2:]) != 200 || le.Uint16(b[4:]) != 110 || le.Uint16(b[6:]) != 2 ||
		le.Uint32(b[8:]) != 0x300 || le.Uint32(b[12:]) != 1 || int64(le.Uint64(b[16:])) != -1 {
		t.Fatalf("cluster-mark.dat header % x", b[:24])
	}
}
