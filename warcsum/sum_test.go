package warcsum

import (
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base32"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
)

// warcRecord and httpResponse build test records.
var (
	warcRecord   = warctest.Record
	httpResponse = warctest.HTTP
)

func sha1Base32(s string) string {
	sum := sha1.Sum([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])
}

func sum(t *testing.T, o Options, file string) ([]manifest.Line, Stats) {
	t.Helper()
	var lines []manifest.Line
	st, err := NewSummer(o).SumFile(strings.NewReader(file), "test.warc", func(l *manifest.Line) error {
		lines = append(lines, *l)
		return nil
	})
	if err != nil {
		t.Fatalf("SumFile: %v", err)
	}
	return lines, st
}

// TestCandidates proves which records are listed (records.md section 1).
func TestCandidates(t *testing.T) {
	const d = "2024-01-02T03:04:05Z"
	tests := []struct {
		name   string
		opt    Options
		record string
		listed bool
		skip   Skip
	}{
		{"200 response is listed", Options{}, warcRecord("response", "http://a/", d, httpResponse(200, "x")), true, 0},
		{"request is not", Options{}, warcRecord("request", "http://a/", d, "GET / HTTP/1.1\r\n\r\n"), false, SkipNotResponse},
		{"revisit is not, with responses only", Options{ResponsesOnly: true}, warcRecord("revisit", "http://a/", d, httpResponse(200, "")), false, SkipRevisit},
		{"resource is not", Options{}, warcRecord("resource", "http://a/", d, "x"), false, SkipNotResponse},
		{"404 is not, by default", Options{}, warcRecord("response", "http://a/", d, httpResponse(404, "x")), false, SkipStatus},
		{"404 is with all statuses", Options{AllStatuses: true}, warcRecord("response", "http://a/", d, httpResponse(404, "x")), true, 0},
		{"301 is not, by default", Options{}, warcRecord("response", "http://a/", d, httpResponse(301, "")), false, SkipStatus},
		{"206 never is", Options{AllStatuses: true}, warcRecord("response", "http://a/", d, httpResponse(206, "x")), false, SkipPartial},
		{"truncated is not", Options{}, warcRecord("response", "http://a/", d, httpResponse(200, "x"), "WARC-Truncated: length"), false, SkipTruncated},
		{"segmented is not", Options{}, warcRecord("response", "http://a/", d, httpResponse(200, "x"), "WARC-Segment-Number: 1"), false, SkipSegmented},
		{"non-HTTP response is not", Options{}, warcRecord("response", "dns:a", d, "20240102030405\na. 60 IN A 1.2.3.4\n"), false, SkipNotHTTP},
		{"HTTP head without end is not", Options{}, warcRecord("response", "http://a/", d, "HTTP/1.1 200 OK\r\nServer: x\r\n"), false, SkipHTTPHead},
		{"no target URI is not", Options{}, warcRecord("response", "", d, httpResponse(200, "x")), false, SkipNoURI},
		{"no date is not", Options{}, warcRecord("response", "http://a/", "", httpResponse(200, "x")), false, SkipNoDate},
		{"empty payload is listed by default", Options{}, warcRecord("response", "http://a/", d, httpResponse(200, "")), true, 0},
		{"empty payload is not with skip-empty", Options{SkipEmpty: true}, warcRecord("response", "http://a/", d, httpResponse(200, "")), false, SkipEmpty},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, st := sum(t, tt.opt, tt.record)
			if got := len(lines) == 1; got != tt.listed {
				t.Fatalf("listed %d lines, want listed=%v", len(lines), tt.listed)
			}
			if !tt.listed && st.Skipped[tt.skip] != 1 {
				t.Errorf("skip counts %v, want one %q", st.Skipped, tt.skip)
			}
			if st.Records != 1 || st.Damaged != 0 {
				t.Errorf("records %d damaged %d, want 1 and 0", st.Records, st.Damaged)
			}
		})
	}
}

