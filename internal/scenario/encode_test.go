package scenario

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/matchlog/matchlog/engine"
)

// full is an event with every field set, so each case shows which ones its
// kind writes.
var full = engine.Event{
	Reason: engine.CxlSelfTrade, Side: engine.Sell, Instrument: 3, Source: 4, Seq: 5, OrderID: 6, Maker: 7,
	Price: 8, Qty: 9, Remaining: 10, MakerRemaining: 11, Count: 12,
}

func TestAppendEvent(t *testing.T) {
	for _, tc := range []struct {
		kind engine.EventKind
		want string
	}{
		{engine.EvAccepted, `{"event":"accepted","source":4,"seq":5,"instrument":3,"order_id":6}`},
		{engine.EvRejected, `{"event":"rejected","source":4,"seq":5,"instrument":3,"order_id":6,"reason":"self_trade"}`},
		{engine.EvTrade, `{"event":"trade","instrument":3,"order_id":6,"maker":7,"side":"sell","price":8,"qty":9,"remaining":10,"maker_remaining":11}`},
		{engine.EvCancelled, `{"event":"cancelled","instrument":3,"order_id":6,"side":"sell","price":8,"qty":9,"remaining":10,"reason":"self_trade"}`},
		{engine.EvReplaced, `{"event":"replaced","instrument":3,"order_id":6,"side":"sell","price":8,"qty":9}`},
		{engine.EvTriggerFired, `{"event":"trigger_fired","instrument":3,"order_id":6,"side":"sell","price":8}`},
		{engine.EvDepth, `{"event":"depth","instrument":3,"side":"sell","price":8,"qty":9,"count":12}`},
		{engine.EvRelease, `{"event":"release","source":4,"seq":5,"instrument":3}`},
		{99, `{"event":99,"reason":"self_trade","side":"sell","instrument":3,"source":4,"seq":5,"order_id":6,"maker":7,"price":8,"qty":9,"remaining":10,"maker_remaining":11,"count":12}`},
	} {
		ev := full
		ev.Kind = tc.kind
		got := AppendEvent(nil, &ev)
		if string(got) != tc.want+"\n" {
			t.Errorf("%v:\n got %s\nwant %s", tc.kind, got, tc.want)
		}
		if !json.Valid(got) {
			t.Errorf("%v: not valid JSON: %s", tc.kind, got)
		}
	}
}

// TestAppendEventValues checks extreme and unnamed values against
// encoding/json.
func TestAppendEventValues(t *testing.T) {
	ev := engine.Event{
		Kind: engine.EvTrade, Side: 9, Instrument: math.MaxUint32, OrderID: math.MaxUint64, Maker: 0,
		Price: math.MinInt64, Qty: math.MaxInt64, Remaining: -1, MakerRemaining: 0,
	}
	var got map[string]any
	d := json.NewDecoder(bytes.NewReader(AppendEvent(nil, &ev)))
	d.UseNumber()
	if err := d.Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"event": "trade", "instrument": json.Number("4294967295"), "order_id": json.Number("18446744073709551615"),
		"maker": json.Number("0"), "side": json.Number("9"), "price": json.Number("-9223372036854775808"),
		"qty": json.Number("9223372036854775807"), "remaining": json.Number("-1"), "maker_remaining": json.Number("0"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}

	ev = engine.Event{Kind: engine.EvRejected, Reason: 200}
	if got, want := string(AppendEvent(nil, &ev)), `{"event":"rejected","source":0,"seq":0,"instrument":0,"order_id":0,"reason":200}`+"\n"; got != want {
		t.Errorf("got %s want %s", got, want)
	}
}

func TestAppendSummary(t *testing.T) {
	for _, tc := range []struct {
		s    Summary
		want string
	}{
		{Summary{Commands: 4, Events: 17, StateHash: 0x1b2c3d4e5f607182}, `{"state_hash":"0x1b2c3d4e5f607182","commands":4,"events":17}`},
		{Summary{StateHash: 0xa}, `{"state_hash":"0x000000000000000a","commands":0,"events":0}`},
		{Summary{StateHash: math.MaxUint64}, `{"state_hash":"0xffffffffffffffff","commands":0,"events":0}`},
	} {
		if got := AppendSummary(nil, tc.s); string(got) != tc.want+"\n" {
			t.Errorf("got %s want %s", got, tc.want)
		}
	}
}

func TestEncodeAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	c := engine.Command{Kind: engine.CmdNewOrder, Source: 1, Seq: 2, Time: 3, Instrument: 1, OrderID: 10,
		Side: engine.Buy, Type: engine.StopLimit, TIF: engine.GTC, Price: 100, Stop: 99, Ref: engine.RefMark, Qty: 5}
	if n := testing.AllocsPerRun(100, func() {
		buf = buf[:0]
		for k := engine.EventKind(0); k <= engine.EvRelease; k++ {
			ev := full
			ev.Kind = k
			buf = AppendEvent(buf, &ev)
		}
		buf = AppendCommand(buf, &c)
		buf = AppendSummary(buf, Summary{})
	}); n != 0 {
		t.Errorf("%v allocs, want 0", n)
	}
}
