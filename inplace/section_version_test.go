package inplace

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"warcdedup/atomicfile"
	"warcdedup/fixity"
	"warcdedup/rewritelog"
	"warcdedup/source"
)

// TestSectionKnownSum proves that the old sum a Section's replacement
// logs is its Section.SHA256 (a WACZ member's, as datapackage.json gives
// it) only when Vouched accepts the file as opened; otherwise (no vouch,
// a version not vouched for) the stretch is hashed as any file's is.
func TestSectionKnownSum(t *testing.T) {
	const (
		head   = "PK-HEAD:"
		member = "AAAAresponseBBBB"
	)
	given := strings.Repeat("ab", 32) // not the member's: which one is logged shows
	hashed := fixity.Default.Format(func() []byte { h := fixity.Default.New(); h.Write([]byte(member)); return h.Sum(nil) }())
	for _, tc := range []struct {
		name    string
		sum     string
		vouched func(os.FileInfo) error
		want    string
	}{
		{"vouched for: the sum given", given, func(os.FileInfo) error { return nil }, given},
		{"not vouched for: hashed", given, func(os.FileInfo) error { return errors.New("another version") }, hashed},
		{"no vouch: hashed", given, nil, hashed},
		{"no sum: hashed", "", func(os.FileInfo) error { return nil }, hashed},
		{"not a SHA-256: hashed", "blake3:" + given, func(os.FileInfo) error { return nil }, hashed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a.wacz")
			if err := os.WriteFile(pkg, []byte(head+member), 0o644); err != nil {
				t.Fatal(err)
			}
			newPath := filepath.Join(dir, ".a.wacz#a.warc.warcdedup-member")
			pl := &Placement{Locator: &source.Locator{}, InPlace: true, Files: NewFiles(),
				Sections: func(name string) (Section, bool) {
					return Section{Path: pkg, Offset: int64(len(head)), Size: int64(len(member)), NewPath: newPath, SHA256: tc.sum, Vouched: tc.vouched}, true
				}}
			v, err := Open(pl, "a.wacz#a.warc")
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if err := v.WriteRecord(4, 8, []byte("rev")); err != nil {
				t.Fatal(err)
			}
			if err := v.CopyTo(v.Size); err != nil {
				t.Fatal(err)
			}
			var logged bytes.Buffer
			r, err := v.Replace(rewritelog.NewLog(&logged), &sync.Mutex{}, nil, func(int, int64, int64, *os.File) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			if r.Fixity.OldSum != tc.want {
				t.Errorf("old sum logged %s, want %s", r.Fixity.OldSum, tc.want)
			}
		})
	}
}

