package warcindex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/internal/corpustest"
	"warcdedup/internal/replaytest"
	"warcdedup/record"
)

// corpusDir holds real files from public projects' test suites; absent
// on users' machines.
const corpusDir = "../../shared/corpus"

// TestSURT holds keys warcio.js 2.4.11's getSurt gave (node, by hand).
func TestSURT(t *testing.T) {
	for _, c := range []struct{ url, want string }{
		{"http://www.example.com/", "com,example)/"},
		{"https://www2.x.com:0443/", "com,x)/"},
		{"http://Www.EXAMPLE.com:80/a/../b/./c?z=1&a=2#f", "com,example,www)/b/c?a=2&z=1"},
		{"http://a/^x`{}|\"<>", "a)/^x%60%7B%7D|%22%3C%3E"},
		{"http://[::1]:8080/", "[::1]:8080)/"},
		{"http://[0:0:0:0:0:ffff:c000:0280]/", "[::ffff:c000:280])/"},
		{"http://0x7f.1/", "1,0,0,127)/"},
		{"http://1.2.3/", "3,0,2,1)/"},
		{"http://08.1.1.1/", "http://08.1.1.1/"},
		{"http://münchen.de/ä?ö", "de,xn--mnchen-3ya)/%C3%A4?%C3%B6"},
		{"https://ÄÖ.de:443", "de,xn--4ca0b)/"},
		{"http://a b/", "http://a b/"},
		{"http://example.com/%zz%2e%2E/x?q=a b'c", "com,example)/%zz%2e%2e/x?q=a%20b%27c"},
		{"http://A.COM./", ",com,a)/"},
		{"http://a/?", "a)/"},
		{"http://user:pw@host/", "host)/"},
		{`http:\\host\a\b`, "host)/a/b"},
		{"http://host/a%2e%2e/../c", "host)/c"},
		{"http://h/a/.", "h)/a/"},
		{"http://h/a/..", "h)/"},
		{"dns:example.com", "dns:example.com"},
		{"urn:pageinfo:http://x/", "urn:pageinfo:http://x/"},
		{"https://fonts.googleapis.com/css2?family=Source+Sans+Pro:wght@700;900&display=swap",
			"com,googleapis,fonts)/css2?display=swap&family=source+sans+pro:wght@700;900"},
	} {
		if got := SURT(c.url); got != c.want {
			t.Errorf("SURT(%q) = %q, want %q", c.url, got, c.want)
		}
	}
}

// nodeModules is the node_modules directory holding warcio.js, or the
// test skips (fails under WARCDEDUP_REQUIRE_WARCIO=1).
func nodeModules(t *testing.T) string {
	cli := replaytest.WarcioCLI(t)
	return filepath.Dir(filepath.Dir(cli))
}

// warcioSURT runs warcio.js's getSurt on each URL.
func warcioSURT(t *testing.T, urls []string) []string {
	dir := filepath.Dir(nodeModules(t))
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, u := range urls {
		enc.Encode(u)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "-e", `
const w = require("warcio");
const rl = require("readline").createInterface({input: process.stdin});
rl.on("line", (l) => process.stdout.write(JSON.stringify(w.getSurt(JSON.parse(l))) + "\n"));`)
	cmd.Dir = dir
	cmd.Stdin = &in
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node getSurt: %v\n%s", err, stderr.String())
	}
	var got []string
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var s string
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		got = append(got, s)
	}
	if len(got) != len(urls) {
		t.Fatalf("node getSurt gave %d keys for %d URLs", len(got), len(urls))
	}
	return got
}

// corpusURIs is every WARC-Target-URI of the corpus's WARC files.
func corpusURIs(t *testing.T) []string {
	if _, err := os.Stat(corpusDir); err != nil {
		corpustest.Missing(t, "no corpus: %v", err)
	}
	seen := map[string]bool{}
	var uris []string
	filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.Contains(d.Name(), ".warc") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		rr, err := record.NewReader(f, p)
		if err != nil {
			return nil
		}
		for {
			rec, err := rr.Next()
			if err != nil {
				if _, ok := err.(*record.Error); ok {
					continue
				}
				return nil
			}
			if u, ok := rec.Header.Lookup("WARC-Target-URI"); ok && !seen[u] && !strings.ContainsAny(u, "\x00") {
				seen[u] = true
				uris = append(uris, u)
			}
		}
	})
	return uris
}

// TestSURTAgainstWarcio compares SURT with warcio.js's getSurt on every
// target URI of the corpus and on URLs made to reach the parser's corners.
func TestSURTAgainstWarcio(t *testing.T) {
	urls := []string{
		"http://a/%5E^/x", "http://a.com..", "http://[1:2:3:4:5:6:7:8]/", "http://[::]/", "http://[1::]/", "http://[1:0:0:2::3]/",
		"http://[::1.2.3.4]/", "http://0300.0250.0.1/", "http://4294967295/", "http://4294967296/", "http://1.2.3.4.5/",
		"http://host:65535/", "http://host:65536/", "http://host:/x", "http://host:08/", "https://h/p?b=2&a=1&a=0&=&",
		"http://h/%41%7e?%41", "http://h/\u00a0x", "http://h/\x01", "http://h/a b?c d#e f", "http:/h/x", "http:h", "http://h\\x\\..\\y",
		"http://www.www.example.com/", "http://www123.x/", "http://wwwx.com/", "HTTP://www.x.com/", "http://éxample.com/",
		"http://xn--nxasmq6b.com/", "http://日本.jp/パス?キー=値", "http://h/a/%2E%2E/b", "http://h/a/.%2e/b", "http://h//a//b/",
		"http://h?x", "http://h#x", "http://h/?#", "http://@h/", "http://a@b@h/", "http://h/'", "http://h/?'", "http://%41.com/",
		"http://a%2Eb.com/", "http://a%zz.com/", "http://h/%00", "http://0x.0x.0/", "http://0xffffffff/", "http://09/",
	}
	urls = append(urls, corpusURIs(t)...)
	want := warcioSURT(t, urls)
	bad := 0
	for i, u := range urls {
		if got := SURT(u); got != want[i] {
			bad++
			if bad <= 20 {
				t.Errorf("SURT(%q) = %q, warcio.js %q", u, got, want[i])
			}
		}
	}
	t.Logf("%d URLs compared, %d differ", len(urls), bad)
}
