package migrate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
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

// TestKeepNameTakenByLinkToARC proves an ARC whose name in the keep
// directory is taken by a symbolic link to the ARC itself (or a directory
// link back into the collection) is not removed: the link was taken for a
// kept copy, and the ARC removed left it dangling.
func TestKeepNameTakenByLinkToARC(t *testing.T) {
	for _, tc := range []struct {
		name string
		link func(t *testing.T, keep, coll, arc string)
	}{
		{"a link to the ARC", func(t *testing.T, keep, coll, arc string) {
			if err := os.Symlink(filepath.Join(coll, arc), filepath.Join(keep, arc)); err != nil {
				t.Fatal(err)
			}
		}},
		{"a directory link into the collection", func(t *testing.T, keep, coll, arc string) {
			if err := os.MkdirAll(filepath.Join(coll, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(coll, arc), filepath.Join(coll, "sub", arc)); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(coll, "sub"), filepath.Join(keep, "sub")); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll, keep := filepath.Join(dir, "coll"), filepath.Join(dir, "keep")
			genCollection(t, coll, 7)
			if err := os.MkdirAll(keep, 0o755); err != nil {
				t.Fatal(err)
			}
			tc.link(t, keep, coll, "gen-00000.arc.gz")
			before := snapshot(t, coll)
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: keep}}
			if _, err := c.Run(context.Background(), coll, nil); err != nil {
				t.Logf("run: %v", err)
			}
			for name, sum := range before {
				if !strings.HasSuffix(name, ".arc.gz") && !strings.HasSuffix(name, ".arc") {
					continue
				}
				if fileSum(filepath.Join(coll, name)) != sum && fileSum(filepath.Join(keep, name)) != sum {
					t.Errorf("%s (SHA-256 %s) is neither in the collection nor in the keep directory", name, sum)
				}
			}
		})
	}
}

// fileSum is a file's SHA-256, "" if it cannot be read.
func fileSum(name string) string {
	b, err := os.ReadFile(name)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// TestKeptCopyNeverLandsInCollection proves an ARC is not "kept" at a
// name inside the collection when the keep directory holds the
// collection: with the collection dir/sub and --keep-arc dir, the ARC
// sub/x.arc.gz was kept as dir/sub/x.arc.gz, a new ARC at the top of the
// collection, listed by the job and converted again by the next run.
func TestKeptCopyNeverLandsInCollection(t *testing.T) {
	dir := t.TempDir()
	coll := filepath.Join(dir, "sub")
	genCollection(t, filepath.Join(coll, "sub"), 7)
	before := snapshot(t, coll)
	c := &Converter{Options: Options{WorkDir: filepath.Join(t.TempDir(), "work"), KeepARC: dir}}
	if _, err := c.Run(context.Background(), coll, nil); err != nil {
		t.Logf("run: %v", err)
	}
	after := snapshot(t, coll)
	for name := range after {
		if _, ok := before[name]; !ok && (strings.HasSuffix(name, ".arc.gz") || strings.HasSuffix(name, ".arc")) {
			t.Errorf("%s: a new ARC in the collection", name)
		}
	}
	for name, sum := range before {
		if !strings.HasSuffix(name, ".arc.gz") && !strings.HasSuffix(name, ".arc") {
			continue
		}
		if after[name] != sum && fileSum(filepath.Join(dir, name)) != sum {
			t.Errorf("%s (SHA-256 %s) is neither in the collection nor kept", name, sum)
		}
	}
}
