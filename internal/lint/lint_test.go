package lint

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/matchlog/matchlog/"

// rules lists, for a package directory, the only packages of this module
// its non-test files may import, and the standard-library or third-party
// packages it must not import.
var rules = map[string]struct {
	ours      []string
	forbidden []string
}{
	// The engine is a deterministic single writer: no I/O, no clock, no
	// goroutine machinery, no encoding.
	"engine": {
		ours:      []string{"internal/invariants"},
		forbidden: []string{"os", "io", "net", "time", "sync", "sync/atomic", "math/rand", "math/rand/v2", "unsafe"},
	},
	"internal/invariants": {},
}

func TestImportRules(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for dir, rule := range rules {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			pf, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range pf.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				rel, _ := filepath.Rel(root, f)
				if ours, ok := strings.CutPrefix(path, module); ok && !slices.Contains(rule.ours, ours) {
					t.Errorf("%s imports %s: %s may import only %v of this module", rel, path, dir, rule.ours)
				}
				if slices.Contains(rule.forbidden, path) {
					t.Errorf("%s imports %s, which %s must not use", rel, path, dir)
				}
			}
		}
	}
}
