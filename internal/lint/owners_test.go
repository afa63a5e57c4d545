package lint

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

// An ownedFile is a kind of file that one package owns: only that package
// opens it, so that its format, its checks and its repairs live in one
// place (the archive's segments, catalog and mark file; the node's mark
// file). Others go through the owner's API.
type ownedFile struct {
	kind  string
	owner string // package, relative to the module
	// names are the owner's exported identifiers that spell or build the
	// file's name; literals are substrings of a string literal that do.
	names    []string
	literals []string
}

var ownedFiles = []ownedFile{
	{"segment file", "archive", []string{"SegmentFileName", "SegmentSuffix", "PreparedSuffix"}, []string{".rec"}},
	{"catalog file", "archive", []string{"CatalogFileName"}, []string{"archive.catalog"}},
	{"archive mark file", "archive", []string{"MarkFileName"}, []string{"archive-mark.dat"}},
	{"cluster mark file", "cluster", []string{"MarkFileName"}, []string{"cluster-mark.dat"}},
}

// openFuncs are the calls that open or read a file by name: vfs.FS's
// Open, OpenRW and Create and the os package's. A call of one of them
// whose name argument is built from an owned file's name (directly, or
// through a local variable assigned from it in the same function) opens
// that file.
var openFuncs = []string{"Open", "OpenRW", "Create", "OpenFile", "ReadFile", "WriteFile"}

// pendingOpens are the openings outside an owner that remain, each with
// the change that removes it: file (module-relative), function, kind. One
// that no longer opens its file fails the test, so the list only shrinks.
var pendingOpens = map[[3]string]string{
	{"cluster/markfile.go", "checkArchiveMark", "archive mark file"}: "one liveness check per mark file: the node's check of its archive's mark goes through the archive (which must then fail on an unreadable archive-mark.lnk, as the node's read-fault sweep requires)",
}

// fileOpen is one opening of an owned file found in a package.
type fileOpen struct {
	file, fn, kind string
	pos            token.Position
}

// TestOwnedFiles: no package other than archive opens a segment, catalog
// or archive mark file, and none other than cluster opens cluster-mark.dat;
// decoding them is the owner's (archive.ReadMarkFileIn, cluster.ReadMarkFile,
// archive.OpenRecordingReader, archive.Open).
func TestOwnedFiles(t *testing.T) {
	root := repoRoot(t)
	found := map[[3]string]bool{}
	for _, p := range sortedPkgs(modulePackages(t, root)) {
		for _, f := range p.files {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				t.Fatal(err)
			}
			rel = filepath.ToSlash(rel)
			opens, err := ownedOpens(p.rel, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range opens {
				key := [3]string{rel, o.fn, o.kind}
				if _, ok := pendingOpens[key]; ok {
					found[key] = true
					continue
				}
				t.Errorf("%s:%d: %s opens a %s; only package %s does: use its API", rel, o.pos.Line, o.fn, o.kind, ownerOf(o.kind))
			}
		}
	}
	for key, why := range pendingOpens {
		if !found[key] {
			t.Errorf("%s %s no longer opens a %s (%s): remove it from pendingOpens", key[0], key[1], key[2], why)
		}
	}
}

func ownerOf(kind string) string {
	for _, of := range ownedFiles {
		if of.kind == kind {
			return of.owner
		}
	}
	return "?"
}

// ownedOpens parses the Go file path of package pkg and returns every call
// of an openFunc whose arguments are built from a file name owned by
// another package.
func ownedOpens(pkg, path string) ([]fileOpen, error) {
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return nil, err
	}
	// The import names under which the owners are seen in this file.
	local := map[string]string{} // owner package -> name in this file
	for _, imp := range af.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		o, ok := ours(ip)
		if !ok {
			continue
		}
		name := filepath.Base(o)
		if imp.Name != nil {
			name = imp.Name.Name
		}
		local[o] = name
	}
	var out []fileOpen
	for _, decl := range af.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		for _, of := range ownedFiles {
			if of.owner == pkg {
				continue
			}
			mentions := func(e ast.Node, tainted map[string]bool) bool {
				hit := false
				ast.Inspect(e, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.SelectorExpr:
						if x, ok := n.X.(*ast.Ident); ok && local[of.owner] != "" && x.Name == local[of.owner] && slices.Contains(of.names, n.Sel.Name) {
							hit = true
						}
					case *ast.Ident:
						if tainted[n.Name] {
							hit = true
						}
					case *ast.BasicLit:
						if n.Kind == token.STRING {
							if s, err := strconv.Unquote(n.Value); err == nil && slices.ContainsFunc(of.literals, func(l string) bool { return strings.Contains(s, l) }) {
								hit = true
							}
						}
					}
					return !hit
				})
				return hit
			}
			// Local variables assigned from the owned name, to a fixed
			// point (name := ...; path := Join(dir, name)).
			tainted := map[string]bool{}
			for changed := true; changed; {
				changed = false
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					as, ok := n.(*ast.AssignStmt)
					if !ok || len(as.Lhs) != len(as.Rhs) {
						return true
					}
					for i, lhs := range as.Lhs {
						id, ok := lhs.(*ast.Ident)
						if ok && !tainted[id.Name] && mentions(as.Rhs[i], tainted) {
							tainted[id.Name] = true
							changed = true
						}
					}
					return true
				})
			}
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var name string
				switch fn := call.Fun.(type) {
				case *ast.SelectorExpr:
					name = fn.Sel.Name
				case *ast.Ident:
					name = fn.Name
				}
				if !slices.Contains(openFuncs, name) {
					return true
				}
				for _, arg := range call.Args {
					if mentions(arg, tainted) {
						out = append(out, fileOpen{file: path, fn: fd.Name.Name, kind: of.kind, pos: fset.Position(call.Pos())})
						break
					}
				}
				return true
			})
		}
	}
	return out, nil
}
