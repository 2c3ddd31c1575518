package dedup

import (
	"context"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/wacz"
)

// TestRunIndexWACZCrawls runs two crawls of WACZ packages with a crawl
// index, given as directories of packages and as multi-WACZ JSON, one
// after the other. It proves that the first crawl's commit records its
// packages (each with its SHA-256 and size) and its originals by
// package, that the second crawl's duplicates of the first crawl's
// records become revisits carrying WARC-Refers-To-Container naming the
// first crawl's package, that each of its packages lists those packages
// in relation.requires with their current SHA-256, size and crawl, that
// every package passes its check, that the first crawl's packages are
// not touched, that a rerun of a committed crawl has nothing to do, and
// that once the second crawl is removed from the index, undo gives its
// packages back as they were.
func TestRunIndexWACZCrawls(t *testing.T) {
	for _, form := range []string{"directories", "multi-WACZ JSON"} {
		t.Run(form, func(t *testing.T) {
			k := newCrawlsWithIndex(t, form)
			dir, byDir, index := k.dir, k.byDir, k.index
			runOK(t, "crawl-0", k.options(0))
			ix, err := crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			files, err := ix.Files("crawl-0")
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, f := range files {
				names = append(names, f.Name)
				sum, size, err := packageFixity(filepath.Join(byDir[f.Name], f.Name))
				if err != nil || sum != f.SHA256 || size != f.Size {
					t.Errorf("crawl-0's file %s committed with %s %d bytes; it has %s %d (%v)", f.Name, f.SHA256, f.Size, sum, size, err)
				}
			}
			if want := []string{"crawl-0-0.wacz", "crawl-0-1.wacz"}; !slices.Equal(names, want) {
				t.Errorf("crawl-0 committed with the files %q, want its packages %q", names, want)
			}
			crawl0 := hashTree(t, dir)

			r2 := runOK(t, "crawl-1", keepingWork(k.options(1)))
			after := hashTree(t, dir)
			for n, s := range crawl0 {
				if strings.Contains(n, "crawl-0-") && after[n] != s {
					t.Errorf("crawl-1's run changed %s of the committed crawl-0", n)
				}
			}
			// Every package, of both crawls, in one directory: as a
			// multi-WACZ collection loads them.
			one := t.TempDir()
			for n := range byDir {
				copyTestFile(t, filepath.Join(byDir[n], n), filepath.Join(one, n))
			}
			reps := checkPackages(t, one)
			if n := containerRevisits(t, one); n == 0 {
				t.Errorf("no revisit carries WARC-Refers-To-Container")
			}
			across := 0
			for _, p := range []string{"crawl-1-0.wacz", "crawl-1-1.wacz"} {
				pk, err := wacz.Open(filepath.Join(byDir[p], p))
				if err != nil {
					t.Fatal(err)
				}
				reqs, err := pk.Datapackage.Requires()
				pk.Close()
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range reqs {
					if !strings.HasPrefix(q.Filename, "crawl-0-") {
						continue
					}
					across++
					want := reps[q.Filename]
					if want == nil || q.Hash != hex.EncodeToString(want.SHA256) || q.Size != want.Size || q.CrawlID != "crawl-0" {
						t.Errorf("%s requires %s with %s %d bytes crawl %q: not the package as it is", p, q.Filename, q.Hash, q.Size, q.CrawlID)
					}
				}
			}
			if across == 0 {
				t.Fatal("no package of crawl-1 requires a package of crawl-0: the test proves nothing")
			}
			// The revisits of crawl-0's records are in the rewrite log.
			wd := k.workDir(1)
			if r2.Report.Totals.RevisitsWritten == 0 {
				t.Fatal("crawl-1: no revisit written")
			}
			ix, err = crawlindex.Open(index)
			if err != nil {
				t.Fatal(err)
			}
			if k := ix.Registry.Crawl("crawl-1"); k == nil || len(k.Requires) != 1 || k.Requires[0].Crawl != "crawl-0" {
				t.Errorf("crawl-1 committed requiring %+v, want crawl-0", k)
			}

			// A rerun of the committed crawl has nothing to do.
			r3, err := Run(context.Background(), k.options(1))
			if err != nil || !r3.NothingToDo {
				t.Errorf("rerun of crawl-1: %v, nothing to do %v", err, r3 != nil && r3.NothingToDo)
			}

			// remove --restore of crawl-0 would rewrite crawl-1's packages
			// as WARC files: refused before anything is changed.
			deduplicated := hashTree(t, dir)
			if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2}); err == nil || !strings.Contains(err.Error(), "does not rewrite packages") {
				t.Errorf("index remove --restore crawl-0: %v", err)
			}
			sameTree(t, "after index remove --restore crawl-0", hashTree(t, dir), deduplicated)

			// Undo: taken out of the index first, then undone.
			if _, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-1", Jobs: 2}); err != nil {
				t.Fatalf("index remove crawl-1: %v", err)
			}
			u, err := Undo(context.Background(), UndoOptions{Paths: []string{k.ops[1]}, WorkDir: wd, Jobs: 2})
			if err != nil || u.Exit != 0 || u.Stats.Records != r2.Report.Totals.RevisitsWritten {
				t.Fatalf("undo crawl-1: %v, %+v (the run wrote %d revisits)", err, u, r2.Report.Totals.RevisitsWritten)
			}
			if u.BytesDiffer != 0 {
				t.Errorf("undo: %d files restored with other bytes", u.BytesDiffer)
			}
			sameTree(t, "after undo", withoutWorkDirs(hashTree(t, dir)), withoutWorkDirs(crawl0))
		})
	}
}
