package stage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"warcdedup/wacz"
)

// fakeCache is a hash cache's stamps, by member name: where each
// member's entry is (Restamp moves it, from the version that holds it).
type fakeCache map[string]os.FileInfo

func (c fakeCache) Restamp(name string, from, to os.FileInfo) error {
	if cur := c[name]; cur == nil || !sameStamp(cur, from) {
		return fmt.Errorf("%s: no entry of that version", name)
	}
	c[name] = to
	return nil
}

// sameStamp is warcsum's comparison of two versions of a file by their
// stamps (device, inode, size, modification time), which, unlike
// os.SameFile, takes an inplace.SectionInfo for what it describes.
func sameStamp(a, b os.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Dev == sb.Dev && sa.Ino == sb.Ino && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// TestDiscardPutsBackCacheEntries stages members of a package, their
// cache entries moving to the staged copies (Restamp), and discards the
// rewrite before Finish, as a run does when Prepare, or its check of a
// committed crawl's requirers, fails. It proves that the entries of a
// package still the version copied from go back to it, so that the next
// run replays them instead of hashing the members again; that of a
// package changed meanwhile stays away (its entry says nothing of the
// new version); and that the staged copies are removed.
func TestDiscardPutsBackCacheEntries(t *testing.T) {
	for _, c := range []struct {
		name      string
		badSecond bool // the second member cannot be staged: Prepare fails
		changed   bool // the package is another version when discarded
		back      bool // the entries are back at the package
	}{
		{"staged, the rewrite stops", false, false, true},
		{"a member fails to stage", true, false, true},
		{"the package changed meanwhile", false, true, false},
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
			first, second := wacz.JoinName("a.wacz", "archive/1.warc.gz"), wacz.JoinName("a.wacz", "archive/2.warc.gz")
			members := map[string]PackageMember{
				first:  {Path: pkg, Package: "a.wacz", Member: "archive/1.warc.gz", Offset: 2, Size: 10},
				second: {Path: pkg, Package: "a.wacz", Member: "archive/2.warc.gz", Offset: 12, Size: 10},
			}
			if c.badSecond {
				m := members[second]
				m.Size = 100 // past the package's end
				members[second] = m
			}
			cache := fakeCache{first: fi, second: fi}
			pr := &PackageRewrite{Members: members, Restamp: cache.Restamp, Messages: &collected{}}
			err = pr.PrepareMembers(context.Background(), []string{first, second}, nil)
			if (err != nil) != c.badSecond {
				t.Fatalf("PrepareMembers: %v", err)
			}
			staged := pr.StagedCopy(first)
			if staged == "" || sameVersion(cache[first], fi) {
				t.Fatal("the first member's entry did not move to its staged copy: the test proves nothing")
			}
			if c.changed {
				if err := os.WriteFile(pkg+".new", []byte("another version of the package"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(pkg+".new", pkg); err != nil {
					t.Fatal(err)
				}
			}
			pr.Discard()
			now, err := os.Stat(pkg)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{first, second} {
				if name == second && c.badSecond {
					if !sameVersion(cache[name], fi) {
						t.Errorf("%s, never staged: its entry moved", name)
					}
					continue
				}
				if back := sameVersion(cache[name], now); back != c.back {
					t.Errorf("%s: entry back at the package %v, want %v", name, back, c.back)
				}
			}
			if _, err := os.Stat(staged); !os.IsNotExist(err) {
				t.Errorf("the staged copy %s is still there (%v)", staged, err)
			}
		})
	}
}
