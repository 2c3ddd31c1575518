package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/gzfile"
	"warcdedup/manifest"
	"warcdedup/report"
	"warcdedup/rewritelog"
)

// corpusDir holds real files from public projects' test suites (see its
// MANIFEST.md); it is absent on users' machines.
const corpusDir = "../../shared/corpus"

// corpusSelection is the collection TestCorpusDedup deduplicates: paths in
// corpusDir, copied with the same relative names; a path ending in "/"
// stands for every file of that directory. The files were chosen from
// MANIFEST.md for their duplicates (real crawls by pywb, wget, Heritrix 1
// and NetarchiveSuite, WARC/0.17 to 1.0, plain and gzip, revisits already
// present), for ARC files whose duplicates cannot become revisits, and for
// damage that warcsum must report while the run goes on.
var corpusSelection = []string{
	// (a) pywb's sample collection: iana.warc.gz (123 revisits already,
	// 48 responses), dupes.warc.gz (9 revisits of iana.warc.gz records),
	// example*.warc* (example.warc and example.warc.gz are twins with the
	// same records), post-test, the url-agnostic pair, ARC, a damaged
	// bad.arc and example-bad.warc.gz.bad (not a WARC name: never read).
	"webrecorder+pywb/sample_archive/warcs/",
	// (b) wget's IAH-urls-wget (plain and gzip twins, chunked bodies, the
	// same payload under several URLs), the truncated IAH ARC, and the
	// NetarchiveSuite files: its WARC/1.0 crawl, Heritrix WARC/0.18 files,
	// an ARC->WARC conversion, metadata WARCs, and three ARCs with
	// duplicates whose originals the WARC files' duplicates refer to.
	"iipc+webarchive-commons/src/test/resources/org/archive/format/gzip/IAH-urls-wget.warc.gz",
	"iipc+webarchive-commons/src/test/resources/org/archive/format/warc/IAH-urls-wget.warc",
	"iipc+webarchive-commons/src/test/resources/org/archive/format/arc/IAH-20080430204825-00000-blackbook-truncated.arc",
	"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/NAS-20100909163324-00000-mette.kb.dk.warc",
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/",
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/warc/data/input/fyensdk.warc",
	"netarchivesuite+netarchivesuite/harvester/harvester-test/tests/dk/netarkivet/harvester/webinterface/data/warc-originals/",
	"netarchivesuite+netarchivesuite/archive/archive-core/tests/dk/netarkivet/archive/bitarchive/distribute/data/uploadmessage/NetarchiveSuite-store1.arc",
	"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/2-2-20060731110420-00000-sb-test-har-001.statsbiblioteket.dk.arc",
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/NetarchiveSuite-netarkivet.arc.gz",
	// (c) other files with duplicates: node-warc's capture (its 6 equal
	// payloads are non-2xx, so none is listed), jwat's WARC/0.17 file with
	// four equal payloads under wrong digest headers, hand-made files
	// without record IDs, two identical ipwb captures, and an ipwb file
	// whose declared digests collide while the payloads differ.
	"N0taN3rd+node-warc/test/files/parseMe.warc.gz",
	"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-digest-fields.warc",
	"iipc+webarchive-commons/src/test/resources/org/archive/resource/html/link-extraction-test.warc",
	"oduwsdl+ipwb/samples/warcs/mkelly1.warc",
	"oduwsdl+ipwb/samples/warcs/mkelly2.warc",
	"oduwsdl+ipwb/samples/warcs/5mementos.warc",
	// Damaged on purpose (see corpusDamaged).
	"webrecorder+warcio/test/data/example-trunc.warc",
	"webrecorder+warcio/test/data/example-bad-non-chunked.warc.gz",
	"chatnoir-eu+chatnoir-resiliparse/tests/data/clipped.warc.gz",
	"oduwsdl+ipwb/samples/warcs/broken.warc",
}

