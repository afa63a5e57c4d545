package cluster_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// mtuService is bulkService (a snapshot of 300 messages of 1,000 bytes
// before its state) with a pauseless path, recording the longest claim
// each snapshot's publication allowed.
type mtuService struct {
	bulkService
	maxPayload []int
}

func (s *mtuService) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	s.maxPayload = append(s.maxPayload, pub.MaxPayloadLength())
	return s.bulkService.OnTakeSnapshot(info, pub, idle)
}

type frozenBulk struct{ s *mtuService }

func (f frozenBulk) Write(pub cluster.Publication, idle func() error) error {
	return f.s.OnTakeSnapshot(cluster.SnapshotInfo{}, pub, idle)
}

func (s *mtuService) PrepareSnapshot(cluster.SnapshotInfo) (cluster.SnapshotTask, error) {
	return frozenBulk{s}, nil
}

// TestSnapshotMTU: a stop-the-world service snapshot is written at
// Options.SnapshotMTU (by default the largest its term allows, at most
// 65,504), its recording's descriptor says so (MTU and original channel,
// as Aeron's does for a snapshot channel with mtu set; the stripped
// channel without it); pauseless snapshots and the consensus module's
// keep the log's MTU. Every snapshot restores.
func TestSnapshotMTU(t *testing.T) {
	for _, tc := range []struct {
		name                string
		termLength, snapMTU int
		wantStop            int
	}{
		{name: "default, 64 KiB terms", termLength: 64 << 10, wantStop: 8192},
		{name: "default, 1 MiB terms", termLength: 1 << 20, wantStop: 65504},
		{name: "set", termLength: 1 << 20, snapMTU: 4096, wantStop: 4096},
		{name: "set to the log's", termLength: 1 << 20, snapMTU: 1408, wantStop: 1408},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			f := newFixture(t, mem)
			o := f.opts
			o.TermLength, o.SegmentLength, o.SnapshotMTU = tc.termLength, 4<<20, tc.snapMTU
			svc := &mtuService{bulkService: bulkService{timerService: timerService{delay: 20_000}}}
			o.Service = svc
			n, err := cluster.Open(o)
			if err != nil {
				t.Fatal(err)
			}
			snapshotsInModes(t, n, cluster.Pauseless, cluster.StopTheWorld)
			hash := svc.hash
			if err := n.Close(); err != nil {
				t.Fatal(err)
			}
			if want := []int{1408 - 32, tc.wantStop - 32}; len(svc.maxPayload) != 2 || svc.maxPayload[0] != want[0] || svc.maxPayload[1] != want[1] {
				t.Fatalf("claims of at most %v bytes (pauseless, stop-the-world), want %v", svc.maxPayload, want)
			}

			cat, err := archive.OpenCatalogFile(mem, "n/archive", archive.CatalogOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			snaps := snapshotEntries(t, mem)
			if len(snaps) != 4 {
				t.Fatalf("%d SNAPSHOT entries, want 4", len(snaps))
			}
			for i, e := range snaps {
				d, err := cat.Descriptor(e.RecordingID)
				if err != nil {
					t.Fatalf("snapshot %d: recording %d: %v", i, e.RecordingID, err)
				}
				mtu, original := 1408, cluster.SnapshotChannel
				if i == 2 { // the second set's service snapshot: stop-the-world
					mtu = tc.wantStop
					if mtu != 1408 {
						original += "|mtu=" + strconv.Itoa(mtu)
					}
				}
				if int(d.MTULength) != mtu || d.OriginalChannel != original || d.StrippedChannel != cluster.SnapshotChannel {
					t.Fatalf("snapshot %d (service %d): MTU %d, original channel %q, stripped %q; want %d, %q, %q",
						i, e.ServiceID, d.MTULength, d.OriginalChannel, d.StrippedChannel, mtu, original, cluster.SnapshotChannel)
				}
				if mtu > 1408 && d.StopPosition-d.StartPosition < int64(2*mtu) {
					t.Fatalf("snapshot %d: %d bytes, not several frames of %d", i, d.StopPosition-d.StartPosition, mtu)
				}
			}
			cat.Close()

			// Restart from the latest set, the stop-the-world one.
			svc2 := &mtuService{bulkService: bulkService{timerService: timerService{delay: 20_000}}}
			o.Service = svc2
			n2, err := cluster.Open(o)
			if err != nil {
				t.Fatal(err)
			}
			if svc2.hash != hash || svc2.fills != bulkMsgs {
				t.Fatalf("restored hash %x (%d bulk messages checked), want %x (%d)", svc2.hash, svc2.fills, hash, bulkMsgs)
			}
			n2.Close()
		})
	}
}

// TestSnapshotMTURefused: an Options.SnapshotMTU that is not an MTU, or
// that the stop-the-world snapshot's term cannot hold, fails Open before
// it writes anything, naming the option and the fix.
func TestSnapshotMTURefused(t *testing.T) {
	for _, tc := range []struct {
		termLength, snapTerm, snapMTU int
		want                          string
	}{
		{64 << 10, 0, 1000, "Options.SnapshotMTU"},
		{64 << 10, 0, 65536, "Options.SnapshotMTU"},
		{64 << 10, 0, 65504, "lower SnapshotMTU or raise SnapshotTermLength"},
		{1 << 20, 256 << 10, 65504, "lower SnapshotMTU or raise SnapshotTermLength"},
	} {
		mem := vfs.NewMem()
		f := newFixture(t, mem)
		o := f.opts
		o.TermLength, o.SnapshotTermLength, o.SnapshotMTU = tc.termLength, tc.snapTerm, tc.snapMTU
		o.Service = &timerService{delay: 20_000}
		n, err := cluster.Open(o)
		if err == nil {
			n.Close()
			t.Fatalf("SnapshotMTU %d with terms of %d/%d: opened", tc.snapMTU, tc.termLength, tc.snapTerm)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("SnapshotMTU %d: error %q, want it to say %q", tc.snapMTU, err, tc.want)
		}
		if _, err := mem.List("n"); err == nil {
			t.Fatalf("SnapshotMTU %d: a refused Open created the node directory", tc.snapMTU)
		}
	}
}
