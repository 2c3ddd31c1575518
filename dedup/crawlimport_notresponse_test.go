package dedup

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"warcdedup/crawlindex"

	"warcdedup/internal/warctest"
	"warcdedup/record"
	"warcdedup/workdir"
)

// TestImportedOriginalNotAResponseIsNoOriginal imports crawl-0 from a
// CDX index (CDX N b a m s k r M S V g) that lists, beside a response, a
// record that is no HTTP response as a 200 capture with a SHA-1 digest:
// jwarc's cdx tool (iipc/jwarc CdxFormat) gives every record it indexes
// that is no response, resource records among them, status 200 and the
// MIME type of their payload; ArchiveWeb.page and Browsertrix write
// resource records of urn: URLs (a page's text, its screenshot), wget
// and Heritrix of metadata:, dns: and ftp: URLs. Crawl-1 holds two HTTP
// responses with that record's payload. Its run with the index must
// exit 0 (it exited 1, naming the imported line a stale manifest line:
// "the record is not the HTTP response the line names"), never point a
// revisit at the record, and keep crawl-1's first copy a response its
// second is a revisit of. A line whose URL cannot be an HTTP response's
// is not imported; one the index line cannot tell (an http: resource)
// is, and the run leaves it out with a warning naming its file and
// offset. Crawl-0's response still serves crawl-1.
func TestImportedOriginalNotAResponseIsNoOriginal(t *testing.T) {
	doc := noise("a document every crawl fetched", 8<<10)
	small := noise("a page served to every crawl", 4<<10)
	const date0, ts0 = "2024-01-01T00:00:00Z", "20240101000000"
	for _, tc := range []struct {
		name string
		// first is crawl-0's first record, the one that is no response;
		// its CDX line gives it uri, mime and status 200.
		first, uri, mime string
		imported         int64 // the lines the import takes
		warned           bool  // the run warns of the original left out
		compareInResolve bool  // the run compares the copies in its resolve stage
	}{
		{"a resource record of an http URL, status 200 as jwarc writes it: imported, left out by the run",
			warctest.Record("resource", "http://example.com/doc.pdf", date0, doc, "Content-Type: application/pdf", "WARC-Payload-Digest: "+sha1Of(doc)),
			"http://example.com/doc.pdf", "application/pdf", 2, true, false},
		{"a resource record of an http URL, status 200 as jwarc writes it, the copies compared in resolve: imported, left out by the run",
			warctest.Record("resource", "http://example.com/doc.pdf", date0, doc, "Content-Type: application/pdf", "WARC-Payload-Digest: "+sha1Of(doc)),
			"http://example.com/doc.pdf", "application/pdf", 2, true, true},
		{"a metadata record of an http URL given status 200: imported, left out by the run",
			warctest.Record("metadata", "http://example.com/doc.pdf", date0, doc, "Content-Type: text/plain", "WARC-Payload-Digest: "+sha1Of(doc)),
			"http://example.com/doc.pdf", "text/plain", 2, true, false},
		{"a request record of an http URL given status 200: imported, left out by the run",
			warctest.Record("request", "http://example.com/doc.pdf", date0, doc, "Content-Type: application/http; msgtype=request", "WARC-Payload-Digest: "+sha1Of(doc)),
			"http://example.com/doc.pdf", "text/plain", 2, true, false},
		{"a resource record of a urn:text: URL (a page's text, as ArchiveWeb.page writes it): not imported",
			warctest.Record("resource", "urn:text:20240101000000/http://example.com/", date0, doc, `Content-Type: text/plain; charset="UTF-8"`, "WARC-Payload-Digest: "+sha1Of(doc)),
			"urn:text:20240101000000/http://example.com/", "text/plain", 1, false, false},
		{"a resource record of a metadata: URL (wget's arguments): not imported",
			warctest.Record("resource", "metadata://gnu.org/software/wget/warc/wget_arguments.txt", date0, doc, "Content-Type: text/plain", "WARC-Payload-Digest: "+sha1Of(doc)),
			"metadata://gnu.org/software/wget/warc/wget_arguments.txt", "text/plain", 1, false, false},
		{"a resource record of an ftp URL (as Heritrix and wget write them): not imported",
			warctest.Record("resource", "ftp://ftp.example.com/doc.pdf", date0, doc, "Content-Type: application/pdf", "WARC-Payload-Digest: "+sha1Of(doc)),
			"ftp://ftp.example.com/doc.pdf", "application/pdf", 1, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			index := filepath.Join(root, "index")
			dir0, dir1 := filepath.Join(root, "crawl-0"), filepath.Join(root, "crawl-1")
			page := response("http://example.com/page", "2024-01-01T00:01:00Z", small)
			warctest.WriteFile(t, dir0, "crawl-0.warc", []byte(tc.first+page))
			warctest.WriteFile(t, dir1, "crawl-1.warc", []byte(
				response("http://example.com/doc", "2024-02-01T00:00:00Z", doc)+
					response("http://mirror.example.com/doc", "2024-02-01T00:01:00Z", doc)+
					response("http://example.com/page", "2024-02-01T00:02:00Z", small)))
			cdx := filepath.Join(root, "crawl-0.cdx")
			lines := " CDX N b a m s k r M S V g\n" +
				fmt.Sprintf("key %s %s %s 200 %s - - %d 0 crawl-0.warc\n", ts0, tc.uri, tc.mime, strings.TrimPrefix(sha1Of(doc), "sha1:"), len(tc.first)) +
				fmt.Sprintf("key 20240101000100 http://example.com/page text/html 200 %s - - %d %d crawl-0.warc\n", strings.TrimPrefix(sha1Of(small), "sha1:"), len(page), len(tc.first))
			if err := os.WriteFile(cdx, []byte(lines), 0o644); err != nil {
				t.Fatal(err)
			}
			st, err := ImportCrawl(context.Background(), ImportOptions{Index: index, Crawl: "crawl-0", Location: dir0, CDX: []string{cdx}, Warn: func(error) {}})
			if err != nil || st.Imported != tc.imported {
				t.Fatalf("import crawl-0: %+v %v: want %d lines imported", st, err, tc.imported)
			}

			r := runOK(t, "crawl-1", Options{Collections: []string{dir1}, Crawl: "crawl-1", Index: index, Jobs: 2, KeepWork: true, CompareInResolve: tc.compareInResolve})
			if r.Report.Totals.RevisitsWritten != 2 {
				t.Errorf("crawl-1 wrote %d revisits, want 2 (its second copy of the document, its page)", r.Report.Totals.RevisitsWritten)
			}
			log, err := os.ReadFile(filepath.Join(index, "work", "crawl-1", workdir.RunLog))
			if err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(string(log), "crawl-0/crawl-0.warc: offset 0:"); warned != tc.warned {
				t.Errorf("crawl-1's run log warns of crawl-0's record at offset 0: %v, want %v:\n%s", warned, tc.warned, log)
			}

			refers := map[string]string{}
			eachFileRecord(t, filepath.Join(dir1, "crawl-1.warc"), func(rec *record.Record, _ *record.Reader) {
				if rec.Type == "revisit" {
					refers[rec.URI] = rec.Header.Get("WARC-Refers-To-Target-URI") + " " + rec.Header.Get("WARC-Refers-To-Date")
				}
			})
			want := map[string]string{
				"http://mirror.example.com/doc": "http://example.com/doc 2024-02-01T00:00:00Z",
				"http://example.com/page":       "http://example.com/page 2024-01-01T00:01:00Z",
			}
			if len(refers) != len(want) {
				t.Errorf("crawl-1's revisits: %v, want %v", refers, want)
			}
			for uri, to := range want {
				if refers[uri] != to {
					t.Errorf("%s: a revisit of %q, want of %q", uri, refers[uri], to)
				}
			}
			// index verify --deep: the record imported as an original
			// noted, no problem.
			ix, err := crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			ost, err := VerifyOriginals(context.Background(), ix, "", func(p string) { t.Errorf("index verify --deep: %s", p) },
				func(n string) { notes = append(notes, n) })
			if want := map[bool]int64{true: 1}[tc.warned]; err != nil || ost.NoOriginal != want || int64(len(notes)) != want {
				t.Errorf("index verify --deep: %+v %v, notes %q: want %d no original noted", ost, err, notes, want)
			}
		})
	}
}

