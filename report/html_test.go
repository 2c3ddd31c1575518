package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.html from what WriteHTML writes now")

func render(t *testing.T, r *Report) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// hostile is a text that breaks out of an element or an attribute unless
// it is escaped; id tells the fields apart.
func hostile(id string) string {
	return fmt.Sprintf(`<script>alert(%s)</script>" onmouseover="x%s'&`, id, id)
}

// TestWriteHTMLEscapes puts a hostile text in every text field of the
// model and proves that each is shown, escaped, and that none reaches the
// page as markup.
func TestWriteHTMLEscapes(t *testing.T) {
	fields := map[string]func(r *Report, s string){
		"Title":           func(r *Report, s string) { r.Title = s },
		"Mode":            func(r *Report, s string) { r.Mode = s },
		"Collections":     func(r *Report, s string) { r.Collections = []string{s} },
		"Policy":          func(r *Report, s string) { r.Policy = s },
		"Algorithm":       func(r *Report, s string) { r.Algorithm = s },
		"Caveats":         func(r *Report, s string) { r.Caveats = []string{s} },
		"Estimate.Method": func(r *Report, s string) { r.Estimate.Method = s },
		"ByMIME":          func(r *Report, s string) { r.ByMIME[0].Label = s },
		"ByHost":          func(r *Report, s string) { r.ByHost[0].Label = s },
		"ByMonth":         func(r *Report, s string) { r.ByMonth[0].Label = s },
		"BySize":          func(r *Report, s string) { r.BySize[0].Label = s },
		"Class.Digest":    func(r *Report, s string) { r.LargestClasses[0].Digest = s },
		"Class.MIME":      func(r *Report, s string) { r.LargestClasses[0].MIME = s },
		"Class.URI":       func(r *Report, s string) { r.LargestClasses[0].URI = s },
		"Class.Date":      func(r *Report, s string) { r.LargestClasses[0].Date = s },
		"Reason.Why":      func(r *Report, s string) { r.NotDeduplicable[0].Why = s },
		"Stage.Name":      func(r *Report, s string) { r.Stages[0].Name = s },
		"Stage.Note":      func(r *Report, s string) { r.Stages[1].Note = s },
		"Crawl.Name":      func(r *Report, s string) { r.Crawls[0].Name = s },
		"Crawl.Requires":  func(r *Report, s string) { r.Crawls[1].Requires = []string{s} },
		"ExitReason":      func(r *Report, s string) { r.ExitReason = []string{s} },
	}
	r := sampleReport()
	i := 0
	ids := map[string]string{}
	for name, set := range fields {
		i++
		ids[name] = strconv.Itoa(i)
		set(r, hostile(ids[name]))
	}
	// <wbr> only marks where a long URI or MIME type may wrap.
	page := strings.ReplaceAll(render(t, r), "<wbr>", "")
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("a <script> element reached the page")
	}
	if strings.Contains(page, `onmouseover="`) {
		t.Error("an attribute reached the page")
	}
	for name, id := range ids {
		// Escaped, the text shows whole in the page's text or in a
		// tooltip (a cut label or URI keeps it whole in its title).
		want := "&lt;script&gt;alert(" + id + ")&lt;/script&gt;&#34; onmouseover=&#34;x" + id + "&#39;&amp;"
		if !strings.Contains(page, want) {
			t.Errorf("%s: not shown escaped (%s)", name, want)
		}
	}
}

