package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestLinkedARCCountedLeft proves an ARC name in the collection that is a
// symbolic link, which the conversion does not follow, is an ARC left as
// it is in the Result: it was named as an error while the Result said
// every ARC was converted, so arc2warc --in-place and warcdedup run
// --convert-arc exited 0 with an ARC of the collection not converted.
func TestLinkedARCCountedLeft(t *testing.T) {
	for _, tc := range []struct{ name, link string }{
		{"at the top", "linked.arc.gz"},
		{"in a subdirectory", "sub/linked.arc.gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll, elsewhere := filepath.Join(dir, "coll"), filepath.Join(dir, "elsewhere")
			genCollection(t, coll, 8)
			genCollection(t, elsewhere, 9)
			if err := os.MkdirAll(filepath.Join(coll, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(elsewhere, "gen-00000.arc.gz"), filepath.Join(coll, tc.link)); err != nil {
				t.Fatal(err)
			}
			arcs, _, err := Scan(coll)
			if err != nil {
				t.Fatal(err)
			}
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), Report: func(error) {}}}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Count(Converted); got != len(arcs) {
				t.Errorf("%d ARC files converted, want %d", got, len(arcs))
			}
			var link *Outcome
			for i := range res.Files {
				if res.Files[i].ARC == tc.link {
					link = &res.Files[i]
				}
			}
			switch {
			case link == nil:
				t.Errorf("%s is not in the Result (%d files): the run says every ARC was converted", tc.link, len(res.Files))
			case !link.Status.Left() || link.Reason == "":
				t.Errorf("%s: %s (%q), want left with a reason", tc.link, link.Status, link.Reason)
			}
			for i := 1; i < len(res.Files); i++ {
				if res.Files[i-1].ARC > res.Files[i].ARC {
					t.Errorf("Result not in name order: %s before %s", res.Files[i-1].ARC, res.Files[i].ARC)
				}
			}
		})
	}
}
