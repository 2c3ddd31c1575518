// Package replay checks that a deduplicated collection replays as it did
// before: every record that became a revisit must be served by a replay
// tool with the status, Content-Type, Content-Encoding and body bytes its
// response had. browser_test.go (build tag "browser", `make
// test-browser`) replays in ReplayWeb.page in headless Chromium;
// pywb_test.go applies pywb's resolution rule to a CDXJ index of the
// result. Both run on three collections: a generated one, the corpus
// files that hold duplicates, and a hand-made two-date site.
package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"warcdedup/rewritelog"

	"warcdedup/internal/cdxj"
	"warcdedup/internal/corpustest"
	"warcdedup/record"
	"warcdedup/scripts/gen"
)

var binDir string

// replayPolicy is true: the toolchain's default (replay) policy makes a
// record a revisit only of an original that replays the same way, so
// every mismatch fails the test. (It was false while the toolchain could
// make a record a revisit of an original with another status,
// Content-Type or Content-Encoding, or in an ARC file; those mismatches
// were then logged, counted, and failed only under
// WARCDEDUP_REPLAY_STRICT=1.)
const replayPolicy = true

func strict() bool { return replayPolicy || os.Getenv("WARCDEDUP_REPLAY_STRICT") == "1" }

// TestMain builds the commands once, so that the deduplication runs the
// source under test and never an older bin/.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "warcdedup-replay-bin-")
	if err != nil {
		panic(err)
	}
	build := exec.Command("go", "build", "-o", dir+"/", "../../cmd/...")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("building the commands: " + err.Error())
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rewrite is one record the deduplication turned into a revisit: a line
// of warcrefs --log.
type rewrite struct {
	file                 string // relative to the collection, slash-separated
	oldOffset, oldLength int64
	newOffset, newLength int64
}

// deduplicate deduplicates the collection in dir in place, the way users
// do, and returns the records it rewrote as revisits. It is the one place
// that knows how: warcdedup run, built by TestMain, with its work
// directory beside the collection.
func deduplicate(t *testing.T, dir string) []rewrite {
	t.Helper()
	keep := filepath.Join(t.TempDir(), "work")
	cmd := exec.Command(filepath.Join(binDir, "warcdedup"), "run", "--work-dir", keep, dir)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		// Damaged input was reported; the rest was deduplicated.
		t.Logf("warcdedup exit 1 (damaged input reported):\n%s", lastLines(stderr.String(), 10))
	case err != nil:
		t.Fatalf("warcdedup: %v\n%s", err, stderr.String())
	}
	t.Log(lastLines(stderr.String(), 8))
	return readRewriteLog(t, filepath.Join(keep, "rewrite.log"))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func readRewriteLog(t *testing.T, name string) []rewrite {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []rewrite
	lr := rewritelog.NewReader(f, name)
	for {
		e, err := lr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rewrite{e.File, e.OldOffset, e.OldLength, e.NewOffset, e.NewLength})
	}
}

// collection is a collection as it was and as deduplicated: the
// directories before/ and after/ under root.
type collection struct {
	name     string
	root     string
	files    []string // every file, relative, slash-separated, sorted
	rewrites []rewrite
	// originalFiles: the file of each response or resource after the
	// run, by "URI date" as its record has them.
	originalFiles map[string]string
}

func (c *collection) before(rel string) string {
	return filepath.Join(c.root, "before", filepath.FromSlash(rel))
}
func (c *collection) after(rel string) string {
	return filepath.Join(c.root, "after", filepath.FromSlash(rel))
}

