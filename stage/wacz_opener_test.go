package stage

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/wacz"
)

// TestPackageFilesKeepOpen proves what a PackageOpener's kept files
// (KeepFiles, while a rewrite runs) read: a member where it lies in its
// package until its new version is put at its staged name and the member
// dropped (its replacement's lock), then the new version; a member whose
// staged copy is replaced (an undo's, not in place), the new copy once
// dropped; the members of one package through one descriptor; and a
// record still read when the files are closed reads to its end.
func TestPackageFilesKeepOpen(t *testing.T) {
	const pkgBytes = "PK..AAAAAAAA..BBBBBBBB..END"
	for _, tc := range []struct {
		name    string
		inPlace bool
	}{
		{name: "members read in place, new versions put beside", inPlace: true},
		{name: "staged copies replaced (an undo's)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkg := filepath.Join(dir, "a.wacz")
			if err := os.WriteFile(pkg, []byte(pkgBytes), 0o644); err != nil {
				t.Fatal(err)
			}
			a, b := wacz.JoinName("a.wacz", "archive/a.warc"), wacz.JoinName("a.wacz", "archive/b.warc")
			stagedA := filepath.Join(dir, StagedName(pkg, "archive/a.warc"))
			o := &PackageOpener{Next: notOpened{t}, InPlace: tc.inPlace,
				Members: map[string]PackageMember{
					a: {Path: pkg, Package: "a.wacz", Member: "archive/a.warc", Offset: 4, Size: 8},
					b: {Path: pkg, Package: "a.wacz", Member: "archive/b.warc", Offset: 14, Size: 8},
				},
				Staged: map[string]string{a: stagedA}}
			if !tc.inPlace {
				if err := os.WriteFile(stagedA, []byte("AAAAAAAA"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			k := o.KeepFiles(4)
			defer k.Close()
			read := func(name string, off, n int64) string {
				t.Helper()
				r, err := k.Open(context.Background(), manifest.EscapeFile(name), off, n)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				defer r.Close()
				got, err := io.ReadAll(r)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return string(got)
			}
			if got := read(a, 2, 4); got != "AAAA" {
				t.Fatalf("a before its new version: %q", got)
			}
			// The new version put (a rename, as a replacement's), not yet
			// dropped: a kept file reads what it read, until the drop the
			// replacement's lock makes.
			tmp := filepath.Join(dir, "new")
			if err := os.WriteFile(tmp, []byte("AArevAA"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, stagedA); err != nil {
				t.Fatal(err)
			}
			if got := read(a, 2, 3); got != "AAA" {
				t.Errorf("a after its new version was put, before the drop: %q, want what was read before", got)
			}
			k.Drop(manifest.EscapeFile(a))
			if got := read(a, 2, 3); got != "rev" {
				t.Errorf("a after its new version was put and dropped: %q, want the new version's", got)
			}
			if got := read(b, 0, 8); got != "BBBBBBBB" {
				t.Errorf("b: %q", got)
			}
			if n := k.(*packageFiles).files.Len(); n != 2 {
				t.Errorf("%d files kept open, want 2: the package (both members), a's new version", n)
			}
			// Closed while a record is read: the record reads on.
			r, err := k.Open(context.Background(), manifest.EscapeFile(b), 0, 8)
			if err != nil {
				t.Fatal(err)
			}
			k.Close()
			if got, err := io.ReadAll(r); err != nil || string(got) != "BBBBBBBB" {
				t.Errorf("a record read across Close: %q, %v", got, err)
			}
			r.Close()
			r.Close() // a second Close gives nothing back twice
		})
	}
}

// notOpened is an Opener no record may be read through.
type notOpened struct{ t *testing.T }

func (n notOpened) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	n.t.Errorf("%s read through Next", field)
	return nil, os.ErrNotExist
}

var _ originals.FileKeeper = (*PackageOpener)(nil)
