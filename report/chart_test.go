package report

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNewAxis(t *testing.T) {
	for _, c := range []struct {
		name  string
		top   float64
		ticks []float64
	}{
		{"round steps of ten", 34.3e9, []float64{0, 10e9, 20e9, 30e9, 40e9}},
		{"steps of 2.5", 9e9, []float64{0, 2.5e9, 5e9, 7.5e9, 10e9}},
		{"a top on a tick ends there", 40, []float64{0, 10, 20, 30, 40}},
		{"nothing", 0, []float64{0}},
		{"beyond int64", 1.8e19, []float64{0, 5e18, 10e18, 15e18, 20e18}},
	} {
		a := newAxis(c.top, 4)
		if !slices.Equal(a.Ticks, c.ticks) {
			t.Errorf("%s: ticks %v, want %v", c.name, a.Ticks, c.ticks)
		}
		if a.Max <= 0 || a.Max < c.top {
			t.Errorf("%s: max %v below the top %v", c.name, a.Max, c.top)
		}
	}
	if got := tickLabel(20e9); got != "20 GB" {
		t.Errorf("tickLabel(20e9) = %q, want 20 GB", got)
	}
	if got := tickLabel(2.5e9); got != "2.5 GB" {
		t.Errorf("tickLabel(2.5e9) = %q, want 2.5 GB", got)
	}
}

func months(from, n int) []barRow {
	rows := make([]barRow, n)
	for i := range rows {
		m := from + i
		rows[i] = barRow{Label: fmt.Sprintf("%d-%02d", 2000+m/12, m%12+1)}
	}
	return rows
}

func TestCategoryLabels(t *testing.T) {
	// labels lists the bars that have one: "2:|2022" is the year 2022
	// at the left edge of bar 2; "0:Nov/2021" is Nov over 2021.
	labels := func(ls []catLabel) string {
		var out []string
		for i, l := range ls {
			if l.text == "" {
				continue
			}
			s := l.text
			if l.sub != "" {
				s += "/" + l.sub
			}
			if l.start {
				s = "|" + s
			}
			out = append(out, fmt.Sprintf("%d:%s", i, s))
		}
		return strings.Join(out, " ")
	}
	sizes := []barRow{{Label: "< 1 KB"}, {Label: "100 KB–1 MB"}, {Label: "≥ 1 GB"}}
	for _, c := range []struct {
		name string
		rows []barRow
		slot float64
		want string
	}{
		{"every label fits", months(21*12, 3), 80, "0:2021-01 1:2021-02 2:2021-03"},
		{"months by name, the year under the first and each January", months(21*12+10, 4), 40, "0:Nov/2021 1:Dec 2:Jan/2022 3:Feb"},
		{"only years, at each January", months(21*12, 25), 12, "0:|2021 12:|2022 24:|2023"},
		{"the first year when there is room before January", months(21*12+8, 17), 12, "0:|2021 4:|2022 16:|2023"},
		{"no first year when there is none", months(21*12+10, 15), 12, "2:|2022 14:|2023"},
		{"on two lines", sizes, 70, "0:< 1 KB 1:100 KB–/1 MB 2:≥ 1 GB"},
		{"every other one", []barRow{{Label: "aaaaaaaaaa"}, {Label: "bbbbbbbbbb"}, {Label: "cccccccccc"}}, 60, "0:aaaaaaaaaa 2:cccccccccc"},
	} {
		if got := labels(categoryLabels(c.rows, c.slot)); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestHbarChart checks the geometry: bars start at the axis, the longest
// ends within the plot, every shape lies inside the chart, and long
// labels are cut.
func TestHbarChart(t *testing.T) {
	rows := []barRow{
		{Label: "text/html", Back: 40e9, Front: 38e9, Value: "38.0 GB · 26%"},
		{Label: strings.Repeat("x", 80), Back: 1e9, Front: 0, Value: "0 B · 0%"},
		{Label: "negative", Back: -5, Front: -5, Value: "?"},
	}
	c := hbarChart("c", "t", "d", rows)
	checkInside(t, c)
	var labels []string
	for _, g := range c.Groups {
		for _, s := range g.Shapes {
			if s.Kind == "text" && s.Class == "label" {
				labels = append(labels, s.Text)
			}
		}
	}
	if len(labels) != 3 || len([]rune(labels[1])) != 36 || !strings.Contains(labels[1], "…") {
		t.Errorf("labels %q: the long one not cut to 36 characters", labels)
	}
}

func TestVbarChart(t *testing.T) {
	rows := months(20*12, 240)
	for i := range rows {
		rows[i].Back, rows[i].Front = int64(i)*1e9, int64(i)*5e8
	}
	checkInside(t, vbarChart("c", "t", "d", rows))
	checkInside(t, vbarChart("c", "t", "d", []barRow{{Label: "one", Back: math.MaxInt64, Front: math.MaxInt64, Value: "9.2 EB"}}))
}

func TestSplitChart(t *testing.T) {
	c := splitChart("c", "t", "d", []splitRow{
		{Label: "Duplicates", A: 3, B: 1, AText: "a", BText: "b"},
		{Label: "Nothing", A: 0, B: 0},
		{Label: "Huge", A: math.MaxInt64, B: math.MaxInt64},
	})
	checkInside(t, c)
	var parts []float64
	for _, g := range c.Groups {
		for _, s := range g.Shapes {
			if s.Class == "part-a" {
				parts = append(parts, s.W)
			}
		}
	}
	plot := chartWidth - 10 - (textWidth("Duplicates") + 14)
	if len(parts) != 3 || math.Abs(parts[0]-plot*0.75) > 0.01 || parts[1] != 0 || math.Abs(parts[2]-plot/2) > 0.01 {
		t.Errorf("part A widths %v, want %v, 0, %v", parts, plot*0.75, plot/2)
	}
}

// checkInside fails the test unless every shape of c has finite
// coordinates, no negative size, and lies within the chart.
func checkInside(t *testing.T, c *chart) {
	t.Helper()
	for _, g := range c.Groups {
		for _, s := range g.Shapes {
			for _, v := range []float64{s.X, s.Y, s.W, s.H} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("%+v: not a number", s)
				}
			}
			x2, y2 := s.X2(), s.Y2()
			if s.Kind == "text" {
				x2 = s.X
				switch s.Anchor {
				case "start":
					x2 = s.X + textWidth(s.Text)
				case "middle":
					x2 = s.X + textWidth(s.Text)/2
				}
			}
			if s.X < 0 || s.Y < 0 || x2 > c.Width+0.01 || y2 > c.Height+0.01 || (s.Kind == "rect" && (s.W < 0 || s.H < 0)) {
				t.Errorf("%+v: outside the %vx%v chart", s, c.Width, c.Height)
			}
		}
	}
}
