//go:build browser

package replay

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/cdxj"
	"warcdedup/internal/replaytest"
)

// modeReport is what one replay mode showed for a collection.
type modeReport struct {
	mode                string
	checked, same       int
	known, unexpected   int
	notReplayableBefore int // the response did not replay before the run either
	otherFile           int // original in another file: not checkable in this mode
	reasons             map[string]int
	otherHeaders        map[string]int // headers other than those compared that differ
	loadTimes           []time.Duration
}

func newModeReport(mode string) *modeReport {
	return &modeReport{mode: mode, reasons: map[string]int{}, otherHeaders: map[string]int{}}
}

func (m *modeReport) String() string {
	return fmt.Sprintf("%s: %d checked, %d replay as before, %d known mismatches %v, %d unexpected; %d did not replay before the run either; %d with the original in another file (not checkable); other headers that differ: %v; loads %v",
		m.mode, m.checked, m.same, m.known, m.reasons, m.unexpected, m.notReplayableBefore, m.otherFile, m.otherHeaders, m.loadTimes)
}

// knownReasons says why a revisit cannot replay as its response did while
// the toolchain has no replay-equivalence policy, from the stored records:
// its original is no WARC record ReplayWeb.page reads, or the two heads
// differ in status, Content-Type or Content-Encoding.
func knownReasons(c *collection, r *revisit, orig *replaytest.Response) []string {
	if r.original != nil && (orig.Err != "" || orig.Status != r.origRec.head.status) {
		return []string{"original does not replay in ReplayWeb.page"}
	}
	if r.original == nil {
		f := r.originalFile(c)
		if f != "" && !isWARC(f) {
			return []string{"original is an ARC record"}
		}
		return nil
	}
	var out []string
	for _, d := range replayDiff(r.rec.head, r.origRec.head) {
		kind, _, _ := strings.Cut(d, " ")
		out = append(out, kind+" differs")
	}
	return out
}

// compare checks each revisit's capture as served before and after the
// run, and reports every mismatch precisely. cb is the collection before
// the run, where the originals are fetched too.
func compare(t *testing.T, c *collection, m *modeReport, revs []*revisit, cb *replaytest.Collection, before, after []replaytest.Response) {
	t.Helper()
	origs := fetchOriginals(t, cb, revs)
	for i, r := range revs {
		m.checked++
		b, a := &before[i], &after[i]
		if b.Err != "" || b.Status == 404 && r.was.head.status != 404 {
			m.notReplayableBefore++
			t.Logf("%s %s: did not replay before the run either (status %d %s)", m.mode, r, b.Status, b.Err)
			continue
		}
		diff := replaytest.Diff(b, a)
		for _, h := range otherHeaderDiffs(b, a) {
			m.otherHeaders[h]++
		}
		if len(diff) == 0 {
			m.same++
			continue
		}
		known := knownReasons(c, r, &origs[i])
		msg := fmt.Sprintf("%s %s (ts %s): %s", m.mode, r, r.ts(), strings.Join(diff, "; "))
		if r.original != nil {
			msg += fmt.Sprintf(" [original %s %s in %s; stored heads: revisit %d %q %q, original %d %q %q]",
				r.original.URL, r.original.Timestamp, r.original.Filename,
				r.rec.head.status, r.rec.head.contentType, r.rec.head.contentEnc,
				r.origRec.head.status, r.origRec.head.contentType, r.origRec.head.contentEnc)
		}
		if len(known) == 0 {
			m.unexpected++
			t.Errorf("UNEXPECTED %s", msg)
			continue
		}
		m.known++
		for _, k := range known {
			m.reasons[k]++
		}
		if strict() {
			t.Errorf("%s", msg)
		} else {
			t.Logf("KNOWN (%s) %s", strings.Join(known, ", "), msg)
		}
	}
}

