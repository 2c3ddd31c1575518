package split

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/manifest"
)

// randomLines makes n lines over fewer digests, so digests repeat.
func randomLines(n int, algo digest.Algorithm) []manifest.Line {
	rng := rand.New(rand.NewPCG(1, 2))
	var lines []manifest.Line
	for i := range n {
		sum := make([]byte, algo.Size())
		seed := rng.IntN(n / 3)
		for j := range sum {
			sum[j] = byte(seed >> (8 * (j % 4)) * (j + 1))
		}
		lines = append(lines, manifest.Line{File: fmt.Sprintf("f%d.warc.gz", i%7), Offset: int64(i * 100), Length: 99,
			URI: fmt.Sprintf("http://h/%d", i), Date: fmt.Sprintf("2020-01-%02dT00:00:00Z", 1+i%28), Digest: algo.Format(sum), Fields: 6})
	}
	return lines
}

func text(lines []manifest.Line) string {
	var b []byte
	for i := range lines {
		b = lines[i].Append(b)
	}
	return string(b)
}

func sorted(lines []manifest.Line, o *manifest.Order) []manifest.Line {
	s := slices.Clone(lines)
	slices.SortStableFunc(s, func(a, b manifest.Line) int { return o.Compare(&a, &b) })
	return s
}

func readParts(t *testing.T, dir string) (names []string, contents map[string]string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	contents = map[string]string{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s left behind", e.Name())
		}
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		names = append(names, e.Name())
		contents[e.Name()] = string(b)
	}
	return names, contents
}

func digestsOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if f := strings.Fields(l); len(f) >= 6 {
			m[f[5]] = true
		}
	}
	return m
}

// TestBySize proves parts never split a cluster and concatenate to the
// input.
func TestBySize(t *testing.T) {
	input := text(sorted(randomLines(600, digest.SHA1), manifest.ByDigest))
	dir := t.TempDir()
	parts := NewParts(filepath.Join(dir, "p"))
	if err := BySize(manifest.NewReader(strings.NewReader(input), "in"), parts, 10000); err != nil {
		t.Fatal(err)
	}
	if err := parts.Commit(); err != nil {
		t.Fatal(err)
	}
	names, contents := readParts(t, dir)
	if len(names) < 5 {
		t.Fatalf("%d parts, want several", len(names))
	}
	var all strings.Builder
	seen := map[string]string{}
	for _, n := range names {
		all.WriteString(contents[n])
		for d := range digestsOf(contents[n]) {
			if prev, ok := seen[d]; ok {
				t.Errorf("digest %s in %s and %s", d, prev, n)
			}
			seen[d] = n
		}
	}
	if all.String() != input {
		t.Error("parts in order are not the input")
	}
}

// TestByHashRange proves every digest lands in one part, and that the parts
// sorted on their own and concatenated in order are the sorted whole, for
// base32 (sha1) and hex digests.
func TestByHashRange(t *testing.T) {
	for _, algo := range []digest.Algorithm{digest.SHA1, digest.MD5} {
		t.Run(algo.String(), func(t *testing.T) {
			lines := randomLines(900, algo)
			dir := t.TempDir()
			parts := NewParts(filepath.Join(dir, "r"))
			if err := ByHashRange(manifest.NewReader(strings.NewReader(text(lines)), "in"), "in", parts, 5); err != nil {
				t.Fatal(err)
			}
			parts.Commit()
			names, contents := readParts(t, dir)
			var got []manifest.Line
			for _, n := range names {
				var part []manifest.Line
				for _, s := range strings.Split(strings.TrimSpace(contents[n]), "\n") {
					l, err := manifest.Parse([]byte(s))
					if err != nil {
						t.Fatal(err)
					}
					part = append(part, l)
				}
				got = append(got, sorted(part, manifest.ByDigest)...)
			}
			if text(got) != text(sorted(lines, manifest.ByDigest)) {
				t.Error("sorted parts in part order differ from the sorted whole")
			}
		})
	}
}

