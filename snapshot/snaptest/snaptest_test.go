package snaptest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/snapshot"
)

// scaled shrinks a run under -short and the race detector.
func scaled(n int) int {
	if testing.Short() || raceEnabled {
		return max(n/5, 1)
	}
	return n
}

// TestRestoreDiff runs short streams with linear and parallel snapshots:
// everything agrees, every snapshot is restored, every parallel take is
// checked byte for byte, and the stream is RunDiff's.
func TestRestoreDiff(t *testing.T) {
	n := scaled(100_000)
	var rotated, pressured int
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers%d", workers), func(t *testing.T) {
			res, err := RunRestoreDiff(3, n, Options{Workers: workers, Every: 4000, HashWindow: 300})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(res)
			want, err := enginetest.RunDiff(3, n, enginetest.DiffOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.DiffResult != want {
				t.Errorf("totals %v\nRunDiff's %v", res.DiffResult, want)
			}
			if res.Snapshots < n/8000 || res.Restores != res.Snapshots || len(res.Points) != res.Snapshots ||
				res.Linear+res.Parallel != res.Snapshots || res.EventChecks == 0 || res.HashChecks < res.Restores {
				t.Errorf("counts: %v", res)
			}
			if workers == 0 && res.Parallel != 0 || workers > 0 && (res.Parallel != res.Snapshots/2 || res.ByteChecks != res.Parallel) {
				t.Errorf("parallel takes: %v", res)
			}
			mtus := map[int]bool{}
			for i, p := range res.Points {
				mtus[p.MTU] = true
				if p.Index != i || p.At < 1 || p.At >= n || p.Bytes <= 0 || i > 0 && p.At <= res.Points[i-1].At {
					t.Errorf("point %d: %v", i, p)
				}
			}
			if len(mtus) != 2 {
				t.Errorf("MTUs used: %v", mtus)
			}
			rotated += res.Rotated
			pressured += res.BackPressured
		})
	}
	if rotated == 0 || pressured == 0 {
		t.Errorf("%d snapshots crossed a term boundary, %d were back-pressured: want some of each", rotated, pressured)
	}
}

// TestNoModel: without the model, the same stream and the same snapshots.
func TestNoModel(t *testing.T) {
	n := scaled(30_000)
	a, err := RunRestoreDiff(5, n, Options{Every: 3000, Workers: 1, HashWindow: 100})
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunRestoreDiff(5, n, Options{Every: 3000, Workers: 1, HashWindow: 100, NoModel: true})
	if err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() || a.DiffResult != b.DiffResult {
		t.Errorf("with model %v\nwithout %v", a, b)
	}
}

func TestPoints(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 50, 101, 10_000, 1_000_000} {
		for seed := range uint64(20) {
			pts := points(rand.New(rand.NewPCG(seed, 1)), n, 30_000)
			if n < 2 {
				if len(pts) != 0 {
					t.Errorf("n %d: points %v", n, pts)
				}
				continue
			}
			if len(pts) == 0 || pts[0] < 1 || pts[0] > 100 || pts[len(pts)-1] > n-1 || pts[len(pts)-1] < n-1-max(1, n/100) {
				t.Errorf("n %d: points %v", n, pts)
			}
			for i := 1; i < len(pts); i++ {
				if pts[i] <= pts[i-1] {
					t.Errorf("n %d: points %v not ascending", n, pts)
				}
			}
			if n == 1_000_000 && (len(pts) < 20 || len(pts) > 50) {
				t.Errorf("n %d: %d points", n, len(pts))
			}
		}
	}
}

// divergence runs and requires a *Divergence.
func divergence(t *testing.T, seed int64, n int, opts Options) *Divergence {
	t.Helper()
	res, err := RunRestoreDiff(seed, n, opts)
	var d *Divergence
	if !errors.As(err, &d) {
		t.Fatalf("want a divergence, got %v (%v)", err, res)
	}
	if !strings.Contains(d.Error(), "reproduce with: "+d.Reproduce()+"\n") {
		t.Errorf("no reproduce line:\n%s", d.Error())
	}
	return d
}

