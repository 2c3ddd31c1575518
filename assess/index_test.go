package assess

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/policy"
	"warcdedup/report"
)

// cdxj is one warcio.js CDXJ line; an empty value leaves its key out.
func cdxj(url, ts, mime, status, digest string, length, offset int64, file string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s {", strings.ToLower(strings.TrimPrefix(url, "http://")), ts)
	sep := ""
	for _, kv := range [][2]string{{"url", url}, {"mime", mime}, {"status", status}, {"digest", digest},
		{"length", fmt.Sprint(length)}, {"offset", fmt.Sprint(offset)}, {"filename", file}} {
		if kv[1] == "" || kv[1] == "-1" {
			continue
		}
		fmt.Fprintf(&b, `%s"%s":"%s"`, sep, kv[0], kv[1])
		sep = ","
	}
	return b.String() + "}"
}

const (
	d1 = "B2LTWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A"
	d2 = "CCCCWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A"
	d3 = "DDDDWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A"
	d4 = "EEEEWWPUOYAH7UIPQ7ZUPQ4VMBSVC36A"
)

// indexFixture is two indexes of one collection, with a line of every
// kind the assessment tells apart.
func indexFixture(t *testing.T) (dir string, first, second string) {
	dir = t.TempDir()
	lines := []string{
		// d1: an original and two duplicates, one re-fetched, one under
		// another URL and spelt with its label in lower case.
		cdxj("http://a.example/x", "20240101000000", "text/html", "200", d1, 50000, 0, "f1.warc.gz"),
		cdxj("http://a.example/x", "20240201000000", "text/html", "200", d1, 50000, 0, "f2.warc.gz"),
		cdxj("http://c.example/y", "20240301000000", "text/html", "200", "sha1:"+strings.ToLower(d1), 50000, 60000, "f2.warc.gz"),
		// d2: a small logo fetched six times: its revisits would not be smaller.
		cdxj("http://b.example/logo.png", "20240101000001", "image/png", "200", d2, 300, 50000, "f1.warc.gz"),
		// d3: in an ARC file twice, and once in a WARC file.
		cdxj("http://d.example/photo.jpg", "20230101000000", "image/jpeg", "200", d3, 80000, 0, "old.arc.gz"),
		cdxj("http://d.example/photo.jpg", "20230201000000", "image/jpeg", "200", d3, 80000, 80000, "old.arc.gz"),
		cdxj("http://d.example/photo.jpg", "20240401000000", "image/jpeg", "200", d3, 80000, 200000, "f2.warc.gz"),
		// d4: the same bytes as text/plain and as application/json.
		cdxj("http://e.example/data", "20240101000002", "text/plain", "200", d4, 20000, 51000, "f1.warc.gz"),
		cdxj("http://e.example/data.json", "20240102000000", "application/json", "200", d4, 20000, 71000, "f1.warc.gz"),
		// Left out: a revisit, a 404, a line without digest.
		cdxj("http://a.example/x", "20240501000000", "warc/revisit", "200", d1, 600, 300000, "f2.warc.gz"),
		cdxj("http://a.example/missing", "20240101000003", "text/html", "404", d1, 50000, 91000, "f1.warc.gz"),
		cdxj("http://a.example/nodigest", "20240101000004", "text/html", "200", "", 700, 141000, "f1.warc.gz"),
		"this is no index line",
	}
	for i := range 5 {
		lines = append(lines, cdxj("http://b.example/logo.png", fmt.Sprintf("2024020%d000000", i+1), "image/png", "200", d2, 300, int64(400000+i*300), "f2.warc.gz"))
	}
	first = filepath.Join(dir, "one.cdxj")
	if err := os.WriteFile(first, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The second index, CDX11 and gzip, lists d1's original again.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	fmt.Fprintf(zw, " CDX N b a m s k r M S V g\nexample,a)/x 20240101000000 http://a.example/x text/html 200 %s - - 50000 0 f1.warc.gz\n", d1)
	zw.Close()
	second = filepath.Join(dir, "two.cdx.gz")
	if err := os.WriteFile(second, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, first, second
}

// TestIndex assesses the fixture under each policy and checks every
// figure against what the lines hold.
func TestIndex(t *testing.T) {
	rev := DefaultRevisitModel.Length(len("http://a.example/x"), true) // = that of http://c.example/y
	revD3 := DefaultRevisitModel.Length(len("http://d.example/photo.jpg"), true)
	revD4 := DefaultRevisitModel.Length(len("http://e.example/data.json"), true)
	type reason struct {
		prefix  string
		records int64
	}
	cases := []struct {
		policy         policy.Policy
		totals         report.Totals
		same, cross    int64 // duplicates
		reasons        []reason
		largestDigests []string
	}{
		{policy.Replay, report.Totals{Files: 3, Records: 14, Revisits: 1, Duplicates: 8, DuplicateBytes: 100000 + 1500 + 80000,
			RevisitsWritten: 2, BytesSaved: 2 * (50000 - rev), FilesRewritten: 1},
			7, 1, []reason{{"in an ARC file", 1}, {"its revisit would not be smaller", 5}, {"served differently", 2}},
			[]string{"sha1:" + d1, "sha1:" + d3, "sha1:" + d2}},
		{policy.Payload, report.Totals{Files: 3, Records: 14, Revisits: 1, Duplicates: 10, DuplicateBytes: 100000 + 1500 + 160000 + 20000,
			RevisitsWritten: 4, BytesSaved: 2*(50000-rev) + 80000 - revD3 + 20000 - revD4, FilesRewritten: 2},
			8, 2, []reason{{"in an ARC file", 1}, {"its revisit would not be smaller", 5}},
			[]string{"sha1:" + d3, "sha1:" + d1, "sha1:" + d4, "sha1:" + d2}},
	}
	for _, c := range cases {
		t.Run(c.policy.String(), func(t *testing.T) {
			dir, one, two := indexFixture(t)
			work := filepath.Join(dir, "work")
			res, err := Index(context.Background(), IndexOptions{Indexes: []string{one, two}, Dir: work, Policy: c.policy})
			if err != nil {
				t.Fatal(err)
			}
			rep := res.Report
			got := rep.Totals
			got.StoredBytes, got.RecordBytes = 0, 0
			if got != c.totals {
				t.Errorf("totals\n %+v, want\n %+v", got, c.totals)
			}
			if rep.SameURL.Duplicates != c.same || rep.CrossURL.Duplicates != c.cross {
				t.Errorf("same URL %d, cross URL %d duplicates, want %d and %d", rep.SameURL.Duplicates, rep.CrossURL.Duplicates, c.same, c.cross)
			}
			if len(rep.NotDeduplicable) != len(c.reasons) {
				t.Errorf("not deduplicable: %+v, want %v", rep.NotDeduplicable, c.reasons)
			}
			for i, r := range c.reasons {
				if i < len(rep.NotDeduplicable) && (!strings.HasPrefix(rep.NotDeduplicable[i].Why, r.prefix) || rep.NotDeduplicable[i].Records != r.records) {
					t.Errorf("reason %d: %+v, want %q for %d records", i, rep.NotDeduplicable[i], r.prefix, r.records)
				}
			}
			var digests []string
			for _, cl := range rep.LargestClasses {
				digests = append(digests, cl.Digest)
			}
			if strings.Join(digests, " ") != strings.Join(c.largestDigests, " ") {
				t.Errorf("largest classes %v, want %v (by duplicate bytes)", digests, c.largestDigests)
			}
			var saved, dups int64
			for _, b := range rep.ByMIME {
				saved += b.BytesSaved
				dups += b.Duplicates
			}
			if saved != got.BytesSaved || dups != got.Duplicates {
				t.Errorf("the MIME breakdown holds %d duplicates saving %d, the totals %d and %d", dups, saved, got.Duplicates, got.BytesSaved)
			}
			e := rep.Estimate
			if e == nil || e.BytesSaved != got.BytesSaved || !(e.BytesSavedLow < e.BytesSaved && e.BytesSaved < e.BytesSavedHigh) || e.Duplicates != got.Duplicates {
				t.Errorf("estimate %+v for %d bytes saved", e, got.BytesSaved)
			}
			// The bad line makes the exit status 1 and is named.
			if rep.Exit != 1 || !strings.Contains(strings.Join(rep.ExitReason, "\n"), one+": line 13: ") {
				t.Errorf("exit %d %q: want 1, naming %s line 13", rep.Exit, rep.ExitReason, one)
			}
			caveats := strings.Join(rep.Caveats, "\n")
			for _, want := range []string{"trusted, not verified", "1 revisit records", "1 lines of other records than 2xx", "1 lines without a payload digest", "1 lines of a record already listed"} {
				if !strings.Contains(caveats, want) {
					t.Errorf("caveats lack %q:\n%s", want, caveats)
				}
			}
			for _, f := range []string{"stats.json", "report.html"} {
				if fi, err := os.Stat(filepath.Join(work, f)); err != nil || fi.Size() == 0 {
					t.Errorf("%s not written: %v", f, err)
				}
			}
			if left, _ := filepath.Glob(filepath.Join(work, "tmp", "*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// TestIndexErrors checks the indexes that stop an assessment: named,
// nothing half written.
func TestIndexErrors(t *testing.T) {
	dir := t.TempDir()
	notGzip := filepath.Join(dir, "broken.cdxj.gz")
	os.WriteFile(notGzip, []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3}, 0o644)
	cases := []struct {
		name    string
		indexes []string
		want    string
	}{
		{"missing index", []string{filepath.Join(dir, "none.cdxj")}, "none.cdxj"},
		{"a directory", []string{dir}, "is a directory"},
		{"damaged gzip", []string{notGzip}, "broken.cdxj.gz"},
		{"nothing named", nil, "no index"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			work := filepath.Join(t.TempDir(), "work")
			_, err := Index(context.Background(), IndexOptions{Indexes: c.indexes, Dir: work})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one naming %q", err, c.want)
			}
		})
	}
}

// TestAppendDigest checks that the spellings of one digest meet.
func TestAppendDigest(t *testing.T) {
	cases := []struct{ in, want, algo string }{
		{d1, "sha1:" + d1, "sha1"},
		{"sha1:" + d1, "sha1:" + d1, "sha1"},
		{"SHA-1:" + strings.ToLower(d1), "sha1:" + d1, "sha1"},
		{"sha1:0e9739d9f4760fbd10f87f347c3cac60656a8b7c", "sha1:B2LTTWPUOYH32EHYP42HYPFMMBSWVC34", "sha1"},
		{"md5:9e107d9d372bb6826bd81d3542a419d6", "md5:9e107d9d372bb6826bd81d3542a419d6", "md5"},
		{"not a digest", "raw:not%20a%20digest", "unknown"},
	}
	for _, c := range cases {
		got, algo := appendDigest(nil, []byte(c.in))
		if string(got) != c.want || algo != c.algo {
			t.Errorf("%q: %q %s, want %q %s", c.in, got, algo, c.want, c.algo)
		}
	}
}
