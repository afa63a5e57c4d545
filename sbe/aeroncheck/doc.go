// Package aeroncheck has no code of its own: its tests cross-check matchlog's
// generated Aeron codecs (sbe/aeronclustersbe, sbe/aeronarchivesbe) against
// lirm/aeron-go's codecs, which real-logic's SBE tool generated, and decode
// files that real Aeron wrote (shared/fixtures/aeron).
//
// For every Aeron message matchlog uses, random field values are encoded
// with one implementation and decoded with the other, in both directions;
// all fields and all byte lengths must match, and both encoders must produce
// the same bytes. Where Aeron's schema changed between the version aeron-go
// was generated from and Aeron 1.48, the tests check the documented
// difference instead (see ../schemas/aeron-cluster.xml).
package aeroncheck