// TestRevisitLine proves how an existing revisit is listed: ext -1, copy 0,
// what it refers to, and its digest only when it is in the run's algorithm
// (else "-", so that the later stages hold it apart from the clusters).
func TestRevisitLine(t *testing.T) {
	const d = "2024-01-02T03:04:05Z"
	sha1Digest := "sha1:" + sha1Base32("x")
	tests := []struct {
		name   string
		opt    Options
		extra  []string
		digest string
		refURI string
		refDat string
	}{
		{"both Refers-To fields", Options{},
			[]string{"WARC-Payload-Digest: " + sha1Digest, "WARC-Refers-To-Target-URI: <http://o/ x>", "WARC-Refers-To-Date: 2020-01-01T00:00:00Z"},
			sha1Digest, "http://o/%20x", "2020-01-01T00:00:00Z"},
		{"no Refers-To: its own URI, any date", Options{},
			[]string{"WARC-Payload-Digest: " + sha1Digest},
			sha1Digest, "http://a/", "*"},
		{"digest in another algorithm", Options{Algorithm: digest.SHA256},
			[]string{"WARC-Payload-Digest: " + sha1Digest, "WARC-Refers-To-Target-URI: http://o/", "WARC-Refers-To-Date: 2020-01-01T00:00:00Z"},
			"-", "http://o/", "2020-01-01T00:00:00Z"},
		{"no digest", Options{},
			[]string{"WARC-Refers-To-Target-URI: http://o/", "WARC-Refers-To-Date: 2020-01-01T00:00:00Z"},
			"-", "http://o/", "2020-01-01T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, st := sum(t, tt.opt, warcRecord("revisit", "http://a/", d, "HTTP/1.1 200 OK\r\n\r\n", tt.extra...))
			if len(lines) != 1 {
				t.Fatalf("listed %d lines, want 1", len(lines))
			}
			l := lines[0]
			if !l.IsRevisit() || l.Digest != tt.digest || l.RefURI != tt.refURI || l.RefDate != tt.refDat || l.URI != "http://a/" || l.Date != d {
				t.Errorf("line %q, want a revisit line of %s referring to %s %s", l.String(), tt.digest, tt.refURI, tt.refDat)
			}
			if _, err := manifest.Parse([]byte(l.String())); err != nil {
				t.Errorf("the line does not parse back: %v", err)
			}
			if st.Revisits != 1 || (st.RevisitsWithoutDigest == 1) != (tt.digest == "-") {
				t.Errorf("revisits %d, without digest %d", st.Revisits, st.RevisitsWithoutDigest)
			}
		})
	}
}

// TestLine proves the fields of a listed line: offset and length as stored,
// the URI escaped and unwrapped, the date verbatim, and the payload digest
// over the entity body as stored in each algorithm.
func TestLine(t *testing.T) {
	body := "chunked?\r\n0\r\n\r\n"
	rec0 := warcRecord("warcinfo", "", "2024-01-01T00:00:00Z", "software: test\r\n")
	rec1 := warcRecord("response", "<http://a/b c>", "2024-01-02T03:04:05Z", httpResponse(200, body))
	file := rec0 + rec1
	tests := []struct {
		algo digest.Algorithm
		want string
	}{
		{digest.MD5, fmt.Sprintf("md5:%x", md5.Sum([]byte(body)))},
		{digest.SHA1, "sha1:" + sha1Base32(body)},
		{digest.SHA256, "sha256:" + hex.EncodeToString(func() []byte { s := sha256.Sum256([]byte(body)); return s[:] }())},
		{digest.SHA512, "sha512:" + hex.EncodeToString(func() []byte { s := sha512.Sum512([]byte(body)); return s[:] }())},
	}
	for _, tt := range tests {
		t.Run(tt.algo.String(), func(t *testing.T) {
			lines, _ := sum(t, Options{Algorithm: tt.algo}, file)
			want := manifest.Line{File: "test.warc", Offset: int64(len(rec0)), Length: int64(len(rec1)),
				URI: "http://a/b%20c", Date: "2024-01-02T03:04:05Z", Digest: tt.want, Fields: 6}
			if len(lines) != 1 || lines[0] != want {
				t.Errorf("got %v\nwant %q", lines, want.String())
			}
		})
	}
}

