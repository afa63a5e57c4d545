package cluster_test

import (
	"path/filepath"
	"testing"

	"github.com/matchlog/matchlog/archive"
	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/internal/fixtures"
	"github.com/matchlog/matchlog/internal/vfs"
)

// countingCatalog counts the decodes of the whole catalog.
type countingCatalog struct {
	*archive.Catalog
	decodes int
}

func (c *countingCatalog) Entries() []archive.CatalogEntry {
	c.decodes++
	return c.Catalog.Entries()
}

// TestCheckPlanDecodesCatalogOnce: a recovery-plan check decodes the
// catalog once, however many recordings it looks up. The catalog keeps an
// entry for every recording ever made, deleted ones too, so a check that
// decoded it per lookup cost O(recordings²) at every start of a long-lived
// node (the kill -9 test with retention: 38% of an open after 400 rounds).
func TestCheckPlanDecodesCatalogOnce(t *testing.T) {
	dir := filepath.Join(fixtures.AeronThreeMembers(t), "member-0")
	cat, err := archive.OpenCatalogFile(vfs.Default, filepath.Join(dir, cluster.ArchiveDirName), archive.CatalogOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	rl, err := recordinglog.Open(vfs.Default, filepath.Join(dir, cluster.ClusterDirName), recordinglog.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	cc := &countingCatalog{Catalog: cat}
	plan, err := rl.CreateRecoveryPlan(cc, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Snapshots) < 2 || plan.Log == nil {
		t.Fatalf("the fixture's plan has %d snapshots and log %v: want a set and a log to look up", len(plan.Snapshots), plan.Log)
	}
	cc.decodes = 0
	issues, err := cluster.CheckPlan(vfs.Default, dir, cc, rl, plan)
	if err != nil || len(issues) > 0 {
		t.Fatalf("check: %v %v", issues, err)
	}
	if cc.decodes != 1 {
		t.Fatalf("the check decoded the whole catalog %d times for %d recordings; want once", cc.decodes, len(plan.Snapshots)+1)
	}
}
