package refs

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/record"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestRevisitGolden rewrites one response of each case, in a .warc and a
// .warc.gz file, and checks the revisit field by field against records.md
// section 2 and byte for byte against its golden file (go test -update
// rewrites them; check a rewritten one by hand against records.md).
func TestRevisitGolden(t *testing.T) {
	for _, tc := range rewritetest.GoldenCases {
		t.Run(tc.Name, func(t *testing.T) {
			rec := tc.Record()
			dir, out := t.TempDir(), filepath.Join(t.TempDir(), "out")
			warctest.WriteFile(t, dir, "r.warc", rec)
			warctest.WriteFile(t, dir, "r.warc.gz", warctest.Gzip(string(rec)))
			uri, _ := tc.Field("WARC-Target-URI")
			date, _ := tc.Field("WARC-Date")
			// The original, served the same way, in a file of its own.
			// It shares the record's WARC version: the replay policy keeps
			// pre-standard WARC/0.x files a container of their own.
			orig := strings.Replace(warctest.Record("response", tc.RefURI, rewritetest.GoldenRefDate, tc.Head+string(rewritetest.GoldenPayload)),
				"WARC/1.0", tc.Version, 1)
			warctest.WriteFile(t, dir, "o.warc", []byte(orig))
			d := rewritetest.FormatDigest(tc.Algo, rewritetest.GoldenPayload)
			lines := []manifest.Line{{File: "o.warc", Offset: 0, Length: int64(len(orig)), URI: tc.RefURI, Date: rewritetest.GoldenRefDate,
				Digest: d, Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}}
			for _, name := range []string{"r.warc", "r.warc.gz"} {
				st, err := os.Stat(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, manifest.Line{File: name, Offset: 0, Length: st.Size(), URI: manifest.URIField(&record.Record{URI: uri}), Date: date,
					Digest: d, Copy: 2, RefURI: tc.RefURI, RefDate: rewritetest.GoldenRefDate, Fields: 10})
			}
			o := mustRun(t, Rewriter{Roots: []string{dir}, OutputDir: out}, lines)
			if o.stats.Revisits != 2 {
				t.Fatalf("stats %+v, want 2 revisits", o.stats)
			}
			got, err := os.ReadFile(filepath.Join(out, "r.warc"))
			if err != nil {
				t.Fatal(err)
			}
			checkRevisitFields(t, &tc, got)

			gz, err := os.ReadFile(filepath.Join(out, "r.warc.gz"))
			if err != nil {
				t.Fatal(err)
			}
			br := bytes.NewReader(gz)
			zr, err := gzip.NewReader(br)
			if err != nil {
				t.Fatal(err)
			}
			zr.Multistream(false)
			member, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(member, got) {
				t.Errorf("the .warc.gz revisit decompresses to other bytes than the .warc one:\n%s", member)
			}
			if br.Len() != 0 {
				t.Errorf("the .warc.gz revisit is not one gzip member: %d bytes follow the first", br.Len())
			}

			golden := filepath.Join("testdata", "golden", tc.Golden)
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the revisit differs from %s:\n%s\nwant\n%s", golden, got, want)
			}
		})
	}
}

