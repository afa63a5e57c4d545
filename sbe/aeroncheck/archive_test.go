package aeroncheck

import (
	"bytes"
	"math/rand/v2"
	"testing"

	ac "github.com/lirm/aeron-go/archive/codecs"

	oa "github.com/matchlog/matchlog/sbe/aeronarchivesbe"
)

const archiveVersion = oa.SchemaVersion // 10, Aeron 1.48

type goArchivePtr[T any] interface {
	*T
	goArchiveCodec
}

// archiveCase cross-checks one archive record whose layout is the same in
// aeron-go's version 6 and Aeron's version 10.
type archiveCase[T any, P goArchivePtr[T]] struct {
	template, block int
	random          func(*rand.Rand) P
	// rangeCheck tells whether aeron-go may range-check v on encode (it does
	// not know RecordingState DELETED, new in version 10).
	rangeCheck func(P) bool
	encode     func(testing.TB, P) []byte
	decode     func(t testing.TB, body []byte, blockLength, version int) (P, int)
}

func (c archiveCase[T, P]) run(t *testing.T) {
	t.Helper()
	r := newRand(t)
	var zero T
	g := P(&zero)
	if int(g.SbeTemplateId()) != c.template || int(g.SbeBlockLength()) != c.block || g.SbeSchemaId() != oa.SchemaID {
		t.Fatalf("aeron-go %T: template %d block %d schema %d; ours: template %d block %d schema %d",
			g, g.SbeTemplateId(), g.SbeBlockLength(), g.SbeSchemaId(), c.template, c.block, oa.SchemaID)
	}
	for i := 0; i < rounds; i++ {
		v := c.random(r)
		rc := c.rangeCheck == nil || c.rangeCheck(v)

		gb := goEncodeArchive(t, v, rc)
		ob := c.encode(t, v)
		mustBytes(t, "aeron-go vs our encoding", gb, ob)

		got, n := c.decode(t, gb, c.block, goArchiveVersion)
		if n != len(gb) {
			t.Fatalf("our decoder took %d bytes of aeron-go's %d", n, len(gb))
		}
		mustSame(t, "aeron-go -> ours", v, got)

		back := P(new(T))
		goDecodeArchive(t, back, ob, uint16(c.block), archiveVersion)
		mustSame(t, "ours -> aeron-go", v, back)
	}
}

func TestArchiveApplyHeader(t *testing.T) {
	var (
		ch  oa.CatalogHeaderEncoder
		rdh oa.RecordingDescriptorHeaderEncoder
		rd  oa.RecordingDescriptorEncoder
	)
	for _, c := range []struct {
		wrap            func([]byte) error
		block, template int
	}{
		{func(b []byte) error { return ch.WrapAndApplyHeader(b, 0) }, 32, 20},
		{func(b []byte) error { return rdh.WrapAndApplyHeader(b, 0) }, 32, 21},
		{func(b []byte) error { return rd.WrapAndApplyHeader(b, 0) }, 80, 22},
	} {
		buf := encodeBuf()
		check(t, c.wrap(buf))
		mustBytes(t, "applied header", goHeader(t, uint16(c.block), uint16(c.template), oa.SchemaID, archiveVersion), buf[:8])
	}
}

func ourCatalogHeader(t testing.TB, b []byte, off int) *ac.CatalogHeader {
	t.Helper()
	var d oa.CatalogHeaderDecoder
	check(t, d.WrapForDecode(b, off, oa.CatalogHeaderBlockLength, archiveVersion))
	return &ac.CatalogHeader{Version: d.Version(), Length: d.Length(), NextRecordingId: d.NextRecordingId(),
		Alignment: d.Alignment(), Reserved: d.Reserved()}
}

