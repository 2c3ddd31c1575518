package migrate

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/archname"
	"warcdedup/convert"
	"warcdedup/internal/corpustest"
)

// TestCorpus converts every ARC file of the shared corpus in place: each
// is converted and proved, its WARC independently checked record for
// record against the original, or left byte for byte with its reason.
func TestCorpus(t *testing.T) {
	corpus := filepath.Join("..", "..", "shared", "corpus")
	if _, err := os.Stat(corpus); err != nil {
		corpustest.Missing(t, "no ../shared/corpus")
	}
	dir := t.TempDir()
	originals, coll := filepath.Join(dir, "orig"), filepath.Join(dir, "coll")
	n := 0
	filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || !archname.IsARC(d.Name()) {
			return err
		}
		rel, _ := filepath.Rel(corpus, p)
		for _, root := range []string{originals, coll} {
			os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755)
			write(t, filepath.Join(root, rel), read(t, p))
		}
		n++
		return nil
	})
	if n == 0 {
		t.Skip("no ARC file in the corpus")
	}
	res, err := (&Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), Jobs: 2}}).Run(context.Background(), coll, nil)
	if err != nil {
		t.Fatal(err)
	}
	orig, after := snapshot(t, originals), snapshot(t, coll)
	converted := 0
	for _, o := range res.Files {
		if o.Status.Left() {
			if after[o.ARC] != orig[o.ARC] {
				t.Errorf("%s: left (%s), but changed", o.ARC, o.Status)
			}
			t.Logf("%s: %s: %s", o.ARC, o.Status, o.Reason)
			continue
		}
		converted++
		arc := openFile(t, filepath.Join(originals, o.ARC))
		warc := openFile(t, filepath.Join(coll, convert.OutputName(o.ARC, false)))
		var problems []string
		st, err := verifyConversion(arc, warc, &problems)
		if err != nil || st > 0 {
			t.Errorf("%s: %d problems, %v: %v", o.ARC, st, err, problems)
		}
	}
	t.Logf("%d corpus ARC files: %d converted and proved, %d left as they are", n, converted, n-converted)
	if converted == 0 {
		t.Error("no corpus ARC file was converted")
	}
}