// TestImportLeavesOutWgetResourcesOfStatus200 imports the CDX index of a
// WARC file wget wrote (OutbackCDX's test data: a response and wget's
// metadata: resource records, MANIFEST.txt and wget_arguments.txt, with
// SHA-1 digests), their status 200 as jwarc's cdx tool writes it (the
// index as shipped gives them "-"): only the response may become an
// original, each resource line left out, named with its line.
func TestImportLeavesOutWgetResourcesOfStatus200(t *testing.T) {
	const dir = "../../shared/corpus/nla+outbackcdx/test-integration"
	shipped, err := os.ReadFile(filepath.Join(dir, "test1.cdx"))
	if os.IsNotExist(err) {
		t.Skip("no corpus")
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		status string // the resource lines' status
	}{
		{"resource lines of status 200, as jwarc writes them", "200"},
		{"resource lines as shipped, of status -", "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cdx := strings.ReplaceAll(string(shipped), " text/plain - ", " text/plain "+tc.status+" ")
			if strings.Count(cdx, "metadata://") != 2 || strings.Count(cdx, " text/plain "+tc.status+" ") != 2 {
				t.Fatalf("the corpus index is not the one this test knows:\n%s", cdx)
			}
			name := filepath.Join(t.TempDir(), "test1.cdx")
			if err := os.WriteFile(name, []byte(cdx), 0o644); err != nil {
				t.Fatal(err)
			}
			var left []string
			st, err := ImportCrawl(context.Background(), ImportOptions{Index: filepath.Join(t.TempDir(), "index"), Crawl: "wget", Location: dir, CDX: []string{name},
				Warn: func(err error) { left = append(left, err.Error()) }})
			if err != nil || st.Imported != 1 || st.Skipped != 2 || len(left) != 2 {
				t.Fatalf("import: %+v %v: want the response alone imported, the 2 resource lines left out", st, err)
			}
			for _, l := range left {
				if !strings.Contains(l, "test1.cdx: line ") || !strings.Contains(l, "left out") {
					t.Errorf("%q: want the line named, and left out", l)
				}
			}
		})
	}
}
