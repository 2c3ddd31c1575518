package dedup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/collock"
)

// TestDirLockDirectoryMadeAfterLocking proves that a directory made in
// the collection after a run took its locks, and another job holds, is
// not rewritten under that job: the run lists it and is refused, naming
// it, before it rewrites any of its files.
func TestDirLockDirectoryMadeAfterLocking(t *testing.T) {
	src, _ := generated(t, attackCfg)
	coll := filepath.Join(t.TempDir(), "coll")
	copyTree(t, src, coll)
	w1 := coll + ".w1"
	h := holdJob(t, w1, coll, "run", "-q", "-j", "2", "--work-dir", w1, coll)
	// Made while the run waits, holding the locks it took: copies of the
	// collection's files, duplicates the run would rewrite.
	made := filepath.Join(coll, "made")
	copyTree(t, src, made)
	other, err := collock.Lock([]string{made}) // another job, on the new directory alone
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	before := hashTree(t, made)
	err = h.finish(t)
	if err == nil || !strings.Contains(err.Error(), made+": another warcdedup job is working on this directory's files") {
		t.Errorf("the run with %s held by another job: %v, want it refused naming the directory", made, err)
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 2 {
		t.Errorf("exit status %d, want 2", code)
	}
	sameTree(t, "the directory another job holds", hashTree(t, made), before)
}

// TestDirLockDescriptors proves that a collection of more directories
// than the descriptor limit leaves room for, beside the job's own work,
// refuses the job before it changes anything (exit status 2, naming
// ulimit -n), rather than letting it lock them all and then fail
// midway with "too many open files".
func TestDirLockDescriptors(t *testing.T) {
	src, _ := generated(t, attackCfg)
	coll := filepath.Join(t.TempDir(), "coll")
	copyTree(t, src, coll)
	for i := range 300 {
		if err := os.Mkdir(filepath.Join(coll, fmt.Sprintf("d%03d", i)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, coll)
	// Room for the 301 locks and a few more: not for the job's work.
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 330 && exec "$0" "$@"`, binPath, "run", "-q", "--work-dir", coll+".w", coll)
	status, out := exitOf(cmd)
	if status != 2 || !strings.Contains(out, "ulimit -n") {
		t.Errorf("a run whose locks leave too few descriptors: exit status %d, want 2 and a message naming ulimit -n:\n%s", status, out)
	}
	sameTree(t, "the collection after the job refused", hashTree(t, coll), before)
}
