package stage

import (
	"crypto/sha1"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/manifest"
)

// digestsAgainParsed is digestsAgain as it was, every line parsed: the
// reference the split lines must agree with.
func digestsAgainParsed(t *testing.T, c *Collide, apart string) map[string]bool {
	t.Helper()
	digests := map[string]bool{}
	if err := EachLine(apart, func(l *manifest.Line) error {
		digests[l.Digest] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var extra extraOriginals
	if err := EachLine(c.Numbered, func(l *manifest.Line) error {
		if extra.is(l) || c.also(l) {
			digests[l.Digest] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return digests
}

// TestDigestsAgainSplitAsParsed: the digests the collisions stage takes
// from the first numbering, its lines split into fields and not parsed,
// are those it took parsing every line: the originals of a class beyond
// its first (copy 1 twice in a class), not a second class's first; the
// duplicates in ARC files (Also), not those in WARC files; the digests of
// the lines kept apart; none for revisit lines or pins. A damaged line is
// an error naming its line.
func TestDigestsAgainSplitAsParsed(t *testing.T) {
	dig := func(s string) string {
		sum := sha1.Sum([]byte(s))
		return digest.SHA1.Format(sum[:])
	}
	a, b, c, d, e := dig("a"), dig("b"), dig("c"), dig("d"), dig("e")
	line := func(file, uri, dig, num string) string {
		return file + " 0 10 " + uri + " 2024-01-01T00:00:01Z " + dig + " " + num + "\n"
	}
	cases := []struct {
		name     string
		numbered []string
		apart    []string
		want     []string
		err      string
	}{
		{"nothing to do", []string{
			line("x.warc", "http://a/", a, "0 1 - -"),
			line("x.warc", "http://a2/", a, "0 2 http://a/ 2024-01-01T00:00:01Z"),
			line("x.warc", "http://b/", b, "0 1 - -"),
			line("x.warc", "http://b2/", b, "1 1 - -"),
		}, nil, nil, ""},
		{"original beyond its class's first", []string{
			line("x.warc", "http://a/", a, "0 1 - -"),
			line("x.warc", "http://a1/", a, "0 1 - -"),
			line("x.warc", "http://a2/", a, "0 2 http://a/ 2024-01-01T00:00:01Z"),
			line("x.warc", "http://b/", b, "0 1 - -"),
			line("x.warc", "http://c/", c, "3 1 - -"),
			line("x.warc", "http://c2/", c, "3 1 - -"),
		}, nil, []string{a, c}, ""},
		{"the same class in the next digest", []string{
			line("x.warc", "http://a/", a, "0 1 - -"),
			line("x.warc", "http://b/", b, "0 1 - -"),
		}, nil, nil, ""},
		{"duplicates in ARC files", []string{
			line("x.warc", "http://a/", a, "0 1 - -"),
			line("y.arc.gz", "http://a2/", a, "0 2 http://a/ 2024-01-01T00:00:01Z"),
			line("x.warc", "http://b/", b, "0 1 - -"),
			line("x.warc", "http://b2/", b, "0 3 http://b/ 2024-01-01T00:00:01Z"),
			line("y.arc.gz", "http://c/", c, "0 1 - -"),
			line("x.warc", "http://c2/", c, "0 2 http://c/ 2024-01-01T00:00:01Z"),
			line("y.arc.gz", "http://d/", d, "0 12 http://d0/ 2024-01-01T00:00:01Z"),
		}, nil, []string{a, d}, ""},
		{"revisit lines and pins", []string{
			line("x.warc", "http://r/", "-", "-1 0 http://p/ 2024-01-01T00:00:01Z"),
			line("x.warc", "http://a/", a, "-1 0 http://a/ 2024-01-01T00:00:01Z"),
			line("x.warc", "http://a1/", a, "0 1 - -"),
		}, nil, nil, ""},
		{"kept apart", []string{
			line("x.warc", "http://e/", e, "0 1 - -"),
			line("x.warc", "http://e2/", e, "0 2 http://e/ 2024-01-01T00:00:01Z"),
		}, []string{line("x.warc", "http://e2/", e, "0 2 http://e/ 2024-01-01T00:00:01Z")}, []string{e}, ""},
		{"lines of six fields", []string{
			"x.warc 0 10 http://a/ 2024-01-01T00:00:01Z " + a + "\n",
		}, nil, nil, ""},
		{"a damaged line", []string{
			line("x.warc", "http://a/", a, "0 1 - -"),
			line("x.warc", "http://a1/", a, "0 x - -"),
		}, nil, nil, "line 2"},
		{"a damaged duplicate", []string{
			line("x.arc", "http://a/", a, "0 1 - -"),
			"x.arc 0 0 http://a2/ 2024-01-01T00:00:01Z " + a + " 0 2 http://a/ 2024-01-01T00:00:01Z\n",
		}, nil, nil, "line 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			numbered, apart := filepath.Join(dir, "numbered"), filepath.Join(dir, "apart")
			if err := os.WriteFile(numbered, []byte(strings.Join(tc.numbered, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(apart, []byte(strings.Join(tc.apart, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			col := &Collide{Numbered: numbered, Also: InARCFile}
			got, err := col.digestsAgain(apart)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), numbered) {
					t.Fatalf("error %v, want one naming %s %s", err, numbered, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			keys := slices.Sorted(maps.Keys(got))
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(keys, want) {
				t.Errorf("digests %q, want %q", keys, want)
			}
			if ref := slices.Sorted(maps.Keys(digestsAgainParsed(t, col, apart))); !slices.Equal(keys, ref) {
				t.Errorf("digests %q, parsing every line %q", keys, ref)
			}
		})
	}
}

// TestDigestsAgainDamagedAsParsed: a numbered line the split scan would
// take as one Append writes, though manifest.Parse refuses it (a class
// negative, with a leading zero or out of range, a copy 0 on a
// response, a copy 1 with a reference, a duplicate without one, a
// length of 0, an offset or digest not in manifest form), and a
// numbering cut short (its last line without its line feed, a line
// ending in a carriage return), is an error naming its line, as it was
// when every line was parsed: not a line taken for what it is not.
func TestDigestsAgainDamagedAsParsed(t *testing.T) {
	sum := sha1.Sum([]byte("a"))
	a := digest.SHA1.Format(sum[:])
	line := func(uri, num string) string {
		return "x.warc 0 10 " + uri + " 2024-01-01T00:00:01Z " + a + " " + num + "\n"
	}
	first := line("http://a/", "0 1 - -")
	dup := line("http://a2/", "0 2 http://a/ 2024-01-01T00:00:01Z") // Also asked of x.warc
	cases := []struct {
		name, numbered, err string
	}{
		{"a negative class", first + line("http://a1/", "-5 1 - -"), "line 2"},
		{"a class with a leading zero", first + line("http://a1/", "00 1 - -"), "line 2"},
		{"a class out of range", first + line("http://a1/", "99999999999 1 - -"), "line 2"},
		{"a copy 0 on a response", first + line("http://a1/", "3 0 http://a/ 2024-01-01T00:00:01Z"), "line 2"},
		{"a copy 1 with a reference", first + line("http://a1/", "1 1 http://a/ 2024-01-01T00:00:01Z"), "line 2"},
		{"a duplicate without a reference", first + dup + line("http://a1/", "0 2 - -"), "line 3"},
		{"a duplicate of a negative class", first + dup + line("http://a1/", "-2 2 http://a/ 2024-01-01T00:00:01Z"), "line 3"},
		{"a duplicate of class -1", first + dup + line("http://a1/", "-1 2 http://a/ 2024-01-01T00:00:01Z"), "line 3"},
		{"an empty field", first + "x.warc 0 10 http://a1/ 2024-01-01T00:00:01Z  0 1 - -\n", "line 2"},
		{"an empty date in a duplicate", first + dup + "x.warc 0 10 http://a1/  " + a + " 0 2 http://a/ 2024-01-01T00:00:01Z\n", "line 3"},
		{"the last line cut short", first + strings.TrimSuffix(line("http://a1/", "0 1 - -"), "\n"), "line 2"},
		{"a carriage return", first + strings.TrimSuffix(line("http://a1/", "0 1 - -"), "\n") + "\r\n", "line 2"},
		{"a length of 0", first + strings.Replace(line("http://a1/", "0 1 - -"), " 0 10 ", " 0 0 ", 1), "line 2"},
		{"an offset with a leading zero", first + strings.Replace(line("http://a1/", "0 1 - -"), " 0 10 ", " 00 10 ", 1), "line 2"},
		{"a digest in lower case", first + strings.Replace(line("http://a1/", "0 1 - -"), a, strings.ToLower(a), 1), "line 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			numbered, apart := filepath.Join(dir, "numbered"), filepath.Join(dir, "apart")
			if err := os.WriteFile(numbered, []byte(tc.numbered), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(apart, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := EachLine(numbered, func(*manifest.Line) error { return nil }); err == nil {
				t.Fatalf("manifest.Reader takes %q", tc.numbered)
			}
			col := &Collide{Numbered: numbered, Also: InARCFile}
			got, err := col.digestsAgain(apart)
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), numbered) {
				t.Fatalf("digests %q, error %v; want an error naming %s %s", slices.Sorted(maps.Keys(got)), err, numbered, tc.err)
			}
		})
	}
}

// BenchmarkDigestsAgain: the scan of a numbering of 200,000 lines (an
// original and a duplicate in a WARC file for each digest), which takes
// no digest.
func BenchmarkDigestsAgain(b *testing.B) {
	dir := b.TempDir()
	numbered, apart := filepath.Join(dir, "numbered"), filepath.Join(dir, "apart")
	var buf []byte
	for i := range 100000 {
		sum := sha1.Sum([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		d := digest.SHA1.Format(sum[:])
		buf = append(buf, "x.warc.gz 1234567 8901 http://example.com/some/page/"+d[5:15]+" 2024-01-01T00:00:01Z "+d+" 0 1 - -\n"...)
		buf = append(buf, "y.warc.gz 7654321 8901 http://example.com/other/page/"+d[5:15]+" 2024-02-01T00:00:01Z "+d+" 0 2 http://example.com/some/page/"+d[5:15]+" 2024-01-01T00:00:01Z\n"...)
	}
	if err := os.WriteFile(numbered, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(apart, nil, 0o644); err != nil {
		b.Fatal(err)
	}
	col := &Collide{Numbered: numbered, Also: InARCFile}
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		if _, err := col.digestsAgain(apart); err != nil {
			b.Fatal(err)
		}
	}
}
