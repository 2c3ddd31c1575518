package warcsum

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"warcdedup/internal/warctest"
	"warcdedup/warcindex"
)

// collectedIndex is a FileIndex keeping warcindex's lines of one file.
type collectedIndex struct {
	*warcindex.Records
	lines  []string
	closed bool
	whole  bool
	err    error
}

func newCollectedIndex(name string) *collectedIndex {
	c := &collectedIndex{}
	c.Records = warcindex.NewRecords(name, func(e *warcindex.Entry) error {
		c.lines = append(c.lines, string(e.AppendCDXJ(nil)))
		return nil
	})
	return c
}

func (c *collectedIndex) Close(whole bool) {
	c.closed, c.whole = true, whole
	if whole {
		c.err = c.Records.Close()
	}
}

// indexOf is warcindex.Index's lines of the file at p, and whether it
// indexed it to its end.
func indexOf(t *testing.T, p, name string) ([]string, bool) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	err = warcindex.Index(f, name, func(e *warcindex.Entry) error {
		lines = append(lines, string(e.AppendCDXJ(nil)))
		return nil
	})
	return lines, err == nil
}

// summedIndex runs a Runner with an Index over the files and returns each
// one's index, by path.
func summedIndex(t *testing.T, files []string, opt Options) map[string]*collectedIndex {
	t.Helper()
	var inputs []Input
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, Input{Path: p, Name: filepath.Base(p), Size: fi.Size()})
	}
	got := map[string]*collectedIndex{}
	var mu sync.Mutex // Index is called from the workers
	r := Runner{Options: opt, Jobs: 2, Index: func(in Input) FileIndex {
		c := newCollectedIndex(in.Name)
		mu.Lock()
		got[in.Path] = c
		mu.Unlock()
		return c
	}}
	if _, err := r.Run(inputs, io.Discard); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestIndexFromSumEqualsIndex proves that the index made from warcsum's
// read of a file (Runner.Index, warcindex.Records) is warcindex.Index's
// line for line, whatever records the file holds, and that a file
// warcindex cannot index to its end is reported not whole.
func TestIndexFromSumEqualsIndex(t *testing.T) {
	const date = "2024-01-02T03:04:05Z"
	post := "POST /form HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 7\r\n\r\na=1&b=2"
	put := "PUT /api HTTP/1.1\r\nHost: example.com\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"k\":\"value\"}"
	get := "GET /page HTTP/1.1\r\nHost: example.com\r\n\r\n"
	revisitBlock := "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n"
	records := map[string][]string{
		"responses and revisits": {
			warctest.Record("warcinfo", "", date, "software: test\r\n", "Content-Type: application/warc-fields"),
			warctest.Response("http://example.com/a", date, "alpha"),
			warctest.Record("revisit", "http://example.com/b", date, revisitBlock, "WARC-Payload-Digest: sha1:AAAA", "WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest"),
			warctest.Record("revisit", "http://example.com/c", date, "", "WARC-Payload-Digest: sha1:BBBB"),
		},
		"POST and PUT bodies, request before and after": {
			warctest.Record("request", "http://example.com/form", date, post),
			warctest.Response("http://example.com/form", date, "posted"),
			warctest.Response("http://example.com/api", date, "put"),
			warctest.Record("request", "http://example.com/api", date, put),
			warctest.Record("request", "http://example.com/page", date, get),
			warctest.Response("http://example.com/page", date, "got"),
		},
		"records warcindex skips or reads without HTTP": {
			warctest.Record("metadata", "http://example.com/a", date, "via: x\r\n", "Content-Type: application/warc-fields"),
			warctest.Record("metadata", "http://example.com/a", date, "{}", "Content-Type: application/json"),
			warctest.Record("resource", "http://example.com/r.txt", date, "plain text", "Content-Type: text/plain"),
			warctest.Record("response", "http://example.com/nothttp", date, "not an HTTP response at all\r\n\r\nbody"),
			warctest.Record("response", "http://example.com/trunc", date, warctest.HTTP(200, "cut"), "WARC-Truncated: length"),
			warctest.Record("response", "http://example.com/404", date, warctest.HTTP(404, "missing")),
			warctest.Record("response", "http://example.com/empty", date, ""),
			warctest.Record("response", "", date, warctest.HTTP(200, "no uri")),
		},
	}
	dir := t.TempDir()
	var files []string
	for name, recs := range records {
		stem := strings.ReplaceAll(name, " ", "-")
		files = append(files,
			warctest.WriteFile(t, dir, stem+".warc.gz", warctest.Gzip(recs...)),
			warctest.WriteFile(t, dir, stem+".warc", []byte(strings.Join(recs, ""))))
	}
	slices.Sort(files)
	for _, responsesOnly := range []bool{false, true} {
		got := summedIndex(t, files, Options{ResponsesOnly: responsesOnly})
		for _, p := range files {
			want, ok := indexOf(t, p, filepath.Base(p))
			c := got[p]
			if c == nil || !c.closed {
				t.Errorf("%s: the index was not given or not closed", filepath.Base(p))
				continue
			}
			if !ok || !c.whole || c.err != nil {
				t.Errorf("%s: warcindex read it whole: %v; the index from the sum whole: %v (%v)", filepath.Base(p), ok, c.whole, c.err)
				continue
			}
			if len(want) == 0 {
				t.Errorf("%s: no lines to compare", filepath.Base(p))
			}
			if !slices.Equal(c.lines, want) {
				t.Errorf("%s (responses only %v): lines differ:\n got %q\nwant %q", filepath.Base(p), responsesOnly, c.lines, want)
			}
		}
	}
}

