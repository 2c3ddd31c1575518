package show

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRevisitsInLog proves what the one pass over the rewrite log finds
// of a response's revisits: those of every file that name its digest,
// URI and date, moved by the replacements of their file after the one
// that wrote them, left out once a later run restored them, and with an
// error when a later replacement cannot be followed.
func TestRevisitsInLog(t *testing.T) {
	const (
		d     = "sha1:QZ6EEDMS73VMYKGSUBNBGBLUO3L6IIPS"
		other = "sha1:ND7VCG2R6EATIKZTELRXI3DJEXLHEO2Z"
		uri   = "http://example.com/logo.png"
		date  = "2024-06-01T00:00:03Z"
		sum   = "blake3:0000000000000000000000000000000000000000000000000000000000000000"
	)
	// The first run: revisits of the response in a.warc and b.warc,
	// others that differ in digest, URI or date.
	run1 := strings.Join([]string{
		"# run 2026-01-01T00:00:00Z",
		"a.warc 1000 500 1000 200 revisit " + d + " " + uri + " " + date,
		"b.warc 100 400 100 100 revisit " + other + " " + uri + " " + date,
		"b.warc 2000 600 1700 150 revisit " + d + " " + uri + " " + date,
		"c.warc 50 300 50 100 revisit " + d + " " + uri + " 2023-01-01T00:00:00Z",
		"d.warc 50 300 50 100 revisit " + d + " http://example.com/other " + date,
		"e.warc 50 300 50 100 revisit " + other + " " + uri + " " + date,
	}, "\n") + "\n"
	type found struct {
		file        string
		off, length int64
		line        int64
		err         bool
	}
	for _, tc := range []struct {
		name  string
		later string
		want  []found
	}{
		{"revisits of every file, where the run put them", "", []found{{"a.warc", 1000, 200, 2, false}, {"b.warc", 1700, 150, 4, false}}},
		{"a later run's revisit before one moves it, after it does not",
			"# run 2026-02-01T00:00:00Z\na.warc 5000 400 5000 100 revisit " + other + " http://x/ " + date + "\nb.warc 500 300 500 100 revisit " + other + " http://y/ " + date + "\n",
			[]found{{"a.warc", 1000, 200, 2, false}, {"b.warc", 1500, 150, 4, false}}},
		{"a revisit a later run restored is left out",
			"# run 2026-02-01T00:00:00Z\na.warc 1000 200 1000 500 restored - - -\n",
			[]found{{"b.warc", 1700, 150, 4, false}}},
		{"restored, then written again by a third run",
			"# run 2026-02-01T00:00:00Z\na.warc 1000 200 1000 500 restored - - -\n# run 2026-03-01T00:00:00Z\na.warc 1000 500 1000 210 revisit " + d + " " + uri + " " + date + "\n",
			[]found{{"b.warc", 1700, 150, 4, false}, {"a.warc", 1000, 210, 11, false}}},
		{"a later entry over its offset cannot be followed",
			"# run 2026-02-01T00:00:00Z\nb.warc 1600 300 1600 100 revisit " + other + " http://y/ " + date + "\n",
			[]found{{"a.warc", 1000, 200, 2, false}, {"b.warc", -1, 150, 4, true}}},
		{"a later replacement whose entries are missing cannot be followed",
			"# run 2026-02-01T00:00:00Z\n# file b.warc 9000 " + sum + " 8000 " + sum + "\nb.warc 100 100 100 50 revisit " + other + " http://y/ " + date + "\n",
			[]found{{"a.warc", 1000, 200, 2, false}, {"b.warc", -1, 150, 4, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "rewrite.log")
			if err := os.WriteFile(name, []byte(run1+tc.later), 0o644); err != nil {
				t.Fatal(err)
			}
			vs, legacy, err := revisitsInLog(name, uri, date, d)
			if err != nil || legacy {
				t.Fatalf("legacy %v, error %v", legacy, err)
			}
			var got []found
			for _, v := range vs {
				f := found{v.File, v.Offset, v.Length, v.Line, v.err != nil}
				if f.err {
					f.off = -1 // where it was last followed to: not where it is
				}
				got = append(got, f)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRevisitsInLogErrors: a log that cannot be read is an error naming
// it, a log of the five-field form says it could not be matched.
func TestRevisitsInLogErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.log")
	os.WriteFile(bad, []byte("# run 2026-01-01T00:00:00Z\nb.warc 100 100 100 50 revisit\n"), 0o644)
	if _, _, err := revisitsInLog(bad, "http://x/", "2024-01-01T00:00:00Z", "sha1:QZ6EEDMS73VMYKGSUBNBGBLUO3L6IIPS"); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a bad line: %v", err)
	}
	old := filepath.Join(dir, "old.log")
	os.WriteFile(old, []byte("b.warc 100 100 100 50\n"), 0o644)
	if vs, legacy, err := revisitsInLog(old, "http://x/", "2024-01-01T00:00:00Z", "sha1:QZ6EEDMS73VMYKGSUBNBGBLUO3L6IIPS"); err != nil || !legacy || len(vs) != 0 {
		t.Errorf("a five-field log: %v, legacy %v, %v", vs, legacy, err)
	}
	if _, _, err := revisitsInLog(old, "http://x/", "", "md5 nonsense"); err == nil {
		t.Error("a payload digest that does not parse: no error")
	}
}

// BenchmarkRevisitsInLog reads a log of 10^5 entries over 10^3 files in
// 10 runs, ten of them revisits of the response, followed through the
// later runs of their files: the cost of the one pass (its rate in
// entries a second is what scales to a log of 10^8).
func BenchmarkRevisitsInLog(b *testing.B) {
	const (
		d     = "sha1:QZ6EEDMS73VMYKGSUBNBGBLUO3L6IIPS"
		other = "sha1:ND7VCG2R6EATIKZTELRXI3DJEXLHEO2Z"
		uri   = "http://example.com/logo.png"
		date  = "2024-06-01T00:00:03Z"
	)
	var sb strings.Builder
	entries := 0
	for run := range 10 {
		fmt.Fprintf(&sb, "# run 2026-%02d-01T00:00:00Z\n", run+1)
		for f := range 1000 {
			// Each run's revisits of a file lie after the last run's.
			base := int64(run+1) * 10_000_000
			for i := range 10 {
				dig, u := other, fmt.Sprintf("http://example.com/%d/%d", f, i)
				if run == 0 && i == 0 && f%100 == 0 {
					dig, u = d, uri
				}
				old := base + int64(i)*1000
				fmt.Fprintf(&sb, "f%04d.warc.gz %d 900 %d 300 revisit %s %s %s\n", f, old, old-int64(i)*600, dig, u, date)
				entries++
			}
		}
	}
	name := filepath.Join(b.TempDir(), "rewrite.log")
	if err := os.WriteFile(name, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sb.Len()))
	b.ResetTimer()
	for range b.N {
		vs, _, err := revisitsInLog(name, uri, date, d)
		if err != nil || len(vs) != 10 {
			b.Fatalf("%d found, %v", len(vs), err)
		}
	}
	b.ReportMetric(float64(entries)*float64(b.N)/b.Elapsed().Seconds(), "entries/s")
}
