package split

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/manifest"
)

// TestBySizeCountIsAMaximum proves that warcsumsplit -c N, which cuts at
// the manifest's size divided by N, writes at most N parts when the
// manifest has revisit lines without a digest in its algorithm: those
// lines start every part, and counting them in each part's size made the
// parts end early, so a part N+1 appeared that a job per part (N of them)
// never reads.
func TestBySizeCountIsAMaximum(t *testing.T) {
	var prelude []manifest.Line
	for i := range 20 {
		prelude = append(prelude, manifest.Line{File: "r.warc", Offset: int64(i * 10), Length: 9, URI: fmt.Sprintf("http://r/%d", i),
			Date: "2021-01-01T00:00:00Z", Digest: manifest.NoDigest, Class: manifest.RevisitClass, Copy: manifest.RevisitCopy,
			RefURI: "http://h/7", RefDate: "*", Fields: 10})
	}
	input := text(sorted(append(prelude, randomLines(600, digest.SHA1)...), manifest.ByDigest))
	for _, n := range []int{2, 3, 5, 8} {
		t.Run(fmt.Sprintf("-c %d", n), func(t *testing.T) {
			dir := t.TempDir()
			parts := NewParts(filepath.Join(dir, "p"))
			partBytes := (int64(len(input)) + int64(n) - 1) / int64(n) // as warcsumsplit -c computes it
			if err := BySize(manifest.NewReader(strings.NewReader(input), "in"), parts, partBytes); err != nil {
				t.Fatal(err)
			}
			if err := parts.Commit(); err != nil {
				t.Fatal(err)
			}
			if names, _ := readParts(t, dir); len(names) > n {
				t.Errorf("%d parts %v, want at most %d", len(names), names, n)
			}
		})
	}
}

// TestStaleParts proves that a split finds the numbered parts an earlier
// split left under its prefix that it does not write itself (the earlier
// one cut into more parts): "cat PREFIX-*" or a job per part would read
// their lines with the new parts', twice or stale. Files of other names
// are no parts.
func TestStaleParts(t *testing.T) {
	input := text(sorted(randomLines(300, digest.SHA1), manifest.ByDigest))
	tests := []struct {
		name    string
		earlier []string // files under the prefix before the split
		want    string   // "": no stale part
	}{
		{"an earlier split into more parts", []string{"p-000", "p-001", "p-002", "p-003", "p-004"}, "p-002"},
		{"an earlier split into as many parts", []string{"p-000", "p-001"}, ""},
		{"files that are no parts", []string{"p-notes.txt", "p-", "pp-007", "p-007.bak"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, n := range tt.earlier {
				if err := os.WriteFile(filepath.Join(dir, n), []byte("earlier\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			parts := NewParts(filepath.Join(dir, "p"))
			defer parts.Abort()
			if err := BySize(manifest.NewReader(strings.NewReader(input), "in"), parts, int64(len(input)/2)+1); err != nil {
				t.Fatal(err)
			}
			if len(parts.List) != 2 {
				t.Fatalf("%d parts, the test wants 2", len(parts.List))
			}
			err := parts.Stale()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Stale: %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Stale: %v, want an error naming %s", err, tt.want)
			}
		})
	}
}
