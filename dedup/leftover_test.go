package dedup

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestUndoAfterKilledRunRemovesItsTemporaryFile: a run killed while it
// wrote a file's new version, before it journaled anything, leaves the
// partial version (.tmp-NAME-DIGITS) in the collection. The undo after it
// must not exit 0 with it there, as if the collection it was told of were
// as it was: it removes it, as the next run would.
func TestUndoAfterKilledRunRemovesItsTemporaryFile(t *testing.T) {
	src, _ := generated(t, attackCfg)
	tempIn := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
		return m
	}
	for attempt := 1; attempt <= 10; attempt++ {
		coll := filepath.Join(t.TempDir(), "coll")
		copyTree(t, src, coll)
		wd := coll + ".work"
		if err := os.MkdirAll(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		p := killPoint{"a new version being written, not journaled", func(w *watch) (string, bool) {
			tmp := tempIn(coll)
			return fmt.Sprintf("with %d temporary files in the collection and %d intents journaled", len(tmp), len(w.intents())), len(tmp) > 0 && len(w.intents()) == 0
		}}
		where, _ := killAt(t, exec.Command(binPath, "run", "-q", "-j", "1", "--work-dir", wd, coll), wd, p)
		if where == "" {
			continue
		}
		t.Logf("killed %s", where)
		u, err := Undo(context.Background(), UndoOptions{Paths: []string{coll}, WorkDir: wd, Jobs: 2})
		if err != nil {
			t.Fatalf("undo: %v", err)
		}
		if left := tempIn(coll); len(left) > 0 && u.Exit == 0 {
			t.Errorf("undo exited 0 (nothing to do: %v) and left the killed run's %s in the collection", u.NothingToDo, filepath.Base(left[0]))
		}
		return
	}
	t.Fatal("the run was never killed while writing a new version")
}
