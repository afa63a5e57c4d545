// Command matchlog is matchlog's command-line tool: one binary, one verb per
// job. Run `matchlog help` for the list.
//
// The verbs only parse flags and wire packages together; the work lives in
// the packages they call (internal/scenario, engine/enginetest, bench).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

// verb is one subcommand. Its run function gets the arguments after the
// verb's name.
type verb struct {
	name    string
	usage   string // the verb as help shows it
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// verbs lists the subcommands in the order help shows them. It is filled in
// init because help refers to it.
var verbs []verb

func init() {
	verbs = []verb{
		{"engine", "engine run", "replay commands (JSON lines) through the engine, write its events", runEngine},
		{"difftest", "difftest", "run the B-tree engine and the model side by side on a seeded random stream", runDifftest},
		{"cluster", "cluster <cmd>", "Aeron ClusterTool-style: recording-log, recovery-plan, snapshot, invalidate-latest-snapshot, revalidate-snapshot, describe", runCluster},
		{"archive", "archive <cmd>", "Aeron ArchiveTool-style: describe, verify, detach, delete, purge, replay", runArchive},
		{"retention", "retention <cmd>", "restart-vs-rebuild: positions, verdict, plan (a dry-run purge) and purge (executes it) over stopped members", runRetention},
		{"backup", "backup <cmd>", "backup images of a node: create (verified before it is declared good), drill (restore, start, check; recorded)", runBackup},
		{"bench", "bench <what>", "measure: engine (mix, depth, heap, clone, restore), snapshot (take, restore), archive (recorder vs raw writes), cluster (client pause at a snapshot), aeron (the same on real Aeron Cluster, beside the native node)", runBench},
		{"node", "node", "run a node: TCP ingress/egress on 127.0.0.1, until SIGINT/SIGTERM", runNode},
		{"aeron-node", "aeron-node", "run the engine as the Go service of a real Aeron Cluster member (aeron-go's container), until SIGINT/SIGTERM or driver loss", runAeronNode},
		{"aeron-client", "aeron-client", "send commands (JSON lines) to the engine on a real Aeron Cluster (aeron-go's cluster client) and print its events", runAeronClient},
		{"soak", "soak", "kill -9 a node under load again and again for a duration, checking each crash (state hash, acknowledged commands, files); a running tally", runSoak},
		{"demo", "demo", "the main job: a node on 127.0.0.1, 1M orders preloaded, probes, both snapshots, a restart; a report (--json, --plot)", runDemo},
		{"client", "client", "send commands (JSON lines) to a running node and print its events; `client depth`: live depth", runClient},
		{"help", "help [verb [cmd]]", "show this list, or a verb's help (its flags and its JSON output)", runHelp},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `matchlog runs a matching engine as a deterministic, replicated state machine.

Usage: matchlog <verb> [flags]

Verbs:
`)
	for _, v := range verbs {
		fmt.Fprintf(w, "  %-17s %s\n", v.usage, v.summary)
	}
	fmt.Fprint(w, "\nRun 'matchlog help <verb> [<cmd>]' (or 'matchlog <verb> [<cmd>] -h') for a verb's flags and output.\n"+
		"--dir is the node directory everywhere (cluster verbs also take its cluster/, archive verbs its archive/).\n")
}

// runHelp is `matchlog help [verb [cmd]]`: the list of verbs, or the help
// of a verb (and of one of its commands), on stdout.
func runHelp(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stdout)
		return nil
	}
	for _, v := range verbs {
		if v.name == args[0] && v.name != "help" {
			err := v.run(append(append([]string{}, args[1:]...), "-h"), stdout, stdout)
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return err
		}
	}
	fmt.Fprintf(stderr, "matchlog help: unknown verb %q\n", args[0])
	usage(stderr)
	return errUsage
}

// errUsage marks an error in the command line: exit status 2.
var errUsage = errors.New("usage")

// usageErr returns a verb's reporter of a bad command line: it prints
// "prefix: problem" on stderr, then the verb's usage, and returns
// errUsage.
func usageErr(fs *flag.FlagSet, stderr io.Writer, prefix string) func(format string, a ...any) error {
	return func(format string, a ...any) error {
		fmt.Fprintf(stderr, prefix+": "+format+"\n", a...)
		fs.Usage()
		return errUsage
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status: 0, 1 for a
// failure, 2 for a bad command line.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "-h" || name == "-help" || name == "--help" {
		name = "help"
	}
	for _, v := range verbs {
		if v.name != name {
			continue
		}
		err := v.run(args[1:], stdout, stderr)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			// The flag package has printed the problem and the flags.
			return 2
		}
		fmt.Fprintf(stderr, "matchlog %s: %v\n", name, err)
		return 1
	}
	fmt.Fprintf(stderr, "matchlog: unknown verb %q\n", name)
	usage(stderr)
	return 2
}

// parseFlags parses a verb's flags, reporting problems on stderr; it returns
// flag.ErrHelp for -h and errUsage for anything else wrong, including
// arguments left over.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}
