package wacz

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/warctest"
	"warcdedup/rewritelog"
	"warcdedup/warcindex"
)

// corpusDir holds real files from public projects' test suites; absent
// on users' machines.
const corpusDir = "../../shared/corpus"

// The corpus's WACZ packages (see its MANIFEST.md).
var corpusPackages = []struct {
	path   string
	signed bool
	kind   IndexKind
}{
	{"webrecorder+replayweb.page/mkdocs/site/docs/examples/example.wacz", true, PlainIndex},
	{"webrecorder+replayweb.page/mkdocs/site/docs/examples/iframetest.wacz", true, PlainIndex},
	{"webrecorder+py-wacz/tests/fixtures/valid_example_1.wacz", false, ZipNumIndex},
}

func needCorpus(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
}

// memFile is an in-memory file a package is written to and read from.
type memFile struct{ b []byte }

func (f *memFile) Write(p []byte) (int, error) {
	f.b = append(f.b, p...)
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if int(off)+len(p) > len(f.b) {
		return 0, errors.New("WriteAt past the end")
	}
	copy(f.b[off:], p)
	return len(p), nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(f.b)) {
		return 0, io.EOF
	}
	n := copy(p, f.b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// testMember is a member a test package holds.
type testMember struct {
	name   string
	data   string
	method uint16
	flags  uint16
}

// buildZip writes the members as a ZIP (datapackage.json not added).
func buildZip(t *testing.T, members []testMember) []byte {
	t.Helper()
	f := &memFile{}
	z := newZipWriter(f, true)
	for _, tm := range members {
		m := &Member{Name: tm.name, Method: tm.method, Flags: tm.flags, CreatorVersion: 20, ReaderVersion: 20}
		if err := z.writeBytes(m, []byte(tm.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.close(nil); err != nil {
		t.Fatal(err)
	}
	return f.b
}

// datapackageFor is a WACZ 1.1.1 datapackage.json listing the members.
func datapackageFor(members []testMember) string {
	var rs []string
	for _, m := range members {
		sum := sha256.Sum256([]byte(m.data))
		rs = append(rs, fmt.Sprintf(`    {
      "name": %q,
      "path": %q,
      "hash": "sha256:%x",
      "bytes": %d
    }`, filepath.Base(m.name), m.name, sum, len(m.data)))
	}
	return "{\n  \"profile\": \"data-package\",\n  \"resources\": [\n" + strings.Join(rs, ",\n") +
		"\n  ],\n  \"wacz_version\": \"1.1.1\",\n  \"software\": \"test\",\n  \"created\": \"2024-01-02T03:04:05Z\"\n}"
}

// digestFor is datapackage-digest.json for a datapackage.json.
func digestFor(dp string) string {
	sum := sha256.Sum256([]byte(dp))
	return fmt.Sprintf("{\n  \"path\": \"datapackage.json\",\n  \"hash\": \"sha256:%s\"\n}", hex.EncodeToString(sum[:]))
}

// testWARC is a small gzip WARC: a warcinfo record, then request and
// response pairs, two of them with the same payload.
func testWARC() []byte {
	var recs []string
	recs = append(recs, warctest.Record("warcinfo", "", "2024-01-02T03:04:05Z", "software: test\r\n", "Content-Type: application/warc-fields"))
	for i, body := range []string{"<html>one</html>", "<html>two</html>", "<html>one</html>", "body { color: red }"} {
		uri := fmt.Sprintf("http://example.com/page%d.html", i)
		date := fmt.Sprintf("2024-01-02T03:04:%02dZ", 10+i)
		recs = append(recs, warctest.Record("request", uri, date, "GET /page HTTP/1.1\r\nHost: example.com\r\n\r\n", "Content-Type: application/http; msgtype=request"))
		sum := sha1Base32(body)
		recs = append(recs, warctest.Record("response", uri, date,
			"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "+fmt.Sprint(len(body))+"\r\n\r\n"+body,
			"Content-Type: application/http; msgtype=response", "WARC-Payload-Digest: sha1:"+sum))
	}
	return warctest.Gzip(recs...)
}

// validMembers is a package's members with a correct index and
// datapackage: the test WARC, its warcindex lines as index.cdxj, pages.
func validMembers(t *testing.T) []testMember {
	t.Helper()
	warc := testWARC()
	lines := freshLinesOf(t, "data.warc.gz", warc)
	return []testMember{
		{name: "archive/data.warc.gz", data: string(warc)},
		{name: "indexes/index.cdxj", data: strings.Join(lines, "\n") + "\n"},
		{name: "pages/pages.jsonl", data: `{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}` + "\n"},
	}
}

// packageOf builds a package of the members with datapackage.json and
// datapackage-digest.json, and opens it.
func packageOf(t *testing.T, members []testMember) (*Package, []byte) {
	t.Helper()
	b := packageBytes(members)
	p, err := NewPackage(bytes.NewReader(b), int64(len(b)), "test.wacz")
	if err != nil {
		t.Fatal(err)
	}
	return p, b
}

func packageBytes(members []testMember) []byte {
	dp := datapackageFor(members)
	all := append(append([]testMember(nil), members...), testMember{name: DatapackageName, data: dp}, testMember{name: DigestName, data: digestFor(dp)})
	f := &memFile{}
	z := newZipWriter(f, true)
	for _, tm := range all {
		m := &Member{Name: tm.name, Method: tm.method, Flags: tm.flags, CreatorVersion: 20, ReaderVersion: 20}
		if err := z.writeBytes(m, []byte(tm.data)); err != nil {
			panic(err)
		}
	}
	if err := z.close(nil); err != nil {
		panic(err)
	}
	return f.b
}

// writeTemp writes b to a file in dir.
func writeTemp(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// openFile opens the package at p, closed at the end of the test.
func openFile(t *testing.T, p string) *Package {
	t.Helper()
	pkg, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pkg.Close() })
	return pkg
}

// checkClean checks a package record by record and fails the test on any
// problem.
func checkClean(t *testing.T, p *Package) *Report {
	t.Helper()
	r, err := Check(p, CheckOptions{Records: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		t.Errorf("%s: check found problems:\n%v", p.Name, err)
	}
	return r
}

// indexLines returns every line of the package's indexes, in order.
func indexLines(t *testing.T, p *Package) []string {
	t.Helper()
	ixs, err := p.Indexes()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ix := range ixs {
		rc := p.IndexReader(ix)
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		// ZipNum blocks without a final line feed run into the next.
		if ix.Kind == ZipNumIndex {
			b = inflateBlocks(t, p, ix)
		}
		for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out
}

// inflateBlocks reads a ZipNum index's lines block by block.
func inflateBlocks(t *testing.T, p *Package, ix *Index) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := p.checkZipNum(ix, func(l []byte) error {
		out.Write(l)
		out.WriteByte('\n')
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// wantKind checks that err is of kind and names what it must.
func wantKind(t *testing.T, err error, kind error, names ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %q is not %v", err, kind)
	}
	for _, n := range names {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %q", err, n)
		}
	}
}

func sha1Base32(s string) string {
	sum := sha1.Sum([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])
}

// freshLinesOf is warcindex's index of a WARC file, sorted.
func freshLinesOf(t *testing.T, name string, warc []byte) []string {
	t.Helper()
	var lines []string
	err := warcindex.Index(bytes.NewReader(warc), name, func(e *warcindex.Entry) error {
		lines = append(lines, string(e.AppendCDXJ(nil)))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	return lines
}

func crc32Of(s string) uint32 { return crc32.ChecksumIEEE([]byte(s)) }

// emptyLog is a rewrite log without entries.
func emptyLog() *rewritelog.Reader { return rewritelog.NewReader(strings.NewReader(""), "empty.log") }