func TestArchiveCatalogHeader(t *testing.T) {
	archiveCase[ac.CatalogHeader, *ac.CatalogHeader]{
		template: oa.CatalogHeaderTemplateID, block: oa.CatalogHeaderBlockLength,
		random: func(r *rand.Rand) *ac.CatalogHeader {
			return &ac.CatalogHeader{Version: i32(r), Length: i32(r), NextRecordingId: i64(r), Alignment: i32(r),
				Reserved: int8(-127 + r.IntN(255))}
		},
		encode: func(t testing.TB, v *ac.CatalogHeader) []byte {
			var e oa.CatalogHeaderEncoder
			buf := encodeBuf()
			check(t, e.WrapForEncode(buf, 0))
			e.Version(v.Version).Length(v.Length).NextRecordingId(v.NextRecordingId).Alignment(v.Alignment).Reserved(v.Reserved)
			return buf[:e.EncodedLength()]
		},
		decode: func(t testing.TB, b []byte, bl, ver int) (*ac.CatalogHeader, int) {
			var d oa.CatalogHeaderDecoder
			check(t, d.WrapForDecode(b, 0, bl, ver))
			return ourCatalogHeader(t, b, 0), d.EncodedLength()
		},
	}.run(t)
}

func ourRecordingDescriptorHeader(t testing.TB, b []byte, off int) *ac.RecordingDescriptorHeader {
	t.Helper()
	var d oa.RecordingDescriptorHeaderDecoder
	check(t, d.WrapForDecode(b, off, oa.RecordingDescriptorHeaderBlockLength, archiveVersion))
	return &ac.RecordingDescriptorHeader{Length: d.Length(), State: ac.RecordingStateEnum(d.State()),
		Checksum: d.Checksum(), Reserved: d.Reserved()}
}

const recordingStateDeleted = 2 // RecordingState.DELETED, sinceVersion 10; not in aeron-go

func TestArchiveRecordingDescriptorHeader(t *testing.T) {
	if oa.RecordingStateDELETED != recordingStateDeleted || oa.RecordingStateVALID != 1 || oa.RecordingStateINVALID != 0 {
		t.Fatalf("RecordingState values %d %d %d", oa.RecordingStateINVALID, oa.RecordingStateVALID, oa.RecordingStateDELETED)
	}
	archiveCase[ac.RecordingDescriptorHeader, *ac.RecordingDescriptorHeader]{
		template: oa.RecordingDescriptorHeaderTemplateID, block: oa.RecordingDescriptorHeaderBlockLength,
		random: func(r *rand.Rand) *ac.RecordingDescriptorHeader {
			return &ac.RecordingDescriptorHeader{Length: i32(r), State: ac.RecordingStateEnum(r.IntN(3)),
				Checksum: i32(r), Reserved: int8(-127 + r.IntN(255))}
		},
		rangeCheck: func(v *ac.RecordingDescriptorHeader) bool { return v.State != recordingStateDeleted },
		encode: func(t testing.TB, v *ac.RecordingDescriptorHeader) []byte {
			var e oa.RecordingDescriptorHeaderEncoder
			buf := encodeBuf()
			check(t, e.WrapForEncode(buf, 0))
			e.Length(v.Length).State(oa.RecordingState(v.State)).Checksum(v.Checksum).Reserved(v.Reserved)
			return buf[:e.EncodedLength()]
		},
		decode: func(t testing.TB, b []byte, bl, ver int) (*ac.RecordingDescriptorHeader, int) {
			var d oa.RecordingDescriptorHeaderDecoder
			check(t, d.WrapForDecode(b, 0, bl, ver))
			return ourRecordingDescriptorHeader(t, b, 0), d.EncodedLength()
		},
	}.run(t)
}

// ourRecordingDescriptor decodes a RecordingDescriptor body (no header) with
// the catalog's block length and version and returns it and its length.
func ourRecordingDescriptor(t testing.TB, b []byte) (*ac.RecordingDescriptor, int) {
	t.Helper()
	return decodeRecordingDescriptor(t, b, oa.RecordingDescriptorBlockLength, archiveVersion)
}

