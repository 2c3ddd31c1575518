package e2e

import (
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/digest"
)

// TestRewriteRefusedWhileHeld proves that the commands rewriting a
// collection's files in place outside warcdedup run (warcrefs --in-place
// and --undo, warcrecompress) are refused while another job holds the
// collection's lock (flock on its directory, as warcdedup run takes it):
// exit status 2, the directory and the holder named, nothing changed;
// and that they are not once it is free.
func TestRewriteRefusedWhileHeld(t *testing.T) {
	dir, _ := generate(t, digest.SHA1)
	work := filepath.Dir(dir)
	cases := []struct{ name, script string }{
		{"warcrefs --in-place", "warcrefs -q --in-place --root coll --originals /dev/null < /dev/null"},
		{"warcrefs --undo", "warcrefs -q --undo --root coll --log rewrite.log --captures /dev/null"},
		{"warcrecompress", "warcrecompress -q -r coll"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := treeSums(t, dir)
			_, stderr, code := sh(t, work, "flock -n coll "+c.script)
			command, _, _ := strings.Cut(c.script, " ")
			want := command + ": " + dir + ": another warcdedup job is working on this directory's files (its lock is held by process "
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("held: exit %d, stderr %q; want 2 and %q", code, stderr, want)
			}
			if !maps.Equal(treeSums(t, dir), before) {
				t.Errorf("the collection changed though %s was refused", command)
			}
			if _, stderr, _ := sh(t, work, c.script); strings.Contains(stderr, "another warcdedup job") {
				t.Errorf("free: refused all the same: %s", stderr)
			}
		})
	}
}
