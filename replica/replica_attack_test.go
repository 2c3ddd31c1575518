package replica

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"warcdedup/collock"
)

// hexSum is the bare-hex SHA-256 of s, a version's sum as the conversion
// map writes it.
func hexSum(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// attackFixture is a collection whose job rewrote rev.warc (its revisits'
// originals in orig.warc, which the job left as it was) and its second
// copy, still as the job started.
type attackFixture struct {
	dir, coll, copyDir string
	changes            []*Change
}

const (
	revBefore = "rev.warc as the crawl wrote it: full responses"
	revAfter  = "rev.warc deduplicated: revisits"
	originals = "orig.warc: the originals the revisits need"
)

func newAttackFixture(t *testing.T) attackFixture {
	t.Helper()
	dir := t.TempDir()
	f := attackFixture{dir: dir, coll: filepath.Join(dir, "coll"), copyDir: filepath.Join(dir, "copy")}
	for _, d := range []string{f.coll, f.copyDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(name, data string) {
		if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(f.coll, "rev.warc"), revAfter)
	write(filepath.Join(f.coll, "orig.warc"), originals)
	write(filepath.Join(f.copyDir, "rev.warc"), revBefore)
	write(filepath.Join(f.copyDir, "orig.warc"), originals)
	f.changes = []*Change{{Name: "rev.warc", Versions: []Version{
		{int64(len(revBefore)), hexSum(revBefore)}, {int64(len(revAfter)), hexSum(revAfter)}}}}
	return f
}

// copyRev is the copy's rev.warc as it is.
func (f attackFixture) copyRev(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(f.copyDir, "rev.warc"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCommitChecksTheCopysOriginals proves that a copy whose file of
// originals (one the job did not change) is missing or differs is
// refused before anything is copied: the revisits copied would point at
// records the copy does not have. The commit used to copy them, exit 0.
func TestCommitChecksTheCopysOriginals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, copyOrig string)
		refused bool
	}{
		{"the copy's originals as the collection's: copied", func(*testing.T, string) {}, false},
		{"the copy's originals missing: refused", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"the copy's originals changed: refused", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("orig.warc: the originals the revisits NEED"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAttackFixture(t)
			tc.damage(t, filepath.Join(f.copyDir, "orig.warc"))
			res, err := Commit(context.Background(), Options{Collection: f.coll, Copy: f.copyDir,
				Originals: []string{"orig.warc", "rev.warc"}}, f.changes)
			if tc.refused {
				if !errors.Is(err, ErrRefused) || res == nil || res.Refused != 1 {
					t.Fatalf("want refused, got %v %+v", err, res)
				}
				if got := f.copyRev(t); got != revBefore {
					t.Fatalf("refused, but the copy's rev.warc is now %q", got)
				}
				return
			}
			if err != nil || res.Copied != 1 {
				t.Fatalf("want copied, got %v %+v", err, res)
			}
			if got := f.copyRev(t); got != revAfter {
				t.Fatalf("the copy's rev.warc: %q", got)
			}
		})
	}
}

// TestCommitRefusesTheCollectionItself proves that a copy that is the
// collection under another name (a symbolic link), a directory inside it
// or one holding it is refused: a symbolic link to the collection used to
// pass as a copy "up to date", exit 0, with no second copy anywhere.
func TestCommitRefusesTheCollectionItself(t *testing.T) {
	for _, tc := range []struct {
		name string
		to   func(t *testing.T, f attackFixture) string
	}{
		{"a symbolic link to the collection", func(t *testing.T, f attackFixture) string {
			l := filepath.Join(f.dir, "link")
			if err := os.Symlink(f.coll, l); err != nil {
				t.Fatal(err)
			}
			return l
		}},
		{"a directory inside the collection", func(t *testing.T, f attackFixture) string {
			d := filepath.Join(f.coll, "sub")
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
			return d
		}},
		{"the directory holding the collection", func(t *testing.T, f attackFixture) string { return f.dir }},
		{"the collection through a path with dots", func(t *testing.T, f attackFixture) string {
			return filepath.Join(f.copyDir, "..", "coll") + "/."
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAttackFixture(t)
			res, err := Commit(context.Background(), Options{Collection: f.coll, Copy: tc.to(t, f)}, f.changes)
			if err == nil || errors.Is(err, ErrRefused) {
				t.Fatalf("want an error naming the collection, got %v %+v", err, res)
			}
		})
	}
}

// TestCommitRefusesACopyAnotherJobHolds proves that a commit takes the
// copy's collection lock: while another job (run, undo) holds it, the
// commit is refused with a collock.BusyError and the copy is untouched.
// It used to take no lock and replace the files under the other job.
func TestCommitRefusesACopyAnotherJobHolds(t *testing.T) {
	f := newAttackFixture(t)
	held, err := collock.LockJob([]string{f.copyDir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Commit(context.Background(), Options{Collection: f.coll, Copy: f.copyDir}, f.changes)
	var busy *collock.BusyError
	if !errors.As(err, &busy) {
		t.Fatalf("want the copy's lock busy, got %v", err)
	}
	if got := f.copyRev(t); got != revBefore {
		t.Fatalf("the copy's rev.warc changed under the other job: %q", got)
	}
	held.Release()
	if res, err := Commit(context.Background(), Options{Collection: f.coll, Copy: f.copyDir}, f.changes); err != nil || res.Copied != 1 {
		t.Fatalf("once the lock is let go: %v %+v", err, res)
	}
}

// TestOriginals proves the dependency list's original files are read
// once each, unescaped, in order, those outside the collection left out.
func TestOriginals(t *testing.T) {
	deps := filepath.Join(t.TempDir(), "deps.tsv")
	data := "# file\toriginal-file\trevisits\n" +
		"b.warc\ta%20b.warc\t3\n" +
		"b.warc\tb.warc\t1\n" +
		"c.warc\ta%20b.warc\t2\n" +
		"c.warc\t/elsewhere/x.warc\t2\n" +
		"# 4 revisits refer to no record of the collection\n"
	if err := os.WriteFile(deps, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Originals(deps)
	if want := []string{"a b.warc", "b.warc"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q %v, want %q", got, err, want)
	}
	if got, err := Originals(deps + ".none"); err != nil || got != nil {
		t.Fatalf("no list: %q %v", got, err)
	}
	if err := os.WriteFile(deps, []byte("b.warc a.warc 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Originals(deps); err == nil {
		t.Fatal("a line without tabs was read")
	}
}

// TestCommitRetiresEachARCAfterItsWARC proves that an ARC leaves the copy
// right after its WARC is put there, not after every WARC: a copy with
// room for one more file (not for all the WARCs beside all the ARCs) is
// brought up to date. With every WARC first, such a commit stopped on a
// full disk each time it was run again, never done.
func TestCommitRetiresEachARCAfterItsWARC(t *testing.T) {
	dir := t.TempDir()
	coll, copyDir := filepath.Join(dir, "coll"), filepath.Join(dir, "copy")
	var changes []*Change
	for _, d := range []string{coll, copyDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		arc, warc := "ARC file "+n, "its WARC "+n
		if err := os.WriteFile(filepath.Join(copyDir, n+".arc"), []byte(arc), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(coll, n+".warc"), []byte(warc), 0o644); err != nil {
			t.Fatal(err)
		}
		changes = append(changes,
			&Change{Name: n + ".arc", Gone: true, Versions: []Version{{int64(len(arc)), hexSum(arc)}}},
			&Change{Name: n + ".warc", From: n + ".arc", Versions: []Version{{int64(len(warc)), hexSum(warc)}}})
	}
	var done []string
	res, err := Commit(context.Background(), Options{Collection: coll, Copy: copyDir,
		Hook: func(name string) { done = append(done, name) }}, changes)
	if err != nil || res.Copied != 3 || res.Removed != 3 {
		t.Fatalf("%v %+v", err, res)
	}
	if want := []string{"a.warc", "a.arc", "b.warc", "b.arc", "c.warc", "c.arc"}; !reflect.DeepEqual(done, want) {
		t.Fatalf("carried out in the order %q, want %q", done, want)
	}
}

// TestCommitRefusesACopyOfAnotherCollection proves that a copy whose
// files the job did not change are not the collection's (one more, one
// less, another size) is refused, the file named, nothing copied: it used
// to be brought "up to date", exit 0, a second copy it is not.
func TestCommitRefusesACopyOfAnotherCollection(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(f attackFixture) error
		names  string
	}{
		{"a file more in the copy", func(f attackFixture) error {
			return os.WriteFile(filepath.Join(f.copyDir, "more.warc"), []byte("another crawl"), 0o644)
		}, "more.warc"},
		{"a file of the collection missing from the copy", func(f attackFixture) error {
			return os.WriteFile(filepath.Join(f.coll, "other.warc"), []byte("another crawl"), 0o644)
		}, "other.warc"},
		{"a file of another size in the copy", func(f attackFixture) error {
			if err := os.WriteFile(filepath.Join(f.coll, "other.warc"), []byte("another crawl"), 0o644); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(f.copyDir, "other.warc"), []byte("another crawl, cut"), 0o644)
		}, "other.warc"},
		{"an unchanged file of the copy a symbolic link to the collection's", func(f attackFixture) error {
			if err := os.WriteFile(filepath.Join(f.coll, "other.warc"), []byte("another crawl"), 0o644); err != nil {
				return err
			}
			return os.Symlink(filepath.Join(f.coll, "other.warc"), filepath.Join(f.copyDir, "other.warc"))
		}, "other.warc"},
		{"an unchanged file of the copy a hard link to the collection's", func(f attackFixture) error {
			if err := os.WriteFile(filepath.Join(f.coll, "other.warc"), []byte("another crawl"), 0o644); err != nil {
				return err
			}
			return os.Link(filepath.Join(f.coll, "other.warc"), filepath.Join(f.copyDir, "other.warc"))
		}, "other.warc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAttackFixture(t)
			if err := tc.damage(f); err != nil {
				t.Fatal(err)
			}
			res, err := Commit(context.Background(), Options{Collection: f.coll, Copy: f.copyDir}, f.changes)
			if !errors.Is(err, ErrRefused) || res == nil || res.Refused != 1 || !strings.HasPrefix(res.Files[0].Reason, tc.names+":") {
				t.Fatalf("want %s refused, got %v %+v", tc.names, err, res)
			}
			if got := f.copyRev(t); got != revBefore {
				t.Fatalf("refused, but the copy's rev.warc is now %q", got)
			}
		})
	}
}

// TestCommitRefusesWACZPackages proves that a job on WACZ packages is
// refused naming the package and why: the refusal used to say each
// member was "not in the copy", as if the copy were incomplete.
func TestCommitRefusesWACZPackages(t *testing.T) {
	f := newAttackFixture(t)
	if err := os.WriteFile(filepath.Join(f.copyDir, "p.wacz"), []byte("a package"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.coll, "p.wacz"), []byte("a package, its member rewritten"), 0o644); err != nil {
		t.Fatal(err)
	}
	changes := append(f.changes, &Change{Name: "p.wacz#archive/data.warc.gz",
		Versions: []Version{{5, hexSum("crawl")}, {3, hexSum("ddd")}}})
	res, err := Commit(context.Background(), Options{Collection: f.coll, Copy: f.copyDir}, changes)
	if !errors.Is(err, ErrRefused) || res == nil || res.Refused == 0 {
		t.Fatalf("want refused, got %v %+v", err, res)
	}
	found := false
	for _, fr := range res.Files {
		found = found || strings.Contains(fr.Reason, "WACZ package p.wacz")
	}
	if !found {
		t.Fatalf("no refusal names the WACZ package: %+v", res.Files)
	}
	if got := f.copyRev(t); got != revBefore {
		t.Fatalf("refused, but the copy's rev.warc is now %q", got)
	}
}

// TestCommitRefusesALinkToTheCollectionsFile proves that a changed file
// the copy holds only as a link to the collection's is refused: read
// through the link it was the job's last version, "up to date", exit 0,
// with no second copy of it anywhere (the final read of the day found
// it; the listing of the copy skips links, and only unchanged files were
// checked for them). An originals file held so is refused too.
func TestCommitRefusesALinkToTheCollectionsFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		file string // linked in the copy to the collection's
		link func(oldname, newname string) error
	}{
		{"a changed file, symbolic link", "rev.warc", os.Symlink},
		{"a changed file, hard link", "rev.warc", os.Link},
		{"a file of originals, symbolic link", "orig.warc", os.Symlink},
		{"a file of originals, hard link", "orig.warc", os.Link},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newAttackFixture(t)
			p := filepath.Join(f.copyDir, tc.file)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := tc.link(filepath.Join(f.coll, tc.file), p); err != nil {
				t.Fatal(err)
			}
			res, err := Commit(context.Background(), Options{Collection: f.coll, Copy: f.copyDir, Originals: []string{"orig.warc"}}, f.changes)
			if !errors.Is(err, ErrRefused) || res == nil || res.Refused == 0 {
				t.Fatalf("want %s refused, got %v %+v", tc.file, err, res)
			}
			found := false
			for _, r := range res.Files {
				found = found || strings.HasPrefix(r.Reason, tc.file+":")
			}
			if !found {
				t.Errorf("no refusal names %s: %+v", tc.file, res.Files)
			}
		})
	}
}
