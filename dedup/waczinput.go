package dedup

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/fixity"
	"warcdedup/internal/fspath"
	"warcdedup/rewritelog"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// A job on WACZ files named as such rather than a directory (issue 23):
// "warcdedup run x.wacz [y.wacz...]" (packages of one directory) or
// "warcdedup run coll.json" (a multi-WACZ JSON, resources as Browsertrix
// exports them and its indexer reads them). The collection is the
// directory of the packages (of the JSON), restricted to the packages
// named: its other files are neither read nor touched, names stay
// relative to that directory (WARC-Refers-To-Container names the
// package by its file name, as Browsertrix does), and the work directory
// is beside the operand (x.wacz.warcdedup, coll.json.warcdedup). Every
// package the JSON names must be a local .wacz file inside the JSON's
// directory, and where the JSON gives its hash or size, have them: a
// mismatch is an error before anything is read, and the package is
// never rewritten. After a run, the JSON's entries of the packages the
// job rewrote get their new hash and size (the JSON written anew and
// renamed over itself, its layout kept); undo brings them back to the
// restored packages'.

// multiWACZOriginal is the work directory's copy of the multi-WACZ JSON
// as it was before the job first changed it.
const multiWACZOriginal = "multi-wacz.json"

// packageInput is the packages a job was named.
type packageInput struct {
	source string // the operand: a .wacz file or the JSON, absolute
	json   string // the JSON's path; "" for packages named alone
	root   string // their directory, the collection
	// paths are the packages' paths (absolute), names their names in the
	// collection, in the same order.
	paths, names []string
	entries      []wacz.CollectionEntry // the JSON's, by package
	// prefix is "CRAWL/" for a crawl of an index, whose rewrite log names
	// its packages CRAWL/PATH (crawlwacz.go).
	prefix string
}

// isPackageOperand reports whether a collection operand that is a file is
// a package or a multi-WACZ JSON.
func isPackageOperand(path string) bool {
	return wacz.IsWACZ(path) || strings.HasSuffix(strings.ToLower(path), ".json")
}

// packageOperands reads the collection operands that are files: WACZ
// packages of one directory, or one multi-WACZ JSON alone.
func packageOperands(operands []string) (*packageInput, error) {
	in := &packageInput{}
	for _, op := range operands {
		abs, err := fspath.Abs(op)
		if err != nil {
			return nil, err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, err
		}
		switch {
		case fi.IsDir():
			return nil, fmt.Errorf("%s is a directory and %s a file: name either one directory of WARC, ARC and WACZ files, or WACZ files, or one multi-WACZ JSON", op, operands[0])
		case !isPackageOperand(abs):
			return nil, fmt.Errorf("%s is not a directory, a WACZ file nor a multi-WACZ JSON: a collection is a directory of WARC, ARC and WACZ files", op)
		case !wacz.IsWACZ(abs):
			if len(operands) > 1 {
				return nil, fmt.Errorf("%s: a multi-WACZ JSON is named alone (%d operands given)", op, len(operands))
			}
			return readMultiWACZ(abs)
		}
		if in.root == "" {
			in.source, in.root = abs, filepath.Dir(abs)
		} else if filepath.Dir(abs) != in.root {
			return nil, fmt.Errorf("%s is not in %s: WACZ files named together are in one directory (or name them in a multi-WACZ JSON)", op, in.root)
		}
		if slices.Contains(in.paths, abs) {
			return nil, fmt.Errorf("%s named twice", op)
		}
		in.paths = append(in.paths, abs)
		in.names = append(in.names, filepath.Base(abs))
	}
	return in, nil
}

