package report

import (
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A chart is an SVG laid out here, in Go, so that the template only writes
// shapes at the places computed: html/template escapes every text and
// tooltip in it. Coordinates are CSS pixels of the chart's natural size;
// the page scales it down to fit, never up.
type chart struct {
	ID            string
	Title, Desc   string // its accessible name and description
	Width, Height float64
	Groups        []group
}

// group is shapes that share one tooltip (an SVG title): a bar with its
// label, an axis.
type group struct {
	Tip    string
	Shapes []shape
}

// shape is a rect (X, Y, W, H), a text anchored at (X, Y), or a line from
// (X, Y) to (X+W, Y+H). Class names a style of the page's CSS.
type shape struct {
	Kind       string // "rect", "text" or "line"
	Class      string
	X, Y, W, H float64
	Text       string
	Anchor     string // of a text: "start", "middle" or "end"
}

// X2 and Y2 are where a line ends.
func (s shape) X2() float64 { return s.X + s.W }
func (s shape) Y2() float64 { return s.Y + s.H }

func rect(class string, x, y, w, h float64) shape {
	return shape{Kind: "rect", Class: class, X: x, Y: y, W: w, H: h}
}

func text(class, anchor string, x, y float64, s string) shape {
	return shape{Kind: "text", Class: class, X: x, Y: y, Text: s, Anchor: anchor}
}

func line(class string, x1, y1, x2, y2 float64) shape {
	return shape{Kind: "line", Class: class, X: x1, Y: y1, W: x2 - x1, H: y2 - y1}
}

// The charts' geometry. Text is 13 px (the page's CSS), so that a chart
// scaled down to an A4 page's width still shows it above 11 px. SVG
// cannot measure text before it is drawn: charW is the width of a digit
// of DejaVu Sans, Debian's default and one of the widest sans-serif
// fonts, at that size (measured in Chromium, 8.3 px).
const (
	chartWidth = 760.0
	charW      = 8.3
	fontSize   = 13.0
)

// textWidth is how wide s is drawn, at most.
func textWidth(s string) float64 { return float64(utf8.RuneCountInString(s)) * charW }

// barRow is one bar of a breakdown: the duplicate bytes of its group
// drawn pale and wide, the bytes saved dark and narrow over them.
type barRow struct {
	Label       string
	Back, Front int64
	Value       string // printed next to the bar
	Tip         string
}

// axis is a value axis from 0 to Max with ticks at round values.
type axis struct {
	Max   float64
	Ticks []float64
}

// newAxis chooses ticks at 1, 2, 2.5 or 5 times a power of ten, about n
// of them, the last at or above top.
func newAxis(top float64, n int) axis {
	if !(top > 0) || math.IsInf(top, 0) {
		return axis{Max: 1, Ticks: []float64{0}}
	}
	raw := top / float64(n)
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step := pow * 10
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	a := axis{}
	for i := 0; ; i++ {
		v := float64(i) * step
		a.Ticks = append(a.Ticks, v)
		if v >= top {
			a.Max = v
			return a
		}
	}
}

// tickLabel is a tick's value in bytes without a needless ".0".
func tickLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	s := bytesOf(v)
	if num, unit, ok := strings.Cut(s, " "); ok {
		return strings.TrimSuffix(num, ".0") + " " + unit
	}
	return s
}

func rowsMax(rows []barRow) float64 {
	var m float64
	for _, r := range rows {
		m = max(m, float64(r.Back), float64(r.Front))
	}
	return m
}

// scaled is v on an axis drawn length pixels long, never negative nor
// beyond the axis.
func (a axis) scaled(v int64, length float64) float64 {
	return math.Min(math.Max(float64(v), 0)/a.Max, 1) * length
}

