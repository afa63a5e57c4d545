// Package engine is matchlog's matching engine: a deterministic,
// single-writer, price-time order book for many instruments.
//
// The engine does no I/O, reads no clock, starts no goroutines and takes no
// locks. Time arrives with each [Command]; effects leave as a slice of
// [Event] values. Feed two engines the same commands and they emit the same
// events and reach the same [Engine.StateHash]. That is what lets a cluster
// replay its log into a fresh engine and get the same book back.
//
// An [Engine] is not safe for concurrent use. [Engine.Clone] returns a
// [Frozen] copy-on-write view that other goroutines may read (snapshot it,
// cut it into partitions, hash it) while the single writer goes on.
//
// # Books
//
// Each side of a book is a B-tree (github.com/google/btree) of price
// levels, best first, and a hash table from price to level (the writer's
// only; an open-addressing table of our own, not a Go map, which costs
// several times more a lookup on the path of every move). A level holds its
// totals (quantity, order count) and its resting orders in arrival order,
// in a FIFO of fixed-size order slots grouped in chunks: a new order is
// appended at the tail, a cancel leaves a tombstone in O(1), and a level
// whose slots become sparse, or that outgrows its chunk size, is rebuilt
// (amortized O(1) per order). An index maps each live order id to an
// 8-byte entry naming its level (by side and price) and slot, so a cancel
// costs a hash lookup, a map lookup and a tombstone, however crowded the
// level; top-N depth costs O(N levels). The entry leaves the instrument
// out: a command names it, and the order at the entry's slot of that
// instrument's level must carry the command's id. An armed order's entry
// names a position in a table of trigger locations instead.
// Armed stop orders live in trigger trees per instrument and side, keyed by
// reference, stop price and arrival.
//
// A level that empties stays in its tree and table for reuse, within a
// budget of empty levels for the engine, so that orders moving between
// nearby prices do not delete and insert levels on every move. The
// writer caches each side's best non-empty level and keeps a sparse bitmap
// of the tick counts of the non-empty ones (the occupancy map), so finding
// the next best level when the best empties skips the empty levels kept
// in front of it a 64-tick word at a time, and none of them is dropped to
// keep that search short.
//
// A clone copies each book's trees lazily (google/btree's copy-on-write)
// and shares the levels and chunks: a level or chunk created before the
// latest clone is never written again; the writer copies it first (the
// level, then the one chunk it writes), so [Engine.Clone] costs
// O(instruments) and the first write to a level after a clone a bounded
// copy. A level of at most four chunks (nearly every level: a level of
// smaller chunks is rebuilt into larger ones before it takes a fifth)
// holds their 16-byte entries in itself, beside its totals, 128 bytes in
// all, so finding an order's chunk reads the level's two cache lines and
// then the chunk; a longer level (more than 256 orders, in chunks of 64)
// keeps them in copy-on-write segments of 32 entries, so that copy is a
// list of segment pointers and one segment, not a list as long as the
// level. A walk (snapshot, state hash, partition) reads the levels' chunks
// in order, prefetching each level and the first 2 KiB of its chunks a
// few levels ahead, and the rest of a long
// level's chunks one chunk ahead as it walks them (on amd64; in a book
// grown in random order a level's chunks are two or three dependent cache
// misses away from its tree item, and each chunk of a long level is
// another); a restore of the sorted stream lays each level's orders out in
// its chunks in one pass.
//
// Values on the writer's path (events, depth touches, takers, chunk
// entries) are written in place, field by field: a value built apart and
// copied in is read back with wide loads over the narrow stores just
// made, which the processor cannot forward (docs/performance.md measures
// what each cost).
//
// A resting order takes a 32-byte slot (price as ticks above the band
// floor, a dense account number, id, quantity, and the arrival sequence
// packed with its flags) and 16 bytes in the index, a segmented
// open-addressing table; with the unused slots of each level's last chunk
// (which starts half-size), level headers and the index's load factor it
// comes to about 63 B of heap per resting order at 1M orders in levels of
// about 30, 60-61 B in levels of about 50, and 55-57 B at 5M
// (docs/performance.md). Tree nodes come from free lists; levels and chunk
// buffers from pools refilled in slabs, and the long form's segments from
// a pool of their own, so the matching path allocates nothing in steady
// state. A restore carves its chunk buffers from arenas of up to 64 MiB
// and puts the index's tables in one allocation, both advised for huge
// pages and faulted in ahead of the restore on a goroutine of
// internal/hugepage, the one goroutine the engine starts (it only asks the
// kernel to map the memory and changes no byte of it): a new process
// restoring 1M orders would otherwise fault every 4 KiB of them in on its
// own.
//
// Why google/btree and not tidwall/btree: tidwall is faster at bulk
// loading sorted input, at walking and at cutting by rank (GetAt against a
// walk), but it has no node free list, so a steady mix of commands
// allocates on every node split, where google/btree allocates nothing. The
// price tree holds levels, not orders, so it is small and a restore
// inserts each level once. bench/btreecmp compares the two;
// docs/performance.md has the figures.
//
// # Limits
//
// A price band spans at most 2^32-1 ticks; one order's quantity is at most
// [MaxQty] (2^40), so level totals cannot overflow; arrival sequences are
// 56 bits, and a restore refuses a next sequence above 2^55.
//
// # Processing a command
//
// [Engine.Apply] handles one command:
//
//  1. Idempotence. If the command's Source has a high-water mark and Seq is
//     at or below it, the command is ignored: no events, no change. Otherwise
//     the mark becomes Seq, whether the command is then accepted or rejected
//     (so a resent command is never evaluated twice).
//  2. Validation, in the order listed below. The first failure gives
//     Rejected{Reason} and Release, and changes nothing else.
//  3. Accepted, then the command's effects (trades, cancels, replaced,
//     triggers fired and their effects), then one Depth event per price level
//     the command touched (in order of first touch, with the level's final
//     total; Count 0 means the level is gone), then Release.
//
// Validation order:
//
//   - DefineInstrument: Instrument 0 (bad_instrument); already defined
//     (duplicate_instrument); Tick ≤ 0 or Lot ≤ 0, MinPrice ≤ 0,
//     MaxPrice < MinPrice, a band edge off tick, or a band of more than
//     2^32-1 ticks (bad_instrument).
//   - NewOrder: unknown instrument; Side not buy/sell (bad_side); Type,
//     TIF or (for stops) Ref unknown, or Market/Stop with GTC, or Post with
//     Market/Stop or with a TIF other than GTC (bad_type); STP unknown
//     (bad_stp); Qty ≤ 0, above [MaxQty] or off lot (bad_quantity); for Limit and StopLimit
//     Price ≤ 0 or off tick (bad_price) or outside the band
//     (price_out_of_band); for Stop and StopLimit the same checks on Stop;
//     OrderID 0 or already live, resting or armed, on any instrument
//     (duplicate_order_id); a post-only Limit that would cross the best
//     opposite price (post_only_would_cross).
//   - Cancel: unknown instrument; OrderID not live on that instrument
//     (unknown_order).
//   - Modify: unknown instrument; OrderID not live on that instrument
//     (unknown_order); the order is armed (not_modifiable); Qty ≤ 0, above
//     [MaxQty] or off lot (bad_quantity); Price ≤ 0 or off tick (bad_price), outside the band
//     (price_out_of_band); same price and quantity (no_change); a post-only
//     order whose new price would cross (post_only_would_cross).
//   - MassCancel: Instrument 0 means every instrument, otherwise an unknown
//     instrument is rejected. Account 0 means every account.
//   - MarkPrice: unknown instrument; Price ≤ 0 or off tick (bad_price).
//   - Any other kind: bad_command.
//
// Every accepted new order, and every order that loses priority on modify or
// fires from a trigger, takes the engine's next arrival sequence (starting at
// 1). Time priority is arrival-sequence order.
//
// # Matching
//
// A taker with remaining quantity r and a limit price (none for market
// orders) meets the best opposite order M while r > 0 and M's price is at
// least as good as the limit. Trades are at the maker's price and emit
// Trade{OrderID: taker, Maker, Side: taker side, Price, Qty, Remaining,
// MakerRemaining}; each trade sets the instrument's last trade price.
// If the taker has an STP mode and M has the taker's account:
//
//   - cancel_newest: matching stops; the taker's remainder is cancelled.
//   - cancel_oldest: M is cancelled (self_trade); matching goes on.
//   - cancel_both: M is cancelled, then the taker's remainder; matching stops.
//   - decrement: q = min(r, M.qty); M is reduced by q (Cancelled with Qty q
//     and M's new remaining; removed at 0), then the taker by q (Cancelled
//     with Qty q and the new r); matching goes on while r > 0.
//
// After matching a remainder r > 0 is cancelled (self_trade if STP stopped
// the taker, else ioc for IOC and market orders) or rests (GTC limit).
//
// FOK orders are first matched in a dry run that walks the same makers the
// same way without changing anything: self-trade makers under cancel_oldest
// are skipped, cancel_newest/cancel_both stop the run, decrement ends it as
// unfilled. Unless the dry run fills the whole quantity, the order is
// Cancelled{Qty: Qty, Reason: fok} with no other effect.
//
// Modify: a lower quantity at the same price changes the order in place and
// keeps its priority. Any other change removes the order, gives it a new
// arrival sequence and matches it as a GTC limit taker at the new price
// (the remainder rests). Both emit Replaced first.
//
// # Triggers
//
// Stop and StopLimit orders are armed against the instrument's last trade
// price (Ref last) or its mark price (Ref mark); a reference of 0 (none yet)
// fires nothing. A buy fires when the reference ≥ Stop, a sell when it ≤
// Stop. After every NewOrder, Modify and MarkPrice the engine runs the
// trigger loop for that instrument: while any armed order there satisfies its
// condition, the one with the lowest arrival sequence fires:
// TriggerFired{OrderID, Side, Price: the reference price}, it takes a new
// arrival sequence and is processed as a taker (Stop as a market order,
// StopLimit as a limit order at Price) with its own TIF, STP and post-only
// flag; a post-only order that would then cross is Cancelled{post_only}.
//
// # Cancels
//
// Cancelled events carry the order's side, its limit price (0 for market and
// stop orders), Qty (quantity removed) and Remaining (quantity left). A mass
// cancel emits them instrument by instrument, resting bids then asks in
// priority order, then armed orders in trigger-book order.
//
// # Records
//
// [Engine.SnapshotTo] streams the whole state to a [Sink] through callbacks
// taking primitives only; [Engine.Restorer] rebuilds an engine from such a
// stream and checks it strictly; [Frozen.Partitions] cuts a frozen book into
// ordered partitions whose concatenation is exactly the resting-order stream.
// The state hash is the hash of that record stream (see [Hasher]), so it is
// equal after a snapshot and restore, after a replay, and across engines fed
// the same commands.
//
// A walk hands resting orders to a sink a run at a time: maximal runs of
// consecutive live slots of one chunk of one level. A [RunSink] takes each
// run in one call ([RestingRun]); any other sink gets one OnResting a
// record, the same records in the same order. The digests of a run are
// summed in one pass; on amd64 with AVX-512 (F, DQ, VL), runs of five
// orders or more are digested eight at a time in vector registers
// (hash_amd64.s), with the same digests as the Go code, which every other
// CPU runs and which GODEBUG=cpu.avx512f=off selects. The vector digest
// reads accounts at clamped dense numbers and reports a number outside the
// table, which then fails in Go as it always did.
package engine
