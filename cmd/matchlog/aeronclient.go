package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lirm/aeron-go/aeron"
	aatomic "github.com/lirm/aeron-go/aeron/atomic"
	"github.com/lirm/aeron-go/aeron/idlestrategy"
	"github.com/lirm/aeron-go/aeron/logbuffer"
	aclient "github.com/lirm/aeron-go/cluster/client"
	"github.com/matchlog/matchlog/cluster/aeronhost"
	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/scenario"
	"github.com/matchlog/matchlog/wire"
)

const aeronClientUsage = `usage: matchlog aeron-client --ingress-endpoints 0=HOST:PORT[,1=HOST:PORT...] [--aeron-dir D] [flags] < commands.jsonl

Sends engine commands to the matching engine hosted on a real Aeron Cluster
(matchlog aeron-node) through aeron-go's cluster client, over a local Aeron
media driver (--aeron-dir), and prints the events as JSON lines.

It reads engine commands from stdin, JSON lines in the format of 'matchlog
engine run', sends each as it is read (at most --window unanswered), and
prints the events of each, in order, as JSON lines in engine run's format
('{"event":"duplicate","source":S,"seq":Q}' for a command the engine had
applied before), then a summary line {"commands":N,"events":M,"duplicates":D}.
Unlike 'matchlog client', each command is sent with the source and seq of its
line (the engine ignores a (source, seq) at or below the source's high-water
mark); the "time" field is not used: the consensus module stamps each
command. It exits 0 once stdin has ended and every command has its answer
(its Release, or a Duplicate), or 1 after --timeout, on a lost connection or
on a bad line (the commands before it are answered first).
`

// aeronClientFlags are `matchlog aeron-client`'s flags.
type aeronClientFlags struct {
	aeronDir, endpoints, ingress, egress string
	ingressStream, egressStream          int
	timeout, driverTimeout               time.Duration
	window                               int
}