// checkRevisitFields checks a revisit against records.md section 2 without
// the record package: the header is split by hand.
func checkRevisitFields(t *testing.T, tc *rewritetest.GoldenCase, got []byte) {
	t.Helper()
	end := bytes.Index(got, []byte("\r\n\r\n"))
	if end < 0 {
		t.Fatalf("no blank line ends the header:\n%q", got)
	}
	header, block := got[:end+2], got[end+4:]
	for i, c := range header {
		if c == '\n' && (i == 0 || header[i-1] != '\r') || c == '\r' && (i+1 == len(header) || header[i+1] != '\n') {
			t.Errorf("the header has a bare CR or LF at byte %d", i)
		}
	}
	lines := strings.Split(strings.TrimSuffix(string(header), "\r\n"), "\r\n")
	if lines[0] != tc.Version {
		t.Errorf("version line %q, want %q", lines[0], tc.Version)
	}
	var names []string
	values := map[string]string{}
	for _, l := range lines[1:] {
		n, v, ok := strings.Cut(l, ": ")
		if !ok {
			t.Errorf("header line %q is not \"Name: value\"", l)
			continue
		}
		if _, dup := values[n]; dup {
			t.Errorf("field %s twice", n)
		}
		if n != fieldOriginalHeader && n != fieldAddedFields {
			names = append(names, n)
		} else if names[len(names)-1] != "WARC-Truncated" {
			t.Errorf("%s follows %s, want WARC-Truncated", n, names[len(names)-1])
		}
		values[n] = v
	}
	kept, keeps := values[fieldOriginalHeader]
	switch {
	case keeps != tc.KeepsHeader:
		t.Errorf("%s present: %v, want %v", fieldOriginalHeader, keeps, tc.KeepsHeader)
	case keeps:
		rec := tc.Record()
		header := rec[:bytes.Index(rec, []byte(tc.Head))]
		if got, err := unescapePercent(kept); err != nil || !bytes.Equal(got, header) {
			t.Errorf("%s holds\n%q (%v)\nwant the record's header\n%q", fieldOriginalHeader, got, err, header)
		}
	}
	if added, ok := values[fieldAddedFields]; ok != tc.AddsPayloadDigest || ok && added != "WARC-Payload-Digest" {
		t.Errorf("%s: %q (present: %v), want it to name WARC-Payload-Digest: %v", fieldAddedFields, added, ok, tc.AddsPayloadDigest)
	}
	if v, ok := values[fieldOriginalTrailer]; ok {
		t.Errorf("%s: %q, but the record ended in CRLF CRLF", fieldOriginalTrailer, v)
	}
	if strings.Join(names, "\n") != strings.Join(tc.WantOrder, "\n") {
		t.Errorf("fields\n  %s\nwant\n  %s", strings.Join(names, "\n  "), strings.Join(tc.WantOrder, "\n  "))
	}
	rep := tc.Placeholders()
	want := map[string]string{
		"WARC-Type":                 "revisit",
		"WARC-Profile":              "http://netpreserve.org/warc/" + strings.TrimPrefix(tc.Version, "WARC/") + "/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI": tc.RefURI,
		"WARC-Refers-To-Date":       rewritetest.GoldenRefDate,
		"WARC-Payload-Digest":       rep.Replace(tc.WantPayloadDigest),
		"WARC-Truncated":            "length",
		"Content-Length":            strconv.Itoa(len(tc.Head)),
	}
	if tc.WantBlockAlgo != 0 {
		want["WARC-Block-Digest"] = rewritetest.FormatDigest(tc.WantBlockAlgo, []byte(tc.Head))
	} else if v, ok := values["WARC-Block-Digest"]; ok {
		t.Errorf("WARC-Block-Digest %q, the response had none", v)
	}
	for _, f := range tc.Fields { // every other field unchanged
		n, _, _ := strings.Cut(f, ":")
		if _, changed := want[n]; !changed && n != "WARC-Block-Digest" {
			want[n], _ = tc.Field(n)
		}
	}
	for n, w := range want {
		if g, ok := values[n]; !ok || g != w {
			t.Errorf("%s: %q, want %q", n, g, w)
		}
	}
	if string(block) != tc.Head+"\r\n\r\n" {
		t.Errorf("block and record end\n%q\nwant the HTTP head byte for byte and CRLF CRLF\n%q", block, tc.Head+"\r\n\r\n")
	}
}

// The fields in which a revisit keeps what undo needs (revisit.Kept).
const (
	fieldAddedFields     = "Warcdedup-Added-Fields"
	fieldOriginalHeader  = "Warcdedup-Original-Header"
	fieldOriginalTrailer = "Warcdedup-Original-Trailer"
)

// unescapePercent decodes a field value whose bytes outside printable
// ASCII, and '%', are written %XX.
func unescapePercent(s string) ([]byte, error) {
	var b []byte
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) {
			return nil, fmt.Errorf("%q ends inside an escape", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return nil, err
		}
		b = append(b, byte(n))
		i += 2
	}
	return b, nil
}
