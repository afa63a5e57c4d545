// Package snapshot writes an engine's state as an Aeron service snapshot and
// restores it strictly. The [Publisher] is an [engine.Sink] that encodes
// each record in place into claimed publication frames; the [Loader] reads
// the frames back from an image and feeds an [engine.Restorer].
//
// # The stream
//
// One snapshot is a run of unfragmented messages, one per frame, each at
// most one claim (MTU - 32 bytes), so nothing is fragmented and restore
// needs no reassembly:
//
//	SnapshotMarker BEGIN   cluster schema 111, template 100 (48 bytes):
//	                       typeId, logPosition, leadershipTermId, index 0,
//	                       mark BEGIN, timeUnit, appVersion
//	MeSnapshotBegin        engine.Header                  (52 bytes)
//	SourceHwm  × sources   one message per source         (24 bytes)
//	Mark       × instr.    one message per instrument     (60 bytes)
//	Orders     × batches   group of 47-byte entries       (one claim each)
//	Triggers   × batches   group of 58-byte entries       (one claim each)
//	End                    counts, state hash, checksum   (56 bytes)
//	SnapshotMarker END     the BEGIN fields, mark END     (48 bytes)
//
// The schema has no groups for sources and marks, and there are few of
// them, so each is its own message.
//
// The markers are Aeron's, byte for byte, and the BEGIN fields are
// repeated in END. Note what that does and does not buy: Aeron's own
// ServiceSnapshotLoader requires every message before END to be of schema
// 111, so it would refuse our records between the markers. On an Aeron
// host this whole stream is the user data written in onTakeSnapshot, after
// the container's own BEGIN ... END, and this package's Loader reads it
// from the image the container hands to onStart.
//
// # Batches
//
// A batch is claimed at the largest size one claim allows, or for the
// entries left of its kind when fewer: with max payload P, a batch holds
// n = (P - 12) / entry entries (29 orders or 23 triggers at MTU 1,408;
// 1,392 or 1,128 at 65,504; see [BatchCapacity]), and the claim is exactly
// 12 + n*entry bytes, the last batch of a kind 12 + m*entry for the m
// entries the header's counts leave for it. The header and group
// dimensions are written when the claim is taken; each OnArmedTrigger
// encodes one entry in place through the generated flyweight, each
// resting order through putOrder (one bounds check and nine stores at the
// flyweight's offsets, checked against it by a test); the publisher is an
// [engine.RunSink], so the engine hands it a level's run of orders in one
// OnRestingRun, which fills the open batch's free entries in one loop and
// opens the next batch when it is full. When the batch is full, the record
// kind changes or the stream ends, the batch is closed: the count is
// rewritten to the entries written (the trigger flyweight's
// ResetCountToIndex; setGroupCount for orders), and the claim is
// committed.
//
// A claim cannot shrink: logbuf's Claim, like Aeron's BufferClaim, has a
// fixed frame length, and the frame header is written with it at claim
// time. Hence the sizing from the header's counts: a last batch claimed at
// full size would carry up to one frame of zeros, 64 KiB at MTU 65,504,
// in every snapshot. Earlier versions of this package did claim it at
// full size and zeroed the tail; the Loader still reads such batches:
// the group count tells it how many entries are valid, and the tail after
// them must be zero (a non-zero byte after the last entry is trailing
// garbage). An engine stream with more records of a kind than its header
// counted fails the take.
//
// # Checksum
//
// End carries a 64-bit checksum of every message from MeSnapshotBegin up
// to End, over each message's encoded bytes only (never a batch's unused
// tail, never the markers or End itself): FNV-1a's basis and prime applied
// to little-endian 64-bit words in four interleaved lanes, folded per
// message, then the message length (see checksum.go for the exact steps).
// Each step is a bijection of what it updates, so any change confined to
// one word is always caught; four independent multiply chains keep it to
// a few nanoseconds an order (docs/performance.md). The state hash in End (the engine's) covers the records'
// meaning; the checksum covers their bytes and order.
//
// # Publishing
//
// [Publisher.Take] streams an engine through [engine.Engine.SnapshotRunsTo].
// The Publisher writes through a [stream.Claimer] (TryClaim, Commit, Abort,
// MaxPayloadLength); [stream.PublicationClaimer] adapts our log buffer's exclusive
// publication and an adapter over an Aeron client Publication and its
// BufferClaim fits the same four methods. Back-pressure (position
// [stream.BackPressured] or [stream.AdminAction] with a nil error) is retried without
// limit, calling the caller's idle function between tries so the host's
// duty cycle keeps running; an error from idle, any other negative
// position or a publication error fails the take, and the claim in
// progress is aborted. The take holds no buffer of the book: every byte is
// written once, into the term. It writes every byte of every claim, so
// where the claimer can claim without zeroing the payload first
// ([stream.Overwriter], [stream.AheadOverwriter]: our log buffer's, and the
// node's snapshot publications) the Publisher claims that way;
// TestTakeOverStaleLog holds it to that over logs full of older bytes. A
// reused Publisher allocates nothing per take (TestTakeAllocs).
//
// # Loading
//
// [Loader.Load] polls a [stream.FragmentSource] ([stream.ImageSource] adapts logbuf's
// Image) and checks, in order: SnapshotMarker BEGIN first, with the type id
// and app version the caller expects; MeSnapshotBegin; records of our
// schema (id 7001, version 1) and known templates only, each with
// its exact block length and length, batches with the right entry length,
// at least one entry, entries inside the frame and zeros after them; End
// with the checksum of what arrived, then counts and state hash checked by
// the restorer; SnapshotMarker END with the BEGIN fields; nothing after
// END. The handler never panics and never returns an error through Poll: it
// records the first error, naming the fragment index and its stream
// position, and ignores the rest; the loop returns it after Poll. Aeron's
// Image.poll swallows a handler's exceptions, which is why. Once a batch's
// framing has passed, its Orders entries are read in place at their
// fixed offsets (TestOrdersOffsets ties them to the generated codec),
// one bounds check an entry, and handed to the restorer one by one.
//
// The load is bounded: LoadOptions.MaxFragments caps the fragments read,
// and IdlePolls consecutive empty polls (default 1, for a complete
// recording or image) end it with [ErrEnded], "snapshot ended before END".
// A reader racing a live writer sets IdlePolls high and an Idle function.
//
// The engine is built aside by the restorer and handed out only when END
// has arrived and every check passed; on any error Load returns a nil
// engine, never a partial one.
//
// # Parallel encode
//
// [Publisher.SetParallel] applies a [Parallel] (workers, threshold,
// partition size), the one place the cluster service, the command line and
// the benchmarks decide them; it starts the encoding goroutines
// ([Publisher.StartWorkers]), owned by the publisher and stopped by
// [Publisher.Close]. Parallel encode is off by default, and
// [MaxLiveWorkers] bounds what helps a live node.
// [Publisher.TakeFrozen] takes an [engine.Frozen] view: with workers
// running and at least [Publisher.ParallelMin] resting orders
// ([DefaultParallelMin], from a measured crossover: docs/performance.md),
// the book is cut with [engine.Frozen.EachPartition] into partitions of
// about [Publisher.PartitionOrders] orders, at least four per worker, and
// each small enough that two fit in the claimer's window. The caller's
// goroutine (the owner) walks everything but the resting orders
// (Frozen.SnapshotWithoutOrders); where the orders belong it runs the cut
// and, as each partition is cut, claims its Orders batches, in order and
// exactly as a linear take claims them (same batch sizes, frames, headers
// and group counts), ahead of the workers ([stream.AheadClaimer]: several
// claims outstanding, committed in order; a reader stops at the first one
// outstanding), and hands partition i, with the batches its entries fall
// in, to whichever worker takes it, so the workers start before the rest
// of the book is cut (the cut reads every level). The partitions' counts
// must add up to the book's, checked as they are cut and at the end. The
// worker encodes the partition's entries straight into those batches (the
// same putRun the linear path uses). The owner collects partitions in
// order and commits each batch, with the same checksum over the same
// bytes, once every partition writing into it is done; at most 8n
// partitions are in flight. A worker yields its core after each
// partition, so the owner it readied runs between partitions even when no
// core is free for it. When a claim ahead is back-pressured with
// nothing in flight (a reader's window narrower than the claimer's), the
// owner encodes that partition itself, committing batches as it fills
// them. Through a claimer that cannot claim ahead (an Aeron host's
// publication) the take copies instead: the workers encode into 48 KiB
// chunks pooled by their slots from the start of the take (the cut runs
// first, and a count that does not add up fails the take before anything
// is claimed), and the owner copies them in order into batches claimed as
// a linear take claims them.
// End's state hash is NonOrderHash plus the partitions' hash sums. The output is
// byte-identical to the linear take (TestParallelIdentical, at many sizes,
// worker counts and partition sizes; difftest --workers checks it on every
// parallel snapshot it takes). A worker's error fails the take. After the
// first take nothing is allocated (TestParallelTakeAllocs).
//
// # Measuring
//
// bench.SnapshotBook builds the benchmark book through commands (never by
// restore); `go test -bench Snapshot ./bench` and
// `matchlog bench snapshot` time takes against a drain-only reader and
// restores in a separate pass; `matchlog difftest` takes and restores
// snapshots at random points of a random command stream and compares the
// restored engine with the original after every command.
package snapshot
