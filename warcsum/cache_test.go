package warcsum

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/warctest"
)

// TestCache proves that a file whose stamp is unchanged is not read again
// and gives the same lines and facts, and that every way a file or its
// entry can change makes it read again: new bytes at the same size and
// modification time (the change time moves), a replaced file, other
// options, a damaged entry.
func TestCache(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("body ", 100)
	a := warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://a/", "2024-01-01T00:00:00Z", body)+
		warctest.Record("response", "http://a/img", "2024-01-01T00:00:01Z", "HTTP/1.1 200 OK\r\nContent-Type: Image/PNG; q=1\r\n\r\n"+body)))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://b/", "2024-01-02T00:00:00Z", body)))
	cacheDir := filepath.Join(t.TempDir(), "cache")
	run := func(o Options) (string, string, Stats) {
		t.Helper()
		inputs, err := Collect([]string{dir}, true)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCache(cacheDir, o)
		if err != nil {
			t.Fatal(err)
		}
		var out, facts bytes.Buffer
		r := Runner{Options: o, Jobs: 2, Facts: &facts, Cache: c}
		st, err := r.Run(inputs, &out)
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), facts.String(), st
	}
	lines, facts, st := run(Options{})
	if st.Cached != 0 || st.Files != 2 {
		t.Fatalf("first run: %+v", st)
	}
	if !strings.Contains(facts, "a.warc 0 200 application/octet-stream\n") || !strings.Contains(facts, " 200 image/png\n") {
		t.Errorf("facts %q", facts)
	}
	steps := []struct {
		name   string
		change func()
		opt    Options
		cached int64
		same   bool // the lines equal the step before's
	}{
		{"nothing changed", func() {}, Options{}, 2, true},
		{"same size and mtime, new bytes", func() {
			fi, _ := os.Stat(a)
			data, _ := os.ReadFile(a)
			os.WriteFile(a, bytes.Replace(data, []byte("body"), []byte("BODY"), 1), 0o644)
			os.Chtimes(a, fi.ModTime(), fi.ModTime())
		}, Options{}, 1, false},
		{"unchanged again", func() {}, Options{}, 2, true},
		{"another algorithm", func() {}, Options{Algorithm: digest.MD5}, 0, false},
		{"back to sha1: the entries are md5's now", func() {}, Options{}, 0, false},
		{"a damaged entry", func() {
			matches, _ := filepath.Glob(filepath.Join(cacheDir, "*.lines"))
			for _, m := range matches {
				os.WriteFile(m, []byte("x 1 1 u d sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"), 0o644)
			}
		}, Options{}, 0, true},
		{"a replaced file", func() {
			data, _ := os.ReadFile(a)
			os.Remove(a)
			os.WriteFile(a, data, 0o644)
		}, Options{}, 1, true},
		{"the entries plain, as an older warcdedup wrote them", func() {
			for _, ext := range []string{"lines", "facts", "counts"} {
				matches, _ := filepath.Glob(filepath.Join(cacheDir, "*."+ext))
				for _, m := range matches {
					data, _ := os.ReadFile(m)
					if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
						t.Errorf("%s is not gzip", m)
					}
					r, err := gzfile.Open(m)
					if err != nil {
						t.Fatal(err)
					}
					plain, err := io.ReadAll(r)
					r.Close()
					if err != nil {
						t.Fatal(err)
					}
					os.WriteFile(m, plain, 0o644)
				}
			}
		}, Options{}, 2, true},
	}
	for _, s := range steps {
		s.change()
		got, gotFacts, st := run(s.opt)
		if st.Cached != s.cached {
			t.Errorf("%s: %d files cached, want %d", s.name, st.Cached, s.cached)
		}
		if same := got == lines && gotFacts == facts; same != s.same {
			t.Errorf("%s: lines and facts equal the step before's: %v, want %v", s.name, same, s.same)
		}
		lines, facts = got, gotFacts
	}
}

