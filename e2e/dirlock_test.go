package e2e

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"warcdedup/digest"
	"warcdedup/scripts/gen"
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

// TestRewriteRefusedWhileLocationHeld proves that warcrefs --in-place and
// --undo lock the directories of the files --locations names outside any
// root (they may rewrite them) as they lock the roots': while another job
// holds such a directory they are refused, naming it, and change nothing;
// they ran beside that job before, free to rewrite its files.
func TestRewriteRefusedWhileLocationHeld(t *testing.T) {
	dir, _ := generate(t, digest.SHA1)
	work := filepath.Dir(dir)
	elsewhere := filepath.Join(work, "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.warc*"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no WARC file in %s (%v)", dir, err)
	}
	moved := filepath.Join(elsewhere, filepath.Base(names[0]))
	if err := os.Rename(names[0], moved); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "locations"), []byte(filepath.Base(moved)+" elsewhere/"+filepath.Base(moved)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, script string }{
		{"warcrefs --in-place", "warcrefs -q --in-place --locations locations --originals /dev/null < /dev/null"},
		{"warcrefs --undo", "warcrefs -q --undo --locations locations --log rewrite.log --captures /dev/null"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := treeSums(t, elsewhere)
			_, stderr, code := sh(t, work, "flock -n elsewhere "+c.script)
			want := "warcrefs: " + real + ": another warcdedup job is working on this directory's files (its lock is held by process "
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("held: exit %d, stderr %q; want 2 and %q", code, stderr, want)
			}
			if !maps.Equal(treeSums(t, elsewhere), before) {
				t.Errorf("the located file changed though warcrefs was refused")
			}
			if _, stderr, _ := sh(t, work, c.script); strings.Contains(stderr, "another warcdedup job") {
				t.Errorf("free: refused all the same: %s", stderr)
			}
		})
	}
}

// TestArc2warcInPlaceRefusedWhileHeld proves that arc2warc --in-place
// locks the collection it converts, and its --keep-arc directory, as
// warcdedup run --convert-arc does: while another job holds either it is
// refused (exit status 2, the directory named) with the collection and
// the keep directory as they were; it converted beside a job on the
// collection, and kept ARC files in a directory another job was keeping
// its own in. Once they are free it converts. A directory beneath the
// keep directory is locked only when an ARC is kept there: one the job
// does not use, held by another job (a collection of its own), refuses
// nothing (the whole tree once was locked, a descriptor a directory).
func TestArc2warcInPlaceRefusedWhileHeld(t *testing.T) {
	cases := []struct {
		name, held, script string
		refused            bool
	}{
		{"the collection held", "arcs", "arc2warc -q --in-place --work-dir work arcs", true},
		{"the keep directory held", "keep", "arc2warc -q --in-place --work-dir work --keep-arc keep arcs", true},
		{"a directory of the keep directory not used held", "keep/old", "arc2warc -q --in-place --work-dir work --keep-arc keep arcs", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			arcs := smallCollection(t, dir, "arcs", gen.ARCGz, gen.ARC)
			keep := filepath.Join(dir, "keep")
			if err := os.MkdirAll(filepath.Join(dir, c.held), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(keep, 0o755); err != nil {
				t.Fatal(err)
			}
			before, keptBefore := treeSums(t, arcs), treeSums(t, keep)
			_, stderr, code := sh(t, dir, "flock -n "+c.held+" "+c.script)
			if !c.refused {
				if code != 0 || maps.Equal(treeSums(t, arcs), before) || len(treeSums(t, keep)) == 0 {
					t.Errorf("%s held: exit %d, stderr %q; want 0, the ARC files converted and kept", c.held, code, stderr)
				}
				return
			}
			want := "arc2warc: " + filepath.Join(dir, c.held) + ": another warcdedup job is working on this directory's files (its lock is held by process "
			if code != 2 || !strings.Contains(stderr, want) {
				t.Errorf("held: exit %d, stderr %q; want 2 and %q", code, stderr, want)
			}
			if !maps.Equal(treeSums(t, arcs), before) || !maps.Equal(treeSums(t, keep), keptBefore) {
				t.Errorf("the collection or the keep directory changed though arc2warc was refused")
			}
			if _, stderr, code := sh(t, dir, c.script); code != 0 {
				t.Errorf("free: exit %d: %s", code, stderr)
			}
			if left := treeSums(t, arcs); maps.Equal(left, before) {
				t.Errorf("free: nothing converted")
			}
		})
	}
}
