//go:build browser

package report

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/replaytest"
)

// These tests open report.html in Debian's headless Chromium (make
// test-browser; scripts/replay-setup.sh installs it), through the replay
// harness with its refusing proxy. They write report.png (a laptop's
// screen), report-print.png (laid out for print) and report.pdf (A4) to
// $WARCDEDUP_ARTEFACTS, or to a temporary directory they name.

// artefacts is where the screenshots go.
func artefacts(t *testing.T) string {
	if dir := os.Getenv("WARCDEDUP_ARTEFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// TestReportBrowser renders the sample assessment and checks, on the
// screen of a laptop and laid out for print, that the page stands alone
// (no request but the file, none to the proxy), logs no error, draws
// every chart with text inside it and no two labels over each other,
// does not scroll sideways, and shows the headline figures.
func TestReportBrowser(t *testing.T) {
	r := sampleReport()
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := replaytest.StartPages(t)
	out := artefacts(t)

	for _, view := range []struct {
		name string
		opts replaytest.FileOptions
	}{
		{"screen", replaytest.FileOptions{Width: 1366, Height: 768, Screenshot: filepath.Join(out, "report.png")}},
		// An A4 page's printable width at 96 dpi, less the margins.
		{"print", replaytest.FileOptions{Width: 703, Height: 1000, Media: "print",
			Screenshot: filepath.Join(out, "report-print.png"), PDF: filepath.Join(out, "report.pdf")}},
	} {
		t.Run(view.name, func(t *testing.T) {
			v, err := b.OpenFile(page, view.opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s, %s", view.name, view.opts.Screenshot, view.opts.PDF)
			checkStandsAlone(t, v, page)
			if refused := notChromiums(b.Refused()); len(refused) > 0 {
				t.Errorf("Chromium asked the proxy for %q", refused)
			}
			if v.Width > v.ClientWidth || v.ClientWidth < float64(view.opts.Width)-1 {
				t.Errorf("the page is %.0f px wide, laid out in %.0f px of a %d px viewport: it scrolls sideways; too wide:\n%s",
					v.Width, v.ClientWidth, view.opts.Width, strings.Join(v.Wide, "\n"))
			}
			checkCharts(t, v, []string{"chart-mime", "chart-host", "chart-month", "chart-size", "chart-url"})
			for _, want := range headline(r) {
				if !strings.Contains(v.Text, want) {
					t.Errorf("the page does not show %q", want)
				}
			}
		})
	}
}

// TestReportBrowserEmpty: a report with nothing in it stands alone too,
// and says there is nothing to chart.
func TestReportBrowserEmpty(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	var buf bytes.Buffer
	if err := WriteHTML(&buf, &Report{Mode: "run"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	b := replaytest.StartPages(t)
	v, err := b.OpenFile(page, replaytest.FileOptions{Width: 1366, Height: 768, Screenshot: filepath.Join(artefacts(t), "report-empty.png")})
	if err != nil {
		t.Fatal(err)
	}
	checkStandsAlone(t, v, page)
	if len(v.SVGs) != 0 {
		t.Errorf("%d charts drawn of nothing", len(v.SVGs))
	}
	for _, want := range []string{"None: no MIME types were counted.", "None: no duplicates.", "Exit status 0."} {
		if !strings.Contains(v.Text, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// TestReportBrowserSeesOutsideRequests proves the checks can fail: a page
// that loads an image from elsewhere and logs an error is caught.
func TestReportBrowserSeesOutsideRequests(t *testing.T) {
	page := filepath.Join(t.TempDir(), "bad.html")
	html := `<!DOCTYPE html><html><head><title>bad</title></head><body>` +
		`<img src="http://images.example.com/logo.png" alt="">` +
		`<script>console.error("broken")</script></body></html>`
	if err := os.WriteFile(page, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	b := replaytest.StartPages(t)
	v, err := b.OpenFile(page, replaytest.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Requests) < 2 || !strings.Contains(v.Requests[1].URL, "images.example.com") {
		t.Errorf("requests %+v: the image is missing", v.Requests)
	}
	var errs int
	for _, m := range v.Console {
		if m.Type == "error" {
			errs++
		}
	}
	if errs == 0 {
		t.Errorf("console %+v: no error seen", v.Console)
	}
	if len(notChromiums(b.Refused())) == 0 {
		t.Errorf("the proxy saw only %q", b.Refused())
	}
}

// notChromiums leaves out of what the proxy refused Chromium's own calls
// to Google's services (time, component updates, accounts), which it
// makes whatever the page, despite its flags: what remains, a page asked
// for.
func notChromiums(refused []string) []string {
	var out []string
	for _, r := range refused {
		_, target, _ := strings.Cut(r, " ")
		if u, err := url.Parse(target); err == nil && u.Host != "" {
			target = u.Host
		}
		host, _, _ := strings.Cut(target, ":")
		if host == "google.com" || strings.HasSuffix(host, ".google.com") || strings.HasSuffix(host, ".googleapis.com") || strings.HasSuffix(host, ".gvt1.com") {
			continue
		}
		out = append(out, r)
	}
	return out
}

// checkStandsAlone fails the test unless the page requested only itself
// and logged no error or warning.
func checkStandsAlone(t *testing.T, v *replaytest.FileView, page string) {
	t.Helper()
	if len(v.Requests) != 1 || !strings.HasSuffix(v.Requests[0].URL, filepath.ToSlash(page)) {
		t.Errorf("the page made %d requests, want only itself: %+v", len(v.Requests), v.Requests)
	}
	for _, m := range v.Console {
		if m.Type == "error" || m.Type == "warn" || m.Type == "warning" {
			t.Errorf("console %s: %s", m.Type, m.Text)
		}
	}
	for _, e := range v.Errors {
		t.Errorf("uncaught: %s", e)
	}
}

// checkCharts fails the test unless each chart is drawn with a size, its
// texts inside it, at 11 px or more, and none of them over another.
func checkCharts(t *testing.T, v *replaytest.FileView, ids []string) {
	t.Helper()
	byID := map[string]replaytest.SVGBox{}
	for _, s := range v.SVGs {
		byID[s.ID] = s
	}
	for _, id := range ids {
		s, ok := byID[id]
		if !ok {
			t.Errorf("no svg #%s", id)
			continue
		}
		if s.Width < 300 || s.Height < 40 {
			t.Errorf("svg #%s is %.0f x %.0f px", id, s.Width, s.Height)
		}
		if len(s.Texts) == 0 {
			t.Errorf("svg #%s has no text", id)
		}
		const slack = 0.5
		for i, a := range s.Texts {
			if a.W == 0 {
				continue
			}
			if a.FontPx < 11 {
				t.Errorf("svg #%s: %q drawn at %.1f px, below 11", id, a.Text, a.FontPx)
			}
			if a.X < -slack || a.Y < -slack || a.X+a.W > s.Width+slack || a.Y+a.H > s.Height+slack {
				t.Errorf("svg #%s: %q at %.0f,%.0f %.0fx%.0f leaves the %.0fx%.0f chart", id, a.Text, a.X, a.Y, a.W, a.H, s.Width, s.Height)
			}
			for _, b := range s.Texts[i+1:] {
				// Glyph boxes include the line's leading: overlapping by a
				// pixel or two is not text over text.
				if b.W > 0 && a.X+a.W-1 > b.X && b.X+b.W-1 > a.X && a.Y+a.H-3 > b.Y && b.Y+b.H-3 > a.Y {
					t.Errorf("svg #%s: %q and %q overlap", id, a.Text, b.Text)
				}
			}
		}
	}
}

// headline is the text of the headline figures as the page must show it.
func headline(r *Report) []string {
	e := r.Estimate
	return []string{
		r.Title,
		count(r.Totals.Files),
		humanBytes(r.Totals.StoredBytes) + " stored",
		humanCount(e.Duplicates),
		humanBytes(e.BytesSaved),
		percent(e.BytesSaved, r.Totals.StoredBytes) + " of the " + humanBytes(r.Totals.StoredBytes) + " stored",
		"between " + humanBytes(e.BytesSavedLow) + " and " + humanBytes(e.BytesSavedHigh),
		"Exit status 1",
		r.ExitReason[0],
		r.Caveats[0],
	}
}
