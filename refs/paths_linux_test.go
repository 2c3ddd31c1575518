package refs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"warcdedup/digest"
	"warcdedup/inplace"
	"warcdedup/internal/rewritetest"
	"warcdedup/internal/warctest"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/source"
)

// The "Files and paths" attacks of issue 8: what warcrefs rewrites, and
// what it keeps of a file besides its bytes.

// pathCase is a small collection of files, each an original and its
// duplicate (dupResponses), and the lines that make the duplicates
// revisits.
type pathCase struct {
	dir   string
	lines []manifest.Line
	data  map[string][]byte // each file's bytes
}

// newPathCase writes the named files (slash-separated, under dir) and
// returns their lines, sorted by file.
func newPathCase(t *testing.T, dir string, names ...string) *pathCase {
	t.Helper()
	p := &pathCase{dir: dir, data: map[string][]byte{}}
	for _, name := range names {
		data, lines := dupResponses(filepath.Base(name))
		for i := range lines {
			lines[i].File = name
		}
		warctest.WriteFile(t, dir, name, data)
		p.data[name] = data
		p.lines = append(p.lines, lines...)
	}
	rewritetest.SortByFile(p.lines)
	return p
}

// linesOf returns the lines of the file name, named as.
func (p *pathCase) linesOf(name, as string) []manifest.Line {
	var out []manifest.Line
	for _, l := range p.lines {
		if l.File == name {
			l.File = as
			out = append(out, l)
		}
	}
	return out
}

// checkRevisitFile checks that data is a rewrite of old in which the
// second record became a revisit of the first.
func checkRevisitFile(t *testing.T, name string, old, data []byte) {
	t.Helper()
	_, revisits, problems := nothingLost(map[string][]byte{name: old}, map[string][]byte{name: data}, nil)
	for _, p := range problems {
		t.Error(p)
	}
	if revisits != 1 {
		t.Errorf("%s: %d revisits written, want 1", name, revisits)
	}
}

// TestSymlinksLeadingOutsideRoot names files whose path leaves the root
// through a symbolic link (a directory inside the root linked to one
// outside, a file linked to one outside): they are refused, and nothing
// outside the root is touched, not even by a temporary file; a duplicate
// inside whose original is through such a link is refused too (the
// original is not read); the other file inside is rewritten.
func TestSymlinksLeadingOutsideRoot(t *testing.T) {
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	in := newPathCase(t, root, "inside.warc", "inside2.warc")
	out := newPathCase(t, outside, "sub/x.warc", "y.warc")
	if err := os.Symlink(filepath.Join(outside, "sub"), filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "y.warc"), filepath.Join(root, "y.warc")); err != nil {
		t.Fatal(err)
	}
	lines := append(in.linesOf("inside.warc", "inside.warc"), out.linesOf("sub/x.warc", "sub/x.warc")...)
	lines = append(lines, out.linesOf("y.warc", "y.warc")...)
	// Every file holds the same payload: inside2.warc's duplicate names
	// y.warc's original instead of its own.
	for _, l := range in.linesOf("inside2.warc", "inside2.warc") {
		if l.IsDuplicate() {
			y := out.linesOf("y.warc", "y.warc")[0]
			l.RefURI, l.RefDate = y.URI, y.Date
		}
		lines = append(lines, l)
	}
	rewritetest.SortByFile(lines)
	outsideBefore := regularFiles(t, outside)
	ids := statFiles(t, outside, outsideBefore)

	o := run(t, Rewriter{Roots: []string{root}, InPlace: true, Jobs: 2}, lines)
	if o.err != nil {
		t.Fatalf("Run: %v", o.err)
	}
	refused := refusedFiles(t, o)
	for _, name := range []string{"sub/x.warc", "y.warc"} {
		re := refused[name]
		if re == nil || !errors.Is(re, source.ErrUnsafeName) || re.Offset != -1 {
			t.Errorf("%s: refusal %v, want the whole file refused for a link leading out of the root", name, re)
		}
	}
	if re := refused["inside2.warc"]; re == nil || !errors.Is(re, originals.ErrOriginal) || !strings.Contains(re.Error(), source.ErrUnsafeName.Error()) {
		t.Errorf("inside2.warc: refusal %v, want one for its original through a link leading out of the root", re)
	}
	if len(refused) != 3 || o.stats.Rewritten != 1 {
		t.Errorf("refusals %v, stats %+v: want the 2 files outside and inside2.warc refused, inside.warc rewritten", o.refused, o.stats)
	}
	rewritetest.SameFiles(t, "outside the root", regularFiles(t, outside), outsideBefore)
	for name, id := range ids {
		if why := id.untouched(filepath.Join(outside, name)); why != "" {
			t.Errorf("%s outside the root: %s", name, why)
		}
	}
	checkRevisitFile(t, "inside.warc", in.data["inside.warc"], regularFiles(t, root)["inside.warc"])
	for _, l := range []string{"sub", "y.warc"} {
		if fi, err := os.Lstat(filepath.Join(root, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link (%v)", l, err)
		}
	}
}

