package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"warcdedup/inplace"
	"warcdedup/rewritelog"
	"warcdedup/wacz"
)

// TestFinishTellsEachPackageDone proves that Finish tells Done the size
// of every package PlannedBytes counted, once each, whether it wrote the
// package anew (its member's new version put) or had nothing of it to
// write (its member never replaced): the rewrite stage's progress, whose
// total takes PlannedBytes, then ends at its total.
func TestFinishTellsEachPackageDone(t *testing.T) {
	type pkgCase struct {
		name string
		put  bool // the member's new version was put at its staged name
	}
	cases := []pkgCase{{"written anew", true}, {"nothing replaced", false}}
	pr := &PackageRewrite{TempDir: t.TempDir(), Messages: &collected{}, inPlace: true, Jobs: 2,
		paths: map[string]string{}, packages: map[string][]string{}, staged: map[string]*stagedMember{}}
	sizes := map[string]int64{}
	for i, c := range cases {
		dir := filepath.Join(t.TempDir(), c.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		made, before, old, m, data := generatedPackage(t, dir, int64(3+i))
		old.Close()
		pkg := fmt.Sprintf("p%d.wacz", i) // each package a name of its own
		path := filepath.Join(dir, pkg)
		if err := os.Rename(made, path); err != nil {
			t.Fatal(err)
		}
		name := wacz.JoinName(pkg, m.Name)
		pfi, _ := os.Stat(path)
		staged := filepath.Join(dir, "."+pkg+"#member"+stagedSuffix)
		pr.paths[pkg], pr.packages[pkg] = path, []string{name}
		pr.staged[name] = &stagedMember{PackageMember: PackageMember{Path: path, Package: pkg, Member: m.Name}, path: staged, info: inplace.SectionInfo(pfi, m.CompressedSize)}
		sizes[pkg] = int64(len(before))
		if c.put {
			if err := os.WriteFile(staged, data, 0o644); err != nil {
				t.Fatal(err)
			}
			nw, _ := os.Stat(staged)
			pr.Replaced(rewritelog.Replacement{Name: name, Path: staged, Old: inplace.SectionInfo(pfi, m.CompressedSize), New: nw})
		}
	}
	planned := pr.PlannedBytes()
	var mu sync.Mutex
	told := map[int64]int{}
	var sum int64
	pr.Done = func(n int64) {
		mu.Lock()
		defer mu.Unlock()
		told[n]++
		sum += n
	}
	res, err := pr.Finish(context.Background(), time.Now())
	if err != nil || res.Rebuilt != 1 {
		t.Fatalf("Finish: %v, %d packages written anew (want 1), refused %v", err, res.Rebuilt, res.Refused)
	}
	var want int64
	for pkg, n := range sizes {
		want += n
		if told[n] != 1 {
			t.Errorf("%s (%d bytes): told done %d times, want once", pkg, n, told[n])
		}
	}
	if planned != want || sum != planned {
		t.Errorf("PlannedBytes %d, Done told %d in all; the packages have %d bytes", planned, sum, want)
	}
}
