package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCommitNewWithoutHardLinks proves that CommitNew puts the file
// under a name that must not exist on a file system without hard links
// (the link refused), by a rename that replaces nothing: the content
// there, the temporary name gone; a file already at the name kept and
// the commit refused with fs.ErrExist; and a link failing otherwise is
// the commit's error, the temporary file removed.
func TestCommitNewWithoutHardLinks(t *testing.T) {
	for _, tc := range []struct {
		name    string
		linkErr error
		there   bool // a file at the name before the commit
		wantErr error
	}{
		{"hard links refused (EPERM, as FAT)", syscall.EPERM, false, nil},
		{"hard links not supported (EOPNOTSUPP)", syscall.EOPNOTSUPP, false, nil},
		{"hard links refused, a file at the name", syscall.EPERM, true, fs.ErrExist},
		{"the link fails otherwise", syscall.EIO, false, syscall.EIO},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			name := filepath.Join(dir, "member")
			if tc.there {
				if err := os.WriteFile(name, []byte("another's"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			f, err := Create(name, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("new version"); err != nil {
				t.Fatal(err)
			}
			err = f.commitNew(func(string) error { return &os.LinkError{Op: "link", Old: f.tmp, New: name, Err: tc.linkErr} })
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("CommitNew = %v, want %v", err, tc.wantErr)
			}
			want := "new version"
			if tc.there {
				want = "another's"
			}
			got, rerr := os.ReadFile(name)
			if tc.wantErr == syscall.EIO {
				if !errors.Is(rerr, fs.ErrNotExist) {
					t.Fatalf("the name holds %q after a failed commit", got)
				}
			} else if string(got) != want {
				t.Fatalf("the name holds %q (%v), want %q", got, rerr, want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 && tc.wantErr != syscall.EIO || len(entries) != 0 && tc.wantErr == syscall.EIO {
				t.Fatalf("the directory holds %d names: the temporary one stays", len(entries))
			}
		})
	}
}
