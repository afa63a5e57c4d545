package lint

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/matchlog/matchlog"

// rule is one row of the import table: which packages of this module a
// package's non-test files may import directly (ours), which standard or
// third-party packages they must not import (forbidden), and which packages
// of ours must not be linked into it at all, directly or through any chain
// of imports (notLinked), and which imports its non-test files may make
// only in the files named (confined: import path to file names). A pattern
// "p/..." stands for p and every package below it; "..." for every package
// of the module.
type rule struct {
	ours      []string
	forbidden []string
	notLinked []string
	confined  map[string][]string
}

// The layers of the table, as DESIGN.md §2 names them.
var (
	// logBuffer is "log buffer": Aeron's frames, terms, claims and images
	// (internal/logbuf) and the claim and fragment interfaces on top of
	// them (internal/stream).
	logBuffer = []string{"internal/logbuf", "internal/stream"}
	// sbe is every generated codec and the generator.
	sbe = []string{"sbe/..."}
	// files is the file-system layer under the archive and the node.
	files = []string{"internal/vfs", "internal/liveness", "internal/invariants"}
)

func join(groups ...[]string) []string { return slices.Concat(groups...) }

// rules is the import table of DESIGN.md §2, extended to every package of
// the module: a package without a row fails TestImportRules, so a new
// package is placed in the table when it is added. Test files are exempt.
var rules = map[string]rule{
	// The engine is a deterministic single writer: no I/O, no clock, no
	// goroutine machinery, no encoding. Of ours it imports only the
	// invariant switch and internal/hugepage for its restore's large
	// allocations: a hint, and a goroutine that faults them in without
	// changing a byte (no result depends on either). unsafe only in chunk.go,
	// whose chunk entry keeps a buffer as a pointer and a length taken
	// from a slice (engine/chunk.go says why).
	"engine": {
		ours:      []string{"internal/invariants", "internal/hugepage"},
		forbidden: []string{"os", "io", "net", "time", "sync", "sync/atomic", "math/rand", "math/rand/v2"},
		confined:  map[string][]string{"unsafe": {"chunk.go"}},
	},
	"engine/enginetest": {ours: []string{"engine"}},

	// sbe: the schemas, the generator and the generated codecs import
	// nothing of ours outside sbe.
	"sbe/...": {ours: sbe},

	// Leaves under internal/.
	"internal/invariants": {},
	// The log buffer owns its memory; of ours it imports only
	// internal/hugepage, for Log.Prefault: a hint, and a goroutine that
	// faults the memory in without changing a byte.
	"internal/logbuf":    {ours: []string{"internal/hugepage"}},
	"internal/measure":   {},
	"internal/liveness":  {},
	"internal/fixtures":  {},
	"internal/aerontest": {},
	"internal/plot":      {},
	"internal/probe":     {},
	"internal/lint":      {},
	"internal/hugepage":  {},
	"internal/vfs":       {ours: []string{"internal/invariants"}},
	"internal/stream":    {ours: []string{"internal/logbuf"}},
	"internal/scenario":  {ours: []string{"engine"}},

	// snapshot: engine, sbe, log buffer.
	"snapshot":          {ours: join([]string{"engine", "internal/invariants"}, sbe, logBuffer)},
	"snapshot/snaptest": {ours: join([]string{"engine", "engine/enginetest", "snapshot"}, sbe, logBuffer)},

	// archive: sbe, log buffer (and the file system). It stores bytes and
	// never links the engine or the snapshot encoder.
	"archive": {ours: join(sbe, logBuffer, files), notLinked: []string{"engine", "snapshot/...", "cluster/..."}},

	// cluster: archive, sbe — and not the engine. DESIGN.md's row lists
	// snapshot too, but snapshot links the engine; what the node needs of
	// it (claims and fragment sources) is internal/stream, so importing
	// snapshot fails the notLinked rule.
	"cluster/recordinglog": {ours: join([]string{"archive"}, files), notLinked: []string{"engine"}},
	"cluster":              {ours: join([]string{"archive", "cluster/recordinglog"}, sbe, logBuffer, files), notLinked: []string{"engine"}},
	"cluster/aeronhost":    {ours: join([]string{"cluster", "cluster/recordinglog"}, sbe, logBuffer), notLinked: []string{"engine"}},
	// enginesvc is the one place that joins the engine and the node.
	"cluster/enginesvc": {ours: join([]string{"cluster", "cluster/recordinglog", "engine", "snapshot", "wire"}, sbe, logBuffer, files)},
	// retention reads positions through the archive, the recording log
	// and the node's plan checks, proves engine snapshots through
	// enginesvc's strict offline reader and reads backups through
	// cluster/backup; its purge writes only through the archive's API
	// (and copies recording.log).
	"cluster/retention": {ours: join([]string{"archive", "cluster", "cluster/recordinglog", "cluster/enginesvc", "cluster/backup"}, sbe, files)},
	// backup reads a node only through the archive's and the recording
	// log's read-only APIs and writes its image through their writing APIs
	// (the archive's recorder over a log buffer); it verifies by starting a
	// node with the engine service on a scratch copy.
	"cluster/backup": {ours: join([]string{"archive", "cluster", "cluster/recordinglog", "cluster/enginesvc", "internal/logbuf"}, files)},

	// wire: the engine's messages, shared by client and node.
	"wire": {ours: join([]string{"engine"}, sbe)},
	// client must not link the server stack.
	"client": {ours: join([]string{"engine", "wire"}, sbe), notLinked: []string{"cluster/...", "archive/...", "server/...", "snapshot/..."}},

	// server: the node behind a listener, above cluster.
	"server":         {ours: join([]string{"cluster", "cluster/enginesvc", "cluster/recordinglog", "archive", "engine", "snapshot", "wire"}, sbe, logBuffer, files)},
	"server/metrics": {ours: join([]string{"server", "cluster", "cluster/enginesvc", "cluster/recordinglog", "archive", "engine", "wire"}, sbe, files)},

	// bench and cmd: everything (bench not the command).
	"bench/...": {ours: []string{"..."}, notLinked: []string{"cmd/..."}},
	"cmd/...":   {ours: []string{"..."}},
}