// otherHeaderDiffs names the headers besides those compared that the
// answers do not share (Content-Location, Content-Length, ...).
func otherHeaderDiffs(b, a *replaytest.Response) []string {
	var out []string
	seen := map[string]bool{}
	for _, h := range []map[string][]string{b.Header, a.Header} {
		for k := range h {
			if seen[k] || k == "Content-Type" || k == "Content-Encoding" || k == "Content-Security-Policy" {
				continue
			}
			seen[k] = true
			if !slices.Equal(b.Header.Values(k), a.Header.Values(k)) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// fetchOriginals fetches the original of each revisit from the
// collection (a zero Response for a revisit without an indexed original).
func fetchOriginals(t *testing.T, cb *replaytest.Collection, revs []*revisit) []replaytest.Response {
	t.Helper()
	var caps []replaytest.Capture
	var at []int
	for i, r := range revs {
		if r.original != nil {
			caps = append(caps, replaytest.Capture{Timestamp: r.original.Timestamp, URL: r.original.URL})
			at = append(at, i)
		}
	}
	out := make([]replaytest.Response, len(revs))
	for j, resp := range fetch(t, cb, caps) {
		out[at[j]] = resp
	}
	return out
}

func captures(revs []*revisit) []replaytest.Capture {
	out := make([]replaytest.Capture, len(revs))
	for i, r := range revs {
		out[i] = replaytest.Capture{Timestamp: r.ts(), URL: r.rec.uri}
	}
	return out
}

// loadPair loads the sources before and after in the browser.
func loadPair(t *testing.T, b *replaytest.Browser, m *modeReport, before, after string) (*replaytest.Collection, *replaytest.Collection) {
	t.Helper()
	cb, err := b.Load(b.SourceURL(before))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := b.Load(b.SourceURL(after))
	if err != nil {
		t.Fatal(err)
	}
	m.loadTimes = append(m.loadTimes, cb.LoadTime.Round(time.Millisecond), ca.LoadTime.Round(time.Millisecond))
	return cb, ca
}

func fetch(t *testing.T, c *replaytest.Collection, caps []replaytest.Capture) []replaytest.Response {
	t.Helper()
	rs, err := c.Fetch(caps)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range rs {
		if r.Time > 5*time.Second {
			t.Logf("slow: %s %s took %v (status %d) from %s", caps[i].Timestamp, caps[i].URL, r.Time.Round(time.Millisecond), r.Status, c.Source)
		}
	}
	return rs
}

// dateReport is what ReplayWeb.page shows as the capture date of the
// HTML revisits, measured two ways: where a frame's request for the page
// (mp_) ends after redirects, for every HTML revisit; and the timestamp in
// the replay view's URL (the date the user sees), for a few.
type dateReport struct {
	mode                         string
	requests, toOriginal, toOwn  int
	views, viewOriginal, viewOwn int
}

func (d dateReport) String() string {
	return fmt.Sprintf("%s: of %d HTML revisits requested as a page, %d end at the original's timestamp, %d at their own; of %d shown in the replay view, %d show the original's date, %d their own",
		d.mode, d.requests, d.toOriginal, d.toOwn, d.views, d.viewOriginal, d.viewOwn)
}

var replayTS = regexp.MustCompile(`/(\d{14})mp_/`)

func measureDates(t *testing.T, mode string, b *replaytest.Browser, ca *replaytest.Collection, revs []*revisit, views int) dateReport {
	t.Helper()
	d := dateReport{mode: mode}
	var html []*revisit
	for _, r := range revs {
		// A revisit dated as its original cannot tell the two apart.
		if strings.HasPrefix(r.rec.head.contentType, "text/html") && r.original != nil && r.original.Timestamp != r.ts() {
			html = append(html, r)
		}
	}
	if len(html) == 0 {
		return d
	}
	rs, err := ca.FetchMod(captures(html), "mp_")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range html {
		m := replayTS.FindStringSubmatch(rs[i].URL)
		if m == nil || rs[i].Status != 200 {
			continue
		}
		d.requests++
		switch m[1] {
		case r.original.Timestamp:
			d.toOriginal++
		case r.ts():
			d.toOwn++
		}
	}
	for _, r := range html[:min(views, len(html))] {
		v, err := b.Open(ca.ViewPath(replaytest.Capture{Timestamp: r.ts(), URL: r.rec.uri}))
		if err != nil {
			t.Fatal(err)
		}
		_, hash, _ := strings.Cut(v.Href, "#")
		q, _ := url.ParseQuery(hash)
		d.views++
		switch q.Get("ts") {
		case r.original.Timestamp:
			d.viewOriginal++
		case r.ts():
			d.viewOwn++
		}
		t.Logf("%s: the replay view of %s (original %s %s) ends at %s", mode, r, r.original.URL, r.original.Timestamp, v.Href)
	}
	return d
}

func TestReplay(t *testing.T) {
	cli := replaytest.WarcioCLI(t)
	for _, cc := range collections {
		t.Run(cc.name, func(t *testing.T) {
			started := time.Now()
			c := prepare(t, cc.name, cc.fill)
			beforeIdx, beforeArch, _ := c.index(t, cli, "before")
			afterIdx, afterArch, unreadable := c.index(t, cli, "after")
			if len(unreadable) > 0 {
				t.Logf("left out, warcio.js cannot read them: %v", unreadable)
			}
			var pages []replaytest.Page
			for _, l := range beforeIdx {
				if strings.HasPrefix(l.Mime, "text/html") && l.Status == "200" && len(pages) < 20 {
					ts, _ := time.Parse("20060102150405", l.Timestamp)
					pages = append(pages, replaytest.Page{URL: l.URL, TS: ts.Format(time.RFC3339)})
				}
			}
			for _, w := range []struct {
				name string
				arch []replaytest.Archive
				idx  []cdxj.Line
			}{{"before.wacz", beforeArch, beforeIdx}, {"after.wacz", afterArch, afterIdx}} {
				if err := replaytest.WriteWACZ(filepath.Join(c.root, w.name), w.arch, w.idx, pages); err != nil {
					t.Fatal(err)
				}
			}
			revs := c.revisits(t, afterIdx)
			phases := []string{fmt.Sprintf("deduplicated and indexed %v", time.Since(started).Round(time.Millisecond))}
			mark := time.Now()
			phase := func(what string) {
				phases = append(phases, fmt.Sprintf("%s %v", what, time.Since(mark).Round(time.Millisecond)))
				mark = time.Now()
			}
			b := replaytest.Start(t, c.root)
			phase("browser started")

			// WACZ: the whole collection as one source, so every original
			// is there whatever file holds it.
			wacz := newModeReport("WACZ")
			wb, wa := loadPair(t, b, wacz, "before.wacz", "after.wacz")
			caps := captures(revs)
			compare(t, c, wacz, revs, wb, fetch(t, wb, caps), fetch(t, wa, caps))
			phase("WACZ")

			// Each WARC file with revisits as its own source: only the
			// revisits whose original is in the same file can replay.
			warc := newModeReport("WARC")
			byFile := map[string][]*revisit{}
			for _, r := range revs {
				if r.original != nil && r.original.Filename == archiveName(r.file) {
					byFile[r.file] = append(byFile[r.file], r)
				} else {
					warc.otherFile++
				}
			}
			var files []string
			for f := range byFile {
				files = append(files, f)
			}
			slices.Sort(files)
			for _, f := range files {
				cb, ca := loadPair(t, b, warc, "before/"+f, "after/"+f)
				caps := captures(byFile[f])
				compare(t, c, warc, byFile[f], cb, fetch(t, cb, caps), fetch(t, ca, caps))
			}

			phase("WARC files")
			reports := []fmt.Stringer{wacz, warc}
			dates := []fmt.Stringer{measureDates(t, "WACZ", b, wa, revs, 0)}

			// The whole collection as one WARC source, where its files are
			// all .warc.gz (gzip members concatenate).
			if oneFile(c) {
				one := newModeReport("WARC, all files as one")
				ob, oa := loadPair(t, b, one, "before-all.warc.gz", "after-all.warc.gz")
				compare(t, c, one, revs, ob, fetch(t, ob, caps), fetch(t, oa, caps))
				reports = append(reports, one)
				dates = append(dates, measureDates(t, "WARC", b, oa, revs, 0))
				if cc.name == "site" {
					measureSubresources(t, "WARC", b, oa, revs)
				}
			}
			if cc.name == "site" {
				measureSubresources(t, "WACZ", b, wa, revs)
			}
			phase("one-file WARC and dates")
			t.Logf("%s: %d revisits written\n%v\n%v\nrequests refused by the proxy (would have left the machine): %d\ntime %v: %s",
				cc.name, len(c.rewrites), reports, dates, len(b.Refused()), time.Since(started).Round(time.Millisecond), strings.Join(phases, ", "))
			if wacz.checked != len(revs) || wacz.checked == wacz.notReplayableBefore {
				t.Errorf("WACZ: %d of %d revisits checked, %d did not replay before", wacz.checked, len(revs), wacz.notReplayableBefore)
			}
		})
	}
}

// measureSubresources replays the home page of the two-date site at the
// second date, where it is a revisit of the first date's, in ReplayWeb.page's
// replay view, and reports which date's style sheet it loads with it: the
// site's style sheet changed between the dates.
func measureSubresources(t *testing.T, mode string, b *replaytest.Browser, ca *replaytest.Collection, revs []*revisit) {
	t.Helper()
	content := makeSiteContent()
	style := map[string]string{sha256hex(content.style1): "first date's", sha256hex(content.style2): "second date's"}
	for _, r := range revs {
		if r.rec.uri != siteWWW+"/" {
			continue
		}
		v, err := b.Open(ca.ViewPath(replaytest.Capture{Timestamp: r.ts(), URL: r.rec.uri}))
		if err != nil {
			t.Fatal(err)
		}
		_, hash, _ := strings.Cut(v.Href, "#")
		q, _ := url.ParseQuery(hash)
		t.Logf("%s: the replay view of the home page at %s (a revisit of %s) shows the date %s", mode, r.ts(), r.original.Timestamp, q.Get("ts"))
		seen := false
		for _, l := range v.Loaded {
			if strings.HasSuffix(l.URL, "/style.css") {
				seen = true
				t.Logf("%s: the home page at %s (a revisit of %s) loads %s (status %d): the %s style sheet",
					mode, r.ts(), r.original.Timestamp, l.URL, l.Status, cmpOr(style[l.SHA256], "unknown"))
			}
		}
		if !seen {
			t.Errorf("%s: the home page at %s loaded no style sheet; the view ended at %s and loaded:", mode, r.ts(), v.Href)
			for _, l := range v.Loaded {
				t.Logf("  %d %s", l.Status, l.URL)
			}
		}
	}
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// oneFile tells whether every WARC file of the collection is .warc.gz, and
// if so writes before-all.warc.gz and after-all.warc.gz beside before/ and
// after/: the files concatenated, a collection in one source.
func oneFile(c *collection) bool {
	var gz []string
	for _, f := range c.files {
		if !isWARC(f) {
			continue
		}
		if !strings.HasSuffix(f, ".warc.gz") {
			return false
		}
		gz = append(gz, f)
	}
	for _, side := range []string{"before", "after"} {
		var all []byte
		for _, f := range gz {
			b, err := os.ReadFile(filepath.Join(c.root, side, filepath.FromSlash(f)))
			if err != nil {
				return false
			}
			all = append(all, b...)
		}
		if os.WriteFile(filepath.Join(c.root, side+"-all.warc.gz"), all, 0o644) != nil {
			return false
		}
	}
	return true
}

// replayDiff lists how two heads would replay differently: status,
// Content-Type, Content-Encoding. It is the replay-equivalence a revisit
// must have with its original for a reader that serves the original's
// head (ReplayWeb.page) to serve what was captured.
func replayDiff(own, orig httpHead) []string {
	var d []string
	if own.status != orig.status {
		d = append(d, fmt.Sprintf("status %d, original %d", own.status, orig.status))
	}
	if !strings.EqualFold(own.contentType, orig.contentType) {
		d = append(d, fmt.Sprintf("Content-Type %q, original %q", own.contentType, orig.contentType))
	}
	if !strings.EqualFold(own.contentEnc, orig.contentEnc) {
		d = append(d, fmt.Sprintf("Content-Encoding %q, original %q", own.contentEnc, orig.contentEnc))
	}
	return d
}

func sha256hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
