// Package replica brings a second copy of a collection up to date with a
// verified job (the BA plan's step 7, shared/spec/prior-art.md): the
// files the job replaced, and the ARC files it converted, are copied from
// the collection to the copy, each only if the copy still holds what the
// job started from.
//
// What the job changed is read from its work directory: the rewrite log's
// "# file" lines (each replaced file's size and SHA-256 before and after,
// run after run, undos included) and the conversion map (each ARC file's
// SHA-256, the WARC file that replaced it and that WARC's SHA-256). A
// file's history is the chain of those versions; the copy's version must
// be one of them, else the commit is refused before anything is copied
// (someone changed the copy, or it is not a copy of this collection). So
// it is when a file holding originals the revisits need (deps.tsv), one
// the job did not change, is not the same in the copy as in the
// collection. The copy is locked (package collock) as a job's collection
// is, and must not be the collection under another name.
//
// Each file is copied atomically: to a temporary name in the copy, synced,
// read back and checked against the SHA-256 its last version has, renamed
// over its name, the directory synced; a converted ARC is removed from the
// copy only once its WARC is there. Killed and run again, a commit skips
// the files the copy already holds in their last version.
package replica

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"

	"warcdedup/atomicfile"
	"warcdedup/collock"
	"warcdedup/convmap"
	"warcdedup/fixity"
	"warcdedup/internal/progress"
	"warcdedup/internal/within"
	"warcdedup/manifest"
	"warcdedup/rewritelog"
	"warcdedup/wacz"
	"warcdedup/warcsum"
)

// Options of a commit.
type Options struct {
	Collection string // the first copy, as the job left it
	Copy       string // the second copy
	// Progress, if set, gets the bytes read and written as they are.
	Progress *atomic.Int64
	// Originals are the files holding the originals the collection's
	// revisits need (the work directory's deps.tsv, read by Originals):
	// each one the job did not change must be the same in the copy as in
	// the collection, else the revisits copied would point at records the
	// copy does not have.
	Originals []string
	// Hook, if set, is called after each file is committed (tests kill the
	// process there).
	Hook func(name string)
}

// Version is one state of a file: its size and sum, as the rewrite log
// writes sums (fixity.AlgorithmOf: "blake3:HEX", or bare hex for the
// SHA-256 of the conversion map, of logs of earlier versions, and of the
// new versions of WACZ members and --index files).
type Version struct {
	Size int64  `json:"size"`
	Sum  string `json:"sum"`
}

// fileState is a file as read: its size and its sums in the algorithms of
// the versions it is compared with.
type fileState struct{ h *fixity.Hash }

// is says whether the file is version v.
func (s fileState) is(v Version) bool { return s.h != nil && s.h.Is(v.Size, v.Sum) }

// in says whether the file is one of versions.
func (s fileState) in(versions []Version) bool { return slices.ContainsFunc(versions, s.is) }

// like gives the file's size and sum in the algorithm of v.
func (s fileState) like(v Version) string {
	if s.h == nil {
		return "unread"
	}
	return fmt.Sprintf("%d bytes, %s", s.h.Size(), s.h.Like(v.Sum))
}

// algorithms are those of the sums of versions.
func algorithms(versions []Version) []fixity.Algorithm {
	sums := make([]string, len(versions))
	for i, v := range versions {
		sums[i] = v.Sum
	}
	return fixity.Like(sums...)
}

// Change is one file the job changed: its versions in order, the last
// the one the collection must hold now. A converted ARC file is a Change
// of its own, whose last version is none (Gone): the copy loses it once
// its WARC is there.
type Change struct {
	Name     string    `json:"name"`
	Versions []Version `json:"versions"`
	Gone     bool      `json:"gone,omitempty"` // a converted ARC: removed from the copy
	From     string    `json:"converted_from,omitempty"`
}

// Last is the version the copy must end with.
func (c *Change) Last() Version { return c.Versions[len(c.Versions)-1] }

