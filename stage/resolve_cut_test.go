package stage

import (
	"context"
	"crypto/sha1"
	"encoding/base32"
	"os"
	"strings"
	"testing"

	"warcdedup/internal/progress"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/source"
	"warcdedup/workdir"
)

// TestResolveLeavesOutOriginalsCutShort proves what the resolution does
// with a crawl index's committed original that is a response cut short
// (WARC-Truncated) or a segment, or a record that is never an HTTP
// response (resource, metadata, request), which an imported crawl's CDX
// lines cannot show: it is left out with a warning naming its file and
// offset, not as a stale line (no error, no exit reason), and the
// crawl's own copy is numbered the original. It proves too that the
// resolution still calls stale what is: an original whose payload is
// not its digest, a revisit or warcinfo record where an original was
// (its file changed), and a line of the crawl's own naming a record cut
// short or a resource (the hash stage never lists one: its file
// changed).
func TestResolveLeavesOutOriginalsCutShort(t *testing.T) {
	payload := strings.Repeat("a download ", 500)
	other := strings.Repeat("another download ", 300)
	digest := sha1Digest(payload)
	const uri = "http://example.com/big"
	rec := func(date, body string, extra ...string) string {
		return warctest.Record("response", uri, date, warctest.HTTP(200, body), extra...)
	}
	for _, tc := range []struct {
		name string
		// files are the collection's files, one record each, named by
		// the file; old/ is the committed crawl's.
		files map[string]string
		gz    bool
		// stale is the file whose line must be stale, "" for none;
		// cut the original that must be left out as cut short.
		stale, cut string
		copy1      string // the file numbered copy 1
	}{
		{"a committed original cut short by a length limit", map[string]string{
			"old/a.warc": rec("2024-01-01T00:00:00Z", payload[:1000], "WARC-Truncated: length"),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "", "old/a.warc", "new/b.warc"},
		{"a committed original cut short, gzip", map[string]string{
			"old/a.warc.gz": rec("2024-01-01T00:00:00Z", payload, "WARC-Truncated: time"),
			"new/b.warc.gz": rec("2024-02-01T00:00:00Z", payload)}, true, "", "old/a.warc.gz", "new/b.warc.gz"},
		{"a committed original that is a segment", map[string]string{
			"old/a.warc": rec("2024-01-01T00:00:00Z", payload[:2000], "WARC-Segment-Number: 1"),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "", "old/a.warc", "new/b.warc"},
		{"a committed original whose payload is not its digest: stale", map[string]string{
			"old/a.warc": rec("2024-01-01T00:00:00Z", other),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "old/a.warc", "", "new/b.warc"},
		{"the crawl's own line naming a record cut short: stale", map[string]string{
			"old/a.warc": rec("2024-01-01T00:00:00Z", payload),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload, "WARC-Truncated: length")}, false, "new/b.warc", "", "old/a.warc"},
		{"a committed original that is a resource record (jwarc's cdx gives it status 200)", map[string]string{
			"old/a.warc": warctest.Record("resource", uri, "2024-01-01T00:00:00Z", payload, "Content-Type: application/pdf"),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "", "old/a.warc", "new/b.warc"},
		{"a committed original that is a metadata record, gzip", map[string]string{
			"old/a.warc.gz": warctest.Record("metadata", uri, "2024-01-01T00:00:00Z", payload, "Content-Type: text/plain"),
			"new/b.warc.gz": rec("2024-02-01T00:00:00Z", payload)}, true, "", "old/a.warc.gz", "new/b.warc.gz"},
		{"a committed original that is a request record", map[string]string{
			"old/a.warc": warctest.Record("request", uri, "2024-01-01T00:00:00Z", "GET /big HTTP/1.1\r\nHost: example.com\r\n\r\n", "Content-Type: application/http; msgtype=request"),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "", "old/a.warc", "new/b.warc"},
		{"a committed original that is a revisit (its file changed): stale", map[string]string{
			"old/a.warc": warctest.Record("revisit", uri, "2024-01-01T00:00:00Z", warctest.HTTP(200, ""), "WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "old/a.warc", "", "new/b.warc"},
		{"a committed original that is a warcinfo record (its file changed): stale", map[string]string{
			"old/a.warc": warctest.Record("warcinfo", uri, "2024-01-01T00:00:00Z", "software: x\r\n", "Content-Type: application/warc-fields"),
			"new/b.warc": rec("2024-02-01T00:00:00Z", payload)}, false, "old/a.warc", "", "new/b.warc"},
		{"the crawl's own line naming a resource record: stale", map[string]string{
			"old/a.warc": rec("2024-01-01T00:00:00Z", payload),
			"new/b.warc": warctest.Record("resource", uri, "2024-02-01T00:00:00Z", payload)}, false, "new/b.warc", "", "old/a.warc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for name, r := range tc.files {
				if tc.gz {
					r = string(warctest.Gzip(r))
				}
				files[name] = r
			}
			j := newJob(t, files)
			out, err := os.Create(j.file(workdir.BeforeFile))
			if err != nil {
				t.Fatal(err)
			}
			w := manifest.NewWriter(out)
			for name, data := range files {
				date := "2024-02-01T00:00:00Z"
				if strings.HasPrefix(name, "old/") {
					date = "2024-01-01T00:00:00Z"
				}
				if err := w.Write(&manifest.Line{File: name, Offset: 0, Length: int64(len(data)), URI: uri, Date: date, Digest: digest, Fields: 6}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			out.Close()
			j.sortFile(workdir.BeforeFile, workdir.ByDigestFile, manifest.ByDigest.Command)
			loc := (&source.Locator{Roots: []string{j.coll}}).Files(source.KeptOpen)
			defer loc.Close()
			res, err := (&Resolve{In: j.reader(workdir.ByDigestFile), Out: j.file(workdir.NumberedFile), Source: loc, Jobs: 2,
				Kept:  func(l *manifest.Line) bool { return strings.HasPrefix(l.File, "old/") },
				Total: 2, Messages: j.msgs, Meter: progress.Discard}).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if tc.stale == "" {
				if res.Stats.Stale != 0 || len(res.Reasons()) > 0 || len(j.msgs.errors) > 0 {
					t.Errorf("stale lines: %d, reasons %q, errors %q; want none", res.Stats.Stale, res.Reasons(), j.msgs.errors)
				}
			} else if res.Stats.Stale != 1 || len(res.Reasons()) == 0 || len(j.msgs.errors) != 1 || !strings.Contains(j.msgs.errors[0], tc.stale+": offset 0: stale") {
				t.Errorf("stale lines: %d, reasons %q, errors %q; want %s stale", res.Stats.Stale, res.Reasons(), j.msgs.errors, tc.stale)
			}
			if tc.cut == "" {
				if res.NoOriginal != 0 || len(j.msgs.warns) > 0 {
					t.Errorf("%d originals cut short, warnings %q; want none", res.NoOriginal, j.msgs.warns)
				}
			} else if res.NoOriginal != 1 || len(j.msgs.warns) != 1 || !strings.Contains(j.msgs.warns[0], tc.cut+": offset 0: ") {
				t.Errorf("%d originals cut short, warnings %q; want %s warned of", res.NoOriginal, j.msgs.warns, tc.cut)
			}
			lines := j.lines(workdir.NumberedFile)
			if len(lines) != 1 || lines[0].File != tc.copy1 || !lines[0].IsKept() {
				t.Errorf("numbered: %+v, want %s alone, copy 1", lines, tc.copy1)
			}
		})
	}
}

// sha1Digest is a manifest's SHA-1 digest of payload.
func sha1Digest(payload string) string {
	sum := sha1.Sum([]byte(payload))
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}
