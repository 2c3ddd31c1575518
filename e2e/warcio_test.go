package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"warcdedup/manifest"
	"warcdedup/scripts/gen"
)

// An independent reader must accept every file the pipeline rewrote: the
// tests here index the rewritten collections with warcio.js (webrecorder's
// JavaScript WARC library, npm package warcio, the reader behind
// ReplayWeb.page), through its CLI: warcio cdx-index.
//
// .ci/run installs it with npm into .cache/node; elsewhere
//
//	npm install --prefix .cache/node warcio@2.4.11
//
// WARCDEDUP_NODE_DIR names another prefix. Without it the tests skip,
// unless WARCDEDUP_REQUIRE_WARCIO=1 (CI), when they fail.

// warcioCLI returns the path of the warcio command, or skips the test.
func warcioCLI(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("WARCDEDUP_NODE_DIR")
	if dir == "" {
		dir = filepath.Join("..", ".cache", "node")
	}
	cli, err := filepath.Abs(filepath.Join(dir, "node_modules", ".bin", "warcio"))
	if err == nil {
		_, err = os.Stat(cli)
	}
	if err == nil {
		_, err = exec.LookPath("node")
	}
	if err != nil {
		msg := fmt.Sprintf("warcio.js not installed (npm install --prefix %s warcio): %v", dir, err)
		if os.Getenv("WARCDEDUP_REQUIRE_WARCIO") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return cli
}

// cdxFields are the fields asked of cdx-index: WARC header names are
// printed as they are.
var cdxFields = []string{"url", "mime", "digest", "offset", "length",
	"WARC-Type", "WARC-Date", "WARC-Refers-To-Target-URI", "WARC-Refers-To-Date"}

// cdxLine is one line of `warcio cdx-index --all --format json`: one per
// record. The digest is the record's WARC-Payload-Digest without its
// label ("sha1:"), as read; a record without one has none.
type cdxLine struct {
	URL     string `json:"url"`
	Mime    string `json:"mime"`
	Digest  string `json:"digest"`
	Offset  int64  `json:"offset"`
	Length  int64  `json:"length"`
	Type    string `json:"WARC-Type"`
	Date    string `json:"WARC-Date"`
	RefURI  string `json:"WARC-Refers-To-Target-URI"`
	RefDate string `json:"WARC-Refers-To-Date"`
}

func (l *cdxLine) isRevisit() bool { return l.Mime == "warc/revisit" }

// refURI is where a replay tool looks for a revisit's original: its
// Refers-To URI, or its own URI without one.
func (l *cdxLine) refURI() string {
	if l.RefURI != "" {
		return l.RefURI
	}
	return l.URL
}

// cdxIndex is the result of indexing one file.
type cdxIndex struct {
	lines  []cdxLine
	stderr string
	code   int
}

// runCDX runs warcio cdx-index on each file, a few at a time.
func runCDX(t *testing.T, cli string, files []string) []cdxIndex {
	t.Helper()
	out := make([]cdxIndex, len(files))
	sem := make(chan struct{}, max(2, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			// The file goes first: --fields takes every word after it.
			cmd := exec.CommandContext(ctx, cli, "cdx-index", f, "--all", "--format", "json", "--fields", strings.Join(cdxFields, ","))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			ix := cdxIndex{stderr: stderr.String()}
			if ee, ok := err.(*exec.ExitError); ok {
				ix.code = ee.ExitCode()
			} else if err != nil {
				ix.code, ix.stderr = -1, err.Error()
			}
			for _, s := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				if s == "" {
					continue
				}
				var l cdxLine
				if err := json.Unmarshal([]byte(s), &l); err != nil {
					ix.code, ix.stderr = -1, ix.stderr+fmt.Sprintf("unparsable output line %q: %v\n", s, err)
					continue
				}
				ix.lines = append(ix.lines, l)
			}
			out[i] = ix
		}()
	}
	wg.Wait()
	return out
}

// normDigest puts a digest in one spelling: without an algorithm label,
// upper case (base32 sha1 is case-insensitive).
func normDigest(d string) string {
	if i := strings.IndexByte(d, ':'); i >= 0 {
		d = d[i+1:]
	}
	return strings.ToUpper(strings.TrimSpace(d))
}

