package btreecmp

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	gbtree "github.com/google/btree"
	tbtree "github.com/tidwall/btree"
)

// order is a resting order by value: 40 bytes, as in the engine.
type order struct {
	price   int64
	seq     uint64
	id      uint64
	account uint64
	qty     int64
}

// lessBid orders the bid side: price descending, then arrival ascending.
func lessBid(a, b order) bool {
	return a.price > b.price || (a.price == b.price && a.seq < b.seq)
}

const (
	degree = 32
	items  = 1_000_000
	levels = 5_000 // ~200 orders per price level
)

// arrivals returns n orders in arrival order: random prices, rising
// sequence. The same seed gives the same orders.
func arrivals(n int) []order {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]order, n)
	for i := range out {
		out[i] = order{
			price:   10_000 + r.Int64N(levels),
			seq:     uint64(i + 1),
			id:      uint64(i + 1),
			account: 1 + r.Uint64N(1000),
			qty:     1 + r.Int64N(100),
		}
	}
	return out
}

var (
	inArrival []order // arrival order
	inSorted  []order // walk order
)

func inputs() ([]order, []order) {
	if inArrival == nil {
		inArrival = arrivals(items)
		inSorted = slices.Clone(inArrival)
		slices.SortFunc(inSorted, func(a, b order) int {
			switch {
			case lessBid(a, b):
				return -1
			case lessBid(b, a):
				return 1
			}
			return 0
		})
	}
	return inArrival, inSorted
}

func newGoogle() *gbtree.BTreeG[order] { return gbtree.NewG(degree, lessBid) }

func newTidwall() *tbtree.BTreeG[order] {
	return tbtree.NewBTreeGOptions(lessBid, tbtree.Options{Degree: degree, NoLocks: true})
}

func googleInsert(in []order) *gbtree.BTreeG[order] {
	t := newGoogle()
	for _, o := range in {
		t.ReplaceOrInsert(o)
	}
	return t
}

func tidwallInsert(in []order) *tbtree.BTreeG[order] {
	t := newTidwall()
	for _, o := range in {
		t.Set(o)
	}
	return t
}

