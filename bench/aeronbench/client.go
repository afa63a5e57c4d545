package aeronbench

import (
	"context"
	"fmt"
	"time"

	"github.com/lirm/aeron-go/aeron"
	aatomic "github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/idlestrategy"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	aclient "github.com/lirm/aeron-go/cluster/client"
	"github.com/matchlog/matchlog/bench/clusterbench"
	"github.com/matchlog/matchlog/cluster/aeronhost"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/wire"
)

// pending is a command sent and not yet answered.
type pending struct {
	seq  uint64
	due  time.Time // its scheduled send time (or its send time, unscheduled)
	body []byte
}

// sample is one command's round trip, from its due time to its answer
// (its Release, or a Duplicate for a resend the engine had applied).
type sample struct {
	due time.Time
	d   time.Duration
}

// client drives the cluster through aeron-go's cluster client over one
// member's media driver: the book's commands, then probes at a fixed rate.
// Commands of one session are answered in order, so the answer of the
// oldest pending command completes it.
type client struct {
	ctx       context.Context
	book      *clusterbench.Book
	aeronDir  string
	endpoints string

	ac      *aclient.AeronCluster
	pending []pending
	lat     []sample
	body    []byte
	failure error
	// tolerate is set while a session is opened after a leader's loss.
	tolerate bool
	// answeredAt is when the last answer arrived.
	answeredAt time.Time

	sent, answered, dups, resent int
}

func (c *client) OnConnect(*aclient.AeronCluster)                 {}
func (c *client) OnNewLeader(*aclient.AeronCluster, int64, int32) {}
func (c *client) OnDisconnect(_ *aclient.AeronCluster, d string) {
	if !c.tolerate {
		c.fail("disconnected: %s", d)
	}
}
func (c *client) OnError(_ *aclient.AeronCluster, details string) {
	if !c.tolerate {
		c.fail("egress error: %s", details)
	}
}

func (c *client) fail(format string, a ...any) {
	if c.failure == nil {
		c.failure = fmt.Errorf("aeron cluster client: "+format, a...)
	}
}

func (c *client) OnMessage(_ *aclient.AeronCluster, _ int64, buf *aatomic.Buffer, off, n int32, _ *logbuffer.Header) {
	msg := buf.GetBytesArray(off, n)
	var seq uint64
	var err error
	switch wire.EventKind(msg) {
	case engine.EvRelease:
		_, seq, err = wire.DecodeRelease(msg)
	case wire.EvDuplicate:
		_, seq, err = wire.DecodeDuplicate(msg)
		c.dups++
	default:
		return // an event of the command being answered
	}
	if err != nil {
		c.fail("undecodable answer (%d bytes): %v", len(msg), err)
		return
	}
	if len(c.pending) == 0 || seq < c.pending[0].seq {
		return // the answer of a command answered before, resent
	}
	if seq != c.pending[0].seq {
		c.fail("answer for seq %d while seq %d is the oldest outstanding", seq, c.pending[0].seq)
		return
	}
	now := time.Now()
	c.lat = append(c.lat, sample{due: c.pending[0].due, d: now.Sub(c.pending[0].due)})
	c.answeredAt = now
	c.pending = c.pending[1:]
	c.answered++
}

// connect opens a session within timeout.
func (c *client) connect(timeout time.Duration) error {
	if err := aeronhost.WaitForDriver(c.ctx, c.aeronDir, timeout); err != nil {
		return err
	}
	ctx := aeron.NewContext().AeronDir(c.aeronDir).MediaDriverTimeout(5 * time.Second).
		IdleStrategy(idlestrategy.Sleeping{SleepFor: time.Millisecond})
	opts := aclient.NewOptions()
	opts.IngressChannel = "aeron:udp"
	opts.IngressEndpoints = c.endpoints
	opts.EgressChannel = "aeron:udp?endpoint=127.0.0.1:0"
	opts.IdleStrategy = idlestrategy.Sleeping{SleepFor: 100 * time.Microsecond}
	ac, err := aeronhost.NewClusterClient(ctx, opts, c)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for !ac.IsConnected() {
		if ac.Poll() == 0 {
			time.Sleep(time.Millisecond)
		}
		if time.Now().After(deadline) || c.ctx.Err() != nil {
			ac.Close()
			if err := c.ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("aeron cluster client: no session with %s within %v", c.endpoints, timeout)
		}
	}
	c.ac = ac
	return nil
}

func (c *client) close() {
	if c.ac != nil {
		c.ac.Close()
		c.ac = nil
	}
}

// offer offers body once; false when back-pressured.
func (c *client) offer(body []byte) (bool, error) {
	res := c.ac.Offer(aatomic.MakeBuffer(body), 0, int32(len(body)))
	switch {
	case res >= 0:
		return true, nil
	case res == aeron.PublicationClosed || res == aeron.MaxPositionExceeded:
		return false, fmt.Errorf("aeron cluster client: ingress offer: %d", res)
	}
	return false, nil
}

