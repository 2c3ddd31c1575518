package dedup

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunWACZKilledAfterExchangeLeavesNoOldPackage: a run killed after it
// exchanged a package's checked new version with the package (renameat2
// RENAME_EXCHANGE) and before it removed what the exchange left under
// the temporary name (the package as it was, .tmp-NAME.wacz-DIGITS) is
// run again. The rerun has no reason to write that package anew (it is
// already the new version), so the removal of leftovers that comes with
// a rebuild never sees it; the rerun must not exit 0 with the old
// package, as large as the package, left in the collection.
func TestRunWACZKilledAfterExchangeLeavesNoOldPackage(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	before := map[string]string{} // package -> its SHA-256 before the run
	pkgs, _ := filepath.Glob(filepath.Join(src, "*.wacz"))
	for _, p := range pkgs {
		sum, err := fileSum(p)
		if err != nil {
			t.Fatal(err)
		}
		before[filepath.Base(p)] = sum
	}
	tempIn := func(dir string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
		return m
	}
	// exchanged finds a package's old version under a temporary name
	// while the package's name holds another: the state between the
	// exchange and the removal.
	exchanged := func(coll string) (string, bool) {
		for _, tmp := range tempIn(coll) {
			name := strings.TrimPrefix(filepath.Base(tmp), ".tmp-")
			i := strings.LastIndexByte(name, '-')
			if i < 0 || before[name[:i]] == "" {
				continue
			}
			pkg := name[:i]
			old, err := fileSum(tmp)
			if err != nil || old != before[pkg] {
				continue
			}
			if now, err := fileSum(filepath.Join(coll, pkg)); err == nil && now != before[pkg] {
				return pkg, true
			}
		}
		return "", false
	}
	for attempt := 1; attempt <= 60; attempt++ {
		coll := filepath.Join(t.TempDir(), "coll")
		copyTree(t, src, coll)
		wd := coll + ".work"
		if err := os.MkdirAll(wd, 0o755); err != nil {
			t.Fatal(err)
		}
		p := killPoint{"a package exchanged with its new version, its old version not removed", func(w *watch) (string, bool) {
			pkg, ok := exchanged(coll)
			return fmt.Sprintf("with %s exchanged and its old version under a temporary name", pkg), ok
		}}
		where, _ := killAt(t, exec.Command(binPath, "run", "-q", "-j", "1", "--work-dir", wd, coll), wd, p)
		if where == "" {
			continue
		}
		t.Logf("killed %s (attempt %d)", where, attempt)
		out, err := exec.Command(binPath, "run", "-q", "-j", "2", "--work-dir", wd, coll).CombinedOutput()
		if err != nil {
			t.Fatalf("the run after the kill: %v\n%s", err, out)
		}
		if left := tempIn(coll); len(left) > 0 {
			t.Errorf("the run after the kill exited 0 and left %s (the package as it was before the exchange) in the collection", filepath.Base(left[0]))
		}
		return
	}
	// The window is a few system calls wide: on a loaded machine 60
	// attempts may miss it (a CI run did). Nothing was proven, which is
	// said, rather than a failure of the code.
	t.Skip("the run was never killed between a package's exchange and the removal of its old version in 60 attempts (a window of a few system calls): nothing proven this time")
}
