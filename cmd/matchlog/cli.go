package main

// The conventions every verb shares: what --dir names, the list flags, the
// error for an unknown sub-command, and the documentation of the JSON
// outputs.

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/matchlog/matchlog/cluster"
	"github.com/matchlog/matchlog/cluster/recordinglog"
	"github.com/matchlog/matchlog/snapshot"
)

// ---- --dir ----

// resolveDir finds the directory --dir names for a verb that works on the
// sub-directory sub of a node directory (cluster/ or archive/), recognised
// by the file marker it holds (recording.log or archive.catalog): dir itself
// when it holds marker (the sub-directory was given, as to Aeron's
// ClusterTool and ArchiveTool), else dir/sub when that holds it (the node
// directory was given). Neither is an error naming both places looked at.
func resolveDir(dir, sub, marker string) (string, error) {
	for _, d := range []string{dir, filepath.Join(dir, sub)} {
		if st, err := os.Stat(filepath.Join(d, marker)); err == nil && st.Mode().IsRegular() {
			return d, nil
		}
	}
	what := "an archive directory"
	if sub == cluster.ClusterDirName {
		what = "a cluster directory"
	}
	return "", fmt.Errorf("no %s in %s or in %s: --dir names a node directory (holding cluster/ and archive/) or %s (holding %s)",
		marker, filepath.Join(dir, sub), dir, what, marker)
}

// resolveNodeDir returns the node directory for a cluster verb's --dir: the
// directory itself, or the parent of the cluster/ directory given.
func resolveNodeDir(dir string) (string, error) {
	cdir, err := resolveDir(dir, cluster.ClusterDirName, recordinglog.FileName)
	if err != nil {
		return "", err
	}
	if cdir != dir {
		return dir, nil
	}
	abs, err := filepath.Abs(cdir)
	if err != nil {
		return "", err
	}
	if filepath.Base(abs) != cluster.ClusterDirName {
		return "", fmt.Errorf("%s holds recording.log but is not named cluster/: the cluster verbs find the archive "+
			"beside it in ../archive, as in a node directory (D/cluster, D/archive); arrange the directories so and pass D", dir)
	}
	return filepath.Dir(abs), nil
}

// ---- list flags ----

// intList is the value of a flag that takes one integer or a
// comma-separated list (--sync 1, --sync 0,2, --orders 1M): verbs that run a
// matrix of configurations take every value, verbs that run one take
// exactly one (see one). Values may end in KiB, MiB, GiB (powers of two) or
// K, M, G (powers of ten).
type intList []int

