package gen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The cross-check with real SBE. shared/sbe-vectors (beside the
// repository, or where MATCHLOG_SBE_VECTORS points) holds messages of every
// schema of ours and of Aeron's, encoded by the Java codecs that real SBE
// 1.34.1 generates, each line the message's fields as JSON and its bytes
// as hex. TestSBEVectors generates our codecs for each schema, with a
// harness (harness_test.go) that decodes every line and compares every
// field, and encodes every line at the schema version from its fields and
// compares the bytes; it builds them in a temporary module and runs them.
// Aeron's own schema files come from shared/aeron/schemas (or
// MATCHLOG_AERON_SCHEMAS); ours from sbe/schemas and gen/testdata.
//
// A missing directory fails the test naming where it looked;
// MATCHLOG_SBE_VECTORS=skip skips it.

type vectorSet struct {
	file   string // in the vectors directory
	schema string // path of the schema
}

func sharedDir(env, rel string) (string, []string) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..") // sbe/gen -> repository
	c := []string{os.Getenv(env), filepath.Clean(filepath.Join(root, "..", "shared", rel)), filepath.Clean(filepath.Join(root, "shared", rel))}
	for _, d := range c {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			return d, c
		}
	}
	return "", c
}

func vectorSets(t *testing.T) (string, []vectorSet) {
	t.Helper()
	if os.Getenv("MATCHLOG_SBE_VECTORS") == "skip" {
		t.Skip("MATCHLOG_SBE_VECTORS=skip: the SBE cross-check needs shared/sbe-vectors")
	}
	vdir, vc := sharedDir("MATCHLOG_SBE_VECTORS", "sbe-vectors")
	if vdir == "" {
		t.Fatalf("SBE vectors not found: MATCHLOG_SBE_VECTORS=%q, %s, %s; put shared/ beside the clone or set MATCHLOG_SBE_VECTORS (skip skips)", vc[0], vc[1], vc[2])
	}
	adir, ac := sharedDir("MATCHLOG_AERON_SCHEMAS", filepath.Join("aeron", "schemas"))
	if adir == "" {
		t.Fatalf("Aeron's schema files not found: MATCHLOG_AERON_SCHEMAS=%q, %s, %s", ac[0], ac[1], ac[2])
	}
	sets := []vectorSet{
		{"matchlog-snapshot.jsonl", "../schemas/matchlog-snapshot.xml"},
		{"matchlog-engine.jsonl", "../schemas/matchlog-engine.xml"},
		{"matchlog-wire.jsonl", "../schemas/matchlog-wire.xml"},
		{"aeron-cluster.jsonl", "../schemas/aeron-cluster.xml"},
		{"aeron-archive.jsonl", "../schemas/aeron-archive.xml"},
		{"feature.jsonl", "testdata/feature.xml"},
	}
	for _, n := range []string{"aeron-cluster-codecs", "aeron-archive-codecs", "aeron-archive-mark-codecs", "aeron-cluster-mark-codecs", "aeron-cluster-node-state-codecs"} {
		sets = append(sets, vectorSet{n + ".jsonl", filepath.Join(adir, n+".xml")})
	}
	return vdir, sets
}

const harnessMain = `package main

import (
	"bufio"
	"fmt"
	"os"
%s)

type checker func([]byte) (bool, error)

func main() {
	checks := map[string]checker{
%s	}
	failed := 0
	for i := 1; i+1 < len(os.Args); i += 2 {
		name, path := os.Args[i], os.Args[i+1]
		check := checks[name]
		f, err := os.Open(path)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		lines, encoded, bad := 0, 0, 0
		for sc.Scan() {
			lines++
			enc, err := check(sc.Bytes())
			if enc {
				encoded++
			}
			if err != nil {
				bad++
				if bad <= 10 {
					fmt.Printf("FAIL %%s:%%d: %%v\n", name, lines, err)
				}
			}
		}
		if err := sc.Err(); err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		f.Close()
		failed += bad
		fmt.Printf("FILE %%s lines=%%d encoded=%%d failed=%%d\n", name, lines, encoded, bad)
	}
	if failed > 0 {
		os.Exit(1)
	}
}
`

// buildHarness writes our codecs and the harness of every set into a
// temporary module and builds it; it returns the binary.
func buildHarness(t *testing.T, sets []vectorSet) string {
	t.Helper()
	// go test puts its own GOROOT/bin first on the PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the cross-check builds the generated codecs with the go command: %v", err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", []byte("module vt\n\ngo 1.22\n"))
	var imports, checks strings.Builder
	for i, vs := range sets {
		pkg := fmt.Sprintf("s%d", i)
		s, err := ParseFile(vs.schema)
		if err != nil {
			t.Fatalf("%s: our generator cannot read it: %v", vs.schema, err)
		}
		src, err := Generate(s, Options{Package: pkg, Source: filepath.Base(vs.schema)})
		if err != nil {
			t.Fatalf("%s: %v", vs.schema, err)
		}
		write(pkg+"/codecs_gen.go", src)
		hs, err := Harness(s, pkg)
		if err != nil {
			t.Fatalf("%s: harness: %v", vs.schema, err)
		}
		write(pkg+"/harness.go", hs)
		fmt.Fprintf(&imports, "\t%q\n", "vt/"+pkg)
		fmt.Fprintf(&checks, "\t\t%q: %s.Check,\n", vs.file, pkg)
	}
	write("main.go", []byte(fmt.Sprintf(harnessMain, imports.String(), checks.String())))
	bin := filepath.Join(dir, "harness")
	cmd := exec.Command(goTool, "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the generated codecs with the harness: %v\n%s", err, out)
	}
	return bin
}

