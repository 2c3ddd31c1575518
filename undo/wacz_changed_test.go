package undo

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"warcdedup/crawlindex"
	"warcdedup/internal/jobtest"
	"warcdedup/internal/ziptest"
)

// moveMembers writes the package at path anew with every member's data
// further on (a padding extra field in the first member's headers, which
// ZIP readers pass over): the contents and order of its members as they
// were, its WARC members' records at other offsets of the file, as a
// package rebuilt by another tool since its crawl's commit has them.
func moveMembers(t *testing.T, path string) {
	t.Helper()
	pad := func(i int, h *zip.FileHeader) {
		if i == 0 {
			pad := make([]byte, 4+512)
			pad[0], pad[1], pad[3] = 0x66, 0x66, 2 // ID 0x6666, 512 bytes
			h.Extra = append(slices.Clone(h.Extra), pad...)
		}
	}
	ziptest.Rewrite{Raw: true, Header: pad}.File(t, path)
}

// recordedAs is what the index records of the file name of crawl.
func recordedAs(t *testing.T, index, crawl, name string) crawlindex.FileInfo {
	t.Helper()
	ix, err := crawlindex.Open(index)
	if err != nil {
		t.Fatal(err)
	}
	files, err := ix.Files(crawl)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("the index records no file %s of crawl %s", name, crawl)
	return crawlindex.FileInfo{}
}

// TestUndoIndexWACZOutsideRequirerChangedSinceCommitNotRecorded moves
// the WARC members of crawl-0's requirer after crawl-0's commit (the
// package rebuilt by another tool: its records at other offsets than
// those the index has its originals at) and proves that the undo of
// crawl-1, which the requirer requires, neither writes it anew nor
// records it again in the index, and names it (exit 1), as a run's
// refresh of committed requirers refuses such a package
// (crawlindex.ChangedSinceCommit). Without the check the undo noted the package
// as it was found, wrote it anew and had the index record it as it is:
// the index then takes its moved WARC members as where its originals
// are, its file's SHA-256 agreeing, so that index verify no longer
// tells that the offsets are wrong, and the undo exited 0.
func TestUndoIndexWACZOutsideRequirerChangedSinceCommitNotRecorded(t *testing.T) {
	c := setUpOutsideRequirers(t, "directories")
	requirer := c.requirers[0]
	name := filepath.Base(requirer)
	before := recordedAs(t, c.index, "crawl-0", name)
	moveMembers(t, requirer)
	if got := jobtest.WARCPlaces(t, requirer); slices.Equal(got, c.placesOfRequirers[requirer]) {
		t.Fatalf("%s: its WARC members did not move (%v): the test proves nothing", requirer, got)
	}
	moved := jobtest.HashTree(t, filepath.Dir(requirer))[name]
	u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
	if err != nil {
		t.Fatalf("undo crawl-1: %v", err)
	}
	if after := recordedAs(t, c.index, "crawl-0", name); after != before {
		t.Errorf("the index records %s anew (%+v; was %+v): it takes the moved WARC members as where crawl-0's originals are", name, after, before)
	}
	if jobtest.HashTree(t, filepath.Dir(requirer))[name] != moved {
		t.Errorf("%s was written anew", requirer)
	}
	named := slices.ContainsFunc(u.StaleRequirers, func(s string) bool { return strings.Contains(s, requirer) })
	if u.Exit == 0 || !named {
		t.Errorf("undo crawl-1: exit %d, stale requirers %v; want exit 1 naming %s", u.Exit, u.StaleRequirers, requirer)
	}
}

// TestUndoIndexWACZCommittedCrawlsJSONGone is
// TestUndoIndexWACZUpdatesCommittedCrawlsJSON with crawl-0's multi-WACZ
// JSON, which the index records as the crawl's, gone before the undo
// (moved or deleted by the operator since crawl-0's commit). It proves
// that the undo still finishes: it brings crawl-0's requirer up to date
// and has the index record it as it is, and says that the JSON is not
// there to bring up to date. Without it the undo stopped on the missing
// JSON before the index recorded the requirer, every time it was run
// again: the requirer written anew, the index describing its former
// version.
func TestUndoIndexWACZCommittedCrawlsJSONGone(t *testing.T) {
	c := setUpOutsideRequirersOf(t, "multi-WACZ JSON", nil, true)
	required := jobtest.HashTree(t, filepath.Dir(c.required))[filepath.Base(c.required)]
	if err := os.Rename(c.json, c.json+".moved"); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
		if err == nil && u.Exit == 0 && len(u.StaleRequirers) == 0 {
			break
		}
		if attempt == 2 {
			t.Fatalf("undo crawl-1, run twice: %v %+v", err, u)
		}
	}
	c.after(t, required)
}

// TestUndoIndexWACZRunsNoteOfMovedRequirer leaves in crawl-1's work
// directory the refile note a run of crawl-1 stopped before its commit
// leaves (crawlindex.WriteRefileNote, wacz-refile.json: crawl-0's
// requirer with its WARC members' places), with the requirer since
// written anew with its members moved. It proves that the undo, which
// reads the run's note, does not have the index record the requirer
// (its members are not where the note has them) and names it (exit 1),
// and that the undo run again, the note gone, still does neither: it
// must not note the requirer afresh, as it is, and record it then.
func TestUndoIndexWACZRunsNoteOfMovedRequirer(t *testing.T) {
	c := setUpOutsideRequirers(t, "directories")
	requirer := c.requirers[0]
	name := filepath.Base(requirer)
	recorded := recordedAs(t, c.index, "crawl-0", name)
	e, err := crawlindex.NotePackage("crawl-0", name, requirer)
	if err != nil {
		t.Fatal(err)
	}
	if err := crawlindex.WriteRefileNote(filepath.Join(c.wd, waczRefileFile), []crawlindex.RefileEntry{e}); err != nil {
		t.Fatal(err)
	}
	moveMembers(t, requirer)
	for attempt := 1; attempt <= 2; attempt++ {
		u, err := Run(context.Background(), Options{Paths: []string{c.op}, WorkDir: c.wd, Jobs: 2})
		if err != nil {
			t.Fatalf("undo %d: %v", attempt, err)
		}
		if after := recordedAs(t, c.index, "crawl-0", name); after != recorded {
			t.Errorf("undo %d: the index records %s anew (%+v; was %+v): it takes the moved WARC members as where crawl-0's originals are", attempt, name, after, recorded)
		}
		named := slices.ContainsFunc(u.StaleRequirers, func(s string) bool { return strings.Contains(s, requirer) })
		if u.Exit == 0 || !named {
			t.Errorf("undo %d: exit %d, stale requirers %v; want exit 1 naming %s", attempt, u.Exit, u.StaleRequirers, requirer)
		}
	}
}
