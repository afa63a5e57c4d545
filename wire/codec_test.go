package wire_test

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/engine/enginetest"
	"github.com/matchlog/matchlog/wire"
)

// allKindEvents has one event of every kind with every field its message
// carries set to a distinct value.
func allKindEvents() []engine.Event {
	return []engine.Event{
		{Kind: engine.EvAccepted, Source: 1, Seq: 2, Instrument: 3, OrderID: 4},
		{Kind: engine.EvRejected, Source: 5, Seq: 6, Instrument: 7, OrderID: 8, Reason: engine.RejBadPrice},
		{Kind: engine.EvTrade, Source: 9, Seq: 10, Instrument: 11, OrderID: 12, Maker: 13, Side: engine.Sell, Price: -14, Qty: 15, Remaining: 16, MakerRemaining: 17},
		{Kind: engine.EvCancelled, Source: 18, Seq: 19, Instrument: 20, OrderID: 21, Side: engine.Buy, Price: 22, Qty: 23, Remaining: 24, Reason: engine.CxlSelfTrade},
		{Kind: engine.EvReplaced, Source: 25, Seq: 26, Instrument: 27, OrderID: 28, Side: engine.Sell, Price: 29, Qty: 30},
		{Kind: engine.EvTriggerFired, Source: 31, Seq: 32, Instrument: 33, OrderID: 34, Side: engine.Buy, Price: 35},
		{Kind: engine.EvDepth, Source: 36, Seq: 37, Instrument: 38, Side: engine.Sell, Price: 39, Qty: 40, Count: 41},
		{Kind: engine.EvRelease, Source: 42, Seq: 43, Instrument: 44},
	}
}

func TestDecodeEventRoundTrip(t *testing.T) {
	evs := allKindEvents()
	seen := map[engine.EventKind]bool{}
	for _, want := range evs {
		b := wire.AppendEvent(nil, &want)
		if k := wire.EventKind(b); k != want.Kind {
			t.Errorf("%v: EventKind = %v", want.Kind, k)
		}
		got := engine.Event{Kind: 99, Price: 1234} // must be reset
		if err := wire.DecodeEvent(b, &got); err != nil {
			t.Fatalf("%v: %v", want.Kind, err)
		}
		if got != want {
			t.Errorf("%v: decoded %+v, want %+v", want.Kind, got, want)
		}
		seen[want.Kind] = true
	}
	for k := engine.EvAccepted; k <= engine.EvRelease; k++ {
		if !seen[k] {
			t.Errorf("kind %v not covered", k)
		}
	}
}

// Real engine output round-trips too.
func TestDecodeEventEngineStream(t *testing.T) {
	cmds := commands(7, 2000)
	eng := engine.New()
	var buf []byte
	n := 0
	for i := range cmds {
		for _, ev := range eng.Apply(&cmds[i]) {
			buf = wire.AppendEvent(buf[:0], &ev)
			var got engine.Event
			if err := wire.DecodeEvent(buf, &got); err != nil {
				t.Fatal(err)
			}
			if got != ev {
				t.Fatalf("command %d: decoded %+v, want %+v", i, got, ev)
			}
			n++
		}
	}
	if n < 2000 {
		t.Fatalf("only %d events", n)
	}
}