// TestSymlinkInsideRoot names a file through a symbolic link to another
// file inside the root: the file linked to is rewritten, and the link
// stays the same link.
func TestSymlinkInsideRoot(t *testing.T) {
	root := t.TempDir()
	p := newPathCase(t, root, "real/x.warc")
	if err := os.Symlink("real/x.warc", filepath.Join(root, "link.warc")); err != nil {
		t.Fatal(err)
	}
	o := mustRun(t, Rewriter{Roots: []string{root}, InPlace: true}, p.linesOf("real/x.warc", "link.warc"))
	if o.stats.Rewritten != 1 || o.stats.Revisits != 1 {
		t.Errorf("stats %+v, want 1 file rewritten", o.stats)
	}
	fi, err := os.Lstat(filepath.Join(root, "link.warc"))
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.warc is no longer a symbolic link (%v)", err)
	}
	if target, err := os.Readlink(filepath.Join(root, "link.warc")); err != nil || target != "real/x.warc" {
		t.Errorf("link.warc points to %q (%v), want real/x.warc", target, err)
	}
	files := regularFiles(t, root)
	if len(files) != 1 {
		t.Errorf("regular files after the run: %v, want real/x.warc alone", sortedKeys(files))
	}
	checkRevisitFile(t, "real/x.warc", p.data["real/x.warc"], files["real/x.warc"])
}

