package engine

import "math/bits"

// The state hash is the wrapping sum of one 64-bit digest per record of the
// record stream (see [Sink]), plus a digest of the header's version and next
// sequence. A sum does not depend on the order of its terms, so partitions
// encoded on different goroutines can each add up their own records and the
// owner adds the partial sums; the order itself is fixed by the record
// stream's rules, and every record carries its own keys (price, sequence),
// so the sum still pins down the whole state.
//
// The digests below are part of the snapshot format (the End record carries
// the hash): never change them without changing [RecordVersion].

const (
	tagHeader  = 0x48
	tagSource  = 0x53
	tagMark    = 0x4d
	tagResting = 0x52
	tagTrigger = 0x54
)

func mix(h, v uint64) uint64 {
	h ^= v
	h *= 0x9E3779B97F4A7C15
	return bits.RotateLeft64(h, 29) ^ (h >> 32)
}

func finish(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// HashHeader is the digest of a stream's header.
func HashHeader(version uint32, nextSeq uint64) uint64 {
	return finish(mix(mix(tagHeader, uint64(version)), nextSeq))
}

// HashSource is the digest of one source high-water record.
func HashSource(source, seq uint64) uint64 {
	return finish(mix(mix(tagSource, source), seq))
}

// HashMark is the digest of one instrument record.
func HashMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) uint64 {
	h := mix(tagMark, uint64(instrument))
	h = mix(h, uint64(tick))
	h = mix(h, uint64(lot))
	h = mix(h, uint64(minPrice))
	h = mix(h, uint64(maxPrice))
	h = mix(h, uint64(lastTrade))
	return finish(mix(h, uint64(mark)))
}

// HashResting is the digest of one resting-order record.
func HashResting(instrument uint32, side Side, orderID, account uint64, price, qty int64, seq uint64, stp STP, post bool) uint64 {
	h := mix(tagResting, uint64(instrument)<<8|uint64(side))
	h = mix(h, orderID)
	h = mix(h, account)
	h = mix(h, uint64(price))
	h = mix(h, uint64(qty))
	h = mix(h, seq)
	return finish(mix(h, uint64(stp)<<1|b2u(post)))
}

// HashTrigger is the digest of one armed-trigger record.
func HashTrigger(instrument uint32, side Side, orderID, account uint64, typ OrderType, tif TimeInForce, ref TriggerRef,
	stop, price, qty int64, seq uint64, stp STP, post bool) uint64 {
	h := mix(tagTrigger, uint64(instrument)<<8|uint64(side))
	h = mix(h, orderID)
	h = mix(h, account)
	h = mix(h, uint64(typ)<<24|uint64(tif)<<16|uint64(ref)<<8|uint64(stp)<<1|b2u(post))
	h = mix(h, uint64(stop))
	h = mix(h, uint64(price))
	h = mix(h, uint64(qty))
	return finish(mix(h, seq))
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// Hasher is a [Sink] that computes the state hash of the record stream it
// receives. Its zero value is ready to use. Model engines and tests feed it
// their own record streams to compare states with an [Engine].
type Hasher struct {
	Sum                                    uint64
	Sources, Instruments, Orders, Triggers uint64
	EndHash                                uint64 // the hash carried by OnEnd
}

// OnHeader implements [Sink].
func (h *Hasher) OnHeader(hd Header) error {
	*h = Hasher{Sum: HashHeader(hd.Version, hd.NextSeq)}
	return nil
}

// OnSourceHighWater implements [Sink].
func (h *Hasher) OnSourceHighWater(source, seq uint64) error {
	h.Sources++
	h.Sum += HashSource(source, seq)
	return nil
}

// OnMark implements [Sink].
func (h *Hasher) OnMark(instrument uint32, tick, lot, minPrice, maxPrice, lastTrade, mark int64) error {
	h.Instruments++
	h.Sum += HashMark(instrument, tick, lot, minPrice, maxPrice, lastTrade, mark)
	return nil
}

// OnResting implements [Sink].
func (h *Hasher) OnResting(instrument uint32, side Side, orderID, account uint64, price, qty int64, seq uint64, stp STP, post bool) error {
	h.Orders++
	h.Sum += HashResting(instrument, side, orderID, account, price, qty, seq, stp, post)
	return nil
}

// OnArmedTrigger implements [Sink].
func (h *Hasher) OnArmedTrigger(instrument uint32, side Side, orderID, account uint64, typ OrderType, tif TimeInForce, ref TriggerRef,
	stop, price, qty int64, seq uint64, stp STP, post bool) error {
	h.Triggers++
	h.Sum += HashTrigger(instrument, side, orderID, account, typ, tif, ref, stop, price, qty, seq, stp, post)
	return nil
}

// OnEnd implements [Sink].
func (h *Hasher) OnEnd(sources, instruments, orders, triggers uint64, stateHash uint64) error {
	h.EndHash = stateHash
	return nil
}

// hashRestingRun returns the sum of the digests ([HashResting]) of the
// resting-order records of orders, one price's run of one side of one
// instrument, with their accounts by dense number in accts. Runs of at
// least vecRunMin orders go to the vector digest where the CPU has one
// (hash_amd64.s: eight digests side by side); the rest, and every run on
// other CPUs, to hashRestingRunGo.
func hashRestingRun(instrument uint32, side Side, price int64, orders []order, accts []uint64) uint64 {
	if len(orders) >= vecRunMin {
		if s, ok := hashRunVec(mix(tagResting, uint64(instrument)<<8|uint64(side)), uint64(price), orders, accts); ok {
			return s
		}
	}
	return hashRestingRunGo(instrument, side, price, orders, accts)
}

// vecRunMin is the shortest run hashRestingRun hands to the vector digest.
const vecRunMin = 5

// hashRestingRunGo is hashRestingRun in Go. The digests come two at a
// time, interleaved: each is one chain of dependent multiplies, and two
// chains side by side keep the multiplier busy where a loop of one chain
// at a time leaves most of each chain waiting on the one before.
func hashRestingRunGo(instrument uint32, side Side, price int64, orders []order, accts []uint64) uint64 {
	h0 := mix(tagResting, uint64(instrument)<<8|uint64(side))
	px := uint64(price)
	// The last word of the digest, uint64(stp)<<1|b2u(post), is the low
	// four bits of the sequence key.
	const flags = skPost | 7<<skSTP
	var s0, s1 uint64
	for len(orders) >= 2 {
		a, b := &orders[0], &orders[1]
		ha, hb := mix(h0, a.id), mix(h0, b.id)
		ha, hb = mix(ha, accts[a.acct()]), mix(hb, accts[b.acct()])
		ha, hb = mix(ha, px), mix(hb, px)
		ha, hb = mix(ha, uint64(a.qty)), mix(hb, uint64(b.qty))
		ha, hb = mix(ha, skSeq(a.sk)), mix(hb, skSeq(b.sk))
		ha, hb = mix(ha, a.sk&flags), mix(hb, b.sk&flags)
		s0 += finish(ha)
		s1 += finish(hb)
		orders = orders[2:]
	}
	if len(orders) == 1 {
		a := &orders[0]
		s0 += HashResting(instrument, side, a.id, accts[a.acct()], price, a.qty, skSeq(a.sk), skSTPOf(a.sk), skPostOf(a.sk))
	}
	return s0 + s1
}