// corpusRevisits is the number of revisits warcrefs wrote into each file of
// the selection when the test was written (sha1, the payload policy; 44 in
// all); the test asserts at least these. Every other file gets none:
//
//	file                                        revisits  duplicates listed
//	pywb example-wget-1-14.warc.gz                1         1  (example.com; copy 1: http://example.iana.org/ in example-url-agnostic-orig.warc.gz)
//	pywb example-wpull.warc.gz                    1         1  (the same page)
//	pywb dupes.warc.gz                            0         2  (one is the original of the file's own revisit of
//	                                                            http://example.com: kept; the other an empty body)
//	pywb example.warc, example.warc.gz,
//	     example-extra.warc                       0         1 each (originals of the files' own revisits: kept)
//	pywb iana.warc.gz                             0        15  (all empty bodies, 453-458 bytes: a revisit is not smaller)
//	pywb example.arc, example.arc.gz              0         1 each (ARC: skipped)
//	IAH-urls-wget.warc                            2         7  (2 refer to the IAH ARC; 5 are the same capture, URI and
//	                                                            date, as in its gzip twin: kept, as a revisit naming its
//	                                                            own URI and date is dropped by wabac.js)
//	IAH-urls-wget.warc.gz                         2         2  (logoc.jpg, go-button-gateway.gif: copy 1 is
//	                                                            www.archive.org's, 2008, in the truncated IAH ARC)
//	NAS-20100909163324-00000-mette.kb.dk.warc    20        31  (originals mostly in the NetarchiveSuite ARCs)
//	netarkivet-20081105135926-00000.warc (0.18)   8        14
//	netarkivet-20081105135926-00001.warc (0.18)   9        14
//	jwat invalid-warcfile-digest-fields.warc      0         3  (WARC/0.17; all four captures share one URI and date: kept)
//	ipwb mkelly2.warc (twin of mkelly1.warc)      1         2
//	NetarchiveSuite-store1.arc, 2-2-...arc,
//	NetarchiveSuite-netarkivet.arc.gz             0   17, 18, 7 (ARC: skipped)
//
// The other duplicates are kept because their revisit would not be
// smaller (short payloads). parseMe.warc.gz's six equal payloads are
// non-2xx, so not listed; 5mementos.warc's records claim one digest for
// different payloads, and warcsum lists what they hash to.
var corpusRevisits = map[string]int{
	"webrecorder+pywb/sample_archive/warcs/example-wget-1-14.warc.gz":                                                                               1,
	"webrecorder+pywb/sample_archive/warcs/example-wpull.warc.gz":                                                                                   1,
	"iipc+webarchive-commons/src/test/resources/org/archive/format/warc/IAH-urls-wget.warc":                                                         2,
	"iipc+webarchive-commons/src/test/resources/org/archive/format/gzip/IAH-urls-wget.warc.gz":                                                      2,
	nasWARCs + "archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/NAS-20100909163324-00000-mette.kb.dk.warc": 20,
	nasWARCs + "common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/netarkivet-20081105135926-00000.warc":                      8,
	nasWARCs + "common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/netarkivet-20081105135926-00001.warc":                      9,
	"oduwsdl+ipwb/samples/warcs/mkelly2.warc":                                                                                                       1,
}

const nasWARCs = "netarchivesuite+netarchivesuite/"

// corpusPinned are the duplicates warcdedup must keep as responses because
// a revisit already in the collection refers to them: "file URI date".
var corpusPinned = []string{
	"webrecorder+pywb/sample_archive/warcs/dupes.warc.gz http://example.com 2014-01-27T17:12:00Z",
	"webrecorder+pywb/sample_archive/warcs/example-extra.warc http://example.com?example=2 2014-01-03T03:03:21Z",
	"webrecorder+pywb/sample_archive/warcs/example.warc http://example.com?example=1 2014-01-03T03:03:21Z",
	"webrecorder+pywb/sample_archive/warcs/example.warc.gz http://example.com?example=1 2014-01-03T03:03:21Z",
}

// corpusDamaged are files with records warcsum must report as damaged
// (exit status 1) while the run goes on and their other records are read
// (pywb's example.warc: the request record at 4061 overruns by 6 bytes;
// its response is listed).
var corpusDamaged = []string{
	"webrecorder+warcio/test/data/example-trunc.warc",
	"webrecorder+warcio/test/data/example-bad-non-chunked.warc.gz",
	"chatnoir-eu+chatnoir-resiliparse/tests/data/clipped.warc.gz",
	"oduwsdl+ipwb/samples/warcs/broken.warc",
	"webrecorder+pywb/sample_archive/warcs/bad.arc",
	"webrecorder+pywb/sample_archive/warcs/example.warc",
}

