// Command sbegen generates Go SBE flyweight codecs from an XML schema.
//
// Usage:
//
//	sbegen -schema FILE -out DIR [-package NAME]
//
// It writes DIR/NAME_gen.go. See package [github.com/matchlog/matchlog/sbe/gen].
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/matchlog/matchlog/sbe/gen"
)

func main() {
	schema := flag.String("schema", "", "SBE XML schema file")
	out := flag.String("out", "", "output directory")
	pkg := flag.String("package", "", "Go package name (default: from the schema's package attribute)")
	flag.Parse()
	if *schema == "" || *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if _, err := gen.GenerateFile(*schema, *out, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "sbegen:", err)
		os.Exit(1)
	}
}
