package stage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/wacz"
)

// TestDiscardKeepsLoggedVersions stages a member of a package, replaces
// the staged copy as the rewrite or undo does (the new version the log
// names, renamed over it), and proves that Discard keeps it unless a new
// version of the package written around it was put in place: removed, the
// log named a version that was nowhere and the package kept the other
// (a full disk while the package was written; or a rebuild of the package
// that only brought its requires entries up to date, copying the member
// from the package, counted as put).
func TestDiscardKeepsLoggedVersions(t *testing.T) {
	for _, c := range []struct {
		name     string
		replaced bool // the staged copy was replaced (logged)
		putMine  bool // a new version of the package written around it was put in place
		putOther bool // a new version of the package without it was put in place
		kept     bool
	}{
		{"replaced, its package not written", true, false, false, true},
		{"replaced, its package written around it", true, true, false, false},
		{"replaced, its package written only to bring its requires up to date", true, false, true, true},
		{"not replaced", false, false, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a.wacz")
			if err := os.WriteFile(pkg, []byte("0123456789abcdefghijklmnopqrstuvwxyz"), 0o644); err != nil {
				t.Fatal(err)
			}
			name := wacz.JoinName("a.wacz", "archive/1.warc.gz")
			pr := &PackageRewrite{Members: map[string]PackageMember{name: {Path: pkg, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 2, Size: 10}},
				Messages: &collected{}}
			if err := pr.PrepareMembers(context.Background(), []string{name}, nil); err != nil {
				t.Fatal(err)
			}
			staged := pr.StagedCopy(name)
			if c.replaced {
				if err := os.WriteFile(staged+".new", []byte("the logged version"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(staged+".new", staged); err != nil {
					t.Fatal(err)
				}
			}
			pr.put = map[string]bool{}
			if c.putMine {
				pr.put[staged] = true
			}
			if c.putOther {
				pr.put[filepath.Join(dir, "another staged copy")] = true
			}
			pr.Discard()
			_, err := os.Stat(staged)
			if kept := err == nil; kept != c.kept {
				t.Errorf("the staged copy kept: %v, want %v", kept, c.kept)
			}
		})
	}
}
