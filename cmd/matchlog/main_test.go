package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/snapshot/snaptest"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, "help")
	if code != 0 {
		t.Fatalf("help: exit %d", code)
	}
	for _, v := range verbs {
		if !strings.Contains(out, "\n  "+v.usage+" ") {
			t.Errorf("help does not list %q:\n%s", v.usage, out)
		}
	}
	for _, args := range [][]string{nil, {"frobnicate"}, {"engine"}, {"engine", "walk"}, {"engine", "run"},
		{"engine", "run", "--in"}, {"engine", "run", "--in", "x", "extra"}, {"difftest", "--commands", "0"},
		{"difftest", "--seed", "x"}} {
		if code, _, errb := runCLI(t, args...); code != 2 || errb == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errb)
		}
	}
	for _, args := range [][]string{{"-h"}, {"engine", "-h"}, {"engine", "run", "-h"}, {"difftest", "-h"}} {
		if code, _, _ := runCLI(t, args...); code != 0 {
			t.Errorf("%q: exit %d, want 0", args, code)
		}
	}
}

const scenarioFile = `{"cmd":"define_instrument","source":1,"seq":1,"time":1000,"instrument":1,"tick":1,"lot":1,"min_price":1,"max_price":1000000}
{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"account":7,"side":"buy","price":100,"qty":5}

{"cmd":"new_order","source":1,"seq":3,"time":1002,"instrument":1,"order_id":11,"account":8,"side":"sell","type":"market","qty":2}
`

func TestEngineRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "commands.jsonl")
	if err := os.WriteFile(in, []byte(scenarioFile), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "engine", "run", "--in", in)
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if !strings.Contains(stdout, `{"event":"trade","instrument":1,"order_id":11,"maker":10,"side":"sell","price":100,"qty":2,"remaining":0,"maker_remaining":3}`) ||
		!strings.Contains(stdout, `,"commands":3,"events":`) {
		t.Errorf("stdout:\n%s", stdout)
	}

	// --out writes the same to a file.
	outPath := filepath.Join(dir, "events.jsonl")
	if code, o, e := runCLI(t, "engine", "run", "--in", in, "--out", outPath); code != 0 || o != "" || e != "" {
		t.Fatalf("--out: exit %d, stdout %q, stderr %q", code, o, e)
	}
	if b, err := os.ReadFile(outPath); err != nil || string(b) != stdout {
		t.Errorf("--out wrote\n%s(%v), want\n%s", b, err, stdout)
	}
}

func TestEngineRunBadLine(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "commands.jsonl")
	bad := scenarioFile + `{"cmd":"cancel","source":1,"seq":4,"time":1003,"instrument":1,"order_id":10,"colour":"red"}` + "\n" +
		`{"cmd":"cancel","source":1,"seq":5,"time":1004,"instrument":1,"order_id":10}` + "\n"
	if err := os.WriteFile(in, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "engine", "run", "--in", in)
	if code != 1 || !strings.Contains(stderr, `line 5: field "colour": unknown field`) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if !strings.HasSuffix(stdout, `{"event":"release","source":1,"seq":3,"instrument":1}`+"\n") {
		t.Errorf("want the events of lines 1-4 and nothing else, got\n%s", stdout)
	}

	if code, _, stderr := runCLI(t, "engine", "run", "--in", filepath.Join(dir, "missing")); code != 1 || stderr == "" {
		t.Errorf("missing input: exit %d, stderr %q", code, stderr)
	}
}

