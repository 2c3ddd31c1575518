package replaytest

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/cdxj"
	"warcdedup/internal/warctest"
)

// TestCollectionID checks the ids against those ReplayWeb.page 2.5.3 gave
// the sources when the harness was written (its /w/api/c/ID answered).
func TestCollectionID(t *testing.T) {
	for src, want := range map[string]string{
		"http://127.0.0.1:45451/warcs/a.warc.gz": "id-97881406f4d7",
		"http://127.0.0.1:32775/warcs/a.warc.gz": "id-76507ab8104c",
		"http://127.0.0.1:32775/warcs/ab.wacz":   "id-8bcd51138d74",
	} {
		if got := CollectionID(src); got != want {
			t.Errorf("CollectionID(%q) = %s, want %s", src, got, want)
		}
	}
}

// TestRefusingProxy proves that the proxy refuses both kinds of proxied
// request and keeps what was asked.
func TestRefusingProxy(t *testing.T) {
	p, addr := startProxy(t)
	proxyURL, _ := url.Parse("http://" + addr)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}
	resp, err := client.Get("http://update.example.com/service?x=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("plain request: status %d, want 403", resp.StatusCode)
	}
	if _, err := client.Get("https://accounts.example.com/"); err == nil {
		t.Error("CONNECT through the proxy succeeded")
	}
	got := p.list()
	want := []string{"GET http://update.example.com/service?x=1", "CONNECT accounts.example.com:443"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("refused %q, want %q", got, want)
	}
}

// TestServerRange proves the test server answers Range requests for the
// archive files and serves a .warc.gz as stored, without Content-Encoding.
func TestServerRange(t *testing.T) {
	rwp, root := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(rwp, "index.html"), []byte("<html>"), 0o644)
	os.MkdirAll(filepath.Join(root, "a b"), 0o755)
	os.WriteFile(filepath.Join(root, "a b", "x.warc.gz"), []byte("0123456789"), 0o644)
	base := startServer(t, rwp, root)
	b := &Browser{base: base}
	req, _ := http.NewRequest("GET", b.SourceURL("a b/x.warc.gz"), nil)
	req.Header.Set("Range", "bytes=2-4")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || string(body) != "234" || resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("status %d, body %q, Content-Encoding %q; want 206, \"234\", none", resp.StatusCode, body, resp.Header.Get("Content-Encoding"))
	}
	resp, err = http.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "<html>" {
		t.Errorf("/ served %q", body)
	}
}

