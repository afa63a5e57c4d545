// Package enginetest checks the matching engine against an independent,
// deliberately naive model of the same specification (engine/doc.go,
// engine/types.go, engine/record.go, engine/hash.go). Tests, the CLI's
// difftest and benchmarks import it; the engine never does.
//
// # Pieces
//
//   - [Model]: the reference engine. Books are sorted slices, everything is
//     found by linear scans, depth is summed from the orders, and the state
//     hash is [engine.Hasher] over the model's own record stream. Where the
//     specification leaves a choice open, the comment at the top of
//     model.go says what the model does.
//   - [Gen]: a seeded random command stream covering every command kind,
//     order type, TIF, STP mode and reject reason, with crowded levels,
//     many instruments, few accounts and resent commands ([GenConfig]
//     shapes it). It allocates nothing per command.
//   - [RunDiff]: one stream into an [engine.Engine] and a [Model] side by
//     side, comparing events after every command and state hashes and depth
//     at intervals, optionally with the engine's structure check, snapshot
//     and restore, and frozen clones; the first difference is a
//     [*Divergence] naming seed, command index, the command and both sides'
//     events.
//   - [ByteDecoder]: arbitrary bytes to commands, for FuzzDifferential.
//   - [Tape], [Recorder], [Records], [DiffLines]: record streams captured,
//     edited, replayed and compared.
//
// # Tests
//
// go test runs at least a million generated commands through engine and
// model; -diff.commands, -diff.seeds and -diff.seed run more. The tests also
// check that rejected commands change nothing but the source mark, that
// snapshot and restore round-trip (and the restored engine behaves the
// same), that partitions concatenate to the resting-order stream at every
// boundary size, that the restorer refuses damaged streams, and that frozen
// clones stay frozen while the writer goes on.
package enginetest
