package aeroncheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	ac "github.com/lirm/aeron-go/archive/codecs"
	cc "github.com/lirm/aeron-go/cluster/codecs"
)

// Real Aeron files: decode them with our generated codecs and with aeron-go's,
// and check both against what the fixture's README says is in them.

const (
	clusterSchemaID = 111
	archiveSchemaID = 101
	catalogVersion  = 0x030100 // ArchiveMarkFile.SEMANTIC_VERSION, compose(3, 1, 0)
)

// TestFixtureCatalog decodes archive.catalog: the CatalogHeader at 0, then
// each 64-byte aligned entry of a RecordingDescriptorHeader and a
// RecordingDescriptor (aeron-formats.md 2.5). The catalog has no message
// headers; Aeron wraps each block with the schema's block length and version.
func TestFixtureCatalog(t *testing.T) {
	cat := copyFixture(t, "archive/archive.catalog")["archive/archive.catalog"]

	var gh ac.CatalogHeader
	goDecodeArchive(t, &gh, cat[:32], 32, archiveVersion)
	oh := ourCatalogHeader(t, cat, 0)
	mustSame(t, "CatalogHeader", gh, oh)
	if gh.Version != catalogVersion || gh.Length != 32 || gh.NextRecordingId != 3 || gh.Alignment != 64 {
		t.Fatalf("CatalogHeader = %+v, want version %#x, length 32, nextRecordingId 3, alignment 64", gh, catalogVersion)
	}

	type want struct {
		start, stop int64
		stream      int32
		stripped    string
	}
	wants := []want{
		{0, 231264, 100, "aeron:udp?tags=65|session-id=-1975790911|alias=log"},
		{0, 352, 106, "aeron:ipc?session-id=-1975790907|alias=snapshot"},
		{0, 480, 107, "aeron:ipc?session-id=-1975790906|alias=snapshot"},
	}
	off := int(gh.Length)
	for id, w := range wants {
		var gdh ac.RecordingDescriptorHeader
		goDecodeArchive(t, &gdh, cat[off:off+32], 32, archiveVersion)
		odh := ourRecordingDescriptorHeader(t, cat, off)
		mustSame(t, fmt.Sprintf("entry %d header", id), gdh, odh)
		if gdh.State != ac.RecordingState.VALID || gdh.Length <= 0 || gdh.Checksum != 0 {
			t.Fatalf("entry %d header = %+v, want VALID, length > 0, no checksum", id, gdh)
		}
		body := cat[off+32 : off+32+int(gdh.Length)]

		od, n := ourRecordingDescriptor(t, body)
		var gd ac.RecordingDescriptor
		goDecodeArchive(t, &gd, body[:n], 80, archiveVersion)
		mustSame(t, fmt.Sprintf("entry %d descriptor", id), gd, od)
		if n > len(body) || (len(body)-n) >= 64 {
			t.Fatalf("entry %d: descriptor is %d bytes in a %d-byte body", id, n, len(body))
		}
		for _, b := range body[n:] {
			if b != 0 {
				t.Fatalf("entry %d: non-zero alignment padding", id)
			}
		}
		if gd.RecordingId != int64(id) || gd.StartPosition != w.start || gd.StopPosition != w.stop ||
			gd.StreamId != w.stream || string(gd.StrippedChannel) != w.stripped ||
			gd.TermBufferLength != 65536 || gd.SegmentFileLength != 131072 || gd.MtuLength != 1408 ||
			(id == 0 && gd.InitialTermId != 0) || string(gd.SourceIdentity) != "aeron:ipc" {
			t.Fatalf("entry %d descriptor = %+v", id, gd)
		}
		off += 32 + int(gdh.Length)
	}
	if l := int32(binary.LittleEndian.Uint32(cat[off:])); l != 0 {
		t.Fatalf("entry after the third has length %d, want 0 (end of catalog)", l)
	}
}

// clusterMessages decodes every DATA frame of a recording as one SBE message
// of the cluster schema, with aeron-go and with our codecs, until a frame that
// is not a cluster message (the service's own snapshot data). It returns the
// template ids in order and the decoded aeron-go values.
func clusterMessages(t *testing.T, segs ...[]byte) (ids []uint16, vals []any) {
	t.Helper()
	for _, seg := range segs {
		for _, f := range frames(t, seg, 0) {
			if f.typ == frameTypePad {
				continue
			}
			if f.typ != frameTypeData || f.flags != frameFlagsWhole {
				t.Fatalf("frame at %d: type %d flags %#x, want an unfragmented DATA frame", f.fileOffset, f.typ, f.flags)
			}
			p := f.payload
			var gh cc.MessageHeader
			if err := gh.Decode(goClusterM, bytes.NewReader(p[:8]), 0); err != nil {
				t.Fatal(err)
			}
			mustSame(t, "message header", gh, ourClusterHeader(t, p))
			if gh.SchemaId != clusterSchemaID {
				return ids, append(vals, p)
			}
			if gh.Version != clusterVersion {
				t.Fatalf("frame at %d: cluster schema version %d, want %d", f.fileOffset, gh.Version, clusterVersion)
			}
			body := p[8:]
			g, o, n := decodeCluster(t, gh.TemplateId, body, gh.BlockLength, gh.Version)
			mustSame(t, fmt.Sprintf("template %d at %d", gh.TemplateId, f.fileOffset), g, o)
			if n != len(body) && gh.TemplateId != sessionMessageHeaderID {
				t.Fatalf("template %d at %d: decoded %d of %d bytes", gh.TemplateId, f.fileOffset, n, len(body))
			}
			ids = append(ids, gh.TemplateId)
			vals = append(vals, g)
			if gh.TemplateId == sessionMessageHeaderID {
				vals = append(vals, body[n:])
			}
		}
	}
	return ids, vals
}