func TestDifftest(t *testing.T) {
	code, stdout, stderr := runCLI(t, "difftest", "--seed", "1", "--commands", "3000")
	if code != 0 || !strings.Contains(stdout, "engine and model agree: seed 1: 3000 commands") ||
		!strings.Contains(stdout, "restored snapshots agree: seed 1: 3000 commands, ") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	// Without snapshots: the engine against the model only, as before.
	code, stdout, stderr = runCLI(t, "difftest", "--seed", "1", "--commands", "3000", "--snapshots=false")
	if code != 0 || !strings.Contains(stdout, "engine and model agree: seed 1: 3000 commands") || strings.Contains(stdout, "snapshots") {
		t.Errorf("--snapshots=false: exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
}

// TestDifftestWorkers runs a short stream with parallel snapshots.
func TestDifftestWorkers(t *testing.T) {
	code, stdout, stderr := runCLI(t, "difftest", "--seed", "4", "--commands", "20000", "--workers", "2", "--every", "3000")
	if code != 0 || !strings.Contains(stdout, "engine and model agree: seed 4: 20000 commands") {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, stdout, stderr)
	}
	var snaps, linear, parallel, workers, restores int
	i := strings.Index(stdout, "restored snapshots agree: seed 4: 20000 commands, ")
	if i < 0 {
		t.Fatalf("no snapshot summary:\n%s", stdout)
	}
	if _, err := fmt.Sscanf(stdout[i:], "restored snapshots agree: seed 4: 20000 commands, %d snapshots (%d linear, %d parallel with %d workers), %d restores",
		&snaps, &linear, &parallel, &workers, &restores); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if snaps < 4 || parallel != snaps/2 || linear+parallel != snaps || workers != 2 || restores != snaps {
		t.Errorf("summary: %s", stdout)
	}
}

func TestDifftestDivergence(t *testing.T) {
	defer func(f func(int64, int, enginetest.DiffOptions) (enginetest.DiffResult, error)) { runDiff = f }(runDiff)
	var got enginetest.DiffOptions
	runDiff = func(seed int64, n int, opts enginetest.DiffOptions) (enginetest.DiffResult, error) {
		got = opts
		opts.Progress(enginetest.DiffResult{Seed: seed, Commands: n / 2})
		return enginetest.DiffResult{}, &enginetest.Divergence{Seed: seed, Index: 1234, What: "events differ",
			Command: engine.Command{Kind: engine.CmdCancel}, Engine: []engine.Event{{Kind: engine.EvRelease}}}
	}
	code, _, stderr := runCLI(t, "difftest", "--seed", "42", "--commands", "5000", "--check", "--snapshots=false")
	if code != 1 || !got.Check {
		t.Errorf("exit %d, check %v", code, got.Check)
	}
	for _, want := range []string{
		"difftest: seed 42: 2500/5000 commands (50%)",
		"engine events:\n",
		"matchlog difftest: seed 42: engine and model diverge at command index 1234 (events differ)\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestDifftestSnapshotDivergence(t *testing.T) {
	defer func(f func(int64, int, snaptest.Options) (snaptest.Result, error)) { runRestoreDiff = f }(runRestoreDiff)
	var got snaptest.Options
	var diverge error
	runRestoreDiff = func(seed int64, n int, opts snaptest.Options) (snaptest.Result, error) {
		got = opts
		opts.Diff.Progress(enginetest.DiffResult{Seed: seed, Commands: n / 2})
		return snaptest.Result{}, diverge
	}
	events := []engine.Event{{Kind: engine.EvAccepted, Source: 1, Seq: 2}, {Kind: engine.EvRelease, Source: 1, Seq: 2}}
	for _, tc := range []struct {
		d    *snaptest.Divergence
		want []string
	}{
		{&snaptest.Divergence{Seed: 42, Commands: 5000, Workers: 3, Check: true, Index: 1234, What: "events of the restored engine differ",
			Command:  engine.Command{Kind: engine.CmdCancel, Source: 1, Seq: 2},
			Snapshot: &snaptest.SnapshotInfo{Index: 2, At: 1200, Kind: snaptest.Parallel, Workers: 3, MTU: 1408, Term: 65536}, Since: 35,
			Primary: events, Shadow: events[:1]},
			[]string{
				"difftest: seed 42: 2500/5000 commands (50%)",
				"restored from snapshot 2 (parallel, 3 workers, MTU 1408",
				"primary events (2):\n", "restored events (1):\n",
				"reproduce with: matchlog difftest --seed 42 --commands 5000 --workers 3 --check\n",
				"matchlog difftest: seed 42: the engine and a restored snapshot diverge at command index 1234 (events of the restored engine differ); " +
					"reproduce with: matchlog difftest --seed 42 --commands 5000 --workers 3 --check\n",
			}},
		{&snaptest.Divergence{Seed: 42, Commands: 5000, Workers: 3, Check: true, Index: 99, What: "primary engine and model diverge: events differ",
			Model: &enginetest.Divergence{Seed: 42, Index: 99, What: "events differ", Engine: events, Model: events[:1]}},
			[]string{
				"engine events (2):\n", "model events (1):\n",
				"matchlog difftest: seed 42: engine and model diverge at command index 99 (events differ); reproduce with: ",
			}},
		{&snaptest.Divergence{Seed: 42, Commands: 5000, Workers: 3, Check: true, Index: 1199, What: "snapshot load failed",
			Err: errors.New("snapshot: load: checksum")},
			[]string{
				"error: snapshot: load: checksum\n",
				"matchlog difftest: seed 42: a snapshot failed at command index 1199 (snapshot load failed); reproduce with: ",
			}},
	} {
		diverge = tc.d
		code, _, stderr := runCLI(t, "difftest", "--seed", "42", "--commands", "5000", "--check", "--workers", "3", "--every", "700")
		if code != 1 || !got.Diff.Check || got.Workers != 3 || got.Every != 700 || got.NoModel {
			t.Errorf("exit %d, options %+v", code, got)
		}
		for _, want := range tc.want {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	}
}

// TestReadmeExample keeps the README's engine run example true: its events
// are what the engine writes for its commands.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(readme), "```\n")
	// blocks[1] is the first fenced block (commands), blocks[3] the second (events).
	if len(blocks) < 5 || !strings.HasPrefix(blocks[1], `{"cmd":`) || !strings.HasPrefix(blocks[3], `{"event":`) {
		t.Fatalf("README.md: cannot find the commands and events examples")
	}
	in := filepath.Join(t.TempDir(), "commands.jsonl")
	if err := os.WriteFile(in, []byte(blocks[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "engine", "run", "--in", in)
	if code != 0 || stdout != blocks[3] {
		t.Errorf("exit %d, stderr %s\nengine run writes\n%s\nREADME.md shows\n%s", code, stderr, stdout, blocks[3])
	}
}
