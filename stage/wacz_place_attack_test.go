package stage

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

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
			if err := pr.placeAll(context.Background(), []string{name}); err != nil {
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
			if refused := pr.notPutByRewrite(pr.replacedMembers()); (len(refused) > 0) != c.foreign {
				t.Errorf("Finish refuses %q, want a refusal: %v", refused, c.foreign)
			}
			pr.Discard()
			if _, err := os.Stat(staged); (c.foreign || c.put) && err != nil {
				t.Errorf("the file at the staged name is gone: %v", err)
			}
		})
	}
}

// TestRebuildTakesOnlyNewVersionsPut proves that a package's rebuild in a
// run that read its members in place refuses a staged file that is not
// the new version the rewrite put there (another process renamed its own
// over it after replacedMembers looked), leaving the package as it was,
// and takes the one it put.
func TestRebuildTakesOnlyNewVersionsPut(t *testing.T) {
	for _, c := range []struct {
		name    string
		swapped bool // another file took the staged name after the put
	}{
		{name: "the new version put is taken"},
		{name: "a file renamed over it is refused", swapped: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, before, old, m, data := generatedPackage(t, dir, 3)
			old.Close()
			pkg := filepath.Base(path)
			name := wacz.JoinName(pkg, m.Name)
			staged := filepath.Join(dir, "."+pkg+"#member"+stagedSuffix)
			if err := os.WriteFile(staged, data, 0o644); err != nil {
				t.Fatal(err)
			}
			nw, _ := os.Stat(staged)
			pfi, _ := os.Stat(path)
			pr := &PackageRewrite{paths: map[string]string{pkg: path}, TempDir: t.TempDir(), Messages: &collected{}, inPlace: true,
				staged: map[string]*stagedMember{name: {PackageMember: PackageMember{Path: path, Package: pkg, Member: m.Name}, path: staged, info: inplace.SectionInfo(pfi, m.CompressedSize)}}}
			pr.Replaced(rewritelog.Replacement{Name: name, Path: staged, Old: inplace.SectionInfo(pfi, m.CompressedSize), New: nw})
			if c.swapped {
				other := staged + ".other"
				if err := os.WriteFile(other, data, 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(other, staged); err != nil {
					t.Fatal(err)
				}
			}
			_, err := pr.rebuild(pkg, map[string]string{m.Name: staged}, time.Now(), func(*wacz.Rebuild) {})
			after, rerr := os.ReadFile(path)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if refused := err != nil && bytes.Equal(after, before); refused != c.swapped {
				t.Fatalf("rebuild: %v; package left as it was: %v; want refused %v", err, bytes.Equal(after, before), c.swapped)
			}
		})
	}
}
