package demo_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchlog/matchlog/cmd/matchlog/internal/demo"
	"github.com/matchlog/matchlog/server"
)

// burnCPU spins one goroutine per CPU, each locked to its OS thread, until
// the returned stop is called or limit passes, whichever comes first.
func burnCPU(t *testing.T, limit time.Duration) (stop func()) {
	t.Helper()
	var done atomic.Bool
	var wg sync.WaitGroup
	deadline := time.Now().Add(limit)
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := uint64(1)
			for i := 0; !done.Load(); i++ {
				for range 1 << 12 {
					x = x*6364136223846793005 + 1442695040888963407
				}
				if i&63 == 0 && time.Now().After(deadline) {
					break
				}
			}
			_ = x
		}()
	}
	var once sync.Once
	stop = func() { once.Do(func() { done.Store(true); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// TestDemoUnderLoad runs a small demo while every CPU spins, against a
// node whose egress queue is 24 KiB: with the former fixed window (8,192
// orders in flight, about 1 MiB of events) the node dropped the preload
// client as a slow consumer; the window derived from the queue keeps the
// outstanding events within it, so the run completes.
func TestDemoUnderLoad(t *testing.T) {
	const queue = 24 << 10
	opts := demo.Options{Orders: 20_000, Instruments: 3, Rate: 1000, Baseline: 200 * time.Millisecond,
		Gap: 200 * time.Millisecond, Settle: 50 * time.Millisecond, WriteQueueBytes: queue,
		Dir: filepath.Join(t.TempDir(), "node")}
	if testing.Short() {
		opts.Orders = 8_000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	stop := burnCPU(t, time.Minute)
	rep, err := demo.Run(ctx, opts)
	stop()
	if err != nil {
		t.Fatalf("demo under load with a %d-byte egress queue: %v", queue, err)
	}
	if rep.EgressQueueBytes != queue || rep.PreloadWindow < 1 || rep.ProbeWindow < 1 {
		t.Fatalf("egress queue %d, windows %d and %d", rep.EgressQueueBytes, rep.PreloadWindow, rep.ProbeWindow)
	}
	if rep.RestingOrders != opts.Orders || rep.ProbesLost != 0 || !rep.StateHashEqual {
		t.Fatalf("%d resting orders of %d, %d probes lost, state hash equal %v", rep.RestingOrders, opts.Orders, rep.ProbesLost, rep.StateHashEqual)
	}
}

// TestDemoWindowBound: the default window is derived from the node's
// egress queue (half of it holds the events of the orders in flight), and
// a window that could overflow the queue is refused before anything runs.
func TestDemoWindowBound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := demo.Run(ctx, demo.Options{Orders: 100, Rate: 500, Baseline: 50 * time.Millisecond, Gap: 50 * time.Millisecond,
		Settle: 20 * time.Millisecond, Dir: filepath.Join(t.TempDir(), "node")})
	if err != nil {
		t.Fatal(err)
	}
	if rep.EgressQueueBytes != server.DefaultWriteQueueBytes {
		t.Fatalf("egress queue %d, want the server's default %d", rep.EgressQueueBytes, server.DefaultWriteQueueBytes)
	}
	// Three events of 40-odd framed bytes each per preload order.
	perOrder := float64(rep.EgressQueueBytes/2) / float64(rep.PreloadWindow)
	if perOrder < 100 || perOrder > 200 {
		t.Fatalf("preload window %d for a %d-byte queue: %.0f bytes per order", rep.PreloadWindow, rep.EgressQueueBytes, perOrder)
	}
	_, err = demo.Run(ctx, demo.Options{Orders: 100, Window: 8192, WriteQueueBytes: 64 << 10, Dir: filepath.Join(t.TempDir(), "node2")})
	if err == nil || !strings.Contains(err.Error(), "overflow the node's egress queue") {
		t.Fatalf("window 8192 with a 64 KiB egress queue: %v", err)
	}
}
