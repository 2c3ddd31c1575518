package warcsum

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/gzfile"
	"warcdedup/internal/warctest"
	"warcdedup/rewritelog"
)

// stored is a file's records as stored: plain, or a gzip member each,
// with where each one is.
type stored struct {
	data          []byte
	offs, lengths []int64
}

func store(gz bool, records []string) stored {
	var s stored
	for _, r := range records {
		b := []byte(r)
		if gz {
			b = warctest.Gzip(r)
		}
		s.offs = append(s.offs, int64(len(s.data)))
		s.lengths = append(s.lengths, int64(len(b)))
		s.data = append(s.data, b...)
	}
	return s
}

// deriveRecords are an old version's records: one of each kind warcsum
// counts (skipped for each reason, listed, checked, disagreeing, a revisit).
func deriveRecords() []string {
	body := strings.Repeat("payload ", 200)
	return []string{
		warctest.Record("warcinfo", "", "2024-01-01T00:00:00Z", "software: test\r\n"),
		warctest.Response("http://a/", "2024-01-01T00:00:01Z", body),
		warctest.Record("request", "http://a/", "2024-01-01T00:00:01Z", "GET / HTTP/1.1\r\n\r\n"),
		warctest.Record("response", "http://b/", "2024-01-01T00:00:02Z", warctest.HTTP(200, body),
			"WARC-Payload-Digest: sha1:"+sha1Base32(body)),
		warctest.Record("response", "http://c/", "2024-01-01T00:00:03Z", warctest.HTTP(404, "gone")),
		warctest.Record("response", "http://d/", "2024-01-01T00:00:04Z", warctest.HTTP(200, body+"d"),
			"WARC-Payload-Digest: sha1:"+sha1Base32(body)),
		warctest.Record("revisit", "http://e/", "2024-01-01T00:00:05Z", "HTTP/1.1 200 X\r\n\r\n",
			"WARC-Refers-To-Target-URI: http://a/", "WARC-Refers-To-Date: 2024-01-01T00:00:01Z",
			"WARC-Payload-Digest: sha1:"+sha1Base32(body)),
		warctest.Response("http://f/", "2024-01-01T00:00:06Z", body+"f"),
	}
}

// revisitOf is the revisit a rewrite writes for the response of uri.
func revisitOf(uri string) string {
	return warctest.Record("revisit", uri, "2024-02-01T00:00:00Z", "HTTP/1.1 200 X\r\n\r\n",
		"WARC-Profile: http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
		"WARC-Refers-To-Target-URI: http://orig/", "WARC-Refers-To-Date: 2023-01-01T00:00:00Z",
		"WARC-Payload-Digest: sha1:"+sha1Base32("x"))
}

// derivation is one case's files, as the test changes them.
type deriveCase struct {
	dir, path string
	old, new  os.FileInfo
	entries   []rewritelog.Entry
	cache     *Cache
}

