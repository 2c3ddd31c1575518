package undo

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/dedup"
	"warcdedup/internal/corpustest"
	"warcdedup/internal/jobtest"
	"warcdedup/wacz"
)

// TestUndoWACZGivesRefreshedRequirerBack adds to a generated collection
// a package with no duplicate of its own that requires one of the
// collection's by hash (as Browsertrix or an earlier job writes the
// entry), signed or not. The run rewrites the required package, so it
// writes the requirer anew with the entry brought up to date (removing
// its signature, with Unsign), keeping its metadata for undo. The undo
// of everything gives the required package back bit for bit, which makes
// the requirer's entry as it was before the run right again: the
// requirer, whose members never changed, must be the file it was too,
// datapackage.json, digest file and signature included, and its kept
// metadata must not outlive the undo.
func TestUndoWACZGivesRefreshedRequirerBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signed bool
	}{
		{"requirer unsigned", false},
		{"requirer signed, run with unsign", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := jobtest.GeneratedWACZ(t, false)
			requirer := filepath.Join(dir, "other-0.wacz")
			uniquePackage(t, requirer)
			jobtest.RequireBy(t, requirer, filepath.Join(dir, "crawl-1-1.wacz"))
			jobtest.Backdate(t, requirer)
			if tc.signed {
				signDigest(t, requirer)
				if p, err := wacz.Open(requirer); err != nil || !p.Signed() {
					t.Fatalf("the requirer is not signed (%v): the test proves nothing", err)
				} else {
					p.Close()
				}
			}
			before := jobtest.HashTree(t, dir)
			wd := filepath.Join(t.TempDir(), "work")
			r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, Unsign: tc.signed})
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			after := jobtest.HashTree(t, dir)
			if after["other-0.wacz"] == before["other-0.wacz"] || after["crawl-1-1.wacz"] == before["crawl-1-1.wacz"] {
				t.Fatal("the run did not write the requirer anew: the test proves nothing")
			}
			if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
				t.Fatalf("after the run, stale entries: %v", s)
			}
			u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo: %v, %+v", err, u)
			}
			if u.BytesDiffer > 0 {
				t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer)
			}
			if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
				t.Errorf("after the undo, stale entries: %v", s)
			}
			jobtest.SameTree(t, "after the run and the undo", jobtest.HashTree(t, dir), before)
			p, err := wacz.Open(requirer)
			if err != nil {
				t.Fatal(err)
			}
			if tc.signed && (!p.Signed() || strings.Contains(string(p.DatapackageRaw), wacz.RemovedSignaturesKey)) {
				t.Errorf("after the undo the requirer is not signed as before the run (signed %v):\n%s", p.Signed(), p.DatapackageRaw)
			}
			p.Close()
			if left, _ := filepath.Glob(filepath.Join(wd, "wacz-metadata", "*")); len(left) > 0 {
				t.Errorf("metadata kept for undo left after the undo gave every package back: %v", left)
			}
			jobtest.CheckPackages(t, dir)
		})
	}
}

// uniquePackage writes at path a package whose records have no
// duplicate in GeneratedWACZ's collection: py-wacz's test package.
func uniquePackage(t *testing.T, path string) {
	t.Helper()
	const fixture = "../../shared/corpus/webrecorder+py-wacz/tests/fixtures/valid_example_1.wacz"
	if _, err := os.Stat(fixture); err != nil {
		corpustest.Missing(t, "shared corpus absent: %v", err)
	}
	jobtest.CopyFile(t, fixture, path)
}

// signDigest writes the package at path anew, signed: a digest file of
// its datapackage.json with a signedData (not a valid signature: none is
// checked) in place of the one it has, if any, every other member as
// stored.
func signDigest(t *testing.T, path string) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out, err := os.Create(path + ".signed")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	zw := zip.NewWriter(out)
	var dp []byte
	for _, f := range zr.File {
		if f.Name == wacz.DigestName {
			continue
		}
		if f.Name == wacz.DatapackageName {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			dp, _ = io.ReadAll(rc)
			rc.Close()
		}
		raw, err := f.OpenRaw()
		if err != nil {
			t.Fatal(err)
		}
		h := f.FileHeader
		w, err := zw.CreateRaw(&h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(w, raw); err != nil {
			t.Fatal(err)
		}
	}
	hash := fmt.Sprintf("sha256:%x", sha256.Sum256(dp))
	w, err := zw.CreateHeader(&zip.FileHeader{Name: wacz.DigestName, Method: zip.Store, Modified: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, `{"path": "datapackage.json", "hash": "%s", "signedData": {"hash": "%s", "signature": "c2ln", "publicKey": "a2V5", "created": "2024-01-02T03:04:05Z", "software": "test"}}`, hash, hash)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".signed", path); err != nil {
		t.Fatal(err)
	}
}

