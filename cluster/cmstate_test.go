package cluster

import (
	"encoding/binary"
	"testing"

	"github.com/matchlog/matchlog/internal/stream"
	acs "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// capturePub collects offered messages.
type capturePub struct{ frames [][]byte }

func (p *capturePub) TryClaim(int) ([]byte, int64, error) { panic("not used") }
func (p *capturePub) Commit()                             {}
func (p *capturePub) Abort()                              {}
func (p *capturePub) MaxPayloadLength() int               { return 1376 }
func (p *capturePub) Offer(b []byte) (int64, error) {
	p.frames = append(p.frames, append([]byte(nil), b...))
	return int64(len(p.frames)) * 64, nil
}

func sampleCM() (*frozenCM, SnapshotInfo) {
	st := newCMState()
	st.nextSessionID = 9
	st.sessions[3] = &session{ClientSession: ClientSession{ID: 3, ResponseStreamID: 102, ResponseChannel: "aeron:udp?endpoint=x:1"}, CorrelationID: 3, OpenedLogPosition: 96}
	st.sessions[7] = &session{ClientSession: ClientSession{ID: 7, ResponseStreamID: 103, ResponseChannel: "aeron:ipc"}, CorrelationID: 7, OpenedLogPosition: 4096}
	st.timers[11] = 5000
	st.timers[4] = 7000
	return st.freeze(), SnapshotInfo{LogPosition: 8192, LeadershipTermID: 2, TimeUnit: acs.ClusterTimeUnitNANOS, AppVersion: 1}
}

func TestCMSnapshotRoundTrip(t *testing.T) {
	f, info := sampleCM()
	var p capturePub
	if err := writeCMSnapshot(&p, nil, info, f); err != nil {
		t.Fatal(err)
	}
	st, err := loadCMSnapshot(stream.NewFrameSource(p.frames), info)
	if err != nil {
		t.Fatal(err)
	}
	g := st.freeze()
	if g.nextSessionID != f.nextSessionID || len(g.sessions) != 2 || len(g.timers) != 2 ||
		g.sessions[0].ResponseChannel != f.sessions[0].ResponseChannel || g.timers[1] != f.timers[1] {
		t.Fatalf("round trip: %+v, want %+v", g, f)
	}
	// Every truncation and every dropped message is refused.
	for i := range p.frames {
		if _, err := loadCMSnapshot(stream.NewFrameSource(p.frames[:i]), info); err == nil {
			t.Fatalf("snapshot cut after %d messages loaded", i)
		}
		if i == 0 || i == len(p.frames)-1 || i == 1 {
			dropped := append(append([][]byte(nil), p.frames[:i]...), p.frames[i+1:]...)
			if _, err := loadCMSnapshot(stream.NewFrameSource(dropped), info); err == nil {
				t.Fatalf("snapshot without message %d loaded", i)
			}
		}
	}
	// A wrong position is refused.
	other := info
	other.LogPosition += 32
	if _, err := loadCMSnapshot(stream.NewFrameSource(p.frames), other); err == nil {
		t.Fatal("snapshot at another position loaded")
	}
	// The service's container section round-trips too.
	var q capturePub
	if err := writeServiceSessions(&q, nil, info, f.sessions); err != nil {
		t.Fatal(err)
	}
	ss, got, err := loadServiceSessions(stream.NewFrameSource(q.frames), info)
	if err != nil || len(ss) != 2 || got != info || ss[1].ResponseChannel != "aeron:ipc" {
		t.Fatalf("service sessions %+v %+v %v", ss, got, err)
	}
}

// FuzzCMSnapshot feeds damaged consensus-module snapshots to the loader: it
// must never panic, and whatever it accepts must hold only what a snapshot
// can hold.
func FuzzCMSnapshot(f *testing.F) {
	cm, info := sampleCM()
	var p capturePub
	if err := writeCMSnapshot(&p, nil, info, cm); err != nil {
		f.Fatal(err)
	}
	var all []byte
	for _, fr := range p.frames {
		all = binary.LittleEndian.AppendUint16(all, uint16(len(fr)))
		all = append(all, fr...)
	}
	f.Add(all)
	f.Fuzz(func(t *testing.T, b []byte) {
		var frames [][]byte
		for len(b) >= 2 {
			n := int(binary.LittleEndian.Uint16(b))
			b = b[2:]
			n = min(n, len(b))
			frames = append(frames, b[:n])
			b = b[n:]
		}
		loadCMSnapshot(stream.NewFrameSource(frames), info)
		loadServiceSessions(stream.NewFrameSource(frames), info)
	})
}
