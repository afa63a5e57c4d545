// Package plot renders latency-over-time charts as standalone SVG or
// self-contained HTML, with no external dependencies and no JavaScript.
package plot

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Point is one latency sample.
type Point struct {
	// X is the sample's time offset from the start of the run (for probes:
	// the intended send time relative to the schedule start).
	X time.Duration
	// Y is the latency. Negative values are invalid and not drawn; on a log
	// scale zero is not drawn either. Omitted points are counted in a note.
	Y time.Duration
}

// Mark kinds with a dedicated colour. Other kinds get colours from a palette.
const (
	// KindSnapshotPauseless marks a snapshot taken without stopping the
	// service (drawn green).
	KindSnapshotPauseless = "snapshot-pauseless"
	// KindSnapshotSTW marks a stop-the-world snapshot (drawn red).
	KindSnapshotSTW = "snapshot-stw"
	// KindRestart marks a node restart (drawn purple).
	KindRestart = "restart"
)

// Mark is a labelled instant drawn as a vertical line, e.g. a snapshot or a
// restart.
type Mark struct {
	// X is the time offset of the event.
	X time.Duration
	// Label is drawn next to the line.
	Label string
	// Kind selects the colour and legend entry, e.g. KindSnapshotSTW.
	Kind string
}

// Span is a shaded time interval, e.g. the window a snapshot pause is
// measured in.
type Span struct {
	// From and To bound the interval (swapped if reversed).
	From, To time.Duration
	// Label is drawn at the top of the shaded area and in the legend.
	Label string
}

// RefLine is a horizontal reference line at a latency, e.g. p50 or p99.
type RefLine struct {
	// Y is the latency to draw the line at.
	Y time.Duration
	// Label names the line, e.g. "p99 outside snapshots"; the value is
	// appended automatically.
	Label string
}

// Default chart size in pixels.
const (
	// DefaultWidth is the SVG width used when LatencyChart.Width is zero.
	DefaultWidth = 1000
	// DefaultHeight is the SVG height (before the legend) used when
	// LatencyChart.Height is zero.
	DefaultHeight = 480
)

// LatencyChart is a scatter chart of latency over time with event marks,
// shaded spans and reference lines.
//
// Downsampling: the plot area is divided into one-pixel columns along X and
// only the minimum- and maximum-latency point of each column is drawn (one
// circle when they coincide). Spikes therefore stay visible however many
// points there are, the global maximum is always drawn, and the output holds
// at most two points per pixel column (about 2,000 circles, ~100 KB for the
// default size) regardless of len(Points).
type LatencyChart struct {
	// Title is shown above the chart and used as the HTML page title.
	Title string
	// Points are the latency samples, in any order.
	Points []Point
	// Marks are vertical event lines.
	Marks []Mark
	// Spans are shaded intervals.
	Spans []Span
	// RefLines are horizontal reference lines such as p50 and p99.
	RefLines []RefLine
	// YLog selects a log10 latency axis. NewLatencyChart sets it, since
	// latencies around pauses span from microseconds to seconds; the zero
	// value of LatencyChart uses a linear axis from 0.
	YLog bool
	// Width and Height are the SVG size in pixels; zero means DefaultWidth
	// and DefaultHeight. The height grows to fit the legend.
	Width, Height int
	// Caption is a short paragraph shown under the chart in HTML output.
	Caption string
	// Rows is an optional key/value table shown under the caption in HTML
	// output.
	Rows [][2]string
}

// NewLatencyChart returns a chart with the given title and a log latency
// axis (the recommended default).
func NewLatencyChart(title string) *LatencyChart {
	return &LatencyChart{Title: title, YLog: true}
}