// TestDigestlessRevisitLines proves that a revisit line without a digest
// in the manifest's algorithm reaches every part of a split by size or by
// hash range (the response it refers to may be in any of them), ahead of
// the part's clusters, and that every hash range is written even if empty.
func TestDigestlessRevisitLines(t *testing.T) {
	pin := manifest.Line{File: "r.warc", Offset: 5, Length: 9, URI: "http://r/", Date: "2021-01-01T00:00:00Z",
		Digest: manifest.NoDigest, Class: manifest.RevisitClass, Copy: manifest.RevisitCopy, RefURI: "http://h/7", RefDate: "*", Fields: 10}
	lines := append([]manifest.Line{pin}, randomLines(300, digest.SHA1)...)
	splits := []struct {
		name  string
		split func(in *manifest.Reader, parts *Parts) error
	}{
		{"by size", func(in *manifest.Reader, parts *Parts) error { return BySize(in, parts, 3000) }},
		{"by hash range", func(in *manifest.Reader, parts *Parts) error { return ByHashRange(in, "in", parts, 40) }},
	}
	for _, sp := range splits {
		t.Run(sp.name, func(t *testing.T) {
			dir := t.TempDir()
			parts := NewParts(filepath.Join(dir, "p"))
			in := text(sorted(lines, manifest.ByDigest))
			if err := sp.split(manifest.NewReader(strings.NewReader(in), "in"), parts); err != nil {
				t.Fatal(err)
			}
			if err := parts.Commit(); err != nil {
				t.Fatal(err)
			}
			names, contents := readParts(t, dir)
			if len(names) < 3 {
				t.Fatalf("%d parts, want several", len(names))
			}
			for _, n := range names {
				if !strings.HasPrefix(contents[n], pin.String()+"\n") {
					t.Errorf("part %s does not start with the revisit line", n)
				}
			}
		})
	}
}

// TestByHost proves the host map: exact names, patterns, first match, and
// that an unmatched file stops the split with its line.
func TestByHost(t *testing.T) {
	rules, err := ReadHostMap(strings.NewReader("# map\nspecial.warc.gz store9\ncrawl-2012-* store1\n*  store2\n"), "map")
	if err != nil {
		t.Fatal(err)
	}
	in := "special.warc.gz 0 9 u d sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n" +
		"crawl-2012-01.warc.gz 0 9 u d sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n" +
		"crawl-2013-01.warc.gz 0 9 u d sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
	dir := t.TempDir()
	parts := NewParts(filepath.Join(dir, "h"))
	if err := ByHost(manifest.NewReader(strings.NewReader(in), "in"), "in", parts, rules); err != nil {
		t.Fatal(err)
	}
	parts.Commit()
	_, contents := readParts(t, dir)
	for part, file := range map[string]string{"h-store9": "special", "h-store1": "crawl-2012", "h-store2": "crawl-2013"} {
		if !strings.HasPrefix(contents[part], file) || strings.Count(contents[part], "\n") != 1 {
			t.Errorf("%s: %q", part, contents[part])
		}
	}

	rules, _ = ReadHostMap(strings.NewReader("crawl-* store1\n"), "map")
	parts = NewParts(filepath.Join(t.TempDir(), "h"))
	err = ByHost(manifest.NewReader(strings.NewReader(in), "in"), "in", parts, rules)
	parts.Abort()
	if err == nil || !strings.Contains(err.Error(), "in:1: no host rule matches special.warc.gz") {
		t.Errorf("err %v", err)
	}
}

// TestAbortLeavesNothing proves a failed split leaves no part behind.
func TestAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	parts := NewParts(filepath.Join(dir, "p"))
	in := "a 0 9 u d sha1:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB\na 9 9 u d sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
	if err := BySize(manifest.NewReader(strings.NewReader(in), "in"), parts, 1); err == nil {
		t.Fatal("unsorted input accepted")
	}
	parts.Abort()
	if names, _ := readParts(t, dir); len(names) != 0 {
		t.Errorf("left behind: %v", names)
	}
}
