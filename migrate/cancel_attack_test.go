package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestCancelledRunNamesEveryFile proves a run stopped part way reports
// each ARC it did not reach as left, by its name: it reported them as
// converted, with no name (arc2warc --in-place printed " -> : converted"
// for each on an interrupt).
func TestCancelledRunNamesEveryFile(t *testing.T) {
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	genCollection(t, coll, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), Jobs: 1, Hook: func(step, arc string) {
		if step == "removed" {
			cancel()
		}
	}}}
	res, err := c.Run(ctx, coll, nil)
	if err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	if res == nil {
		t.Fatal("no result")
	}
	converted := 0
	for i, o := range res.Files {
		if o.ARC == "" {
			t.Errorf("file %d: no name (%s)", i, o.Status)
			continue
		}
		_, arcErr := os.Stat(filepath.Join(coll, o.ARC))
		_, warcErr := os.Stat(filepath.Join(coll, o.WARC))
		switch {
		case !o.Status.Left():
			converted++
			if arcErr == nil || warcErr != nil {
				t.Errorf("%s: %s, but the ARC is there (%v) or its WARC is not (%v)", o.ARC, o.Status, arcErr, warcErr)
			}
		case arcErr != nil:
			t.Errorf("%s: %s, but the ARC is gone: %v", o.ARC, o.Status, arcErr)
		}
	}
	if converted != 1 {
		t.Errorf("%d files reported converted, want the 1 before the cancel", converted)
	}
}