// TestWriteWACZ checks the package a WACZ reader expects: the archives
// stored (not deflated) under archive/, the index, the pages, and a
// datapackage.json whose sizes and hashes are the files'.
func TestWriteWACZ(t *testing.T) {
	dir := t.TempDir()
	warc := filepath.Join(dir, "a.warc.gz")
	os.WriteFile(warc, []byte("not really a warc"), 0o644)
	l, err := cdxj.Parse(`com,example)/ 20200101000000 {"url":"http://example.com/","offset":"0","length":"17","filename":"a.warc.gz"}`)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "x.wacz")
	if err := WriteWACZ(dst, []Archive{{"a.warc.gz", warc}}, []cdxj.Line{l}, []Page{{URL: "http://example.com/", TS: "2020-01-01T00:00:00Z"}}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	files := map[string][]byte{}
	for _, f := range zr.File {
		if f.Method != zip.Store {
			t.Errorf("%s: method %d, want stored", f.Name, f.Method)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	if string(files["archive/a.warc.gz"]) != "not really a warc" || string(files["indexes/index.cdxj"]) != l.Raw+"\n" ||
		!strings.Contains(string(files["pages/pages.jsonl"]), `{"url":"http://example.com/","ts":"2020-01-01T00:00:00Z"}`) {
		t.Errorf("contents: %q", files)
	}
	var pkg struct {
		Profile   string `json:"profile"`
		Resources []struct {
			Path  string `json:"path"`
			Hash  string `json:"hash"`
			Bytes int    `json:"bytes"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(files["datapackage.json"], &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Profile != "data-package" || len(pkg.Resources) != 3 {
		t.Fatalf("datapackage.json: %s", files["datapackage.json"])
	}
	for _, r := range pkg.Resources {
		sum := sha256.Sum256(files[r.Path])
		if r.Hash != "sha256:"+hex.EncodeToString(sum[:]) || r.Bytes != len(files[r.Path]) {
			t.Errorf("%s: hash %s, %d bytes; the file's differ", r.Path, r.Hash, r.Bytes)
		}
	}
	if err := WriteWACZ(filepath.Join(dir, "y.wacz"), []Archive{{"a/b.warc", warc}}, nil, nil); err == nil {
		t.Error("an archive name with a slash was accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "y.wacz")); err == nil {
		t.Error("a failed WACZ was left behind")
	}
}

// TestDiff names every difference a reader would see, and none where
// only other headers differ.
func TestDiff(t *testing.T) {
	base := func() *Response {
		return &Response{Status: 200, Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte("x")}
	}
	tests := []struct {
		name   string
		change func(r *Response)
		want   []string
	}{
		{"same", func(r *Response) { r.Header.Set("Content-Location", "http://other/") }, nil},
		{"status", func(r *Response) { r.Status = 203 }, []string{"status 203, was 200"}},
		{"type", func(r *Response) { r.Header.Set("Content-Type", "text/plain") }, []string{`Content-Type "text/plain", was "text/html"`}},
		{"encoding", func(r *Response) { r.Header.Set("Content-Encoding", "gzip") }, []string{`Content-Encoding "gzip", was ""`}},
		{"body", func(r *Response) { r.Body = []byte("y") }, []string{"body of 1 bytes"}},
		{"failed", func(r *Response) { r.Err = "TypeError" }, []string{`fetch error "TypeError"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := base()
			tt.change(a)
			got := Diff(base(), a)
			if len(got) != len(tt.want) {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("got %q, want %q", got[i], tt.want[i])
				}
			}
		})
	}
}

// TestIndex proves that lines are named by Archive.Name, also for files
// with the same base name (indexed one by one), and that a file warcio
// cannot read fails the index, named.
func TestIndex(t *testing.T) {
	cli := WarcioCLI(t)
	dir := t.TempDir()
	one := warctest.WriteFile(t, dir, "x/a.warc.gz", warctest.Gzip(warctest.Response("http://example.com/1", "2020-01-01T00:00:00Z", "one")))
	two := warctest.WriteFile(t, dir, "y/a.warc.gz", warctest.Gzip(warctest.Response("http://example.com/2", "2020-01-02T00:00:00Z", "two")))
	three := warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://example.com/3", "2020-01-03T00:00:00Z", "three")))
	tests := []struct {
		name     string
		archives []Archive
		want     map[string]string // URL -> file name
	}{
		{"unique base names", []Archive{{"first", one}, {"third", three}}, map[string]string{"http://example.com/1": "first", "http://example.com/3": "third"}},
		{"same base names", []Archive{{"first", one}, {"second", two}, {"third", three}}, map[string]string{"http://example.com/1": "first", "http://example.com/2": "second", "http://example.com/3": "third"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, err := Index(cli, tt.archives)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, l := range lines {
				got[l.URL] = l.Filename
			}
			if len(got) != len(tt.want) || len(lines) != len(tt.want) {
				t.Fatalf("lines %v, want %v", got, tt.want)
			}
			for u, f := range tt.want {
				if got[u] != f {
					t.Errorf("%s: file %q, want %q", u, got[u], f)
				}
			}
		})
	}
	link := filepath.Join(dir, "link.warc")
	os.Symlink(three, link)
	if _, err := Index(cli, []Archive{{"first", one}, {"link", link}}); err == nil || !strings.Contains(err.Error(), link) {
		t.Errorf("error %v, want one naming %s", err, link)
	}
}
