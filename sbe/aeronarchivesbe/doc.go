// This package holds SBE flyweight codecs for the Aeron Archive
// catalog records matchlog reads and writes (schema id 101, version 10),
// generated from ../schemas/aeron-archive.xml by matchlog's own generator.
// The files other than this one are generated: do not edit them, run
// go generate.
//
// The layout follows Aeron 1.48 (real-logic/aeron commit bb0c2d9c); the
// schema file records the sources and the differences from the version 6
// codecs in lirm/aeron-go. The cross-checks are in ../aeroncheck.
//
// (The package doc comment is in the generated file; this one is detached.)

package aeronarchivesbe

//go:generate go run github.com/matchlog/matchlog/sbe/gen/cmd/sbegen -schema ../schemas/aeron-archive.xml -out . -package aeronarchivesbe