func (l *intList) String() string {
	if l == nil {
		return ""
	}
	var parts []string
	for _, v := range *l {
		parts = append(parts, fmt.Sprint(v))
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(s string) error {
	v, err := parseSizes(s)
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// one returns the single value of a list flag of a verb that runs one
// configuration.
func (l intList) one(name string) (int, error) {
	if len(l) != 1 {
		return 0, fmt.Errorf("--%s %s: this verb runs one configuration, give one value", name, l.String())
	}
	return l[0], nil
}

// modeList is the value of --snapshot-mode: pauseless, stw, or (for the
// verbs that run a matrix) both, comma-separated.
type modeList []string

func (l *modeList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *modeList) Set(s string) error {
	var out []string
	for _, m := range strings.Split(s, ",") {
		switch m = strings.TrimSpace(m); m {
		case "pauseless", "stw":
			out = append(out, m)
		default:
			return fmt.Errorf("%q: want pauseless or stw (a comma-separated list where the verb runs several)", m)
		}
	}
	*l = out
	return nil
}

func (l modeList) one() (string, error) {
	if len(l) != 1 {
		return "", fmt.Errorf("--snapshot-mode %s: this verb takes one snapshot mode", l.String())
	}
	return l[0], nil
}

// syncFlagHelp and snapshotModeFlagHelp are the help of the shared flags.
const (
	syncFlagHelp         = "file sync `level`: 0 none, 1 data, 2 data and metadata (a comma-separated list where the verb runs several)"
	snapshotModeFlagHelp = "snapshot `mode`: pauseless (copy-on-write clone encoded in the background) or stw (stop the world); a comma-separated list where the verb runs several"
	workersFlagHelp      = "parallel encoders of the engine snapshot (0: linear; on a live node more than GOMAXPROCS-2 take the duty cycle's core)"
)

// checkWorkers checks a --workers value with snapshot.Parallel.Validate,
// the one owner of the parallel-encoding decision.
func checkWorkers(n int) error {
	if err := (snapshot.Parallel{Workers: n}).Validate(); err != nil {
		return fmt.Errorf("--workers %d: must not be negative (0: linear)", n)
	}
	return nil
}

// ---- sub-commands ----

// isHelpArg reports whether a is -h, -help or --help.
func isHelpArg(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// subcommand handles what is not a known sub-command of verb: none (usage,
// exit 2), -h (usage, exit 0) or an unknown name (one error line, then the
// usage, exit 2). ok is false when the caller must return err.
func subcommand(verb string, args []string, known func(string) bool, usageText string, stderr io.Writer) (name string, ok bool, err error) {
	switch {
	case len(args) == 0:
		fmt.Fprintf(stderr, "matchlog %s: a command is required\n", verb)
	case isHelpArg(args[0]):
		fmt.Fprint(stderr, usageText)
		return "", false, flag.ErrHelp
	case !known(args[0]):
		fmt.Fprintf(stderr, "matchlog %s: unknown command %q\n", verb, args[0])
	default:
		return args[0], true, nil
	}
	fmt.Fprint(stderr, usageText)
	return "", false, errUsage
}

// badID is the check of an --id flag: it must be given (required) and not
// negative.
func badID(id int64, given, required bool) string {
	switch {
	case given && id < 0:
		return fmt.Sprintf("--id %d: a recording id is not negative", id)
	case required && !given:
		return "--id is required"
	}
	return ""
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			given = true
		}
	})
	return given
}

// ---- JSON documentation ----

// jsonDoc describes the JSON document v encodes to, one field a line, from
// the json and doc tags of its type: "  name  type  doc". The help of every
// verb with --json ends with it, so that `matchlog help VERB` documents the
// output, and the golden test of the help keeps it stable.
func jsonDoc(v any) string {
	var b strings.Builder
	writeJSONDoc(&b, reflect.TypeOf(v), "  ", map[reflect.Type]bool{})
	return b.String()
}

func writeJSONDoc(b *strings.Builder, t reflect.Type, indent string, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			writeJSONDoc(b, f.Type, indent, seen)
			continue
		}
		if name == "" {
			name = f.Name
		}
		ft := f.Type
		line := fmt.Sprintf("%s%-*s %-9s %s", indent, max(1, 30-len(indent)), name, jsonTypeName(ft), f.Tag.Get("doc"))
		b.WriteString(strings.TrimRight(line, " ") + "\n")
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			writeJSONDoc(b, ft, indent+"  ", seen)
		}
	}
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonTypeName(t.Elem())
	case reflect.Slice:
		return "[]" + jsonTypeName(t.Elem())
	case reflect.Map:
		return "{}" + jsonTypeName(t.Elem())
	case reflect.Struct:
		return "object"
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "bool"
	case reflect.Float32, reflect.Float64:
		return "number"
	default:
		return "integer"
	}
}

// usageWithJSON is a flag set's usage: head, the flags, and the JSON
// document of --json (doc nil: none).
func usageWithJSON(fs *flag.FlagSet, head string, doc any) func() {
	return func() {
		fmt.Fprint(fs.Output(), head)
		fs.PrintDefaults()
		if doc != nil {
			fmt.Fprintf(fs.Output(), "\nWith --json, one JSON object (indented) with these fields:\n%s", jsonDoc(doc))
		}
	}
}
