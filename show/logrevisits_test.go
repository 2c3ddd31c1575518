package show

import (
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
