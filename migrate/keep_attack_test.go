package migrate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestKeepDirInsideCollectionRefused proves a keep directory that is the
// collection itself, or inside it, by its name or through a symbolic link,
// is refused before anything is converted: kept "in" the collection, an
// ARC was its own copy and was removed (lost, exit 0), and one kept in a
// subdirectory was listed and converted again by the next run.
func TestKeepDirInsideCollectionRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep func(dir, coll string) string
	}{
		{"the collection", func(dir, coll string) string { return coll }},
		{"the collection with a trailing dot", func(dir, coll string) string { return coll + "/." }},
		{"a link to the collection", func(dir, coll string) string {
			link := filepath.Join(dir, "link")
			if err := os.Symlink(coll, link); err != nil {
				t.Fatal(err)
			}
			return link
		}},
		{"a subdirectory of the collection", func(dir, coll string) string { return filepath.Join(coll, "retired") }},
		{"a subdirectory through a link", func(dir, coll string) string {
			link := filepath.Join(dir, "link")
			if err := os.Symlink(coll, link); err != nil {
				t.Fatal(err)
			}
			return filepath.Join(link, "retired")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			genCollection(t, coll, 7)
			before := snapshot(t, coll)
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: tc.keep(dir, coll)}}
			res, err := c.Run(context.Background(), coll, nil)
			if err == nil {
				t.Fatalf("keep directory %s accepted: %+v", c.KeepARC, res.Files)
			}
			after := snapshot(t, coll)
			for name, sum := range before {
				if after[name] != sum {
					t.Errorf("%s: SHA-256 %q after the refused run, %q before", name, after[name], sum)
				}
			}
			if len(after) != len(before) {
				t.Errorf("%d files after the refused run, %d before", len(after), len(before))
			}
		})
	}
}