// WriteFile writes the chart to path as SVG (".svg") or HTML (".html" or
// ".htm"), chosen by the extension (case-insensitive). Any other extension is
// an error naming it, and no file is created.
func (c *LatencyChart) WriteFile(path string) (err error) {
	ext := filepath.Ext(path)
	var write func(io.Writer) error
	switch strings.ToLower(ext) {
	case ".svg":
		write = c.WriteSVG
	case ".html", ".htm":
		write = c.WriteHTML
	default:
		return fmt.Errorf("plot: unsupported file extension %q for %s (want .svg or .html)", ext, path)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return write(f)
}

// WriteSVG writes the chart as a standalone SVG document.
func (c *LatencyChart) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	e := &errWriter{w: bw}
	e.str(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	c.svg(e)
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

// WriteHTML writes a minimal self-contained HTML page (well-formed XHTML
// syntax) holding the title, the SVG chart, the caption and the key/value
// table.
func (c *LatencyChart) WriteHTML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	e := &errWriter{w: bw}
	title := esc(c.title())
	e.str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>" + title + "</title>\n")
	e.str("<style>body{font-family:sans-serif;margin:2em;color:#222}figure{margin:0}" +
		"figcaption{margin:.8em 0;max-width:60em}table{border-collapse:collapse}" +
		"td{border:1px solid #ccc;padding:.2em .6em}td:first-child{font-weight:bold}</style>\n")
	e.str("</head>\n<body>\n<h1>" + title + "</h1>\n<figure>\n")
	c.svg(e)
	if c.Caption != "" {
		e.str("<figcaption>" + esc(c.Caption) + "</figcaption>\n")
	}
	e.str("</figure>\n")
	if len(c.Rows) > 0 {
		e.str("<table>\n")
		for _, r := range c.Rows {
			e.str("<tr><td>" + esc(r[0]) + "</td><td>" + esc(r[1]) + "</td></tr>\n")
		}
		e.str("</table>\n")
	}
	e.str("</body>\n</html>\n")
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

func (c *LatencyChart) title() string {
	if c.Title == "" {
		return "Latency"
	}
	return c.Title
}

// errWriter remembers the first write error.
type errWriter struct {
	w   *bufio.Writer
	err error
	buf []byte
}

func (e *errWriter) str(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// circle writes one point; hand-formatted to keep large charts fast.
func (e *errWriter) circle(x, y float64) {
	b := append(e.buf[:0], `<circle cx="`...)
	b = strconv.AppendFloat(b, x, 'f', 1, 64)
	b = append(b, `" cy="`...)
	b = strconv.AppendFloat(b, y, 'f', 1, 64)
	b = append(b, `" r="1.6"/>`+"\n"...)
	e.buf = b
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

// esc escapes s for XML text and attribute values, replacing characters
// XML 1.0 cannot carry with U+FFFD.
func esc(s string) string {
	valid := true
	for _, r := range s {
		if !xmlChar(r) {
			valid = false
			break
		}
	}
	if !valid || !utf8.ValidString(s) {
		s = strings.Map(func(r rune) rune {
			if xmlChar(r) && r != utf8.RuneError {
				return r
			}
			return '\uFFFD'
		}, s)
	}
	return escaper.Replace(s)
}

func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r <= 0xD7FF) || (r >= 0xE000 && r <= 0xFFFD) || (r >= 0x10000 && r <= 0x10FFFF)
}

// Fixed layout (pixels).
const (
	marginLeft   = 78
	marginRight  = 24
	marginTop    = 44
	axisBelow    = 44 // tick labels and axis title under the plot area
	legendRowH   = 18
	charW        = 6.6 // approximate glyph width at font-size 11
	maxLegendLen = 60
)

var kindColors = map[string]string{
	KindSnapshotPauseless: "#2ca02c",
	KindSnapshotSTW:       "#d62728",
	KindRestart:           "#9467bd",
}

var palette = []string{"#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"}

var spanColors = []string{"#ffbf00", "#9edae5", "#c5b0d5", "#c7c7c7"}

const pointColor = "#1f77b4"

// legendItem is one legend entry: a swatch style and a label.
type legendItem struct {
	kind  string // "point", "line", "dash", "rect"
	color string
	label string
}

// layout holds the computed geometry of a chart.
type layout struct {
	w, h             int
	px0, px1         float64 // plot area, X pixels
	py0, py1         float64 // plot area, Y pixels (py0 top)
	xlo, xhi         float64 // X data range, ns
	ylo, yhi         float64 // Y data range, ns
	ylog             bool
	xticks, yticks   []tick
	legend           []legendItem
	legendRows       [][]int // indices into legend per row
	markColor        map[string]string
	omitted          int
	colMin, colMax   []int32
	hasPoints        bool
	pointsTotalValid int
}

func (l *layout) xpix(v float64) float64 {
	return l.px0 + (v-l.xlo)/(l.xhi-l.xlo)*(l.px1-l.px0)
}

func (l *layout) ypix(v float64) float64 {
	var f float64
	if l.ylog {
		f = (math.Log10(v) - math.Log10(l.ylo)) / (math.Log10(l.yhi) - math.Log10(l.ylo))
	} else {
		f = (v - l.ylo) / (l.yhi - l.ylo)
	}
	return l.py1 - f*(l.py1-l.py0)
}

// validY reports whether a latency can be drawn on the chart's scale.
func (c *LatencyChart) validY(y time.Duration) bool {
	if c.YLog {
		return y > 0
	}
	return y >= 0
}

// computeLayout derives ranges, ticks, the legend and the per-column
// downsampling of the chart.
func (c *LatencyChart) computeLayout() *layout {
	l := &layout{w: c.Width, h: c.Height, ylog: c.YLog}
	if l.w <= 0 {
		l.w = DefaultWidth
	}
	if l.h <= 0 {
		l.h = DefaultHeight
	}
	l.w = max(l.w, marginLeft+marginRight+100)
	l.h = max(l.h, marginTop+axisBelow+100)

	// Data ranges. X always includes 0 (the run start).
	xlo, xhi := 0.0, 0.0
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, p := range c.Points {
		if !c.validY(p.Y) {
			l.omitted++
			continue
		}
		l.pointsTotalValid++
		x, y := float64(p.X), float64(p.Y)
		xlo, xhi = min(xlo, x), max(xhi, x)
		ylo, yhi = min(ylo, y), max(yhi, y)
	}
	l.hasPoints = l.pointsTotalValid > 0
	for _, m := range c.Marks {
		xlo, xhi = min(xlo, float64(m.X)), max(xhi, float64(m.X))
	}
	for _, s := range c.Spans {
		xlo = min(xlo, float64(s.From), float64(s.To))
		xhi = max(xhi, float64(s.From), float64(s.To))
	}
	for _, r := range c.RefLines {
		if c.validY(r.Y) {
			ylo, yhi = min(ylo, float64(r.Y)), max(yhi, float64(r.Y))
		}
	}
	var xt []tick
	xt, l.xlo, l.xhi = linearTicks(xlo, xhi, 10, formatSeconds)
	l.xticks = xt
	if c.YLog {
		if math.IsInf(ylo, 1) { // nothing to draw: 1µs .. 1ms
			ylo, yhi = 1e3, 1e6
		}
		l.yticks, l.ylo, l.yhi = logTicks(ylo, yhi)
	} else {
		if math.IsInf(yhi, -1) || yhi <= 0 {
			yhi = 1e6
		}
		l.yticks, l.ylo, l.yhi = linearTicks(0, yhi, 8, formatLinearNanos)
	}

	// Legend.
	l.legend = append(l.legend, legendItem{"point", pointColor, "probe latency (min & max per pixel column)"})
	l.markColor = map[string]string{}
	next := 0
	for _, m := range c.Marks {
		if _, ok := l.markColor[m.Kind]; ok {
			continue
		}
		col, ok := kindColors[m.Kind]
		if !ok {
			col = palette[next%len(palette)]
			next++
		}
		l.markColor[m.Kind] = col
		label := m.Kind
		if label == "" {
			label = "event"
		}
		l.legend = append(l.legend, legendItem{"line", col, label})
	}
	seenSpan := map[string]bool{}
	for i, s := range c.Spans {
		if seenSpan[s.Label] {
			continue
		}
		seenSpan[s.Label] = true
		label := s.Label
		if label == "" {
			label = "window"
		}
		l.legend = append(l.legend, legendItem{"rect", spanColor(c, i), label})
	}
	for i, r := range c.RefLines {
		l.legend = append(l.legend, legendItem{"dash", refColor(i), refLabel(r)})
	}
	rowW := 0.0
	avail := float64(l.w - marginLeft - marginRight)
	for i, it := range l.legend {
		iw := 24 + charW*float64(utf8.RuneCountInString(truncate(it.label, maxLegendLen))) + 16
		if len(l.legendRows) == 0 || (rowW+iw > avail && rowW > 0) {
			l.legendRows = append(l.legendRows, nil)
			rowW = 0
		}
		l.legendRows[len(l.legendRows)-1] = append(l.legendRows[len(l.legendRows)-1], i)
		rowW += iw
	}
	l.h += len(l.legendRows) * legendRowH

	l.px0, l.px1 = marginLeft, float64(l.w-marginRight)
	l.py0 = marginTop
	l.py1 = float64(l.h - axisBelow - len(l.legendRows)*legendRowH - 6)

	// Downsampling: min and max point per pixel column.
	cols := int(l.px1 - l.px0)
	l.colMin = make([]int32, cols)
	l.colMax = make([]int32, cols)
	for i := range l.colMin {
		l.colMin[i], l.colMax[i] = -1, -1
	}
	for i, p := range c.Points {
		if !c.validY(p.Y) {
			continue
		}
		col := int((float64(p.X) - l.xlo) / (l.xhi - l.xlo) * float64(cols))
		col = min(max(col, 0), cols-1)
		if j := l.colMin[col]; j < 0 || p.Y < c.Points[j].Y {
			l.colMin[col] = int32(i)
		}
		if j := l.colMax[col]; j < 0 || p.Y > c.Points[j].Y {
			l.colMax[col] = int32(i)
		}
	}
	return l
}

func spanColor(c *LatencyChart, i int) string {
	// Same label, same colour: use the index of the first span with it.
	for j := 0; j < i; j++ {
		if c.Spans[j].Label == c.Spans[i].Label {
			i = j
			break
		}
	}
	return spanColors[i%len(spanColors)]
}

func refColor(i int) string {
	return []string{"#555555", "#d62728", "#ff7f0e", "#2ca02c"}[i%4]
}

func refLabel(r RefLine) string {
	if r.Label == "" {
		return FormatDuration(r.Y)
	}
	return r.Label + " " + FormatDuration(r.Y)
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// svg writes the <svg> element.
func (c *LatencyChart) svg(e *errWriter) {
	l := c.computeLayout()
	e.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		l.w, l.h, l.w, l.h)
	e.str("<title>" + esc(c.title()) + "</title>\n")
	e.printf(`<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", l.w, l.h)
	e.printf(`<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", marginLeft, esc(c.title()))

	// Shaded spans.
	e.str(`<g class="spans" fill-opacity="0.22">` + "\n")
	for i, s := range c.Spans {
		a, b := l.xpix(float64(s.From)), l.xpix(float64(s.To))
		if a > b {
			a, b = b, a
		}
		e.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
			f1(a), f1(l.py0), f1(max(b-a, 1)), f1(l.py1-l.py0), spanColor(c, i))
		if s.Label != "" {
			e.printf(`<text x="%s" y="%s" font-size="10" fill="#555555" fill-opacity="1">%s</text>`+"\n",
				f1(a+2), f1(l.py0+11), esc(truncate(s.Label, maxLegendLen)))
		}
	}
	e.str("</g>\n")

	// Grid, ticks and axes.
	e.str(`<g class="axes" stroke="#000000" stroke-width="1">` + "\n")
	for _, t := range l.yticks {
		y := l.ypix(t.v)
		if t.label != "" {
			e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e0e0e0"/>`+"\n", f1(l.px0), f1(y), f1(l.px1), f1(y))
			e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(l.px0-6), f1(y), f1(l.px0), f1(y))
		} else {
			e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(l.px0-3), f1(y), f1(l.px0), f1(y))
		}
	}
	for _, t := range l.xticks {
		x := l.xpix(t.v)
		e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#eeeeee"/>`+"\n", f1(x), f1(l.py0), f1(x), f1(l.py1))
		e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(x), f1(l.py1), f1(x), f1(l.py1+6))
	}
	e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(l.px0), f1(l.py1), f1(l.px1), f1(l.py1))
	e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s"/>`+"\n", f1(l.px0), f1(l.py0), f1(l.px0), f1(l.py1))
	e.str("</g>\n")
	e.str(`<g class="ticklabels" fill="#000000">` + "\n")
	for _, t := range l.yticks {
		if t.label != "" {
			e.printf(`<text x="%s" y="%s" text-anchor="end">%s</text>`+"\n", f1(l.px0-9), f1(l.ypix(t.v)+4), esc(t.label))
		}
	}
	for _, t := range l.xticks {
		e.printf(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", f1(l.xpix(t.v)), f1(l.py1+19), esc(t.label))
	}
	e.printf(`<text x="%s" y="%s" text-anchor="middle">time since start (s)</text>`+"\n", f1((l.px0+l.px1)/2), f1(l.py1+36))
	scale := "linear"
	if l.ylog {
		scale = "log scale"
	}
	e.printf(`<text transform="translate(16,%s) rotate(-90)" text-anchor="middle">latency (%s)</text>`+"\n", f1((l.py0+l.py1)/2), scale)
	e.str("</g>\n")

	// Points: at most min and max per pixel column.
	e.str(`<g class="points" fill="` + pointColor + `" stroke="none">` + "\n")
	for col := range l.colMin {
		lo, hi := l.colMin[col], l.colMax[col]
		if hi < 0 {
			continue
		}
		x := l.px0 + float64(col) + 0.5
		e.circle(x, l.ypix(float64(c.Points[hi].Y)))
		if c.Points[lo].Y != c.Points[hi].Y {
			e.circle(x, l.ypix(float64(c.Points[lo].Y)))
		}
	}
	e.str("</g>\n")

	// Reference lines.
	for i, r := range c.RefLines {
		if !c.validY(r.Y) {
			continue
		}
		y := l.ypix(float64(r.Y))
		col := refColor(i)
		e.printf(`<line class="ref" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="6 4"/>`+"\n",
			f1(l.px0), f1(y), f1(l.px1), f1(y), col)
		e.printf(`<text x="%s" y="%s" text-anchor="end" fill="%s">%s</text>`+"\n", f1(l.px1-4), f1(y-4), col, esc(truncate(refLabel(r), maxLegendLen)))
	}

	// Marks.
	for _, m := range c.Marks {
		x := l.xpix(float64(m.X))
		col := l.markColor[m.Kind]
		e.printf(`<line class="mark" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="1.5"/>`+"\n",
			f1(x), f1(l.py0), f1(x), f1(l.py1), col)
		if m.Label != "" {
			e.printf(`<text transform="translate(%s,%s) rotate(90)" font-size="10" fill="%s">%s</text>`+"\n",
				f1(x+3), f1(l.py0+16), col, esc(truncate(m.Label, maxLegendLen)))
		}
	}

	// Notes.
	if !l.hasPoints {
		e.printf(`<text class="nodata" x="%s" y="%s" text-anchor="middle" font-size="16" fill="#888888">no data</text>`+"\n",
			f1((l.px0+l.px1)/2), f1((l.py0+l.py1)/2))
	}
	if l.omitted > 0 {
		what := "negative latency"
		if l.ylog {
			what = "latency ≤ 0"
		}
		e.printf(`<text class="note" x="%s" y="%s" text-anchor="end" font-size="10" fill="#888888">%d points with %s not shown</text>`+"\n",
			f1(l.px1), f1(l.py0-6), l.omitted, what)
	}

	// Legend.
	y := l.py1 + axisBelow + 2
	for _, row := range l.legendRows {
		x := l.px0
		for _, i := range row {
			it := l.legend[i]
			cy := y + legendRowH/2
			switch it.kind {
			case "point":
				e.printf(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", f1(x+9), f1(cy), it.color)
			case "line":
				e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/>`+"\n", f1(x+9), f1(cy-6), f1(x+9), f1(cy+6), it.color)
			case "dash":
				e.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-dasharray="4 3"/>`+"\n", f1(x), f1(cy), f1(x+18), f1(cy), it.color)
			case "rect":
				e.printf(`<rect x="%s" y="%s" width="18" height="10" fill="%s" fill-opacity="0.35"/>`+"\n", f1(x), f1(cy-5), it.color)
			}
			label := truncate(it.label, maxLegendLen)
			e.printf(`<text class="legend" x="%s" y="%s">%s</text>`+"\n", f1(x+24), f1(cy+4), esc(label))
			x += 24 + charW*float64(utf8.RuneCountInString(label)) + 16
		}
		y += legendRowH
	}
	e.str("</svg>\n")
}
