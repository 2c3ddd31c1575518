package report

import (
	"cmp"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

//go:embed report.html.tmpl
var pageTemplate string

var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	// px writes a coordinate: one decimal is finer than a screen shows.
	"px": func(v float64) string {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "0"
		}
		return strconv.FormatFloat(v, 'f', 1, 64)
	},
}).Parse(pageTemplate))

// How much of a long breakdown the page shows: the largest groups, then
// one "other" line for the rest (stats.json keeps them all).
const (
	topMIME    = 15
	topHosts   = 15
	topClasses = 20
	topListed  = 8 // collections named before "and N more"
	// uriMax is where a URI of the classes table is cut (in its middle;
	// its tooltip has it whole): about two lines of the column.
	uriMax = 72
)

// WriteHTML writes r as one self-contained HTML page: inline CSS and SVG,
// no script, nothing fetched from anywhere. Every text of r is escaped.
func WriteHTML(w io.Writer, r *Report) error {
	if r == nil {
		return errors.New("report: no report to write")
	}
	if err := pageTmpl.Execute(w, newPage(r)); err != nil {
		return fmt.Errorf("report: writing HTML: %w", err)
	}
	return nil
}

// page is what the template shows, every figure already in words.
type page struct {
	Title       string
	Mode        string // its name
	ModeWhat    string // what the figures are, in one sentence
	Collections []string
	MoreColls   []string // beyond the first topListed
	Policy      string
	Algorithm   string
	Generated   string
	Caveats     []string
	Estimate    []string // what the estimate rests on, in sentences
	Key         figure   // bytes saved: what the page is about
	Figures     []figure
	Counts      []countGroup
	Exit        int
	ExitReason  []string
	Stopped     string // where and why the run stopped before its end

	// Written, WrittenVerb and DuplicatesAll say how the duplicates
	// kept add up: "the 1,290 revisits written ... the 1,427 duplicates".
	Written, WrittenVerb, DuplicatesAll string

	Saved      string // "saved" or "that would be saved"
	Charted    bool   // some breakdown has a chart
	Breakdowns []breakdown
	URL        breakdown // same-URL against cross-URL

	Classes     []classRow
	MoreClasses int
	// CollisionClasses: a class listed shares its digest with another
	// (its collision class is named beside the digest, and explained).
	CollisionClasses bool
	Reasons          []reasonRow
	ReasonTotal      reasonRow
	Stages           []stageRow
	StagesTotal      string
	Crawls           []crawlRow
	Runs             []runRow
	Collection       []string // what every run did, in sentences
}

type runRow struct {
	Started, Mode, Exit, Files, Revisits string
	Saved, SavedExact, Rewritten         string
	Report                               string // its page, relative to this one
}

// figure is one of the key figures: a value in big type, lines under it,
// the exact figures as its tooltip.
type figure struct {
	Label       string
	Value, Unit string // "311.4" "million"; "3.6" "TB"
	Lines       []string
	Tip         string
}

type countGroup struct {
	Heading string
	Rows    []countRow
}

type countRow struct {
	Label, Human, Exact string
	Warn                bool
}

// breakdown is one section of charts: a chart, or None saying why there
// is none, and the exact figures of each group.
type breakdown struct {
	ID, Heading, Intro string
	Saved              string // "saved" or "that would be saved"
	Chart              *chart
	None               string
	Aside              []string // what the chart leaves out
	Rows               []bucketRow
}

type bucketRow struct {
	Label, Records, Bytes, Duplicates, DuplicateShare, DuplicateBytes, Saved, SavedShare string
	Note                                                                                 string
}

type classRow struct {
	Rank                                int
	Digest, DigestShort, Ext, MIME      string
	Copies, Bytes, BytesExact           string
	DuplicateBytes, DuplicateBytesExact string
	MIMEParts                           []string // where a line may break
	URI                                 string
	URIParts                            []string // cut short, where a line may break
	Date                                string
}

type reasonRow struct {
	Why, Records, Bytes, BytesExact, Share string
}

type stageRow struct {
	Rank       int
	Name, Took string
	TookExact  string
	// Skipped: done before this run; Stopped: the run stopped in it;
	// NotRun: the run stopped before it.
	Skipped, Stopped, NotRun bool
	Note                     string
}

