package stage

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSpace: a run's rewrite of WACZ members is refused, before any
// is written, when a file system has not the room for their new versions
// (at most the members' size, all there until the packages are written
// anew) and the packages written at once; a stopped attempt's leftover
// at a new version's name counts as free. (A dry run writes nothing
// beside the packages and copies nothing: Prepare checks no space for
// it, dedup's TestDryRunWACZ.)
func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	pkgA := filepath.Join(dir, "a.wacz")
	pkgB := filepath.Join(dir, "b.wacz")
	for _, p := range []string{pkgA, pkgB} {
		if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	members := map[string]PackageMember{
		"a.wacz#archive/1.warc.gz": {Path: pkgA, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 50, Size: 400},
		"a.wacz#archive/2.warc.gz": {Path: pkgA, Package: "a.wacz", Member: "archive/2.warc.gz", Offset: 500, Size: 300},
		"b.wacz#archive/1.warc.gz": {Path: pkgB, Package: "b.wacz", Member: "archive/1.warc.gz", Offset: 50, Size: 200},
	}
	names := []string{"a.wacz#archive/1.warc.gz", "a.wacz#archive/2.warc.gz", "b.wacz#archive/1.warc.gz"}
	// With one job: the members' new versions (at most 900) and one
	// package written (1000): 1900 bytes. The members are read where they
	// lie: no copy of them, which took 900 bytes more.
	const need = 1900
	leftover := filepath.Join(dir, stageName(members["a.wacz#archive/2.warc.gz"]))
	for _, c := range []struct {
		name      string
		free      int64
		known     bool
		jobs      int
		leftover  bool
		wantError bool
	}{
		{name: "room for all", free: need, known: true, jobs: 1},
		{name: "one byte short", free: need - 1, known: true, jobs: 1, wantError: true},
		{name: "a stopped attempt's leftover is removed", free: need - 300, known: true, jobs: 1, leftover: true},
		{name: "two jobs write two packages at once", free: need, known: true, jobs: 2, wantError: true},
		{name: "free space not known", free: 0, known: false, jobs: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.Remove(leftover)
			if c.leftover {
				if err := os.WriteFile(leftover, make([]byte, 300), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			pr := &PackageRewrite{Members: members, Jobs: c.jobs, TempDir: filepath.Join(dir, "work"),
				fileSystem: func(string) (uint64, int64, bool) { return 1, c.free, c.known }}
			err := pr.checkSpace(names, nil)
			if c.wantError != (err != nil) {
				t.Fatalf("checkSpace = %v, want an error: %v", err, c.wantError)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrNoSpace) {
				t.Errorf("%v is no ErrNoSpace", err)
			}
			for _, want := range []string{dir, "new versions of 3 members", "nothing was rewritten"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not say %q", err, want)
				}
			}
		})
	}
}

// TestCheckUndoSpace: an undo's staging of the members it restores is
// refused, before any copy, when a file system has not the room for the
// copies at their size once restored (each member grown by what the log
// says it gets back), the restored versions written at once, and the
// largest package at its size once written anew (its members' growth
// on top), one at a time; no file is copied then.
func TestCheckUndoSpace(t *testing.T) {
	dir := t.TempDir()
	pkgA := filepath.Join(dir, "a.wacz")
	pkgB := filepath.Join(dir, "b.wacz")
	for _, p := range []string{pkgA, pkgB} {
		if err := os.WriteFile(p, make([]byte, 1000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	members := map[string]PackageMember{
		"a.wacz#archive/1.warc.gz": {Path: pkgA, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 50, Size: 400},
		"a.wacz#archive/2.warc.gz": {Path: pkgA, Package: "a.wacz", Member: "archive/2.warc.gz", Offset: 500, Size: 300},
		"b.wacz#archive/1.warc.gz": {Path: pkgB, Package: "b.wacz", Member: "archive/1.warc.gz", Offset: 50, Size: 200},
	}
	names := []string{"a.wacz#archive/1.warc.gz", "a.wacz#archive/2.warc.gz", "b.wacz#archive/1.warc.gz"}
	grown := map[string]int64{"a.wacz#archive/1.warc.gz": 100, "a.wacz#archive/2.warc.gz": 50, "b.wacz#archive/1.warc.gz": 600}
	// With one job: the copies once restored (500+350+800 = 1650), then
	// the larger of two restored versions at once (the two largest,
	// 800+500 = 1300) and, after the restore, one package written anew,
	// the largest once grown (b: 1000+600 = 1600), on top of what the
	// packages written before it grew for good (100+50+600 = 750):
	// 1650+750+1600 = 4000 bytes. Without the growth: 900+max(700, 1000)
	// = 1900.
	const need = 4000
	for _, c := range []struct {
		name      string
		free      int64
		jobs      int
		grown     map[string]int64
		wantError bool
	}{
		{name: "room for all, grown", free: need, jobs: 1, grown: grown},
		{name: "one byte short of the grown sizes", free: need - 1, jobs: 1, grown: grown, wantError: true},
		{name: "room for the members as they are is not enough", free: 2600, jobs: 1, grown: grown, wantError: true},
		{name: "nothing grown: the members as they are", free: 1900, jobs: 1},
		{name: "nothing grown, one byte short", free: 1899, jobs: 1, wantError: true},
		// Two jobs: four versions at once (all three, 1650), still less
		// than a package and the growth after them (FinishUndo, one at a
		// time): the same 4000, never versions and package at once.
		{name: "two jobs: the packages after the versions", free: need, jobs: 2, grown: grown},
		{name: "two jobs one byte short", free: need - 1, jobs: 2, grown: grown, wantError: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pr := &PackageRewrite{Members: members, Jobs: c.jobs,
				fileSystem: func(string) (uint64, int64, bool) { return 1, c.free, true }}
			err := pr.PrepareMembers(context.Background(), names, c.grown)
			defer pr.Discard()
			if c.wantError != (err != nil) {
				t.Fatalf("PrepareMembers = %v, want an error: %v", err, c.wantError)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrNoSpace) {
				t.Errorf("%v is no ErrNoSpace", err)
			}
			for _, want := range []string{dir, "copies of 3 members to restore", "nothing was copied"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%q does not say %q", err, want)
				}
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".*"))
			if len(left) > 0 {
				t.Errorf("staged after the refusal: %v", left)
			}
		})
	}
}
