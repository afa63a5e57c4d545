package aeronhost

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A directory with a cnc.dat no driver wrote (empty, or of an unknown
// version) fails as fast.
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
		if err == nil || !strings.Contains(err.Error(), "cnc.dat") {
			t.Fatalf("cnc.dat of %d bytes: %v", size, err)
		}
	}
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
