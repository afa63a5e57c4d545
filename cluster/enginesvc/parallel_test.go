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

// aheadCapturePub is a capturePub that also holds claims ahead
// (cluster.AheadPublication): a claim's bytes become a frame when it is
// committed, and commits come in claim order.
type aheadCapturePub struct {
	capturePub
	ahead   [][]byte
	claimed int // claims ahead made
}

func (p *aheadCapturePub) ClaimAhead(n int) ([]byte, int64, int, error) {
	p.ahead = append(p.ahead, make([]byte, n))
	p.claimed++
	return p.ahead[len(p.ahead)-1], int64(len(p.frames) + len(p.ahead)), len(p.ahead) - 1, nil
}
func (p *aheadCapturePub) CommitAhead(t int) { p.frames = append(p.frames, p.ahead[t]); p.doneAhead(t) }
func (p *aheadCapturePub) AbortAhead(t int)  { p.doneAhead(t) }
func (p *aheadCapturePub) doneAhead(t int) {
	if t == len(p.ahead)-1 {
		p.ahead = p.ahead[:0]
	}
}
func (p *aheadCapturePub) Window() int { return 1 << 20 }

var _ cluster.AheadPublication = (*aheadCapturePub)(nil)

// TestStopTheWorldParallelTake: with Workers, OnTakeSnapshot (the
// stop-the-world take, the only one on an Aeron host) encodes with the
// workers and writes the linear take's bytes, into claims made ahead
// where the publication holds them and by copying where it does not.
func TestStopTheWorldParallelTake(t *testing.T) {
	for _, ahead := range []bool{true, false} {
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
		var a capturePub
		var b aheadCapturePub
		var pub cluster.Publication = &b.capturePub
		if ahead {
			pub = &b
		}
		if err := linear.OnTakeSnapshot(info, &a, nil); err != nil {
			t.Fatal(err)
		}
		if err := par.OnTakeSnapshot(info, pub, nil); err != nil {
			t.Fatal(err)
		}
		par.OnTerminate(nil)
		if par.ParallelTakes != 1 || linear.ParallelTakes != 0 {
			t.Fatalf("parallel takes: %d with workers, %d without", par.ParallelTakes, linear.ParallelTakes)
		}
		if ahead != (b.claimed > 0) {
			t.Fatalf("claims ahead %v: %d made", ahead, b.claimed)
		}
		if len(a.frames) < 10 || len(a.frames) != len(b.frames) {
			t.Fatalf("claims ahead %v: %d frames linear, %d with workers", ahead, len(a.frames), len(b.frames))
		}
		for i := range a.frames {
			if !bytes.Equal(a.frames[i], b.frames[i]) {
				t.Fatalf("claims ahead %v: frame %d differs", ahead, i)
			}
		}
		t.Logf("claims ahead %v: %d frames, %d resting orders, byte-identical", ahead, len(a.frames), par.Engine().Clone().Orders())
	}
}
