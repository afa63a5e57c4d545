package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/scenario"
)

// runEngine dispatches `matchlog engine <subverb>`.
func runEngine(args []string, stdout, stderr io.Writer) error {
	const engineUsage = "usage: matchlog engine run --in commands.jsonl [--out events.jsonl]\n\n" +
		"Run 'matchlog help engine run' for the flags.\n"
	if _, ok, err := subcommand("engine", args, func(n string) bool { return n == "run" }, engineUsage, stderr); !ok {
		return err
	}
	fs := flag.NewFlagSet("engine run", flag.ContinueOnError)
	in := fs.String("in", "", "commands, one JSON object per line (required; - for stdin)")
	out := fs.String("out", "", "where to write the events, one JSON object per line (default stdout)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: matchlog engine run --in commands.jsonl [--out events.jsonl]\n\n"+
			"Applies each command to a new engine as it is read and writes the events, then a line\n"+
			"with the state hash. A bad line stops the run: its events so far are written, nothing\n"+
			"after it is applied, and the exit status is 1. A line may be at most 1 MiB long.\n"+
			"Formats: see README.md (and go doc ./internal/scenario).\n\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args[1:], stderr); err != nil {
		return err
	}
	if *in == "" {
		fmt.Fprint(stderr, "engine run: --in is required\n")
		fs.Usage()
		return errUsage
	}
	return engineRun(*in, *out, stdout)
}

func engineRun(inPath, outPath string, stdout io.Writer) (err error) {
	var in io.Reader = os.Stdin
	if inPath != "-" {
		f, err := os.Open(inPath)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	out := stdout
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		out = f
	}
	// scenario.Run buffers its output itself.
	_, err = scenario.Run(in, out, engine.New())
	if err != nil && inPath != "-" {
		return fmt.Errorf("%s: %w", inPath, err)
	}
	return err
}
