package crawlindex

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/manifest"
)

// TestVerifyOriginalsNoOriginal proves how index verify --deep takes an
// original whose record is a response cut short (WARC-Truncated), a
// segment, or a whole record of another kind than a response (jwarc's
// cdx lists resource records as 200 captures), where the payload digest
// cannot be taken: of a crawl imported
// from index lines, which cannot show it, a note naming its file and
// offset, counted apart and no problem (the operator has nothing to
// mend; runs leave it out); of a crawl a run committed, which never
// commits one, a problem (its file is not what the run read). A record
// found wanting for another reason stays a problem either way.
func TestVerifyOriginalsNoOriginal(t *testing.T) {
	const uri, date = "http://example.com/big", "2024-01-01T00:00:00Z"
	body := warctest.HTTP(200, strings.Repeat("a download ", 300))
	for _, tc := range []struct {
		name     string
		record   string
		imported bool
		cut      string // what the note names, "" for a problem
	}{
		{"imported, WARC-Truncated", warctest.Record("response", uri, date, body, "WARC-Truncated: length"), true, "WARC-Truncated: length"},
		{"imported, WARC-Segment-Number", warctest.Record("response", uri, date, body, "WARC-Segment-Number: 1"), true, "WARC-Segment-Number: 1"},
		{"imported, a metadata record", warctest.Record("metadata", uri, date, body), true, `a "metadata" record`},
		{"imported, a resource record", warctest.Record("resource", uri, date, body), true, `a "resource" record`},
		{"imported, a revisit record: what a file changed since shows", warctest.Record("revisit", uri, date, body), true, ""},
		{"committed by a run, WARC-Truncated", warctest.Record("response", uri, date, body, "WARC-Truncated: length"), false, ""},
		{"committed by a run, a resource record", warctest.Record("resource", uri, date, body), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, files := t.TempDir(), t.TempDir()
			data := warctest.Gzip(tc.record)
			warctest.WriteFile(t, files, "f.warc.gz", data)
			lines := filepath.Join(dir, "c0.originals")
			l := manifest.Line{File: "c0/f.warc.gz", Offset: 0, Length: int64(len(data)), URI: uri, Date: date, Digest: digestOf('A', 1), Fields: 6}
			if err := os.WriteFile(lines, l.Append(nil), 0o644); err != nil {
				t.Fatal(err)
			}
			ix, err := Commit(filepath.Join(dir, "index"), Change{Add: &Crawl{Name: "c0", Location: files, Imported: tc.imported},
				Files: []FileInfo{{Name: "f.warc.gz", Size: int64(len(data))}}, Originals: lines})
			if err != nil {
				t.Fatal(err)
			}
			var problems, notes []string
			st, err := ix.VerifyOriginals(context.Background(), OriginalsCheck{TempDir: t.TempDir(),
				// One line: sorted as it is.
				Sort: func(ctx context.Context, command, in, out string) error {
					data, err := os.ReadFile(in)
					if err != nil {
						return err
					}
					return os.WriteFile(out, data, 0o644)
				},
				// As dedup's, which lists no response cut short: no
				// digest for any of these records.
				Digest: func(r io.Reader, name, want string) (string, error) {
					io.Copy(io.Discard, r)
					return "", errors.New("no response with an HTTP payload is there")
				},
				Note: func(n string) { notes = append(notes, n) }},
				func(p string) { problems = append(problems, p) })
			if err != nil {
				t.Fatal(err)
			}
			if st.Originals != 1 {
				t.Fatalf("%d originals read, want 1", st.Originals)
			}
			if tc.cut == "" {
				if st.Problems != 1 || len(problems) != 1 || st.NoOriginal != 0 || len(notes) > 0 {
					t.Errorf("problems %q (%d), notes %q (%d cut short): want one problem", problems, st.Problems, notes, st.NoOriginal)
				}
				return
			}
			if st.Problems != 0 || len(problems) > 0 || st.NoOriginal != 1 || len(notes) != 1 ||
				!strings.Contains(notes[0], "f.warc.gz: offset 0: ") || !strings.Contains(notes[0], tc.cut) {
				t.Errorf("problems %q (%d), notes %q (%d cut short): want one note naming the file, offset and %s", problems, st.Problems, notes, st.NoOriginal, tc.cut)
			}
		})
	}
}
