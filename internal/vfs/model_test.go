package vfs_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// TestMemMatchesOS runs the same random operations on the OS and on the
// memory FS and requires the same outcomes (success, ErrNotExist, ErrExist
// or another error) and the same final tree.
func TestMemMatchesOS(t *testing.T) {
	names := []string{"a", "b", "d", "d/a", "d/b", "d/e", "d/e/a"}
	for seed := range uint64(25) {
		rng := rand.New(rand.NewPCG(seed, 99))
		osRoot := t.TempDir()
		impls := []struct {
			fs   vfs.FS
			root string
		}{{vfs.Default, osRoot}, {vfs.NewMem(), "/"}}
		var trace []string
		for step := range 200 {
			name := names[rng.IntN(len(names))]
			other := names[rng.IntN(len(names))]
			kind := rng.IntN(8)
			off, size := rng.Int64N(16), rng.Int64N(16)
			var outcomes [2]string
			for i, impl := range impls {
				p, q := impl.fs.Join(impl.root, name), impl.fs.Join(impl.root, other)
				outcomes[i] = outcome(randomOp(impl.fs, kind, p, q, off, size))
			}
			trace = append(trace, fmt.Sprintf("%d: op %d %s %s %d %d -> %s", step, kind, name, other, off, size, outcomes[0]))
			if outcomes[0] != outcomes[1] {
				t.Logf("mem after the step:\n%s", dumpString(dump(t, impls[1].fs, "/")))
				t.Logf("os after the step:\n%s", dumpString(dump(t, vfs.Default, osRoot)))
				t.Fatalf("seed %d: os %s, mem %s; trace:\n%q", seed, outcomes[0], outcomes[1], trace)
			}
		}
		got, want := dump(t, impls[1].fs, "/"), dump(t, vfs.Default, osRoot)
		rel := map[string]string{}
		for k, v := range want {
			rel[k[len(osRoot):]] = v
		}
		if a, b := dumpString(got), dumpString(rel); a != b {
			t.Fatalf("seed %d: mem\n%s\nos\n%s", seed, a, b)
		}
	}
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, vfs.ErrNotExist):
		return "not-exist"
	case errors.Is(err, vfs.ErrExist):
		return "exist"
	}
	return "error"
}

func randomOp(fs vfs.FS, kind int, p, q string, off, size int64) error {
	switch kind {
	case 0:
		f, err := fs.Create(p)
		if err != nil {
			return err
		}
		return f.Close()
	case 1, 2, 3:
		f, err := fs.OpenRW(p)
		if err != nil {
			return err
		}
		defer f.Close()
		switch kind {
		case 1:
			_, err = f.WriteAt([]byte("0123456789")[:size%10], off)
		case 2:
			err = f.Truncate(size)
		case 3:
			err = f.Preallocate(size)
		}
		if err == nil {
			err = f.Sync()
		}
		return err
	case 4:
		return fs.Rename(p, q)
	case 5:
		return fs.Remove(p)
	case 6:
		return fs.MkdirAll(p)
	default:
		_, err := fs.Stat(p)
		return err
	}
}
