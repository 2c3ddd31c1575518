package split

import (
	"fmt"
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
