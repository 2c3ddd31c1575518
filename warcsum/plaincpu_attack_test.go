package warcsum

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"warcdedup/internal/gzfile"
	"warcdedup/internal/warctest"
	"warcdedup/rewritelog"
)

// inflateAll reads a Runner's gzip output as the stages after it do.
func inflateAll(t *testing.T, what string, data []byte) (string, error) {
	t.Helper()
	if !bytes.HasPrefix(data, []byte{0x1f, 0x8b, 0x08}) {
		return "", fmt.Errorf("%s is not gzip: %.40q", what, data)
	}
	r, err := gzfile.NewReader(bytes.NewReader(data), what)
	if err != nil {
		return "", err
	}
	text, err := io.ReadAll(r)
	return string(text), err
}

// editFile changes the named file's bytes with edit.
func editFile(t *testing.T, name string, edit func([]byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, edit(bytes.Clone(data)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gzipOf is text as one gzip member.
func gzipOf(text string) []byte {
	var b bytes.Buffer
	z := gzfile.NewWriter(&b)
	io.WriteString(z, text)
	z.Close()
	return b.Bytes()
}

// plainOf is a gzip entry file's text.
func plainOf(t *testing.T, data []byte) []byte {
	t.Helper()
	text, err := inflateAll(t, "entry", data)
	if err != nil {
		t.Fatal(err)
	}
	return []byte(text)
}

// TestRunnerGzipDamagedEntry proves that a cache entry whose files are no
// longer the ones made (cut short anywhere, the trailer included; a bit
// flipped in the data, the CRC-32 or the size; bytes or another member
// added; another file's entry; emptied; a plain entry, an older
// warcdedup's, changed) is never replayed as the file's lines by a
// Runner with Gzip, which copies an entry's member as it is: the file is
// read again, and the listing and facts are a gzip stream that reads as
// what reading the files gives. An entry whose text is unchanged (an
// empty member added, the plain form) is still replayed, and its member
// still reads whole in the listing.
func TestRunnerGzipDamagedEntry(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("body ", 100)
	var recs []string
	for i := range 40 {
		recs = append(recs, warctest.Response(fmt.Sprintf("http://a/%d", i), "2024-01-01T00:00:00Z", body+fmt.Sprint(i)))
	}
	a := warctest.WriteFile(t, dir, "a.warc.gz", warctest.Gzip(recs...))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://b/", "2024-01-02T00:00:00Z", body)))
	inputs, err := Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, cacheDir string, gz bool) (lines, facts string, st Stats) {
		t.Helper()
		var c *Cache
		if cacheDir != "" {
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
		if !gz {
			return out.String(), fout.String(), st
		}
		if lines, err = inflateAll(t, "listing", out.Bytes()); err != nil {
			t.Fatalf("the listing does not read: %v", err)
		}
		if facts, err = inflateAll(t, "facts", fout.Bytes()); err != nil {
			t.Fatalf("the facts do not read: %v", err)
		}
		return lines, facts, st
	}
	wantLines, wantFacts, _ := run(t, "", false)
	if strings.Count(wantLines, "\n") != 41 {
		t.Fatalf("plain run: %q", wantLines)
	}
	flip := func(at func(n int) int, bit byte) func([]byte) []byte {
		return func(d []byte) []byte { d[at(len(d))] ^= bit; return d }
	}
	cut := func(at func(n int) int) func([]byte) []byte {
		return func(d []byte) []byte { return d[:at(len(d))] }
	}
	cases := []struct {
		name string
		file func(p entryFiles) string // the entry file of a.warc.gz changed
		// edit changes the file's bytes d; other is b.warc's file of
		// the same kind.
		edit   func(t *testing.T, d, other []byte) []byte
		cached int64 // files replayed after the change
	}{
		{"lines cut by a byte (the size)", linesOf, noT2(cut(func(n int) int { return n - 1 })), 1},
		{"lines cut by the whole trailer", linesOf, noT2(cut(func(n int) int { return n - 8 })), 1},
		{"lines cut by the trailer and a byte", linesOf, noT2(cut(func(n int) int { return n - 9 })), 1},
		{"lines cut in the middle", linesOf, noT2(cut(func(n int) int { return n / 2 })), 1},
		{"lines cut to the header", linesOf, noT2(cut(func(n int) int { return 10 })), 1},
		{"lines emptied", linesOf, noT2(cut(func(n int) int { return 0 })), 1},
		{"lines: a bit flipped in the data", linesOf, noT2(flip(func(n int) int { return n / 2 }, 0x04)), 1},
		{"lines: a bit flipped in the CRC-32", linesOf, noT2(flip(func(n int) int { return n - 7 }, 0x01)), 1},
		{"lines: a bit flipped in the size", linesOf, noT2(flip(func(n int) int { return n - 2 }, 0x01)), 1},
		{"lines: a bit flipped in the header's OS byte", linesOf, noT2(flip(func(n int) int { return 9 }, 0x01)), 2},
		{"lines: garbage after the member", linesOf, func(_ *testing.T, d, _ []byte) []byte { return append(d, "garbage"...) }, 1},
		{"lines: zero bytes after the member", linesOf, func(_ *testing.T, d, _ []byte) []byte { return append(d, 0, 0, 0, 0, 0, 0, 0, 0) }, 1},
		{"lines: a member of a line more after it", linesOf, func(_ *testing.T, d, _ []byte) []byte {
			return append(d, gzipOf("a.warc.gz 1 1 http://x/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n")...)
		}, 1},
		{"lines: an empty member after it (the same text)", linesOf, func(_ *testing.T, d, _ []byte) []byte { return append(d, gzipOf("")...) }, 2},
		{"lines: the text compressed again by another writer (the same text)", linesOf, func(t *testing.T, d, _ []byte) []byte {
			return gzipOf(string(plainOf(t, d)))
		}, 2},
		{"lines plain, as an older warcdedup wrote them", linesOf, func(t *testing.T, d, _ []byte) []byte { return plainOf(t, d) }, 2},
		{"lines plain, a line dropped", linesOf, func(t *testing.T, d, _ []byte) []byte {
			p := plainOf(t, d)
			return p[bytes.IndexByte(p, '\n')+1:]
		}, 1},
		{"lines plain, cut mid-line", linesOf, func(t *testing.T, d, _ []byte) []byte {
			p := plainOf(t, d)
			return p[:len(p)-5]
		}, 1},
		{"lines: b.warc's entry", linesOf, func(_ *testing.T, _, other []byte) []byte { return other }, 1},
		{"facts cut by the trailer", factsOf, noT2(cut(func(n int) int { return n - 8 })), 1},
		{"facts: a bit flipped in the data", factsOf, noT2(flip(func(n int) int { return n / 2 }, 0x20)), 1},
		{"facts: garbage after the member", factsOf, func(_ *testing.T, d, _ []byte) []byte { return append(d, 0x1f, 0x8b) }, 1},
		{"counts cut by the trailer", countsOf, noT2(cut(func(n int) int { return n - 8 })), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cacheDir := filepath.Join(t.TempDir(), "cache")
			if _, _, st := run(t, cacheDir, true); st.Cached != 0 {
				t.Fatalf("first run: %+v", st)
			}
			c, _ := NewCache(cacheDir, Options{})
			other, err := os.ReadFile(tc.file(c.paths("b.warc")))
			if err != nil {
				t.Fatal(err)
			}
			editFile(t, tc.file(c.paths("a.warc.gz")), func(d []byte) []byte { return tc.edit(t, d, other) })
			lines, facts, st := run(t, cacheDir, true)
			if lines != wantLines || facts != wantFacts {
				t.Errorf("after the change the listing reads\n%.300s\nfacts\n%.300s\nwant\n%.300s\n%.300s", lines, facts, wantLines, wantFacts)
			}
			if st.Cached != tc.cached {
				t.Errorf("%d files replayed, want %d", st.Cached, tc.cached)
			}
			// And the run after it, from the entries it left.
			lines, facts, st = run(t, cacheDir, true)
			if lines != wantLines || facts != wantFacts || st.Cached != 2 {
				t.Errorf("the run after: %d files replayed, listing equal %v, facts equal %v", st.Cached, lines == wantLines, facts == wantFacts)
			}
		})
	}
	t.Run("a.warc.gz changed, its size and times restored", func(t *testing.T) {
		cacheDir := filepath.Join(t.TempDir(), "cache")
		run(t, cacheDir, true)
		fi, _ := os.Stat(a)
		data, _ := os.ReadFile(a)
		changed := warctest.Gzip(append(append([]string{}, recs[:39]...), warctest.Response("http://a/39", "2024-01-01T00:00:00Z", body+"X"))...)
		changed = append(changed, make([]byte, len(data)-len(changed))...)[:len(data)]
		if err := os.WriteFile(a, changed, 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(a, fi.ModTime(), fi.ModTime())
		defer func() {
			os.WriteFile(a, data, 0o644)
		}()
		want, wantF, _ := run(t, "", false)
		lines, facts, st := run(t, cacheDir, true)
		if lines != want || facts != wantF || st.Cached != 1 {
			t.Errorf("%d files replayed (want 1), listing as read: %v, facts: %v", st.Cached, lines == want, facts == wantF)
		}
	})
}

// recompress is the gzip entry file d with its text changed by edit.
func recompress(t *testing.T, d []byte, edit func([]byte) []byte) []byte {
	t.Helper()
	p := plainOf(t, d)
	q := edit(bytes.Clone(p))
	if bytes.Equal(p, q) {
		t.Fatalf("the edit changed nothing in %q", p)
	}
	return gzipOf(string(q))
}

func linesOf(p entryFiles) string  { return p.lines }
func factsOf(p entryFiles) string  { return p.facts }
func countsOf(p entryFiles) string { return p.counts }

func noT(f func([]byte) []byte) func(*testing.T, []byte) []byte {
	return func(_ *testing.T, d []byte) []byte { return f(d) }
}

func noT2(f func([]byte) []byte) func(*testing.T, []byte, []byte) []byte {
	return func(_ *testing.T, d, _ []byte) []byte { return f(d) }
}

// TestRunnerGzipEntryNotWritable proves that an entry whose file cannot
// be put in place (a directory stands at its name) fails only the entry:
// the listing and facts are whole, and the next run reads the file again.
func TestRunnerGzipEntryNotWritable(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("body ", 100)
	warctest.WriteFile(t, dir, "a.warc", []byte(warctest.Response("http://a/", "2024-01-01T00:00:00Z", body)))
	inputs, err := Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{"lines", "facts", "counts", "stamp"} {
		t.Run(ext, func(t *testing.T) {
			cacheDir := filepath.Join(t.TempDir(), "cache")
			c, err := NewCache(cacheDir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := c.paths("a.warc")
			blocked := map[string]string{"lines": p.lines, "facts": p.facts, "counts": p.counts, "stamp": p.stamp}[ext]
			if err := os.MkdirAll(filepath.Join(blocked, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			var plain, plainF bytes.Buffer
			if _, err := (&Runner{Jobs: 1, Facts: &plainF}).Run(inputs, &plain); err != nil {
				t.Fatal(err)
			}
			for round := range 2 {
				var out, fout bytes.Buffer
				st, err := (&Runner{Jobs: 1, Facts: &fout, Cache: c, Gzip: true}).Run(inputs, &out)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				lines, lerr := inflateAll(t, "listing", out.Bytes())
				facts, ferr := inflateAll(t, "facts", fout.Bytes())
				if lerr != nil || ferr != nil || lines != plain.String() || facts != plainF.String() || st.Cached != 0 {
					t.Errorf("round %d: %d replayed; listing %q %v; facts %q %v", round, st.Cached, lines, lerr, facts, ferr)
				}
			}
		})
	}
}

// TestDeriveDamagedOldEntry proves that Derive, checking the old entry's
// sums as its walk reads the files, derives nothing from an entry whose
// files changed in any way the walk itself would not notice (a member of
// lines added, the trailer cut, a bit of the CRC-32 flipped, each of the
// three files) and stores no entry: the next run reads the file again.
func TestDeriveDamagedOldEntry(t *testing.T) {
	records := deriveRecords()
	extraLine := "f.warc.gz 999999 1 http://z/ 20240101000000 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567\n"
	cases := []struct {
		name    string
		file    func(p entryFiles) string
		edit    func(t *testing.T, d []byte) []byte
		derived bool
	}{
		{"nothing changed", linesOf, func(_ *testing.T, d []byte) []byte { return d }, true},
		{"lines: a member of a line more after it", linesOf, func(_ *testing.T, d []byte) []byte { return append(d, gzipOf(extraLine)...) }, false},
		{"lines: the trailer cut", linesOf, noT(func(d []byte) []byte { return d[:len(d)-8] }), false},
		{"lines: a bit of the CRC-32 flipped", linesOf, noT(func(d []byte) []byte { d[len(d)-8] ^= 1; return d }), false},
		{"lines: garbage after", linesOf, func(_ *testing.T, d []byte) []byte { return append(d, '\n') }, false},
		{"facts: the trailer cut", factsOf, noT(func(d []byte) []byte { return d[:len(d)-8] }), false},
		{"facts: a line more (plain)", factsOf, func(t *testing.T, d []byte) []byte { return append(plainOf(t, d), "x\n"...) }, false},
		{"facts: the size flipped", factsOf, noT(func(d []byte) []byte { d[len(d)-1] ^= 1; return d }), false},
		{"counts: the trailer cut", countsOf, noT(func(d []byte) []byte { return d[:len(d)-8] }), false},
		{"counts: an empty member after it (the same text)", countsOf, func(_ *testing.T, d []byte) []byte { return append(d, gzipOf("")...) }, true},
		{"counts: plain, a byte more", countsOf, func(t *testing.T, d []byte) []byte { return append(plainOf(t, d), '\n') }, false},
		// Changes the walk cannot see: only the sums find them.
		{"lines: a copied record's URI changed", linesOf, func(t *testing.T, d []byte) []byte {
			return recompress(t, d, func(p []byte) []byte { return bytes.Replace(p, []byte("http://a/"), []byte("http://A/"), 1) })
		}, false},
		{"facts: a MIME type changed", factsOf, func(t *testing.T, d []byte) []byte {
			return recompress(t, d, func(p []byte) []byte {
				return bytes.Replace(p, []byte("application/octet-stream"), []byte("application/octet-strean"), 1)
			})
		}, false},
		{"counts: payload bytes moved between two copied records", countsOf, func(t *testing.T, d []byte) []byte {
			return recompress(t, d, func(p []byte) []byte {
				lines := bytes.SplitAfter(p, []byte("\n"))
				shift := func(i, by int) {
					f := bytes.Fields(lines[i])
					n, _ := strconv.Atoi(string(f[3]))
					f[3] = []byte(strconv.Itoa(n + by))
					lines[i] = append(bytes.Join(f, []byte(" ")), '\n')
				}
				shift(1, 1)
				shift(5, -1)
				return bytes.Join(lines, nil)
			})
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := store(true, records)
			dir := t.TempDir()
			path := warctest.WriteFile(t, dir, "f.warc.gz", old.data)
			cache, err := NewCache(filepath.Join(t.TempDir(), "cache"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			runCached(t, dir, cache)
			oldInfo := stat(t, path)
			editFile(t, tc.file(cache.paths("f.warc.gz")), func(d []byte) []byte { return tc.edit(t, d) })
			newRecords := append([]string{}, records...)
			newRecords[3] = revisitOf("http://b/")
			nw := store(true, newRecords)
			tmp := path + ".new"
			if err := os.WriteFile(tmp, nw.data, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
			e := rewritelog.Entry{File: "f.warc.gz", OldOffset: old.offs[3], OldLength: old.lengths[3],
				NewOffset: nw.offs[3], NewLength: nw.lengths[3], Kind: rewritelog.Revisit}
			err = cache.Derive(rewritelog.Replacement{Name: "f.warc.gz", Path: path, Old: oldInfo, New: stat(t, path),
				Entries: []rewritelog.Entry{e}, SHA256: "abc"})
			if (err == nil) != tc.derived {
				t.Fatalf("derived: %v, want %v", err, tc.derived)
			}
			lines, facts, st := runCached(t, dir, cache)
			fresh, _ := NewCache(filepath.Join(t.TempDir(), "fresh"), Options{})
			wantLines, wantFacts, _ := runCached(t, dir, fresh)
			if st.Cached != b2i(tc.derived) || lines != wantLines || facts != wantFacts {
				t.Errorf("next run: %d replayed (want %d); lines as read: %v; facts: %v", st.Cached, b2i(tc.derived), lines == wantLines, facts == wantFacts)
			}
		})
	}
}

// TestRunnerSpoolCannotBeCreated proves that a Runner whose spool of a
// file's output cannot get its temporary file (TMPDIR gone or full of
// inodes) fails the run, the output being unusable, rather than passing
// on, as if the input file had failed, output that holds part of that
// file's lines: with Gzip a member cut short inside the listing, which no
// later stage can read (and a resumed run, the listing committed, never
// hashes again); plain, a file's lines cut short, reported as the file's
// damage.
func TestRunnerSpoolCannotBeCreated(t *testing.T) {
	dir := t.TempDir()
	body := strings.Repeat("body ", 100)
	var recs []string
	for i := range 200 {
		recs = append(recs, warctest.Response(fmt.Sprintf("http://a/%d", i), "2024-01-01T00:00:00Z", body+fmt.Sprint(i)))
	}
	warctest.WriteFile(t, dir, "a.warc.gz", warctest.Gzip(recs...))
	warctest.WriteFile(t, dir, "b.warc", []byte(warctest.Response("http://b/", "2024-01-02T00:00:00Z", body)))
	inputs, err := Collect([]string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := (&Runner{Jobs: 1}).Run(inputs, &want); err != nil {
		t.Fatal(err)
	}
	cacheRoot := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(t.TempDir(), "gone"))
	for _, tc := range []struct {
		name      string
		gz, cache bool
	}{
		{"gzip, no cache", true, false},
		{"gzip, cache", true, true},
		{"plain, no cache", false, false},
		{"plain, cache", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c *Cache
			if tc.cache {
				if c, err = NewCache(filepath.Join(cacheRoot, tc.name), Options{}); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			var failed []string
			r := Runner{Jobs: 2, Cache: c, Gzip: tc.gz, spoolMemory: 256,
				OnFileError: func(in Input, err error) { failed = append(failed, fmt.Sprintf("%s: %v", in.Name, err)) }}
			_, err := r.Run(inputs, &out)
			if err != nil {
				t.Logf("the run failed: %v", err)
				return
			}
			got := out.String()
			if tc.gz {
				if got, err = inflateAll(t, "listing", out.Bytes()); err != nil {
					t.Fatalf("the run succeeded (files failed: %q), its listing does not read: %v", failed, err)
				}
			}
			if got != want.String() {
				t.Errorf("the run succeeded (files failed: %q) with %d of the %d lines", failed, strings.Count(got, "\n"), strings.Count(want.String(), "\n"))
			}
		})
	}
}
