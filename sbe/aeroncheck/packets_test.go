package aeroncheck

import (
	"testing"

	cc "github.com/lirm/aeron-go/cluster/codecs"

	ours "github.com/matchlog/matchlog/sbe/aeronclustersbe"
)

// aeron-go's cluster container frames its snapshot messages itself
// (codecs/encoders.go: an 8-byte header with schema version 8). Our decoders
// must read those packets as they are, header included.
func TestAeronGoPackets(t *testing.T) {
	r := newRand(t)
	for i := 0; i < rounds; i++ {
		sm := &cc.SnapshotMarker{TypeId: 2, LogPosition: i64(r), LeadershipTermId: i64(r), Index: 0,
			Mark: snapshotMark(r), TimeUnit: timeUnit(r), AppVersion: versionT(r)}
		p, err := cc.SnapshotMarkerPacket(goClusterM, true, sm.TypeId, sm.LogPosition, sm.LeadershipTermId, sm.Index,
			sm.Mark, sm.TimeUnit, sm.AppVersion)
		check(t, err)
		if len(p) != 48 {
			t.Fatalf("SnapshotMarkerPacket is %d bytes, want 48", len(p))
		}
		var d ours.SnapshotMarkerDecoder
		check(t, d.WrapWithHeader(p, 0))
		if d.ActingVersion() != goClusterVersion || d.ActingBlockLength() != ours.SnapshotMarkerBlockLength {
			t.Fatalf("SnapshotMarkerPacket header: version %d block %d", d.ActingVersion(), d.ActingBlockLength())
		}
		got, n := decodeSnapshotMarker(t, p[8:], d.ActingBlockLength(), d.ActingVersion())
		if 8+n != len(p) {
			t.Fatalf("SnapshotMarkerPacket: decoded %d of %d bytes", 8+n, len(p))
		}
		mustSame(t, "SnapshotMarkerPacket", sm, got)

		cs := &cc.ClientSession{ClusterSessionId: i64(r), ResponseStreamId: i32(r), ResponseChannel: ascii(r), EncodedPrincipal: blob(r)}
		p, err = cc.ClientSessionPacket(goClusterM, true, cs.ClusterSessionId, cs.ResponseStreamId, cs.ResponseChannel, cs.EncodedPrincipal)
		check(t, err)
		var cd ours.ClientSessionDecoder
		check(t, cd.WrapWithHeader(p, 0))
		got2, n := decodeClientSession(t, p[8:], cd.ActingBlockLength(), cd.ActingVersion())
		if 8+n != len(p) {
			t.Fatalf("ClientSessionPacket: decoded %d of %d bytes", 8+n, len(p))
		}
		mustSame(t, "ClientSessionPacket", cs, got2)
	}
	// A header for another template is refused.
	p, err := cc.ClientSessionPacket(goClusterM, true, 1, 2, nil, nil)
	check(t, err)
	var d ours.SnapshotMarkerDecoder
	if err := d.WrapWithHeader(p, 0); err == nil {
		t.Fatal("SnapshotMarker decoder accepted a ClientSession header")
	}
}

// Every strict prefix of a message with var data is an error for our
// decoder, never a panic or a short read.
func TestClusterTruncated(t *testing.T) {
	r := newRand(t)
	for i := 0; i < 50; i++ {
		soe := &cc.SessionOpenEvent{LeadershipTermId: i64(r), ResponseChannel: ascii(r), EncodedPrincipal: blob(r)}
		full := goEncodeCluster(t, soe)
		for n := 0; n < len(full); n++ {
			var d ours.SessionOpenEventDecoder
			err := d.WrapForDecode(full[:n], 0, ours.SessionOpenEventBlockLength, goClusterVersion)
			if err == nil {
				_, err = d.ResponseChannel()
			}
			if err == nil {
				_, err = d.EncodedPrincipal()
			}
			if err == nil {
				t.Fatalf("SessionOpenEvent: %d of %d bytes decoded without error", n, len(full))
			}
		}
		cs := &cc.ClusterSession{ClusterSessionId: i64(r), CloseReason: closeReason(r), ResponseChannel: ascii(r)}
		full = goEncodeCluster(t, cs)
		for n := 0; n < len(full); n++ {
			var d ours.ClusterSessionDecoder
			err := d.WrapForDecode(full[:n], 0, ours.ClusterSessionBlockLength, goClusterVersion)
			if err == nil {
				_, err = d.ResponseChannel()
			}
			if err == nil {
				t.Fatalf("ClusterSession: %d of %d bytes decoded without error", n, len(full))
			}
		}
	}
}