// TestCacheRestamp proves that Restamp moves an entry to the file its
// input's bytes were carried into (the next run replays it from there,
// with the same lines), and refuses, changing nothing, when the entry is
// not of the version it is told to move from.
func TestCacheRestamp(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("body ", 100)
	data := []byte(warctest.Response("http://a/", "2024-01-01T00:00:00Z", body))
	a := warctest.WriteFile(t, dir, "a.warc", data)
	other := warctest.WriteFile(t, t.TempDir(), "unrelated", []byte("x"))
	c, err := NewCache(filepath.Join(t.TempDir(), "cache"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := func(path string) (string, Stats) {
		t.Helper()
		var out bytes.Buffer
		r := Runner{Jobs: 1, Cache: c}
		st, err := r.Run([]Input{{Path: path, Name: "a.warc", Size: int64(len(data))}}, &out)
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), st
	}
	lines, _ := run(a)
	oldInfo, _ := os.Stat(a)
	// The bytes carried into a new file (a new inode, as a rebuilt
	// package), the old one removed.
	b := warctest.WriteFile(t, t.TempDir(), "b.warc", data)
	newInfo, _ := os.Stat(b)
	otherInfo, _ := os.Stat(other)
	steps := []struct {
		name     string
		from     os.FileInfo
		wantErr  bool
		cachedAt string // the file the next run finds the entry of
	}{
		{"from a version the entry is not of", otherInfo, true, a},
		{"from the version the entry is of", oldInfo, false, b},
		{"again from the old version: the entry moved", oldInfo, true, b},
	}
	for _, s := range steps {
		err := c.Restamp("a.warc", s.from, newInfo)
		if (err != nil) != s.wantErr {
			t.Fatalf("%s: error %v, want one: %v", s.name, err, s.wantErr)
		}
		got, st := run(s.cachedAt)
		if st.Cached != 1 || got != lines {
			t.Errorf("%s: the run on %s replayed %d entries, lines %q (want %q)", s.name, filepath.Base(s.cachedAt), st.Cached, got, lines)
		}
	}
}

// TestRunnerGzipMembers proves that a Runner with Gzip writes the lines
// and facts a plain one writes, compressed, each file's as one gzip member
// that is its cache entry's file as it is (compressed once for both, and
// copied, not inflated and compressed again, where the cache replays the
// file); and the same where the entry is plain (an older warcdedup's),
// where there is no cache, and where there are no inputs (still gzip).
func TestRunnerGzipMembers(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("body ", 100)
	warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://a/", "2024-01-01T00:00:00Z", body)+
		warctest.Record("response", "http://a/img", "2024-01-01T00:00:01Z", "HTTP/1.1 200 OK\r\nContent-Type: image/png\r\n\r\n"+body)))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://b/", "2024-01-02T00:00:00Z", body)))
	warctest.WriteFile(t, dir, "c.warc", nil) // no lines: an empty member
	inputs, err := Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := filepath.Join(t.TempDir(), "cache")
	run := func(inputs []Input, gz, cache bool) (lines, facts []byte, st Stats) {
		t.Helper()
		var c *Cache
		if cache {
			if c, err = NewCache(cacheDir, Options{}); err != nil {
				t.Fatal(err)
			}
		}
		var out, fout bytes.Buffer
		r := Runner{Jobs: 2, Facts: &fout, Cache: c, Gzip: gz}
		st, err := r.Run(inputs, &out)
		if err != nil {
			t.Fatal(err)
		}
		return out.Bytes(), fout.Bytes(), st
	}
	inflate := func(t *testing.T, what string, data []byte) string {
		t.Helper()
		if !bytes.HasPrefix(data, []byte{0x1f, 0x8b}) {
			t.Fatalf("%s is not gzip: %q", what, data)
		}
		r, err := gzfile.NewReader(bytes.NewReader(data), what)
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return string(text)
	}
	// entries is the concatenation of the inputs' entry files of kind ext.
	entries := func(ext string) []byte {
		c, _ := NewCache(cacheDir, Options{})
		var all []byte
		for _, in := range inputs {
			p := c.paths(in.Name)
			data, err := os.ReadFile(map[string]string{"lines": p.lines, "facts": p.facts}[ext])
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, data...)
		}
		return all
	}
	plainLines, plainFacts, _ := run(inputs, false, false)
	if !strings.Contains(string(plainFacts), " 200 image/png\n") || strings.Count(string(plainLines), "\n") != 3 {
		t.Fatalf("plain run: lines %q, facts %q", plainLines, plainFacts)
	}
	for _, tc := range []struct {
		name    string
		before  func(t *testing.T)
		inputs  []Input
		cache   bool
		cached  int64
		entries bool // the output is the entries' files as they are
	}{
		{"no cache", func(*testing.T) {}, inputs, false, 0, false},
		{"read, the entries made", func(*testing.T) {}, inputs, true, 0, true},
		{"replayed from the entries", func(*testing.T) {}, inputs, true, 3, true},
		{"replayed from plain entries", func(t *testing.T) {
			for _, ext := range []string{"lines", "facts"} {
				matches, _ := filepath.Glob(filepath.Join(cacheDir, "*."+ext))
				for _, m := range matches {
					data, _ := os.ReadFile(m)
					os.WriteFile(m, []byte(inflate(t, m, data)), 0o644)
				}
			}
		}, inputs, true, 3, false},
		{"no inputs", func(*testing.T) {}, nil, true, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.before(t)
			lines, facts, st := run(tc.inputs, true, tc.cache)
			if st.Cached != tc.cached {
				t.Errorf("%d files replayed, want %d", st.Cached, tc.cached)
			}
			wantLines, wantFacts := string(plainLines), string(plainFacts)
			if tc.inputs == nil {
				wantLines, wantFacts = "", ""
			}
			if got := inflate(t, "lines", lines); got != wantLines {
				t.Errorf("lines %q, want %q", got, wantLines)
			}
			if got := inflate(t, "facts", facts); got != wantFacts {
				t.Errorf("facts %q, want %q", got, wantFacts)
			}
			if tc.entries && (!bytes.Equal(lines, entries("lines")) || !bytes.Equal(facts, entries("facts"))) {
				t.Errorf("the output is not the entries' files as they are: %d and %d bytes, entries %d and %d",
					len(lines), len(facts), len(entries("lines")), len(entries("facts")))
			}
		})
	}
}