// match reports whether package path p (relative to the module) matches
// pattern pat.
func match(pat, p string) bool {
	if pat == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pat
}

func matchAny(pats []string, p string) bool {
	return slices.ContainsFunc(pats, func(pat string) bool { return match(pat, p) })
}

// ruleFor returns the row for package p: its exact row, else the longest
// pattern row that matches it.
func ruleFor(p string) (string, rule, bool) {
	if r, ok := rules[p]; ok {
		return p, r, true
	}
	best := ""
	for pat := range rules {
		if strings.HasSuffix(pat, "/...") && match(pat, p) && len(pat) > len(best) {
			best = pat
		}
	}
	r, ok := rules[best]
	return best, r, ok
}

// pkg is a package of the module as the build sees it on this platform.
type pkg struct {
	rel     string   // path relative to the module root ("" for the root)
	imports []string // of its non-test files, full import paths
	files   []string // its non-test Go files
	// importFiles names, for each import, the non-test files that make it
	// (base names).
	importFiles map[string][]string
}

// modulePackages lists every package of the module under root, with the
// imports of its non-test files as `go list` reports them (build
// constraints applied).
func modulePackages(t *testing.T, root string) map[string]*pkg {
	t.Helper()
	pkgs := map[string]*pkg{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != root && (name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		bp, err := build.Default.ImportDir(path, 0)
		if err != nil {
			var noGo *build.NoGoError
			if errors.As(err, &noGo) {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		p := &pkg{rel: rel, imports: bp.Imports, importFiles: map[string][]string{}}
		for imp, pos := range bp.ImportPos {
			for _, ps := range pos {
				p.importFiles[imp] = append(p.importFiles[imp], filepath.Base(ps.Filename))
			}
		}
		for _, f := range bp.GoFiles {
			p.files = append(p.files, filepath.Join(path, f))
		}
		pkgs[rel] = p
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages under %s", len(pkgs), root)
	}
	return pkgs
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// ours returns the module-relative path of import path imp, or false if
// imp is not a package of this module.
func ours(imp string) (string, bool) {
	if imp == module {
		return "", true
	}
	return strings.CutPrefix(imp, module+"/")
}

// TestImportRules holds every package's direct imports to its row of the
// table, and fails for a package that has no row.
func TestImportRules(t *testing.T) {
	root := repoRoot(t)
	pkgs := modulePackages(t, root)
	for _, e := range checkImportRules(pkgs) {
		t.Error(e)
	}
}

// TestConfinedImport: an import confined to some files is refused in any
// other file of the package.
func TestConfinedImport(t *testing.T) {
	engine := func(files ...string) map[string]*pkg {
		return map[string]*pkg{"engine": {rel: "engine", imports: []string{"unsafe"}, importFiles: map[string][]string{"unsafe": files}}}
	}
	if errs := checkImportRules(engine("chunk.go")); len(errs) != 0 {
		t.Fatalf("unsafe in chunk.go refused: %v", errs)
	}
	errs := checkImportRules(engine("chunk.go", "level.go"))
	if len(errs) != 1 || !strings.Contains(errs[0], "level.go") {
		t.Fatalf("unsafe in level.go: errors %v, want one naming level.go", errs)
	}
}

func checkImportRules(pkgs map[string]*pkg) []string {
	var errs []string
	for _, p := range sortedPkgs(pkgs) {
		row, r, ok := ruleFor(p.rel)
		if !ok {
			errs = append(errs, fmt.Sprintf("package %s has no row in internal/lint's import table: add one (DESIGN.md §2 says what each layer may import)", p.rel))
			continue
		}
		for _, imp := range p.imports {
			if o, ok := ours(imp); ok && !matchAny(r.ours, o) {
				errs = append(errs, fmt.Sprintf("%s imports %s: by the row %q it may import only %v of this module", p.rel, o, row, r.ours))
			}
			if slices.Contains(r.forbidden, imp) {
				errs = append(errs, fmt.Sprintf("%s imports %s, which %s must not use", p.rel, imp, row))
			}
			if allowed, ok := r.confined[imp]; ok {
				for _, f := range p.importFiles[imp] {
					if !slices.Contains(allowed, f) {
						errs = append(errs, fmt.Sprintf("%s imports %s in %s: the row %q allows it only in %v", p.rel, imp, f, row, allowed))
					}
				}
			}
		}
	}
	return errs
}

// TestLinkRules checks the notLinked column: a package must not depend,
// through any chain of the module's imports, on the packages its row
// excludes — cluster does not link the engine, client links neither
// cluster nor archive nor server, archive links neither engine nor
// snapshot. It is `go list -deps` restricted to this module.
func TestLinkRules(t *testing.T) {
	root := repoRoot(t)
	pkgs := modulePackages(t, root)
	for _, p := range sortedPkgs(pkgs) {
		_, r, ok := ruleFor(p.rel)
		if !ok || len(r.notLinked) == 0 {
			continue
		}
		t.Run(p.rel, func(t *testing.T) {
			checkLinks(t, pkgs, p.rel, r.notLinked)
		})
	}
}

// TestClientLinksNoServerStack is the client's row of TestLinkRules on its
// own: `go list -deps ./client` shows neither cluster nor archive.
func TestClientLinksNoServerStack(t *testing.T) {
	pkgs := modulePackages(t, repoRoot(t))
	if pkgs["client"] == nil {
		t.Fatal("no package client")
	}
	checkLinks(t, pkgs, "client", []string{"cluster/...", "archive/...", "server/..."})
}

// TestClusterLinksNoEngine: `go list -deps ./cluster` shows no engine.
func TestClusterLinksNoEngine(t *testing.T) {
	pkgs := modulePackages(t, repoRoot(t))
	if pkgs["cluster"] == nil {
		t.Fatal("no package cluster")
	}
	checkLinks(t, pkgs, "cluster", []string{"engine/...", "snapshot/..."})
}

// checkLinks fails for every package matching one of banned in the
// module-internal dependency closure of from, naming the import chain.
func checkLinks(t *testing.T, pkgs map[string]*pkg, from string, banned []string) {
	t.Helper()
	// Breadth-first, so each chain reported is a shortest one.
	via := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p := pkgs[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.imports {
			o, ok := ours(imp)
			if !ok {
				continue
			}
			if _, seen := via[o]; seen {
				continue
			}
			via[o] = cur
			queue = append(queue, o)
		}
	}
	for _, dep := range slices.Sorted(maps.Keys(via)) {
		if dep == from || !matchAny(banned, dep) {
			continue
		}
		chain := []string{dep}
		for c := via[dep]; c != ""; c = via[c] {
			chain = append(chain, c)
		}
		slices.Reverse(chain)
		t.Errorf("%s links %s, which it must not (import chain %s)", from, dep, strings.Join(chain, " -> "))
	}
}

// TestOneLoadAvg: the load average has one reader, internal/measure; no
// other package reads /proc/loadavg or defines its own LoadAvg.
func TestOneLoadAvg(t *testing.T) {
	pkgs := modulePackages(t, repoRoot(t))
	for _, p := range sortedPkgs(pkgs) {
		if p.rel == "internal/measure" {
			continue
		}
		for _, f := range p.files {
			af, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.FuncDecl:
					if strings.EqualFold(n.Name.Name, "loadavg") {
						t.Errorf("%s defines %s: use measure.LoadAvg", f, n.Name.Name)
					}
				case *ast.BasicLit:
					if n.Kind == token.STRING {
						if s, err := strconv.Unquote(n.Value); err == nil && strings.Contains(s, "/proc/loadavg") {
							t.Errorf("%s reads /proc/loadavg: use measure.LoadAvg", f)
						}
					}
				}
				return true
			})
		}
	}
}

func sortedPkgs(pkgs map[string]*pkg) []*pkg {
	out := make([]*pkg, 0, len(pkgs))
	for _, k := range slices.Sorted(maps.Keys(pkgs)) {
		out = append(out, pkgs[k])
	}
	return out
}
