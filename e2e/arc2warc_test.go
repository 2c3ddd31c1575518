package e2e

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"warcdedup/record"
)

// TestArc2warcCorpus converts every ARC of the shared corpus, checks the
// conversion with scripts/arc2warc-check.sh, and has warcio's cdx-index read
// each WARC written: exit 0, no warning, one index line per record.
func TestArc2warcCorpus(t *testing.T) {
	needCorpus(t)
	cli := warcioCLI(t)
	work := t.TempDir()
	arcs := filepath.Join(work, "arcs")
	os.MkdirAll(arcs, 0o755)
	n := 0
	filepath.WalkDir(corpusDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && isARCName(d.Name()) {
			// Several corpus files share a name; number them apart.
			copyFile(t, p, filepath.Join(arcs, fmt.Sprintf("%02d-%s", n, d.Name())))
			n++
		}
		return nil
	})
	if n < 20 {
		t.Fatalf("only %d ARC files in the corpus", n)
	}
	copyFile(t, "../scripts/arc2warc-check.sh", filepath.Join(work, "check.sh"))
	os.Chmod(filepath.Join(work, "check.sh"), 0o755)
	out, stderr, code := sh(t, work, "./check.sh arcs warcs")
	if code > 1 {
		t.Fatalf("arc2warc-check.sh exit %d: %s", code, stderr)
	}
	warcs, _ := filepath.Glob(filepath.Join(work, "warcs", "*.warc.gz"))
	if len(warcs) != n {
		t.Fatalf("%d WARC files for %d ARC files (%s)", len(warcs), n, out)
	}
	// Every record the ARC holds is in its WARC; a file fails the check
	// only for bytes of the ARC that no record holds (the deliberately
	// broken files), which the converter reported as damage.
	ok, failed, records := 0, 0, 0
	okRE := regexp.MustCompile(`^\S+: OK: (\d+) records`)
	failedRE := regexp.MustCompile(`^\S+: FAILED: \d+ problems \(see stderr\); (\d+) of its (\d+) records found in \S+; (\d+) damaged stretches`)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if m := okRE.FindStringSubmatch(l); m != nil {
			ok++
			k, _ := strconv.Atoi(m[1])
			records += k
			continue
		}
		m := failedRE.FindStringSubmatch(l)
		if m == nil || m[1] != m[2] || m[3] == "0" {
			t.Errorf("check: %s", l)
			continue
		}
		failed++
	}
	if ok+failed != n || ok < 18 || records < 550 { // observed: 19 files, 554 records
		t.Errorf("%d files OK with %d records, %d failed for damage, of %d:\n%s", ok, records, failed, n, out)
	}

	indexes := runCDX(t, cli, warcs)
	for i, w := range warcs {
		ix := indexes[i]
		if ix.code != 0 || len(warnings(ix.stderr)) != 0 {
			t.Errorf("%s: cdx-index exit %d, stderr %q", filepath.Base(w), ix.code, ix.stderr)
			continue
		}
		if records := countRecords(t, w); len(ix.lines) != records {
			t.Errorf("%s: cdx-index printed %d lines for %d records", filepath.Base(w), len(ix.lines), records)
		}
	}
}

// countRecords counts the whole records of a WARC file with our reader,
// failing on any damage: a converted file has none.
func countRecords(t *testing.T, name string) int {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rr, err := record.NewReader(f, name)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		_, err := rr.Next()
		if err == io.EOF {
			return n
		}
		if err == nil {
			err = rr.Finish()
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(name), err)
			return n
		}
		n++
	}
}
