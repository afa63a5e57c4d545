package engine

import (
	"fmt"
	"math/bits"
)

// occMap is the set of tick counts at which one side of a book has a
// non-empty level: the writer's, so that finding the next best level
// after the best one empties skips the empty levels kept in the tree (see
// book.top) with a few word operations instead of a walk of the tree.
//
// It is a sparse bitmap: each 64-tick word with a bit set is an entry of
// an open-addressing table (linear probing, Fibonacci hash, backward-shift
// deletion, as levelMap), keyed by tick>>6. A word whose last bit clears
// leaves the table, so it holds only words near live levels. The table
// keeps at most half its slots full, doubles when an insertion would pass
// that and never shrinks, so a book that has reached its largest number of
// words sets and clears bits without allocating.
type occMap struct {
	slots []occSlot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

// occSlot is an entry; a slot with no bit set is empty.
type occSlot struct {
	key  int64 // tick >> 6
	bits uint64
}

const occMinSlots = 16

// occScanWords is how many words next reads before it gives up.
const occScanWords = 16

func (m *occMap) home(key int64) int {
	return int((uint64(key) * 0x9E3779B97F4A7C15) >> m.shift)
}

// word returns the bits of the word at key.
func (m *occMap) word(key int64) uint64 {
	if m.n == 0 {
		return 0
	}
	mask := len(m.slots) - 1
	for i := m.home(key); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.bits == 0 {
			return 0
		}
		if s.key == key {
			return s.bits
		}
	}
}

// has reports whether tick is in the set.
func (m *occMap) has(tick int64) bool { return m.word(tick>>6)&(1<<(tick&63)) != 0 }

// set adds tick (≥ 0) to the set.
func (m *occMap) set(tick int64) {
	key, bit := tick>>6, uint64(1)<<(tick&63)
	if m.n > 0 {
		mask := len(m.slots) - 1
		for i := m.home(key); ; i = (i + 1) & mask {
			s := &m.slots[i]
			if s.bits == 0 {
				break
			}
			if s.key == key {
				s.bits |= bit
				return
			}
		}
	}
	if 2*(m.n+1) > len(m.slots) {
		m.resize(max(2*len(m.slots), occMinSlots))
	}
	m.insert(key, bit)
}

func (m *occMap) insert(key int64, bits uint64) {
	mask := len(m.slots) - 1
	for i := m.home(key); ; i = (i + 1) & mask {
		if s := &m.slots[i]; s.bits == 0 {
			*s = occSlot{key: key, bits: bits}
			m.n++
			return
		}
	}
}

// clear removes tick from the set; a word left with no bit leaves the
// table, its probe run shifted back over it.
func (m *occMap) clear(tick int64) {
	if m.n == 0 {
		return
	}
	key, bit := tick>>6, uint64(1)<<(tick&63)
	mask := len(m.slots) - 1
	i := m.home(key)
	for {
		s := &m.slots[i]
		if s.bits == 0 {
			return
		}
		if s.key == key {
			if s.bits &^= bit; s.bits != 0 {
				return
			}
			break
		}
		i = (i + 1) & mask
	}
	// i is the hole. Move into it any later entry of the run whose home is
	// not cyclically in (i, j].
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := &m.slots[j]
		if s.bits == 0 {
			break
		}
		h := m.home(s.key)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.slots[i] = *s
			i = j
		}
	}
	m.slots[i] = occSlot{}
	m.n--
}

// next returns the first tick of the set at or after from (up) or at or
// before it (down), reading at most occScanWords words past from's. If it
// finds none it returns found false and the tick after the last one it
// covered (up; before it, down): the set holds no tick in between.
func (m *occMap) next(from int64, up bool) (tick int64, found bool) {
	key := from >> 6
	w := m.word(key)
	if up {
		w &= ^uint64(0) << (from & 63)
	} else {
		w &= ^uint64(0) >> (63 - from&63)
	}
	for i := 0; ; i++ {
		if w != 0 {
			if up {
				return key<<6 + int64(bits.TrailingZeros64(w)), true
			}
			return key<<6 + 63 - int64(bits.LeadingZeros64(w)), true
		}
		if up {
			key++
		} else {
			key--
		}
		if i == occScanWords || key < 0 {
			if up {
				return key << 6, false
			}
			return key<<6 + 63, false
		}
		w = m.word(key)
	}
}

func (m *occMap) resize(n int) {
	old := m.slots
	m.slots = make([]occSlot, n)
	m.shift = uint8(64 - bits.Len(uint(n-1)))
	m.n = 0
	for i := range old {
		if s := &old[i]; s.bits != 0 {
			m.insert(s.key, s.bits)
		}
	}
}

// count returns the number of ticks in the set.
func (m *occMap) count() int {
	c := 0
	for i := range m.slots {
		c += bits.OnesCount64(m.slots[i].bits)
	}
	return c
}

// check verifies the table: its count, its size bound and that every
// word is reachable from its home slot without crossing an empty slot.
func (m *occMap) check() error {
	used := 0
	for i := range m.slots {
		s := &m.slots[i]
		if s.bits == 0 {
			continue
		}
		used++
		if m.word(s.key) != s.bits {
			return fmt.Errorf("occupancy map: the word %d in slot %d is not reachable from its home slot %d", s.key, i, m.home(s.key))
		}
	}
	if used != m.n || (m.n > 0 && 2*m.n > len(m.slots)) {
		return fmt.Errorf("occupancy map holds %d words in %d slots, counts %d", used, len(m.slots), m.n)
	}
	return nil
}
