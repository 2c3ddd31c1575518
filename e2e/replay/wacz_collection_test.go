//go:build browser

package replay

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/cdxj"
	"warcdedup/internal/replaytest"
	"warcdedup/internal/wacztest"
	"warcdedup/record"
	"warcdedup/rewritelog"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
	"warcdedup/wacz"
)

// TestReplayWACZCollection deduplicates a directory of WACZ packages of
// several crawls with the real `warcdedup run` (40% duplicates, crawls a
// day apart, so that later packages' revisits point into earlier
// packages), and loads the packages before and after into ReplayWeb.page
// as one multi-WACZ collection (a JSON of "resources", as Browsertrix
// exports a collection, which wabac.js loads as a "multiwacz" source).
// For every record that became a revisit, status, Content-Type,
// Content-Encoding and body bytes must be what they were, including the
// revisits whose original is in another package (those that carry
// WARC-Refers-To-Container). Every package written is checked by
// wacztest (hashes, digest file, stored members, the index against
// warcio.js, ZipNum blocks, requires entries).
//
// It then loads one deduplicated package alone, without the packages its
// relation.requires names, and asserts what a user sees of its revisits
// whose original is in a package not loaded (the README's WACZ section
// says it), and that its revisits of originals in itself still replay.
func TestReplayWACZCollection(t *testing.T) {
	root := t.TempDir()
	genDir := filepath.Join(root, "gen")
	res, err := gen.Write(genDir, gen.Config{Files: 6, Records: 600, DupRate: 0.4, Seed: 31, MeanPayload: 4000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10}, NonCandidates: true, Sequential: true, Prefix: "bt"})
	if err != nil {
		t.Fatal(err)
	}
	coll, err := waczgen.Write(genDir, res, waczgen.Config{Packages: 3, Crawls: 3, Index: "mixed", LinesPerBlock: 40})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cp := range coll.Packages {
		names = append(names, cp.Name)
		for _, side := range []string{"before", "after"} {
			if err := copyFile(filepath.Join(genDir, cp.Name), filepath.Join(root, side, cp.Name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	work := filepath.Join(root, "work")
	runWarcdedup(t, "run", "--work-dir", work, filepath.Join(root, "after"))
	revs := waczRevisits(t, filepath.Join(root, "before"), filepath.Join(root, "after"), filepath.Join(work, "rewrite.log"))
	if len(revs) == 0 {
		t.Fatal("warcdedup run wrote no revisit")
	}

	// Every package written, checked by a reader other than package wacz.
	if cli := replaytest.WarcioCLI(t); cli != "" {
		r, err := wacztest.CheckDir(cli, filepath.Join(root, "after"), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Err(); err != nil {
			t.Errorf("the packages warcdedup run wrote: %v", err)
		}
		t.Logf("checked: %s", r)
	}

	for _, side := range []string{"before", "after"} {
		writeMultiWACZ(t, filepath.Join(root, side), names, coll)
	}
	b := replaytest.Start(t, root)
	rp := replayBeforeAfter(t, b, revs)
	if rp.cross == 0 {
		t.Error("no revisit has its original in another package: the collection proves nothing across packages")
	}
	t.Logf("multi-WACZ collection of %d packages: %d revisits compared (%d with the original in another package), %d differ; loaded in %v before, %v after",
		len(names), len(revs), rp.cross, rp.bad, rp.loadBefore, rp.loadAfter)

	alone(t, b, root, revs, rp.after)
	if refused := b.Refused(); len(refused) > 0 {
		t.Logf("asked of the refusing proxy: %v", refused)
	}
}

// alone loads the deduplicated package with the most revisits across
// packages by itself and fetches its revisits. A revisit whose original
// is in the same package must replay as in the whole collection
// (inAll: the answers there). For one whose original is in a package not
// loaded, wabac.js finds no record to take the payload from: ReplayWeb.page
// 2.5.3 answers the raw capture (id_) and the replay frame's request (mp_)
// with 404 and a JSON error, {"error": "not_found", "URL", "TS", "reason":
// "missingOriginalForDupe"}, never the revisit's status or body. The assertion is of that observed behaviour,
// so that a change in ReplayWeb.page (or in what warcdedup writes) is
// noticed and the README's WACZ section brought up to date.
func alone(t *testing.T, b *replaytest.Browser, root string, revs []waczRevisit, inAll []replaytest.Response) {
	cross := map[string]int{}
	for _, r := range revs {
		if r.container != "" {
			cross[r.pkg]++
		}
	}
	pkg := ""
	for p, n := range cross {
		if pkg == "" || n > cross[pkg] || n == cross[pkg] && p < pkg {
			pkg = p
		}
	}
	if pkg == "" {
		t.Fatal("no package has a revisit across packages")
	}
	c, err := b.Load(b.SourceURL("after/" + pkg))
	if err != nil {
		t.Fatal(err)
	}
	var caps []replaytest.Capture
	var which []int
	for i, r := range revs {
		if r.pkg == pkg {
			caps = append(caps, r.capture)
			which = append(which, i)
		}
	}
	got, err := c.Fetch(caps)
	if err != nil {
		t.Fatal(err)
	}
	// What the replay frame shows (mp_) of the same captures.
	shown, err := c.FetchMod(caps, "mp_")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	samples := map[string]string{}
	same, missing := 0, 0
	for k, i := range which {
		r, g := revs[i], got[k]
		if r.container == "" {
			if d := replaytest.Diff(&inAll[i], &g); len(d) > 0 {
				t.Errorf("%s alone: %s %s, whose original is in the same package, replays otherwise: %s", pkg, r.capture.Timestamp, r.capture.URL, strings.Join(d, "; "))
			} else {
				same++
			}
			continue
		}
		missing++
		for _, a := range []struct {
			mod  string
			resp *replaytest.Response
		}{{"id_", &g}, {"mp_", &shown[k]}} {
			what := fmt.Sprintf("%s: status %d, %s", a.mod, a.resp.Status, a.resp.Header.Get("Content-Type"))
			if a.resp.Err != "" {
				what = a.mod + ": fetch error " + a.resp.Err
			}
			seen[what]++
			if _, ok := samples[what]; !ok {
				samples[what] = fmt.Sprintf("%.300q", a.resp.Body)
			}
		}
		// Raw (id_) or as the replay frame asks (mp_): 404 with a JSON
		// error whose reason is missingOriginalForDupe.
		for _, m := range []*replaytest.Response{&g, &shown[k]} {
			if m.Status != 404 || m.Err != "" || !strings.HasPrefix(m.Header.Get("Content-Type"), "application/json") || !strings.Contains(string(m.Body), `"missingOriginalForDupe"`) {
				t.Errorf("%s alone: %s %s (original in %s, not loaded): status %d, %s, %.200q, error %q; ReplayWeb.page %s answered 404 application/json {\"error\":\"not_found\", ..., \"reason\":\"missingOriginalForDupe\"} when this test was written: update the README's WACZ section",
					pkg, r.capture.Timestamp, r.capture.URL, r.container, m.Status, m.Header.Get("Content-Type"), m.Body, m.Err, replaytest.RWPVersion)
			}
		}
	}
	if missing == 0 {
		t.Fatalf("%s: no revisit of an original in another package", pkg)
	}
	// And in ReplayWeb.page's replay view, as a user opens the capture:
	// what the frame got for it.
	for k, i := range which {
		if revs[i].container == "" {
			continue
		}
		v, err := b.Open(c.ViewPath(caps[k]))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range v.Loaded {
			if strings.Contains(l.URL, "mp_/") {
				seen[fmt.Sprintf("replay view: frame status %d", l.Status)]++
				if l.Status != 404 {
					t.Errorf("%s alone: the replay view of %s %s (original not loaded) got status %d for its frame (%s), 404 when this test was written: update the README's WACZ section", pkg, caps[k].Timestamp, caps[k].URL, l.Status, l.URL)
				}
			}
		}
		break
	}
	t.Logf("%s loaded alone (ReplayWeb.page %s): %d revisits of originals in the package replay as in the collection; %d revisits of originals in packages not loaded answer: %v",
		pkg, replaytest.RWPVersion, same, missing, seen)
	for what, body := range samples {
		t.Logf("  %s, for example: %s", what, body)
	}
}

// replayed is what replayBeforeAfter saw.
type replayed struct {
	after      []replaytest.Response // each revisit's capture replayed from after/
	cross, bad int                   // revisits with the original in another package; replaying otherwise
	loadBefore time.Duration
	loadAfter  time.Duration
}

// replayBeforeAfter loads before/collection.json and after/collection.json
// (under the browser's root) as two multi-WACZ collections, replays each
// revisit's capture in both and reports as an error every one whose
// status before the run is not its record's, or that replays otherwise
// after it.
func replayBeforeAfter(t *testing.T, b *replaytest.Browser, revs []waczRevisit) replayed {
	t.Helper()
	cb, err := b.Load(b.SourceURL("before/collection.json"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := b.Load(b.SourceURL("after/collection.json"))
	if err != nil {
		t.Fatal(err)
	}
	caps := make([]replaytest.Capture, len(revs))
	for i, r := range revs {
		caps[i] = r.capture
	}
	rb, err := cb.Fetch(caps)
	if err != nil {
		t.Fatal(err)
	}
	ra, err := ca.Fetch(caps)
	if err != nil {
		t.Fatal(err)
	}
	rp := replayed{after: ra, loadBefore: cb.LoadTime, loadAfter: ca.LoadTime}
	for i, r := range revs {
		if r.container != "" {
			rp.cross++
		}
		if rb[i].Status != r.status {
			t.Errorf("%s: %s %s replayed with status %d before the run, its record has %d", r.file, caps[i].Timestamp, caps[i].URL, rb[i].Status, r.status)
			continue
		}
		if d := replaytest.Diff(&rb[i], &ra[i]); len(d) > 0 {
			rp.bad++
			t.Errorf("%s: %s %s (original in %s) replays otherwise: %s", r.file, caps[i].Timestamp, caps[i].URL, r.originIn(), strings.Join(d, "; "))
		}
	}
	return rp
}

// waczRevisit is a record `warcdedup run` made a revisit, with how it
// replayed before.
type waczRevisit struct {
	pkg, file string // package and WARC member, as the rewrite log names them
	capture   replaytest.Capture
	status    int    // of the record it replaced
	container string // the revisit's WARC-Refers-To-Container: "" when the original is in its own package
}

func (r *waczRevisit) originIn() string {
	if r.container == "" {
		return "its own package"
	}
	return r.container
}

// waczRevisits reads the rewrite log of a run over the packages in after
// and returns every record it made a revisit: the capture (URL, date) and
// status of the record it replaced, read from the package in before, and
// the Refers-To-Container of the revisit as written.
func waczRevisits(t *testing.T, before, after, log string) []waczRevisit {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := rewritelog.NewReader(f, log)
	var out []waczRevisit
	for {
		e, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pkg, member, ok := wacz.SplitName(e.File)
		if !ok {
			t.Fatalf("%s line %d: %s names no WACZ member", log, e.Line, e.File)
		}
		was := memberRecord(t, filepath.Join(before, pkg), member, e.OldOffset)
		now := memberRecord(t, filepath.Join(after, pkg), member, e.NewOffset)
		if now.Type != "revisit" || now.TargetURI() != was.TargetURI() || now.Date != was.Date {
			t.Fatalf("%s: %s %s %s at the new offset replaces %s %s %s", e.File, now.Type, now.TargetURI(), now.Date, was.Type, was.TargetURI(), was.Date)
		}
		r := waczRevisit{pkg: pkg, file: e.File, status: was.status,
			capture:   replaytest.Capture{Timestamp: cdxj.Timestamp(was.Date), URL: was.TargetURI()},
			container: now.Header.Get(wacz.RefersToContainer)}
		if r.container != "" && r.container == wacz.ContainerURI(pkg) {
			t.Errorf("%s: WARC-Refers-To-Container names its own package", e.File)
		}
		out = append(out, r)
	}
	return out
}

// memberRecord is the record at offset of a stored WARC member of a
// package, read with archive/zip, with its HTTP status.
type readRecordT struct {
	*record.Record
	status int
}

func memberRecord(t *testing.T, pkg, member string, offset int64) readRecordT {
	t.Helper()
	zr, err := zip.OpenReader(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	var m *zip.File
	for _, f := range zr.File {
		if f.Name == member {
			m = f
		}
	}
	if m == nil || m.Method != zip.Store {
		t.Fatalf("%s: no stored member %s", pkg, member)
	}
	start, err := m.DataOffset()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pkg)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sec := io.NewSectionReader(f, start+offset, int64(m.UncompressedSize64)-offset)
	rr, err := record.NewReader(sec, pkg+"#"+member)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := rr.Next()
	if err != nil {
		t.Fatalf("%s#%s offset %d: %v", pkg, member, offset, err)
	}
	out := readRecordT{Record: rec}
	if h, err := rr.ReadHTTPHead(); err == nil {
		out.status = parseHead(h.Raw).status
	}
	return out
}

// writeMultiWACZ writes dir/collection.json, the packages as one
// multi-WACZ collection as Browsertrix exports one (replay.json):
// "resources" with each package's name (its file name, by which
// relation.requires and WARC-Refers-To-Container name it), path
// (relative to the JSON), SHA-256, size and crawl id.
func writeMultiWACZ(t *testing.T, dir string, names []string, coll *waczgen.Collection) {
	t.Helper()
	type resource struct {
		Name    string `json:"name"`
		Path    string `json:"path"`
		Hash    string `json:"hash"`
		Size    int64  `json:"size"`
		CrawlID string `json:"crawlId"`
	}
	var doc struct {
		Resources []resource `json:"resources"`
	}
	for i, n := range names {
		sum, size := fileSum(t, filepath.Join(dir, n))
		doc.Resources = append(doc.Resources, resource{n, n, sum, size, coll.Packages[i].CrawlID})
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "collection.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runWarcdedup runs the warcdedup TestMain built with args and fails the
// test on a non-zero exit.
func runWarcdedup(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("warcdedup %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	t.Logf("warcdedup %s:\n%s", args[0], lastLines(stderr.String(), 6))
}

// fileSum is the hex SHA-256 and size of a file.
func fileSum(t *testing.T, name string) (string, int64) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}
