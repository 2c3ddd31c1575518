package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/scripts/gen"
)

// TestArc2warcInPlaceKeepDirInALaterCollection proves that arc2warc
// --in-place checks its --keep-arc directory against every collection
// named before it converts any: a keep directory inside the second is
// refused with the first as it was. Before, the first collection's ARC
// files were kept inside the second, and only then was the second
// refused; a later arc2warc --in-place of the second converted the kept
// ARC files and removed them.
func TestArc2warcInPlaceKeepDirInALaterCollection(t *testing.T) {
	dir := t.TempDir()
	first := smallCollection(t, dir, "first", gen.ARCGz, gen.ARC)
	second := smallCollection(t, dir, "second", gen.ARCGz)
	before, secondBefore := treeSums(t, first), treeSums(t, second)
	_, stderr, code := sh(t, dir, "arc2warc -q --in-place --keep-arc second/kept first second")
	if code != 2 || !strings.Contains(stderr, "arc2warc: ") || !strings.Contains(stderr, "inside the collection second") {
		t.Errorf("exit %d, stderr %q; want 2 and a refusal naming the collection second", code, stderr)
	}
	if !maps.Equal(treeSums(t, first), before) || !maps.Equal(treeSums(t, second), secondBefore) {
		t.Errorf("a collection changed though arc2warc was refused")
	}
	if _, err := os.Stat(filepath.Join(second, "kept")); err == nil {
		t.Errorf("the keep directory was made inside the collection second")
	}
}

// TestArc2warcInPlaceKeepDirInALaterWorkDir proves that arc2warc
// --in-place checks its --keep-arc directory against the work directory
// of every collection named before it converts any, as it checks it
// against the collections: a keep directory in the second's work
// directory is refused with the first as it was. Before, the first
// collection's ARC files were moved into the second's work directory
// (its tmp, emptied by the next job that opens it) and only then was the
// second refused.
func TestArc2warcInPlaceKeepDirInALaterWorkDir(t *testing.T) {
	for _, tc := range []struct {
		name, keep string
		made       bool // the second's work directory is there (an earlier job's)
	}{
		{"work directory not made yet", "second.warcdedup/tmp/kept", false},
		{"work directory there", "second.warcdedup/kept", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first := smallCollection(t, dir, "first", gen.ARCGz, gen.ARC)
			second := smallCollection(t, dir, "second", gen.ARCGz)
			if tc.made {
				if err := os.Mkdir(second+".warcdedup", 0o755); err != nil {
					t.Fatal(err)
				}
			}
			before := treeSums(t, first)
			_, stderr, code := sh(t, dir, "arc2warc -q --in-place --keep-arc "+tc.keep+" first second")
			if code != 2 || !strings.Contains(stderr, "arc2warc: ") || !strings.Contains(stderr, "inside the work directory") {
				t.Errorf("exit %d, stderr %q; want 2 and a refusal naming the work directory", code, stderr)
			}
			if !maps.Equal(treeSums(t, first), before) {
				t.Errorf("the first collection changed though arc2warc was refused")
			}
		})
	}
}
