package redisindex

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"warcdedup/crawlindex"
	"warcdedup/internal/redis"
	"warcdedup/internal/redistest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
)

// fxRecord is a record of a fixture WACZ: a response, or (revisitOf set)
// a revisit of another fixture record's payload.
type fxRecord struct {
	uri, date, body string
	status          int // 200 if zero
	revisitOf       string
	// Set by the builder.
	crawl, wacz    string
	offset, length int64 // in the WACZ file
	digest         string
}

type fxWACZ struct {
	name    string
	records []*fxRecord
}

type fxCrawl struct {
	name  string
	waczs []fxWACZ
}

// fixture is a set of crawls written as WACZ files into dir and committed
// to a SHA-256 crawl index as a run would commit them: every 2xx response
// an original (file: the WACZ, offset: where the record is in it), the
// crawl's figures, and what its revisits need.
type fixture struct {
	dir, index string
	crawls     []fxCrawl
	byKey      map[string]*fxRecord // uri+" "+date
}

func payloadDigest(body string) string {
	s := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(s[:])
}

// newFixture writes the crawls and commits them in order.
func newFixture(t *testing.T, crawls ...fxCrawl) *fixture {
	t.Helper()
	fx := &fixture{dir: filepath.Join(t.TempDir(), "wacz"), index: filepath.Join(t.TempDir(), "index"), byKey: map[string]*fxRecord{}}
	if err := os.MkdirAll(fx.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range crawls {
		fx.add(t, c)
	}
	return fx
}

// add writes a crawl's WACZ files and commits it to the index.
func (fx *fixture) add(t *testing.T, c fxCrawl) {
	t.Helper()
	fx.crawls = append(fx.crawls, c)
	var files []crawlindex.FileInfo
	var originals []manifest.Line
	k := &crawlindex.Crawl{Name: c.name, Location: fx.dir}
	needs := map[string]*crawlindex.Need{}
	for _, wz := range c.waczs {
		for _, r := range wz.records {
			r.crawl, r.wacz = c.name, wz.name
			if r.revisitOf == "" {
				r.digest = payloadDigest(r.body)
				fx.byKey[r.uri+" "+r.date] = r
			}
		}
		fi := fx.writeWACZ(t, wz)
		files = append(files, fi)
		for _, r := range wz.records {
			k.Records++
			if r.revisitOf != "" {
				k.Revisits++
				o := fx.byKey[r.revisitOf]
				k.BytesConserved += int64(len(o.body))
				if o.crawl != c.name {
					n := needs[o.crawl]
					if n == nil {
						n = &crawlindex.Need{Crawl: o.crawl}
						needs[o.crawl] = n
					}
					n.Revisits++
					if !slices.ContainsFunc(n.Files, func(f crawlindex.FileInfo) bool { return f.Name == o.wacz }) {
						n.Files = append(n.Files, fx.file(t, o.wacz))
					}
				}
				continue
			}
			if r.status == 0 || r.status/100 == 2 {
				originals = append(originals, manifest.Line{File: c.name + "/" + r.wacz, Offset: r.offset, Length: r.length,
					URI: r.uri, Date: r.date, Digest: r.digest, Fields: 6})
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(needs)) {
		n := needs[name]
		sort.Slice(n.Files, func(i, j int) bool { return n.Files[i].Name < n.Files[j].Name })
		k.Requires = append(k.Requires, *n)
	}
	sortByDigest(originals)
	orig := filepath.Join(t.TempDir(), "originals")
	writeManifest(t, orig, originals)
	if _, err := crawlindex.Commit(fx.index, crawlindex.Change{Add: k, Files: files, Originals: orig}); err != nil {
		t.Fatal(err)
	}
}

func (fx *fixture) file(t *testing.T, name string) crawlindex.FileInfo {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fx.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	fi, err := os.Stat(filepath.Join(fx.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return crawlindex.FileInfo{Name: name, Size: int64(len(data)), SHA256: hex.EncodeToString(s[:]), Stamp: crawlindex.Stamp(fi)}
}

// sortByDigest sorts 6-field lines as manifest.ByDigest orders them
// (digest, date, file, offset: byte order).
func sortByDigest(lines []manifest.Line) {
	sort.Slice(lines, func(i, j int) bool {
		a, b := lines[i], lines[j]
		if a.Digest != b.Digest {
			return a.Digest < b.Digest
		}
		if a.Date != b.Date {
			return a.Date < b.Date
		}
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Offset < b.Offset
	})
}

func writeManifest(t *testing.T, name string, lines []manifest.Line) {
	t.Helper()
	var b bytes.Buffer
	w := manifest.NewWriter(&b)
	for i := range lines {
		if err := w.Write(&lines[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// writeWACZ writes a WACZ as the crawler does: archive/data.warc.gz (one
// gzip member per record, stored), indexes/index.cdxj, pages and
// datapackage.json. Each record learns its offset in the WACZ.
func (fx *fixture) writeWACZ(t *testing.T, wz fxWACZ) crawlindex.FileInfo {
	t.Helper()
	var warc bytes.Buffer
	type cdxLine struct {
		key, ts string
		json    map[string]string
	}
	var lines []cdxLine
	memberOffsets := map[*fxRecord]int64{}
	for _, r := range wz.records {
		var rec string
		var mime, status, dig string
		if r.revisitOf != "" {
			o := fx.byKey[r.revisitOf]
			if o == nil {
				t.Fatalf("revisit of %s: no such record", r.revisitOf)
			}
			r.digest = o.digest
			head := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: " + fmt.Sprint(len(o.body)) + "\r\n\r\n"
			rec = warctest.Record("revisit", r.uri, r.date, head, "WARC-Payload-Digest: "+o.digest,
				"WARC-Profile: http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
				"WARC-Refers-To-Target-URI: "+o.uri, "WARC-Refers-To-Date: "+o.date, "Content-Type: application/http; msgtype=response")
			mime, status, dig = "warc/revisit", "200", o.digest
		} else {
			st := r.status
			if st == 0 {
				st = 200
			}
			http := fmt.Sprintf("HTTP/1.1 %d X\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s", st, len(r.body), r.body)
			rec = warctest.Record("response", r.uri, r.date, http, "WARC-Payload-Digest: "+r.digest, "Content-Type: application/http; msgtype=response")
			mime, status, dig = "text/html", fmt.Sprint(st), r.digest
		}
		gz := warctest.Gzip(rec)
		memberOffsets[r] = int64(warc.Len())
		r.length = int64(len(gz))
		warc.Write(gz)
		ts := strings.NewReplacer("-", "", ":", "", "T", "", "Z", "").Replace(r.date)[:14]
		lines = append(lines, cdxLine{key: surt(r.uri), ts: ts, json: map[string]string{
			"url": r.uri, "mime": mime, "status": status, "digest": dig,
			"length": fmt.Sprint(r.length), "offset": fmt.Sprint(memberOffsets[r]), "filename": "data.warc.gz"}})
	}
	sort.SliceStable(lines, func(i, j int) bool {
		if lines[i].key != lines[j].key {
			return lines[i].key < lines[j].key
		}
		return lines[i].ts < lines[j].ts
	})
	var cdxj bytes.Buffer
	for _, l := range lines {
		j, _ := json.Marshal(l.json)
		fmt.Fprintf(&cdxj, "%s %s %s\n", l.key, l.ts, j)
	}
	name := filepath.Join(fx.dir, wz.name)
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	var warcStart int64
	add := func(path string, data []byte) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: path, Method: zip.Store, Modified: time.Unix(0, 0).UTC()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add("archive/data.warc.gz", warc.Bytes())
	add("indexes/index.cdxj", cdxj.Bytes())
	add("pages/pages.jsonl", []byte(`{"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}`+"\n"))
	add("datapackage.json", []byte(`{"profile": "data-package", "wacz_version": "1.1.1", "resources": []}`+"\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// Where the WARC member's bytes start: a record's offset in the WACZ.
	zr, err := zip.OpenReader(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range zr.File {
		if m.Name == "archive/data.warc.gz" {
			if warcStart, err = m.DataOffset(); err != nil {
				t.Fatal(err)
			}
		}
	}
	zr.Close()
	for _, r := range wz.records {
		r.offset = warcStart + memberOffsets[r]
	}
	return fx.file(t, wz.name)
}

// surt is a SURT-like key; the readers here take the URL from the JSON.
func surt(uri string) string {
	u := strings.TrimPrefix(strings.TrimPrefix(uri, "https://"), "http://")
	host, path, _ := strings.Cut(u, "/")
	parts := strings.Split(host, ".")
	slices.Reverse(parts)
	return strings.Join(parts, ",") + ")/" + path
}

// dial connects to a test server.
func dial(t *testing.T, srv *redistest.Server) *redis.Conn {
	t.Helper()
	c, err := redis.Dial(context.Background(), srv.URL, redis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dump is every key of the Redis and its value in one text, sorted, for
// comparing two states: hashes and sets as sorted members, lists in order.
func dump(t *testing.T, c *redis.Conn, skip ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	s := c.Scan("SCAN", "", "COUNT", "1000")
	for {
		keys, err := s.Next()
		if err != nil {
			t.Fatal(err)
		}
		if keys == nil {
			break
		}
		for _, k := range keys {
			if slices.ContainsFunc(skip, func(p string) bool { return strings.HasPrefix(k, p) }) {
				continue
			}
			typ, err := c.Do("TYPE", k)
			if err != nil {
				t.Fatal(err)
			}
			var vals []string
			switch typ.Str {
			case "hash":
				kv, err := redis.Strings(c.Do("HGETALL", k))
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < len(kv); i += 2 {
					vals = append(vals, kv[i]+" = "+kv[i+1])
				}
				slices.Sort(vals)
			case "set":
				if vals, err = redis.Strings(c.Do("SMEMBERS", k)); err != nil {
					t.Fatal(err)
				}
				slices.Sort(vals)
			case "list":
				if vals, err = redis.Strings(c.Do("LRANGE", k, "0", "-1")); err != nil {
					t.Fatal(err)
				}
			case "string":
				v, err := c.Do("GET", k)
				if err != nil {
					t.Fatal(err)
				}
				vals = []string{v.Str}
			default:
				t.Fatalf("key %s of type %s", k, typ.Str)
			}
			out[k] = typ.Str + ":\n  " + strings.Join(vals, "\n  ")
		}
	}
	return out
}

// systemSort runs a sort command line as the job runs it.
func systemSort(ctx context.Context, command, in, out string) error {
	keys := strings.Fields(strings.TrimPrefix(command, "LC_ALL=C sort"))
	cmd := exec.CommandContext(ctx, "sort", append(keys, "-o", out, in)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("sort: %v: %s", err, b)
	}
	return nil
}