// checkViolations runs warcsumcmp on the kept manifests: no violation,
// and warcdedup's own verification says so.
func checkViolations(t *testing.T, r *dedupRun) {
	t.Helper()
	out, stderr, code := sh(t, r.work, "warcsumcmp "+r.keep+"/before.manifest "+r.keep+"/after.manifest")
	if code != 0 || out != "" || !strings.Contains(stderr, "violations: 0\n") {
		t.Errorf("warcsumcmp: exit %d\n%s%s", code, out, stderr)
	}
	if r.stats.Totals.Violations != 0 || !strings.Contains(r.stdout, "verification: 0 records lost") {
		t.Errorf("warcdedup's verification: %d violations\n%s", r.stats.Totals.Violations, r.stdout)
	}
}

// needCorpus skips the test when the shared corpus is absent.
func needCorpus(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(corpusDir, "MANIFEST.md")); err != nil {
		corpustest.Missing(t, "no corpus at %s", corpusDir)
	}
}

// copyCorpus copies corpusSelection into dst and returns the relative
// names of the files copied, sorted.
func copyCorpus(t *testing.T, dst string) []string {
	t.Helper()
	var names []string
	for _, p := range corpusSelection {
		if !strings.HasSuffix(p, "/") {
			names = append(names, p)
			continue
		}
		entries, err := os.ReadDir(filepath.Join(corpusDir, filepath.FromSlash(p)))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				names = append(names, path.Join(p, e.Name()))
			}
		}
	}
	for _, n := range names {
		copyFile(t, filepath.Join(corpusDir, filepath.FromSlash(n)), filepath.Join(dst, filepath.FromSlash(n)))
	}
	slices.Sort(names)
	return names
}

// copyTree copies every regular file under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		copyFile(t, p, filepath.Join(dst, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// dedupRun is one run of warcdedup run --work-dir KEEP on a collection.
type dedupRun struct {
	work, coll, keep string // coll and keep are relative to work
	stdout, stderr   string // the summary; progress and diagnostics
	code             int
	stats            *report.Report // stats.json
	log              []rewriteEntry
	byFile           map[string][]rewriteEntry // log entries by file
}

// rewriteEntry is a line of warcrefs --log.
type rewriteEntry struct {
	file           string // unescaped
	manifestFile   string // field 1 as in the manifests
	oldOff, oldLen int64
	newOff, newLen int64
}

