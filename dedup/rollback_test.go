package dedup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/crawlindex"
)

// TestIndexRolledBackWithoutLatestGeneration (the hostile campaign's
// finding, commit cde4251 on branch attack): the index's latest
// generation is lost with CURRENT set back to the one before (a snapshot
// rollback of the index's generations, an old generation directory
// restored over a damaged one). The older generation is whole, only
// older: it forgets crawl-2, committed after it, whose revisits need
// crawl-0. Before the index recorded its commits beside its generations,
// every index command took it as the index: remove --restore crawl-0
// restored crawl-1's revisits only and said crawl-0's files "may be
// deleted", and deleting them left crawl-2's revisits of crawl-0 without
// originals. Now each command refuses it, naming crawl-2: remove, the
// index's Open (index verify, a run's join and commit), a rerun of
// crawl-2, and nothing of crawl-0 is lost.
func TestIndexRolledBackWithoutLatestGeneration(t *testing.T) {
	crawls, index := indexedCrawls(t, t.TempDir(), "crawl-0", "crawl-1", "crawl-2")
	latest := currentGeneration(t, index)
	gens, _ := filepath.Glob(filepath.Join(index, "gen-*"))
	var before string
	for _, g := range gens {
		if g < latest && g > before {
			before = g
		}
	}
	if before == "" {
		t.Fatalf("no generation before %s: %v", latest, gens)
	}
	backup := filepath.Join(t.TempDir(), filepath.Base(latest))
	copyTree(t, latest, backup)
	if err := os.RemoveAll(latest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(index, "CURRENT"), []byte(filepath.Base(before)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2})
	if err == nil && res.Removed {
		if err := os.RemoveAll(filepath.Join(crawls, "crawl-0")); err != nil {
			t.Fatal(err)
		}
		checkRevisitsResolve(t, crawls)
		t.Fatalf("remove --restore crawl-0 with crawl-2's generation gone: removed (dependents %v), crawl-0 deleted", res.Dependents)
	}
	if err == nil || !strings.Contains(err.Error(), "crawl crawl-2 was committed") {
		t.Errorf("remove --restore crawl-0: %v, want a refusal naming crawl-2", err)
	}
	t.Logf("remove --restore crawl-0 refused: %v", err)
	checkRevisitsResolve(t, crawls) // nothing restored, nothing lost

	// What index verify, a run's join and its commit open first.
	_, err = crawlindex.Open(index)
	var damage *crawlindex.DamageError
	if !errors.As(err, &damage) || !strings.Contains(err.Error(), "crawl crawl-2 was committed") || !strings.Contains(err.Error(), "from a backup") {
		t.Errorf("open: %v, want the index refused, naming crawl-2 and what to do", err)
	}

	// crawl-2 run again: refused, not "nothing to do" nor committed anew
	// without what its revisits need.
	r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(crawls, "crawl-2")}, Index: index, Jobs: 2})
	switch {
	case err == nil && r.Report.Exit == 0:
		t.Errorf("a rerun of crawl-2 on the rolled-back index: exit 0 (nothing to do: %v)", r.NothingToDo)
	case err == nil:
		t.Errorf("a rerun of crawl-2: exit %d (%s), want the index refused, naming crawl-2", r.Report.Exit, r.Report.ExitReason)
	case !strings.Contains(err.Error(), "crawl crawl-2 was committed"):
		t.Errorf("a rerun of crawl-2: %v, want the index refused, naming crawl-2", err)
	}

	// The generation back from the backup: remove --restore does its work.
	copyTree(t, backup, latest)
	if err := os.WriteFile(filepath.Join(index, "CURRENT"), []byte(filepath.Base(latest)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2})
	if err != nil || !res.Removed {
		t.Fatalf("remove --restore crawl-0 once the generation is back: %v", err)
	}
	if err := os.RemoveAll(filepath.Join(crawls, "crawl-0")); err != nil {
		t.Fatal(err)
	}
	checkRevisitsResolve(t, crawls)
}

// TestIndexRolledBackFoundByWorkDirs: the same loss on an index an
// earlier warcdedup wrote (no records of its commits beside its
// generations: commits/ removed here), set back before any commit of this
// one wrote them. The work directories of its runs (INDEX/work/NAME) say
// which crawls were committed: remove --restore and a run refuse the
// index, naming crawl-2, and CheckCommittedCrawls (index verify) reports
// it; nothing of crawl-0 is lost.
func TestIndexRolledBackFoundByWorkDirs(t *testing.T) {
	crawls, index := indexedCrawls(t, t.TempDir(), "crawl-0", "crawl-1", "crawl-2")
	if err := os.RemoveAll(filepath.Join(index, "commits")); err != nil {
		t.Fatal(err)
	}
	latest := currentGeneration(t, index)
	gens, _ := filepath.Glob(filepath.Join(index, "gen-*"))
	var before string
	for _, g := range gens {
		if g < latest && g > before {
			before = g
		}
	}
	if before == "" {
		t.Fatalf("no generation before %s: %v", latest, gens)
	}
	if err := os.RemoveAll(latest); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(index, "CURRENT"), []byte(filepath.Base(before)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const want = "crawl crawl-2 was committed by the run of"

	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatalf("open: %v (an index without records of its commits opens as it is)", err)
	}
	err = CheckCommittedCrawls(ix)
	var damage *crawlindex.DamageError
	if !errors.As(err, &damage) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "from a backup") {
		t.Errorf("CheckCommittedCrawls: %v, want the index refused, naming crawl-2 and what to do", err)
	}

	res, err := RemoveCrawl(context.Background(), RemoveOptions{Index: index, Crawl: "crawl-0", Restore: true, Jobs: 2})
	if err == nil && res.Removed {
		if err := os.RemoveAll(filepath.Join(crawls, "crawl-0")); err != nil {
			t.Fatal(err)
		}
		checkRevisitsResolve(t, crawls)
		t.Fatalf("remove --restore crawl-0 with crawl-2's generation gone: removed (dependents %v), crawl-0 deleted", res.Dependents)
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("remove --restore crawl-0: %v, want a refusal naming crawl-2", err)
	}
	checkRevisitsResolve(t, crawls)

	r, err := Run(context.Background(), Options{Collections: []string{filepath.Join(crawls, "crawl-2")}, Index: index, Jobs: 2})
	switch {
	case err == nil:
		t.Errorf("a rerun of crawl-2: exit %d (%s, nothing to do: %v), want the index refused", r.Report.Exit, r.Report.ExitReason, r.NothingToDo)
	case !strings.Contains(err.Error(), want):
		t.Errorf("a rerun of crawl-2: %v, want the index refused, naming crawl-2", err)
	}
}