// TestWriteHTMLStandsAlone proves the page asks for nothing: no script,
// no link, no image, no font, no URL in its CSS.
func TestWriteHTMLStandsAlone(t *testing.T) {
	page := render(t, sampleReport())
	for _, bad := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", " src=", " href=", "url(", "@import", "@font-face"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
}

// TestWriteHTMLEmpty renders a report with nothing in it: every breakdown
// says none, no chart is drawn, and no figure is not a number.
func TestWriteHTMLEmpty(t *testing.T) {
	page := render(t, &Report{})
	for _, want := range []string{
		"None: no MIME types were counted.",
		"None: no hosts were counted.",
		"None: no months were counted.",
		"None: no size ranges were counted.",
		"None: no duplicates.",
		"None: no payload has duplicates.",
		"None: every record that repeats a payload can be deduplicated.",
		"None recorded.",
		"Exit status 0.",
		"<title>Deduplication report</title>",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the empty report does not say %q", want)
		}
	}
	for _, bad := range []string{"<svg", "NaN", "Inf", "Crawls of the index", "How this was estimated", "Read the figures with these caveats"} {
		if strings.Contains(page, bad) {
			t.Errorf("the empty report holds %q", bad)
		}
	}
	if err := WriteHTML(&bytes.Buffer{}, nil); err == nil {
		t.Error("WriteHTML(nil) did not fail")
	}
}

// TestWriteHTMLNoDuplicates: buckets without duplicates say so rather than
// draw bars of nothing.
func TestWriteHTMLNoDuplicates(t *testing.T) {
	r := &Report{ByMIME: []Bucket{{Label: "text/html", Records: 10, Bytes: 1000}, {Label: "image/png", Records: 1, Bytes: 10}}}
	page := render(t, r)
	if !strings.Contains(page, "None: no duplicates in any of the 2 MIME types.") || strings.Contains(page, "<svg") {
		t.Error("a breakdown without duplicates was drawn")
	}
}

var coordRE = regexp.MustCompile(` (x|y|x1|y1|x2|y2|width|height)="([^"]*)"`)