// TestDamagedSnapshot flips one byte of one fragment on its way to the
// loader: the load must fail, reported at the snapshot's command index.
func TestDamagedSnapshot(t *testing.T) {
	const seed, n, every = 11, 20_000, 1000
	// The model is left out: it changes nothing here but the time.
	clean, err := RunRestoreDiff(seed, n, Options{Every: every, Workers: 2, NoModel: true, HashWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	frags, offs := []int{0, 1, 2, 5, -3, -2, -1}, []int{0, 7, 20, 1 << 20} // negative fragments count from the end
	if testing.Short() || raceEnabled {
		frags, offs = []int{0, 1, 5, -2, -1}, []int{0, 20}
	}
	for _, snap := range []int{2, 3} { // linear, parallel
		at, frames := clean.Points[snap].At, clean.Points[snap].Frames
		for _, frag := range frags {
			for _, off := range offs {
				t.Run(fmt.Sprintf("snapshot%d/fragment%d/offset%d", snap, frag, off), func(t *testing.T) {
					opts := Options{Every: every, Workers: 2, NoModel: true, HashWindow: -1}
					opts.damage = func(k int) (int, int, bool) {
						if k != snap {
							return 0, 0, false
						}
						f := frag
						if f < 0 {
							f += clean.Points[snap].Frames
						}
						return f, off, true
					}
					d := divergence(t, seed, n, opts)
					if d.What != "snapshot load failed" || !errors.Is(d, snapshot.ErrLoad) || d.Err == nil {
						t.Fatalf("want a failed load:\n%v", d)
					}
					if d.Index != at-1 || d.Snapshot == nil || d.Snapshot.Index != snap || d.Snapshot.At != at || d.Command.Kind == 0 {
						t.Fatalf("reported at command %d, snapshot %+v; want command %d, snapshot %d", d.Index, d.Snapshot, at-1, snap)
					}
					if !strings.Contains(d.Error(), "--seed 11 --commands 20000 --workers 2\n") {
						t.Errorf("reproduce line:\n%s", d.Error())
					}
					if d.Snapshot.Frames > frames {
						t.Errorf("the loader read %d fragments, the snapshot has %d", d.Snapshot.Frames, frames)
					}
				})
			}
		}
	}
}

// TestParallelBytesDiffer: a parallel take that differs from the linear
// take by one byte is reported, with the fragment and the byte.
func TestParallelBytesDiffer(t *testing.T) {
	opts := Options{Every: 2000, Workers: 2, NoModel: true, HashWindow: -1}
	frag, at := -1, -1
	opts.alterRef = func(k int, ref [][]byte) {
		if k == 3 {
			frag = len(ref) - 3 // a batch
			at = len(ref[frag]) / 2
			ref[frag][at] ^= 1
		}
	}
	d := divergence(t, 11, 20_000, opts)
	if d.What != "parallel take differs from the linear take" || d.Snapshot == nil || d.Snapshot.Index != 3 ||
		d.Snapshot.Kind != Parallel || !strings.HasPrefix(d.Detail, fmt.Sprintf("fragment %d: byte %d:", frag, at)) {
		t.Fatalf("got:\n%v", d)
	}
}

// TestBrokenRestore changes the restored engine behind the check, as a
// broken restore would: the run must stop at the first command after that
// restore.
func TestBrokenRestore(t *testing.T) {
	const seed, n, every, snap = 7, 20_000, 2000, 3
	clean, err := RunRestoreDiff(seed, n, Options{Every: every, Workers: 2, NoModel: true})
	if err != nil {
		t.Fatal(err)
	}
	at := clean.Points[snap].At
	for _, tc := range []struct {
		name       string
		extra      engine.Command
		hashWindow int
		what       string
	}{
		// Only a new source's high-water mark changes: no event shows it,
		// the state hash does.
		{"source", engine.Command{Kind: engine.CmdCancel, Source: 4242, Seq: 1, Instrument: 1, OrderID: 1 << 60}, 100,
			"state hash of the restored engine differs"},
		// Every order goes: the next command's events or the counts differ.
		{"mass-cancel", engine.Command{Kind: engine.CmdMassCancel, Source: 4242, Seq: 1}, 100,
			"events of the restored engine differ"},
		// Without the window, hashes are compared every 1,024 commands.
		{"source-no-window", engine.Command{Kind: engine.CmdCancel, Source: 4242, Seq: 1, Instrument: 1, OrderID: 1 << 60}, -1,
			"state hash of the restored engine differs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := Options{Every: every, Workers: 2, HashWindow: tc.hashWindow, NoModel: true}
			opts.afterRestore = func(k int, shadow *engine.Engine) {
				if k == snap {
					shadow.Apply(&tc.extra)
				}
			}
			d := divergence(t, seed, n, opts)
			want := at
			if tc.hashWindow < 0 { // the next multiple of 1,024 or the next snapshot, which checks the old shadow
				want = min((at/1024+1)*1024, clean.Points[snap+1].At) - 1
			}
			what := d.What
			if what == "order or trigger count of the restored engine differs" {
				what = "events of the restored engine differ" // as good
			}
			if what != tc.what || d.Index != want || d.Snapshot == nil || d.Snapshot.Index != snap || d.Model != nil {
				t.Fatalf("want %q at command %d after snapshot %d, got:\n%v", tc.what, want, snap, d)
			}
			if tc.what == "state hash of the restored engine differs" &&
				(d.PrimaryHash == d.ShadowHash || !strings.Contains(d.Error(), "primary: header")) {
				t.Errorf("hashes and records:\n%v", d)
			}
			t.Logf("%v", d)
		})
	}
}

// TestDivergenceError checks the rendering of both kinds of divergence.
func TestDivergenceError(t *testing.T) {
	p := []engine.Event{{Kind: engine.EvAccepted, Source: 1, Seq: 2, Instrument: 3, OrderID: 9}, {Kind: engine.EvRelease, Source: 1, Seq: 2, Instrument: 3}}
	s := []engine.Event{p[0], {Kind: engine.EvTrade, Source: 1, Seq: 2, Instrument: 3, OrderID: 9, Maker: 4, Side: engine.Buy, Price: 100, Qty: 1}}
	d := &Divergence{Seed: 9, Commands: 1000, Workers: 3, Check: true, Index: 500,
		Command:  engine.Command{Kind: engine.CmdCancel, Source: 1, Seq: 2, Instrument: 3, OrderID: 9},
		What:     "events of the restored engine differ",
		Snapshot: &SnapshotInfo{Index: 4, At: 450, Kind: Parallel, Workers: 3, MTU: 1408, Term: 65536}, Since: 51,
		Primary: p, Shadow: s}
	got := d.Error()
	for _, want := range []string{
		"snaptest: divergence at seed 9, command index 500: events of the restored engine differ\n",
		"command: " + enginetest.FormatCommand(&d.Command) + "\n",
		"restored from snapshot 4 (parallel, 3 workers, MTU 1408, term 65536,",
		"taken after 450 commands", "fed 51 commands since\n",
		"first differing event: 1\n",
		"primary events (2):\n    0 " + enginetest.FormatEvent(&p[0]) + "\n *  1 " + enginetest.FormatEvent(&p[1]) + "\n",
		"restored events (2):\n    0 " + enginetest.FormatEvent(&s[0]) + "\n *  1 " + enginetest.FormatEvent(&s[1]) + "\n",
		"reproduce with: matchlog difftest --seed 9 --commands 1000 --workers 3 --check\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}

	md := &enginetest.Divergence{Seed: 9, Index: 500, What: "events differ", Engine: p, Model: s}
	d = &Divergence{Seed: 9, Commands: 1000, Index: 500, What: "primary engine and model diverge: events differ", Model: md}
	var got2 *enginetest.Divergence
	if !errors.As(d, &got2) || got2 != md {
		t.Error("errors.As does not find the model divergence")
	}
	for _, want := range []string{"engine events (2):\n", "model events (2):\n", "reproduce with: matchlog difftest --seed 9 --commands 1000 --workers 0\n"} {
		if !strings.Contains(d.Error(), want) {
			t.Errorf("lacks %q:\n%s", want, d.Error())
		}
	}
}