// runDedup runs warcdedup run --work-dir KEEP COLL in work and reads its
// statistics and rewrite log; args go before COLL.
func runDedup(t *testing.T, work, coll, keep string, args ...string) *dedupRun {
	t.Helper()
	// --keep-work: the tests read the intermediate manifests (numbered,
	// by file) that a run removes once it is complete.
	stdout, stderr, code := sh(t, work, "warcdedup run --keep-work --work-dir "+keep+" "+strings.Join(args, " ")+" "+coll)
	r := &dedupRun{work: work, coll: coll, keep: keep, stdout: stdout, stderr: stderr, code: code, byFile: map[string][]rewriteEntry{}}
	if code >= 2 || strings.Contains(stderr, "panic:") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("warcdedup did not finish: exit %d\n%s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(work, keep, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	r.stats = new(report.Report)
	if err := json.Unmarshal(data, r.stats); err != nil {
		t.Fatal(err)
	}
	if r.stats.Exit != code {
		t.Errorf("exit status %d, stats.json says %d", code, r.stats.Exit)
	}
	f, err := os.Open(filepath.Join(work, keep, "rewrite.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := rewritelog.NewReader(f, "rewrite.log")
	for {
		le, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e := rewriteEntry{file: le.File, manifestFile: manifest.EscapeFile(le.File), oldOff: le.OldOffset, oldLen: le.OldLength, newOff: le.NewOffset, newLen: le.NewLength}
		r.log = append(r.log, e)
		r.byFile[le.File] = append(r.byFile[le.File], e)
	}
	return r
}

func (r *dedupRun) readManifest(t *testing.T, name string) []manifest.Line {
	t.Helper()
	return readManifestFile(t, filepath.Join(r.work, r.keep, name))
}

func readManifestFile(t *testing.T, name string) []manifest.Line {
	t.Helper()
	f, err := gzfile.Open(name) // a work directory keeps its manifests gzip-compressed
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mr := manifest.NewReader(f, name)
	var lines []manifest.Line
	for {
		l, err := mr.Next()
		if err == io.EOF {
			return lines
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
}

type fileOffset struct {
	file   string
	offset int64
}

func byOffset(lines []manifest.Line) map[fileOffset]manifest.Line {
	m := make(map[fileOffset]manifest.Line, len(lines))
	for _, l := range lines {
		m[fileOffset{l.File, l.Offset}] = l
	}
	return m
}

// checkRewrittenBytes proves that the new version of a file is the old one
// with each logged record replaced by a smaller one and nothing else
// changed.
func checkRewrittenBytes(t *testing.T, name string, old, cur []byte, entries []rewriteEntry) {
	t.Helper()
	var op, np int64
	for _, e := range entries {
		if e.oldOff < op || e.oldOff+e.oldLen > int64(len(old)) || e.newOff+e.newLen > int64(len(cur)) {
			t.Errorf("%s: log entry %+v outside the file or out of order", name, e)
			return
		}
		if e.newOff-np != e.oldOff-op || !bytes.Equal(old[op:e.oldOff], cur[np:e.newOff]) {
			t.Errorf("%s: bytes before the record at old offset %d (new %d) changed", name, e.oldOff, e.newOff)
			return
		}
		if e.newLen >= e.oldLen {
			t.Errorf("%s: record at %d: revisit of %d bytes replaces %d bytes", name, e.oldOff, e.newLen, e.oldLen)
		}
		op, np = e.oldOff+e.oldLen, e.newOff+e.newLen
	}
	if !bytes.Equal(old[op:], cur[np:]) {
		t.Errorf("%s: bytes after the last revisit (old offset %d, new %d) changed", name, op, np)
	}
}

// checkFiles compares every file of the collection with its version
// before: byte-identical unless the log names it, and then changed only
// where the log says. It also looks for temporary files left behind.
func checkFiles(t *testing.T, r *dedupRun, before string) {
	t.Helper()
	coll := filepath.Join(r.work, r.coll)
	seen := map[string]bool{}
	err := filepath.WalkDir(coll, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(coll, p)
		rel = filepath.ToSlash(rel)
		if strings.HasPrefix(d.Name(), ".tmp-") {
			t.Errorf("temporary file %s left behind", rel)
			return nil
		}
		seen[rel] = true
		old, err := os.ReadFile(filepath.Join(before, filepath.FromSlash(rel)))
		if err != nil {
			t.Errorf("%s: not in the collection before: %v", rel, err)
			return nil
		}
		cur, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if entries := r.byFile[rel]; len(entries) > 0 {
			checkRewrittenBytes(t, rel, old, cur, entries)
		} else if !bytes.Equal(old, cur) {
			t.Errorf("%s: changed, but warcrefs logged no rewrite of it", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range r.byFile {
		if !seen[f] {
			t.Errorf("%s: in the rewrite log but not in the collection", f)
		}
	}
	_ = filepath.WalkDir(before, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(before, p)
			if !seen[filepath.ToSlash(rel)] {
				t.Errorf("%s: missing after the run", rel)
			}
		}
		return err
	})
}

// checkRevisitLines joins each logged rewrite with the manifests on file
// and offset: the duplicate line at the old offset, the revisit line at the
// new one (same URI and date, refers to what the duplicate line says), and
// a response line of its original, with the same digest, after the run.
// This holds even where warcsumcmp, which goes by URI and date, is
// satisfied by a twin file's copy of the record.
func checkRevisitLines(t *testing.T, r *dedupRun) {
	t.Helper()
	dups := byOffset(r.readManifest(t, "by-file.manifest"))
	afterLines := r.readManifest(t, "after.manifest")
	after := byOffset(afterLines)
	responses := map[string]bool{} // "uri date digest"
	for _, l := range afterLines {
		if !l.IsRevisit() {
			responses[l.URI+" "+l.Date+" "+l.Digest] = true
		}
	}
	for _, e := range r.log {
		d, ok := dups[fileOffset{e.manifestFile, e.oldOff}]
		if !ok || d.Length != e.oldLen {
			t.Errorf("%s %d: rewritten, but by-file.manifest has no such line (%v)", e.file, e.oldOff, d)
			continue
		}
		a, ok := after[fileOffset{e.manifestFile, e.newOff}]
		switch {
		case !ok:
			t.Errorf("%s %d (was %d): warcsum does not list the revisit", e.file, e.newOff, e.oldOff)
			continue
		case !a.IsRevisit() || a.Length != e.newLen || a.URI != d.URI || a.Date != d.Date || a.RefURI != d.RefURI || a.RefDate != d.RefDate:
			t.Errorf("%s %d: revisit line %q for duplicate %q", e.file, e.newOff, a.String(), d.String())
		case a.Algorithm() == d.Algorithm() && a.Digest != d.Digest:
			t.Errorf("%s %d: revisit has digest %s, the duplicate %s", e.file, e.newOff, a.Digest, d.Digest)
		}
		if !responses[d.RefURI+" "+d.RefDate+" "+d.Digest] {
			t.Errorf("%s %d: no response %s %s %s after the run", e.file, e.newOff, d.RefURI, d.RefDate, d.Digest)
		}
	}
}

// brokenRevisits returns the revisits (revisit lines of warcsum) that resolved in the before-manifest and do not in the
// after-manifest: no response at their Refers-To URI (and date, when they
// have one) with their digest.
func brokenRevisits(before, after []manifest.Line) []manifest.Line {
	resolves := func(lines []manifest.Line) map[string]bool {
		byURI := map[string][]manifest.Line{}
		for _, l := range lines {
			if !l.IsRevisit() {
				byURI[l.URI] = append(byURI[l.URI], l)
			}
		}
		ok := map[string]bool{}
		for _, v := range lines {
			if !v.IsRevisit() {
				continue
			}
			for _, o := range byURI[v.RefURI] {
				if (v.RefDate == "*" || o.Date == v.RefDate) && o.Digest == v.Digest {
					ok[revisitKey(&v)] = true
				}
			}
		}
		return ok
	}
	is := resolves(after)
	var broken []manifest.Line
	for k := range resolves(before) {
		if !is[k] {
			for _, l := range before {
				if l.IsRevisit() && revisitKey(&l) == k {
					broken = append(broken, l)
					break
				}
			}
		}
	}
	slices.SortFunc(broken, func(a, b manifest.Line) int { return strings.Compare(revisitKey(&a), revisitKey(&b)) })
	return broken
}

// checkPinned proves that each of the records named ("file URI date"),
// duplicates that revisits already in the collection refer to, is kept
// (copy 1) by the numbering and is still a response after the run.
func checkPinned(t *testing.T, r *dedupRun, pinned []string) {
	t.Helper()
	responses := map[string]bool{}
	for _, l := range r.readManifest(t, "after.manifest") {
		if !l.IsRevisit() {
			responses[revisitKey(&l)+" "+l.Digest] = true
		}
	}
	for _, p := range pinned {
		found := false
		for _, l := range r.readManifest(t, "numbered.manifest") {
			if revisitKey(&l) != p {
				continue
			}
			found = true
			if l.Copy != 1 {
				t.Errorf("%s: copy %d, want it kept: a revisit refers to it", p, l.Copy)
			}
			if !responses[p+" "+l.Digest] {
				t.Errorf("%s: a revisit in the collection refers to it, but it is no longer a response", p)
			}
		}
		if !found {
			t.Errorf("%s: not in numbered.manifest", p)
		}
	}
}

// revisitKey names a record in messages: "file URI date".
func revisitKey(l *manifest.Line) string { return l.File + " " + l.URI + " " + l.Date }

func revisitKeys(lines []manifest.Line) []string {
	var keys []string
	for i := range lines {
		keys = append(keys, revisitKey(&lines[i]))
	}
	return keys
}

// checkBrokenRevisits fails for each revisit ("file URI date") that the
// run broke: it resolved before and no longer does, because the run
// rewrote the response it refers to into a revisit (a chain replay does
// not follow; records.md section 2: never). Every stage keeps the records
// that existing revisits refer to (their revisit lines say which).
func checkBrokenRevisits(t *testing.T, broken []string) {
	t.Helper()
	for _, k := range broken {
		t.Errorf("revisit %s resolved before the run and no longer does: its original was rewritten", k)
	}
}

// TestCorpusDedup deduplicates real crawler files in place with
// warcdedup run and proves that nothing was lost: warcsumcmp finds no
// violation, the expected revisits were written, every file warcrefs did
// not rewrite is byte-identical, rewritten files changed only in the
// records the log names, damaged files are reported and the run finishes,
// and a second run changes nothing.
func TestCorpusDedup(t *testing.T) {
	needCorpus(t)
	work := t.TempDir()
	names := copyCorpus(t, filepath.Join(work, "coll"))
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "orig"))
	// The payload policy: the figures below count every byte-identical
	// duplicate (the replay policy keeps fewer, checked by TestReplay...).
	r := runDedup(t, work, "coll", "keep", "--policy", "payload")
	t.Log(r.stderr)

	// Damaged records make warcsum, and so the script, exit 1; the run
	// still goes through every stage and every file.
	if r.code != 1 {
		t.Errorf("warcdedup exit %d, want 1 (damaged records reported)", r.code)
	}
	for _, f := range corpusDamaged {
		if !strings.Contains(r.stderr, f+": offset ") {
			t.Errorf("damaged file %s is not reported with an offset:\n%s", f, r.stderr)
		}
		if len(r.byFile[f]) > 0 && corpusRevisits[f] == 0 {
			t.Errorf("damaged file %s was rewritten", f)
		}
	}
	if !strings.Contains(r.stdout, "damaged record") || r.stats.Totals.DamagedRecords == 0 {
		t.Errorf("the summary does not count damaged records:\n%s", r.stdout)
	}
	if !strings.Contains(r.stderr, "skipped: ARC records cannot become revisits") {
		t.Errorf("the ARC files with duplicates were not reported as skipped:\n%s", r.stderr)
	}

	// warcsumcmp, run again on the kept manifests.
	checkViolations(t, r)

	// Revisits written, per file, against what was observed.
	written := int(r.stats.Totals.RevisitsWritten)
	if written != len(r.log) {
		t.Errorf("summary says %d revisits, the log has %d", written, len(r.log))
	}
	minTotal := 0
	for f, n := range corpusRevisits {
		minTotal += n
		if !slices.Contains(names, f) {
			t.Errorf("corpusRevisits names %s, which is not in the selection", f)
		}
		if got := len(r.byFile[f]); got < n {
			t.Errorf("%s: %d revisits written, want at least %d", f, got, n)
		}
	}
	if written < minTotal {
		t.Errorf("%d revisits written, want at least %d", written, minTotal)
	}
	var counts []string
	for _, f := range names {
		if n := len(r.byFile[f]); n > 0 {
			counts = append(counts, fmt.Sprintf("%4d %s", n, f))
		}
	}
	t.Logf("revisits written per file:\n%s", strings.Join(counts, "\n"))

	// Duplicates that existing revisits refer to stay responses.
	checkPinned(t, r, corpusPinned)

	checkFiles(t, r, filepath.Join(work, "orig"))
	checkRevisitLines(t, r)
	checkBrokenRevisits(t, revisitKeys(brokenRevisits(r.readManifest(t, "before.manifest"), r.readManifest(t, "after.manifest"))))

	// Again on the result: nothing left to rewrite, no byte changed.
	copyTree(t, filepath.Join(work, "coll"), filepath.Join(work, "once"))
	r2 := runDedup(t, work, "coll", "keep2", "--policy", "payload")
	if r2.code != 1 || len(r2.log) != 0 || r2.stats.Totals.BytesSaved != 0 {
		t.Errorf("second run: exit %d, %d rewrites, %d bytes saved\n%s", r2.code, len(r2.log), r2.stats.Totals.BytesSaved, r2.stderr)
	}
	checkFiles(t, r2, filepath.Join(work, "once"))
	checkViolations(t, r2)
}
