package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
	"warcdedup/internal/replaytest"
	"warcdedup/internal/warctest"
	"warcdedup/record"
)

func sha256Digest(body string) string {
	s := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(s[:])
}

// btxNoise is n bytes that do not compress, so that a revisit of them is
// smaller than the record.
func btxNoise(seed string, n int) string {
	var b strings.Builder
	s := sha256.Sum256([]byte(seed))
	for b.Len() < n {
		b.WriteString(hex.EncodeToString(s[:]))
		s = sha256.Sum256(s[:])
	}
	return b.String()[:n]
}

// btxResponse is a response record as Browsertrix's crawler writes it:
// WARC/1.1 date to the millisecond, a SHA-256 payload digest.
func btxResponse(uri, date, body string) string {
	http := fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	return warctest.Record("response", uri, date, http, "WARC-Payload-Digest: "+sha256Digest(body), "Content-Type: application/http; msgtype=response")
}

// TestRedisImportRunExport: a crawl Browsertrix committed to its Redis
// dedup index (its WACZ file, its keys as the crawler writes them) is
// imported into a crawl index; `warcdedup run --index` then refers a new
// crawl's duplicates to its originals inside the WACZ, and the index
// records the dependency; the new crawl is exported back, where the
// crawler's look-up finds its originals.
func TestRedisImportRunExport(t *testing.T) {
	srv := redistest.Start(t)
	cli := replaytest.WarcioCLI(t)
	tmp := t.TempDir()
	ctx := context.Background()

	// Browsertrix's crawl: one WACZ, indexed by warcio.js as the crawler
	// indexes it.
	bodies := []string{btxNoise("logo", 4000), btxNoise("style", 3000), btxNoise("page one", 2000)}
	dates := []string{"2024-05-01T10:00:00.125Z", "2024-05-01T10:00:01.250Z", "2024-05-01T10:00:02.375Z"}
	uris := []string{"https://example.org/logo.png", "https://example.org/style.css", "https://example.org/"}
	var recs []string
	for i := range bodies {
		recs = append(recs, btxResponse(uris[i], dates[i], bodies[i]))
	}
	warc := warctest.WriteFile(t, tmp, "bx/data.warc.gz", warctest.Gzip(recs...))
	archives := []replaytest.Archive{{Name: "data.warc.gz", Path: warc}}
	index, err := replaytest.Index(cli, archives)
	if err != nil {
		t.Fatal(err)
	}
	waczDir := filepath.Join(tmp, "wacz")
	os.MkdirAll(waczDir, 0o755)
	wacz := filepath.Join(waczDir, "bx-1.wacz")
	if err := replaytest.WriteWACZ(wacz, archives, index, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(wacz)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)

	// Its keys, as the crawler writes them once the crawl is committed,
	// and a crawl still running.
	c, err := redis.Dial(ctx, srv.URL, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := c.Pipeline()
	for _, l := range index {
		key := strings.TrimPrefix(l.Digest, "sha256:")
		i := map[string]int{uris[0]: 0, uris[1]: 1, uris[2]: 2}[l.URL]
		date := strings.NewReplacer("-", "", ":", "", "T", "", ".", "", "Z", "").Replace(dates[i])
		p.Send("HSET", "h:bx", key, fmt.Sprintf("0 %s %s %d", date, l.URL, l.Length))
		p.Send("HSETNX", "alldupes", key, "bx")
	}
	p.Send("RPUSH", "c:bx:wacz", fmt.Sprintf(`{"filename":"bx-1.wacz","hash":"%x","size":%d}`, sum, len(data)))
	p.Send("HSET", "h:bx:counts", "totalUrls", "3", "totalCrawlSize", fmt.Sprint(len(data)))
	p.Send("SADD", "allcrawls", "bx")
	p.Send("SADD", "uncommittedcrawls", "running")
	if _, err := p.Exec(); err != nil {
		t.Fatal(err)
	}

	idx := filepath.Join(tmp, "index")
	_, stderr, code := sh(t, tmp, "warcdedup index import --index "+idx+" --redis "+srv.URL+" --location "+waczDir)
	if code != 0 || !strings.Contains(stderr, "1 crawls imported (bx)") || !strings.Contains(stderr, "crawl running left out: it is still running") {
		t.Fatalf("import: exit %d\n%s", code, stderr)
	}

	// A new crawl of plain WARC files: two payloads Browsertrix holds, one new.
	newDir := filepath.Join(tmp, "may")
	warctest.WriteFile(t, newDir, "may.warc.gz", warctest.Gzip(
		btxResponse("https://example.org/logo.png", "2024-06-01T10:00:00Z", bodies[0]),
		btxResponse("https://mirror.example.org/style.css", "2024-06-01T10:00:01Z", bodies[1]),
		btxResponse("https://example.org/new", "2024-06-01T10:00:02Z", btxNoise("new", 3000))))
	_, stderr, code = sh(t, tmp, "warcdedup run -q --hash sha256 --index "+idx+" --crawl may "+newDir)
	if code != 0 {
		t.Fatalf("run --index: exit %d\n%s", code, stderr)
	}
	// Its duplicates are revisits of the records in Browsertrix's WACZ.
	revisits := map[string]string{}
	f, err := os.Open(filepath.Join(newDir, "may.warc.gz"))
	if err != nil {
		t.Fatal(err)
	}
	rr, err := record.NewReader(f, "may.warc.gz")
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := rr.Next()
		if err != nil {
			break
		}
		if rec.Header.Get("WARC-Type") == "revisit" {
			revisits[rec.TargetURI()] = rec.Header.Get("WARC-Refers-To-Target-URI") + " " + rec.Header.Get("WARC-Refers-To-Date")
		}
	}
	f.Close()
	want := map[string]string{
		"https://example.org/logo.png":         uris[0] + " " + dates[0],
		"https://mirror.example.org/style.css": uris[1] + " " + dates[1],
	}
	if fmt.Sprint(revisits) != fmt.Sprint(want) {
		t.Fatalf("revisits of the new crawl: %v\nwant %v", revisits, want)
	}
	out, stderr, code := sh(t, tmp, "warcdedup index deps --json --index "+idx+" may")
	if code != 0 || !strings.Contains(out, `"crawl": "bx"`) || !strings.Contains(out, `"revisits": 2`) || !strings.Contains(out, `"name": "bx-1.wacz"`) {
		t.Fatalf("index deps may: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, code = sh(t, tmp, "warcdedup index verify --deep --index "+idx); code != 0 {
		t.Fatalf("index verify: exit %d\n%s", code, stderr)
	}

	// Back to Browsertrix: a crawl of WARC files is refused unless asked,
	// and nothing is written; then it is added, bx is left as it is.
	before, _ := redis.Strings(c.Do("KEYS", "*"))
	_, stderr, code = sh(t, tmp, "warcdedup index export --index "+idx+" --redis "+srv.URL)
	if code != 2 || !strings.Contains(stderr, "may.warc.gz is no WACZ package") || !strings.Contains(stderr, "nothing was written") {
		t.Fatalf("export of a WARC crawl: exit %d\n%s", code, stderr)
	}
	if after, _ := redis.Strings(c.Do("KEYS", "*")); len(after) != len(before) {
		t.Fatalf("a refused export wrote keys: %q, was %q", after, before)
	}
	_, stderr, code = sh(t, tmp, "warcdedup index export --warc-files --index "+idx+" --redis "+srv.URL)
	if code != 0 || !strings.Contains(stderr, "1 crawls added (may)") || !strings.Contains(stderr, "1 crawls already there from another writer (bx)") {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	// The crawler's look-up of the new payload: alldupes, then h:may.
	key := strings.TrimPrefix(sha256Digest(btxNoise("new", 3000)), "sha256:")
	crawl, err := c.Do("HGET", "alldupes", key)
	if err != nil || crawl.Str != "may" {
		t.Fatalf("alldupes[new] = %q %v", crawl.Str, err)
	}
	entry, err := c.Do("HGET", "h:may", key)
	if err != nil || !strings.HasPrefix(entry.Str, "0 20240601100002 https://example.org/new ") {
		t.Fatalf("h:may[new] = %q %v", entry.Str, err)
	}

	// An unreachable Redis: a clear error, exit 2.
	port := redistest.FreePort(t)
	_, stderr, code = sh(t, tmp, fmt.Sprintf("warcdedup index export --index %s --redis redis://127.0.0.1:%d/0", idx, port))
	if code != 2 || !strings.Contains(stderr, fmt.Sprintf("redis 127.0.0.1:%d", port)) || !strings.Contains(stderr, "connection refused") {
		t.Fatalf("export to a closed port: exit %d\n%s", code, stderr)
	}
}