// TestUndoWACZRequirerBeforeRequiredGivesBothBack: a package that
// required another by hash before the first run (crawl-1-1 requiring
// crawl-1-0, signed or not), both deduplicated by the run (with Unsign
// for the signed one), is undone alone first, then the other. The first
// undo must exit 0 with no stale entry (the package it requires is still
// deduplicated: the entry kept before the run would name it by a hash it
// no longer has, and a signed package cannot then be brought up to
// date), and once the second undo gave back the package required, both
// must be the files they were before the run, signature included.
func TestUndoWACZRequirerBeforeRequiredGivesBothBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		signed bool
	}{
		{"requirer unsigned", false},
		{"requirer signed, run with unsign", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := jobtest.GeneratedWACZ(t, false)
			requirer, required := filepath.Join(dir, "crawl-1-1.wacz"), filepath.Join(dir, "crawl-1-0.wacz")
			jobtest.RequireBy(t, requirer, required)
			jobtest.Backdate(t, requirer)
			if tc.signed {
				signDigest(t, requirer)
			}
			before := jobtest.HashTree(t, dir)
			wd := filepath.Join(t.TempDir(), "work")
			r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, Unsign: tc.signed})
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			after := jobtest.HashTree(t, dir)
			if after["crawl-1-1.wacz"] == before["crawl-1-1.wacz"] || after["crawl-1-0.wacz"] == before["crawl-1-0.wacz"] {
				t.Fatal("the run did not rewrite both packages: the test proves nothing")
			}
			u, err := Run(context.Background(), Options{Paths: []string{requirer}, WorkDir: wd, Jobs: 2})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo of the requirer alone: %v, %v", err, u.ExitReason)
			}
			if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
				t.Errorf("after the undo of the requirer alone, stale entries: %v", s)
			}
			u, err = Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo of the rest: %v, %v", err, u.ExitReason)
			}
			if u.BytesDiffer > 0 {
				t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer)
			}
			jobtest.SameTree(t, "after the run and the two undos", jobtest.HashTree(t, dir), before)
			if left, _ := filepath.Glob(filepath.Join(wd, "wacz-metadata", "*")); len(left) > 0 {
				t.Errorf("metadata kept for undo left after the undo gave every package back: %v", left)
			}
			jobtest.CheckPackages(t, dir)
		})
	}
}

