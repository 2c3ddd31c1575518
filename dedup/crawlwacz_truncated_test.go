package dedup

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/warctest"
	"warcdedup/record"
	"warcdedup/workdir"
)

// TestImportedOriginalCutShortIsNoOriginal imports crawl-0, a WACZ
// package whose CDXJ lists as a 200 response a record its crawler cut
// short (WARC-Truncated, as Browsertrix writes them; or one segment of a
// record), with the payload digest of a whole payload that crawl-1 and
// crawl-2 hold complete: the index line cannot show that the record is
// cut short, and the import reads no WARC byte. The runs of crawl-1 and
// crawl-2 with the index must exit 0 (the operator did nothing wrong:
// the run exited 1, naming the original a stale manifest line), warn of
// the original naming its file and offset, and never point a revisit at
// it: crawl-1's first complete copy stays a response, the original its
// own later copy and crawl-2's copy become revisits of. Crawl-0's other
// original still serves crawl-1. index verify --deep finds no problem
// (it named the original), counting it as cut short.
func TestImportedOriginalCutShortIsNoOriginal(t *testing.T) {
	whole := noise("a large download", 8<<10)
	for _, tc := range []struct {
		name string
		// cut is crawl-0's record of the download: its header field
		// saying it is cut short, and the payload it holds.
		field, payload string
		gz             bool
		json           bool // imported from a multi-WACZ JSON, not as a WACZ file
	}{
		{"cut short by a length limit, gzip, imported as a WACZ file", "WARC-Truncated: length", whole[:len(whole)/3], true, false},
		{"cut short by a time limit, plain WARC, imported from a multi-WACZ JSON", "WARC-Truncated: time", whole, false, true},
		{"one segment of a record, gzip, imported as a WACZ file", "WARC-Segment-Number: 1", whole[:len(whole)/2], true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			index := filepath.Join(root, "index")
			small := noise("a page served to every crawl", 4<<10)
			warcName := func(crawl string) string {
				if tc.gz {
					return crawl + ".warc.gz"
				}
				return crawl + ".warc"
			}
			write := func(crawl string, records ...string) string {
				dir := filepath.Join(root, crawl)
				data := strings.Join(records, "")
				if tc.gz {
					data = string(warctest.Gzip(records...))
				}
				writePackage(t, dir, crawl+".wacz", map[string]string{warcName(crawl): data})
				return dir
			}
			const cutURI, cutDate = "http://example.com/big", "2024-01-01T00:00:00Z"
			dir0 := write("crawl-0",
				warctest.Record("response", cutURI, cutDate, warctest.HTTP(200, tc.payload), tc.field, "WARC-Payload-Digest: "+sha1Of(whole)),
				response("http://example.com/page", "2024-01-01T00:01:00Z", small))
			dirs := []string{dir0,
				write("crawl-1",
					response("http://example.com/big", "2024-02-01T00:00:00Z", whole),
					response("http://mirror.example.com/big", "2024-02-01T00:01:00Z", whole),
					response("http://example.com/page", "2024-02-01T00:02:00Z", small)),
				write("crawl-2",
					response("http://example.com/big", "2024-03-01T00:00:00Z", whole))}

			imp := ImportOptions{Index: index, Crawl: "crawl-0", CDX: []string{filepath.Join(dir0, "crawl-0.wacz")}}
			if tc.json {
				imp.Crawl, imp.CDX = "", []string{writeCrawlJSON(t, map[string]string{"crawl-0.wacz": dir0}, "crawl-0", "crawl-0.wacz")}
			}
			st, err := ImportCrawl(context.Background(), imp)
			if err != nil || st.Imported != 2 {
				t.Fatalf("import crawl-0: %+v %v: want both responses imported (the test proves nothing else)", st, err)
			}

			for i := 1; i < 3; i++ {
				opt := Options{Collections: []string{dirs[i]}, Crawl: "crawl-" + string(rune('0'+i)), Index: index, Jobs: 2, KeepWork: true}
				r := runOK(t, opt.Crawl, opt)
				if r.Report.Totals.RevisitsWritten == 0 {
					t.Fatalf("%s wrote no revisit: the test proves nothing", opt.Crawl)
				}
				log, err := os.ReadFile(filepath.Join(index, "work", opt.Crawl, workdir.RunLog))
				if err != nil {
					t.Fatal(err)
				}
				if want := "crawl-0/crawl-0.wacz: offset "; !strings.Contains(string(log), want) || !strings.Contains(string(log), strings.SplitN(tc.field, ":", 2)[0]) {
					t.Errorf("%s's run log does not warn of the original cut short (%q, %s):\n%s", opt.Crawl, want, tc.field, log)
				}
			}

			// What each revisit refers to, by the record it replaced.
			refers := map[string]string{}
			responses := map[string]bool{}
			for i, d := range dirs {
				eachRecord(t, d, func(pkg string, rec *record.Record, _ *record.Reader) {
					key := rec.URI + " " + rec.Date
					switch rec.Type {
					case "revisit":
						refers[key] = rec.Header.Get("WARC-Refers-To-Target-URI") + " " + rec.Header.Get("WARC-Refers-To-Date")
					case "response":
						if i > 0 {
							responses[key] = true
						}
					}
				})
			}
			want := map[string]string{
				"http://mirror.example.com/big 2024-02-01T00:01:00Z": "http://example.com/big 2024-02-01T00:00:00Z",
				"http://example.com/page 2024-02-01T00:02:00Z":       "http://example.com/page 2024-01-01T00:01:00Z",
				"http://example.com/big 2024-03-01T00:00:00Z":        "http://example.com/big 2024-02-01T00:00:00Z",
			}
			for rec, to := range want {
				if refers[rec] != to {
					t.Errorf("%s: a revisit of %q, want of %q", rec, refers[rec], to)
				}
			}
			for rec, to := range refers {
				if to == cutURI+" "+cutDate {
					t.Errorf("%s: a revisit of crawl-0's record cut short", rec)
				}
			}
			if !responses["http://example.com/big 2024-02-01T00:00:00Z"] || len(refers) != len(want) {
				t.Errorf("crawl-1's first whole copy is no response, or other revisits: %v", refers)
			}
			for _, p := range revisitsWithoutOriginal(t, dirs...) {
				t.Error(p)
			}

			for _, p := range verifyDeep(t, index) {
				t.Errorf("index verify --deep: %s", p)
			}
			out, err := exec.Command(binPath, "index", "verify", "--deep", "--index", index).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "1 original of imported crawls cut short or no response") || !strings.Contains(string(out), "note: crawl crawl-0: ") {
				t.Errorf("warcdedup index verify --deep: %v: want exit 0, the original cut short noted and counted\n%s", err, out)
			}
			ix, err := crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			var notes []string
			ost, err := VerifyOriginals(context.Background(), ix, "", func(p string) { t.Errorf("index verify --deep: %s", p) },
				func(n string) { notes = append(notes, n) })
			if err != nil || ost.NoOriginal != 1 || len(notes) != 1 || !strings.Contains(notes[0], "crawl-0.wacz: offset ") {
				t.Errorf("index verify --deep: %+v %v, notes %q: want the original cut short noted", ost, err, notes)
			}
		})
	}
}

// response is a complete WARC response of a 200 with payload, with its
// WARC-Payload-Digest, which a WACZ's CDXJ takes.
func response(uri, date, payload string) string {
	return warctest.Record("response", uri, date, warctest.HTTP(200, payload), "WARC-Payload-Digest: "+sha1Of(payload))
}

// noise is n bytes of text that gzip does not shrink much, seeded by
// seed: a revisit saves most of a record of it.
func noise(seed string, n int) string {
	var b strings.Builder
	sum := sha256.Sum256([]byte(seed))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(sum[:]))
		sum = sha256.Sum256(sum[:])
	}
	return b.String()[:n]
}

// sha1Of is the WARC-Payload-Digest of payload.
func sha1Of(payload string) string {
	sum := sha1.Sum([]byte(payload))
	return "sha1:" + base32.StdEncoding.EncodeToString(sum[:])
}