// TestHardLinks rewrites a file with two names (hard links): refused by
// default, both names keeping the old bytes; with HardLinks, the name given
// gets the new version and the other keeps the old bytes and inode.
func TestHardLinks(t *testing.T) {
	for _, allow := range []bool{false, true} {
		t.Run(map[bool]string{false: "refused by default", true: "rewritten under one name with HardLinks"}[allow], func(t *testing.T) {
			root := t.TempDir()
			p := newPathCase(t, root, "a.warc")
			if err := os.Link(filepath.Join(root, "a.warc"), filepath.Join(root, "b.warc")); err != nil {
				t.Skipf("hard links: %v", err)
			}
			before := statFiles(t, root, map[string][]byte{"a.warc": nil, "b.warc": nil})
			o := run(t, Rewriter{Roots: []string{root}, InPlace: true, HardLinks: allow}, p.lines)
			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			files := regularFiles(t, root)
			if !bytes.Equal(files["b.warc"], p.data["a.warc"]) {
				t.Errorf("b.warc changed")
			}
			if why := before["b.warc"].untouched(filepath.Join(root, "b.warc")); why != "" {
				t.Errorf("b.warc: %s", why)
			}
			if !allow {
				re := o.refusedFor("a.warc")
				if re == nil || !strings.Contains(re.Error(), "hard links") {
					t.Errorf("refusals %v, want a.warc refused for its hard links", o.refused)
				}
				if why := before["a.warc"].untouched(filepath.Join(root, "a.warc")); why != "" || !bytes.Equal(files["a.warc"], p.data["a.warc"]) {
					t.Errorf("a.warc was refused but changed (%s)", why)
				}
				return
			}
			if len(o.refused) > 0 {
				t.Errorf("refusals %v", o.refused)
			}
			checkRevisitFile(t, "a.warc", p.data["a.warc"], files["a.warc"])
			if tf := rewritetest.TempFiles(t, root); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}

// TestOwnerModeXattrsKept rewrites, as root, a file owned by another user
// and group, with mode 0640 and an extended attribute: the new version
// keeps all of them.
func TestOwnerModeXattrsKept(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a file another owner")
	}
	root := t.TempDir()
	p := newPathCase(t, root, "a.warc")
	path := filepath.Join(root, "a.warc")
	const uid, gid = 4321, 8765
	if err := os.Chown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	value := []byte("kept across the rewrite")
	if err := syscall.Setxattr(path, "user.x", value, 0); err != nil {
		t.Skipf("the file system refuses extended attributes: %v", err)
	}
	before, _ := os.Stat(path)
	o := mustRun(t, Rewriter{Roots: []string{root}, InPlace: true}, p.lines)
	if o.stats.Rewritten != 1 {
		t.Fatalf("stats %+v, want a.warc rewritten", o.stats)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(before, after) {
		t.Fatal("a.warc is the same inode: it was not replaced")
	}
	st := after.Sys().(*syscall.Stat_t)
	if st.Uid != uid || st.Gid != gid {
		t.Errorf("owner %d, group %d; want %d, %d", st.Uid, st.Gid, uid, gid)
	}
	if after.Mode() != 0o640 {
		t.Errorf("mode %v, want -rw-r-----", after.Mode())
	}
	buf := make([]byte, 256)
	n, err := syscall.Getxattr(path, "user.x", buf)
	if err != nil || !bytes.Equal(buf[:n], value) {
		t.Errorf("user.x = %q (%v), want %q", buf[:max(n, 0)], err, value)
	}
	checkRevisitFile(t, "a.warc", p.data["a.warc"], regularFiles(t, root)["a.warc"])
}

// TestCommandRootWithComma runs the command with a --root whose name holds
// a comma, beside a directory named as the part before the comma holding
// the same files (a backup, say) and, in the working directory, one named
// as the part after it: the directory named is rewritten, the others are
// not touched. (A repeatable flag of urfave/cli splits its values at
// commas unless told not to.)
func TestCommandRootWithComma(t *testing.T) {
	bin := warcrefsBinary(t)
	top := t.TempDir()
	target, decoy := filepath.Join(top, "coll,new"), filepath.Join(top, "coll")
	p := newPathCase(t, target, "a.warc")
	newPathCase(t, decoy, "a.warc")
	if err := os.Mkdir(filepath.Join(top, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	decoyBefore := statFiles(t, decoy, map[string][]byte{"a.warc": nil})
	mf := writeManifest(t, p.lines)
	cmd := exec.Command(bin, "--in-place", "--root", target, "-i", mf, "--originals", mf, "-q")
	cmd.Dir = top
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("warcrefs: %v\n%s", err, out)
	}
	if why := decoyBefore["a.warc"].untouched(filepath.Join(decoy, "a.warc")); why != "" {
		t.Errorf("%s, outside --root, was touched: %s", filepath.Join(decoy, "a.warc"), why)
	}
	checkRevisitFile(t, "a.warc", p.data["a.warc"], regularFiles(t, target)["a.warc"])
}

// TestFileNamedTwice names one file under two names in one manifest, as
// overlapping roots do ("sub/a.warc" under the top, "a.warc" under sub),
// a duplicate under each: it is rewritten under one name only, the other
// refused, and the log lists that one rewrite, whose entries describe the
// file as it now is.
func TestFileNamedTwice(t *testing.T) {
	body := func(s string) string { return strings.Repeat(s, 400) }
	recs := []string{
		warctest.Response("http://example.com/a", "2024-01-01T00:00:00Z", body("a")),
		warctest.Response("http://example.com/a?again", "2024-01-02T00:00:00Z", body("a")),
		warctest.Response("http://example.com/b", "2024-01-03T00:00:00Z", body("b")),
		warctest.Response("http://example.com/b?again", "2024-01-04T00:00:00Z", body("b")),
	}
	data := []byte(strings.Join(recs, ""))
	var lines []manifest.Line
	var off int64
	for i, r := range recs {
		rec, _, _ := readRecord([]byte(r))
		l := manifest.Line{File: "sub/a.warc", Offset: off, Length: int64(len(r)), URI: rec.URI, Date: rec.Date,
			Digest: rewritetest.FormatDigest(digest.SHA1, []byte(body(string(rune('a'+i/2))))), Copy: 1, RefURI: "-", RefDate: "-", Fields: 10}
		if i%2 == 1 {
			o := lines[i-1]
			l.Copy, l.RefURI, l.RefDate = 2, o.URI, o.Date
			l.File = "a.warc" // the second duplicate under the other name
			if i == 1 {
				l.File = "sub/a.warc"
			}
		}
		lines = append(lines, l)
		off += int64(len(r))
	}
	for _, jobs := range []int{1, 2} {
		t.Run(fmt.Sprint(jobs, " jobs"), func(t *testing.T) {
			top := t.TempDir()
			warctest.WriteFile(t, top, "sub/a.warc", data)
			o := run(t, Rewriter{Roots: []string{top, filepath.Join(top, "sub")}, InPlace: true, Jobs: jobs}, byFileOrder(lines))
			if o.err != nil {
				t.Fatalf("Run: %v", o.err)
			}
			if o.stats.Rewritten != 1 || o.stats.Refused != 1 || len(o.files) != 1 {
				t.Fatalf("stats %+v, %d files logged: want one name rewritten, the other refused", o.stats, len(o.files))
			}
			re := o.refused[0]
			// One job: refused as named twice, or (the walk of the next
			// name overlapping the replacement of the first) as changed
			// while its new version was made; as safe, and which one
			// comes is the order of the two.
			namedTwice := errors.Is(re, inplace.ErrNamedTwice) && strings.Contains(re.Error(), o.files[0].File)
			if jobs == 1 && !namedTwice && !errors.Is(re, inplace.ErrChangedMeanwhile) {
				t.Errorf("refusal %v, want %q naming %s, or %q", re, inplace.ErrNamedTwice, o.files[0].File, inplace.ErrChangedMeanwhile)
			}
			after := regularFiles(t, top)
			_, revisits, problems := nothingLost(map[string][]byte{"sub/a.warc": data}, after, nil)
			for _, p := range problems {
				t.Error(p)
			}
			if revisits != 1 {
				t.Errorf("%d revisits, want 1", revisits)
			}
			checkLogEntries(t, o, map[string][]byte{o.files[0].File: after["sub/a.warc"]})
			if tf := rewritetest.TempFiles(t, top); len(tf) > 0 {
				t.Errorf("temporary files left: %v", tf)
			}
		})
	}
}