func runAeronClient(args []string, stdout, stderr io.Writer) error {
	def := aclient.NewOptions()
	f := aeronClientFlags{ingress: "aeron:udp", egress: "aeron:udp?endpoint=127.0.0.1:0",
		ingressStream: int(def.IngressStreamId), egressStream: int(def.EgressStreamId),
		timeout: 30 * time.Second, driverTimeout: 10 * time.Second, window: 1024}
	fs := flag.NewFlagSet("aeron-client", flag.ContinueOnError)
	fs.StringVar(&f.aeronDir, "aeron-dir", "", "the local media driver's directory (aeron.dir; default: Java's, /dev/shm/aeron-<user> where /dev/shm exists)")
	fs.StringVar(&f.endpoints, "ingress-endpoints", "", "the members' ingress endpoints, memberId=host:port,... (aeron.cluster.ingress.endpoints; required with a UDP ingress channel)")
	fs.StringVar(&f.ingress, "ingress-channel", f.ingress, "ingress channel (aeron.cluster.ingress.channel)")
	fs.IntVar(&f.ingressStream, "ingress-stream-id", f.ingressStream, "ingress stream id (aeron.cluster.ingress.stream.id)")
	fs.StringVar(&f.egress, "egress-channel", f.egress, "egress channel the cluster answers on (aeron.cluster.egress.channel)")
	fs.IntVar(&f.egressStream, "egress-stream-id", f.egressStream, "egress stream id (aeron.cluster.egress.stream.id)")
	fs.DurationVar(&f.timeout, "timeout", f.timeout, "give up when connecting, or the answers after the end of stdin, take longer")
	fs.DurationVar(&f.driverTimeout, "media-driver-timeout", f.driverTimeout, "the media driver timeout (aeron.driver.timeout)")
	fs.IntVar(&f.window, "window", f.window, "commands in flight at most (unanswered)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), aeronClientUsage+"\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	bad := usageErr(fs, stderr, "aeron-client")
	switch {
	case !strings.HasPrefix(f.ingress, "aeron:ipc") && f.endpoints == "":
		return bad("--ingress-endpoints is required with a UDP ingress channel (e.g. 0=127.0.0.1:9010)")
	case strings.HasPrefix(f.ingress, "aeron:ipc") && f.endpoints != "":
		return bad("--ingress-endpoints must be empty with an IPC ingress channel")
	case f.timeout <= 0 || f.driverTimeout <= 0:
		return bad("--timeout and --media-driver-timeout must be positive")
	case f.window < 1:
		return bad("--window must be at least 1")
	case int64(f.ingressStream) != int64(int32(f.ingressStream)) || int64(f.egressStream) != int64(int32(f.egressStream)):
		return bad("stream ids must be int32")
	}
	if f.aeronDir == "" {
		f.aeronDir = javaAeronDir()
	}
	return aeronClientSend(&f, stdout)
}

// aeronEgress prints the egress of one session and counts the answers.
type aeronEgress struct {
	out                *bufio.Writer
	buf                []byte
	ev                 engine.Event
	events, dups, done int
	err                error
}

func (e *aeronEgress) OnConnect(*aclient.AeronCluster)                 {}
func (e *aeronEgress) OnNewLeader(*aclient.AeronCluster, int64, int32) {}
func (e *aeronEgress) OnDisconnect(_ *aclient.AeronCluster, details string) {
	if e.err == nil {
		e.err = fmt.Errorf("aeron-client: disconnected: %s", details)
	}
}
func (e *aeronEgress) OnError(_ *aclient.AeronCluster, details string) {
	if e.err == nil {
		e.err = fmt.Errorf("aeron-client: %s", details)
	}
}

func (e *aeronEgress) OnMessage(_ *aclient.AeronCluster, _ int64, buf *aatomic.Buffer, off, n int32, _ *logbuffer.Header) {
	msg := buf.GetBytesArray(off, n)
	if wire.EventKind(msg) == wire.EvDuplicate {
		src, seq, err := wire.DecodeDuplicate(msg)
		if err == nil {
			e.dups++
			e.done++
			fmt.Fprintf(e.out, "{\"event\":\"duplicate\",\"source\":%d,\"seq\":%d}\n", src, seq)
			return
		}
	}
	if err := wire.DecodeEvent(msg, &e.ev); err != nil {
		if e.err == nil {
			e.err = fmt.Errorf("aeron-client: undecodable egress message (%d bytes): %v", len(msg), err)
		}
		return
	}
	e.events++
	if e.ev.Kind == engine.EvRelease {
		e.done++
	}
	e.buf = scenario.AppendEvent(e.buf[:0], &e.ev)
	e.out.Write(e.buf)
}

func aeronClientSend(f *aeronClientFlags, stdout io.Writer) (err error) {
	in := scenario.NewReader(clientStdin)
	out := &aeronEgress{out: bufio.NewWriter(stdout)}
	defer func() {
		if ferr := out.out.Flush(); err == nil {
			err = ferr
		}
	}()
	ctx := aeron.NewContext().AeronDir(f.aeronDir).MediaDriverTimeout(f.driverTimeout).
		IdleStrategy(idlestrategy.Sleeping{SleepFor: time.Millisecond})
	opts := aclient.NewOptions()
	opts.IngressChannel, opts.IngressEndpoints, opts.IngressStreamId = f.ingress, f.endpoints, int32(f.ingressStream)
	opts.EgressChannel, opts.EgressStreamId = f.egress, int32(f.egressStream)
	opts.IdleStrategy = idlestrategy.Sleeping{SleepFor: 100 * time.Microsecond}
	if err := aeronhost.WaitForDriver(context.Background(), f.aeronDir, f.driverTimeout); err != nil {
		return err
	}
	ac, err := aeronhost.NewClusterClient(ctx, opts, out)
	if err != nil {
		return fmt.Errorf("aeron-client: media driver %s: %w", ctx.CncFileName(), err)
	}
	defer ac.Close()
	deadline := time.Now().Add(f.timeout)
	for !ac.IsConnected() {
		if ac.Poll() == 0 {
			time.Sleep(time.Millisecond)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aeron-client: no session with the cluster at %s within %v", f.endpoints, f.timeout)
		}
	}
	var cmd engine.Command
	var body []byte
	commands := 0
	readErr := in.Next(&cmd)
	for readErr == nil {
		if out.err != nil {
			return out.err
		}
		if commands-out.done >= f.window {
			if ac.Poll() == 0 {
				time.Sleep(50 * time.Microsecond)
			}
			continue
		}
		if body, err = wire.AppendCommand(body[:0], &cmd); err != nil {
			readErr = fmt.Errorf("line %d: %w", in.Line(), err)
			break
		}
		b := aatomic.MakeBuffer(body)
		for res := ac.Offer(b, 0, int32(len(body))); res < 0; res = ac.Offer(b, 0, int32(len(body))) {
			if res == aeron.NotConnected || res == aeron.PublicationClosed || res == aeron.MaxPositionExceeded {
				return fmt.Errorf("aeron-client: ingress offer failed (%d) at line %d", res, in.Line())
			}
			ac.Poll()
			if out.err != nil {
				return out.err
			}
		}
		commands++
		readErr = in.Next(&cmd)
	}
	deadline = time.Now().Add(f.timeout)
	for out.done < commands && out.err == nil {
		if ac.Poll() == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("aeron-client: %d of %d commands unanswered after %v", commands-out.done, commands, f.timeout)
		}
	}
	if out.err != nil {
		return out.err
	}
	fmt.Fprintf(out.out, "{\"commands\":%d,\"events\":%d,\"duplicates\":%d}\n", commands, out.events, out.dups)
	if !errors.Is(readErr, io.EOF) {
		return readErr
	}
	return nil
}
