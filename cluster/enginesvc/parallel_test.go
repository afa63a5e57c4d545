package enginesvc_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/snapshot"
)

// TestParallelOptionsChecked: the service's parallel-encoding options are
// checked by snapshot.Parallel when the node starts it, before any
// snapshot, with the error naming the field.
func TestParallelOptionsChecked(t *testing.T) {
	for _, c := range []struct {
		opts enginesvc.Options
		want string
	}{
		{enginesvc.Options{Workers: -1}, "parallel workers"},
		{enginesvc.Options{Workers: 2, ParallelMin: -1}, "parallel minimum"},
		{enginesvc.Options{Workers: 2, PartitionOrders: -5}, "partition of -5 orders"},
	} {
		err := enginesvc.New(c.opts).OnStart(nil, nil)
		if !errors.Is(err, snapshot.ErrPublish) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: OnStart = %v, want an error naming %q", c.opts, err, c.want)
		}
	}
}

// capturePub keeps what a snapshot take commits.
type capturePub struct {
	frames [][]byte
	claim  []byte
}

func (p *capturePub) TryClaim(n int) ([]byte, int64, error) {
	p.claim = make([]byte, n)
	return p.claim, int64(len(p.frames) + 1), nil
}
func (p *capturePub) Commit()               { p.frames = append(p.frames, p.claim); p.claim = nil }
func (p *capturePub) Abort()                { p.claim = nil }
func (p *capturePub) MaxPayloadLength() int { return 1408 - 32 }
func (p *capturePub) Offer(msg []byte) (int64, error) {
	p.frames = append(p.frames, append([]byte(nil), msg...))
	return int64(len(p.frames)), nil
}

// TestStopTheWorldParallelTake: with Workers, OnTakeSnapshot (the
// stop-the-world take, the only one on an Aeron host) encodes with the
// workers and writes the linear take's bytes.
func TestStopTheWorldParallelTake(t *testing.T) {
	linear := enginesvc.New(enginesvc.Options{})
	par := enginesvc.New(enginesvc.Options{Workers: 2, ParallelMin: 1, PartitionOrders: 16})
	g := enginetest.NewGen(7, enginetest.GenConfig{})
	var c engine.Command
	for range 5000 {
		g.Next(&c)
		g.Observe(linear.Engine().Apply(&c))
		par.Engine().Apply(&c)
	}
	if linear.Engine().StateHash() != par.Engine().StateHash() {
		t.Fatal("the two engines differ before the take")
	}
	info := cluster.SnapshotInfo{LogPosition: 4096, LeadershipTermID: 3, AppVersion: 1}
	var a, b capturePub
	if err := linear.OnTakeSnapshot(info, &a, nil); err != nil {
		t.Fatal(err)
	}
	if err := par.OnTakeSnapshot(info, &b, nil); err != nil {
		t.Fatal(err)
	}
	defer par.OnTerminate(nil)
	if par.ParallelTakes != 1 || linear.ParallelTakes != 0 {
		t.Fatalf("parallel takes: %d with workers, %d without", par.ParallelTakes, linear.ParallelTakes)
	}
	if len(a.frames) < 10 || len(a.frames) != len(b.frames) {
		t.Fatalf("%d frames linear, %d with workers", len(a.frames), len(b.frames))
	}
	for i := range a.frames {
		if !bytes.Equal(a.frames[i], b.frames[i]) {
			t.Fatalf("frame %d differs", i)
		}
	}
	t.Logf("%d frames, %d resting orders, byte-identical", len(a.frames), par.Engine().Clone().Orders())
}