// prepare makes a collection: fill writes its files into a directory, a
// copy of which is deduplicated.
func prepare(t *testing.T, name string, fill func(t *testing.T, dir string)) *collection {
	t.Helper()
	c := &collection{name: name, root: t.TempDir()}
	fill(t, filepath.Join(c.root, "before"))
	err := filepath.WalkDir(filepath.Join(c.root, "before"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(filepath.Join(c.root, "before"), p)
		c.files = append(c.files, filepath.ToSlash(rel))
		return copyFile(p, c.after(filepath.ToSlash(rel)))
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(c.files)
	c.rewrites = deduplicate(t, filepath.Join(c.root, "after"))
	if len(c.rewrites) == 0 {
		t.Fatalf("%s: the deduplication wrote no revisit", name)
	}
	c.originalFiles = map[string]string{}
	for _, f := range c.files {
		if err := scanResponses(c.after(f), func(uri, date string) { c.originalFiles[uri+" "+date] = f }); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// scanResponses calls found with the URI and date of every response and
// resource record of the file that can be read; damaged records are
// passed over.
func scanResponses(name string, found func(uri, date string)) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	rr, err := record.NewReader(f, name)
	if err != nil {
		return err
	}
	for {
		rec, err := rr.Next()
		var damage *record.Error
		switch {
		case err == io.EOF:
			return nil
		case errors.As(err, &damage):
			continue
		case err != nil:
			return err
		}
		if rec.Type == "response" || rec.Type == "resource" {
			found(rec.URI, rec.Date)
		}
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// The three collections.

// generatedCollection is a small generated collection of WARC files only
// (ReplayWeb.page reads no ARC): 1.0 and 1.1, plain and gzip, chunked
// bodies, records that are no candidates, URI quirks.
func generatedCollection(t *testing.T, dir string) {
	cfg := gen.Config{
		Files: 4, Records: 150, DupRate: 0.4, Seed: 7, MeanPayload: 4000,
		Formats: []gen.Format{gen.WARC10Gz, gen.WARC11Gz, gen.WARC10, gen.WARC11},
		Chunked: 0.1, NonCandidates: true, Quirks: true,
	}
	res, err := gen.Write(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res.Summary())
}

// corpusDir holds real files from public projects' test suites; it is
// absent on users' machines.
const corpusDir = "../../../shared/corpus"

// corpusFiles are the corpus files with duplicates that become revisits,
// and the files their originals are in (see MANIFEST.md there): pywb's
// sample WARCs (iana.warc.gz, dupes.warc.gz, the wget and wpull captures
// of example.com whose original is in example-url-agnostic-orig.warc.gz),
// wget's IAH-urls-wget twins and the IAH ARC holding two of their
// originals, the NetarchiveSuite WARCs with the ARCs holding most of their
// originals, jwat's WARC/0.17 file with wrong digest headers, and ipwb's
// twin captures. ReplayWeb.page reads no ARC: revisits of ARC records are
// reported as such.
var corpusFiles = []string{
	"webrecorder+pywb/sample_archive/warcs/dupes.warc.gz",
	"webrecorder+pywb/sample_archive/warcs/iana.warc.gz",
	"webrecorder+pywb/sample_archive/warcs/example.warc.gz",
	"webrecorder+pywb/sample_archive/warcs/example-extra.warc",
	"webrecorder+pywb/sample_archive/warcs/example-wget-1-14.warc.gz",
	"webrecorder+pywb/sample_archive/warcs/example-wpull.warc.gz",
	"webrecorder+pywb/sample_archive/warcs/example-url-agnostic-orig.warc.gz",
	"webrecorder+pywb/sample_archive/warcs/example-url-agnostic-revisit.warc.gz",
	"iipc+webarchive-commons/src/test/resources/org/archive/format/gzip/IAH-urls-wget.warc.gz",
	"iipc+webarchive-commons/src/test/resources/org/archive/format/warc/IAH-urls-wget.warc",
	"iipc+webarchive-commons/src/test/resources/org/archive/format/arc/IAH-20080430204825-00000-blackbook-truncated.arc",
	"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/NAS-20100909163324-00000-mette.kb.dk.warc",
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/netarkivet-20081105135926-00000.warc",
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/cdx/data/input/warcs/netarkivet-20081105135926-00001.warc",
	"netarchivesuite+netarchivesuite/archive/archive-core/tests/dk/netarkivet/archive/bitarchive/distribute/data/uploadmessage/NetarchiveSuite-store1.arc",
	"netarchivesuite+netarchivesuite/archive/archive-test/tests/dk/netarkivet/archive/distribute/arcrepository/data/originals/2-2-20060731110420-00000-sb-test-har-001.statsbiblioteket.dk.arc",
	"netarchivesuite+netarchivesuite/common/common-test/tests/dk/netarkivet/common/utils/arc/data/input/NetarchiveSuite-netarkivet.arc.gz",
	"netarchivesuite+jwat/jwat-warc/src/test/resources/invalid-warcfile-digest-fields.warc",
	"oduwsdl+ipwb/samples/warcs/mkelly1.warc",
	"oduwsdl+ipwb/samples/warcs/mkelly2.warc",
}

func corpusCollection(t *testing.T, dir string) {
	if _, err := os.Stat(filepath.Join(corpusDir, "MANIFEST.md")); err != nil {
		corpustest.Missing(t, "no corpus at %s", corpusDir)
	}
	for _, f := range corpusFiles {
		if err := copyFile(filepath.Join(corpusDir, filepath.FromSlash(f)), filepath.Join(dir, filepath.FromSlash(f))); err != nil {
			t.Fatal(err)
		}
	}
}

func siteCollection(t *testing.T, dir string) { writeSite(t, dir) }

var collections = []struct {
	name string
	fill func(t *testing.T, dir string)
}{
	{"generated", generatedCollection},
	{"corpus", corpusCollection},
	{"site", siteCollection},
}

// Records as read from the files.

// httpHead is a response's status line and the header fields a replay
// tool serves a capture by.
type httpHead struct {
	status                  int
	contentType, contentEnc string
	raw                     []byte
}

// stored is a record read back from a file.
type stored struct {
	typ, uri, date  string
	refURI, refDate string
	digest          string // WARC-Payload-Digest
	head            httpHead
	payload         []byte // the HTTP entity body as stored
}

// readRecord reads the record at offset of the file (a gzip member start
// for .gz): its header fields, HTTP head and payload.
func readRecord(name string, offset int64) (*stored, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	rr, err := record.NewReader(io.NewSectionReader(f, offset, fi.Size()-offset), name)
	if err != nil {
		return nil, err
	}
	rec, err := rr.Next()
	if err != nil {
		return nil, fmt.Errorf("%s: offset %d: %w", name, offset, err)
	}
	s := &stored{typ: rec.Type, uri: rec.URI, date: rec.Date}
	if rec.Format == record.WARC {
		s.refURI = rec.Header.Get("WARC-Refers-To-Target-URI")
		s.refDate = rec.Header.Get("WARC-Refers-To-Date")
		s.digest = rec.Header.Get("WARC-Payload-Digest")
	}
	h, err := rr.ReadHTTPHead()
	if err != nil {
		return nil, fmt.Errorf("%s: offset %d: %w", name, offset, err)
	}
	s.head = parseHead(h.Raw)
	if s.payload, err = io.ReadAll(rr); err != nil {
		return nil, fmt.Errorf("%s: offset %d: %w", name, offset, err)
	}
	return s, nil
}

// parseHead reads the status and the Content-Type and Content-Encoding
// fields (first of each, trimmed) of an HTTP response head.
func parseHead(raw []byte) httpHead {
	h := httpHead{raw: append([]byte(nil), raw...)}
	lines := strings.Split(string(raw), "\n")
	if len(lines) > 0 {
		if f := strings.Fields(lines[0]); len(f) >= 2 {
			h.status, _ = strconv.Atoi(f[1])
		}
	}
	for _, l := range lines[min(1, len(lines)):] {
		name, value, ok := strings.Cut(strings.TrimRight(l, "\r"), ":")
		if !ok {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-type":
			if h.contentType == "" {
				h.contentType = value
			}
		case "content-encoding":
			if h.contentEnc == "" {
				h.contentEnc = value
			}
		}
	}
	return h
}

// revisit is a record that became a revisit, with what is known of it.
type revisit struct {
	rewrite
	rec      *stored    // the revisit as written
	was      *stored    // the response it replaced
	original *cdxj.Line // its original's index line after the run; nil when not indexed
	origRec  *stored
	line     *cdxj.Line // its own index line after the run; nil when not indexed
}

// ts is the 14-digit timestamp of the capture.
func (r *revisit) ts() string { return cdxj.Timestamp(r.rec.date) }

func (r *revisit) String() string {
	return fmt.Sprintf("%s %d: %s %s", r.file, r.newOffset, r.rec.uri, r.rec.date)
}

// archiveName is how a file of a collection is named in its WACZ and its
// index: the relative path, flattened.
func archiveName(rel string) string { return strings.ReplaceAll(rel, "/", "__") }

// isWARC tells the files ReplayWeb.page and warcio.js read.
func isWARC(rel string) bool {
	n := strings.ToLower(path.Base(rel))
	return strings.HasSuffix(n, ".warc") || strings.HasSuffix(n, ".warc.gz")
}

// revisits reads every rewritten record back, before and after, and joins
// it to the index of the collection after the run (lines named by
// archiveName): its own line and its original's.
func (c *collection) revisits(t *testing.T, after []cdxj.Line) []*revisit {
	t.Helper()
	type at struct {
		file   string
		offset int64
	}
	lineAt := map[at]*cdxj.Line{}
	byURLTS := map[string][]*cdxj.Line{}
	for i := range after {
		l := &after[i]
		lineAt[at{l.Filename, l.Offset}] = l
		if !l.IsRevisit() {
			byURLTS[l.URL+" "+l.Timestamp] = append(byURLTS[l.URL+" "+l.Timestamp], l)
		}
	}
	fileOf := map[string]string{}
	for _, f := range c.files {
		fileOf[archiveName(f)] = f
	}
	var out []*revisit
	for _, rw := range c.rewrites {
		r := &revisit{rewrite: rw}
		var err error
		if r.rec, err = readRecord(c.after(rw.file), rw.newOffset); err != nil {
			t.Fatalf("the revisit: %v", err)
		}
		if r.was, err = readRecord(c.before(rw.file), rw.oldOffset); err != nil {
			t.Fatalf("the record it replaced: %v", err)
		}
		if r.rec.typ != "revisit" || r.rec.uri != r.was.uri || r.rec.date != r.was.date {
			t.Fatalf("%s: %s %s %s at the new offset replaces %s %s %s", rw.file, r.rec.typ, r.rec.uri, r.rec.date, r.was.typ, r.was.uri, r.was.date)
		}
		r.line = lineAt[at{archiveName(rw.file), rw.newOffset}]
		if r.line == nil {
			// warcio.js places some records wrongly (the one after a dns:
			// response in NetarchiveSuite's WARC): find it by URL and date.
			for i := range after {
				l := &after[i]
				if l.Filename == archiveName(rw.file) && l.IsRevisit() && l.URL == r.rec.uri && l.Timestamp == r.ts() {
					r.line = l
				}
			}
		}
		// The record Refers-To names; of several captures in that second,
		// the one with the revisit's digest.
		for _, l := range byURLTS[r.rec.refURI+" "+cdxj.Timestamp(r.rec.refDate)] {
			if r.original == nil || cdxj.NormDigest(l.Digest) == cdxj.NormDigest(r.rec.digest) {
				r.original = l
			}
		}
		if r.original != nil {
			if r.origRec, err = readRecord(c.after(fileOf[r.original.Filename]), r.original.Offset); err != nil {
				t.Fatalf("the original of %s: %v", r, err)
			}
		}
		out = append(out, r)
	}
	return out
}
