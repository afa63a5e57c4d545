package enginesvc_test

import (
	"testing"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/internal/vfs"
)

func TestNodeBasic(t *testing.T) {
	cmds, hashes := stream(1, 2000, false)
	mem := vfs.NewMem()
	h := newHarness(t, mem, cluster.Pauseless, 1)
	h.mustOpen()
	if err := h.submit(cmds[:1000]); err != nil {
		t.Fatal(err)
	}
	h.node.RequestSnapshot()
	if err := h.drain(); err != nil {
		t.Fatal(err)
	}
	if err := h.node.AwaitSnapshot(10e9); err != nil {
		t.Fatal(err)
	}
	if err := h.submit(cmds[1000:]); err != nil {
		t.Fatal(err)
	}
	if got := h.svc.Engine().StateHash(); got != hashes[0] {
		t.Fatalf("live hash %x, want %x", got, hashes[0])
	}
	st := h.node.Stats()
	t.Logf("stats %+v", st)
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	h.mustOpen()
	if got := h.svc.Engine().StateHash(); got != hashes[0] {
		t.Fatalf("restarted hash %x, want %x", got, hashes[0])
	}
	t.Logf("after restart %+v", h.node.Stats())
	if err := h.close(); err != nil {
		t.Fatal(err)
	}
	logged, err := logCommands(t, mem)
	if err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(cmds) {
		t.Fatalf("log holds %d commands, want %d", len(logged), len(cmds))
	}
	if modelHash(logged) != hashes[0] {
		t.Fatal("model of the log differs")
	}
}