var digitsRE = regexp.MustCompile(`[0-9]+`)

// warnings returns cdx-index's stderr lines with numbers (offsets, which a
// rewrite moves) blotted out, sorted.
func warnings(stderr string) []string {
	var w []string
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if l != "" {
			w = append(w, digitsRE.ReplaceAllString(l, "N"))
		}
	}
	slices.Sort(w)
	return w
}

// isWARCName tells the files warcsum -r reads as WARC.
func isWARCName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".warc") || strings.HasSuffix(n, ".warc.gz")
}

func isARCName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".arc") || strings.HasSuffix(n, ".arc.gz")
}

// warcioReport is what checkWithWarcio counted, for the log.
type warcioReport struct {
	files, rewritten, unreadable int
	revisits                     int // revisit lines after, all files
	written                      int // of which warcrefs wrote
	arcOriginals                 int // written revisits whose original is an ARC record
	// wrongDigestOriginals are written revisits whose original carries a
	// WARC-Payload-Digest its payload does not have (jwat's
	// invalid-warcfile-digest-fields.warc): warcio.js, like pywb's
	// indexers, lists the header's value, so a lookup by the revisit's
	// (right) digest misses the original. The revisit cannot be right for
	// both; warcsum reports such headers.
	wrongDigestOriginals int
	unresolvedBefore     int // old revisits that resolved before the run neither
	escapedRefURIs       int // written revisits hit by refURIEscapeBug
}

