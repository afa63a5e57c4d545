package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

type slot struct{ a, b, c, d uint64 }

func TestMakeAligns(t *testing.T) {
	for _, n := range []int{Size / 32, Size/32 + 1, 3*Size/32 - 5, 5 * Size / 32} {
		s, head := Make[slot](n)
		if len(s) != n {
			t.Fatalf("n %d: len %d", n, len(s))
		}
		p := uintptr(unsafe.Pointer(&s[0]))
		if p%Size != 0 {
			t.Errorf("n %d: starts at %#x, not on a huge page", n, p)
		}
		whole := (n + Size/32 - 1) / (Size / 32) * (Size / 32)
		if len(head)+cap(s) != whole+Size/32 {
			t.Errorf("n %d: head %d and capacity %d are not the allocation of %d slots", n, len(head), cap(s), whole+Size/32)
		}
		if len(head) >= Size/32 || len(head) > 0 && uintptr(unsafe.Pointer(&head[0]))+uintptr(len(head))*32 != p {
			t.Errorf("n %d: head of %d slots does not end where the slice starts", n, len(head))
		}
		for i := range s {
			if s[i] != (slot{}) {
				t.Fatalf("n %d: slot %d not zero", n, i)
			}
		}
		if runtime.GOOS == "linux" {
			if f, ok := vmFlags(t, p); ok && !strings.Contains(f, " hg") {
				t.Errorf("n %d: mapping at %#x not advised for huge pages: VmFlags:%s", n, p, f)
			}
		}
	}
}

func TestMakeSmallIsPlain(t *testing.T) {
	s, head := Make[slot](Size/32 - 1)
	if len(s) != Size/32-1 || cap(s) != len(s) || head != nil {
		t.Fatalf("len %d cap %d head %d", len(s), cap(s), len(head))
	}
	if s, head := Make[[3]byte](Size); len(s) != Size || cap(s) != Size || head != nil {
		t.Fatalf("a size that does not divide a huge page: len %d cap %d head %d", len(s), cap(s), len(head))
	}
}

func TestAdviseMarksTheAlignedPart(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("transparent huge pages are a Linux facility")
	}
	s := make([]slot, 3*Size/32)
	Advise(s)
	p := uintptr(unsafe.Pointer(&s[0]))
	beg := (p + Size - 1) &^ (Size - 1)
	if f, ok := vmFlags(t, beg); ok && !strings.Contains(f, " hg") {
		t.Errorf("aligned part at %#x not advised: VmFlags:%s", beg, f)
	}
}

// vmFlags returns the VmFlags line of the mapping of /proc/self/smaps that
// holds p.
func vmFlags(t *testing.T, p uintptr) (string, bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Logf("no smaps: %v", err)
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 {
			in = lo <= p && p < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.TrimPrefix(line, "VmFlags:"), true
		}
	}
	t.Fatalf("no mapping holds %#x", p)
	return "", false
}
