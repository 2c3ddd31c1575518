package stage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"warcdedup/wacz"
)

// TestPrepareReadsMembersInPlace proves that Prepare copies no member
// out of its package, for a run and a dry run alike: the rewrite is told
// where each member lies in its package and that its new version goes to
// the staged name (Sections). A run removes what an interrupted run left
// at that name and moves the member's cache entry to its version in the
// package as the rewrite hands it over (inplace.SectionInfo), where
// Discard finds it to put it back. A dry run, which puts nothing there,
// leaves such a file as it is (it is the run's to take, Recover's) and
// reads the originals in the packages (no Locations).
func TestPrepareReadsMembersInPlace(t *testing.T) {
	for _, c := range []struct {
		name     string
		dryRun   bool
		leftover bool // an interrupted run left a file at the staged name
		kept     bool // a file is at the staged name after Prepare and Discard
		// dir, if set, is put at the staged name: a directory, with a
		// file in it unless "empty"; refused by a run and a dry run alike.
		dir string
	}{
		{name: "a run reads the members in their package"},
		{name: "an interrupted run's leftover is removed", leftover: true},
		{name: "a dry run reads the members in their package", dryRun: true},
		{name: "a dry run leaves an interrupted run's leftover", dryRun: true, leftover: true, kept: true},
		{name: "a directory at the staged name stops a run", dir: "full"},
		{name: "a directory at the staged name stops a dry run", dryRun: true, dir: "full"},
		{name: "an empty directory at the staged name stops a run", dir: "empty"},
		{name: "an empty directory at the staged name stops a dry run", dryRun: true, dir: "empty"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a.wacz")
			if err := os.WriteFile(pkg, []byte("0123456789abcdefghijklmnopqrstuvwxyz"), 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(pkg)
			if err != nil {
				t.Fatal(err)
			}
			name := wacz.JoinName("a.wacz", "archive/1.warc.gz")
			m := PackageMember{Path: pkg, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 2, Size: 10}
			staged := filepath.Join(dir, stageName(m))
			if c.leftover {
				if err := os.WriteFile(staged, []byte("left by a killed run"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if c.dir != "" {
				if err := os.Mkdir(staged, 0o755); err != nil {
					t.Fatal(err)
				}
				if c.dir == "full" {
					if err := os.WriteFile(filepath.Join(staged, "someone's"), []byte("kept"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			cache := fakeCache{name: fi}
			pr := &PackageRewrite{Members: map[string]PackageMember{name: m}, DryRun: c.dryRun, TempDir: filepath.Join(dir, "work"),
				Messages: &collected{}}
			if !c.dryRun {
				pr.Restamp = cache.Restamp // as dedup gives it, to runs only
			}
			// As Prepare sets them up.
			pr.inPlace = true
			pr.staged, pr.packages, pr.paths = map[string]*stagedMember{}, map[string][]string{}, map[string]string{}
			err = pr.placeAll(context.Background(), []string{name})
			if c.dir != "" {
				if err == nil || !strings.Contains(err.Error(), "is a directory") {
					t.Fatalf("placeAll: %v, want the directory at the staged name refused", err)
				}
				if fi, err := os.Stat(staged); err != nil || !fi.IsDir() {
					t.Errorf("the directory at the staged name is gone: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s, ok := pr.Sections()(name)
			if !ok || s.Path != pkg || s.Offset != m.Offset || s.Size != m.Size || s.NewPath != staged {
				t.Fatalf("Sections(%s) = %+v, %v; want the member's stretch of %s, new version at %s", name, s, ok, pkg, staged)
			}
			if loc := pr.Locations(); c.dryRun != (loc == nil) || (!c.dryRun && loc[name] != staged) {
				t.Fatalf("Locations %v: the originals are read at the staged names in a run only", loc)
			}
			if !c.dryRun {
				if e := cache[name]; e.Size() != m.Size || !e.ModTime().Equal(fi.ModTime()) {
					t.Errorf("the member's cache entry is at %d bytes of %v, want the package's version with the member's size", e.Size(), e.ModTime())
				}
			}
			pr.Discard()
			if !sameVersion(cache[name], fi) {
				t.Error("Discard did not put the member's cache entry back at its package")
			}
			if _, err := os.Stat(staged); (err == nil) != c.kept {
				t.Errorf("a file at the staged name %s after Prepare and Discard: %v, want %v", staged, err == nil, c.kept)
			}
			if left, _ := filepath.Glob(filepath.Join(pr.TempDir, "*")); len(left) > 0 {
				t.Errorf("copied into the work directory: %v", left)
			}
		})
	}
}

// TestMemberSumsOnlyOfVerifiedVersion proves that the SHA-256 a run's
// rewrite may log for a member's old version without hashing it is its
// package's datapackage.json's, and only for a package version Verified
// accepts: read from another version (the package changed since), or
// with no Verified, none is given, and the rewrite hashes the member.
func TestMemberSumsOnlyOfVerifiedVersion(t *testing.T) {
	for _, c := range []struct {
		name     string
		verified bool // Verified accepts the package as it is
		changed  bool // the package changes after its sums are read
		known    bool // Sections gives the member's sum, vouched for
	}{
		{name: "the version verified", verified: true, known: true},
		{name: "a version not verified", verified: false},
		{name: "changed since its sums were read", verified: true, changed: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path, _, old, zm, data := generatedPackage(t, dir, 7)
			old.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			pkg := filepath.Base(path)
			name := wacz.JoinName(pkg, zm.Name)
			m := PackageMember{Path: path, Package: pkg, Member: zm.Name, Offset: zm.DataOffset, Size: zm.CompressedSize}
			pr := &PackageRewrite{Members: map[string]PackageMember{name: m}, Messages: &collected{}, inPlace: true,
				Verified: func(p string, now os.FileInfo) error {
					if !c.verified || p != path || !sameStamp(now, fi) {
						return errors.New("not verified")
					}
					return nil
				}}
			pr.staged, pr.packages, pr.paths = map[string]*stagedMember{}, map[string][]string{}, map[string]string{}
			if err := pr.placeAll(context.Background(), []string{name}); err != nil {
				t.Fatal(err)
			}
			if c.changed {
				later := fi.ModTime().Add(time.Second)
				if err := os.Chtimes(path, later, later); err != nil {
					t.Fatal(err)
				}
				fi, _ = os.Stat(path) // and Verified vouches for this one
			}
			s, ok := pr.Sections()(name)
			if !ok {
				t.Fatal("the member has no section")
			}
			now, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			known := s.SHA256 != "" && s.Vouched != nil && s.Vouched(now) == nil
			if known != c.known {
				t.Fatalf("sum %q vouched for %v, want %v", s.SHA256, known, c.known)
			}
			if want := sha256.Sum256(data); known && s.SHA256 != hex.EncodeToString(want[:]) {
				t.Errorf("sum given %s, the member's is %x", s.SHA256, want)
			}
		})
	}
}
