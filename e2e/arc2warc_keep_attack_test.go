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
