package snapshot

import (
	"math/rand/v2"
	"testing"
)

// specChecksum is the stream checksum as the comment in checksum.go states
// it, a byte and a word at a time, for checking the fast forms.
func specChecksum(h uint64, b []byte) uint64 {
	word := func(p []byte) uint64 { // little-endian, zero-extended
		var w uint64
		for i := len(p) - 1; i >= 0; i-- {
			w = w<<8 | uint64(p[i])
		}
		return w
	}
	a := [4]uint64{h, h ^ laneSeed1, h ^ laneSeed2, h ^ laneSeed3}
	i := 0
	for ; i+32 <= len(b); i += 32 {
		for j := range a {
			a[j] = (a[j] ^ word(b[i+8*j:i+8*j+8])) * checksumPrime
		}
	}
	for ; i+8 <= len(b); i += 8 {
		a[0] = (a[0] ^ word(b[i:i+8])) * checksumPrime
	}
	a[0] = (a[0] ^ word(b[i:])) * checksumPrime
	s := a[0]
	for _, x := range a[1:] {
		s = s*checksumPrime ^ x
	}
	s *= checksumPrime
	return (s ^ uint64(len(b))) * checksumPrime
}

// TestChecksumMatchesSpec checks checksum against the stated rule on
// random messages, and against values recorded from the first
// implementation, so that the format cannot drift with a rewrite that the
// publisher and the loader would share.
func TestChecksumMatchesSpec(t *testing.T) {
	b := make([]byte, 1376)
	for i := range b {
		b[i] = byte(i*131 + i>>3)
	}
	for _, c := range []struct {
		n    int
		want uint64
	}{
		{0, 0x19d5befc0b814f23}, {1, 0x19d5bdfc0b814d70}, {7, 0xb556a2fe5c9d42a2}, {8, 0x53eba6b19e8c0561},
		{31, 0x2b8b76e13942dae0}, {32, 0x304b5476812240c9}, {33, 0xb64a2fb82a479fca}, {47, 0x548e8fc23609dd7b},
		{100, 0xc632e06e84ed0d25}, {1376, 0xfb412a68e058b2a5},
	} {
		if got := checksum(checksumBasis, b[:c.n]); got != c.want {
			t.Errorf("checksum of %d bytes = %#x, want %#x", c.n, got, c.want)
		}
		if got := specChecksum(checksumBasis, b[:c.n]); got != c.want {
			t.Errorf("spec checksum of %d bytes = %#x, want %#x", c.n, got, c.want)
		}
	}
	if got := checksum(checksum(checksumBasis, b[:100]), b[100:]); got != 0xcd4e217ecbbaeb9f {
		t.Errorf("chained checksum = %#x, want 0xcd4e217ecbbaeb9f", got)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		m := make([]byte, rng.IntN(400))
		for i := range m {
			m[i] = byte(rng.Uint32())
		}
		h := rng.Uint64()
		if got, want := checksum(h, m), specChecksum(h, m); got != want {
			t.Fatalf("checksum(%#x, %d bytes) = %#x, spec %#x", h, len(m), got, want)
		}
	}
}
