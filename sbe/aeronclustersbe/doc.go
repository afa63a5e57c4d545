// This package holds SBE flyweight codecs for the Aeron Cluster
// messages matchlog reads and writes (schema id 111, version 12), generated
// from ../schemas/aeron-cluster.xml by matchlog's own generator. The files
// other than this one are generated: do not edit them, run go generate.
//
// The layout follows Aeron 1.48 (real-logic/aeron commit bb0c2d9c); the
// schema file records the sources and the differences from the version 8
// codecs in lirm/aeron-go. The cross-checks are in ../aeroncheck.
//
// (The package doc comment is in the generated file; this one is detached.)

package aeronclustersbe

//go:generate go run github.com/matchlog/matchlog/sbe/gen/cmd/sbegen -schema ../schemas/aeron-cluster.xml -out . -package aeronclustersbe
