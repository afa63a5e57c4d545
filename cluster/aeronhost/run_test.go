package aeronhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lirm/aeron-go/aeron/idlestrategy"
	acluster "github.com/lirm/aeron-go/cluster"
	"github.com/matchlog/matchlog/cluster/enginesvc"
)

func TestRunWithoutMediaDriver(t *testing.T) {
	dir := t.TempDir()
	copts := acluster.NewOptions()
	copts.ClusterDir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	err := Run(ctx, Options{AeronDir: dir, Container: copts, MediaDriverTimeout: time.Second},
		enginesvc.New(enginesvc.Options{}))
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Run without a media driver: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Run took %v to fail", d)
	}
	t.Log(err)
}

// A cnc.dat no driver finished writing (empty, or all zero: version 0) is
// a driver still starting: Run waits for it up to the media driver
// timeout, then fails naming the file and why. One of a version aeron-go
// does not read fails at once.
func TestRunWithBadCnC(t *testing.T) {
	for _, size := range []int{0, 8192} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "cnc.dat"), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
		copts := acluster.NewOptions()
		copts.ClusterDir = t.TempDir()
		err := Run(context.Background(), Options{AeronDir: dir, Container: copts, MediaDriverTimeout: time.Second},
			enginesvc.New(enginesvc.Options{}))
		if err == nil || !strings.Contains(err.Error(), "cnc.dat") || !strings.Contains(err.Error(), "no media driver became ready") {
			t.Fatalf("cnc.dat of %d bytes: %v", size, err)
		}
		t.Log(err)
	}
	dir := t.TempDir()
	d := startFakeDriver(t, dir)
	d.put32(0, 7)
	copts := acluster.NewOptions()
	copts.ClusterDir = t.TempDir()
	err := Run(context.Background(), Options{AeronDir: dir, Container: copts, MediaDriverTimeout: time.Minute},
		enginesvc.New(enginesvc.Options{}))
	if err == nil || !strings.Contains(err.Error(), "version=7") {
		t.Fatalf("cnc.dat of version 7: %v", err)
	}
}

// Run gets past a driver that starts after it: its error is then the
// container's (the fake driver answers no command), not the cnc.dat's.
func TestRunWithStartingDriver(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cnc.dat"), make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(300 * time.Millisecond); startFakeDriver(t, dir) }()
	copts := acluster.NewOptions()
	copts.ClusterDir = t.TempDir()
	err := Run(context.Background(), Options{AeronDir: dir, Container: copts, MediaDriverTimeout: 2 * time.Second},
		enginesvc.New(enginesvc.Options{}))
	if err == nil || !strings.Contains(err.Error(), "starting the clustered service container") || strings.Contains(err.Error(), "version") {
		t.Fatalf("Run: %v", err)
	}
	t.Log(err)
}

func TestRunArguments(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, Options{AeronDir: t.TempDir()}, enginesvc.New(enginesvc.Options{})); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}
	if err := Run(context.Background(), Options{AeronDir: t.TempDir()}, nil); err == nil {
		t.Fatal("nil service accepted")
	}
	copts := acluster.NewOptions()
	copts.ArchiveOptions = nil
	if err := Run(context.Background(), Options{Container: copts}, enginesvc.New(enginesvc.Options{})); err == nil {
		t.Fatal("container options without archive options accepted")
	}
}

// The archive client's idle defaults to DefaultArchiveIdle (aeron-go's
// 50 ms sleep paces every step of each snapshot's archive connection);
// one set in Options or in the container's archive options is kept, and
// the caller's options are not changed.
func TestContainerOptionsArchiveIdle(t *testing.T) {
	copts := acluster.NewOptions()
	got, err := containerOptions(Options{Container: copts, AppVersion: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got.ArchiveOptions.IdleStrategy != DefaultArchiveIdle || got.AppVersion != 7 {
		t.Fatalf("archive idle %#v, app version %d", got.ArchiveOptions.IdleStrategy, got.AppVersion)
	}
	if !isAeronGoArchiveIdle(copts.ArchiveOptions.IdleStrategy) || copts.AppVersion != 0 {
		t.Fatalf("caller's options changed: %#v", copts.ArchiveOptions.IdleStrategy)
	}
	if got, _ := containerOptions(Options{}); got.ArchiveOptions.IdleStrategy != DefaultArchiveIdle {
		t.Fatalf("nil Container: archive idle %#v", got.ArchiveOptions.IdleStrategy)
	}
	mine := idlestrategy.Sleeping{SleepFor: 3 * time.Millisecond}
	if got, _ := containerOptions(Options{Container: copts, ArchiveIdleStrategy: mine}); got.ArchiveOptions.IdleStrategy != mine {
		t.Fatalf("Options.ArchiveIdleStrategy not used: %#v", got.ArchiveOptions.IdleStrategy)
	}
	own := *copts
	arch := *copts.ArchiveOptions
	arch.IdleStrategy = idlestrategy.Yielding{}
	own.ArchiveOptions = &arch
	if got, _ := containerOptions(Options{Container: &own}); got.ArchiveOptions.IdleStrategy != (idlestrategy.Yielding{}) {
		t.Fatalf("the container's own archive idle not kept: %#v", got.ArchiveOptions.IdleStrategy)
	}
}