// readMultiWACZ reads a multi-WACZ JSON and finds its packages: each a
// local .wacz file, inside the JSON's directory.
func readMultiWACZ(path string) (*packageInput, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	entries, err := wacz.ReadCollection(f, path)
	f.Close()
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: the multi-WACZ JSON names no package", path)
	}
	root := filepath.Dir(path)
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	in := &packageInput{source: path, json: path, root: root}
	for i, e := range entries {
		where := fmt.Sprintf("%s: resource %d (%s)", path, i+1, e.Path)
		local, ok := e.LocalPath(path)
		if !ok {
			return nil, fmt.Errorf("%s: not a local file: download the packages beside the JSON and name them by relative paths", where)
		}
		rel, err := filepath.Rel(root, local)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("%s: the path leaves the JSON's directory %s: the packages of a multi-WACZ JSON are beneath it", where, root)
		}
		if !wacz.IsWACZ(local) {
			return nil, fmt.Errorf("%s: not a WACZ file (.wacz)", where)
		}
		fi, err := os.Stat(local)
		if err != nil {
			return nil, fmt.Errorf("%s: the package is missing: %w", where, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", where)
		}
		// Through symbolic links too, the package stays beneath.
		if real, err := filepath.EvalSymlinks(local); err != nil || !crawlindex.Within(real, realRoot) {
			return nil, fmt.Errorf("%s: the path leaves the JSON's directory %s through a symbolic link", where, root)
		}
		if _, err := e.SHA256(); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		if slices.Contains(in.paths, local) {
			return nil, fmt.Errorf("%s: the package is named twice", where)
		}
		in.paths = append(in.paths, local)
		in.names = append(in.names, filepath.ToSlash(rel))
		in.entries = append(in.entries, e)
	}
	return in, nil
}

// selected is the set of the packages' paths.
func (in *packageInput) selected() map[string]bool {
	m := map[string]bool{}
	for _, p := range in.paths {
		m[p] = true
	}
	return m
}

// sortedNames are the packages' names, sorted: the job's parameter.
func (in *packageInput) sortedNames() []string {
	return slices.Sorted(slices.Values(in.names))
}

// packageFixity is a package's SHA-256 (hex) and size now: the hash a
// multi-WACZ JSON and a crawl index name it by.
func packageFixity(path string) (string, int64, error) {
	h, err := fixity.HashFile(path, fixity.SHA256)
	if err != nil {
		return "", 0, err
	}
	return h.Sum(fixity.SHA256), h.Size(), nil
}

// stale is a package whose hash or size is not the JSON's.
type stale struct {
	i         int
	sum, want string
	size      int64
}

// check compares each package with its JSON entry: a package the JSON
// gives another hash or size is an error naming it, unless the job
// rewrote it (the rewrite log names its members: a run or an undo
// stopped before it brought the JSON up to date), which is returned to
// be brought up to date.
func (in *packageInput) check(rewritten map[string]bool) ([]stale, error) {
	var out []stale
	for i, e := range in.entries {
		want, _ := e.SHA256()
		if want == "" && e.Size == 0 {
			continue
		}
		fi, err := os.Stat(in.paths[i])
		if err != nil {
			return nil, fmt.Errorf("%s: resource %d (%s): the package is missing: %w", in.json, i+1, e.Path, err)
		}
		sum, size := "", fi.Size()
		if want != "" {
			if sum, size, err = packageFixity(in.paths[i]); err != nil {
				return nil, fmt.Errorf("%s: resource %d (%s): %w", in.json, i+1, e.Path, err)
			}
		}
		if sum == want && (e.Size == 0 || size == e.Size) {
			continue
		}
		if !rewritten[in.prefix+in.names[i]] {
			return nil, fmt.Errorf("%s: resource %d (%s): the package is not the one the JSON names (%s): nothing read, nothing changed; if the package is right, correct the JSON",
				in.json, i+1, e.Path, mismatch(want, sum, e.Size, size))
		}
		if sum == "" {
			if sum, size, err = packageFixity(in.paths[i]); err != nil {
				return nil, err
			}
		}
		out = append(out, stale{i: i, sum: sum, want: want, size: size})
	}
	return out, nil
}

func mismatch(want, sum string, wantSize, size int64) string {
	if want != sum {
		return fmt.Sprintf("SHA-256 %s in the JSON, %s the file's", want, sum)
	}
	return fmt.Sprintf("%d bytes in the JSON, %d the file's", wantSize, size)
}

