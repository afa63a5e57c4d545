package cluster_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// bulkService is timerService with a snapshot of several terms: before its
// state, bulkMsgs messages of bulkLen bytes derived from the state, which
// OnStart checks byte for byte.
type bulkService struct {
	timerService
	fills int // bulk messages checked by OnStart
}

const bulkMsgs, bulkLen = 300, 1000

func bulkFill(b []byte, hash uint64, i int) {
	x := hash ^ uint64(i)*0x9E3779B97F4A7C15
	for j := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[j] = byte(x)
	}
}

func (s *bulkService) OnTakeSnapshot(info cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	b := make([]byte, bulkLen)
	for i := range bulkMsgs {
		bulkFill(b, s.hash, i)
		for {
			pos, err := pub.Offer(b)
			if err != nil {
				return err
			}
			if pos >= 0 {
				break
			}
			if err := idle(); err != nil {
				return err
			}
		}
	}
	return s.timerService.OnTakeSnapshot(info, pub, idle)
}

func (s *bulkService) OnStart(c cluster.Cluster, img cluster.SnapshotImage) error {
	s.c = c
	if img == nil {
		return nil
	}
	var bulk [][]byte
	got := false
	var perr error
	// The state is the service's last message: poll up to it.
	for !got && perr == nil {
		if img.Poll(func(buf []byte, off, n int, _ int64) {
			switch n {
			case bulkLen:
				bulk = append(bulk, append([]byte(nil), buf[off:off+n]...))
			case 32:
				s.setState(buf[off : off+n])
				got = true
			default:
				perr = fmt.Errorf("bulkService: a %d-byte message in the snapshot", n)
			}
		}, 1) == 0 {
			break
		}
	}
	if perr != nil {
		return perr
	}
	if !got || len(bulk) != bulkMsgs {
		return fmt.Errorf("bulkService: state %v, %d bulk messages", got, len(bulk))
	}
	want := make([]byte, bulkLen)
	for i, b := range bulk {
		bulkFill(want, s.hash, i)
		if string(b) != string(want) {
			return errors.New("bulkService: a bulk message differs from what its state gives")
		}
		s.fills++
	}
	return nil
}

// TestSnapshotLogsRecycled: a node writes each stop-the-world snapshot
// after the first through the log of the one before (recycled, each
// filling several of its terms), and every one of them restores the
// state it was taken at, byte for byte.
func TestSnapshotLogsRecycled(t *testing.T) {
	// Each snapshot set is two recordings, the service's (in terms of
	// Options.TermLength when the world stops) and the consensus module's
	// (64 KiB terms). With 128 KiB terms the two sets of a round need two
	// logs, and the second set recycles both; with 64 KiB terms the two
	// recordings share one log, recycled by all but the first.
	for _, c := range []struct{ term, recycled int }{{128 << 10, 2}, {64 << 10, 3}} {
		t.Run(fmt.Sprintf("term=%dKiB", c.term>>10), func(t *testing.T) { snapshotLogsRecycled(t, c.term, c.recycled) })
	}
}

func snapshotLogsRecycled(t *testing.T, term, recycled int) {
	mem := vfs.NewMem()
	f := newFixture(t, mem)
	o := f.opts
	o.SnapshotMode, o.TermLength = cluster.StopTheWorld, term
	snapshotRounds(t, f, o, 4, 2, func(round int, n *cluster.Node) {
		if got := cluster.SnapshotLogsRecycled(n); got != recycled {
			t.Fatalf("round %d: %d snapshot logs recycled, want %d", round, got, recycled)
		}
	})
}

// snapshotRounds opens a node of bulkServices rounds times on f's
// directory: each round checks that the restore gave the state the
// round before left, takes perRound snapshots, calls check and closes
// the node.
func snapshotRounds(t *testing.T, f *fixture, o cluster.Options, rounds, perRound int, check func(round int, n *cluster.Node)) {
	t.Helper()
	var hash uint64
	for round := range rounds {
		svc := &bulkService{timerService: timerService{delay: 1 << 40}}
		o.Service = svc
		n, err := cluster.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		if round > 0 && svc.fills != bulkMsgs {
			t.Fatalf("round %d: the restore checked %d bulk messages", round, svc.fills)
		}
		if round > 0 && (svc.hash != hash || svc.msgs != int64(perRound*round)) {
			t.Fatalf("round %d: restored hash %x and %d messages, want %x and %d", round, svc.hash, svc.msgs, hash, perRound*round)
		}
		f.node = n
		s, err := n.Connect("aeron:ipc", 102)
		if err != nil {
			t.Fatal(err)
		}
		for i := range perRound {
			n.Offer(s, msg(uint64(10*round+i+1), 0))
			f.work(4)
			n.RequestSnapshot()
			f.work(4)
			if err := n.AwaitSnapshot(5 * time.Second); err != nil {
				t.Fatal(err)
			}
		}
		check(round, n)
		hash = svc.hash
		if err := n.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSnapshotLogPrefaulted: a node faults a new snapshot log of 8 MiB or
// more in ahead of its writer, once (the snapshots after recycle it), and
// leaves smaller ones to their writer; the snapshots written through a
// prefaulted log restore the state they were taken at.
func TestSnapshotLogPrefaulted(t *testing.T) {
	// Stop-the-world service snapshots use the log's terms: 4 MiB gives a
	// 12 MiB log, 1 MiB a 3 MiB one. The consensus module's snapshots use
	// 64 KiB terms, never prefaulted.
	for _, c := range []struct{ term, prefaulted int }{{4 << 20, 1}, {1 << 20, 0}} {
		t.Run(fmt.Sprintf("term=%dMiB", c.term>>20), func(t *testing.T) {
			mem := vfs.NewMem()
			f := newFixture(t, mem)
			o := f.opts
			o.SnapshotMode, o.TermLength = cluster.StopTheWorld, c.term
			snapshotRounds(t, f, o, 2, 3, func(round int, n *cluster.Node) {
				if got := cluster.SnapshotLogsPrefaulted(n); got != c.prefaulted {
					t.Fatalf("round %d: %d snapshot logs prefaulted, want %d", round, got, c.prefaulted)
				}
			})
		})
	}
}
