package migrate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"warcdedup/atomicfile"
)

// TestKeptCopyDurableBeforeARCRemoved proves that before an ARC is
// removed every directory its kept copy's path needed was synced: the one
// holding the copy and each one MkdirAll made for it (their entries in
// their parents), and likewise the proof's directories in the work
// directory. Only the last directory was synced: after a power cut the
// copy of a removed ARC could vanish with a directory entry never written.
func TestKeptCopyDurableBeforeARCRemoved(t *testing.T) {
	for _, tc := range []struct {
		name string
		link func(oldname, newname string) error
	}{
		{"hard link", os.Link},
		{"copy across file systems", func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll := filepath.Join(dir, "coll")
			genCollection(t, filepath.Join(coll, "a", "b"), 5)
			keep := filepath.Join(dir, "archive", "keep")
			work := filepath.Join(dir, "work")
			arcs, _, err := Scan(coll)
			if err != nil || len(arcs) == 0 {
				t.Fatalf("scan: %v, %d ARC files", err, len(arcs))
			}
			// Every sync, with which ARC files were still in the
			// collection then.
			var mu sync.Mutex
			synced := map[string][]string{} // ARC -> the directories synced while it was there
			c := &Converter{Options: Options{WorkDir: work, KeepARC: keep}, link: tc.link}
			c.syncDir = func(d string) error {
				mu.Lock()
				defer mu.Unlock()
				for _, in := range arcs {
					if _, err := os.Stat(in.Path); err == nil {
						synced[in.Name] = append(synced[in.Name], d)
					}
				}
				return atomicfile.SyncDir(d)
			}
			res, err := c.Run(context.Background(), coll, nil)
			if err != nil || res.Count(Converted) != len(arcs) {
				t.Fatalf("run: %v, %+v", err, res.Files)
			}
			for _, in := range arcs {
				kept := filepath.Join(keep, filepath.FromSlash(in.Name))
				proof := filepath.Join(work, ProofDir, filepath.FromSlash(in.Name)+proofExt)
				var want []string
				for d := filepath.Dir(kept); d != dir; d = filepath.Dir(d) {
					want = append(want, d) // the copy's directory, and each one made, in its parent
				}
				want = append(want, dir)
				// The proof's own directory is synced by its commit.
				for d := filepath.Dir(filepath.Dir(proof)); d != dir; d = filepath.Dir(d) {
					want = append(want, d)
				}
				for _, d := range want {
					if !slices.Contains(synced[in.Name], d) {
						t.Errorf("%s: %s not synced before the ARC was removed (synced: %s)", in.Name, d, strings.Join(synced[in.Name], " "))
					}
				}
			}
		})
	}
}

// TestKeepCopyLeavesNoBadCopy proves a copy into the keep directory (on
// another file system) is checked before it gets the ARC's name: a copy
// that reads back wrong was left under the ARC's name (and a rerun took it
// for "another file" and never kept the ARC), and the temporary copy of a
// killed run is removed by the next.
func TestKeepCopyLeavesNoBadCopy(t *testing.T) {
	dir := t.TempDir()
	coll, keep := filepath.Join(dir, "coll"), filepath.Join(dir, "keep")
	genCollection(t, coll, 6)
	arcs, _, err := Scan(coll)
	if err != nil || len(arcs) == 0 {
		t.Fatalf("scan: %v, %d ARC files", err, len(arcs))
	}
	before := snapshot(t, coll)
	// A killed run's temporary copy of the first ARC.
	first := filepath.Join(keep, arcs[0].Name)
	if err := os.MkdirAll(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(keep, atomicfile.TempPrefix+arcs[0].Name+"-123456")
	write(t, killed, []byte("half a copy"))
	// Not this tool's: left alone.
	other := filepath.Join(keep, atomicfile.TempPrefix+arcs[0].Name+"-notdigits")
	write(t, other, []byte("someone else's"))
	exdev := func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EXDEV} }
	c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), KeepARC: keep}, link: exdev}
	c.Hook = func(step, arc string) {
		if step != "copied" || arc != arcs[0].Name {
			return
		}
		// The copy reads back wrong (a bad disk, a bad cable).
		tmps, _ := filepath.Glob(filepath.Join(keep, atomicfile.TempPrefix+arc+"-*"))
		for _, p := range tmps {
			if p != killed && p != other {
				write(t, p, []byte("damaged copy"))
			}
		}
	}
	res, err := c.Run(context.Background(), coll, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o := res.Files[0]; o.Status != Failed || !strings.Contains(o.Reason, "reads back") {
		t.Errorf("%s: %s (%s), want failed: the copy reads back wrong", o.ARC, o.Status, o.Reason)
	}
	if _, err := os.Lstat(first); err == nil {
		t.Errorf("%s: a bad copy is left under the ARC's name", first)
	}
	if _, err := os.Lstat(killed); err == nil {
		t.Errorf("%s: a killed run's temporary copy is left", killed)
	}
	if _, err := os.Lstat(other); err != nil {
		t.Errorf("%s, not this tool's, was removed: %v", other, err)
	}
	if fileSum(arcs[0].Path) != before[arcs[0].Name] {
		t.Errorf("%s changed", arcs[0].Name)
	}
	if left, _ := filepath.Glob(filepath.Join(keep, atomicfile.TempPrefix+"*[0-9]")); len(left) > 0 {
		t.Errorf("temporary copies left: %v", left)
	}
	// Once the cause is gone, a rerun keeps it.
	c.Hook = nil
	res, err = c.Run(context.Background(), coll, nil)
	if err != nil || res.Count(Converted) != 1 || res.Files[0].Status != Converted {
		t.Fatalf("rerun: %v, %+v", err, res.Files)
	}
	if fileSum(first) != before[arcs[0].Name] {
		t.Errorf("%s: not kept byte for byte by the rerun", first)
	}
}

// TestLinkedARCNamed proves an ARC name in the collection that is a
// symbolic link is named, not passed over in silence: it is not
// followed (converting through it would remove the link and leave the
// file it names), and the run says so.
func TestLinkedARCNamed(t *testing.T) {
	for _, tc := range []struct{ name, link string }{
		{"at the top", "linked.arc.gz"},
		{"in a subdirectory", "sub/linked.arc.gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			coll, elsewhere := filepath.Join(dir, "coll"), filepath.Join(dir, "elsewhere")
			genCollection(t, coll, 8)
			genCollection(t, elsewhere, 9)
			if err := os.MkdirAll(filepath.Join(coll, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(elsewhere, "gen-00000.arc.gz"), filepath.Join(coll, tc.link)); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, elsewhere)
			var reported []string
			c := &Converter{Options: Options{WorkDir: filepath.Join(dir, "work"), Report: func(err error) { reported = append(reported, err.Error()) }}}
			if _, err := c.Run(context.Background(), coll, nil); err != nil {
				t.Fatal(err)
			}
			said := false
			for _, r := range reported {
				said = said || strings.Contains(r, tc.link) && strings.Contains(r, "symbolic link")
			}
			if !said {
				t.Errorf("%s was passed over in silence: %v", tc.link, reported)
			}
			if fi, err := os.Lstat(filepath.Join(coll, tc.link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("the link is gone or changed: %v", err)
			}
			after := snapshot(t, elsewhere)
			for name, sum := range before {
				if after[name] != sum {
					t.Errorf("%s, outside the collection, changed", name)
				}
			}
		})
	}
}