// checkWithWarcio indexes the collection of a dedup run with warcio
// cdx-index, the rewritten files also as they were before (in orig), and
// checks that:
//
//   - cdx-index reads every rewritten file: exit 0, no warning the
//     original did not already get, one line per record (as many as the
//     original has);
//   - the lines differ from the original's only where warcrefs logged a
//     rewrite, and there a response became a revisit of the same URI and
//     date at the new offset and length;
//   - the number of revisit lines grew by the number of revisits written,
//     in each file;
//   - every revisit warcrefs wrote names, in WARC-Refers-To-Target-URI,
//     the URI of its manifest line (joined on file and offset), and the
//     collection has a non-revisit line with its digest at that URI and
//     its WARC-Refers-To-Date (pywb's and OpenWayback's lookups); or its
//     original is an ARC record, which warcio.js cannot read (the
//     after-manifest then lists it as a response with that digest); or,
//     counted and logged, the original is there but its own
//     WARC-Payload-Digest is wrong, or (while refURIEscapeBug) the
//     Refers-To URI is the manifest's %XX spelling of the original's;
//   - every revisit in the collection that had a non-revisit line with its
//     digest at its Refers-To URI before the run still has one.
func checkWithWarcio(t *testing.T, cli string, r *dedupRun, orig string) warcioReport {
	t.Helper()
	var rep warcioReport
	coll := filepath.Join(r.work, r.coll)
	var names []string
	err := filepath.WalkDir(coll, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && isWARCName(d.Name()) {
			rel, _ := filepath.Rel(coll, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	rep.files = len(names)
	var paths, rewritten []string
	for _, n := range names {
		paths = append(paths, filepath.Join(coll, filepath.FromSlash(n)))
		if len(r.byFile[n]) > 0 {
			rewritten = append(rewritten, n)
		}
	}
	for f := range r.byFile {
		if !slices.Contains(rewritten, f) {
			t.Errorf("%s: rewritten, but not a WARC file name", f)
		}
	}
	rep.rewritten = len(rewritten)
	var origPaths []string
	for _, n := range rewritten {
		origPaths = append(origPaths, filepath.Join(orig, filepath.FromSlash(n)))
	}
	after := runCDX(t, cli, append(paths, origPaths...))
	beforeOf := map[string]cdxIndex{} // rewritten files as they were
	for i, n := range rewritten {
		beforeOf[n] = after[len(names)+i]
	}
	after = after[:len(names)]
	afterOf := map[string]cdxIndex{}
	for i, n := range names {
		afterOf[n] = after[i]
	}

	// The rewritten files, record by record. Records are matched by their
	// order, as warcio.js does not always place them right: it gives the
	// record after a dns: response in NetarchiveSuite's WARC the offset of
	// the dns: record, and the length of both. So offsets and lengths are
	// compared as moves: a record moves by what the rewrites before it
	// saved, and a rewritten one shrinks by what the log says.
	dups := byOffset(r.readManifest(t, "by-file.manifest"))
	ours := map[string]map[int]rewriteEntry{} // file -> line index after -> its rewrite
	for _, n := range rewritten {
		a, b := afterOf[n], beforeOf[n]
		if a.code != 0 {
			t.Errorf("%s: warcio cdx-index exit %d after the rewrite (%d before)\n%s", n, a.code, b.code, a.stderr)
			continue
		}
		if b.code != 0 {
			t.Logf("%s: warcio cdx-index could not read the original (exit %d), reads the rewritten file", n, b.code)
			continue
		}
		if wa, wb := warnings(a.stderr), warnings(b.stderr); !slices.Equal(wa, wb) {
			t.Errorf("%s: warcio warns about the rewritten file:\n%s\nand about the original:\n%s", n, a.stderr, b.stderr)
		}
		if len(a.lines) != len(b.lines) {
			t.Errorf("%s: warcio reads %d records in the rewritten file, %d in the original", n, len(a.lines), len(b.lines))
			continue
		}
		entries := r.byFile[n]
		ours[n] = map[int]rewriteEntry{}
		var shift int64 // what the rewrites so far saved
		revisitsBefore, revisitsAfter := 0, 0
		for i := range a.lines {
			la, lb := a.lines[i], b.lines[i]
			if lb.isRevisit() {
				revisitsBefore++
			}
			if la.isRevisit() {
				revisitsAfter++
			}
			if lb.Type == "response" && la.Type == "revisit" {
				if len(entries) == 0 {
					t.Errorf("%s: record %d (%s %s) became a revisit, but the log has no more rewrites", n, i, lb.URL, lb.Date)
					continue
				}
				e := entries[0]
				entries = entries[1:]
				ours[n][i] = e
				d := dups[fileOffset{e.manifestFile, e.oldOff}]
				if la.Offset-lb.Offset != e.newOff-e.oldOff || la.Length-lb.Length != e.newLen-e.oldLen {
					t.Errorf("%s: record %d moves from %d+%d to %d+%d; the log says from %d+%d to %d+%d",
						n, i, lb.Offset, lb.Length, la.Offset, la.Length, e.oldOff, e.oldLen, e.newOff, e.newLen)
				}
				if !la.isRevisit() || la.URL != lb.URL || la.Date != lb.Date || manifest.EscapeField(lb.URL) != d.URI || manifest.EscapeField(lb.Date) != d.Date {
					t.Errorf("%s: record %d: was %+v, is %+v; want the revisit of the duplicate %s", n, i, lb, la, d.String())
				}
				shift = e.newOff + e.newLen - e.oldOff - e.oldLen
				continue
			}
			lb.Offset += shift
			if la != lb {
				t.Errorf("%s: record %d changed though warcrefs did not rewrite it:\nbefore %+v\nafter  %+v", n, i, b.lines[i], la)
			}
		}
		if len(entries) > 0 {
			t.Errorf("%s: warcio reads no revisit for the rewrites %+v", n, entries)
		}
		if got, want := revisitsAfter-revisitsBefore, len(r.byFile[n]); got != want {
			t.Errorf("%s: %d revisit lines more than before, %d revisits written", n, got, want)
		}
	}

	// The files not rewritten: warcio's trouble with them is none of ours.
	for _, n := range names {
		if a := afterOf[n]; a.code != 0 && len(r.byFile[n]) == 0 {
			rep.unreadable++
			t.Logf("%s (not rewritten): warcio cdx-index exit %d: %s", n, a.code, firstLine(a.stderr))
		}
	}

	// Lookups: non-revisit lines by URI, before and after.
	type capture struct{ digest, date string }
	lookup := func(of map[string]cdxIndex) map[string][]capture {
		m := map[string][]capture{}
		for _, ix := range of {
			for _, l := range ix.lines {
				if !l.isRevisit() && l.Digest != "" {
					m[l.URL] = append(m[l.URL], capture{normDigest(l.Digest), l.Date})
				}
			}
		}
		return m
	}
	was := map[string]cdxIndex{}
	for n, ix := range afterOf {
		was[n] = ix
		if b, ok := beforeOf[n]; ok {
			was[n] = b
		}
	}
	lookupAfter, lookupBefore := lookup(afterOf), lookup(was)
	resolves := func(m map[string][]capture, uri, digest, date string) bool {
		for _, c := range m[uri] {
			if (digest == "" || c.digest == normDigest(digest)) && (date == "" || c.date == date) {
				return true
			}
		}
		return false
	}

	// Our own view of the revisits written, joined on file and offset.
	afterLines := r.readManifest(t, "after.manifest")
	afterManifest := byOffset(afterLines)
	responses := map[string]string{} // "uri date digest" -> file
	for _, l := range afterLines {
		if !l.IsRevisit() {
			responses[l.URI+" "+l.Date+" "+l.Digest] = l.File
		}
	}

	// The URIs that the manifest spells otherwise (with %XX for
	// whitespace and control bytes), by their manifest spelling.
	unescaped := map[string]string{}
	for u := range lookupAfter {
		if e := manifest.EscapeField(u); e != u {
			unescaped[e] = u
		}
	}

	var broken []string
	for _, n := range names {
		for i, l := range afterOf[n].lines {
			if !l.isRevisit() {
				continue
			}
			rep.revisits++
			e, isOurs := ours[n][i]
			if !isOurs {
				// A revisit that was there before the run.
				if !resolves(lookupBefore, l.refURI(), l.Digest, "") {
					rep.unresolvedBefore++
				} else if !resolves(lookupAfter, l.refURI(), l.Digest, "") {
					broken = append(broken, manifest.EscapeFile(n)+" "+manifest.EscapeField(l.URL)+" "+manifest.EscapeField(l.Date))
				}
				continue
			}
			rep.written++
			m, ok := afterManifest[fileOffset{e.manifestFile, e.newOff}]
			d := dups[fileOffset{e.manifestFile, e.oldOff}]
			if !ok || !m.IsRevisit() {
				t.Errorf("%s %d: warcio reads a revisit that warcsum does not list", n, e.newOff)
				continue
			}
			if manifest.EscapeField(l.RefURI) != m.RefURI || manifest.EscapeField(l.RefDate) != m.RefDate {
				t.Errorf("%s %d: warcio reads Refers-To %q %q, warcsum %s %s", n, e.newOff, l.RefURI, l.RefDate, m.RefURI, m.RefDate)
			}
			original := responses[d.RefURI+" "+d.RefDate+" "+d.Digest]
			switch {
			case l.Digest == "":
				t.Errorf("%s %d: the revisit has no WARC-Payload-Digest for warcio", n, e.newOff)
			case m.Algorithm() == d.Algorithm() && normDigest(l.Digest) != normDigest(d.Digest):
				t.Errorf("%s %d: warcio reads the revisit's payload digest as %s, the payload's is %s", n, e.newOff, l.Digest, d.Digest)
			case l.RefURI == "" || l.RefDate == "":
				t.Errorf("%s %d: the revisit lacks WARC-Refers-To-Target-URI or -Date: %+v", n, e.newOff, l)
			case resolves(lookupAfter, l.RefURI, l.Digest, l.RefDate):
			case original != "" && isARCName(original):
				// warcio.js reads no ARC; warcsum lists the original.
				rep.arcOriginals++
			case original != "" && normDigest(l.Digest) == normDigest(d.Digest) && resolves(lookupAfter, l.RefURI, "", l.RefDate):
				// The revisit has the payload's digest; warcio finds the
				// original, with the digest its own WARC-Payload-Digest
				// claims, which the payload does not have (see
				// warcioReport.wrongDigestOriginals).
				rep.wrongDigestOriginals++
				t.Logf("%s %d: revisit of %s %s (%s): its original in %s has a wrong WARC-Payload-Digest, so lookups by digest miss it",
					n, e.newOff, l.RefURI, l.RefDate, d.Digest, original)
			case refURIEscapeBug && resolves(lookupAfter, unescaped[l.RefURI], l.Digest, l.RefDate):
				rep.escapedRefURIs++
				t.Logf("known bug (refURIEscapeBug): %s %d: revisit %s %s refers to %q, its original is at %q",
					n, e.newOff, l.URL, l.Date, l.RefURI, unescaped[l.RefURI])
			default:
				var seen []string
				for _, c := range lookupAfter[l.RefURI] {
					seen = append(seen, c.date+" "+c.digest)
				}
				t.Errorf("%s %d: revisit %s %s (digest %s) refers to %s %s: warcio finds no non-revisit record with that digest there (records at that URI: %v)",
					n, e.newOff, l.URL, l.Date, l.Digest, l.RefURI, l.RefDate, seen)
			}
		}
	}
	if rep.written != len(r.log) {
		t.Errorf("warcio reads %d of the %d revisits warcrefs wrote", rep.written, len(r.log))
	}
	slices.Sort(broken)
	checkBrokenRevisits(t, slices.Compact(broken))
	return rep
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (rep warcioReport) String() string {
	return fmt.Sprintf("%d WARC files indexed (%d rewritten, %d others unreadable by warcio), %d revisit lines, %d written by warcrefs (%d with an ARC original, %d with an original whose WARC-Payload-Digest is wrong), %d older revisits without their original in the collection",
		rep.files, rep.rewritten, rep.unreadable, rep.revisits, rep.written, rep.arcOriginals, rep.wrongDigestOriginals, rep.unresolvedBefore) +
		fmt.Sprintf(", %d with a %%XX-escaped Refers-To URI", rep.escapedRefURIs)
}

// refURIEscapeBug: warcrefs writes WARC-Refers-To-Target-URI as manifest
// field 9, where whitespace and control bytes are %XX-escaped (manifest.md
// field 4), so a revisit of an original whose WARC-Target-URI holds a
// space ("http://cdn.example.com/search results/page 64.html") refers to
// "http://cdn.example.com/search%20results/page%2064.html", a URI no record
// has: warcio.js, and replay tools that look the URI up as written, do not
// find the original. (The escaping cannot simply be undone: '%' itself is
// not escaped, so a URI with a literal "%20" reads the same.) While true,
// such revisits are counted and logged instead of failing, and
// TestWarcioGenerated, whose collection has them, fails if none shows up:
// set it to false once the revisits name the original's URI as written.
const refURIEscapeBug = false

// TestWarcioGenerated deduplicates a generated collection of WARC files
// (1.0 and 1.1, plain and gzip, with non-candidate records including a
// revisit per file, chunked bodies, and URI quirks: spaces, <...>) in
// place with warcdedup run, and has warcio.js index the result. Seed 5
// gives duplicates of URIs with spaces, also as originals.
func TestWarcioGenerated(t *testing.T) {
	cli := warcioCLI(t)
	work := t.TempDir()
	cfg := gen.Config{
		Files: 8, Records: 300, DupRate: 0.4, Seed: 5, MeanPayload: 3000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC10, gen.WARC11Gz, gen.WARC11},
		Chunked: 0.1, NonCandidates: true, Quirks: true,
	}
	res, err := gen.Write(filepath.Join(work, "coll"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "orig"))
	r := runDedup(t, work, "coll", "keep")
	t.Logf("%s\n%s", res.Summary(), r.stderr)
	if r.code != 0 {
		t.Errorf("warcdedup exit %d\n%s", r.code, r.stderr)
	}
	checkViolations(t, r)
	checkBrokenRevisits(t, revisitKeys(brokenRevisits(r.readManifest(t, "before.manifest"), r.readManifest(t, "after.manifest"))))

	// Every duplicate the generator made is rewritten or kept as a
	// response (if its revisit would not be smaller); the responses that
	// generated revisits refer to are not duplicates (copy 1).
	pinned := map[string]bool{}
	for _, l := range r.readManifest(t, "before.manifest") {
		if l.IsRevisit() {
			pinned[l.RefURI+" "+l.RefDate] = true
		}
	}
	responses := map[string]bool{}
	for _, l := range r.readManifest(t, "after.manifest") {
		if !l.IsRevisit() {
			responses[revisitKey(&l)+" "+l.Digest] = true
		}
	}
	logged := map[fileOffset]bool{}
	for _, e := range r.log {
		logged[fileOffset{e.manifestFile, e.oldOff}] = true
	}
	rewritten, keptPinned, keptOther := 0, 0, 0
	for _, want := range res.Expected {
		switch {
		case want.Copy < 2:
		case logged[fileOffset{want.File, want.Offset}]:
			rewritten++
			if pinned[want.URI+" "+want.Date] {
				t.Errorf("%s: rewritten, though a generated revisit refers to it", want.String())
			}
		case !responses[revisitKey(&want)+" "+want.Digest]:
			t.Errorf("%s: neither rewritten nor a response after the run", want.String())
		case pinned[want.URI+" "+want.Date]:
			keptPinned++
		default:
			keptOther++
		}
	}
	t.Logf("%d duplicates: %d rewritten, %d kept as originals of generated revisits, %d kept (not smaller as a revisit)",
		res.Duplicates, rewritten, keptPinned, keptOther)
	if rewritten != len(r.log) || keptPinned != 0 || rewritten < res.Duplicates*9/10 {
		t.Errorf("want every revisit written for a generated duplicate, none for a response a generated revisit refers to, and 90%% written")
	}
	pinnedKept := 0
	for _, l := range res.Expected {
		if !l.IsRevisit() && pinned[l.URI+" "+l.Date] {
			pinnedKept++
			if l.Copy != 1 || !responses[revisitKey(&l)+" "+l.Digest] {
				t.Errorf("%s: a generated revisit refers to it: want it kept (copy 1) and a response after", l.String())
			}
		}
	}
	if pinnedKept == 0 {
		t.Error("no response is referred to by a generated revisit: the test proves nothing")
	}
	if r.stats.Totals.RevisitsWritten != int64(len(r.log)) {
		t.Errorf("stats.json says %d revisits written, the log has %d", r.stats.Totals.RevisitsWritten, len(r.log))
	}

	checkFiles(t, r, filepath.Join(work, "orig"))
	checkRevisitLines(t, r)
	rep := checkWithWarcio(t, cli, r, filepath.Join(work, "orig"))
	t.Log(rep)
	if rep.rewritten != res.Files || rep.unreadable != 0 || rep.arcOriginals != 0 || rep.wrongDigestOriginals != 0 || rep.unresolvedBefore != 0 {
		t.Errorf("want every one of the %d files rewritten and readable, every revisit resolved: %s", res.Files, rep)
	}
	if refURIEscapeBug && rep.escapedRefURIs == 0 {
		t.Errorf("no revisit refers to a %%XX-escaped URI any more: set refURIEscapeBug to false")
	}
}

// TestWarcioCorpus deduplicates the corpus selection of TestCorpusDedup
// and has warcio.js index the result.
func TestWarcioCorpus(t *testing.T) {
	cli := warcioCLI(t)
	needCorpus(t)
	work := t.TempDir()
	copyCorpus(t, filepath.Join(work, "coll"))
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "orig"))
	r := runDedup(t, work, "coll", "keep")
	if len(r.log) == 0 {
		t.Fatalf("no revisits written:\n%s", r.stderr)
	}
	rep := checkWithWarcio(t, cli, r, filepath.Join(work, "orig"))
	t.Log(rep)
	if rep.rewritten != len(r.byFile) {
		t.Errorf("%d files rewritten, %d indexed as rewritten", len(r.byFile), rep.rewritten)
	}
}

// TestWarcioVersion logs the version of warcio.js the tests ran with.
func TestWarcioVersion(t *testing.T) {
	cli := warcioCLI(t)
	out, err := exec.Command(cli, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("warcio.js %s", strings.TrimSpace(string(out)))
}