func TestDecodeEventErrors(t *testing.T) {
	ev := engine.Event{Kind: engine.EvTrade, Source: 1, Seq: 2}
	good := wire.AppendEvent(nil, &ev)
	cmd := engine.Command{Kind: engine.CmdCancel, Source: 1, Seq: 1, Instrument: 1, OrderID: 1}
	cmdMsg, err := wire.AppendCommand(nil, &cmd)
	if err != nil {
		t.Fatal(err)
	}
	otherSchema := append([]byte(nil), good...)
	binary.LittleEndian.PutUint16(otherSchema[4:], 7003)
	for name, b := range map[string][]byte{
		"empty":        nil,
		"short header": good[:5],
		"truncated":    good[:20],
		"other schema": otherSchema,
		"command":      cmdMsg,
		"duplicate":    wire.AppendDuplicate(nil, 1, 2),
	} {
		var got engine.Event
		if err := wire.DecodeEvent(b, &got); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestServiceMessagesRoundTrip(t *testing.T) {
	d := wire.AppendDuplicate([]byte{0xee}, 0x0102030405060708, 99)
	if d[0] != 0xee {
		t.Fatal("prefix overwritten")
	}
	d = d[1:]
	if k := wire.EventKind(d); k != wire.EvDuplicate {
		t.Errorf("EventKind(Duplicate) = %d", k)
	}
	if src, seq, err := wire.DecodeDuplicate(d); err != nil || src != 0x0102030405060708 || seq != 99 {
		t.Errorf("DecodeDuplicate = %d %d %v", src, seq, err)
	}
	e := wire.AppendDepthSnapshotEnd(nil, 3, 4, 5, 6)
	if k := wire.EventKind(e); k != wire.EvDepthSnapshotEnd {
		t.Errorf("EventKind(DepthSnapshotEnd) = %d", k)
	}
	if a, b, c, l, err := wire.DecodeDepthSnapshotEnd(e); err != nil || a != 3 || b != 4 || c != 5 || l != 6 {
		t.Errorf("DecodeDepthSnapshotEnd = %d %d %d %d %v", a, b, c, l, err)
	}
	s := wire.AppendSubscribeDepth(nil, 7, 8, 9, 10)
	if a, b, c, l, err := wire.DecodeSubscribeDepth(s); err != nil || a != 7 || b != 8 || c != 9 || l != 10 {
		t.Errorf("DecodeSubscribeDepth = %d %d %d %d %v", a, b, c, l, err)
	}
	if src, err := wire.CheckCommand(s); err != nil || src != 7 {
		t.Errorf("CheckCommand(SubscribeDepth) = %d, %v", src, err)
	}
	if k := wire.EventKind(s); k != 0 {
		t.Errorf("EventKind(SubscribeDepth) = %d, want 0", k)
	}
	var c engine.Command
	if err := wire.DecodeCommand(s, &c); err == nil {
		t.Error("DecodeCommand accepts SubscribeDepth: it must never reach the engine")
	}
}

func TestCheckCommand(t *testing.T) {
	cmds := []engine.Command{
		{Kind: engine.CmdDefineInstrument, Source: 11, Seq: 1, Instrument: 1, Tick: 1, Lot: 1, MinPrice: 1, MaxPrice: 100},
		{Kind: engine.CmdNewOrder, Source: 12, Seq: 2, Instrument: 1, OrderID: 1, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 5, Qty: 1},
		{Kind: engine.CmdCancel, Source: 13, Seq: 3},
		{Kind: engine.CmdModify, Source: 14, Seq: 4},
		{Kind: engine.CmdMassCancel, Source: 15, Seq: 5},
		{Kind: engine.CmdMarkPrice, Source: 16, Seq: 6},
	}
	for _, c := range cmds {
		b, err := wire.AppendCommand(nil, &c)
		if err != nil {
			t.Fatal(err)
		}
		if src, err := wire.CheckCommand(b); err != nil || src != c.Source {
			t.Errorf("%v: CheckCommand = %d, %v", c.Kind, src, err)
		}
		if _, err := wire.CheckCommand(b[:len(b)-1]); err == nil {
			t.Errorf("%v: truncated accepted", c.Kind)
		}
		if _, err := wire.CheckCommand(append(b, 0)); err == nil {
			t.Errorf("%v: trailing byte accepted", c.Kind)
		}
		short := append([]byte(nil), b...)
		binary.LittleEndian.PutUint16(short, 4)
		if _, err := wire.CheckCommand(short[:12]); err == nil || !strings.Contains(err.Error(), "block length") {
			t.Errorf("%v: short block: %v", c.Kind, err)
		}
	}
	ev := engine.Event{Kind: engine.EvRelease}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"event":     wire.AppendEvent(nil, &ev),
		"duplicate": wire.AppendDuplicate(nil, 1, 1),
		"schema":    {8, 0, 1, 0, 0x5b, 0x1b, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8},
		"template":  {8, 0, 9, 0, 0x5a, 0x1b, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8},
	} {
		if _, err := wire.CheckCommand(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// commands generates n commands of the kinds the schema carries.
func commands(seed int64, n int) []engine.Command {
	g := enginetest.NewGen(seed, enginetest.GenConfig{})
	ref := engine.New()
	cmds := make([]engine.Command, n)
	for i := range cmds {
		g.Next(&cmds[i])
		for cmds[i].Kind < engine.CmdDefineInstrument || cmds[i].Kind > engine.CmdMarkPrice {
			g.Next(&cmds[i]) // kinds without a message in the schema
		}
		g.Observe(ref.Apply(&cmds[i]))
	}
	return cmds
}

// Encoding into a reused buffer and decoding allocate nothing.
func TestCodecAllocatesNothing(t *testing.T) {
	cmds := commands(3, 64)
	evs := allKindEvents()
	buf := make([]byte, 0, 256)
	var c engine.Command
	var ev engine.Event
	i := 0
	a := testing.AllocsPerRun(200, func() {
		var err error
		buf, err = wire.AppendCommand(buf[:0], &cmds[i%len(cmds)])
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.DecodeCommand(buf, &c); err != nil {
			t.Fatal(err)
		}
		buf = wire.AppendEvent(buf[:0], &evs[i%len(evs)])
		if err := wire.DecodeEvent(buf, &ev); err != nil {
			t.Fatal(err)
		}
		i++
	})
	if a != 0 {
		t.Fatalf("%.1f allocations per command and event", a)
	}
}