// hbarChart draws rows as horizontal bars under a value axis: labels to
// the left (cut in the middle to labelMax characters, which keeps both a
// host's name and its domain; the tooltip has them whole), the Value of
// each to the right of its bar.
func hbarChart(id, title, desc string, rows []barRow) *chart {
	const (
		labelMax = 36   // characters: at most 299 px
		top      = 30.0 // tick labels, then the bars
		rowH     = 26.0
		backH    = 18.0
		frontH   = 10.0
	)
	labelW, valueW := 0.0, 0.0
	for _, r := range rows {
		labelW = max(labelW, textWidth(ellipsis(r.Label, labelMax)))
		valueW = max(valueW, textWidth(r.Value))
	}
	x0 := max(labelW, 40) + 12
	x1 := chartWidth - valueW - 12
	ax := newAxis(rowsMax(rows), 4)
	plotW := x1 - x0
	height := top + float64(len(rows))*rowH + 6
	c := &chart{ID: id, Title: title, Desc: desc, Width: chartWidth, Height: height}

	grid := group{}
	for _, v := range ax.Ticks {
		x := x0 + v/ax.Max*plotW
		grid.Shapes = append(grid.Shapes,
			line("grid", x, top-6, x, height-4),
			text("tick", "middle", x, top-12, tickLabel(v)))
	}
	grid.Shapes = append(grid.Shapes, line("axis", x0, top-6, x0, height-4))
	c.Groups = append(c.Groups, grid)

	for i, r := range rows {
		y := top + float64(i)*rowH
		mid := y + rowH/2
		back, front := ax.scaled(r.Back, plotW), ax.scaled(r.Front, plotW)
		g := group{Tip: r.Tip}
		g.Shapes = append(g.Shapes,
			// The whole row answers the pointer, not only the bar.
			rect("hit", 0, y, chartWidth, rowH),
			text("label", "end", x0-8, mid+fontSize*0.35, ellipsis(r.Label, labelMax)),
			rect("back", x0, mid-backH/2, back, backH),
			rect("front", x0, mid-frontH/2, front, frontH),
			text("value", "start", x0+max(back, front)+6, mid+fontSize*0.35, r.Value))
		c.Groups = append(c.Groups, g)
	}
	return c
}

// vbarChart draws rows as vertical bars over a category axis, in their
// order, with the value axis on the left. Category labels that would
// collide are thinned out; month labels ("2021-01") become years when
// the months are too narrow for them. Values are printed above the bars
// when there is room.
func vbarChart(id, title, desc string, rows []barRow) *chart {
	const (
		left  = 70.0 // tick labels
		top   = 22.0 // values above the bars
		plotH = 200.0
		right = 10.0
	)
	n := len(rows)
	plotW := chartWidth - left - right
	slot := plotW / float64(max(n, 1))
	barW := max(slot*0.72, 1)
	ax := newAxis(rowsMax(rows), 4)
	base := top + plotH
	height := base + 44
	c := &chart{ID: id, Title: title, Desc: desc, Width: chartWidth, Height: height}

	grid := group{}
	for _, v := range ax.Ticks {
		y := base - v/ax.Max*plotH
		grid.Shapes = append(grid.Shapes,
			line("grid", left, y, chartWidth-right, y),
			text("tick", "end", left-8, y+fontSize*0.35, tickLabel(v)))
	}
	grid.Shapes = append(grid.Shapes, line("axis", left, base, chartWidth-right, base))
	c.Groups = append(c.Groups, grid)

	labels := categoryLabels(rows, slot)
	valueFits := true
	for _, r := range rows {
		valueFits = valueFits && textWidth(r.Value)+4 <= slot
	}
	for i, r := range rows {
		x := left + float64(i)*slot
		mid := x + slot/2
		back, front := ax.scaled(r.Back, plotH), ax.scaled(r.Front, plotH)
		g := group{Tip: r.Tip}
		g.Shapes = append(g.Shapes,
			rect("hit", x, top, slot, plotH),
			rect("back", mid-barW/2, base-back, barW, back),
			rect("front", mid-barW/4, base-front, barW/2, front))
		if valueFits && r.Value != "" {
			g.Shapes = append(g.Shapes, text("value", "middle", mid, base-max(back, front)-5, r.Value))
		}
		if l := labels[i]; l.text != "" {
			anchor, lx := "middle", mid
			if l.start {
				// A year begins here: a line across the plot marks it.
				anchor, lx = "start", x
				g.Shapes = append(g.Shapes, line("grid", lx, top, lx, base))
			}
			g.Shapes = append(g.Shapes,
				line("axis", lx, base, lx, base+5),
				text("label", anchor, lx, base+6+fontSize, l.text))
			if l.sub != "" {
				g.Shapes = append(g.Shapes, text("label", anchor, lx, base+6+2*fontSize+3, l.sub))
			}
		}
		c.Groups = append(c.Groups, g)
	}
	return c
}

// catLabel is the label under one bar of a vbarChart: its text (none to
// leave the bar unlabelled), anchored at the bar's middle or its left
// edge, and a second line under it (a year under its first month).
type catLabel struct {
	text, sub string
	start     bool
}

