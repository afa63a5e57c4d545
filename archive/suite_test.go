package archive

import (
	"fmt"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/internal/vfs"
)

// suite runs the same test at every sync level × block size × file system
// of its lists, one subtest a combination, named fs/sync=L/block=B (a
// dimension left out is left out of the name too).
type suite struct {
	// FS are the file systems (nil: none; the test makes its own).
	FS []fsCase
	// Levels are the file sync levels (nil: 0, 1 and 2).
	Levels []int
	// Blocks are the FileIoMaxLength values (nil: no block dimension,
	// suiteCase.Block is 0).
	Blocks []int
}

// suiteCase is one combination of a suite.
type suiteCase struct {
	FS    vfs.FS // nil when the suite has no file systems
	Dir   string // the archive directory on FS
	Level int
	Block int
}

// allLevels are the file sync levels a suite runs by default.
var allLevels = []int{0, 1, 2}

// run runs test once per combination, each in its own subtest.
func (s suite) run(t *testing.T, test func(t *testing.T, c suiteCase)) {
	t.Helper()
	levels := s.Levels
	if levels == nil {
		levels = allLevels
	}
	fss := s.FS
	if fss == nil {
		fss = []fsCase{{}}
	}
	blocks := s.Blocks
	if blocks == nil {
		blocks = []int{0}
	}
	for _, fc := range fss {
		for _, level := range levels {
			for _, block := range blocks {
				var name []string
				if fc.name != "" {
					name = append(name, fc.name)
				}
				name = append(name, fmt.Sprintf("sync=%d", level))
				if block != 0 {
					name = append(name, fmt.Sprintf("block=%d", block))
				}
				t.Run(strings.Join(name, "/"), func(t *testing.T) {
					c := suiteCase{Level: level, Block: block}
					if fc.make != nil {
						c.FS, c.Dir = fc.make(t)
					}
					test(t, c)
				})
			}
		}
	}
}

// TestSuiteCombinations: a suite runs every combination once, in order,
// with the file system made for it.
func TestSuiteCombinations(t *testing.T) {
	var got []string
	suite{FS: fsCases, Levels: []int{0, 2}, Blocks: []int{64 << 10, 1 << 20}}.run(t, func(t *testing.T, sc suiteCase) {
		if sc.FS == nil || sc.Dir == "" {
			t.Fatalf("%s: no file system", t.Name())
		}
		got = append(got, t.Name())
	})
	suite{}.run(t, func(t *testing.T, sc suiteCase) {
		if sc.FS != nil || sc.Block != 0 {
			t.Fatalf("%s: %+v", t.Name(), sc)
		}
		got = append(got, t.Name())
	})
	want := []string{}
	for _, fs := range []string{"os", "mem"} {
		for _, l := range []int{0, 2} {
			for _, b := range []int{64 << 10, 1 << 20} {
				want = append(want, fmt.Sprintf("TestSuiteCombinations/%s/sync=%d/block=%d", fs, l, b))
			}
		}
	}
	for l := range 3 {
		want = append(want, fmt.Sprintf("TestSuiteCombinations/sync=%d", l))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ran\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
