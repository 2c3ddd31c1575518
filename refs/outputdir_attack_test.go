package refs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/internal/rewritetest"
)

// TestOutputDirNeverReplacesAFile proves that --output-dir puts a new
// version only where no file is: a file already there (another crawl's
// file of the same name, or the collection's own file when the output
// directory is the root) is left as it is and the file refused, unless it
// holds the new version's very bytes (an earlier run's output: a rerun
// finishes). The new
// version was renamed over it: the other file was lost, and the
// collection's file was replaced without what --in-place checks first (a
// crawler still appending to it, a second hard link).
func TestOutputDirNeverReplacesAFile(t *testing.T) {
	c := generate(t, refuseCfg)
	victim := c.dups[0].File
	tests := []struct {
		name string
		// out makes the output directory in a copy of the collection,
		// dir, and returns it and the bytes victim has there.
		out func(t *testing.T, dir string) (string, []byte)
	}{
		{"another file of the same name", func(t *testing.T, dir string) (string, []byte) {
			out := t.TempDir()
			other := []byte("another crawl's file that happens to have the same name\n")
			if err := os.WriteFile(filepath.Join(out, victim), other, 0o644); err != nil {
				t.Fatal(err)
			}
			return out, other
		}},
		{"the output dir is the root", func(t *testing.T, dir string) (string, []byte) {
			b, err := os.ReadFile(filepath.Join(dir, victim))
			if err != nil {
				t.Fatal(err)
			}
			return dir, b
		}},
	}
	t.Run("an earlier run's output is the result already", func(t *testing.T) {
		dir, out := t.TempDir(), t.TempDir()
		rewritetest.CopyDir(t, c.dir, dir)
		mustRun(t, Rewriter{Roots: []string{dir}, OutputDir: out}, c.lines)
		first := rewritetest.Snapshot(t, out)
		mustRun(t, Rewriter{Roots: []string{dir}, OutputDir: out}, c.lines)
		rewritetest.SameFiles(t, "the output dir after a rerun", rewritetest.Snapshot(t, out), first)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rewritetest.CopyDir(t, c.dir, dir)
			out, want := tt.out(t, dir)
			o := run(t, Rewriter{Roots: []string{dir}, OutputDir: out}, c.lines)
			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			if got, err := os.ReadFile(filepath.Join(out, victim)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s in the output dir: %d bytes (%v), want the %d it had", victim, len(got), err, len(want))
			}
			if o.refusedFor(victim) == nil {
				t.Errorf("%s was not refused (refusals %v)", victim, o.refused)
			}
			for _, e := range entries(t, out) {
				if strings.HasPrefix(e, atomicfile.TempPrefix) {
					t.Errorf("temporary file %s left in the output dir", e)
				}
			}
		})
	}
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}