// categoryLabels chooses the labels under bars slot pixels wide: all of
// them when they fit; for months, "Jan", "Feb"... with the year under
// the first month of each, or only the years, at each January, when not
// even those fit; all of them on two lines when that fits ("100 kB-" over
// "1 MB"); otherwise every k-th label.
func categoryLabels(rows []barRow, slot float64) []catLabel {
	out := make([]catLabel, len(rows))
	widest := 0.0
	months := len(rows) > 0
	for _, r := range rows {
		widest = max(widest, textWidth(r.Label))
		months = months && isMonth(r.Label)
	}
	year := textWidth("2024") + 8
	switch {
	case widest+8 <= slot:
		for i, r := range rows {
			out[i] = catLabel{text: r.Label}
		}
		return out
	case months && textWidth("May")+6 <= slot:
		for i, r := range rows {
			out[i] = catLabel{text: monthNames[monthOf(r.Label)-1]}
			if i == 0 || monthOf(r.Label) == 1 {
				out[i].sub = r.Label[:4]
			}
		}
		return out
	case months && year <= slot*12:
		// Each January, and the first month when the first January is
		// far enough from it.
		first := len(rows)
		for i, r := range rows {
			if monthOf(r.Label) == 1 {
				out[i] = catLabel{text: r.Label[:4], start: true}
				first = min(first, i)
			}
		}
		if first > 0 && float64(first)*slot >= year {
			out[0] = catLabel{text: rows[0].Label[:4], start: true}
		}
		return out
	}
	wrapped := make([]catLabel, len(rows))
	for i, r := range rows {
		a, b, ok := wrapLabel(r.Label, slot-8)
		if !ok {
			wrapped = nil
			break
		}
		wrapped[i] = catLabel{text: a, sub: b}
	}
	if wrapped != nil {
		return wrapped
	}
	k := int(math.Ceil((widest + 8) / slot))
	for i, r := range rows {
		if i%k == 0 {
			out[i] = catLabel{text: r.Label}
		}
	}
	return out
}

// wrapLabel splits s in two lines each at most width wide, after the
// space or dash nearest its middle.
func wrapLabel(s string, width float64) (string, string, bool) {
	if textWidth(s) <= width {
		return s, "", true
	}
	r := []rune(s)
	best := -1
	for i, c := range r {
		cut := -1
		switch c {
		case ' ':
			cut = i // the space is dropped
		case '–', '-', '/':
			cut = i + 1
		}
		if cut <= 0 || cut >= len(r) {
			continue
		}
		if best < 0 || math.Abs(float64(cut)-float64(len(r))/2) < math.Abs(float64(best)-float64(len(r))/2) {
			best = cut
		}
	}
	if best < 0 {
		return "", "", false
	}
	a := strings.TrimSpace(string(r[:best]))
	b := strings.TrimSpace(string(r[best:]))
	if textWidth(a) > width || textWidth(b) > width {
		return "", "", false
	}
	return a, b, true
}

var monthNames = []string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// isMonth is whether s is a capture month, "YYYY-MM".
func isMonth(s string) bool {
	if len(s) != 7 || s[4] != '-' || strings.Trim(s[:4]+s[5:], "0123456789") != "" {
		return false
	}
	m := monthOf(s)
	return m >= 1 && m <= 12
}

func monthOf(s string) int {
	m, _ := strconv.Atoi(s[5:7])
	return m
}

// splitRow is one bar of a whole split in two parts: A from the left, B
// after it. AText is printed under its left end, BText under its right.
type splitRow struct {
	Label        string
	A, B         int64
	AText, BText string
	ATip, BTip   string
}

// splitChart draws each row as one bar the chart's width, split in two.
func splitChart(id, title, desc string, rows []splitRow) *chart {
	const (
		rowH = 58.0
		barH = 22.0
		top  = 6.0
	)
	labelW := 0.0
	for _, r := range rows {
		labelW = max(labelW, textWidth(r.Label))
	}
	x0 := labelW + 14
	x1 := chartWidth - 10
	c := &chart{ID: id, Title: title, Desc: desc, Width: chartWidth, Height: top + float64(len(rows))*rowH}
	for i, r := range rows {
		y := top + float64(i)*rowH
		whole := float64(r.A) + float64(r.B)
		a := 0.0
		if whole > 0 {
			a = math.Max(float64(r.A), 0) / whole * (x1 - x0)
		}
		c.Groups = append(c.Groups, group{Shapes: []shape{
			text("label", "end", x0-8, y+barH/2+fontSize*0.35, r.Label),
			rect("frame", x0, y, x1-x0, barH),
		}})
		c.Groups = append(c.Groups,
			group{Tip: r.ATip, Shapes: []shape{
				rect("part-a", x0, y, a, barH),
				text("label", "start", x0, y+barH+fontSize+4, r.AText),
			}},
			group{Tip: r.BTip, Shapes: []shape{
				rect("part-b", x0+a, y, x1-x0-a, barH),
				text("label", "end", x1, y+barH+fontSize+4, r.BText),
			}})
		if whole <= 0 {
			// Nothing to split: the frame stays empty.
			c.Groups[len(c.Groups)-1].Shapes[0].W = 0
		}
	}
	return c
}