// TestSectionVersion proves what a Version of a Section (a WACZ member
// stored in its package, Placement.Sections) does: it reads the stretch
// where it lies, no copy of it anywhere while its new version is written
// (the Create hook looks), and links the new version, checked against the
// stretch, under NewPath, the package untouched; the version it hands
// over as replaced is the package's with the stretch's size. A file put
// at NewPath meanwhile is never replaced, and a package written
// meanwhile (a writer's append) refuses the new version: nothing is then
// left at NewPath, and the package is as it was.
func TestSectionVersion(t *testing.T) {
	const (
		head   = "PK-HEAD:"
		member = "AAAAresponseBBBB"
		tail   = ":PK-TAIL"
	)
	for _, tc := range []struct {
		name string
		// meanwhile, if set, runs between the rewrite's walk and Replace.
		meanwhile func(t *testing.T, pkg, newPath string)
		refused   string // "" if the new version is put at NewPath
	}{
		{name: "rewritten where it lies"},
		{name: "a file put at the new path meanwhile is kept", refused: "never put over a file there",
			meanwhile: func(t *testing.T, pkg, newPath string) {
				if err := os.WriteFile(newPath, []byte("another process's"), 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the package written meanwhile", refused: "changed while its new version was made",
			meanwhile: func(t *testing.T, pkg, newPath string) {
				f, err := os.OpenFile(pkg, os.O_WRONLY|os.O_APPEND, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString("appended")
				f.Close()
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a.wacz")
			whole := head + member + tail
			if err := os.WriteFile(pkg, []byte(whole), 0o644); err != nil {
				t.Fatal(err)
			}
			newPath := filepath.Join(dir, ".a.wacz#archive%2Fa.warc.warcdedup-member")
			created := 0
			pl := &Placement{Locator: &source.Locator{}, InPlace: true, Files: NewFiles(),
				Sections: func(name string) (Section, bool) {
					if name != "a.wacz#archive/a.warc" {
						return Section{}, false
					}
					return Section{Path: pkg, Offset: int64(len(head)), Size: int64(len(member)), NewPath: newPath}, true
				},
				Create: func(root *os.Root, name string, perm os.FileMode) (*atomicfile.File, error) {
					created++
					if _, err := os.Lstat(newPath); !errors.Is(err, os.ErrNotExist) {
						t.Errorf("while the new version is written, %s is there (%v): the member was copied out", newPath, err)
					}
					return atomicfile.CreateIn(root, name, perm)
				}}
			v, err := Open(pl, "a.wacz#archive/a.warc")
			if err != nil {
				t.Fatal(err)
			}
			defer v.Close()
			if v.Size != int64(len(member)) || v.Path != newPath {
				t.Fatalf("opened as %d bytes at %s, want %d at %s", v.Size, v.Path, len(member), newPath)
			}
			got := make([]byte, v.Size)
			if _, err := v.Content.ReadAt(got, 0); err != nil || string(got) != member {
				t.Fatalf("Content reads %q (%v), want the member %q", got, err, member)
			}
			revisit := []byte("rev")
			if err := v.WriteRecord(4, 8, revisit); err != nil {
				t.Fatal(err)
			}
			if err := v.CopyTo(v.Size); err != nil {
				t.Fatal(err)
			}
			if created != 1 {
				t.Fatalf("%d new versions created, want 1", created)
			}
			if tc.meanwhile != nil {
				tc.meanwhile(t, pkg, newPath)
			}
			var logged bytes.Buffer
			log := rewritelog.NewLog(&logged)
			entries := []rewritelog.Entry{{File: v.Name, OldOffset: 4, OldLength: 8, NewOffset: 4, NewLength: 3, Kind: rewritelog.Revisit}}
			check := func(k int, at, length int64, f *os.File) error { return nil }
			r, err := v.Replace(log, &sync.Mutex{}, entries, check)
			pkgNow, rerr := os.ReadFile(pkg)
			if rerr != nil || !strings.HasPrefix(string(pkgNow), whole) {
				t.Fatalf("the package became %q (%v)", pkgNow, rerr)
			}
			if tc.refused != "" {
				if err == nil || !IsRefusal(err) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("Replace: %v, want a refusal saying %q", err, tc.refused)
				}
				if b, err := os.ReadFile(newPath); err == nil && string(b) != "another process's" {
					t.Errorf("%s holds %q after a refusal", newPath, b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := "AAAA" + string(revisit) + "BBBB"
			if b, err := os.ReadFile(newPath); err != nil || string(b) != want {
				t.Fatalf("%s holds %q (%v), want %q", newPath, b, err, want)
			}
			pfi, err := os.Stat(pkg)
			if err != nil {
				t.Fatal(err)
			}
			if r.Old == nil || r.Old.Size() != int64(len(member)) || !r.Old.ModTime().Equal(pfi.ModTime()) || r.Old.Sys() == nil {
				t.Errorf("replaced version %v, want the package's with the member's size", r.Old)
			}
			if r.Path != newPath || r.Fixity.OldSize != int64(len(member)) || r.Fixity.NewSize != int64(len(want)) {
				t.Errorf("logged %s: %d -> %d bytes", r.Path, r.Fixity.OldSize, r.Fixity.NewSize)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(left) > 0 {
				t.Errorf("temporary files left: %v", left)
			}
		})
	}
}
