package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/vfs"
)

func snapshotEntries(t *testing.T, fsys vfs.FS) []recordinglog.Entry {
	t.Helper()
	l, err := recordinglog.Open(fsys, "n/cluster", recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []recordinglog.Entry
	for _, e := range l.Entries() {
		if e.Type == recordinglog.TypeSnapshot {
			out = append(out, e)
		}
	}
	return out
}

// TestSnapshotTriggers takes snapshots every N bytes of log and every T of
// cluster time; each set is a service entry followed by the consensus
// module's, at one position.
func TestSnapshotTriggers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes int64
		every time.Duration
	}{{"bytes", 4096, 0}, {"time", 0, 50 * time.Microsecond}} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			f := newFixture(t, mem)
			f.opts.SnapshotEveryBytes = tc.bytes
			f.opts.SnapshotEvery = tc.every
			f.open()
			s, _ := f.node.Connect("aeron:ipc", 102)
			for i := uint64(1); i <= 300; i++ {
				f.node.Offer(s, msg(i, 0))
				f.work(1)
			}
			if err := f.node.AwaitSnapshot(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			st := f.node.Stats()
			f.close()
			es := snapshotEntries(t, mem)
			if st.Snapshots < 3 || len(es) != int(2*st.Snapshots) {
				t.Fatalf("%d snapshots, %d entries", st.Snapshots, len(es))
			}
			for i := 0; i < len(es); i += 2 {
				if es[i].ServiceID != 0 || es[i+1].ServiceID != -1 || es[i].LogPosition != es[i+1].LogPosition {
					t.Fatalf("set %d: %v %v", i/2, es[i], es[i+1])
				}
			}
			if tc.bytes > 0 {
				for i := 2; i < len(es); i += 2 {
					if d := es[i].LogPosition - es[i-2].LogPosition; d < tc.bytes || d > tc.bytes+1024 {
						t.Fatalf("snapshots %d bytes apart, want about %d", d, tc.bytes)
					}
				}
			}
			t.Logf("%d snapshots", st.Snapshots)
		})
	}
}

// TestRunStops runs the node's loop on a goroutine and stops it within a
// bounded time.
func TestRunStops(t *testing.T) {
	f := newFixture(t, vfs.NewMem())
	f.opts.Clock = nil
	f.open()
	s, _ := f.node.Connect("aeron:ipc", 102)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.node.Run(ctx, 100*time.Microsecond, time.Second) }()
	for i := uint64(1); i <= 50; i++ {
		if err := f.node.Offer(s, msg(i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	f.node.RequestSnapshot()
	deadline := time.Now().Add(5 * time.Second)
	for f.got.Load() < 50 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not stop")
	}
	if f.svc.msgs != 50 {
		t.Fatalf("%d messages applied", f.svc.msgs)
	}
	f.close()
}