// TestFixtureClusterLog decodes recording 0, the cluster log.
func TestFixtureClusterLog(t *testing.T) {
	files := copyFixture(t, "archive/0-0.rec", "archive/0-131072.rec")
	ids, vals := clusterMessages(t, files["archive/0-0.rec"], files["archive/0-131072.rec"])
	count := map[uint16]int{}
	for _, id := range ids {
		count[id]++
	}
	want := map[uint16]int{24: 1, 21: 1, 1: 800, 23: 1, 22: 1}
	if fmt.Sprint(count) != fmt.Sprint(want) {
		t.Fatalf("templates in the log: %v, want %v", count, want)
	}
	if ids[0] != 24 || ids[1] != 21 {
		t.Fatalf("log starts with templates %v, want NewLeadershipTermEvent then SessionOpenEvent", ids[:2])
	}
	nlte := vals[0].(*cc.NewLeadershipTermEvent)
	if nlte.LeadershipTermId != 0 || nlte.TermBaseLogPosition != 0 || nlte.LeaderMemberId != 0 ||
		nlte.TimeUnit != cc.ClusterTimeUnit.MILLIS || nlte.AppVersion == 0 {
		t.Fatalf("NewLeadershipTermEvent = %+v", nlte)
	}
	open := vals[1].(*cc.SessionOpenEvent)
	seq := int32(0)
	var car *cc.ClusterActionRequest
	for i := 2; i < len(vals); i++ {
		switch v := vals[i].(type) {
		case *cc.SessionMessageHeader:
			p := vals[i+1].([]byte)
			i++
			if v.ClusterSessionId != open.ClusterSessionId || len(p) != 200 ||
				int32(binary.LittleEndian.Uint32(p)) != seq {
				t.Fatalf("message %d: header %+v, payload %d bytes starting % x", seq, v, len(p), p[:8])
			}
			seq++
		case *cc.ClusterActionRequest:
			car = v
			if seq != 400 || v.Action != cc.ClusterAction.SNAPSHOT || v.LogPosition != 115744 {
				t.Fatalf("ClusterActionRequest after %d messages: %+v", seq, v)
			}
		case *cc.SessionCloseEvent:
			if seq != 800 || v.ClusterSessionId != open.ClusterSessionId {
				t.Fatalf("SessionCloseEvent after %d messages: %+v", seq, v)
			}
		}
	}
	if car == nil || seq != 800 {
		t.Fatalf("%d messages, action request %v", seq, car)
	}
}

// TestFixtureSnapshots decodes recording 1 (the service snapshot) and
// recording 2 (the consensus module snapshot) taken at log position 115744.
func TestFixtureSnapshots(t *testing.T) {
	files := copyFixture(t, "archive/1-0.rec", "archive/2-0.rec")

	marker := func(v any, typeID int64, mark cc.SnapshotMarkEnum) {
		t.Helper()
		m, ok := v.(*cc.SnapshotMarker)
		if !ok || m.TypeId != typeID || m.Mark != mark || m.LogPosition != 115744 || m.LeadershipTermId != 0 ||
			m.Index != 0 || m.TimeUnit != cc.ClusterTimeUnit.MILLIS || m.AppVersion == 0 {
			t.Fatalf("want marker type %d mark %d, got %+v", typeID, mark, v)
		}
	}

	ids, vals := clusterMessages(t, files["archive/1-0.rec"])
	if fmt.Sprint(ids) != "[100 102 100]" {
		t.Fatalf("service snapshot templates %v, want [100 102 100]", ids)
	}
	marker(vals[0], 2, cc.SnapshotMark.BEGIN)
	if cs := vals[1].(*cc.ClientSession); string(cs.ResponseChannel) != "aeron:udp?endpoint=localhost:50489" {
		t.Fatalf("ClientSession = %+v", cs)
	}
	marker(vals[2], 2, cc.SnapshotMark.END)
	user := vals[3].([]byte) // the service's own data after END
	if binary.LittleEndian.Uint32(user) != 0x4C43524F || binary.LittleEndian.Uint64(user[8:]) != 400 {
		t.Fatalf("service data after END = % x", user)
	}

	ids, vals = clusterMessages(t, files["archive/2-0.rec"])
	if fmt.Sprint(ids) != "[100 105 103 107 100]" {
		t.Fatalf("consensus module snapshot templates %v, want [100 105 103 107 100]", ids)
	}
	marker(vals[0], 1, cc.SnapshotMark.BEGIN)
	if cm := vals[1].(*cc.ConsensusModule); cm.NextSessionId != 2 {
		t.Fatalf("ConsensusModule = %+v", cm)
	}
	if s := vals[2].(*cc.ClusterSession); s.ClusterSessionId != 1 || s.TimeOfLastActivity != -1 ||
		string(s.ResponseChannel) != "aeron:udp?endpoint=localhost:50489" {
		t.Fatalf("ClusterSession = %+v", s)
	}
	if p := vals[3].(*pendingMessageTracker); p.ServiceId != 0 {
		t.Fatalf("PendingMessageTracker = %+v", p)
	}
	marker(vals[4], 1, cc.SnapshotMark.END)
}
