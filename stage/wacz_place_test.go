package stage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"warcdedup/wacz"
)

// TestPrepareReadsMembersInPlace proves that a run's Prepare (not a dry
// run's) copies no member out of its package: nothing is at a member's
// staged name once it is done (what an interrupted run left there is
// removed), the rewrite is told where each member lies in its package
// and that its new version goes to the staged name (Sections), and the
// member's cache entry moves to its version in the package as the
// rewrite hands it over (inplace.SectionInfo), where Discard finds it to
// put it back. A dry run still stages copies, in TempDir.
func TestPrepareReadsMembersInPlace(t *testing.T) {
	for _, c := range []struct {
		name     string
		dryRun   bool
		leftover bool // an interrupted run left a file at the staged name
		copied   bool // a copy is at the staged name after Prepare
	}{
		{name: "a run reads the members in their package"},
		{name: "an interrupted run's leftover is removed", leftover: true},
		{name: "a dry run stages copies", dryRun: true, copied: true},
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
			cache := fakeCache{name: fi}
			pr := &PackageRewrite{Members: map[string]PackageMember{name: m}, DryRun: c.dryRun, TempDir: filepath.Join(dir, "work"),
				Restamp: cache.Restamp, Messages: &collected{}}
			// As Prepare sets them up.
			pr.inPlace = !c.dryRun
			pr.staged, pr.packages, pr.paths = map[string]*stagedMember{}, map[string][]string{}, map[string]string{}
			if err := pr.stageAll(context.Background(), []string{name}); err != nil {
				t.Fatal(err)
			}
			defer pr.Discard()
			loc := pr.Locations()[name]
			_, err = os.Stat(loc)
			if copied := err == nil; copied != c.copied {
				t.Fatalf("a file at the staged name %s: %v (%v), want %v", loc, copied, err, c.copied)
			}
			sections := pr.Sections()
			if c.dryRun {
				if sections != nil {
					t.Fatal("a dry run's members are read in their package")
				}
				return
			}
			if loc != staged {
				t.Fatalf("the new version goes to %s, want %s", loc, staged)
			}
			s, ok := sections(name)
			if !ok || s.Path != pkg || s.Offset != m.Offset || s.Size != m.Size || s.NewPath != staged {
				t.Fatalf("Sections(%s) = %+v, %v; want the member's stretch of %s, new version at %s", name, s, ok, pkg, staged)
			}
			if e := cache[name]; e.Size() != m.Size || !e.ModTime().Equal(fi.ModTime()) {
				t.Errorf("the member's cache entry is at %d bytes of %v, want the package's version with the member's size", e.Size(), e.ModTime())
			}
			pr.Discard()
			if !sameVersion(cache[name], fi) {
				t.Error("Discard did not put the member's cache entry back at its package")
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
			if err := pr.stageAll(context.Background(), []string{name}); err != nil {
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
