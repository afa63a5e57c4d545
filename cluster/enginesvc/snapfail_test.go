package enginesvc_test

import (
	"strings"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

// TestBadLatestSnapshotStopsStart damages the latest snapshot set in each
// way (recording missing, cut short, corrupted, service entry invalid) and
// checks that the start fails naming the snapshot and the fall back, and
// that after invalidate-latest-snapshot the node starts from the previous
// set and replays to the same state.
func TestBadLatestSnapshotStopsStart(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, mem *vfs.MemFS, svcRec, cmRec int64)
	}{
		{"service recording missing", func(t *testing.T, mem *vfs.MemFS, svcRec, _ int64) {
			if err := mem.Remove("node/archive/" + archive.SegmentFileName(svcRec, 0)); err != nil {
				t.Fatal(err)
			}
		}},
		{"service recording cut short", func(t *testing.T, mem *vfs.MemFS, svcRec, _ int64) {
			if err := mem.CutFile("node/archive/"+archive.SegmentFileName(svcRec, 0), 1024); err != nil {
				t.Fatal(err)
			}
		}},
		{"service recording corrupt", func(t *testing.T, mem *vfs.MemFS, svcRec, _ int64) {
			f, err := mem.OpenRW("node/archive/" + archive.SegmentFileName(svcRec, 0))
			if err != nil {
				t.Fatal(err)
			}
			// Flip a byte inside the payload of the 6th data frame (engine
			// data, past the container's markers and sessions).
			size, _ := f.Size()
			var off int64 = -1
			frames := 0
			archive.ScanSegment(f, size, archive.SegmentParams{TermLength: 64 * 1024, SegmentLength: 128 * 1024, StreamID: 106},
				func(fr archive.Frame) error {
					if fr.Header.Type == archive.FrameTypeData {
						frames++
						if frames == 6 {
							off = fr.Offset + 32 + 12
						}
					}
					return nil
				})
			if off < 0 {
				t.Fatal("no 6th frame")
			}
			b := make([]byte, 1)
			f.ReadAt(b, off)
			b[0] ^= 0x5a
			f.WriteAt(b, off)
			f.Close()
		}},
		{"consensus-module recording corrupt", func(t *testing.T, mem *vfs.MemFS, _, cmRec int64) {
			f, err := mem.OpenRW("node/archive/" + archive.SegmentFileName(cmRec, 0))
			if err != nil {
				t.Fatal(err)
			}
			b := []byte{0xff}
			f.WriteAt(b, 32+2) // template id of the BEGIN marker
			f.Close()
		}},
		{"service entry invalid", func(t *testing.T, mem *vfs.MemFS, _, _ int64) {
			l, err := recordinglog.Open(mem, "node/cluster", recordinglog.Options{SyncLevel: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			svc, _ := l.LatestSnapshot(0)
			if err := l.InvalidateEntry(svc.Index); err != nil {
				t.Fatal(err)
			}
		}},
	}
	cmds, hashes := stream(11, 1200, true)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewMem()
			h := newHarness(t, mem, cluster.Pauseless, 1)
			h.mustOpen()
			for i, cut := range []int{400, 800} {
				if err := h.submit(cmds[i*400 : cut]); err != nil {
					t.Fatal(err)
				}
				h.node.RequestSnapshot()
				if err := h.drain(); err != nil {
					t.Fatal(err)
				}
				if err := h.node.AwaitSnapshot(10e9); err != nil {
					t.Fatal(err)
				}
			}
			if err := h.submit(cmds[800:]); err != nil {
				t.Fatal(err)
			}
			if err := h.close(); err != nil {
				t.Fatal(err)
			}
			l, err := recordinglog.Open(mem, "node/cluster", recordinglog.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			svc, _ := l.LatestSnapshot(0)
			cm, _ := l.LatestSnapshot(-1)
			l.Close()
			c.damage(t, mem, svc.RecordingID, cm.RecordingID)

			err = h.open()
			if err == nil {
				h.close()
				t.Fatal("start succeeded from a damaged snapshot set")
			}
			msg := err.Error()
			if !strings.Contains(msg, "invalidate-latest-snapshot") {
				t.Fatalf("error does not say how to fall back: %v", err)
			}
			t.Logf("refused: %v", err)

			l, err = recordinglog.Open(mem, "node/cluster", recordinglog.Options{SyncLevel: 1})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := l.InvalidateLatestSnapshot(); err != nil || !ok {
				t.Fatalf("invalidate-latest-snapshot: %v %v", ok, err)
			}
			l.Close()
			h.mustOpen()
			if got := h.svc.Engine().StateHash(); got != hashes[len(cmds)] {
				t.Fatalf("hash after fall back %x, want %x", got, hashes[len(cmds)])
			}
			if r := h.node.Stats().Replayed; r < 800 {
				t.Fatalf("replayed %d entries from the previous set, want >= 800", r)
			}
			if err := h.close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
