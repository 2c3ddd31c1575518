package manifest_test

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"warcdedup/manifest"
)

// TestTableFind proves that every line of a digest is found, wherever the
// marks fall (tables from a few lines to many stretches, long lines
// included), and nothing else; and that an unsorted table is refused.
func TestTableFind(t *testing.T) {
	digestOf := func(i int) string { return fmt.Sprintf("md5:%032x", i*7919) }
	for _, n := range []int{1, 3, 100, 5000} {
		t.Run(fmt.Sprint(n, " digests"), func(t *testing.T) {
			var b bytes.Buffer
			want := map[string]int{}
			for i := range n {
				d := digestOf(i)
				copies := 1 + i%3
				for c := range copies {
					uri := "http://h/" + strings.Repeat("x", (i*31)%300)
					if i == n/2 {
						uri = "http://h/" + strings.Repeat("long", 40000) // a line over the read buffer
					}
					l := manifest.Line{File: "f", Offset: int64(c), Length: 1, URI: uri, Date: "d", Digest: d, Fields: 6}
					b.Write(l.Append(nil))
				}
				want[d] = copies
			}
			// The lines must be sorted on digest: sort the digests.
			lines := strings.SplitAfter(b.String(), "\n")
			lines = lines[:len(lines)-1]
			sortByDigestField(lines)
			data := []byte(strings.Join(lines, ""))
			tab, err := manifest.NewTable(bytes.NewReader(data), int64(len(data)), "t")
			if err != nil {
				t.Fatal(err)
			}
			if tab.Lines() != int64(len(lines)) {
				t.Errorf("%d lines, want %d", tab.Lines(), len(lines))
			}
			for d, copies := range want {
				got := 0
				err := tab.Find(d, func(l *manifest.Line) error {
					if l.Digest != d {
						t.Errorf("Find(%s) gave %s", d, l.Digest)
					}
					got++
					return nil
				})
				if err != nil || got != copies {
					t.Errorf("Find(%s): %d lines, %v; want %d", d, got, err, copies)
				}
			}
			for _, absent := range []string{"md5:" + strings.Repeat("0", 31) + "1", "md5:" + strings.Repeat("f", 32), "-"} {
				if err := tab.Find(absent, func(l *manifest.Line) error { return errors.New("found") }); err != nil {
					t.Errorf("Find(%s): %v", absent, err)
				}
			}
		})
	}
	t.Run("unsorted", func(t *testing.T) {
		data := "f 1 1 u d md5:" + strings.Repeat("b", 32) + "\nf 2 1 u d md5:" + strings.Repeat("a", 32) + "\n"
		if _, err := manifest.NewTable(strings.NewReader(data), int64(len(data)), "t"); !errors.Is(err, manifest.ErrOrder) || !strings.Contains(err.Error(), "t:2:") {
			t.Errorf("err %v, want ErrOrder at t:2", err)
		}
	})
}

func sortByDigestField(lines []string) {
	key := func(s string) string { return strings.Fields(s)[5] }
	slices.SortStableFunc(lines, func(a, b string) int { return strings.Compare(key(a), key(b)) })
}

// TestTableByCapture proves that a table sorted as the system sort sorts
// on URI and date (LC_ALL=C sort -k4,4 -k5,5) is searched by capture: a
// URI that is a prefix of another, several dates of one URI, and a date
// that is missing.
func TestTableByCapture(t *testing.T) {
	lines := []manifest.Line{
		{File: "a", URI: "http://h/", Date: "2024-01-01T00:00:00Z"},
		{File: "b", URI: "http://h/", Date: "2024-02-01T00:00:00Z"},
		{File: "c", URI: "http://h/a", Date: "2023-01-01T00:00:00Z"},
		{File: "d", URI: "http://h/a%20b", Date: "2022-01-01T00:00:00Z"},
		{File: "e", URI: "http://h/ab", Date: "2021-01-01T00:00:00Z"},
		{File: "f", URI: "http://h/ab", Date: "2021-01-01T00:00:00Z"},
	}
	var text []string
	for i := range lines {
		lines[i].Length, lines[i].Digest, lines[i].Fields = 1, "sha1:"+strings.Repeat("A", 32), 6
		text = append(text, string(lines[i].Append(nil)))
	}
	sortPath, err := exec.LookPath("sort")
	if err != nil {
		t.Skip("sort(1) not found:", err)
	}
	for i := range text {
		text[i] = strings.TrimSuffix(text[i], "\n")
	}
	sorted := strings.Join(runSort(t, sortPath, []string{"-k4,4", "-k5,5"}, text), "\n") + "\n"
	for i := range text {
		text[i] += "\n"
	}
	tab, err := manifest.NewTableBy(strings.NewReader(sorted), int64(len(sorted)), "t", manifest.CaptureKey)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		uri, date string
		want      string // files found
	}{
		{"http://h/", "2024-01-01T00:00:00Z", "a"},
		{"http://h/", "2024-02-01T00:00:00Z", "b"},
		{"http://h/a", "2023-01-01T00:00:00Z", "c"},
		{"http://h/ab", "2021-01-01T00:00:00Z", "ef"},
		{"http://h/a", "2024-01-01T00:00:00Z", ""},
		{"http://h/", "2023-01-01T00:00:00Z", ""},
	}
	for _, tt := range tests {
		var got string
		err := tab.Find(manifest.CaptureKeyOf(tt.uri, tt.date), func(l *manifest.Line) error {
			got += l.File
			return nil
		})
		if err != nil || got != tt.want {
			t.Errorf("Find(%s %s) = %q, %v; want %q", tt.uri, tt.date, got, err, tt.want)
		}
	}
	// A table sorted otherwise is refused.
	bad := strings.Join(text[1:], "") + text[0]
	if _, err := manifest.NewTableBy(strings.NewReader(bad), int64(len(bad)), "t", manifest.CaptureKey); !errors.Is(err, manifest.ErrOrder) {
		t.Errorf("unsorted table: %v, want ErrOrder", err)
	}
}

