package aeronhost

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lirm/aeron-go/aeron/idlestrategy"
	"github.com/lirm/aeron-go/cluster/codecs"
)

// idlerCluster is a fakeCluster whose idle strategy is the host's, as
// aeron-go's agent's is.
type idlerCluster struct {
	*fakeCluster
	idler idlestrategy.Idler
}

func (c *idlerCluster) IdleStrategy() idlestrategy.Idler { return c.idler }

// fakeAgent plays aeron-go's agent: OnStart waits (idling) for the
// consensus module, then starts the service; each DoWork runs one step.
type fakeAgent struct {
	a        *Adapter
	c        *idlerCluster
	cmReady  atomic.Bool // the consensus module's counters are there
	steps    []func()
	acked    []string // what the container acknowledged
	panicMsg string
}

func (f *fakeAgent) OnStart() error {
	for !f.cmReady.Load() {
		f.c.idler.Idle(0)
	}
	f.a.OnStart(f.c, nil)
	f.acked = append(f.acked, "start")
	return nil
}

func (f *fakeAgent) DoWork() int {
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	if len(f.steps) == 0 {
		return 0
	}
	s := f.steps[0]
	f.steps = f.steps[1:]
	s()
	return 1
}

func newRunFixture(svc *recSvc) (*Adapter, *fakeAgent, *stopIdler) {
	a := New(svc, Options{})
	idler := &stopIdler{inner: idlestrategy.Sleeping{SleepFor: 100 * time.Microsecond}, a: a}
	f := &fakeAgent{a: a, c: &idlerCluster{fakeCluster: newFakeCluster(), idler: idler}}
	return a, f, idler
}

func TestRunAgentStopsWaitingContainer(t *testing.T) {
	svc := &recSvc{}
	a, f, idler := newRunFixture(svc)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	err := a.runAgent(ctx, f, idler, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("runAgent: %v", err)
	}
	if len(svc.calls) != 0 || len(f.acked) != 0 {
		t.Fatalf("calls %v, acked %v before the consensus module was there", svc.calls, f.acked)
	}
}

func TestRunAgentTerminates(t *testing.T) {
	svc := &recSvc{}
	a, f, idler := newRunFixture(svc)
	f.cmReady.Store(true)
	s := &fakeSession{id: 1}
	f.steps = []func(){
		func() { a.OnSessionOpen(s, 1) },
		func() { a.OnTimerEvent(5, 6) },
		func() { a.OnTerminate(f.c); f.acked = append(f.acked, "terminate") },
	}
	if err := a.runAgent(context.Background(), f, idler, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(svc.calls, ",") != "start,open,timer,terminate" || strings.Join(f.acked, ",") != "start,terminate" {
		t.Fatalf("calls %v, acked %v", svc.calls, f.acked)
	}
}

func TestRunAgentFailureAcknowledgesNothing(t *testing.T) {
	svc := &recSvc{failOn: "snapshot"}
	a, f, idler := newRunFixture(svc)
	f.cmReady.Store(true)
	f.steps = []func(){
		func() { a.OnNewLeadershipTermEvent(1, 0, 0, 0, 0, 0, codecs.ClusterTimeUnit.NANOS, 0) },
		func() {
			a.takeSnapshot(newFakePub())
			f.acked = append(f.acked, "snapshot") // aeron-go acks after OnTakeSnapshot returns
		},
		func() { a.OnTimerEvent(1, 1) },
	}
	err := a.runAgent(context.Background(), f, idler, nil)
	if err == nil || !strings.Contains(err.Error(), "snapshot failed") {
		t.Fatalf("runAgent: %v", err)
	}
	if strings.Join(f.acked, ",") != "start" {
		t.Fatalf("acked %v after a failed snapshot", f.acked)
	}
	if strings.Join(svc.calls, ",") != "start,snapshot,terminate" {
		t.Fatalf("calls %v", svc.calls)
	}
}

func TestRunAgentRecoversContainerPanic(t *testing.T) {
	svc := &recSvc{}
	a, f, idler := newRunFixture(svc)
	f.cmReady.Store(true)
	f.panicMsg = "offer failed, result=-1"
	err := a.runAgent(context.Background(), f, idler, nil)
	if err == nil || !strings.Contains(err.Error(), "offer failed") {
		t.Fatalf("runAgent: %v", err)
	}
	if svc.calls[len(svc.calls)-1] != "terminate" {
		t.Fatalf("calls %v: the service was not terminated", svc.calls)
	}
}

func TestRunAgentStopsLongServiceWork(t *testing.T) {
	svc := &recSvc{}
	a, f, idler := newRunFixture(svc)
	f.cmReady.Store(true)
	var idleErr error
	f.steps = []func(){func() {
		a.call("work", func() error {
			for {
				if idleErr = svc.c.Idle(); idleErr != nil {
					return idleErr
				}
			}
		})
	}}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	err := a.runAgent(ctx, f, idler, nil)
	if !errors.Is(idleErr, ErrStopped) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Idle: %v, runAgent: %v", idleErr, err)
	}
}
