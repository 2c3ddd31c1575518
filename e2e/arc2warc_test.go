package e2e

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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
	out, stderr, code := sh(t, work, "arc2warc -q -o warcs arcs")
	if code > 1 {
		t.Fatalf("arc2warc exit %d: %s", code, stderr)
	}
	warcs, _ := filepath.Glob(filepath.Join(work, "warcs", "*.warc.gz"))
	if len(warcs) != n {
		t.Fatalf("%d WARC files for %d ARC files (%s)", len(warcs), n, out)
	}
	// The check script, as a user runs it, over what was converted.
	check, _, _ := sh(t, work, "PATH="+binDir+":$PATH; for a in arcs/*; do "+
		"b=$(basename \"$a\"); w=warcs/${b%.[gG][zZ]}; w=${w%.[aA][rR][cC]}.warc.gz; "+
		"warcsum -q \"$a\" > m1 2>/dev/null; warcsum -q \"$w\" > m2 2>/dev/null; "+
		"if warcsumcmp -q --order m1 m2 > /dev/null; then echo \"OK $b $(wc -l < m1)\"; else echo \"MISMATCH $b\"; fi; done")
	matched, mismatched := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(check), "\n") {
		switch f := strings.Fields(l); {
		case len(f) == 3 && f[0] == "OK":
			var k int
			fmt.Sscan(f[2], &k)
			matched += k
		case len(f) == 2 && f[0] == "MISMATCH":
			mismatched++
		}
	}
	// The mismatches are the deliberately broken ARCs, whose records after
	// junk the converter keeps while warcsum on the ARC refuses them.
	if matched < 185 || mismatched > 4 { // observed: 185 records, the 4 broken files
		t.Errorf("%d records matched in order, %d files mismatched:\n%s", matched, mismatched, check)
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
