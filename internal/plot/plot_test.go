package plot

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// doc is the result of decoding a whole document with encoding/xml.
type doc struct {
	text     string              // all character data, space-joined
	elems    map[string]int      // element counts by local name
	circles  [][2]string         // cx, cy of circles inside <g class="points">
	classCnt map[string]int      // elements counts by class attribute
	attrs    []map[string]string // attributes of every element (for NaN checks)
}

func parse(t *testing.T, b []byte) doc {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	out := doc{elems: map[string]int{}, classCnt: map[string]int{}}
	var text []string
	var stack []string // class of open elements
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("document does not parse as XML: %v\n%s", err, head(b))
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			out.elems[tk.Name.Local]++
			a := map[string]string{}
			for _, at := range tk.Attr {
				a[at.Name.Local] = at.Value
			}
			out.attrs = append(out.attrs, a)
			out.classCnt[a["class"]]++
			if tk.Name.Local == "circle" && len(stack) > 0 && stack[len(stack)-1] == "points" {
				out.circles = append(out.circles, [2]string{a["cx"], a["cy"]})
			}
			stack = append(stack, a["class"])
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if s := strings.TrimSpace(string(tk)); s != "" {
				text = append(text, s)
			}
		}
	}
	out.text = strings.Join(text, " ")
	return out
}

func head(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

func svgOf(t *testing.T, c *LatencyChart) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.WriteSVG(&buf); err != nil {
		t.Fatalf("WriteSVG: %v", err)
	}
	return buf.Bytes()
}

func noNaN(t *testing.T, d doc) {
	t.Helper()
	for _, a := range d.attrs {
		for k, v := range a {
			if strings.Contains(v, "NaN") || strings.Contains(v, "Inf") {
				t.Errorf("attribute %s=%q", k, v)
			}
		}
	}
}

func sampleChart() *LatencyChart {
	c := NewLatencyChart(`Probe latency <node 1> & "friends"`)
	for i := 0; i < 5000; i++ {
		y := 40*time.Microsecond + time.Duration(i%17)*time.Microsecond
		if i >= 2000 && i < 2010 {
			y = 180 * time.Millisecond
		}
		c.Points = append(c.Points, Point{X: time.Duration(i) * time.Millisecond, Y: y})
	}
	c.Marks = []Mark{
		{X: 2 * time.Second, Label: "snapshot #1 (stop-the-world)", Kind: KindSnapshotSTW},
		{X: 3 * time.Second, Label: "snapshot #2 <pauseless>", Kind: KindSnapshotPauseless},
		{X: 4 * time.Second, Label: "restart & replay", Kind: KindRestart},
		{X: 4500 * time.Millisecond, Label: "custom event", Kind: "chaos"},
	}
	c.Spans = []Span{{From: 1900 * time.Millisecond, To: 2100 * time.Millisecond, Label: "pause window"}}
	c.RefLines = []RefLine{{Y: 48 * time.Microsecond, Label: "p50"}, {Y: 56 * time.Microsecond, Label: "p99"}}
	return c
}

func TestSVGParsesWithLabels(t *testing.T) {
	c := sampleChart()
	b := svgOf(t, c)
	d := parse(t, b)
	noNaN(t, d)
	if d.elems["svg"] != 1 {
		t.Fatalf("want one <svg> element, got %d", d.elems["svg"])
	}
	want := []string{c.Title, "time since start (s)", "latency (log scale)", "pause window",
		"p50 48µs", "p99 56µs", KindSnapshotSTW, KindSnapshotPauseless, KindRestart, "chaos"}
	for _, m := range c.Marks {
		want = append(want, m.Label)
	}
	for _, w := range want {
		if !strings.Contains(d.text, w) {
			t.Errorf("SVG text lacks %q", w)
		}
	}
	if d.classCnt["mark"] != len(c.Marks) {
		t.Errorf("%d mark lines; want %d", d.classCnt["mark"], len(c.Marks))
	}
	if d.classCnt["ref"] != 2 {
		t.Errorf("%d reference lines; want 2", d.classCnt["ref"])
	}
	// Y axis labels in µs/ms units on a log scale.
	for _, w := range []string{"10µs", "100µs", "1ms", "10ms", "100ms", "1s"} {
		if !strings.Contains(d.text, w) {
			t.Errorf("Y axis lacks tick %q", w)
		}
	}
	if strings.Contains(d.text, "no data") {
		t.Error(`chart with data says "no data"`)
	}
	if strings.Contains(string(b), "<script") {
		t.Error("SVG contains a script")
	}
}

