package dedup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/internal/jobtest"
	"warcdedup/scripts/gen"
	"warcdedup/scripts/waczgen"
)

// TestRunWACZWithWARCRefusedForSpaceAttack: a collection of small WACZ
// packages beside a large WARC file with duplicates, on a file system
// with room for the packages' copies and rebuilds but not for the WARC
// file's new version, which the rewrite writes while the copies are
// there. The check counted the new versions of members alone: it let the
// job begin, the members were copied, and the disk filled part-way in
// the rewrite of the WARC file. The job must be refused before anything
// is copied (every file as it was, nothing left beside them), and finish
// once there is room.
func TestRunWACZWithWARCRefusedForSpaceAttack(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	big, _ := generated(t, gen.Config{Files: 1, Records: 300, DupRate: 0.4, Seed: 5, MeanPayload: 64 << 10,
		Formats: []gen.Format{gen.WARC10Gz}, Prefix: "big", NonCandidates: true})
	dir := filepath.Join(t.TempDir(), "small")
	var packages, warcs int64
	var files []string
	for _, d := range []string{src, big} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(e.Name(), ".wacz") {
				packages += fi.Size()
			} else {
				warcs += fi.Size()
			}
			files = append(files, filepath.Join(d, e.Name()))
		}
	}
	// Room for the collection, and for the packages four times over
	// (their copies, new versions and rebuilds): not for the new version
	// of the WARC file, which keeps more than half of it.
	room := 4*packages + 64<<10
	if warcs/2 <= room {
		t.Fatalf("the WARC file (%d bytes) is not large enough beside the packages (%d bytes): the test proves nothing", warcs, packages)
	}
	mountSmallTmpfs(t, dir, fmt.Sprint(packages+warcs+room))
	copyFilesTo(t, dir, files...)
	opt := Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2}
	refusedForSpace(t, "run on a file system too small for the WARC file's new version", opt, dir, dir)
	remountTmpfs(t, dir, 4*(packages+warcs))
	if r := runOK(t, "rerun with room", opt); r.Report.Totals.RevisitsWritten == 0 {
		t.Fatal("the rerun with room wrote no revisit")
	}
}

// TestRunWACZRequirerRefreshRefusedForSpaceAttack: a large package of
// the collection with no duplicates of its own requires, by SHA-256 and
// size (an earlier job's entries), the small packages the run rewrites:
// after the rewrite, the run writes it anew beside itself with its
// entries brought up to date (RefreshRequirers). On a file system with
// room for the small packages' copies and rebuilds but not for that, the
// check let the job begin and the disk filled part-way, the requirer
// left naming hashes no package has any more. The job must be refused
// before anything is copied, and finish once there is room.
func TestRunWACZRequirerRefreshRefusedForSpaceAttack(t *testing.T) {
	src, _ := generatedWACZ(t, false)
	bigDir, bigRes := generated(t, gen.Config{Files: 1, Records: 150, Seed: 77, MeanPayload: 128 << 10,
		Formats: []gen.Format{gen.WARC10Gz}, Prefix: "big", NonCandidates: true})
	if _, err := waczgen.Write(bigDir, bigRes, waczgen.Config{Packages: 1, Prefix: "big"}); err != nil {
		t.Fatal(err)
	}
	small, err := filepath.Glob(filepath.Join(src, "*.wacz"))
	if err != nil || len(small) == 0 {
		t.Fatalf("no packages in %s: %v", src, err)
	}
	bigs, err := filepath.Glob(filepath.Join(bigDir, "*.wacz"))
	if err != nil || len(bigs) != 1 {
		t.Fatalf("packages in %s: %v %v", bigDir, bigs, err)
	}
	big := bigs[0]
	for _, p := range small {
		jobtest.RequireBy(t, big, p)
	}
	smallSize := sizeOf(t, small...)
	bigInfo, err := os.Stat(big)
	if err != nil {
		t.Fatal(err)
	}
	// Room for the collection, and for the small packages four times
	// over (their copies, new versions and rebuilds): not for the large
	// one written anew, even with every copy gone.
	room := 4*smallSize + 64<<10
	if bigInfo.Size() <= room {
		t.Fatalf("the requirer (%d bytes) is not larger than the room (%d bytes): the test proves nothing", bigInfo.Size(), room)
	}
	dir := filepath.Join(t.TempDir(), "small")
	mountSmallTmpfs(t, dir, fmt.Sprint(smallSize+bigInfo.Size()+room))
	copyFilesTo(t, dir, append(small, big)...)
	before := hashTree(t, dir)
	opt := Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2}
	refusedForSpace(t, "run on a file system too small for the requirer written anew", opt, dir, dir)
	remountTmpfs(t, dir, 4*(smallSize+bigInfo.Size()))
	runOK(t, "rerun with room", opt)
	if hashTree(t, dir)[filepath.Base(big)] == before[filepath.Base(big)] {
		t.Fatalf("%s was not written anew: the test proves nothing", big)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("stale entries after the rerun: %v", s)
	}
}

