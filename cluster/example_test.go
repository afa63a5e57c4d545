package cluster_test

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

// totalService adds up the 8-byte numbers its clients send and answers each
// with the running total. Its snapshot is the total, one message.
type totalService struct {
	c     cluster.Cluster
	total int64
}

func (s *totalService) OnStart(c cluster.Cluster, img cluster.SnapshotImage) error {
	s.c = c
	if img == nil {
		return nil // a first start
	}
	got := false
	img.Poll(func(buf []byte, off, n int, _ int64) {
		if n == 8 {
			s.total, got = int64(binary.LittleEndian.Uint64(buf[off:])), true
		}
	}, 1)
	if !got {
		return errors.New("totalService: no total in the snapshot")
	}
	return nil
}

func (s *totalService) OnSessionMessage(cs *cluster.ClientSession, _ int64, msg []byte, _ int64) error {
	if len(msg) != 8 {
		return nil // a deterministic service ignores what it cannot read
	}
	s.total += int64(binary.LittleEndian.Uint64(msg))
	s.c.Offer(cs.ID, binary.LittleEndian.AppendUint64(nil, uint64(s.total)))
	return nil
}

func (s *totalService) OnTakeSnapshot(_ cluster.SnapshotInfo, pub cluster.Publication, idle func() error) error {
	b := binary.LittleEndian.AppendUint64(nil, uint64(s.total))
	for {
		if pos, err := pub.Offer(b); err != nil || pos >= 0 {
			return err
		}
		if err := idle(); err != nil { // back-pressured: let the node work
			return err
		}
	}
}

func (s *totalService) OnSessionOpen(*cluster.ClientSession, int64) error { return nil }
func (s *totalService) OnSessionClose(*cluster.ClientSession, int64, cluster.CloseReason) error {
	return nil
}
func (s *totalService) OnTimerEvent(int64, int64) error   { return nil }
func (s *totalService) OnRoleChange(cluster.Role) error   { return nil }
func (s *totalService) OnTerminate(cluster.Cluster) error { return nil }

// A Go service embedded in a node: open a node directory, connect a
// session, send messages, run the duty cycle and read the events the node
// releases once their messages are durable; take a snapshot; then restart,
// which loads the snapshot and replays the log after it.
func Example() {
	fsys := vfs.NewMem() // vfs.Default and a real directory in production
	var clock int64
	open := func(svc *totalService) *cluster.Node {
		n, err := cluster.Open(cluster.Options{
			FS: fsys, Dir: "node", Service: svc,
			TermLength: 64 * 1024, SegmentLength: 128 * 1024,
			FileSyncLevel: 1, // egress is released once its message is synced
			Clock:         func() int64 { clock += 1000; return clock },
			Egress: func(session int64, msg []byte) {
				fmt.Println("session", session, "total", int64(binary.LittleEndian.Uint64(msg)))
			},
		})
		if err != nil {
			panic(err)
		}
		return n
	}
	run := func(n *cluster.Node) { // the duty cycle, until nothing is left to do
		for {
			if w, err := n.DoWork(); err != nil {
				panic(err)
			} else if w == 0 && n.Pending() == 0 && !n.SnapshotInProgress() {
				return
			}
		}
	}
	send := func(n *cluster.Node, session int64, v int64) {
		if err := n.Offer(session, binary.LittleEndian.AppendUint64(nil, uint64(v))); err != nil {
			panic(err)
		}
	}

	node := open(&totalService{})
	session, err := node.Connect("aeron:ipc", 102)
	if err != nil {
		panic(err)
	}
	send(node, session, 5)
	send(node, session, 7)
	run(node)
	node.RequestSnapshot() // the total, 12, at this log position
	run(node)
	send(node, session, 30) // after the snapshot: replayed from the log
	run(node)
	if err := node.Close(); err != nil {
		panic(err)
	}

	svc := &totalService{}
	node = open(svc) // snapshot loaded, the log after it replayed (egress dropped)
	fmt.Println("after restart: total", svc.total, "with", node.Recovery().ReplayedEntries, "log entries replayed")
	if err := node.Close(); err != nil {
		panic(err)
	}
	// Output:
	// session 1 total 5
	// session 1 total 12
	// session 1 total 42
	// after restart: total 42 with 1 log entries replayed
}
