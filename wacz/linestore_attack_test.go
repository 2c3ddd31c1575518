package wacz

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDeriveCopyOfAnotherVersion: the collisions pass rewrites again the
// members the first pass rewrote, copied from the packages it wrote
// anew, and the run hands Derive the stamp of the member the hash stage
// read (before the first pass). Those lines do not describe the copy:
// Derive must say so (ErrOtherVersion, which the run passes over
// quietly: the rebuild reads the member) and write nothing, not apply
// the entries of the second rewrite to lines of the first version (which
// either fails with a message about log lines and ranges or describes
// the records where they are not).
func TestDeriveCopyOfAnotherVersion(t *testing.T) {
	a := testWARC()
	name := JoinName("x.wacz", "archive/a.warc.gz")
	first := revisitsOf(t, a, name, responseOffsets(t, a)[2])
	cases := []struct {
		name   string
		copied []byte // the copy as staged
		// other: Derive must find the copy of another version.
		other bool
	}{
		{"a copy of the member the hash stage read", a, false},
		{"a copy of the member after a first rewrite", first.data, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := freshLinesOf(t, "a.warc.gz", a)
			slices.Sort(lines)
			path := writeTemp(t, dir, "x.wacz", packageBytes(append([]testMember{{name: "archive/a.warc.gz", data: string(a)}}, indexMembersOf(lines, "cdxj")...)))
			old := openFile(t, path)
			store := &LineStore{Dir: filepath.Join(dir, "lines")}
			storeLines(t, store, path, old)
			// The second rewrite makes the next response a revisit.
			second := revisitsOf(t, c.copied, name, responseOffsets(t, c.copied)[1])
			rp := rewriteCopy(t, dir, "a.warc.gz.copy", name, c.copied, second.data, second.entries)
			err := store.Derive(rp, stampOf(old.Member("archive/a.warc.gz")))
			if got := errors.Is(err, ErrOtherVersion); got != c.other {
				t.Fatalf("Derive: %v; of another version: %v, want %v", err, got, c.other)
			}
			_, serr := os.Stat(store.path(name, true))
			if written := !errors.Is(serr, fs.ErrNotExist); written == c.other {
				t.Errorf("derived lines written: %v, want %v", written, !c.other)
			}
		})
	}
}