// TestRunWACZRemovesKilledRebuildLeftoverAttack: a run killed while it
// wrote a package anew leaves the partial new version beside it
// (.tmp-NAME.wacz-DIGITS, up to the package's size). The next run wrote
// the package anew and left it there for good, where it removes those of
// WARC files: each killed attempt took room the space check then counted
// as used. A run that writes a package anew removes its leftovers.
func TestRunWACZRemovesKilledRebuildLeftoverAttack(t *testing.T) {
	dir, _ := generatedWACZ(t, false)
	pkgs, err := filepath.Glob(filepath.Join(dir, "*.wacz"))
	if err != nil || len(pkgs) == 0 {
		t.Fatalf("no packages in %s: %v", dir, err)
	}
	for _, p := range pkgs {
		leftover := filepath.Join(dir, ".tmp-"+filepath.Base(p)+"-1234567")
		if err := os.WriteFile(leftover, make([]byte, 64<<10), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := hashTree(t, dir)
	runOK(t, "run", Options{Collections: []string{dir}, WorkDir: filepath.Join(t.TempDir(), "work"), Jobs: 2})
	after := hashTree(t, dir)
	rebuilt := 0
	for _, p := range pkgs {
		name := filepath.Base(p)
		if after[name] == before[name] {
			continue
		}
		rebuilt++
		if _, err := os.Stat(filepath.Join(dir, ".tmp-"+name+"-1234567")); err == nil {
			t.Errorf("%s written anew, the partial version a killed run left beside it is still there", name)
		}
	}
	if rebuilt == 0 {
		t.Fatal("no package written anew: the test proves nothing")
	}
}

// TestRunIndexWACZCommittedRequirerRefusedForSpaceAttack: a large
// package of a committed crawl requires, by SHA-256 and size, the
// packages of the crawl run now, which the run rewrites: it is written
// anew after the rebuild with its entries brought up to date
// (committedRequirers, then RefreshRequirers). On a file system with
// room for the crawl's copies and rebuilds but not for it, the check,
// made before the committed requirers are known, let the job begin, and
// the disk filled part-way. The job must be refused before anything is
// rewritten (every file as it was, nothing left beside them), and
// finish once there is room.
func TestRunIndexWACZCommittedRequirerRefusedForSpaceAttack(t *testing.T) {
	_, byDir, _ := jobtest.WACZCrawls(t, "directories")
	bigDir, bigRes := generated(t, gen.Config{Files: 1, Records: 150, Seed: 77, MeanPayload: 128 << 10,
		Formats: []gen.Format{gen.WARC10Gz}, Prefix: "big", NonCandidates: true})
	if _, err := waczgen.Write(bigDir, bigRes, waczgen.Config{Packages: 1, Prefix: "big"}); err != nil {
		t.Fatal(err)
	}
	bigs, err := filepath.Glob(filepath.Join(bigDir, "*.wacz"))
	if err != nil || len(bigs) != 1 {
		t.Fatalf("packages in %s: %v %v", bigDir, bigs, err)
	}
	base := filepath.Join(t.TempDir(), "small")
	var small, crawl1 []string
	var smallSize int64
	for name, d := range byDir {
		p := filepath.Join(d, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		smallSize += fi.Size()
		small = append(small, p)
		if strings.HasPrefix(name, "crawl-1-") {
			crawl1 = append(crawl1, p)
		}
	}
	for _, p := range crawl1 {
		jobtest.RequireBy(t, bigs[0], p)
	}
	bigInfo, err := os.Stat(bigs[0])
	if err != nil {
		t.Fatal(err)
	}
	room := 4*smallSize + 64<<10
	if bigInfo.Size() <= room {
		t.Fatalf("the requirer (%d bytes) is not larger than the room (%d bytes): the test proves nothing", bigInfo.Size(), room)
	}
	mountSmallTmpfs(t, base, fmt.Sprint(smallSize+bigInfo.Size()+room))
	copyTo := func(p, crawl string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(base, crawl, filepath.Base(p))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return to
	}
	for _, p := range small {
		copyTo(p, strings.Join(strings.SplitN(filepath.Base(p), "-", 3)[:2], "-"))
	}
	big := copyTo(bigs[0], "crawl-0")
	index := filepath.Join(t.TempDir(), "index")
	runOK(t, "crawl-0", Options{Collections: []string{filepath.Join(base, "crawl-0")}, Index: index, Jobs: 2})
	if !slices.ContainsFunc(jobtest.RequiresOf(t, big), func(n string) bool { return strings.HasPrefix(n, "crawl-1-") }) {
		t.Fatalf("%s does not require crawl-1's packages after crawl-0's run: the test proves nothing", big)
	}
	before := hashTree(t, base)
	opt := Options{Collections: []string{filepath.Join(base, "crawl-1")}, Index: index, Jobs: 2}
	refusedForSpace(t, "run of crawl-1 on a file system too small for crawl-0's requirer written anew", opt, base,
		filepath.Join(base, "crawl-0"), filepath.Join(base, "crawl-1"))
	remountTmpfs(t, base, 4*(smallSize+bigInfo.Size()))
	runOK(t, "crawl-1 with room", opt)
	if hashTree(t, base)[filepath.Join("crawl-0", filepath.Base(big))] == before[filepath.Join("crawl-0", filepath.Base(big))] {
		t.Fatalf("%s was not written anew: the test proves nothing", big)
	}
	if s := jobtest.StaleRequires(t, filepath.Join(base, "crawl-0"), filepath.Join(base, "crawl-1")); len(s) > 0 {
		t.Errorf("stale entries after the run with room: %v", s)
	}
}
