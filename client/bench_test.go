package client_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/matchlog/matchlog/client"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/sbe/wiresbe"
	"github.com/matchlog/matchlog/wire"
)

// echoServer speaks just enough of the protocol to measure the client: it
// answers Connect and answers each command with its Release at once,
// allocating nothing per command.
func echoServer(tb testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				fr := wiresbe.NewFrameReader(nc)
				w := bufio.NewWriterSize(nc, 64<<10)
				var out []byte
				ev := engine.Event{Kind: engine.EvRelease, Instrument: 1}
				for {
					msg, err := fr.Next()
					if err != nil {
						return
					}
					out = out[:0]
					if s, tm, _, _ := wiresbe.Header(msg); s == wiresbe.SchemaID && tm == wiresbe.ConnectTemplateID {
						var d wiresbe.ConnectDecoder
						_ = d.WrapWithHeader(msg, 0)
						b, off := wiresbe.BeginFrame(out)
						out = wiresbe.EndFrame(wiresbe.AppendConnected(b, 1, d.ClientId(), 60_000, 240_000, 0), off)
					} else if src, err := wire.CheckCommand(msg); err == nil {
						ev.Source, ev.Seq = src, binary.LittleEndian.Uint64(msg[16:])
						b, off := wiresbe.BeginFrame(out)
						out = wiresbe.EndFrame(wire.AppendEvent(b, &ev), off)
					}
					w.Write(out)
					if fr.Buffered() == 0 {
						if w.Flush() != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func dialEcho(tb testing.TB) *client.Client {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{Addr: echoServer(tb), ClientID: 3, MaxOutstanding: 1 << 20})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkSend measures Send with the answers read concurrently (the
// allocations counted are the whole process's: client and echo server).
func BenchmarkSend(b *testing.B) {
	c := dialEcho(b)
	cmd := engine.Command{Kind: engine.CmdNewOrder, Instrument: 1, OrderID: 1, Side: engine.Buy, Type: engine.Limit, TIF: engine.GTC, Price: 10, Qty: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Send(&cmd); err != nil {
			b.Fatal(err)
		}
		if c.Outstanding() > 1<<16 {
			for c.Outstanding() > 1<<10 {
				time.Sleep(10 * time.Microsecond)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		b.Fatal(err)
	}
}

// The steady Send path allocates nothing (in the client, its reader, and
// the echo server that answers).
func TestSendAllocs(t *testing.T) {
	c := dialEcho(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := engine.Command{Kind: engine.CmdCancel, Instrument: 1, OrderID: 1}
	round := func() {
		for range 64 {
			if _, err := c.Send(&cmd); err != nil {
				t.Fatal(err)
			}
		}
		for c.Outstanding() > 0 {
			time.Sleep(20 * time.Microsecond)
		}
	}
	for range 50 {
		round()
	}
	if err := c.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(50, round); a > 1 {
		t.Fatalf("%.1f allocations per 64 sends", a)
	}
}
