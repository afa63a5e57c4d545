package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// backup create and drill on a node directory, and the planner reading
// the backup under model B.
func TestBackupCLI(t *testing.T) {
	dir, _, hash := buildNodeDir(t)
	bdir := filepath.Join(t.TempDir(), "bk")
	code, out, errb := runCLI(t, "backup", "create", "--from", dir, "--to", bdir, "--json")
	var m struct {
		StateHash string `json:"state_hash"`
		Verified  bool   `json:"verified"`
		S, B      int64
	}
	if err := json.Unmarshal([]byte(out), &m); code != 0 || err != nil || !m.Verified || m.StateHash != hash {
		t.Fatalf("create: exit %d, %v, stderr %q, state hash %s want %s\n%s", code, err, errb, m.StateHash, hash, out)
	}
	if code, _, errb := runCLI(t, "backup", "create", "--from", dir, "--to", bdir); code != 1 || !strings.Contains(errb, "not empty") {
		t.Errorf("create into a backup: exit %d, %q", code, errb)
	}
	if code, _, errb := runCLI(t, "backup", "create", "--to", bdir); code != 2 || !strings.Contains(errb, "--from is required") {
		t.Errorf("create without --from: exit %d, %q", code, errb)
	}
	code, out, errb = runCLI(t, "backup", "drill", "--backup", bdir, "--json")
	var d struct {
		OK        bool   `json:"ok"`
		StateHash string `json:"state_hash"`
		Replayed  int64  `json:"replayed_positions"`
	}
	if err := json.Unmarshal([]byte(out), &d); code != 0 || err != nil || !d.OK || d.StateHash != hash || d.Replayed != m.B-m.S {
		t.Fatalf("drill: exit %d, %v, stderr %q\n%s", code, err, errb, out)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(bdir), ".bk.drill-*"))
	if len(left) != 0 {
		t.Errorf("the drill's default work directory is left: %v", left)
	}
	code, out, errb = runCLI(t, "backup", "drill", "--backup", bdir)
	if code != 0 || !strings.Contains(out, "PASSED") || !strings.Contains(out, "positions/s") {
		t.Errorf("drill text: exit %d, %q, %q", code, out, errb)
	}
	plan := func(extra ...string) (int, planOne) {
		t.Helper()
		args := append([]string{"retention", "plan", "--model", "B", "--json", "--member", "0=" + dir}, extra...)
		code, out, errb := runCLI(t, args...)
		var p planOne
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("plan %q: exit %d, %v, stderr %q\n%s", extra, code, err, errb, out)
		}
		return code, p
	}
	if code, p := plan("--backup", bdir); code != 0 || !p.Approved || p.Manifest.BackupPosition != m.B || p.Manifest.LastDrill == "" {
		t.Errorf("model B with a drilled backup: exit %d, %+v", code, p)
	}
	if code, p := plan("--backup", bdir, "--max-drill-age", "1ns"); code != 1 || len(p.Refusals) != 1 || p.Refusals[0].Rule != "model-b-drill-stale" {
		t.Errorf("model B with a stale drill: exit %d, %+v", code, p.Refusals)
	}
	empty := t.TempDir()
	if code, p := plan("--backup", empty); code != 1 || len(p.Refusals) != 1 || p.Refusals[0].Rule != "model-b-without-backup" {
		t.Errorf("model B with an empty backup directory: exit %d, %+v", code, p.Refusals)
	}
	// A drill that fails exits 1 and is recorded.
	rlog := filepath.Join(bdir, "cluster", "recording.log")
	b, err := os.ReadFile(rlog)
	if err != nil {
		t.Fatal(err)
	}
	b[10] ^= 1 // same size: only the drill's digests see it
	if err := os.WriteFile(rlog, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, _ := runCLI(t, "backup", "drill", "--backup", bdir); code != 1 || !strings.Contains(out, "FAILED") {
		t.Errorf("drill of a damaged image: exit %d, %q", code, out)
	}
	if code, p := plan("--backup", bdir); code != 1 || len(p.Refusals) != 1 || p.Refusals[0].Rule != "model-b-drill-failed" {
		t.Errorf("model B after a failed drill: exit %d, %+v", code, p.Refusals)
	}
}

type planOne struct {
	Approved bool `json:"approved"`
	Manifest struct {
		BackupPosition int64  `json:"backup_position"`
		LastDrill      string `json:"last_restore_drill"`
	} `json:"manifest"`
	Refusals []struct {
		Rule string `json:"rule"`
	} `json:"refusals"`
}