func decodeRecordingDescriptor(t testing.TB, b []byte, bl, ver int) (*ac.RecordingDescriptor, int) {
	var d oa.RecordingDescriptorDecoder
	check(t, d.WrapForDecode(b, 0, bl, ver))
	v := &ac.RecordingDescriptor{ControlSessionId: d.ControlSessionId(), CorrelationId: d.CorrelationId(),
		RecordingId: d.RecordingId(), StartTimestamp: d.StartTimestamp(), StopTimestamp: d.StopTimestamp(),
		StartPosition: d.StartPosition(), StopPosition: d.StopPosition(), InitialTermId: d.InitialTermId(),
		SegmentFileLength: d.SegmentFileLength(), TermBufferLength: d.TermBufferLength(), MtuLength: d.MtuLength(),
		SessionId: d.SessionId(), StreamId: d.StreamId()}
	v.StrippedChannel = varData(t)(d.StrippedChannel())
	v.OriginalChannel = varData(t)(d.OriginalChannel())
	v.SourceIdentity = varData(t)(d.SourceIdentity())
	return v, d.EncodedLength()
}

func TestArchiveRecordingDescriptor(t *testing.T) {
	archiveCase[ac.RecordingDescriptor, *ac.RecordingDescriptor]{
		template: oa.RecordingDescriptorTemplateID, block: oa.RecordingDescriptorBlockLength,
		random: func(r *rand.Rand) *ac.RecordingDescriptor {
			return &ac.RecordingDescriptor{ControlSessionId: i64(r), CorrelationId: i64(r), RecordingId: i64(r),
				StartTimestamp: i64(r), StopTimestamp: i64(r), StartPosition: i64(r), StopPosition: i64(r),
				InitialTermId: i32(r), SegmentFileLength: i32(r), TermBufferLength: i32(r), MtuLength: i32(r),
				SessionId: i32(r), StreamId: i32(r), StrippedChannel: ascii(r), OriginalChannel: ascii(r), SourceIdentity: ascii(r)}
		},
		encode: func(t testing.TB, v *ac.RecordingDescriptor) []byte {
			var e oa.RecordingDescriptorEncoder
			buf := encodeBuf()
			check(t, e.WrapForEncode(buf, 0))
			e.ControlSessionId(v.ControlSessionId).CorrelationId(v.CorrelationId).RecordingId(v.RecordingId).
				StartTimestamp(v.StartTimestamp).StopTimestamp(v.StopTimestamp).StartPosition(v.StartPosition).
				StopPosition(v.StopPosition).InitialTermId(v.InitialTermId).SegmentFileLength(v.SegmentFileLength).
				TermBufferLength(v.TermBufferLength).MtuLength(v.MtuLength).SessionId(v.SessionId).StreamId(v.StreamId)
			check(t, e.PutStrippedChannel(v.StrippedChannel))
			check(t, e.PutOriginalChannel(v.OriginalChannel))
			check(t, e.PutSourceIdentity(v.SourceIdentity))
			return buf[:e.EncodedLength()]
		},
		decode: decodeRecordingDescriptor,
	}.run(t)
}

// A short buffer is an error for our decoder, as it is for aeron-go.
func TestArchiveShortBuffer(t *testing.T) {
	r := newRand(t)
	v := &ac.RecordingDescriptor{RecordingId: 5, StrippedChannel: ascii(r), OriginalChannel: []byte("aeron:ipc"), SourceIdentity: []byte("x")}
	full := goEncodeArchive(t, v, true)
	for n := 0; n < len(full); n++ {
		b := full[:n]
		var d oa.RecordingDescriptorDecoder
		err := d.WrapForDecode(b, 0, oa.RecordingDescriptorBlockLength, archiveVersion)
		if err == nil {
			_, err = d.StrippedChannel()
		}
		if err == nil {
			_, err = d.OriginalChannel()
		}
		if err == nil {
			_, err = d.SourceIdentity()
		}
		if err == nil {
			t.Fatalf("decoding %d of %d bytes: no error", n, len(full))
		}
		var g ac.RecordingDescriptor
		if gerr := g.Decode(goArchiveM, bytes.NewReader(b), archiveVersion, oa.RecordingDescriptorBlockLength, true); gerr == nil {
			t.Fatalf("aeron-go decoded %d of %d bytes without error", n, len(full))
		}
	}
}
