package engine

import (
	"fmt"
	"math/bits"
)

// levelMap maps a price to its level on one side of a book: the writer's
// lookup from an order's price to its level (see book.lmap).
//
// It is an open-addressing table with linear probing and backward-shift
// deletion (no tombstones), keyed by price and hashed by Fibonacci hashing
// (multiply by 2^64/φ, keep the top bits). A book's prices are multiples of
// its tick near one another, which that hash spreads evenly; a Go map
// hashes a key with the runtime's seeded hash and searches a group of
// eight control bytes, several times the cost of one multiply and a probe
// or two here, on the path of every cancel, move and resting order.
//
// The table keeps at most half its slots full and doubles when a put would
// pass that; it never shrinks, so a book that has reached its largest
// number of levels puts and deletes without allocating. A slot is empty
// when its level is nil; price 0 is a valid key.
type levelMap struct {
	slots []lmSlot
	n     int
	shift uint8 // 64 - log2(len(slots))
}

type lmSlot struct {
	price int64
	l     *level
}

const lmMinSlots = 16

func (m *levelMap) home(price int64) int {
	return int((uint64(price) * 0x9E3779B97F4A7C15) >> m.shift)
}

// get returns the level at price, or nil.
func (m *levelMap) get(price int64) *level {
	if m.n == 0 {
		return nil
	}
	mask := len(m.slots) - 1
	for i := m.home(price); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.l == nil {
			return nil
		}
		if s.price == price {
			return s.l
		}
	}
}

// put sets the level at price to l (not nil), replacing any.
func (m *levelMap) put(price int64, l *level) {
	if 2*(m.n+1) > len(m.slots) {
		m.grow()
	}
	mask := len(m.slots) - 1
	for i := m.home(price); ; i = (i + 1) & mask {
		s := &m.slots[i]
		if s.l == nil {
			*s = lmSlot{price: price, l: l}
			m.n++
			return
		}
		if s.price == price {
			s.l = l
			return
		}
	}
}

// del removes price, if present, moving back the entries of its probe run
// that would otherwise become unreachable.
func (m *levelMap) del(price int64) {
	if m.n == 0 {
		return
	}
	mask := len(m.slots) - 1
	i := m.home(price)
	for {
		s := &m.slots[i]
		if s.l == nil {
			return
		}
		if s.price == price {
			break
		}
		i = (i + 1) & mask
	}
	// i is the hole. Move into it any later entry of the run whose home is
	// not cyclically in (i, j].
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := &m.slots[j]
		if s.l == nil {
			break
		}
		h := m.home(s.price)
		if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
			m.slots[i] = *s
			i = j
		}
	}
	m.slots[i] = lmSlot{}
	m.n--
}

// len returns the number of levels in the map.
func (m *levelMap) len() int { return m.n }

// reserve sizes the table for n entries in all (it keeps those it holds),
// so that putting up to n does not grow it.
func (m *levelMap) reserve(n int) {
	size := lmMinSlots
	for size < 2*max(n, m.n) || size < len(m.slots) {
		size *= 2
	}
	m.resize(size)
}

func (m *levelMap) grow() { m.resize(max(2*len(m.slots), lmMinSlots)) }

func (m *levelMap) resize(n int) {
	old := m.slots
	m.slots = make([]lmSlot, n)
	m.shift = uint8(64 - bits.Len(uint(n-1)))
	m.n = 0
	for i := range old {
		if s := &old[i]; s.l != nil {
			m.put(s.price, s.l)
		}
	}
}

// check verifies the table: its count, its size bound and that every entry
// is reachable from its home slot without crossing an empty slot.
func (m *levelMap) check() error {
	used := 0
	for i := range m.slots {
		s := &m.slots[i]
		if s.l == nil {
			continue
		}
		used++
		if m.get(s.price) != s.l {
			return fmt.Errorf("level map: the entry for price %d in slot %d is not reachable from its home slot %d", s.price, i, m.home(s.price))
		}
	}
	if used != m.n || (m.n > 0 && 2*m.n > len(m.slots)) {
		return fmt.Errorf("level map holds %d entries in %d slots, counts %d", used, len(m.slots), m.n)
	}
	return nil
}