type crawlRow struct {
	Name, Committed, Records, Revisits string
	Conserved, ConservedExact          string
	Size, SizeExact                    string
	Requires                           []string
}

// modes are the words for each Mode: its name, what its figures are, and
// whether they were done (a run) or would be.
var modes = map[string]struct {
	name, what string
	done       bool
}{
	"run":     {"Run", "What the run did to the collection.", true},
	"dry run": {"Dry run", "What a run would do; nothing was written.", false},
	"assess":  {"Assessment", "What a run would do; nothing was written.", false},
	"sample":  {"Sample assessment", "Estimated from a sample of the files; nothing was written.", false},
	"cdx":     {"Index assessment", "Estimated from CDX/CDXJ indexes alone; no payload was read, nothing was written.", false},
}

// tense is the words for what a run did, or for what it would do.
type tense struct {
	saved   string // "saved", "that would be saved": after "bytes"
	save    string // "saved", "would be saved": after a figure
	written string // "Revisits written", "Revisits that would be written"
	toWrite string // the same, short enough for a figure's label
}

var (
	done  = tense{"saved", "saved", "Revisits written", "Revisits written"}
	would = tense{"that would be saved", "would be saved", "Revisits that would be written", "Revisits to write"}
)

func newPage(r *Report) *page {
	p := &page{
		Title:      r.Title,
		Mode:       r.Mode,
		Policy:     orDash(r.Policy),
		Algorithm:  orDash(r.Algorithm),
		Caveats:    r.Caveats,
		Exit:       r.Exit,
		ExitReason: r.ExitReason,
		Stopped:    r.Stopped,
	}
	if p.Title == "" {
		p.Title = "Deduplication report"
	}
	words := would
	if m, ok := modes[r.Mode]; ok {
		p.Mode, p.ModeWhat = m.name, m.what
		if m.done {
			words = done
		}
	}
	p.Mode = orDash(p.Mode)
	p.Collections = r.Collections
	if len(p.Collections) > topListed {
		p.Collections, p.MoreColls = r.Collections[:topListed], r.Collections[topListed:]
	}
	if !r.Generated.IsZero() {
		p.Generated = r.Generated.UTC().Format("2006-01-02 15:04 UTC")
	}
	p.Saved = words.saved
	p.Written, p.DuplicatesAll = count(r.Totals.RevisitsWritten), count(r.Totals.Duplicates)
	p.WrittenVerb = "written"
	if words != done {
		p.WrittenVerb = "that would be written"
	}
	p.figures(r, words)
	p.counts(r, words)
	p.breakdowns(r, words)
	p.tables(r)
	return p
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// figures are the headline: files, responses, duplicates, bytes saved,
// revisits; with an estimate, its value and range in place of the
// counted duplicates and bytes saved.
func (p *page) figures(r *Report, words tense) {
	t := r.Totals
	p.Figures = []figure{
		countFigure("Files", t.Files, count(t.Files)+" files, "+exactBytes(t.StoredBytes),
			humanBytes(t.StoredBytes)+" stored"),
		countFigure("Responses listed", t.Records, count(t.Records)+" candidate responses, "+exactBytes(t.RecordBytes),
			humanBytes(t.RecordBytes)+" stored"),
	}
	dup := countFigure("Duplicates", t.Duplicates, count(t.Duplicates)+" duplicates, "+exactBytes(t.DuplicateBytes),
		share(t.Duplicates, t.Records, "responses"), humanBytes(t.DuplicateBytes))
	save := bytesFigure(words.save, t.BytesSaved, exactBytes(t.BytesSaved),
		share(t.BytesSaved, t.StoredBytes, "the "+humanBytes(t.StoredBytes)+" stored"))
	if e := r.Estimate; e != nil {
		conf := confidence(e.Confidence)
		records := t.Records
		if e.Records > 0 {
			// Totals count what was read: the share is of the estimated whole.
			records = e.Records
			p.Figures[1] = countFigure("Responses listed (estimate)", e.Records, count(e.Records)+" candidate responses",
				count(t.Records)+" read")
		}
		dup = countFigure("Duplicates (estimate)", e.Duplicates,
			count(e.Duplicates)+" duplicates"+between(count, e.DuplicatesLow, e.DuplicatesHigh, e.Duplicates, conf),
			share(e.Duplicates, records, "responses"),
			strings.TrimPrefix(between(humanCount, e.DuplicatesLow, e.DuplicatesHigh, e.Duplicates, conf), ", "))
		save = bytesFigure(words.save+" (estimate)", e.BytesSaved,
			exactBytes(e.BytesSaved)+between(exactBytes, e.BytesSavedLow, e.BytesSavedHigh, e.BytesSaved, conf),
			share(e.BytesSaved, t.StoredBytes, "the "+humanBytes(t.StoredBytes)+" stored"),
			strings.TrimPrefix(between(humanBytes, e.BytesSavedLow, e.BytesSavedHigh, e.BytesSaved, conf), ", "))
		if e.Method != "" {
			p.Estimate = append(p.Estimate, e.Method)
		}
		if e.SampledFiles > 0 {
			p.Estimate = append(p.Estimate, fmt.Sprintf("Read %s of %s files (%s of %s). The breakdowns below count what was read.",
				count(e.SampledFiles), count(t.Files), humanBytes(e.SampledBytes), humanBytes(t.StoredBytes)))
		}
	}
	p.Key = save
	written := countFigure(words.toWrite, t.RevisitsWritten, count(t.RevisitsWritten)+" revisit records")
	if e := r.Estimate; e != nil && e.SampledFiles > 0 {
		written.Lines = append(written.Lines, "in the files read")
	}
	p.Figures = append(p.Figures, dup, written)
}

// between is ", between LOW and HIGH" in the form f gives, and the
// confidence, or nothing when the estimate has no range.
func between(f func(int64) string, low, high, value int64, conf string) string {
	if low == value && high == value {
		return ""
	}
	return ", between " + f(low) + " and " + f(high) + conf
}

// countFigure shows n in words ("311.4 million"), exactly in its tooltip.
func countFigure(label string, n int64, tip string, lines ...string) figure {
	v, u := bigCount(n)
	return figure{Label: label, Value: v, Unit: u, Tip: tip, Lines: nonEmpty(lines)}
}

// bytesFigure shows n bytes in a decimal unit ("3.6 TB").
func bytesFigure(label string, n int64, tip string, lines ...string) figure {
	v, u, _ := strings.Cut(humanBytes(n), " ")
	return figure{Label: label, Value: v, Unit: u, Tip: tip, Lines: nonEmpty(lines)}
}

// share is "25.4% of" what, or nothing when there is no whole to share.
func share(part, whole int64, what string) string {
	if whole <= 0 {
		return ""
	}
	return percent(part, whole) + " of " + what
}

func nonEmpty(ss []string) []string {
	return slices.DeleteFunc(ss, func(s string) bool { return s == "" })
}

// confidence is " (95% confidence)", or nothing when it is not given.
func confidence(c float64) string {
	if !(c > 0 && c < 1) {
		return ""
	}
	return " (" + strconv.FormatFloat(c*100, 'f', -1, 64) + "% confidence)"
}

// counts are every total, exactly, in two tables: what the collection
// holds and what was done to it (or would be); those that need
// attention when not 0 are marked.
func (p *page) counts(r *Report, words tense) {
	t := r.Totals
	n := func(label string, v int64, warn bool) countRow {
		return countRow{Label: label, Human: count(v), Warn: warn && v != 0}
	}
	b := func(label string, v int64) countRow {
		return countRow{Label: label, Human: humanBytes(v), Exact: exactBytes(v)}
	}
	collection := []countRow{
		n("Files", t.Files, false),
		b("Stored bytes", t.StoredBytes),
		n("Responses listed", t.Records, false),
		b("Their stored bytes", t.RecordBytes),
		n("Revisits already in it", t.Revisits, false),
		n("Duplicates", t.Duplicates, false),
		b("Duplicate bytes", t.DuplicateBytes),
	}
	notRead := false
	for i, g := range r.FilesNotDeduplicated {
		label := "Files not read: " + g.Kinds
		if g.Read {
			label = "Files read, not rewritable: " + g.Kinds
		}
		collection = slices.Insert(collection, 1+i, n(label, g.Files, true))
		notRead = notRead || !g.Read
	}
	if t.FilesInProgress > 0 && !notRead {
		// A report of a version that counted only those.
		collection = slices.Insert(collection, 1, n("Files still being written (.open), not read", t.FilesInProgress, true))
	}
	var kept int64
	for _, k := range r.NotDeduplicable {
		kept = sat(kept, k.Records)
	}
	dedup := []countRow{
		n(words.written, t.RevisitsWritten, false),
		n("Duplicates kept (see why below)", kept, false),
		b("Bytes "+words.saved, t.BytesSaved),
		n("Files rewritten", t.FilesRewritten, false),
		n("Files refused", t.FilesRefused, true),
		n("Stale lines", t.StaleLines, true),
		n("Damaged records", t.DamagedRecords, true),
		n("Unreadable files", t.UnreadableFiles, true),
		n("Violations found by verification (must be 0)", t.Violations, true),
	}
	if t.ServedApart > 0 {
		collection = append(collection, n("Not duplicates: served apart", t.ServedApart, false))
	}
	p.Counts = []countGroup{
		{"The collection", collection},
		{"The deduplication", dedup},
	}
	if r.Conversion != nil {
		p.Counts = append(p.Counts, r.Conversion.countGroup())
	}
}

// breakdowns lays out the charts of duplication by MIME type, host,
// month and size, and same-URL against cross-URL.
func (p *page) breakdowns(r *Report, words tense) {
	verb := words.saved
	mime, mimeMerged := topBuckets(r.ByMIME, topMIME)
	host, hostMerged := topBuckets(r.ByHost, topHosts)
	months, undated := timeSeries(r.ByMonth)
	p.Breakdowns = []breakdown{
		newBreakdown("mime", "By MIME type", "The MIME types with the most bytes "+verb+".", "MIME types", verb, mime, mimeMerged, false),
		newBreakdown("host", "By host", "The hosts with the most bytes "+verb+".", "hosts", verb, host, hostMerged, false),
		newBreakdown("month", "By capture month", "Duplicates by the month they were captured in (the chart keeps the months without captures between as gaps; the table lists the months with captures).", "months", verb, months, 0, true),
		newBreakdown("size", "By payload size", "Duplicates by the size of their payload.", "size ranges", verb, r.BySize, 0, true),
	}
	p.Breakdowns[2].Rows = capturedRows(p.Breakdowns[2].Rows, months)
	p.Breakdowns[2].addAside(undated, "not in the chart: not a month", verb)
	p.URL = urlBreakdown(r.SameURL, r.CrossURL, verb)
	for _, b := range p.Breakdowns {
		p.Charted = p.Charted || b.Chart != nil
	}
}

// maxMonths bounds the months timeSeries adds: a century.
const maxMonths = 1200

// timeSeries puts the capture months (YYYY-MM) in order and adds those
// without captures between the first and the last, so that the bars are
// a time series (unless they span more than maxMonths). The buckets whose
// label is not a month ("(unknown)", "other") have no place on a time
// axis: they are returned apart, in their order.
func timeSeries(bs []Bucket) (series, undated []Bucket) {
	index := func(label string) int {
		y, _ := strconv.Atoi(label[:4])
		return y*12 + monthOf(label) - 1
	}
	first, last := math.MaxInt, math.MinInt
	for _, b := range bs {
		if !isMonth(b.Label) {
			undated = append(undated, b)
			continue
		}
		series = append(series, b)
		first, last = min(first, index(b.Label)), max(last, index(b.Label))
	}
	if len(series) == 0 {
		return nil, undated
	}
	if last-first >= maxMonths {
		slices.SortStableFunc(series, func(a, b Bucket) int { return cmp.Compare(a.Label, b.Label) })
		return series, undated
	}
	filled := make([]Bucket, last-first+1)
	for i := range filled {
		m := first + i
		filled[i].Label = fmt.Sprintf("%04d-%02d", m/12, m%12+1)
	}
	for _, b := range series {
		i := index(b.Label) - first
		filled[i] = addBuckets(filled[i], b)
	}
	return filled, undated
}

// capturedRows leaves out of the table under the month chart the months
// timeSeries added without captures: the chart needs them for its time
// axis, the table of exact figures only the months that have records (a
// capture dated 1997 among 2024's would otherwise list 27 years of empty
// months). rows are the rows of months, one for one.
func capturedRows(rows []bucketRow, months []Bucket) []bucketRow {
	if len(rows) != len(months) {
		return rows
	}
	var out []bucketRow
	for i, k := range months {
		if k.Records > 0 || k.Duplicates > 0 || k.Bytes > 0 {
			out = append(out, rows[i])
		}
	}
	return out
}

// addAside lists, under the chart and in the table of exact figures, the
// buckets the chart leaves out.
func (b *breakdown) addAside(bs []Bucket, why, verb string) {
	for _, k := range bs {
		b.Aside = append(b.Aside, fmt.Sprintf("%s, %s: %s duplicates, %s %s.", k.Label, why,
			count(k.Duplicates), humanBytes(k.BytesSaved), verb))
		b.Rows = append(b.Rows, newBucketRow(k, k.Label, why))
	}
}

// newBreakdown is the section of one breakdown: horizontal bars, or
// vertical ones in the buckets' order when ordered, or None when no
// bucket has duplicates. merged is how many groups the "other" bucket
// took in beyond the top ones.
func newBreakdown(id, heading, intro, groups, verb string, bs []Bucket, merged int, ordered bool) breakdown {
	b := breakdown{ID: id, Heading: heading, Intro: intro, Saved: verb}
	var any bool
	for _, k := range bs {
		any = any || k.DuplicateBytes > 0 || k.BytesSaved > 0 || k.Duplicates > 0
	}
	if !any {
		if len(bs) == 0 {
			b.None = "None: no " + groups + " were counted."
		} else {
			b.None = fmt.Sprintf("None: no duplicates in any of the %s %s.", count(int64(len(bs))), groups)
		}
		return b
	}
	rows := make([]barRow, len(bs))
	for i, k := range bs {
		label := k.Label
		if label == "" {
			label = "(none)"
		}
		note := ""
		if k.Label == Other && merged > 0 {
			note = fmt.Sprintf("the %s %s after the top %d", count(int64(merged)), groups, len(bs)-1)
		}
		tip := []string{label}
		if note != "" {
			tip[0] += " (" + note + ")"
		}
		tip = append(tip,
			fmt.Sprintf("%s responses, %s", count(k.Records), exactBytes(k.Bytes)),
			fmt.Sprintf("%s duplicates (%s), %s", count(k.Duplicates), percent(k.Duplicates, k.Records), exactBytes(k.DuplicateBytes)),
			fmt.Sprintf("bytes %s: %s (%s), %s of its bytes", verb, humanBytes(k.BytesSaved), exactBytes(k.BytesSaved), percent(k.BytesSaved, k.Bytes)))
		value := humanBytes(k.BytesSaved)
		if !ordered {
			value += " · " + percent(k.BytesSaved, k.Bytes)
		}
		rows[i] = barRow{Label: label, Back: k.DuplicateBytes, Front: k.BytesSaved, Value: value, Tip: strings.Join(tip, "\n")}
		b.Rows = append(b.Rows, newBucketRow(k, label, note))
	}
	title := "Bytes " + verb + " " + strings.ToLower(heading)
	desc := fmt.Sprintf("%d %s; for each, its duplicate bytes and the bytes %s.", len(bs), groups, verb)
	if ordered {
		b.Chart = vbarChart("chart-"+id, title, desc, rows)
	} else {
		b.Chart = hbarChart("chart-"+id, title, desc, rows)
	}
	return b
}

// newBucketRow is the exact figures of a bucket, for the table under its
// chart.
func newBucketRow(k Bucket, label, note string) bucketRow {
	return bucketRow{
		Label: label, Note: note,
		Records: count(k.Records), Bytes: count(k.Bytes),
		Duplicates: count(k.Duplicates), DuplicateShare: percent(k.Duplicates, k.Records),
		DuplicateBytes: count(k.DuplicateBytes),
		Saved:          count(k.BytesSaved), SavedShare: percent(k.BytesSaved, k.Bytes),
	}
}

// urlBreakdown splits the duplicates, and the bytes saved, into
// re-fetches of the same URL and copies under other URLs.
func urlBreakdown(same, cross Bucket, verb string) breakdown {
	b := breakdown{ID: "url", Heading: "Same URL or another URL", Saved: verb,
		Intro: "Same URL: a re-fetch of a URL that returned what it did before. Another URL: the same bytes under a different URL."}
	if same.Duplicates == 0 && cross.Duplicates == 0 && same.BytesSaved == 0 && cross.BytesSaved == 0 {
		b.None = "None: no duplicates."
		return b
	}
	tip := func(name string, k Bucket) string {
		return fmt.Sprintf("%s\n%s duplicates, %s\nbytes %s: %s", name, count(k.Duplicates), exactBytes(k.DuplicateBytes), verb, exactBytes(k.BytesSaved))
	}
	dups := same.Duplicates + cross.Duplicates
	saved := sat(same.BytesSaved, cross.BytesSaved)
	rows := []splitRow{
		{Label: "Duplicates", A: same.Duplicates, B: cross.Duplicates,
			AText: "Same URL: " + count(same.Duplicates) + " (" + percent(same.Duplicates, dups) + ")",
			BText: "Another URL: " + count(cross.Duplicates) + " (" + percent(cross.Duplicates, dups) + ")",
			ATip:  tip("Same URL", same), BTip: tip("Another URL", cross)},
		{Label: "Bytes " + verb, A: same.BytesSaved, B: cross.BytesSaved,
			AText: "Same URL: " + humanBytes(same.BytesSaved) + " (" + percent(same.BytesSaved, saved) + ")",
			BText: "Another URL: " + humanBytes(cross.BytesSaved) + " (" + percent(cross.BytesSaved, saved) + ")",
			ATip:  tip("Same URL", same), BTip: tip("Another URL", cross)},
	}
	b.Chart = splitChart("chart-url", "Duplicates of the same URL and of another URL",
		"The duplicates, and the bytes "+verb+", split into those of the same URL and those of another URL.", rows)
	for _, k := range []struct {
		name string
		b    Bucket
	}{{"Same URL", same}, {"Another URL", cross}} {
		b.Rows = append(b.Rows, bucketRow{Label: k.name,
			Records: count(k.b.Records), Bytes: count(k.b.Bytes),
			Duplicates: count(k.b.Duplicates), DuplicateShare: percent(k.b.Duplicates, dups),
			DuplicateBytes: count(k.b.DuplicateBytes),
			Saved:          count(k.b.BytesSaved), SavedShare: percent(k.b.BytesSaved, saved)})
	}
	return b
}

// topBuckets keeps the n buckets with the most bytes saved (then
// duplicate bytes), largest first, as the chart shows them, and adds the
// others, and any "other" bucket given, into one "other" bucket after
// them. It returns how many buckets it added into
// "other" besides a given one.
func topBuckets(bs []Bucket, n int) ([]Bucket, int) {
	var named []Bucket
	var other *Bucket
	for _, b := range bs {
		if b.Label == Other {
			o := b
			if other != nil {
				o = addBuckets(*other, b)
			}
			other = &o
			continue
		}
		named = append(named, b)
	}
	slices.SortStableFunc(named, func(a, b Bucket) int {
		return cmp.Or(cmp.Compare(b.BytesSaved, a.BytesSaved), cmp.Compare(b.DuplicateBytes, a.DuplicateBytes))
	})
	merged := 0
	if len(named) > n {
		rest := Bucket{Label: Other}
		if other != nil {
			rest = *other
		}
		for _, b := range named[n:] {
			rest = addBuckets(rest, b)
		}
		merged = len(named) - n
		named, other = named[:n], &rest
	}
	if other != nil {
		named = append(named, *other)
	}
	return named, merged
}

// addBuckets adds b's figures to a's, keeping a's label.
func addBuckets(a, b Bucket) Bucket {
	a.Records = sat(a.Records, b.Records)
	a.Bytes = sat(a.Bytes, b.Bytes)
	a.Duplicates = sat(a.Duplicates, b.Duplicates)
	a.DuplicateBytes = sat(a.DuplicateBytes, b.DuplicateBytes)
	a.BytesSaved = sat(a.BytesSaved, b.BytesSaved)
	return a
}

// sat is a+b, held at the largest int64 rather than wrapping around.
func sat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// tables are the largest classes, what is not deduplicable and why, the
// stages and the crawls.
func (p *page) tables(r *Report) {
	classes := r.LargestClasses
	if len(classes) > topClasses {
		p.MoreClasses = len(classes) - topClasses
		classes = classes[:topClasses]
	}
	for i, c := range classes {
		row := classRow{Rank: i + 1, Digest: c.Digest, DigestShort: shortDigest(c.Digest),
			MIME: c.MIME, Copies: count(c.Copies),
			Bytes: humanBytes(c.Bytes), BytesExact: exactBytes(c.Bytes),
			DuplicateBytes: humanBytes(c.DuplicateBytes), DuplicateBytesExact: exactBytes(c.DuplicateBytes),
			MIMEParts: breakable(c.MIME), URI: c.URI, URIParts: breakable(ellipsis(c.URI, uriMax)),
			Date: captureDate(c.Date)}
		if c.Ext != 0 {
			row.Ext = strconv.Itoa(c.Ext)
			p.CollisionClasses = true
		}
		p.Classes = append(p.Classes, row)
	}

	var records, bytes int64
	for _, w := range r.NotDeduplicable {
		p.Reasons = append(p.Reasons, reasonRow{Why: w.Why, Records: count(w.Records),
			Bytes: humanBytes(w.Bytes), BytesExact: exactBytes(w.Bytes), Share: percent(w.Bytes, r.Totals.StoredBytes)})
		records, bytes = sat(records, w.Records), sat(bytes, w.Bytes)
	}
	p.ReasonTotal = reasonRow{Why: "All", Records: count(records), Bytes: humanBytes(bytes),
		BytesExact: exactBytes(bytes), Share: percent(bytes, r.Totals.StoredBytes)}

	var took int64
	for i, s := range r.Stages {
		row := stageRow{Rank: i + 1, Name: s.Name, Skipped: s.Skipped, Stopped: s.Stopped, NotRun: s.NotRun, Note: s.Note,
			Took: duration(s.Took), TookExact: s.Took.String()}
		if !s.Skipped {
			took = sat(took, int64(s.Took))
		}
		p.Stages = append(p.Stages, row)
	}
	p.StagesTotal = duration(time.Duration(took))

	p.runs(r)
	for _, c := range r.Crawls {
		committed := "no"
		if c.Committed {
			committed = "yes"
		}
		p.Crawls = append(p.Crawls, crawlRow{Name: c.Name, Committed: committed,
			Records: count(c.Records), Revisits: count(c.RevisitsWritten),
			Conserved: humanBytes(c.BytesConserved), ConservedExact: exactBytes(c.BytesConserved),
			Size: humanBytes(c.Size), SizeExact: exactBytes(c.Size),
			Requires: c.Requires})
	}
}

// runs are the history of the work directory: every run and undo, and
// what they did to the collection together.
func (p *page) runs(r *Report) {
	if c := r.Collection; c != nil {
		p.Collection = []string{
			fmt.Sprintf("Every run together wrote %s revisits, and every undo restored %s records: %s saved now, in %s files replaced once or more (fixity.tsv lists each with its size and BLAKE3 sum before the first replacement and now).",
				count(c.RevisitsWritten), count(c.RecordsRestored), humanBytes(c.BytesSaved), count(c.FilesReplaced)),
			"deps.tsv lists, for every file, the files holding the originals its revisits need now, whichever run wrote them.",
		}
	}
	for _, run := range r.Runs {
		row := runRow{Mode: run.Mode, Exit: strconv.Itoa(run.Exit), Files: count(run.Files),
			Revisits: count(run.RevisitsWritten), Saved: humanBytes(run.BytesSaved), SavedExact: exactBytes(run.BytesSaved),
			Rewritten: count(run.FilesRewritten), Report: run.Dir + "/report.html"}
		if !run.Started.IsZero() {
			row.Started = run.Started.UTC().Format("2006-01-02 15:04 UTC")
		}
		if run.Mode == "undo" {
			// An undo's figures are its undo.json.
			row.Revisits = count(run.RecordsRestored) + " restored"
			row.Report = run.Dir + "/undo.json"
		}
		p.Runs = append(p.Runs, row)
	}
}

// breakable cuts a URI or a MIME type after each "/", "?", "&", "=",
// ".", "-" and "_", where the page may break its line: a long URI then
// wraps at its parts, not in the middle of a word. The slashes of
// "https://" stay together.
func breakable(s string) []string {
	var parts []string
	for len(s) > 0 {
		i := strings.IndexAny(s, "/?&=.-_")
		if i < 0 {
			break
		}
		j := i + 1
		for j < len(s) && s[j] == '/' {
			j++
		}
		parts = append(parts, s[:j])
		s = s[j:]
	}
	if s != "" {
		parts = append(parts, s)
	}
	return parts
}