var fileLineRE = regexp.MustCompile(`(?m)^FILE (\S+) lines=(\d+) encoded=(\d+) failed=(\d+)$`)

// runHarness runs the harness over files (name -> path) and returns its
// output and per-file counts.
func runHarness(t *testing.T, bin string, files [][2]string) (string, map[string][3]int, error) {
	t.Helper()
	var args []string
	for _, f := range files {
		args = append(args, f[0], f[1])
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	counts := map[string][3]int{}
	for _, m := range fileLineRE.FindAllStringSubmatch(string(out), -1) {
		l, _ := strconv.Atoi(m[2])
		e, _ := strconv.Atoi(m[3])
		f, _ := strconv.Atoi(m[4])
		counts[m[1]] = [3]int{l, e, f}
	}
	return string(out), counts, err
}

// expectCounts reads a vectors file: its lines and those at the schema
// version (the ones the encode side checks).
func expectCounts(t *testing.T, path string) (lines, encode int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v struct {
			SchemaVersion int `json:"schemaVersion"`
			Version       int `json:"version"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s:%d: %v", path, lines+1, err)
		}
		lines++
		if v.Version == v.SchemaVersion {
			encode++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, encode
}

// TestSBEVectors: every vector real SBE 1.34.1 encoded, of every schema of
// ours and of Aeron's real schema files, decodes with the codecs our
// generator makes to exactly its fields and consumes every byte, and every
// vector at the schema version encodes from its fields to exactly its bytes.
func TestSBEVectors(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds generated codecs for 11 schemas")
	}
	vdir, sets := vectorSets(t)
	bin := buildHarness(t, sets)
	var files [][2]string
	for _, vs := range sets {
		files = append(files, [2]string{vs.file, filepath.Join(vdir, vs.file)})
	}
	out, counts, err := runHarness(t, bin, files)
	if err != nil {
		t.Errorf("harness: %v", err)
	}
	total := 0
	for _, f := range files {
		lines, encode := expectCounts(t, f[1])
		c, ok := counts[f[0]]
		switch {
		case !ok:
			t.Errorf("%s: not checked", f[0])
		case c[0] != lines || c[1] != encode || c[2] != 0:
			t.Errorf("%s: %d lines checked of %d, %d encoded of %d, %d failed", f[0], c[0], lines, c[1], encode, c[2])
		}
		total += lines
	}
	if t.Failed() {
		t.Logf("harness output:\n%s", out)
		return
	}
	if total < 3000 {
		t.Errorf("only %d vectors", total)
	}
	t.Logf("%d vectors in %d files decoded and compared field by field, those at the schema version re-encoded byte for byte", total, len(files))

	// The check can fail: one changed field value, one changed byte and a
	// cut message must each be reported.
	line := firstLine(t, filepath.Join(vdir, "aeron-cluster-codecs.jsonl"))
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	hexs := v["hex"].(string)
	flip := func(h string, i int) string {
		c := "0"
		if h[i] == '0' {
			c = "1"
		}
		return h[:i] + c + h[i+1:]
	}
	variants := []string{}
	for _, mut := range []func(m map[string]any){
		func(m map[string]any) { m["hex"] = flip(hexs, len(hexs)-1) },
		func(m map[string]any) { m["hex"] = hexs[:len(hexs)-2] },
		func(m map[string]any) {
			for k, x := range m["fields"].(map[string]any) {
				if n, ok := x.(json.Number); ok {
					m["fields"].(map[string]any)[k] = json.Number(flip(string(n), len(n)-1))
					return
				}
			}
		},
	} {
		c := map[string]any{}
		for k, x := range v {
			c[k] = x
		}
		f := map[string]any{}
		for k, x := range v["fields"].(map[string]any) {
			f[k] = x
		}
		c["fields"] = f
		mut(c)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		variants = append(variants, string(b))
	}
	if err := os.WriteFile(bad, []byte(strings.Join(variants, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, counts, err = runHarness(t, bin, [][2]string{{"aeron-cluster-codecs.jsonl", bad}})
	if err == nil || counts["aeron-cluster-codecs.jsonl"] != [3]int{3, 3, 3} {
		t.Errorf("three corrupted vectors: %v, counts %v; want all three failed\n%s", err, counts, out)
	}
}

func firstLine(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		t.Fatalf("%s: no line", path)
	}
	return b[:i]
}