func TestDownsampleMillionPoints(t *testing.T) {
	const n = 1_000_000
	c := NewLatencyChart("1M")
	c.Points = make([]Point, n)
	const maxAt = 654_321
	for i := range c.Points {
		// deterministic jitter 20..219 µs over 100 s
		y := 20*time.Microsecond + time.Duration(i*7919%200)*time.Microsecond
		c.Points[i] = Point{X: time.Duration(i) * 100 * time.Microsecond, Y: y}
	}
	c.Points[maxAt].Y = 2345 * time.Millisecond // a lone spike
	b := svgOf(t, c)
	if len(b) > 3<<20 {
		t.Errorf("SVG for 1M points is %d bytes; want < 3 MiB", len(b))
	}
	d := parse(t, b)
	l := c.computeLayout()
	cols := len(l.colMin)
	if len(d.circles) > 2*cols || len(d.circles) < cols {
		t.Errorf("%d point circles for %d columns; want between %d and %d", len(d.circles), cols, cols, 2*cols)
	}
	// The global max must be drawn, at its column and height, and be the
	// highest point on the chart.
	wantY := f1(l.ypix(float64(c.Points[maxAt].Y)))
	col := int((float64(c.Points[maxAt].X) - l.xlo) / (l.xhi - l.xlo) * float64(cols))
	wantX := f1(l.px0 + float64(col) + 0.5)
	found := false
	for _, p := range d.circles {
		if p == [2]string{wantX, wantY} {
			found = true
		}
		if p[1] != wantY && parseF(t, p[1]) < parseF(t, wantY) {
			t.Fatalf("point %v drawn above the global max at y=%s", p, wantY)
		}
	}
	if !found {
		t.Errorf("global max point (%s, %s) not drawn", wantX, wantY)
	}
	if !strings.Contains(d.text, "1s") || !strings.Contains(d.text, "10s") {
		t.Errorf("Y axis does not reach the 2.3 s spike: %s", d.text)
	}
}

func parseF(t *testing.T, s string) float64 {
	t.Helper()
	var f float64
	if err := xml.Unmarshal([]byte("<v>"+s+"</v>"), &f); err != nil {
		t.Fatalf("bad number %q: %v", s, err)
	}
	return f
}

func TestEmptyChart(t *testing.T) {
	for name, c := range map[string]*LatencyChart{
		"zero":       {},
		"log":        NewLatencyChart("empty"),
		"marks only": {Marks: []Mark{{X: time.Second, Label: "restart", Kind: KindRestart}}, YLog: true},
	} {
		t.Run(name, func(t *testing.T) {
			d := parse(t, svgOf(t, c))
			noNaN(t, d)
			if !strings.Contains(d.text, "no data") {
				t.Errorf(`empty chart lacks "no data" note: %s`, d.text)
			}
			if len(d.circles) != 0 {
				t.Errorf("empty chart draws %d points", len(d.circles))
			}
			if len(c.Marks) > 0 && !strings.Contains(d.text, "restart") {
				t.Error("mark label missing on empty chart")
			}
		})
	}
}

func TestInvalidInputs(t *testing.T) {
	c := NewLatencyChart("bad \x00\x1b inputs \xff")
	c.Points = []Point{
		{X: time.Second, Y: -5 * time.Millisecond},
		{X: 2 * time.Second, Y: 0},
		{X: -3 * time.Second, Y: time.Millisecond},
		{X: math.MaxInt64, Y: math.MaxInt64},
		{X: math.MinInt64, Y: 1},
	}
	c.Marks = []Mark{{X: math.MinInt64, Label: "far \x01 away"}}
	c.Spans = []Span{{From: 5 * time.Second, To: time.Second, Label: "reversed"}}
	c.RefLines = []RefLine{{Y: -time.Second, Label: "neg"}, {Y: 0, Label: "zero"}}
	c.Caption = "caption \x02"
	c.Rows = [][2]string{{"k\x03", "v & <w>"}}
	for _, ylog := range []bool{true, false} {
		c.YLog = ylog
		d := parse(t, svgOf(t, c))
		noNaN(t, d)
		omitted := "2 points with latency ≤ 0 not shown"
		if !ylog {
			omitted = "1 points with negative latency not shown"
		}
		if !strings.Contains(d.text, omitted) {
			t.Errorf("ylog=%v: note %q missing: %s", ylog, omitted, d.text)
		}
		if len(d.circles) == 0 {
			t.Errorf("ylog=%v: valid points not drawn", ylog)
		}
		var buf bytes.Buffer
		if err := c.WriteHTML(&buf); err != nil {
			t.Fatal(err)
		}
		parse(t, buf.Bytes())
	}
	// A single point at an extreme offset still gives a finite axis.
	one := NewLatencyChart("one")
	one.Points = []Point{{X: math.MaxInt64, Y: time.Millisecond}}
	noNaN(t, parse(t, svgOf(t, one)))
}