// rewrittenPackages are the packages (names in the collection) whose
// members the work directory's rewrite log names.
func rewrittenPackages(wd *workdir.Dir) (map[string]bool, error) {
	out := map[string]bool{}
	if _, err := os.Stat(wd.File(workdir.LogFile)); errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	err := scanLog(wd.File(workdir.LogFile), 0, func(fx rewritelog.Fixity) {
		if pkg, _, ok := wacz.SplitName(fx.File); ok {
			out[pkg] = true
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// bringUpToDate writes the JSON anew with the hash and size of each stale
// package, keeping a copy of the JSON as it was first in the work
// directory. None stale: the JSON is left as it is.
func (in *packageInput) bringUpToDate(wd *workdir.Dir, st []stale) error {
	if in.json == "" || len(st) == 0 {
		return nil
	}
	b, err := os.ReadFile(in.json)
	if err != nil {
		return err
	}
	if _, err := os.Stat(wd.File(multiWACZOriginal)); errors.Is(err, os.ErrNotExist) {
		if err := writeAtomic(wd.File(multiWACZOriginal), b); err != nil {
			return err
		}
	}
	updates := map[string]wacz.CollectionUpdate{}
	for _, s := range st {
		sum, _ := hex.DecodeString(s.sum)
		updates[in.entries[s.i].Path] = wacz.CollectionUpdate{SHA256: sum, Size: s.size}
	}
	nb, err := wacz.UpdateCollection(b, updates)
	if err != nil {
		return fmt.Errorf("%s: %w", in.json, err)
	}
	if bytes.Equal(nb, b) {
		return nil
	}
	return writeAtomic(in.json, nb)
}

// writeAtomic writes a file anew beside itself and renames it over it.
func writeAtomic(path string, b []byte) error {
	perm := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	f, err := atomicfile.Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// syncMultiWACZ brings the JSON up to date with the packages the job
// rewrote, as they are now; a package changed otherwise is an error
// (check).
func syncMultiWACZ(wd *workdir.Dir, in *packageInput) error {
	if in == nil || in.json == "" {
		return nil
	}
	rewritten, err := rewrittenPackages(wd)
	if err != nil {
		return err
	}
	st, err := in.check(rewritten)
	if err != nil {
		return err
	}
	return in.bringUpToDate(wd, st)
}

// packageInputOf is the packages of a job's parameters, read again.
func packageInputOf(p Params) (*packageInput, error) {
	if p.Source == "" {
		return nil, nil
	}
	if !wacz.IsWACZ(p.Source) {
		return readMultiWACZ(p.Source)
	}
	in := &packageInput{source: p.Source, root: p.Collections[0]}
	for _, n := range p.Packages {
		in.paths = append(in.paths, filepath.Join(in.root, filepath.FromSlash(n)))
		in.names = append(in.names, n)
	}
	return in, nil
}

// checkMultiWACZ compares the packages with the multi-WACZ JSON the job
// was named before anything reads them (check), and brings the JSON up
// to date where a run or an undo of this job stopped before it did.
func (r *run) checkMultiWACZ() error {
	in := r.opt.input
	if in == nil || in.json == "" {
		return nil
	}
	rewritten, err := rewrittenPackages(r.wd)
	if err != nil {
		return err
	}
	st, err := in.check(rewritten)
	if err != nil || len(st) == 0 || r.opt.DryRun {
		return err
	}
	r.show.Note("warcdedup: %s: %d packages this job rewrote brought up to date in it (a run or undo stopped before it did)", in.json, len(st))
	return in.bringUpToDate(r.wd, st)
}

// expand replaces the multi-WACZ JSON among the paths an undo is named by
// its packages.
func (in *packageInput) expand(paths []string) []string {
	var out []string
	for _, p := range paths {
		abs, err := fspath.Abs(p)
		if err == nil && in.json != "" && abs == in.json {
			out = append(out, in.paths...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// outsideRequirers refuses a job on packages named (not a directory)
// that would rewrite a package (rewrites: their paths) which a package of
// the directory outside the job requires by SHA-256 or size: the job may
// not touch that package, and its entry would go stale (a job on the
// directory, or one naming both, brings it up to date:
// stage.PackageRewrite.RefreshRequirers). Those of refreshed (committed
// crawls' packages, which a crawl's run brings up to date: crawlwacz.go)
// are not refused. Nothing is rewritten yet.
func (in *packageInput) outsideRequirers(rewrites []string, refreshed map[string]bool) error {
	if in == nil || len(rewrites) == 0 {
		return nil
	}
	names := map[string]string{}
	for _, p := range rewrites {
		names[filepath.Base(p)] = p
	}
	var found []string
	err := in.eachOutside(func(path string, reqs []wacz.Requirement) {
		if refreshed[path] {
			return
		}
		for _, r := range reqs {
			if _, ok := names[r.Filename]; ok && (r.Hash != "" || r.Size >= 0) {
				found = append(found, fmt.Sprintf("%s requires %s", path, r.Filename))
			}
		}
	})
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("%s: the job would rewrite packages that packages outside it require by their SHA-256 and size (%s): their entries would go stale, and the job may not touch them; nothing was rewritten: run on the directory, or name those packages too, so that the run brings their entries up to date",
			in.source, strings.Join(stage.First(found, 5), "; "))
	}
	return nil
}

// eachOutside calls fn with each package of the directory outside the
// job (not named, not hidden, not in a work directory) that opens, and
// its requires entries.
func (in *packageInput) eachOutside(fn func(path string, reqs []wacz.Requirement)) error {
	mine := in.selected()
	return filepath.WalkDir(in.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != in.root && (strings.HasSuffix(d.Name(), ".warcdedup") || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !wacz.IsWACZ(path) || mine[path] || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		p, err := wacz.Open(path)
		if err != nil {
			return nil // not a package the job's packages can be required by
		}
		reqs, _ := p.Datapackage.Requires()
		p.Close()
		fn(path, reqs)
		return nil
	})
}

// otherJobsStaged refuses a job on a whole directory when a member staged
// beside one of its packages, which its own rewrite log does not name,
// is the logged version of another, unfinished job's (a job on packages
// named, or a multi-WACZ JSON, whose work directory, NAME.warcdedup, is
// in the package's directory or one above it within the roots): the
// job would remove that staged member as stale, or rewrite the package
// without it, and the other job's log would then describe a package
// that is not there. Nothing is changed; that job is to be finished (or
// undone) first, with its work directory.
//
// Each other job's log is read in one pass keeping the versions of the
// staged members alone (loggedVersions: memory does not grow with the
// logs).
func otherJobsStaged(wd *workdir.Dir, roots []string, pending []stage.Pending, own func(string) (rewritelog.Fixity, bool)) error {
	// The staged members each other work directory's log may name, by
	// the names it would give them.
	type candidate struct {
		p    stage.Pending
		name string
	}
	byLog := map[string][]candidate{}
	var others []string
	for _, p := range pending {
		if _, ok := own(wacz.JoinName(p.Package, p.Member)); ok {
			continue
		}
		for dir := filepath.Dir(p.Path); ; dir = filepath.Dir(dir) {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if !e.IsDir() || !strings.HasSuffix(e.Name(), ".warcdedup") {
					continue
				}
				other := filepath.Join(dir, e.Name())
				if same(other, wd.Path) {
					continue
				}
				rel, err := filepath.Rel(dir, p.Path)
				if err != nil {
					continue
				}
				if byLog[other] == nil {
					others = append(others, other)
				}
				byLog[other] = append(byLog[other], candidate{p, wacz.JoinName(filepath.ToSlash(rel), p.Member)})
			}
			if inRoots(dir, roots) == dir || dir == filepath.Dir(dir) {
				break
			}
		}
	}
	var found []string
	for _, other := range others {
		want := map[string]bool{}
		for _, c := range byLog[other] {
			want[c.name] = true
		}
		versions, err := loggedVersions(filepath.Join(other, workdir.LogFile), want)
		if err != nil {
			continue // no log that can be read: no job's version
		}
		for _, c := range byLog[other] {
			// That job's logged version, not a stale copy of this job's
			// own (staged before its rewrite logged anything).
			fx, ok := versions[c.name]
			if !ok {
				continue
			}
			if h, err := fixity.HashFile(c.p.Staged, fixity.Like(fx.NewSum)...); err == nil && h.Is(fx.NewSize, fx.NewSum) {
				found = append(found, fmt.Sprintf("%s (the job of %s)", c.p.Staged, other))
			}
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("members staged beside packages of this collection are the logged versions of another, unfinished job's rewrite or undo: %s; this job would remove them or rewrite their packages without them; nothing was changed: finish that job first (warcdedup run, or warcdedup undo, with its work directory), then run this one",
			strings.Join(stage.First(found, 5), "; "))
	}
	return nil
}

// same reports whether two paths name the same directory.
func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// inRoots is the root among roots that dir is, "" if none.
func inRoots(dir string, roots []string) string {
	for _, r := range roots {
		if same(dir, r) {
			return dir
		}
	}
	return ""
}