// TestUndoWACZStoppedAfterMetadataGivenBackRefreshesItsRequirers puts a
// package the run wrote anew for its requires entry alone (other-0,
// requiring crawl-1-1) in the state an undo stopped right after giving
// its metadata back leaves: the package the file it was before the run,
// its metadata still kept, and a package requiring it by hash (added by
// a later job, by its hash as the run left it) not brought up to date
// yet. The package is named in no rewrite log entry, so only what is
// kept of it tells the next undo that its requirers are to be brought up
// to date: that undo must exit 0 with no stale entry.
func TestUndoWACZStoppedAfterMetadataGivenBackRefreshesItsRequirers(t *testing.T) {
	dir, _ := jobtest.GeneratedWACZ(t, false)
	pkg := filepath.Join(dir, "other-0.wacz")
	uniquePackage(t, pkg)
	jobtest.RequireBy(t, pkg, filepath.Join(dir, "crawl-1-1.wacz"))
	jobtest.Backdate(t, pkg)
	wd := filepath.Join(t.TempDir(), "work")
	r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || r.Report.Exit != 0 {
		t.Fatalf("run: %v %v", err, r.Report.ExitReason)
	}
	kept := filepath.Join(wd, "wacz-metadata", "other-0.wacz.json")
	metadata, err := os.ReadFile(kept)
	if err != nil {
		t.Fatalf("the run kept no metadata of other-0.wacz: the test proves nothing (%v)", err)
	}
	// The package as the run left it, under its name elsewhere: what the
	// later job's entry names.
	asRun := filepath.Join(t.TempDir(), "other-0.wacz")
	jobtest.CopyFile(t, pkg, asRun)
	requirer := filepath.Join(dir, "other-1.wacz")
	uniquePackage(t, requirer)
	jobtest.RequireBy(t, requirer, pkg)
	if u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2}); err != nil || u.Exit != 0 {
		t.Fatalf("undo: %v, %+v", err, u)
	}
	if _, err := os.Stat(kept); err == nil {
		t.Fatal("the undo did not give other-0.wacz its metadata back: the test proves nothing")
	}
	// Stopped after the metadata was given back: the requirer's entry as
	// before, the metadata kept.
	jobtest.RequireBy(t, requirer, asRun)
	if err := os.WriteFile(kept, metadata, 0o644); err != nil {
		t.Fatal(err)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) == 0 {
		t.Fatal("no stale entry to bring up to date: the test proves nothing")
	}
	u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
	if err != nil || u.Exit != 0 {
		t.Fatalf("undo after the stop: %v, %+v", err, u)
	}
	if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
		t.Errorf("after the undo stopped and the next, stale entries: %v", s)
	}
	if _, err := os.Stat(kept); err == nil {
		t.Error("the metadata of other-0.wacz, given back, still kept")
	}
	jobtest.CheckPackages(t, dir)
}

// TestUndoWACZSignedDeduplicatedGivesSignatureBack: a signed package
// with duplicates (crawl-1-1), deduplicated by a run with Unsign (its
// signature removed and recorded), is undone at once or after the
// package it requires (crawl-0-0) was undone alone: it must come back
// the file it was, signed, with no removal record.
func TestUndoWACZSignedDeduplicatedGivesSignatureBack(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first []string // packages undone alone first
	}{
		{"undone at once", nil},
		{"undone after the package it requires", []string{"crawl-0-0.wacz"}},
		{"undone alone first", []string{"crawl-1-1.wacz"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, _ := jobtest.GeneratedWACZ(t, false)
			signed := filepath.Join(dir, "crawl-1-1.wacz")
			signDigest(t, signed)
			before := jobtest.HashTree(t, dir)
			wd := filepath.Join(t.TempDir(), "work")
			r, err := dedup.Run(context.Background(), dedup.Options{Collections: []string{dir}, WorkDir: wd, Jobs: 2, Unsign: true})
			if err != nil || r.Report.Exit != 0 {
				t.Fatalf("run: %v %v", err, r.Report.ExitReason)
			}
			if p, err := wacz.Open(signed); err != nil || p.Signed() {
				t.Fatalf("the run did not remove the signature (%v): the test proves nothing", err)
			} else {
				p.Close()
			}
			for _, n := range tc.first {
				u, err := Run(context.Background(), Options{Paths: []string{filepath.Join(dir, n)}, WorkDir: wd, Jobs: 2})
				if err != nil || u.Exit != 0 {
					t.Fatalf("undo of %s: %v, %v", n, err, u.ExitReason)
				}
				if s := jobtest.StaleRequires(t, dir); len(s) > 0 {
					t.Errorf("after the undo of %s, stale entries: %v", n, s)
				}
			}
			u, err := Run(context.Background(), Options{Paths: []string{dir}, WorkDir: wd, Jobs: 2})
			if err != nil || u.Exit != 0 {
				t.Fatalf("undo: %v, %v", err, u.ExitReason)
			}
			if u.BytesDiffer > 0 {
				t.Fatalf("%d files restored with other bytes: the test needs every package back bit for bit", u.BytesDiffer)
			}
			jobtest.SameTree(t, "after the run and the undo", jobtest.HashTree(t, dir), before)
			p, err := wacz.Open(signed)
			if err != nil {
				t.Fatal(err)
			}
			if !p.Signed() || strings.Contains(string(p.DatapackageRaw), wacz.RemovedSignaturesKey) {
				t.Errorf("after the undo, not signed as before the run (signed %v)", p.Signed())
			}
			p.Close()
		})
	}
}
