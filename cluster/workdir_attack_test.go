package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWorkDirDotDotAfterLink opens a cluster job's work directory named
// "to-sub/../wd", where to-sub links to real/sub: the directory the
// kernel names (real/wd), as fspath.Abs spells every other path a user
// gives (warcdedup run's own --work-dir is used as given, the kernel's).
// Cleaned by spelling, the monitor made and locked wd in the working
// directory instead, where nothing else of the job looks for it.
func TestWorkDirDotDotAfterLink(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(root, "cwd")
	for _, d := range []string{cwd, filepath.Join(root, "real", "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "real", "sub"), filepath.Join(cwd, "to-sub")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(cwd)
	m, err := open(Options{WorkDir: "to-sub/../wd"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if want := filepath.Join(root, "real", "wd"); string(m.wd) != want {
		t.Errorf("work directory %s, want %s", m.wd, want)
	}
	if _, err := os.Stat(filepath.Join(cwd, "wd")); err == nil {
		t.Errorf("a work directory was made in the working directory")
	}
}