// send offers cmd until it is taken (bounded by deadline) and records it
// as pending with due.
func (c *client) send(cmd *engine.Command, due time.Time, deadline time.Time) error {
	var err error
	if c.body, err = wire.AppendCommand(c.body[:0], cmd); err != nil {
		return err
	}
	for {
		ok, err := c.offer(c.body)
		if err != nil {
			return err
		}
		if ok {
			break
		}
		c.ac.Poll()
		if c.failure != nil {
			return c.failure
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aeron cluster client: ingress back-pressured until the deadline (%d outstanding)", len(c.pending))
		}
	}
	c.pending = append(c.pending, pending{seq: cmd.Seq, due: due, body: append([]byte(nil), c.body...)})
	c.sent++
	return nil
}

// poll polls the egress, sleeping briefly when there was nothing.
func (c *client) poll() error {
	if c.ac.Poll() == 0 {
		time.Sleep(50 * time.Microsecond)
	}
	if c.failure != nil {
		return c.failure
	}
	return c.ctx.Err()
}

// build sends the instruments' definitions and n orders, at most window
// outstanding, and waits for every answer, within limit.
func (c *client) build(n, window int, limit time.Duration, progress func(string, ...any)) error {
	deadline := time.Now().Add(limit)
	var cmd engine.Command
	for i := uint32(1); i <= 8; i++ {
		c.book.Define(&cmd, i)
		if err := c.send(&cmd, time.Now(), deadline); err != nil {
			return err
		}
	}
	next := n / 10
	for sent := 0; sent < n || len(c.pending) > 0; {
		if time.Now().After(deadline) {
			return fmt.Errorf("book: %d of %d orders sent, %d unanswered after %v", sent, n, len(c.pending), limit)
		}
		if sent < n && len(c.pending) < window {
			c.book.Order(&cmd)
			if err := c.send(&cmd, time.Now(), deadline); err != nil {
				return err
			}
			sent++
			if sent == next && progress != nil {
				progress("book: %d/%d orders sent", sent, n)
				next += n / 10
			}
			continue
		}
		if err := c.poll(); err != nil {
			return err
		}
	}
	return nil
}

// rated sends probes (new orders of the book) at a fixed rate, each due
// at its scheduled time, until until returns true (checked every 20 ms;
// nil: for d), at most limit; with sending false it only polls.
type rated struct {
	c       *client
	period  time.Duration
	next    time.Time
	sending bool
	unsent  *engine.Command
}

func (r *rated) run(d time.Duration, until func() (bool, error), limit time.Duration, what string) error {
	c := r.c
	start, check := time.Now(), time.Now()
	if r.next.IsZero() || r.next.Before(start.Add(-time.Second)) {
		r.next = start
	}
	for {
		el := time.Since(start)
		if until == nil && el >= d {
			return nil
		}
		if until != nil && time.Since(check) >= 20*time.Millisecond {
			check = time.Now()
			done, err := until()
			if err != nil || done {
				return err
			}
		}
		if until != nil && el > limit {
			return fmt.Errorf("%s: not done within %v (%d sent, %d answered, %d outstanding)", what, limit, c.sent, c.answered, len(c.pending))
		}
		if r.sending && !time.Now().Before(r.next) && len(c.pending) < 1<<16 {
			if r.unsent == nil {
				r.unsent = new(engine.Command)
				c.book.Order(r.unsent)
			}
			var err error
			if c.body, err = wire.AppendCommand(c.body[:0], r.unsent); err != nil {
				return err
			}
			ok, err := c.offer(c.body)
			if err != nil {
				return err
			}
			if ok {
				c.pending = append(c.pending, pending{seq: r.unsent.Seq, due: r.next, body: append([]byte(nil), c.body...)})
				c.sent++
				r.unsent = nil
				r.next = r.next.Add(r.period)
				continue
			}
		}
		if err := c.poll(); err != nil {
			return err
		}
	}
}

// failover opens a new session after the leader's loss (retrying within
// limit) and sends every unanswered command again, with its source and
// seq: the engine answers one it applied before with a duplicate notice.
func (r *rated) failover(limit time.Duration) error {
	c := r.c
	c.close()
	c.tolerate = true
	deadline := time.Now().Add(limit)
	for {
		err := c.connect(4 * time.Second)
		if err == nil {
			break
		}
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no session within %v of the leader's loss: %w", limit, err)
		}
	}
	c.tolerate = false
	for _, p := range c.pending {
		for {
			ok, err := c.offer(p.body)
			if err != nil {
				return err
			}
			if ok {
				break
			}
			c.ac.Poll()
			if time.Now().After(deadline) {
				return fmt.Errorf("resend after the failover: back-pressured for %v", limit)
			}
		}
		c.resent++
	}
	if now := time.Now(); r.next.Before(now) {
		r.next = now // the fixed rate resumes from here, with no burst
	}
	return nil
}
