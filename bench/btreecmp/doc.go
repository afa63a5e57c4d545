// Package btreecmp compares github.com/google/btree with
// github.com/tidwall/btree for the order book's side trees. It holds no
// code that matchlog uses: the comparison lives in btreecmp_test.go.
//
// The item is a resting order stored by value, 40 bytes, laid out as the
// engine's own (price, sequence, id, account, quantity), keyed as the bid
// side is: price descending, then sequence ascending. Both trees use degree
// 32 (at most 63 items per node); tidwall runs with NoLocks, as a single
// writer would.
//
// What is measured, at 1M items unless said:
//
//   - Walk: a full in-order walk of a tree built in arrival order (ns/order),
//     and of one bulk-loaded from sorted input.
//   - LoadSorted: bulk load of sorted input (google: ReplaceOrInsert in
//     order; tidwall: Load).
//   - InsertRandom: insert in arrival order (random prices, rising
//     sequence), as a book is built through commands.
//   - Cut8: find the 7 keys that cut the tree into 8 parts of equal rank
//     (tidwall: GetAt; google has no rank index and must walk).
//   - Clone: the clone alone (google: Clone; tidwall: Copy), and a clone
//     followed by one insert into the writer's tree, which pays the
//     copy-on-write of one path.
//   - Heap per item, after a GC, reported by LoadSorted and InsertRandom as
//     B/item.
//   - Churn: the steady state of a small book (1,000 orders, delete one and
//     insert one at a random price per op), for what each tree allocates
//     once warm: google with a node free list, tidwall with none.
//
// Run the variants interleaved and take medians, for example
//
//	for i in 1 2 3 4 5; do cat /proc/loadavg; go test -run '^$' -bench . -count 1 ./bench/btreecmp; done
package btreecmp