func tidwallLoad(in []order) *tbtree.BTreeG[order] {
	t := newTidwall()
	for _, o := range in {
		t.Load(o)
	}
	return t
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// reportPerItem reports ns/order from the loop's elapsed time.
func reportPerItem(b *testing.B, n int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/order")
}

// buildBench times building a tree from in and reports heap per item of
// the last tree built.
func buildBench[T any](b *testing.B, in []order, build func([]order) T, check func(T) int) {
	b.ReportAllocs()
	base := heapAlloc()
	for b.Loop() {
		runtime.KeepAlive(build(in))
	}
	reportPerItem(b, len(in))
	t := build(in) // the loop's trees are garbage now; measure one live tree
	after := heapAlloc()
	if check(t) != len(in) {
		b.Fatalf("tree has %d items, want %d", check(t), len(in))
	}
	b.ReportMetric(float64(after-base)/float64(len(in)), "B/item")
	runtime.KeepAlive(t)
}

func BenchmarkInsertRandom(b *testing.B) {
	arr, _ := inputs()
	b.Run("google", func(b *testing.B) {
		buildBench(b, arr, googleInsert, (*gbtree.BTreeG[order]).Len)
	})
	b.Run("tidwall", func(b *testing.B) {
		buildBench(b, arr, tidwallInsert, (*tbtree.BTreeG[order]).Len)
	})
}

func BenchmarkLoadSorted(b *testing.B) {
	_, sorted := inputs()
	b.Run("google", func(b *testing.B) {
		buildBench(b, sorted, googleInsert, (*gbtree.BTreeG[order]).Len)
	})
	b.Run("tidwall", func(b *testing.B) {
		buildBench(b, sorted, tidwallLoad, (*tbtree.BTreeG[order]).Len)
	})
}

var sink int64

func BenchmarkWalk(b *testing.B) {
	arr, sorted := inputs()
	for _, built := range []struct {
		name string
		in   []order
	}{{"arrival", arr}, {"sorted", sorted}} {
		b.Run("google/built="+built.name, func(b *testing.B) {
			b.ReportAllocs()
			t := newGoogle()
			for _, o := range built.in {
				t.ReplaceOrInsert(o)
			}
			for b.Loop() {
				var s int64
				t.Ascend(func(o order) bool {
					s += o.qty
					return true
				})
				sink = s
			}
			reportPerItem(b, t.Len())
		})
		b.Run("tidwall-scan/built="+built.name, func(b *testing.B) {
			b.ReportAllocs()
			var t *tbtree.BTreeG[order]
			if built.name == "sorted" {
				t = tidwallLoad(built.in)
			} else {
				t = tidwallInsert(built.in)
			}
			for b.Loop() {
				var s int64
				t.Scan(func(o order) bool {
					s += o.qty
					return true
				})
				sink = s
			}
			reportPerItem(b, t.Len())
		})
		b.Run("tidwall-walk/built="+built.name, func(b *testing.B) {
			b.ReportAllocs()
			var t *tbtree.BTreeG[order]
			if built.name == "sorted" {
				t = tidwallLoad(built.in)
			} else {
				t = tidwallInsert(built.in)
			}
			for b.Loop() {
				var s int64
				t.Walk(func(os []order) bool {
					for i := range os {
						s += os[i].qty
					}
					return true
				})
				sink = s
			}
			reportPerItem(b, t.Len())
		})
	}
}

// BenchmarkCut8 finds the 7 keys that cut the tree into 8 parts of equal
// rank: what a parallel snapshot needs before its workers start.
func BenchmarkCut8(b *testing.B) {
	arr, _ := inputs()
	const parts = 8
	b.Run("google-walk", func(b *testing.B) {
		b.ReportAllocs()
		t := googleInsert(arr)
		n := t.Len()
		var cuts [parts - 1]order
		for b.Loop() {
			i, k := 0, 0
			next := n / parts
			t.Ascend(func(o order) bool {
				if i == next {
					cuts[k] = o
					k++
					if k == parts-1 {
						return false
					}
					next = n * (k + 1) / parts
				}
				i++
				return true
			})
		}
		checkCuts(b, cuts[:], n, parts)
	})
	b.Run("tidwall-getat", func(b *testing.B) {
		b.ReportAllocs()
		t := tidwallInsert(arr)
		n := t.Len()
		var cuts [parts - 1]order
		for b.Loop() {
			for k := range cuts {
				cuts[k], _ = t.GetAt(n * (k + 1) / parts)
			}
		}
		checkCuts(b, cuts[:], n, parts)
	})
}

func checkCuts(b *testing.B, cuts []order, n, parts int) {
	_, sorted := inputs()
	for k, c := range cuts {
		if want := sorted[n*(k+1)/parts]; c != want {
			b.Fatalf("cut %d = %+v, want %+v", k, c, want)
		}
	}
}

func BenchmarkClone(b *testing.B) {
	arr, _ := inputs()
	extra := order{price: 1, seq: items + 1, id: items + 1, qty: 1}
	b.Run("google/clone", func(b *testing.B) {
		b.ReportAllocs()
		t := googleInsert(arr)
		var c *gbtree.BTreeG[order]
		for b.Loop() {
			c = t.Clone()
		}
		runtime.KeepAlive(c)
	})
	b.Run("tidwall/copy", func(b *testing.B) {
		b.ReportAllocs()
		t := tidwallInsert(arr)
		var c *tbtree.BTreeG[order]
		for b.Loop() {
			c = t.Copy()
		}
		runtime.KeepAlive(c)
	})
	// A clone, then one write into the writer's tree: the write copies the
	// path it touches. Insert and delete alternate so the tree stays put.
	b.Run("google/clone+write", func(b *testing.B) {
		b.ReportAllocs()
		t := googleInsert(arr)
		var c *gbtree.BTreeG[order]
		i := 0
		for b.Loop() {
			c = t.Clone()
			if i&1 == 0 {
				t.ReplaceOrInsert(extra)
			} else {
				t.Delete(extra)
			}
			i++
		}
		runtime.KeepAlive(c)
	})
	b.Run("tidwall/copy+write", func(b *testing.B) {
		b.ReportAllocs()
		t := tidwallInsert(arr)
		var c *tbtree.BTreeG[order]
		i := 0
		for b.Loop() {
			c = t.Copy()
			if i&1 == 0 {
				t.Set(extra)
			} else {
				t.Delete(extra)
			}
			i++
		}
		runtime.KeepAlive(c)
	})
}

// BenchmarkChurn is the steady state of a small book: a tree of 1,000
// orders where each op deletes one order and inserts a new one at a random
// price. It shows what each tree allocates once warm (google with a free
// list of nodes; tidwall has none).
func BenchmarkChurn(b *testing.B) {
	const size, ops = 1000, 1 << 16
	in := arrivals(size + ops)
	r := rand.New(rand.NewPCG(3, 4))
	// del[i] is the order op i deletes: any of the ones live at that point.
	live := slices.Clone(in[:size])
	del := make([]order, ops)
	for i := range ops {
		j := r.IntN(len(live))
		del[i] = live[j]
		live[j] = in[size+i]
	}
	run := func(b *testing.B, insert func(order), remove func(order)) {
		for _, o := range in[:size] {
			insert(o)
		}
		// One pass untimed, so free lists and node slices reach their size.
		for i := range ops {
			remove(del[i])
			insert(in[size+i])
		}
		for i := range ops {
			remove(in[size+i])
			insert(del[i])
		}
		b.ReportAllocs()
		i := 0
		fwd := true
		for b.Loop() {
			if fwd {
				remove(del[i])
				insert(in[size+i])
			} else {
				remove(in[size+i])
				insert(del[i])
			}
			if i++; i == ops {
				i, fwd = 0, !fwd
			}
		}
	}
	b.Run("google-freelist", func(b *testing.B) {
		t := gbtree.NewWithFreeListG(degree, lessBid, gbtree.NewFreeListG[order](1024))
		run(b, func(o order) { t.ReplaceOrInsert(o) }, func(o order) { t.Delete(o) })
	})
	b.Run("tidwall", func(b *testing.B) {
		t := newTidwall()
		run(b, func(o order) { t.Set(o) }, func(o order) { t.Delete(o) })
	})
}

// TestTreesAgree checks that both trees, built every way measured above,
// walk the same sequence and cut at the same keys.
func TestTreesAgree(t *testing.T) {
	arr := arrivals(50_000)
	sorted := slices.Clone(arr)
	slices.SortFunc(sorted, func(a, b order) int {
		if lessBid(a, b) {
			return -1
		}
		if lessBid(b, a) {
			return 1
		}
		return 0
	})
	walkG := func(tr *gbtree.BTreeG[order]) []order {
		var out []order
		tr.Ascend(func(o order) bool { out = append(out, o); return true })
		return out
	}
	walkT := func(tr *tbtree.BTreeG[order]) []order {
		var out []order
		tr.Scan(func(o order) bool { out = append(out, o); return true })
		return out
	}
	for name, got := range map[string][]order{
		"google arrival":  walkG(googleInsert(arr)),
		"google sorted":   walkG(googleInsert(sorted)),
		"tidwall arrival": walkT(tidwallInsert(arr)),
		"tidwall load":    walkT(tidwallLoad(sorted)),
	} {
		if !slices.Equal(got, sorted) {
			t.Errorf("%s: walk differs from sorted input", name)
		}
	}
	tr := tidwallInsert(arr)
	for _, k := range []int{0, 1, 777, len(sorted) - 1} {
		if o, _ := tr.GetAt(k); o != sorted[k] {
			t.Errorf("GetAt(%d) = %+v, want %+v", k, o, sorted[k])
		}
	}
}
