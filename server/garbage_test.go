package server_test

import (
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/matchlog/matchlog/engine"
	"github.com/matchlog/matchlog/internal/vfs"
	"github.com/matchlog/matchlog/sbe/wiresbe"
)

// Random input from many connections never stops the node: every bad
// connection is closed and a well-behaved client is served throughout.
func TestGarbageConnections(t *testing.T) {
	ts := startServer(t, baseOptions(vfs.NewMem(), "node"))
	addr := ts.srv.Addr().String()
	good := dialRaw(t, addr)
	good.connect(1)
	good.answer(good.cmd(defineCmd(1)))
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			for range 25 {
				r := dialRaw(t, addr)
				var b []byte
				if rng.IntN(2) == 0 {
					b = append(b, wiresbe.AppendFrame(nil, wiresbe.AppendConnect(nil, 1000+rng.Uint64N(1000)))...)
				}
				for range 1 + rng.IntN(4) {
					n := rng.IntN(64)
					msg := make([]byte, 8+n)
					for i := range msg {
						msg[i] = byte(rng.Uint32())
					}
					binary.LittleEndian.PutUint16(msg[4:], []uint16{7002, 7003, uint16(rng.Uint32())}[rng.IntN(3)])
					binary.LittleEndian.PutUint16(msg[2:], uint16(rng.IntN(25)))
					if rng.IntN(4) == 0 {
						binary.LittleEndian.PutUint16(msg, uint16(n))
					}
					if rng.IntN(8) == 0 {
						b = binary.LittleEndian.AppendUint32(b, rng.Uint32())
					}
					b = wiresbe.AppendFrame(b, msg)
				}
				r.nc.SetWriteDeadline(time.Now().Add(5 * time.Second))
				r.nc.Write(b)
				r.nc.(interface{ CloseWrite() error }).CloseWrite()
				r.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
				for {
					if _, err := r.fr.Next(); err != nil {
						break
					}
				}
				r.nc.Close()
			}
		}()
	}
	for i := range 50 {
		good.answer(good.cmd(limitCmd(1, uint64(i+1), engine.Side(1+i%2), int64(100+i%3), 1)))
	}
	wg.Wait()
	good.answer(good.cmd(limitCmd(1, 999, engine.Buy, 1, 1)))
	if err := ts.stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if st := ts.srv.Stats(); st.Connections != 101 || st.ActiveSessions != 0 {
		t.Fatalf("stats %+v", st)
	}
}
