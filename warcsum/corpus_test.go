package warcsum

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/internal/corpustest"
	"warcdedup/manifest"
)

// corpusDir is the shared corpus of real files, beside the repository.
const corpusDir = "../../shared/corpus"

// corpusFiles lists every file of the corpus but its tools and manifest.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	if _, err := os.Stat(corpusDir); err != nil {
		corpustest.Missing(t, "shared corpus absent: %v", err)
	}
	var files []string
	err := filepath.WalkDir(corpusDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "_tools" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() && d.Name() != "MANIFEST.md" {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// digestMismatchFiles reads MANIFEST.md and returns the corpus paths whose
// row reports a payload digest that does not match (declared digests that
// are wrong on purpose, or computed over decoded bodies).
func digestMismatchFiles(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "MANIFEST.md"))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string]bool{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		cols := strings.Split(s.Text(), "|")
		if len(cols) < 13 || !strings.Contains(cols[2], "/") {
			continue
		}
		repo := strings.ReplaceAll(strings.TrimSpace(cols[2]), "/", "+")
		path := filepath.Join(corpusDir, repo, strings.TrimSpace(cols[3]))
		row := s.Text()
		if strings.Contains(row, "payload-digest mismatch") || strings.Contains(row, "declared digests collide") {
			bad[path] = true
		}
	}
	return bad
}

// TestCorpus reads every real file: each is listed or rejected with an error
// naming it, never a panic; digests agree with the declared ones wherever
// MANIFEST.md says the file's declared digests are right; and every line's
// offset and length cut out exactly one record that sums to the same line.
func TestCorpus(t *testing.T) {
	files := corpusFiles(t)
	mismatch := digestMismatchFiles(t)
	var total Stats
	for _, path := range files {
		name := strings.TrimPrefix(path, corpusDir+"/")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var warnings []error
		collect := func(err error) { warnings = append(warnings, err) }
		s := NewSummer(Options{Warn: collect, Damage: collect})
		var lines []manifest.Line
		st, err := s.SumFile(bytes.NewReader(data), name, func(l *manifest.Line) error {
			lines = append(lines, *l)
			return nil
		})
		total.Add(&st)
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("%s: error does not name the file: %v", name, err)
		}
		for _, w := range warnings {
			if !strings.Contains(w.Error(), name) {
				t.Errorf("%s: warning does not name the file: %v", name, w)
			}
		}
		if !mismatch[path] && st.Disagreements > 0 {
			t.Errorf("%s: %d payload digests disagree with the header, but MANIFEST.md reports none: %v", name, st.Disagreements, warnings)
		}
		for _, l := range lines {
			checkLineReread(t, name, data, l)
		}
	}
	if total.Listed < 500 || total.Checked < 300 {
		t.Errorf("corpus listed %d records and checked %d header digests; expected hundreds of each", total.Listed, total.Checked)
	}
	t.Logf("corpus: %d files, %d listed, %d header digests checked, %d disagree, %d damaged",
		len(files), total.Listed, total.Checked, total.Disagreements, total.Damaged)
}

// checkLineReread cuts the record a line names out of its file and sums it
// alone: it must give back the same line, at offset 0.
func checkLineReread(t *testing.T, name string, data []byte, l manifest.Line) {
	t.Helper()
	if l.Offset+l.Length > int64(len(data)) {
		t.Errorf("%s: line %q runs past the end of the file (%d bytes)", name, l.String(), len(data))
		return
	}
	cut := data[l.Offset : l.Offset+l.Length]
	var again []manifest.Line
	_, err := NewSummer(Options{}).SumFile(bytes.NewReader(cut), name, func(m *manifest.Line) error {
		again = append(again, *m)
		return nil
	})
	if err != nil || len(again) != 1 {
		t.Errorf("%s: the %d bytes at offset %d give %d lines (err %v), want exactly the record of %q", name, l.Length, l.Offset, len(again), err, l.String())
		return
	}
	want := l
	want.Offset = 0
	if again[0] != want {
		t.Errorf("%s: record cut out at offset %d sums to\n%q, want\n%q", name, l.Offset, again[0].String(), want.String())
	}
}

// TestCorpusKnownFiles pins what specific real files must give.
func TestCorpusKnownFiles(t *testing.T) {
	corpusFiles(t)
	tests := []struct {
		name    string
		file    string
		listed  int64
		damaged int64
		failed  bool
	}{
		// pywb's recording of iana.org: 48 responses, 4 of them not 2xx.
		// 44 responses and a revisit line for each of its 123 revisits.
		{"pywb iana responses and revisits", "webrecorder+pywb/sample_archive/warcs/iana.warc.gz", 44 + 123, 0, false},
		// A whole-file gzip member: its records cannot be addressed one by one,
		// so the member is reported once and nothing is listed.
		{"whole-file gzip is refused", "webrecorder+warcio/test/data/example-bad-non-chunked.warc.gz", 0, 1, false},
		// node-warc ends records with a single CRLF; every response is still listed.
		{"single-CRLF terminators", "N0taN3rd+node-warc/test/files/books.toscrape.warc", 30, 0, false},
		// The ARC's last record declares 12 bytes more than the file holds.
		{"truncated ARC record", "webrecorder+warcio/test/data/example-space-in-url.arc", 0, 1, false},
		// Clipped mid-member: damaged, nothing listed from the clipped part.
		{"clipped gzip", "chatnoir-eu+chatnoir-resiliparse/tests/data/clipped.warc.gz", -1, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(corpusDir, tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, err := NewSummer(Options{}).SumFile(f, tt.file, func(*manifest.Line) error { return nil })
			if (err != nil) != tt.failed {
				t.Errorf("error %v, want failure %v", err, tt.failed)
			}
			if tt.listed >= 0 && st.Listed != tt.listed {
				t.Errorf("listed %d, want %d", st.Listed, tt.listed)
			}
			if st.Damaged != tt.damaged {
				t.Errorf("damaged %d, want %d", st.Damaged, tt.damaged)
			}
		})
	}
}
