package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommitAndAbort proves the name shows nothing, the old content, or the
// complete new content, and that no temporary file outlives Commit or Abort.
func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "a.warc.gz")
	os.WriteFile(name, []byte("old"), 0o644)
	listTemps := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*"))
		return m
	}

	f, err := Create(name, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new, half written")
	if b, _ := os.ReadFile(name); string(b) != "old" {
		t.Errorf("while writing, the name shows %q", b)
	}
	if tmps := listTemps(); len(tmps) != 1 || !strings.HasPrefix(filepath.Base(tmps[0]), ".tmp-a.warc.gz-") {
		t.Errorf("temporary files %v", tmps)
	}
	f.Abort()
	if b, _ := os.ReadFile(name); string(b) != "old" || len(listTemps()) != 0 {
		t.Errorf("after Abort: %q, temporaries %v", b, listTemps())
	}

	f, _ = Create(name, 0o600)
	f.WriteString("new")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // a deferred Abort after Commit does nothing
	fi, _ := os.Stat(name)
	if b, _ := os.ReadFile(name); string(b) != "new" || fi.Mode().Perm() != 0o600 || len(listTemps()) != 0 {
		t.Errorf("after Commit: %q, mode %v, temporaries %v", b, fi.Mode(), listTemps())
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
}

// TestCommitFailsCleanly proves a failed rename leaves the name untouched
// and no temporary file behind.
func TestCommitFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "target")
	os.Mkdir(name, 0o755) // a directory cannot be replaced by a file
	os.WriteFile(filepath.Join(name, "x"), nil, 0o644)
	f, err := Create(name, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("data")
	if err := f.Commit(); err == nil {
		t.Fatal("Commit over a non-empty directory succeeded")
	}
	if fi, _ := os.Stat(name); !fi.IsDir() {
		t.Error("the target changed")
	}
	if m, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
