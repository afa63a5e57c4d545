// Package scenario reads engine commands and writes engine events as JSON
// lines: the formats of `matchlog engine run`, used to replay a day's orders
// through the engine and to write scenario tests.
//
// # Commands
//
// One JSON object per line; blank lines are skipped but counted, so error
// line numbers match an editor's. Every command has "cmd", "source", "seq"
// and "time"; the other fields depend on "cmd":
//
//	cmd                fields (required ones marked *)
//	define_instrument  instrument* tick* lot* min_price* max_price*
//	new_order          instrument* order_id* side* qty* account type tif stp post_only
//	                   price (* for limit and stop_limit; only those)
//	                   stop* ref (stop and stop_limit only)
//	cancel             instrument* order_id*
//	modify             instrument* order_id* price* qty*
//	mass_cancel        instrument account (0 or absent: all)
//	mark_price         instrument* price*
//
// For example:
//
//	{"cmd":"define_instrument","source":1,"seq":1,"time":1000,"instrument":1,"tick":1,"lot":1,"min_price":1,"max_price":1000000}
//	{"cmd":"new_order","source":1,"seq":2,"time":1001,"instrument":1,"order_id":10,"account":7,"side":"buy","price":100,"qty":5}
//	{"cmd":"new_order","source":1,"seq":3,"time":1002,"instrument":1,"order_id":11,"account":8,"side":"sell","type":"stop","stop":90,"ref":"last","qty":5}
//	{"cmd":"cancel","source":1,"seq":4,"time":1003,"instrument":1,"order_id":10}
//
// Enum fields take the String() names of the engine's types: side buy|sell;
// type limit|market|stop|stop_limit; tif gtc|ioc|fok; stp
// none|cancel_newest|cancel_oldest|cancel_both|decrement; ref last|mark.
// An enum may also be given as its numeric code (0–255), so that a scenario
// can feed the engine a value it must reject (bad_side, bad_type, bad_stp).
// Defaults when omitted: type limit; tif gtc for limit and stop_limit, ioc
// for market and stop (the engine rejects those with gtc); stp none; ref
// last; account 0; post_only false.
//
// Numbers are JSON integers (no fraction, no exponent) within the range of
// the field: source, seq, order_id and account are uint64, instrument is
// uint32, time and prices and quantities are int64 (negative values pass
// through to the engine, which rejects them).
//
// A line is an error, reported as [*Error] with its line number and field,
// when it is not a single JSON object, when "cmd" or a value is unknown,
// when a value has the wrong JSON type or is out of range, when a field is
// unknown, repeated, missing or not used by that command. Nothing after an
// erroneous line is read.
//
// # Events
//
// One JSON object per event, "event" first, then only the fields that
// event kind carries (see [engine.Event]):
//
//	accepted       source seq instrument order_id
//	rejected       source seq instrument order_id reason
//	trade          instrument order_id maker side price qty remaining maker_remaining
//	cancelled      instrument order_id side price qty remaining reason
//	replaced       instrument order_id side price qty
//	trigger_fired  instrument order_id side price
//	depth          instrument side price qty count
//	release        source seq instrument
//
// After the last event [Run] writes a summary line:
//
//	{"state_hash":"0x1b2c3d4e5f607182","commands":4,"events":17}
//
// # Performance
//
// The decoder is hand-written: it parses each line in place into a
// caller-owned [engine.Command] and allocates nothing per line (only on
// errors and for lines longer than the read buffer). The encoder appends to
// a caller-owned buffer. Neither is safe for concurrent use.
package scenario