// TestTableAlgorithms proves that a table reports every digest algorithm
// of its lines once, in order of first appearance, and none for the
// digest-less revisit lines.
func TestTableAlgorithms(t *testing.T) {
	md5 := "md5:" + strings.Repeat("a", 32)
	sha1 := "sha1:" + strings.Repeat("A", 32)
	revisit := "f 9 1 u d - -1 0 http://o/ 2024-01-01T00:00:00Z\n"
	tests := []struct {
		name  string
		table string
		want  []string
	}{
		{"empty", "", nil},
		{"revisit lines without a digest only", revisit, nil},
		{"one algorithm", revisit + "f 1 1 u d " + md5 + "\nf 2 1 u d " + md5 + "\n", []string{"md5"}},
		{"two algorithms", revisit + "f 1 1 u d " + md5 + "\nf 2 1 u d " + sha1 + "\n", []string{"md5", "sha1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab, err := manifest.NewTable(strings.NewReader(tt.table), int64(len(tt.table)), "t")
			if err != nil {
				t.Fatal(err)
			}
			if got := tab.Algorithms(); !slices.Equal(got, tt.want) {
				t.Errorf("Algorithms() = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTableFindReusesBuffers proves that a look-up reuses the buffers of
// the ones before (a run's rewrite makes thousands: 9 KiB each, allocated
// anew), present and absent keys alike, and that look-ups on several
// goroutines at once still each find their own key's lines.
func TestTableFindReusesBuffers(t *testing.T) {
	var buf bytes.Buffer
	const n = 5000
	digestOf := func(i int) string { return fmt.Sprintf("md5:%032x", i) }
	for i := range n {
		l := manifest.Line{File: "f.warc.gz", Offset: int64(i), Length: 1,
			URI: fmt.Sprintf("http://example.com/%d", i), Date: "d", Digest: digestOf(i), Fields: 6}
		buf.Write(l.Append(nil))
	}
	data := buf.Bytes()
	tab, err := manifest.NewTable(bytes.NewReader(data), int64(len(data)), "t")
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, 200)
	for i := range cap(keys) / 2 {
		keys = append(keys, digestOf(i*24), "md5:"+strings.Repeat("f", 31)+fmt.Sprint(i%10)) // present, absent
	}
	count := func(*manifest.Line) error { return nil }
	tab.Find(keys[0], count) // the first look-up makes the buffers
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for _, k := range keys {
		if err := tab.Find(k, count); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / uint64(len(keys)); per > 1<<10 {
		t.Errorf("%d bytes allocated a look-up, want at most 1 KiB (the parsed line, not the buffers)", per)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += 4 * 7 {
				var got []int64
				err := tab.Find(digestOf(i), func(l *manifest.Line) error { got = append(got, l.Offset); return nil })
				if err != nil || len(got) != 1 || got[0] != int64(i) {
					t.Errorf("Find(%s) on goroutine %d: offsets %v, %v; want [%d]", digestOf(i), g, got, err, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkTableFind looks up random digests of a table of 200,000 lines
// (about 30 MB), as warcrefs does for each duplicate's originals.
func BenchmarkTableFind(b *testing.B) {
	var buf bytes.Buffer
	const n = 200000
	for i := range n {
		l := manifest.Line{File: "crawl/f.warc.gz", Offset: int64(i) * 30000, Length: 30000,
			URI: fmt.Sprintf("http://example.com/page/%d", i), Date: "2024-01-01T00:00:00Z", Digest: fmt.Sprintf("md5:%032x", i), Fields: 6}
		buf.Write(l.Append(nil))
	}
	data := buf.Bytes()
	tab, err := manifest.NewTable(bytes.NewReader(data), int64(len(data)), "t")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		found := 0
		tab.Find(fmt.Sprintf("md5:%032x", (i*7919)%n), func(*manifest.Line) error { found++; return nil })
		if found != 1 {
			b.Fatalf("found %d", found)
		}
	}
}

// TestField proves that Field picks one field of a line without parsing it:
// the first, one in the middle, the last (no space after it), and nil past
// the end.
func TestField(t *testing.T) {
	line := []byte("a.warc.gz 10 20 http://x/ 2020 sha1:AB 1")
	tests := []struct {
		name string
		i    int
		want string
		ok   bool
	}{
		{"first", 0, "a.warc.gz", true},
		{"digest", 5, "sha1:AB", true},
		{"last", 6, "1", true},
		{"past the end", 7, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := manifest.Field(line, tt.i)
			if string(got) != tt.want || (got != nil) != tt.ok {
				t.Errorf("Field(%d) = %q, want %q", tt.i, got, tt.want)
			}
		})
	}
}
