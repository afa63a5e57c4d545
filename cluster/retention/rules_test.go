package retention

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestRuleListsComplete: every Refuse* constant of the package is in
// RefusalRules or PurgeRefusalRules, and every verdict constant (the
// const block of NormalRestart) is in Verdicts, so whatever enumerates
// the lists (the scenario coverage test of cmd/matchlog) sees a new rule or
// verdict the day it is added.
func TestRuleListsComplete(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	rules, verdicts := map[string]string{}, map[string]string{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range file.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			isVerdicts := false
			for _, spec := range g.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					isVerdicts = isVerdicts || n.Name == "NormalRestart"
				}
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					switch {
					case strings.HasPrefix(n.Name, "Refuse"):
						rules[n.Name] = v
					case isVerdicts:
						verdicts[n.Name] = v
					}
				}
			}
		}
	}
	if len(rules) == 0 || len(verdicts) == 0 {
		t.Fatalf("found %d rules and %d verdicts in the source", len(rules), len(verdicts))
	}
	for name, v := range rules {
		if !slices.Contains(RefusalRules, v) && !slices.Contains(PurgeRefusalRules, v) {
			t.Errorf("%s (%q) is in neither RefusalRules nor PurgeRefusalRules", name, v)
		}
	}
	if n := len(RefusalRules) + len(PurgeRefusalRules); n != len(rules) {
		t.Errorf("the lists hold %d rules, the source declares %d", n, len(rules))
	}
	for name, v := range verdicts {
		if !slices.Contains(Verdicts, v) {
			t.Errorf("verdict %s (%q) is not in Verdicts", name, v)
		}
	}
	if len(Verdicts) != len(verdicts) {
		t.Errorf("Verdicts holds %d verdicts, the source declares %d", len(Verdicts), len(verdicts))
	}
}