func TestHTML(t *testing.T) {
	c := sampleChart()
	c.Caption = "Pause per snapshot is the worst probe latency within ±100 ms."
	c.Rows = [][2]string{{"p99 outside snapshots", "56µs"}, {"lost probes", "0"}}
	var buf bytes.Buffer
	if err := c.WriteHTML(&buf); err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if !strings.HasPrefix(s, "<!DOCTYPE html>") {
		t.Errorf("HTML does not start with a doctype: %.40q", s)
	}
	d := parse(t, buf.Bytes())
	for _, w := range []string{c.Title, c.Caption, "p99 outside snapshots", "lost probes", "56µs", "restart & replay"} {
		if !strings.Contains(d.text, w) {
			t.Errorf("HTML lacks %q", w)
		}
	}
	if d.elems["svg"] != 1 || d.elems["tr"] != 2 || d.elems["title"] < 1 {
		t.Errorf("elements %v", d.elems)
	}
	for _, ext := range []string{"<script", " src=", "href=", "<link", "@import"} {
		if strings.Contains(s, ext) {
			t.Errorf("HTML is not self-contained: contains %q", ext)
		}
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	c := sampleChart()
	for _, name := range []string{"a.svg", "b.html", "c.HTM", "d.SVG"} {
		p := filepath.Join(dir, name)
		if err := c.WriteFile(p); err != nil {
			t.Fatalf("WriteFile(%s): %v", name, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		parse(t, b)
		isHTML := strings.HasPrefix(string(b), "<!DOCTYPE html>")
		if wantHTML := strings.Contains(strings.ToLower(name), ".htm"); isHTML != wantHTML {
			t.Errorf("%s: HTML=%v", name, isHTML)
		}
	}
	for _, name := range []string{"chart.png", "chart"} {
		p := filepath.Join(dir, name)
		err := c.WriteFile(p)
		if err == nil {
			t.Fatalf("WriteFile(%s) succeeded", name)
		}
		ext := filepath.Ext(name)
		if !strings.Contains(err.Error(), `"`+ext+`"`) {
			t.Errorf("error %q does not name extension %q", err, ext)
		}
		if _, serr := os.Stat(p); serr == nil {
			t.Errorf("%s was created despite the error", name)
		}
	}
}

func labels(ts []tick) []string {
	var out []string
	for _, t := range ts {
		if t.label != "" {
			out = append(out, t.label)
		}
	}
	return out
}

func TestLogTicks(t *testing.T) {
	ts, lo, hi := logTicks(15e3, 2.3e9) // 15µs .. 2.3s
	if lo != 1e4 || hi != 1e10 {
		t.Errorf("axis [%g, %g]; want [1e4, 1e10]", lo, hi)
	}
	got := strings.Join(labels(ts), ",")
	if want := "10µs,100µs,1ms,10ms,100ms,1s,10s"; got != want {
		t.Errorf("major labels %s; want %s", got, want)
	}
	if len(ts) != 7+6*8 {
		t.Errorf("%d ticks; want 7 majors + 8 minors per decade", len(ts))
	}
	for i := 1; i < len(ts); i++ {
		if !(ts[i].v > ts[i-1].v) {
			t.Fatalf("ticks not increasing at %d: %v", i, ts)
		}
	}

	ts, lo, hi = logTicks(2e3, 5e4) // 2µs .. 50µs: two decades, dense labels
	if lo != 1e3 || hi != 1e5 {
		t.Errorf("axis [%g, %g]; want [1e3, 1e5]", lo, hi)
	}
	if got, want := strings.Join(labels(ts), ","), "1µs,2µs,5µs,10µs,20µs,50µs,100µs"; got != want {
		t.Errorf("dense labels %s; want %s", got, want)
	}

	ts, lo, hi = logTicks(1e6, 1e6) // single value: one decade around it
	if lo != 1e6 || hi != 1e7 || len(labels(ts)) < 2 {
		t.Errorf("single value: axis [%g, %g] ticks %v", lo, hi, labels(ts))
	}
	for _, in := range [][2]float64{{0, 0}, {math.NaN(), 5}, {-1, -2}, {10, math.Inf(1)}} {
		ts, lo, hi := logTicks(in[0], in[1])
		if !(lo > 0 && hi > lo) || len(ts) == 0 || math.IsInf(hi, 0) {
			t.Errorf("logTicks(%v) = %v, [%g, %g]", in, ts, lo, hi)
		}
	}
}

func TestLinearTicksAndFormat(t *testing.T) {
	ts, lo, hi := linearTicks(0, 9.3e9, 10, formatSeconds) // 0..9.3 s
	if lo != 0 || hi != 1e10 {
		t.Errorf("axis [%g, %g]; want [0, 1e10]", lo, hi)
	}
	if got, want := strings.Join(labels(ts), ","), "0,1,2,3,4,5,6,7,8,9,10"; got != want {
		t.Errorf("labels %s; want %s", got, want)
	}
	ts, _, _ = linearTicks(0, 0.25e9, 5, formatSeconds)
	if got, want := strings.Join(labels(ts), ","), "0.00,0.05,0.10,0.15,0.20,0.25"; got != want {
		t.Errorf("labels %s; want %s", got, want)
	}
	for d, want := range map[time.Duration]string{
		0:                          "0ns",
		999:                        "999ns",
		12500:                      "12.5µs",
		1500 * time.Microsecond:    "1.5ms",
		time.Second:                "1s",
		2*time.Second + 345*1e6:    "2.35s",
		-250 * time.Millisecond:    "-250ms",
		100 * time.Microsecond:     "100µs",
		999_999 * time.Microsecond: "1s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%d) = %q; want %q", d, got, want)
		}
	}
}
