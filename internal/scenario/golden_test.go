package scenario

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the golden event files of testdata/golden")

// TestGolden replays each testdata/golden/NAME.jsonl through a new engine
// and compares the events with NAME.events (one event per line, then the
// summary). The scenarios are small, readable specifications of the
// engine's behaviour; after a deliberate change, run with -rewrite and read
// the diff.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/golden/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scenarios (%v)", err)
	}
	for _, in := range files {
		name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if _, err := Run(bytes.NewReader(src), &out, engine.New()); err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".jsonl") + ".events"
			if *rewrite {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("events differ from %s (run with -rewrite and read the diff):\n%s", golden,
					enginetest.DiffLines(strings.Split(string(want), "\n"), strings.Split(out.String(), "\n"), "want", "got"))
			}
		})
	}
}