// TestIndexFromSumCorpus compares the two indexes over the shared
// corpus: equal wherever the index from the sum says it is whole, and
// whole wherever warcindex reads the file to its end without damage.
func TestIndexFromSumCorpus(t *testing.T) {
	files := corpusFiles(t)
	got := summedIndex(t, files, Options{})
	compared := 0
	for _, p := range files {
		want, ok := indexOf(t, p, filepath.Base(p))
		c := got[p]
		if c == nil || !c.closed {
			t.Errorf("%s: the index was not given or not closed", p)
			continue
		}
		if !c.whole {
			continue // damage warcsum reads past; the rebuild indexes such a member itself
		}
		if !ok {
			t.Errorf("%s: whole from the sum, but warcindex stops in it", p)
			continue
		}
		if c.err != nil || !slices.Equal(c.lines, want) {
			t.Errorf("%s: lines differ (%v):\n got %d %.300q\nwant %d %.300q", p, c.err, len(c.lines), c.lines, len(want), want)
		}
		compared++
	}
	if compared < len(files)/2 {
		t.Errorf("only %d of %d files compared", compared, len(files))
	}
	t.Logf("%d of %d files compared", compared, len(files))
}

// TestIndexFromSumNotWhole proves that damage makes the index not whole.
func TestIndexFromSumNotWhole(t *testing.T) {
	dir := t.TempDir()
	good := warctest.Gzip(warctest.Response("http://example.com/a", "2024-01-02T03:04:05Z", "alpha"))
	bad := append(bytes.Clone(good), good[:len(good)/2]...)
	p := warctest.WriteFile(t, dir, "cut.warc.gz", bad)
	got := summedIndex(t, []string{p}, Options{})
	if c := got[p]; c == nil || !c.closed || c.whole {
		t.Fatalf("a file cut short in its second record: index %+v, want closed and not whole", c)
	}
}

// TestIndexFromSumCacheReplay proves that a file the cache replays, not
// read, gets an index that is not whole: its lines are to be made by a
// read of the file, never taken as empty.
func TestIndexFromSumCacheReplay(t *testing.T) {
	dir := t.TempDir()
	p := warctest.WriteFile(t, dir, "a.warc.gz", warctest.Gzip(warctest.Response("http://example.com/a", "2024-01-02T03:04:05Z", "alpha")))
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	cache, err := NewCache(filepath.Join(dir, "cache"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, wantWhole := range []bool{true, false} {
		c := newCollectedIndex("a.warc.gz")
		r := Runner{Cache: cache, Index: func(Input) FileIndex { return c }}
		st, err := r.Run([]Input{{Path: p, Name: "a.warc.gz", Size: fi.Size()}}, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if !c.closed || c.whole != wantWhole || st.Cached != int64(i) {
			t.Errorf("run %d: index closed %v whole %v, cached %d; want whole %v", i+1, c.closed, c.whole, st.Cached, wantWhole)
		}
	}
}
