package migrate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepDirRecorded proves a work directory holds its conversion to
// the keep directory it was first given: an ARC whose keep failed (or
// whose run was killed after its WARC was linked) was removed by a rerun
// of arc2warc --in-place without --keep-arc, or with another, though the
// archivist asked for it to be kept; the rerun is refused, and one with
// the keep directory again keeps it.
func TestKeepDirRecorded(t *testing.T) {
	for _, tc := range []struct {
		name  string
		again func(keep, other string) string // the rerun's KeepARC
	}{
		{"no keep directory", func(keep, other string) string { return "" }},
		{"another keep directory", func(keep, other string) string { return other }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll, keep, other, work := filepath.Join(dir, "coll"), filepath.Join(dir, "keep"), filepath.Join(dir, "other"), filepath.Join(dir, "work")
			genCollection(t, coll, 5)
			arcs, _, err := Scan(coll)
			if err != nil || len(arcs) == 0 {
				t.Fatalf("scan: %v, %d ARC files", err, len(arcs))
			}
			// The first ARC cannot be kept: its name in the keep
			// directory is taken by another file.
			blocked := filepath.Join(keep, filepath.FromSlash(arcs[0].Name))
			if err := os.MkdirAll(filepath.Dir(blocked), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, blocked, []byte("another file"))
			c := &Converter{Options: Options{WorkDir: work, KeepARC: keep}}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil || res.Files[0].Status != Failed {
				t.Fatalf("first run: %v, %+v", err, res)
			}
			c = &Converter{Options: Options{WorkDir: work, KeepARC: tc.again(keep, other)}}
			if _, err := c.Run(context.Background(), coll, nil); err == nil || !strings.Contains(err.Error(), keep) {
				t.Errorf("rerun with keep directory %q: %v, want a refusal naming %s", tc.again(keep, other), err, keep)
			}
			if _, err := os.Stat(arcs[0].Path); err != nil {
				t.Fatalf("%s, which the first run was to keep, is gone and not kept: %v", arcs[0].Name, err)
			}
			// Given again (its blocker gone), the keep directory keeps it.
			if err := os.Remove(blocked); err != nil {
				t.Fatal(err)
			}
			c = &Converter{Options: Options{WorkDir: work, KeepARC: keep + string(filepath.Separator)}}
			if res, err := c.Run(context.Background(), coll, nil); err != nil || res.Count(Converted) != 1 {
				t.Fatalf("rerun with the keep directory: %v, %+v", err, res)
			}
			if _, err := os.Stat(blocked); err != nil {
				t.Errorf("%s not kept: %v", arcs[0].Name, err)
			}
		})
	}
}