// TestWriteHTMLHuge fills every figure with the largest int64: the page
// shows them in units, and its SVG has no coordinate that is not a
// number, negative or beyond its chart.
func TestWriteHTMLHuge(t *testing.T) {
	const huge = math.MaxInt64
	b := Bucket{Label: "x", Records: huge, Bytes: huge, Duplicates: huge, DuplicateBytes: huge, BytesSaved: huge}
	r := &Report{
		Mode:   "run",
		Totals: Totals{Files: huge, StoredBytes: huge, Records: huge, RecordBytes: huge, Duplicates: huge, DuplicateBytes: huge, RevisitsWritten: huge, BytesSaved: huge},
		ByMIME: []Bucket{b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b, b}, ByHost: []Bucket{b},
		ByMonth: []Bucket{b, b}, BySize: []Bucket{b}, SameURL: b, CrossURL: b,
		LargestClasses:  []Class{{Digest: "d", Copies: huge, Bytes: huge, DuplicateBytes: huge}},
		NotDeduplicable: []Reason{{Why: "w", Records: huge, Bytes: huge}, {Why: "v", Records: huge, Bytes: huge}},
		Stages:          []Stage{{Name: "a", Took: huge}, {Name: "b", Took: huge}},
		Crawls:          []Crawl{{Name: "c", Records: huge, BytesConserved: huge, Size: huge}},
	}
	page := render(t, r)
	for _, want := range []string{"9.2 EB", "9,223,372,036,854,775,807", "9.2 <span class=\"unit\">quintillion</span>", "106751 d 23 h"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	if strings.Contains(page, "NaN") || strings.Contains(page, "Inf") {
		t.Error("a figure is not a number")
	}
	for _, m := range coordRE.FindAllStringSubmatch(page, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || v < 0 || v > chartWidth {
			t.Errorf("%s=%q", m[1], m[2])
		}
	}
}

// TestWriteHTMLTopN: of 40 hosts the chart shows the 15 with the most
// bytes saved and one "other" line that adds up the rest with the
// report's own "other".
func TestWriteHTMLTopN(t *testing.T) {
	r := &Report{}
	for i := range 40 {
		r.ByHost = append(r.ByHost, Bucket{Label: fmt.Sprintf("host-%02d.example", i), Records: 10, Bytes: 1000, Duplicates: 1, DuplicateBytes: int64(100 + i), BytesSaved: int64(100 + i)})
	}
	r.ByHost = append(r.ByHost, Bucket{Label: Other, Records: 1, Bytes: 5, Duplicates: 1, DuplicateBytes: 5, BytesSaved: 5})
	page := render(t, r)
	chart := page[strings.Index(page, `<svg id="chart-host"`):]
	chart = chart[:strings.Index(chart, "</svg>")]
	var bars []string
	for _, m := range regexp.MustCompile(`class="label" [^>]*>([^<]*)</text>`).FindAllStringSubmatch(chart, -1) {
		bars = append(bars, m[1])
	}
	if len(bars) != 16 || bars[0] != "host-39.example" || bars[14] != "host-25.example" || bars[15] != Other {
		t.Errorf("bars %q, want host-39 to host-25, then other", bars)
	}
	// The other line: 25 hosts of 100..124 bytes saved, and 5.
	if !strings.Contains(page, "the 25 hosts after the top 15") || !strings.Contains(chart, "bytes that would be saved: 2.8 kB (2,805 bytes)") {
		t.Error("the other line does not add up the rest")
	}
}

// TestTopBuckets covers the cases of the cut: fewer buckets than the top,
// an "other" given, and sums beyond int64.
func TestTopBuckets(t *testing.T) {
	b := func(label string, saved int64) Bucket {
		return Bucket{Label: label, DuplicateBytes: saved, BytesSaved: saved}
	}
	labels := func(bs []Bucket) string {
		var s []string
		for _, b := range bs {
			s = append(s, fmt.Sprintf("%s=%d", b.Label, b.BytesSaved))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name   string
		in     []Bucket
		n      int
		want   string
		merged int
	}{
		{"fewer than the top: sorted, other last", []Bucket{b(Other, 9), b("a", 1), b("b", 3)}, 5, "b=3 a=1 other=9", 0},
		{"the rest added to a new other", []Bucket{b("a", 1), b("b", 3), b("c", 2)}, 2, "b=3 c=2 other=1", 1},
		{"the rest added to the given other", []Bucket{b(Other, 10), b("a", 1), b("b", 3), b("c", 2)}, 1, "b=3 other=13", 2},
		{"sums held at the largest int64", []Bucket{b("a", math.MaxInt64), b("b", math.MaxInt64), b("c", 5)}, 1, fmt.Sprintf("a=%d other=%d", int64(math.MaxInt64), int64(math.MaxInt64)), 2},
		{"nothing", nil, 3, "", 0},
	} {
		got, merged := topBuckets(c.in, c.n)
		if labels(got) != c.want || merged != c.merged {
			t.Errorf("%s: %q (%d merged), want %q (%d)", c.name, labels(got), merged, c.want, c.merged)
		}
	}
}

// TestWriteHTMLModes: the words follow the mode, done or would be done,
// and an estimate shows its range.
func TestWriteHTMLModes(t *testing.T) {
	for _, c := range []struct {
		mode     string
		estimate bool
		want     []string
		not      []string
	}{
		{"run", false, []string{"<strong>Run</strong>", "Revisits written", "</span></span> saved</p>", "Bytes saved"}, []string{"would be"}},
		{"assess", false, []string{"<strong>Assessment</strong>", "would be saved", "Revisits to write"}, []string{"(estimate)"}},
		{"sample", true, []string{"<strong>Sample assessment</strong>", "would be saved (estimate)", "between 3.1 TB and 4.1 TB (95% confidence)", "How this was estimated"}, nil},
		{"cdx", true, []string{"<strong>Index assessment</strong>", "no payload was read"}, nil},
		{"something new", false, []string{"<strong>something new</strong>"}, nil},
	} {
		r := sampleReport()
		r.Mode = c.mode
		if !c.estimate {
			r.Estimate = nil
		}
		page := render(t, r)
		for _, w := range c.want {
			if !strings.Contains(page, w) {
				t.Errorf("%s: no %q", c.mode, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(page, w) {
				t.Errorf("%s: %q", c.mode, w)
			}
		}
	}
}

// TestWriteHTMLEstimates checks how the page states the estimates of an
// assessment: the range only when there is one, the duplicates' share of
// the estimated responses when Totals count only those read, and the
// files read only when files were sampled.
func TestWriteHTMLEstimates(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(r *Report)
		want []string
		not  []string
	}{
		{"a sample estimating the responses",
			func(r *Report) { r.Estimate.Records = 3 * r.Totals.Records },
			[]string{"Responses listed (estimate)", "311,402,118 read", "7.7% of responses", "Read 120 of 1,482 files", "in the files read"}, nil},
		{"a sample counting every response",
			func(r *Report) {},
			[]string{"23.0% of responses", "Read 120 of 1,482 files"}, []string{"Responses listed (estimate)"}},
		{"an index: exact duplicates, modelled bytes, nothing sampled",
			func(r *Report) {
				e := r.Estimate
				r.Mode, e.SampledFiles, e.SampledBytes, e.Confidence = "cdx", 0, 0, 0
				e.DuplicatesLow, e.DuplicatesHigh = e.Duplicates, e.Duplicates
			},
			[]string{"between 3.1 TB and 4.1 TB"}, []string{"Read 0", "between 71,600,000", "confidence)", "in the files read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := sampleReport()
			c.edit(r)
			page := render(t, r)
			for _, w := range c.want {
				if !strings.Contains(page, w) {
					t.Errorf("no %q", w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(page, w) {
					t.Errorf("%q", w)
				}
			}
		})
	}
}

// TestWriteHTMLGolden compares a small report's page with
// testdata/small.golden.html; go test -run Golden -update rewrites it.
func TestWriteHTMLGolden(t *testing.T) {
	r := &Report{
		Title:       "Small collection",
		Generated:   time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC),
		Mode:        "run",
		Collections: []string{"/data/small"},
		Policy:      "payload",
		Algorithm:   "sha1",
		Totals: Totals{Files: 2, StoredBytes: 3_000_000, Records: 10, RecordBytes: 2_500_000,
			Duplicates: 4, DuplicateBytes: 1_000_000, RevisitsWritten: 4, BytesSaved: 990_000, FilesRewritten: 1},
		ByMIME:   []Bucket{{Label: "text/html", Records: 8, Bytes: 2_000_000, Duplicates: 3, DuplicateBytes: 600_000, BytesSaved: 590_000}, {Label: "image/png", Records: 2, Bytes: 500_000, Duplicates: 1, DuplicateBytes: 400_000, BytesSaved: 400_000}},
		ByMonth:  []Bucket{{Label: "2025-12", Records: 10, Bytes: 2_500_000, Duplicates: 4, DuplicateBytes: 1_000_000, BytesSaved: 990_000}},
		SameURL:  Bucket{Duplicates: 3, DuplicateBytes: 700_000, BytesSaved: 690_000},
		CrossURL: Bucket{Duplicates: 1, DuplicateBytes: 300_000, BytesSaved: 300_000},
		LargestClasses: []Class{{Digest: "sha1:AAAABBBBCCCCDDDDEEEEFFFFGGGGHHHH", Copies: 3, Bytes: 900_000, DuplicateBytes: 600_000,
			MIME: "text/html", URI: "http://example.com/", Date: "20251201000000"}},
		Stages: []Stage{{Name: "digest", Took: 90 * time.Second}},
	}
	page := render(t, r)
	golden := filepath.Join("testdata", "small.golden.html")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (go test -run Golden -update writes it)", err)
	}
	if page != string(want) {
		a, b := strings.Split(page, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(a), len(b)) {
			if a[i] != b[i] {
				t.Fatalf("the page differs from %s at line %d:\n got %q\nwant %q\n(go test -run Golden -update rewrites it)", golden, i+1, a[i], b[i])
			}
		}
		t.Fatalf("the page has %d lines, %s %d", len(a), golden, len(b))
	}
}

func TestTimeSeries(t *testing.T) {
	m := func(labels ...string) []Bucket {
		var bs []Bucket
		for _, l := range labels {
			bs = append(bs, Bucket{Label: l, Records: 1})
		}
		return bs
	}
	show := func(bs []Bucket) string {
		var s []string
		for _, b := range bs {
			s = append(s, fmt.Sprintf("%s=%d", b.Label, b.Records))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name            string
		in              []Bucket
		series, undated string
	}{
		{"in order, gaps filled", m("2021-11", "2022-02"), "2021-11=1 2021-12=0 2022-01=0 2022-02=1", ""},
		{"out of order, the same month twice", m("2022-01", "2021-12", "2022-01"), "2021-12=1 2022-01=2", ""},
		{"not months: apart", m("(unknown)", "2022-01", Other), "2022-01=1", "(unknown)=1 other=1"},
		{"a span beyond a century: sorted, not filled", m("2001-01", "1900-01"), "1900-01=1 2001-01=1", ""},
		{"only undated", m("(unknown)"), "", "(unknown)=1"},
		{"none", nil, "", ""},
	} {
		series, undated := timeSeries(c.in)
		if show(series) != c.series || show(undated) != c.undated {
			t.Errorf("%s: %q and %q, want %q and %q", c.name, show(series), show(undated), c.series, c.undated)
		}
	}
	// The page lists what the chart leaves out.
	r := &Report{Mode: "run", ByMonth: []Bucket{
		{Label: "2021-01", Duplicates: 2, DuplicateBytes: 2000, BytesSaved: 1900},
		{Label: "(unknown)", Duplicates: 3, DuplicateBytes: 3000, BytesSaved: 2900},
	}}
	if page := render(t, r); !strings.Contains(page, "(unknown), not in the chart: not a month: 3 duplicates, 2.9 kB saved.") {
		t.Error("the undated bucket is not listed")
	}
}

// TestMonthTableAndCollisionClass proves two things a reader of the page
// is told: the table under the month chart lists the months with
// captures only (the chart keeps the empty months between as gaps), and
// a class whose digest is shared by another payload says "collision
// class N" beside it, explained under the table, not a bare "+N".
func TestMonthTableAndCollisionClass(t *testing.T) {
	r := &Report{Mode: "run", ByMonth: []Bucket{
		{Label: "1997-03", Records: 1, Bytes: 100},
		{Label: "2024-02", Records: 2, Bytes: 200, Duplicates: 1, DuplicateBytes: 100, BytesSaved: 90},
	}, LargestClasses: []Class{
		{Digest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Copies: 2, Bytes: 200, DuplicateBytes: 100},
		{Digest: "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", Ext: 1, Copies: 2, Bytes: 200, DuplicateBytes: 100},
	}}
	page := render(t, r)
	for _, m := range []string{"1997-03", "2024-02"} {
		if !strings.Contains(page, `<td class="wrap">`+m+`</td>`) {
			t.Errorf("the month table does not list %s, a month with captures", m)
		}
	}
	for _, m := range []string{"1997-04", "2010-06", "2024-01"} {
		if strings.Contains(page, `<td class="wrap">`+m+`</td>`) {
			t.Errorf("the month table lists %s, a month without captures", m)
		}
	}
	if !strings.Contains(page, "collision class 1</span>") || !strings.Contains(page, `A digest marked "collision class N"`) || strings.Contains(page, ">+1<") {
		t.Error("the collision class beside a digest is not named and explained")
	}
	if page := render(t, &Report{Mode: "run", LargestClasses: r.LargestClasses[:1]}); strings.Contains(page, "collision class") {
		t.Error("a page without collision classes explains them")
	}
}
