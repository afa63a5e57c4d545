// Package featsbe holds codecs generated from sbe/gen/testdata/feature.xml,
// a big-endian schema that uses every feature sbegen supports. It exists to
// test the generator's output; nothing outside sbe imports it.
package featsbe

//go:generate go run github.com/matchlog/matchlog/sbe/gen/cmd/sbegen -schema ../../gen/testdata/feature.xml -out . -package featsbe