// FileResult is what the commit did with one file.
type FileResult struct {
	Name   string `json:"name"`
	Action string `json:"action"` // "copied", "up to date", "removed", "refused"
	Bytes  int64  `json:"bytes,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Result is what a commit did.
type Result struct {
	Copy     string       `json:"copy"`
	Files    []FileResult `json:"files"`
	Copied   int          `json:"copied"`
	Bytes    int64        `json:"bytes_copied"`
	UpToDate int          `json:"up_to_date"`
	Removed  int          `json:"arc_removed"`
	Refused  int          `json:"refused"`
}

// ErrRefused is the error of a commit refused before anything was copied.
var ErrRefused = errors.New("refused")

// Changes reads what the job changed, in file name order, from its
// rewrite log and conversion map (a path that does not exist is a job
// without one).
func Changes(logFile, mapFile string) ([]*Change, error) {
	byName := map[string]*Change{}
	var order []*Change
	get := func(name string) *Change {
		c := byName[name]
		if c == nil {
			c = &Change{Name: name}
			byName[name] = c
			order = append(order, c)
		}
		return c
	}
	if f, err := os.Open(mapFile); err == nil {
		m, err := convmap.Load(f, mapFile)
		f.Close()
		if err != nil {
			return nil, err
		}
		for _, mf := range m.Files() {
			arc := get(mf.ARC)
			arc.Versions = append(arc.Versions, Version{mf.ARCSize, mf.ARCSHA256})
			arc.Gone = true
			w := get(mf.WARC)
			w.From = mf.ARC
			w.Versions = append(w.Versions, Version{mf.WARCSize, mf.WARCSHA256})
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if f, err := os.Open(logFile); err == nil {
		r := rewritelog.NewReader(f, logFile)
		r.Fixity = func(fx rewritelog.Fixity) error {
			if fx.NewSum == "-" || fx.OldSum == "-" {
				return nil // a dry run wrote nothing
			}
			c := get(fx.File)
			old := Version{fx.OldSize, fx.OldSum}
			if n := len(c.Versions); n == 0 || c.Versions[n-1] != old {
				c.Versions = append(c.Versions, old)
			}
			c.Versions = append(c.Versions, Version{fx.NewSize, fx.NewSum})
			return nil
		}
		for {
			if _, err = r.Next(); err != nil {
				break
			}
		}
		f.Close()
		if err != io.EOF {
			return nil, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	slices.SortFunc(order, func(a, b *Change) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return order, nil
}

// Commit brings the copy up to date with the collection for every change.
// It refuses before it starts when the copy is the collection (under
// another name, inside it or holding it) or another job holds either's
// lock. It then checks both trees and every changed file, and refuses
// (an error wrapping ErrRefused, nothing copied) when the copy holds a
// file more or less than the collection, an unchanged file of another
// size, a version of a changed file the job never had, a file of
// originals the revisits need that is not the collection's, or only a
// link to the collection's file; or when the collection no longer holds
// a file's last version; or the job was on WACZ packages.
func Commit(ctx context.Context, opt Options, changes []*Change) (*Result, error) {
	res := &Result{Copy: opt.Copy}
	if fi, err := os.Stat(opt.Copy); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("the second copy %s: not a directory (%v)", opt.Copy, err)
	}
	if err := distinct(opt.Collection, opt.Copy); err != nil {
		return nil, err
	}
	// The copy's directories, locked as a job locks its collection's: a
	// job working on the copy meanwhile would have its files replaced
	// under it, or replace what the commit checked. The collection's too:
	// an undo or a new run there meanwhile would change the versions the
	// commit checked and copies.
	locks, err := collock.LockJob([]string{opt.Collection, opt.Copy}, nil)
	if err != nil {
		return nil, fmt.Errorf("commit to the second copy %s: %w", opt.Copy, err)
	}
	defer locks.Release()
	var plans []plan
	var refusals []string
	changed := make(map[string]bool, len(changes))
	for _, c := range changes {
		changed[c.Name] = true
	}
	listed, refused, err := unmatched(opt, changes)
	if err != nil {
		return nil, err
	}
	refusals = append(refusals, listed...)
	for _, name := range opt.Originals {
		if changed[name] || refused[name] {
			continue // its versions are checked as a change
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		refusal, err := sameOriginals(opt, name)
		if err != nil {
			return nil, err
		}
		if refusal != "" {
			refusals = append(refusals, refusal)
		}
	}
	for _, c := range changes {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		action, refusal, err := planOf(opt, c)
		if err != nil {
			return nil, err
		}
		if refusal != "" {
			refusals = append(refusals, refusal)
			continue
		}
		plans = append(plans, plan{c, action})
	}
	if len(refusals) > 0 {
		for _, r := range refusals {
			res.Files = append(res.Files, FileResult{Action: "refused", Reason: r})
		}
		res.Refused = len(refusals)
		return res, fmt.Errorf("%w: %d files of the second copy do not match what the job started from, or of the collection what it ended with; nothing copied", ErrRefused, len(refusals))
	}
	err = carryOut(ctx, opt, plans, res)
	return res, err
}

// distinct refuses a copy that is the collection, or inside it, or holds
// it, whatever the paths naming them (symbolic links, bind mounts: the
// same device and inode): its "up to date" would promise a second copy
// there is not.
func distinct(coll, copyDir string) error {
	if in, err := within.Dir(copyDir, coll); err != nil {
		return fmt.Errorf("the second copy %s: %w", copyDir, err)
	} else if in {
		return fmt.Errorf("the second copy %s is the collection %s or inside it: nothing to commit to", copyDir, coll)
	}
	if in, err := within.Dir(coll, copyDir); err != nil {
		return fmt.Errorf("the collection %s: %w", coll, err)
	} else if in {
		return fmt.Errorf("the second copy %s holds the collection %s: not a copy of it", copyDir, coll)
	}
	return nil
}

// unmatched is why the commit is refused for the archive files the job
// did not change: each must be in both copies, of one size (its bytes are
// compared where it holds originals: sameOriginals), but an ARC file the
// job converted, in the copy only, and its WARC, in the collection only.
// A copy that lacks a file, holds one more or another version of one is
// not the copy the job's files can be committed to: its "up to date"
// would promise a second copy it is not.
func unmatched(opt Options, changes []*Change) (refusals []string, refused map[string]bool, err error) {
	changed := make(map[string]*Change, len(changes))
	for _, c := range changes {
		changed[c.Name] = c
	}
	inColl, err := listing(opt.Collection)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the collection: %w", err)
	}
	inCopy, err := listing(opt.Copy)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the second copy: %w", err)
	}
	refused = map[string]bool{}
	refuse := func(name, format string, args ...any) {
		refusals = append(refusals, name+": "+fmt.Sprintf(format, args...))
		refused[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(inCopy)) {
		in, ok := inColl[name]
		switch {
		case ok && sameFile(in.Path, inCopy[name].Path):
			refuse(name, "the copy's is the collection's own file (a link to it), not a second copy")
		case changed[name] != nil:
			// Checked against its versions (planOf).
		case !ok:
			refuse(name, "in the copy, not in the collection (nor an ARC file the job converted)")
		case in.Size != inCopy[name].Size:
			refuse(name, "the copy's (%d bytes) is not the collection's (%d bytes), and the job did not change it", inCopy[name].Size, in.Size)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(inColl)) {
		if _, ok := inCopy[name]; !ok && changed[name] == nil {
			refuse(name, "in the collection, not in the copy, and the job did not change it")
		}
	}
	return refusals, refused, nil
}

// listing is the archive files under root by name, as a job lists them.
func listing(root string) (map[string]warcsum.Input, error) {
	ins, err := warcsum.Collect([]string{root}, true)
	if err != nil {
		return nil, err
	}
	out := make(map[string]warcsum.Input, len(ins))
	for _, in := range ins {
		out[filepath.ToSlash(in.Name)] = in
	}
	return out, nil
}

// notOwnCopy says why the copy's file name is no copy of its own: a
// symbolic link (or anything but a regular file), or the collection's
// file itself under another name (a hard link); "" if it is one, or
// missing. Reading through a link would find the collection's bytes and
// call the copy up to date, with no second copy of the file anywhere.
func notOwnCopy(opt Options, name string) string {
	p := filepath.Join(opt.Copy, filepath.FromSlash(name))
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return ""
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("%s: the copy's is not a regular file (%s): no copy of its own", name, fi.Mode().Type())
	case sameFile(p, filepath.Join(opt.Collection, filepath.FromSlash(name))):
		return fmt.Sprintf("%s: the copy's is the collection's file itself (a hard link): no copy of its own", name)
	}
	return ""
}

// sameFile says whether two paths name one file (a symbolic or hard
// link): the copy would hold no copy of it.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// sameOriginals is why the commit is refused ("" if not) for name, a
// file the job did not change holding originals the revisits need: the
// copy's must be the collection's, byte for byte (by its sum).
func sameOriginals(opt Options, name string) (string, error) {
	src, err := sum(filepath.Join(opt.Collection, filepath.FromSlash(name)), opt.Progress, []fixity.Algorithm{fixity.Default})
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil // not a file of this collection (another's, a package's member)
	}
	if err != nil {
		return "", err
	}
	want := Version{src.h.Size(), src.h.Sum(fixity.Default)}
	if why := notOwnCopy(opt, name); why != "" {
		return why, nil
	}
	have, err := sum(filepath.Join(opt.Copy, filepath.FromSlash(name)), opt.Progress, []fixity.Algorithm{fixity.Default})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s: not in the copy, and it holds originals the revisits copied need", name), nil
	case err != nil:
		return "", err
	case !have.is(want):
		return fmt.Sprintf("%s: the copy's (%s) is not the collection's (%d bytes, %s), and it holds originals the revisits copied need", name, have.like(want), want.Size, want.Sum), nil
	}
	return "", nil
}

// Originals reads the files holding originals from a dependency list
// (the work directory's deps.tsv: "FILE ORIGINAL-FILE REVISITS" lines,
// tab-separated, names escaped), each once, in name order; a path that
// does not exist is a job without one. Files outside the collection (an
// absolute path, as a crawl index's originals have) are left out.
func Originals(depsFile string) ([]string, error) {
	f, err := os.Open(depsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s: line %d: %q is no \"FILE ORIGINAL-FILE REVISITS\" line", depsFile, n, line)
		}
		name, err := manifest.UnescapeFile(fields[1])
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", depsFile, n, err)
		}
		if filepath.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			continue
		}
		seen[name] = true
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", depsFile, err)
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	slices.Sort(names)
	return names, nil
}

// plan is what Commit does of a change: "copy", "remove" or "up to date".
type plan struct {
	c      *Change
	action string
}

// planOf is the action of change c, from the sums of the copy's file and
// (to copy it) the collection's, or why the commit is refused.
func planOf(opt Options, c *Change) (action, refusal string, err error) {
	if pkg, _, ok := wacz.SplitName(c.Name); ok {
		// The job's log has the package's WARC members, not the package
		// (its indexes, datapackage.json): no version of it to check the
		// copy's against, nor to copy.
		return "", fmt.Sprintf("%s: a WARC member of the WACZ package %s: commit --to does not bring WACZ packages up to date; copy the package whole or run the job on the copy", c.Name, pkg), nil
	}
	if why := notOwnCopy(opt, c.Name); why != "" {
		return "", why, nil
	}
	algs := algorithms(c.Versions)
	have, err := sum(filepath.Join(opt.Copy, filepath.FromSlash(c.Name)), opt.Progress, algs)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return "", "", err
	}
	last := c.Last()
	switch {
	case c.Gone && missing:
		return "up to date", "", nil
	case c.Gone && have.is(last):
		return "remove", "", nil
	case c.Gone:
		return "", fmt.Sprintf("%s: the copy's (%s) is not the ARC file the job converted (%s)", c.Name, have.like(last), last.Sum), nil
	case !missing && have.is(last):
		return "up to date", "", nil
	case missing && c.From != "":
		// A WARC converted from an ARC: the copy has the ARC (checked
		// as its own change).
	case missing:
		return "", fmt.Sprintf("%s: not in the copy", c.Name), nil
	case !have.in(c.Versions):
		return "", fmt.Sprintf("%s: the copy's (%s) is no version the job knew of it (it started from %s): changed since?", c.Name, have.like(c.Versions[0]), c.Versions[0].Sum), nil
	}
	src, err := sum(filepath.Join(opt.Collection, filepath.FromSlash(c.Name)), opt.Progress, algs)
	if err != nil || !src.is(last) {
		return "", fmt.Sprintf("%s: the collection's (%s, %v) is not the job's last version (%s)", c.Name, src.like(last), err, last.Sum), nil
	}
	return "copy", "", nil
}

// carryOut carries out the plans in inOrder's order: an ARC leaves the
// copy only once its WARC is there, right after it when this commit
// copies the WARC, so that a copy with room for one more file, not for
// every WARC beside every ARC, is brought up to date.
func carryOut(ctx context.Context, opt Options, plans []plan, res *Result) error {
	for _, p := range inOrder(plans) {
		if err := ctx.Err(); err != nil {
			return err
		}
		fr, err := p.carryOut(opt, res)
		if err != nil {
			return err
		}
		res.Files = append(res.Files, fr)
		if opt.Hook != nil && p.action != "up to date" {
			opt.Hook(p.c.Name)
		}
	}
	return nil
}

// inOrder is the order carryOut carries out plans in: each copy, followed
// by the removal of the ARC it was converted from; the other removals;
// the files up to date.
func inOrder(plans []plan) []plan {
	removal := map[string]int{}
	for i, p := range plans {
		if p.action == "remove" {
			removal[p.c.Name] = i
		}
	}
	ordered := make([]plan, 0, len(plans))
	taken := make([]bool, len(plans))
	for i, p := range plans {
		if p.action != "copy" {
			continue
		}
		ordered, taken[i] = append(ordered, p), true
		if j, ok := removal[p.c.From]; ok && p.c.From != "" && !taken[j] {
			ordered, taken[j] = append(ordered, plans[j]), true
		}
	}
	for _, pass := range []string{"remove", "up to date"} {
		for i, p := range plans {
			if p.action == pass && !taken[i] {
				ordered, taken[i] = append(ordered, p), true
			}
		}
	}
	return ordered
}

// carryOut copies or removes the file, counting it in res.
func (p plan) carryOut(opt Options, res *Result) (FileResult, error) {
	fr := FileResult{Name: p.c.Name}
	switch p.action {
	case "copy":
		n, err := copyFile(filepath.Join(opt.Collection, filepath.FromSlash(p.c.Name)), filepath.Join(opt.Copy, filepath.FromSlash(p.c.Name)), p.c.Last(), opt.Progress)
		if err != nil {
			return fr, err
		}
		fr.Action, fr.Bytes = "copied", n
		res.Copied++
		res.Bytes += n
	case "remove":
		name := filepath.Join(opt.Copy, filepath.FromSlash(p.c.Name))
		if err := os.Remove(name); err != nil {
			return fr, err
		}
		if err := atomicfile.SyncDir(filepath.Dir(name)); err != nil {
			return fr, err
		}
		fr.Action = "removed"
		res.Removed++
	default:
		fr.Action = "up to date"
		res.UpToDate++
	}
	return fr, nil
}

// copyFile copies src over dst atomically, checking the copy against want.
func copyFile(src, dst string, want Version, read *atomic.Int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	// Temporary copies of a killed commit are never anything but that.
	atomicfile.RemoveLeftovers(dst)
	out, err := atomicfile.Create(dst, fi.Mode().Perm())
	if err != nil {
		return 0, err
	}
	defer out.Abort()
	algs := algorithms([]Version{want})
	h := fixity.New(algs...)
	n, err := io.Copy(io.MultiWriter(out, h), progress.CountingReader(in, read))
	if err != nil {
		return 0, fmt.Errorf("copying %s to %s: %w", src, dst, err)
	}
	if got := (fileState{h}); !got.is(want) {
		return 0, fmt.Errorf("%s changed while it was copied: %s, not %s", src, got.like(want), want.Sum)
	}
	if err := out.Sync(); err != nil {
		return 0, err
	}
	// What was written, read back from the copy before it takes the name.
	h = fixity.New(algs...)
	if _, err := io.Copy(h, io.NewSectionReader(out.File, 0, n+1)); err != nil {
		return 0, err
	}
	if got := (fileState{h}); !got.is(want) {
		return 0, fmt.Errorf("%s reads back as %s, not %s: not put in place", dst, got.like(want), want.Sum)
	}
	return n, out.Commit()
}

// sum reads the file name and takes its sums with algs.
func sum(name string, read *atomic.Int64, algs []fixity.Algorithm) (fileState, error) {
	f, err := os.Open(name)
	if err != nil {
		return fileState{}, err
	}
	defer f.Close()
	h, err := fixity.HashReader(progress.CountingReader(f, read), algs...)
	if err != nil {
		return fileState{}, fmt.Errorf("%s: %w", name, err)
	}
	return fileState{h}, nil
}

// JSON writes the result as JSON.
func (r *Result) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
