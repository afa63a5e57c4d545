package hugepage

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
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
	// A fresh mapping (the Go heap's memory may have been advised by an
	// earlier Make), and a slice of it that starts 4 KiB past a huge page
	// boundary: its aligned part is the two huge pages after that one.
	m, err := unix.Mmap(-1, 0, 5*Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	p := uintptr(unsafe.Pointer(&m[0]))
	off := int((p+Size-1)&^(Size-1)-p) + 4096
	s := m[off : off+3*Size : off+3*Size]
	Advise(s)
	head := uintptr(unsafe.Pointer(&s[0]))
	beg := (head + Size - 1) &^ (Size - 1)
	if f, ok := vmFlags(t, beg); ok && !strings.Contains(f, " hg") {
		t.Errorf("aligned part at %#x not advised: VmFlags:%s", beg, f)
	}
	if f, ok := vmFlags(t, beg+2*Size-1); ok && !strings.Contains(f, " hg") {
		t.Errorf("last byte of the aligned part not advised: VmFlags:%s", f)
	}
	if f, ok := vmFlags(t, head); ok && strings.Contains(f, " hg") {
		t.Errorf("the unaligned head at %#x advised: VmFlags:%s", head, f)
	}
	if f, ok := vmFlags(t, beg+2*Size); ok && strings.Contains(f, " hg") {
		t.Errorf("the unaligned tail at %#x advised: VmFlags:%s", beg+2*Size, f)
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

// TestPrefault: once Prefault's goroutine is done, every page of the
// aligned part of a fresh mapping is resident, what the caller wrote before
// and while it ran is still there, and the rest is zero.
func TestPrefault(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Prefault does nothing off Linux")
	}
	probe, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	err = unix.Madvise(probe, unix.MADV_POPULATE_WRITE)
	unix.Munmap(probe)
	if err != nil {
		t.Skipf("no MADV_POPULATE_WRITE: %v", err)
	}
	// A fresh mapping (not the Go heap, whose memory may have been
	// touched before): 5 huge pages' room, 4 of them aligned.
	m, err := unix.Mmap(-1, 0, 5*Size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	p := uintptr(unsafe.Pointer(&m[0]))
	off := int((p+Size-1)&^(Size-1) - p)
	b := m[off : off+4*Size]
	// The caller writes a few bytes of the first huge page only: the
	// others must become resident through Prefault alone.
	for i := 0; i < Size; i += 4093 {
		b[i] = byte(i%251) + 1
	}
	wait := Prefault(b)
	for i := 7; i < Size; i += 4091 {
		b[i] = byte(i%241) + 1
	}
	wait()
	vec := make([]byte, len(b)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for i, v := range vec {
		if v&1 == 0 {
			t.Fatalf("page %d of %d not resident after Prefault", i, len(vec))
		}
	}
	for i := range b {
		var want byte
		if i < Size && i%4093 == 0 {
			want = byte(i%251) + 1
		}
		if i < Size && i >= 7 && (i-7)%4091 == 0 {
			want = byte(i%241) + 1
		}
		if b[i] != want {
			t.Fatalf("byte %d is %d, want %d", i, b[i], want)
		}
	}
}