// TestHeaderDigest proves that a wrong WARC-Payload-Digest is counted and
// never listed, in any spelling, unless the user chose to trust headers.
func TestHeaderDigest(t *testing.T) {
	body := "payload"
	right := sha1Base32(body)
	wrong := sha1Base32("other")
	sha256Right := func() string { s := sha256.Sum256([]byte(body)); return hex.EncodeToString(s[:]) }()
	tests := []struct {
		name     string
		opt      Options
		header   string
		digest   string
		disagree int64
	}{
		{"right digest agrees", Options{}, "sha1:" + right, "sha1:" + right, 0},
		{"right digest in lower case and SHA-1 label agrees", Options{}, "SHA-1:" + strings.ToLower(right), "sha1:" + right, 0},
		{"wrong digest is counted, computed one listed", Options{}, "sha1:" + wrong, "sha1:" + right, 1},
		{"wrong digest is listed when trusted", Options{TrustHeader: true}, "sha1:" + wrong, "sha1:" + wrong, 0},
		{"digest of another algorithm is checked too", Options{}, "sha256:" + sha256Right, "sha1:" + right, 0},
		{"wrong digest of another algorithm is counted", Options{}, "sha256:" + strings.Repeat("0", 64), "sha1:" + right, 1},
		{"trusting ignores another algorithm", Options{TrustHeader: true}, "sha256:" + sha256Right, "sha1:" + right, 0},
		{"undecodable digest is counted", Options{}, "sha1:not-a-digest", "sha1:" + right, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var warned []error
			tt.opt.Warn = func(err error) { warned = append(warned, err) }
			rec := warcRecord("response", "http://a/", "2024-01-02T03:04:05Z", httpResponse(200, body), "WARC-Payload-Digest: "+tt.header)
			lines, st := sum(t, tt.opt, rec)
			if len(lines) != 1 || lines[0].Digest != tt.digest {
				t.Fatalf("lines %v, want digest %s", lines, tt.digest)
			}
			if st.Disagreements != tt.disagree || int64(len(warned)) != tt.disagree {
				t.Errorf("disagreements %d, warnings %v; want %d", st.Disagreements, warned, tt.disagree)
			}
			for _, w := range warned {
				if !strings.Contains(w.Error(), "test.warc: offset 0") {
					t.Errorf("warning %q does not name file and offset", w)
				}
			}
		})
	}
}

// TestRunOrder proves that output order does not depend on the number of
// jobs, also when a file's lines spill from memory to a temporary file.
func TestRunOrder(t *testing.T) {
	dir := t.TempDir()
	for i := range 7 {
		var b strings.Builder
		for j := range 20 + 10*i {
			b.WriteString(warcRecord("response", fmt.Sprintf("http://h%d/%d", i, j), "2024-01-02T03:04:05Z", httpResponse(200, fmt.Sprint(j%5))))
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.warc", i)), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	inputs, err := Collect([]string{dir}, false)
	if err != nil {
		t.Fatal(err)
	}
	var want []byte
	for _, c := range []struct {
		jobs, spool int
	}{{1, 0}, {4, 0}, {3, 100}, {8, 1}} {
		var out bytes.Buffer
		r := Runner{Jobs: c.jobs, spoolMemory: c.spool}
		st, err := r.Run(inputs, &out)
		if err != nil || st.Listed != 7*20+10*21 {
			t.Fatalf("jobs %d: listed %d, err %v", c.jobs, st.Listed, err)
		}
		if want == nil {
			want = out.Bytes()
			continue
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("jobs %d spool %d: output differs from jobs 1", c.jobs, c.spool)
		}
	}
}

// TestCollect proves which files are read and what field 1 calls them.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"a.warc.gz", "b.ARC", "c.txt", "sub/d.warc", "sub/e.arc.gz"} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, nil, 0o644)
	}
	names := func(in []Input) string {
		var s []string
		for _, i := range in {
			s = append(s, i.Name)
		}
		return strings.Join(s, " ")
	}
	tests := []struct {
		name      string
		paths     []string
		recursive bool
		want      string
		err       string
	}{
		{"directory: archive names only", []string{dir}, false, "a.warc.gz b.ARC", ""},
		{"recursive: relative paths", []string{dir}, true, "a.warc.gz b.ARC sub/d.warc sub/e.arc.gz", ""},
		{"file named directly: base name, any extension", []string{filepath.Join(dir, "c.txt")}, false, "c.txt", ""},
		{"same name twice is refused", []string{filepath.Join(dir, "a.warc.gz"), dir}, false, "", "field 1 must name one file"},
		{"missing path is an error", []string{filepath.Join(dir, "nope")}, false, "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := Collect(tt.paths, tt.recursive)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || names(in) != tt.want {
				t.Errorf("got %q (err %v), want %q", names(in), err, tt.want)
			}
		})
	}
}