// TestDerive proves that the entry Derive makes of a rewritten file is the
// one reading the new version makes (lines, facts, record counts and
// Stats), and that whatever does not add up leaves the file to be read
// again: an entry of another version, entries that do not tile the file,
// a stretch written over part of a record or holding two, a new version
// changed after the rewrite, damage.
func TestDerive(t *testing.T) {
	records := deriveRecords()
	cases := []struct {
		name    string
		gz      bool
		replace []int // the records written over, by a revisit each
		// written, if set, is what is written over the records replaced
		// (one stretch), instead of one revisit each.
		written string
		damage  bool // garbage between records 2 and 3 of the old version
		change  func(t *testing.T, c *deriveCase)
		derived bool
	}{
		{name: "plain, one response replaced", replace: []int{1}, derived: true},
		{name: "gzip, three responses replaced, the last included", gz: true, replace: []int{1, 3, 7}, derived: true},
		{name: "gzip, the first record replaced", gz: true, replace: []int{0}, derived: true},
		{name: "plain, every response replaced", replace: []int{1, 3, 5, 7}, derived: true},
		{name: "the entry is of another version", gz: true, replace: []int{1}, change: func(t *testing.T, c *deriveCase) {
			other := warctest.WriteFile(t, t.TempDir(), "other.warc.gz", warctest.Gzip(records...))
			c.old = stat(t, other)
		}},
		{name: "a copied stretch shorter in the new version", gz: true, replace: []int{1, 3}, change: func(t *testing.T, c *deriveCase) {
			c.entries[1].NewOffset--
		}},
		{name: "an entry names another file", replace: []int{1}, change: func(t *testing.T, c *deriveCase) {
			c.entries[0].File = "other.warc"
		}},
		{name: "one revisit written over two records", gz: true, replace: []int{1, 2}, written: revisitOf("http://a/")},
		{name: "two records in the stretch written", gz: true, replace: []int{1}, written: revisitOf("http://a/") + revisitOf("http://a/")},
		{name: "the new version changed after the rewrite", gz: true, replace: []int{1}, change: func(t *testing.T, c *deriveCase) {
			data, _ := os.ReadFile(c.path)
			os.WriteFile(c.path, append(data, warctest.Gzip(records[1])...), 0o644)
		}},
		{name: "the old version was damaged", replace: []int{1}, damage: true},
		{name: "the old entry's lines changed since it was made", gz: true, replace: []int{3}, change: func(t *testing.T, c *deriveCase) {
			// A line of a record copied, changed as a bit flipped on
			// disk could: still a line, no longer the one read.
			name := c.cache.paths("f.warc.gz").lines
			r, err := gzfile.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			text, err := io.ReadAll(r)
			r.Close()
			if err != nil || !bytes.Contains(text, []byte("http://a/")) {
				t.Fatalf("entry lines %q, %v", text, err)
			}
			var b bytes.Buffer
			z := gzfile.NewWriter(&b)
			z.Write(bytes.Replace(text, []byte("http://a/"), []byte("http://A/"), 1))
			z.Close()
			if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := "f.warc"
			if tc.gz {
				name += ".gz"
			}
			oldRecords := records
			if tc.damage {
				oldRecords = append(append(append([]string{}, records[:3]...), "garbage\r\n"), records[3:]...)
			}
			old := store(tc.gz, oldRecords)
			c := &deriveCase{dir: t.TempDir()}
			c.path = warctest.WriteFile(t, c.dir, name, old.data)
			cache, err := NewCache(filepath.Join(t.TempDir(), "cache"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			c.cache = cache
			runCached(t, c.dir, cache) // makes the old version's entry
			c.old = stat(t, c.path)

			// The new version: each record replaced by a revisit, or the
			// records replaced (consecutive) by what is written, as one
			// stretch; an entry for each stretch written.
			var newRecords []string
			var at []int // of each stretch written: the first record replaced
			for i := 0; i < len(oldRecords); i++ {
				switch {
				case !contains(tc.replace, i):
					newRecords = append(newRecords, oldRecords[i])
				case tc.written == "":
					at = append(at, i)
					newRecords = append(newRecords, revisitOf("http://x/"))
				case i == tc.replace[0]:
					at = append(at, i)
					newRecords = append(newRecords, tc.written)
				}
			}
			nw := store(tc.gz, newRecords)
			n := 1 // records a stretch written replaces
			if tc.written != "" {
				n = len(tc.replace)
			}
			for k, i := range at {
				ni := i - k*(n-1) // its index in the new version
				e := rewritelog.Entry{File: name, OldOffset: old.offs[i], NewOffset: nw.offs[ni], NewLength: nw.lengths[ni], Kind: rewritelog.Revisit}
				for j := range n {
					e.OldLength += old.lengths[i+j]
				}
				c.entries = append(c.entries, e)
			}
			tmp := c.path + ".new"
			if err := os.WriteFile(tmp, nw.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, c.path); err != nil {
				t.Fatal(err)
			}
			c.new = stat(t, c.path)
			if tc.change != nil {
				tc.change(t, c)
			}

			err = cache.Derive(rewritelog.Replacement{Name: name, Path: c.path, Old: c.old, New: c.new, Entries: c.entries, SHA256: "abc"})
			if tc.derived != (err == nil) {
				t.Fatalf("derived: %v, want %v", err, tc.derived)
			}
			if err != nil {
				t.Logf("not derived: %v", err)
			}
			if err != nil && !errors.Is(err, ErrNotDerived) {
				t.Fatalf("error %v does not wrap ErrNotDerived", err)
			}
			// Whether derived or read again, the next run gives what reading
			// the file gives.
			lines, facts, st := runCached(t, c.dir, cache)
			fresh, err := NewCache(filepath.Join(t.TempDir(), "fresh"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			wantLines, wantFacts, wantSt := runCached(t, c.dir, fresh)
			if want := b2i(tc.derived); st.Cached != want {
				t.Errorf("files known: %d, want %d", st.Cached, want)
			}
			st.Cached = 0
			if lines != wantLines || facts != wantFacts || st != wantSt {
				t.Errorf("after:\n%s%s%+v\nreading the file gives:\n%s%s%+v", lines, facts, st, wantLines, wantFacts, wantSt)
			}
			if tc.derived {
				got, _ := os.ReadFile(cache.paths(name).counts)
				want, _ := os.ReadFile(fresh.paths(name).counts)
				if !bytes.Equal(got, want) || len(want) == 0 {
					t.Errorf("record counts:\n%s\nreading the file gives:\n%s", got, want)
				}
			}
		})
	}
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func stat(t *testing.T, path string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// runCached lists dir's files through cache: lines, facts and Stats.
func runCached(t *testing.T, dir string, cache *Cache) (string, string, Stats) {
	t.Helper()
	inputs, err := Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var out, facts bytes.Buffer
	r := Runner{Jobs: 1, Facts: &facts, Cache: cache}
	st, err := r.Run(inputs, &out)
	if err != nil {
		t.Fatal(err)
	}
	return out.String(), facts.String(), st
}
