package stage

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/inplace"
	"warcdedup/rewritelog"
	"warcdedup/wacz"
)

// TestFinishTakesOnlyNewVersionsPut proves that in a run that rewrites
// members where they lie (Sections), Finish writes a package anew around
// a file at a member's staged name only when it is the new version the
// rewrite put there (Replaced): a file another process put at that name
// during the run (which made the rewrite refuse the member: CommitNew
// never replaces) is never taken for the member, whose bytes it would
// lose, nor removed.
func TestFinishTakesOnlyNewVersionsPut(t *testing.T) {
	for _, c := range []struct {
		name    string
		foreign bool // a file of another process is at the staged name
		put     bool // the rewrite put the member's new version there
		want    bool // the member is among those Finish puts in its package
	}{
		{name: "a foreign file at the staged name is not the member's", foreign: true},
		{name: "the new version the rewrite put is", put: true, want: true},
		{name: "nothing there, nothing rewritten"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a.wacz")
			if err := os.WriteFile(pkg, []byte("0123456789abcdefghijklmnopqrstuvwxyz"), 0o644); err != nil {
				t.Fatal(err)
			}
			name := wacz.JoinName("a.wacz", "archive/1.warc.gz")
			m := PackageMember{Path: pkg, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 2, Size: 10}
			pr := &PackageRewrite{Members: map[string]PackageMember{name: m}, Messages: &collected{}, inPlace: true}
			pr.staged, pr.packages, pr.paths = map[string]*stagedMember{}, map[string][]string{"a.wacz": {name}}, map[string]string{"a.wacz": pkg}
			if err := pr.stageAll(context.Background(), []string{name}); err != nil {
				t.Fatal(err)
			}
			staged := pr.Locations()[name]
			if c.foreign || c.put {
				if err := os.WriteFile(staged, []byte("another process's file"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if c.put {
				old, _ := os.Stat(pkg)
				nw, _ := os.Stat(staged)
				pr.Replaced(rewritelog.Replacement{Name: name, Path: staged, Old: inplace.SectionInfo(old, m.Size), New: nw})
			}
			_, got := pr.replacedMembers()["a.wacz"][m.Member]
			if got != c.want {
				t.Fatalf("Finish puts the file at %s in its package for %s: %v, want %v", staged, m.Member, got, c.want)
			}
			pr.Discard()
			if _, err := os.Stat(staged); (c.foreign || c.put) && err != nil {
				t.Errorf("the file at the staged name is gone: %v", err)
			}
		})
	}
}
