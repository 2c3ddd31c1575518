package dedup

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestConvertKeepDirInWorkDirRefused proves a --keep-arc directory in the
// job's work directory is refused before any ARC is converted: the work
// directory's tmp is emptied at each job's end (workdir.Close) and the
// whole is the job's scratch space. Before, run --convert-arc --keep-arc
// WORK/tmp/kept moved every ARC there, said it was done (no error), and
// its own close removed them: the ARC files asked to be kept were gone.
func TestConvertKeepDirInWorkDirRefused(t *testing.T) {
	for _, keepIn := range []string{"tmp/kept", "kept"} {
		t.Run(keepIn, func(t *testing.T) {
			coll, _ := generated(t, keptCfg)
			arcs := arcNames(t, coll)
			orig := hashTree(t, coll)
			wd := filepath.Join(t.TempDir(), "work")
			keep := filepath.Join(wd, filepath.FromSlash(keepIn))
			_, err := Run(context.Background(), Options{Collections: []string{coll}, WorkDir: wd,
				ConvertOptions: ConvertOptions{ConvertARC: true, KeepARC: keep}})
			if err == nil || !strings.Contains(err.Error(), "inside the work directory") {
				t.Errorf("run --keep-arc %s: %v, want a refusal naming the work directory", keepIn, err)
			}
			sameTree(t, "after the refused run", hashTree(t, coll), orig)
			if left := arcNames(t, coll); len(left) != len(arcs) {
				t.Errorf("%d of %d ARC files left in the collection", len(left), len(arcs))
			}
		})
	}
}