// failWriter fails every write, as a full disk does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestEntryFileSharedStream proves that an entry file whose writes fail
// (the cache's disk full) still gives the writer it shares its compressed
// bytes with (a Runner's output, with Gzip) the whole member, and is not
// committed: the cache is an optimisation, the listing is not.
func TestEntryFileSharedStream(t *testing.T) {
	text := strings.Repeat("f.warc.gz 0 10 http://a/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n", 2000)
	name := filepath.Join(t.TempDir(), "x.lines")
	var shared bytes.Buffer
	e, err := createEntryFile(name, &shared)
	if err != nil {
		t.Fatal(err)
	}
	e.out.w = failWriter{}
	if _, err := io.WriteString(e, text); err != nil {
		t.Fatalf("write: %v", err)
	}
	if err := e.finish(); err != nil {
		t.Fatalf("finish: %v", err)
	}
	r, err := gzfile.NewReader(bytes.NewReader(shared.Bytes()), "shared")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(r); err != nil || string(got) != text {
		t.Errorf("the shared stream holds %d bytes, %v; want the %d written", len(got), err, len(text))
	}
	if _, err := e.commit(); err == nil {
		t.Error("the entry was committed")
	}
	if _, err := os.Stat(name); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the entry file is there: %v", err)
	}
}
