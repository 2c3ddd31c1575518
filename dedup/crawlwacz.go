package dedup

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/internal/gzfile"
	"warcdedup/manifest"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/workdir"
)

// A crawl of WACZ packages with a crawl index (run --index, issue 23): a
// directory of WACZ files (beside WARC files or not), WACZ files named
// (--crawl), or a multi-WACZ JSON (the crawl its resources' crawlId, or
// --crawl). The run works on the packages' WARC members, named
// CRAWL/PATH.wacz#archive/NAME, as any run does (dedup/wacz.go); what
// the index keeps of the crawl is its packages, as warcdedup index
// import of WACZ files keeps them: the crawl's files are the packages
// (size, SHA-256 and stamp of each whole package), and each original is
// named CRAWL/PATH.wacz at its offset in the package (the member's data
// offset plus the record's: the members are stored). A later crawl so
// reads a committed crawl's originals by range from its packages, and
// its revisits of them carry WARC-Refers-To-Container: file://NAME.wacz,
// and its packages list those packages in relation.requires with their
// SHA-256, size and crawl (stage.PackageRewrite.External): committed
// crawls are never rewritten, so that entry stays right.

// usePackages takes the packages a crawl was named: only these are the
// crawl's, and the crawl is named by --crawl, or by the crawlId the
// JSON gives every one of them.
func (c *crawlMode) usePackages(in *packageInput) error {
	c.packages = in.selected()
	if c.name != "" {
		return nil
	}
	ids := map[string]bool{}
	for _, e := range in.entries {
		ids[e.CrawlID] = true
	}
	switch {
	case in.json == "":
		return fmt.Errorf("%s: name the crawl of WACZ files (--crawl)", in.source)
	case len(ids) != 1 || ids[""]:
		return fmt.Errorf("%s: its resources are not all of one crawl (crawlId %q): name the crawl (--crawl), or run each crawl's packages apart", in.json, slices.Sorted(maps.Keys(ids)))
	}
	for id := range ids {
		c.name = id
	}
	return nil
}

// sharesPackages refuses a crawl named as packages when one of them is a
// file of the committed crawl k (crawls of packages may share a
// directory, never a package).
func (c *crawlMode) sharesPackages(ix *crawlindex.Index, k *crawlindex.Crawl) error {
	if !crawlindex.Within(c.root, k.Location) && !crawlindex.Within(k.Location, c.root) {
		return nil
	}
	files, err := ix.Files(k.Name)
	if err != nil {
		return fmt.Errorf("crawl %s, which shares the directory %s: %w", k.Name, c.root, err)
	}
	for _, f := range files {
		p := filepath.Join(k.Location, filepath.FromSlash(f.Name))
		if c.packages[p] {
			return fmt.Errorf("%s is a file of the committed crawl %s: committed crawls are never rewritten", p, k.Name)
		}
	}
	return nil
}

// committedPackage finds a committed crawl's WACZ package by its name
// in the manifests (CRAWL/PATH.wacz, escaped or not): its path and its
// crawl. Originals of crawls imported from WACZ files are named so too.
func (c *crawlMode) committedPackage(name string) (path, crawl string, ok bool) {
	crawl = crawlindex.CrawlOf(name)
	if !c.committed[crawl] || crawl == c.name || !wacz.IsWACZ(name) {
		return "", "", false
	}
	loc, ok := c.index.Prefixes()[crawl]
	if !ok {
		return "", "", false
	}
	return filepath.Join(loc, filepath.FromSlash(strings.TrimPrefix(name, crawl+"/"))), crawl, true
}

// committedByFile is stage.PackageRewrite.CommittedPackage for a crawl:
// the one package of a committed crawl with that file name (none when no
// crawl, or more than one, has one).
func (c *crawlMode) committedByFile(filename string) (stage.ExternalPackage, bool) {
	var found []stage.ExternalPackage
	for _, crawl := range slices.Sorted(maps.Keys(c.committed)) {
		if !c.committed[crawl] || crawl == c.name {
			continue
		}
		files, err := c.index.Files(crawl)
		if err != nil {
			continue
		}
		for _, f := range files {
			if path.Base(f.Name) != filename || !wacz.IsWACZ(f.Name) {
				continue
			}
			if p, _, ok := c.committedPackage(crawl + "/" + f.Name); ok {
				found = append(found, stage.ExternalPackage{Path: p, CrawlID: crawl, SHA256: f.SHA256, Size: f.Size, Stamp: f.Stamp})
			}
		}
	}
	if len(found) != 1 {
		return stage.ExternalPackage{}, false
	}
	return found[0], true
}

// packageAfter writes the crawl's after manifest with each WACZ member's
// lines named by their package, at their offset in it (the members as
// the last listing found them: after the rewrite, in the packages as
// they now are), for the commit; the name of the manifest to commit.
// A crawl without packages commits its after manifest as it is.
func (r *run) packageAfter() (string, error) {
	after := r.wd.File(workdir.AfterFile)
	members := r.coll.wacz.members
	if len(members) == 0 {
		return after, nil
	}
	in, err := gzfile.Open(after)
	if err != nil {
		return "", err
	}
	defer in.Close()
	name := r.wd.File("after-packages.manifest")
	out, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return "", err
	}
	defer out.Abort()
	w := manifest.NewWriter(out)
	mr := manifest.NewReader(bufio.NewReaderSize(in, 256<<10), after)
	for {
		l, err := mr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "", err
		}
		file, err := manifest.UnescapeFile(l.File)
		if err != nil {
			return "", err
		}
		if m, ok := members[file]; ok {
			if l.Offset+l.Length > m.Size {
				return "", fmt.Errorf("%s: offset %d: a %d-byte record past the member's end (%d bytes)", file, l.Offset, l.Length, m.Size)
			}
			l.File = manifest.EscapeFile(m.Package)
			l.Offset += m.Offset
		}
		if err := w.Write(&l); err != nil {
			return "", err
		}
	}
	if err := w.Flush(); err != nil {
		return "", err
	}
	if err := out.CommitRenamed(); err != nil {
		return "", err
	}
	return name, nil
}

// packageFiles replaces the members among the crawl's files as committed
// by their packages, each once, with its size, SHA-256 (of the whole
// package: as the rewrite wrote it, else read here) and stamp as it now
// is.
func (r *run) packageFiles(files []crawlindex.FileInfo) ([]crawlindex.FileInfo, error) {
	var out []crawlindex.FileInfo
	done := map[string]bool{}
	for _, f := range files {
		m, ok := r.coll.wacz.members[r.crawl.name+"/"+f.Name]
		if !ok {
			out = append(out, f)
			continue
		}
		if done[m.Package] {
			continue
		}
		done[m.Package] = true
		stamp, _ := fileStamp(m.Path)
		fi, err := os.Stat(m.Path)
		if err != nil {
			return nil, err
		}
		sum, size := "", fi.Size()
		if s, ok := r.coll.wacz.sums[m.Path]; ok && stamp != "" && s.stamp == stamp {
			sum = s.sha256 // taken as the rewrite wrote it
		} else if sum, size, err = packageFixity(m.Path); err != nil {
			return nil, err
		}
		f := crawlindex.FileInfo{Name: strings.TrimPrefix(m.Package, r.crawl.name+"/"), Size: size, SHA256: sum, Stamp: stamp}
		f.Requires, f.RequiresKnown = recordedRequires(m.Path, stamp)
		out = append(out, f)
	}
	return out, nil
}

// recordedRequires are the file names the package at path requires by
// SHA-256 or size, as crawlindex.FileInfo.Requires holds them, and
// whether they are known: read from the version of the stamp the index
// records (stamp), so that a later run need not open a package of that
// stamp to know what it requires (committedRequirers).
func recordedRequires(path, stamp string) (string, bool) {
	if stamp == "" {
		return "", false
	}
	byHash, _, err := requiresByHash(path)
	if now, _ := fileStamp(path); err != nil || now != stamp {
		return "", false
	}
	return crawlindex.RequiresOf(byHash)
}

// currentFile is a file of the crawl as it is now: its path and stamp
// ("" if it cannot be read).
type currentFile struct {
	Path, Stamp string
}

// currentFiles are what begin compares with the crawl's files as
// committed: each file, a WACZ member's package, by the name the index
// gives it.
func (r *run) currentFiles() map[string]currentFile {
	now := map[string]currentFile{}
	for _, in := range r.inputs {
		name := in.Name
		if m, ok := r.coll.wacz.members[in.Name]; ok {
			name = m.Package
		}
		s, _ := fileStamp(in.Path)
		now[name] = currentFile{Path: in.Path, Stamp: s}
	}
	return now
}

// externalPackages is stage.PackageRewrite.External for a crawl: the
// committed crawls' packages, none without an index.
func (r *run) externalPackages() func(name string) (stage.ExternalPackage, bool) {
	if r.crawl == nil {
		return nil
	}
	var mu sync.Mutex
	files := map[string]map[string]crawlindex.FileInfo{} // crawl -> its files as committed, by name
	return func(name string) (stage.ExternalPackage, bool) {
		path, crawl, ok := r.crawl.committedPackage(name)
		if !ok {
			return stage.ExternalPackage{}, false
		}
		e := stage.ExternalPackage{Path: path, CrawlID: crawl}
		mu.Lock()
		defer mu.Unlock()
		of, loaded := files[crawl]
		if !loaded {
			of = map[string]crawlindex.FileInfo{}
			if list, err := r.crawl.index.Files(crawl); err == nil { // else read whole when needed
				for _, f := range list {
					of[f.Name] = f
				}
			}
			files[crawl] = of
		}
		if f, ok := of[strings.TrimPrefix(name, crawl+"/")]; ok {
			e.SHA256, e.Size, e.Stamp = f.SHA256, f.Size, f.Stamp
		}
		return e, true
	}
}

// refuseWACZDependent refuses index remove --restore of crawl gone while
// the dependent crawl d's files include WACZ packages: re-pointing or
// restoring revisits inside packages (a rebuild of each package) is not
// done yet, and a package rewritten as a WARC file would be lost.
func refuseWACZDependent(ix *crawlindex.Index, d *crawlindex.Crawl, gone string) error {
	files, err := ix.Files(d.Name)
	if err != nil {
		return err
	}
	for _, f := range files {
		if wacz.IsWACZ(f.Name) {
			return fmt.Errorf("crawl %s, which needs crawl %s, is a crawl of WACZ packages (%s): index remove --restore does not rewrite packages; nothing was changed: take crawl %s out first (warcdedup index remove, then warcdedup undo of it), or keep crawl %s",
				d.Name, gone, f.Name, d.Name, gone)
		}
	}
	return nil
}

// Committed requirers. A package of a committed crawl may require (by
// SHA-256 and size) a package of the crawl that this run rewrites: the
// crawl was run, undone and is run again after a later crawl required
// it, or Browsertrix deduplicated that crawl against this one at crawl
// time. Left as it is, its entry would name a package that is no longer
// there, which breaks replay (Browsertrix crawler #1004). The run
// brings it up to date in its rewrite stage, as an undo does
// (stage.PackageRewrite.Requirers: written anew, every member copied
// byte for byte, datapackage.json and its digest file alone changed,
// checked, renamed over it, its WARC members where they were, which
// KeepPlaces enforces), and its commit records it again in the index
// with the crawl (crawlindex.Change.Refile), in one generation. Before
// anything is rewritten, each such package is noted in the work
// directory (crawlRefileNote, the form and file the undo reads) with
// where its WARC members are; a run stopped after writing one anew
// finds the note and records it at its commit, an undo at its start.
// A package that requires one of the crawl's and cannot be written anew
// without moving its records (its metadata before a WARC member), is
// signed (a committed crawl's signature is not the run's to remove) or
// cannot be read refuses the run before anything is rewritten.

// crawlRefileNote is the work directory's crawlindex.RefileNote of the
// committed crawls' packages the run may write anew (the undo's
// wacz-refile.json: an undo of a stopped run records them too).
const crawlRefileNote = "wacz-refile.json"

// committedRequirers finds the committed crawls' packages that require
// one of those pr may rewrite, or may come to require one written anew
// (each that requires any package by hash), notes them and makes them
// pr's Requirers, their places kept. It refuses, before anything is
// rewritten, a package requiring one of the crawl's that cannot be
// brought up to date.
func (r *run) committedRequirers(pr *stage.PackageRewrite) error {
	rewrites := pr.StagedPackages()
	if r.crawl == nil || r.opt.DryRun || len(rewrites) == 0 {
		return nil
	}
	s := &requirerScan{r: r, note: r.wd.File(crawlRefileNote), rewrites: rewrites}
	if err := s.readNote(); err != nil {
		return err
	}
	ix, err := crawlindex.Open(r.crawl.index.Dir)
	if errors.Is(err, crawlindex.ErrNoIndex) {
		return nil // no crawl committed yet
	} else if err != nil {
		return err
	}
	cands, err := s.candidates(ix)
	if err != nil {
		return err
	}
	names := map[string]bool{}
	for _, p := range rewrites {
		names[filepath.Base(p)] = true
	}
	changing := changingPackages(names, cands, s.own())
	for _, c := range cands {
		s.decide(c, changing[c.path])
	}
	s.keepNotedLeft()
	if len(s.refused) > 0 {
		return fmt.Errorf("crawl %s: packages of committed crawls require by SHA-256 and size packages this run would rewrite, and their entries could not be brought up to date (%s); nothing was rewritten: warcdedup index verify checks the committed crawls",
			r.crawl.name, strings.Join(stage.First(s.refused, 5), "; "))
	}
	if len(s.notes) == 0 {
		// A stopped attempt's note, of packages gone since, would be
		// read again by the check after the rewrite (and the commit).
		if err := os.Remove(s.note); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := crawlindex.WriteRefileNote(s.note, s.notes); err != nil {
		return err
	}
	pr.KeepPlaces = map[string]bool{}
	for _, n := range s.notes {
		pr.Requirers = append(pr.Requirers, n.Path)
		pr.KeepPlaces[n.Path] = true
	}
	return nil
}

// requirerScan is committedRequirers at work: the committed packages
// that may require one the run rewrites, each noted (to be brought up to
// date) or refused.
type requirerScan struct {
	r        *run
	note     string   // the work directory's crawlRefileNote
	rewrites []string // the packages the run rewrites
	// noted are the packages a stopped attempt noted (the places before
	// it wrote any anew), by path, until each is decided.
	noted   map[string]crawlindex.RefileEntry
	notes   []crawlindex.RefileEntry
	refused []string
}

// readNote reads what a stopped attempt noted, if one did.
func (s *requirerScan) readNote() error {
	old, err := crawlindex.ReadRefileNote(s.note)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	s.noted = map[string]crawlindex.RefileEntry{}
	for _, n := range old {
		s.noted[n.Path] = n
	}
	return nil
}

// candidates reads every committed package that requires any package by
// hash first: which of them change is a closure (one written anew makes
// those requiring it change in turn, RefreshRequirers), and each that
// changes must be brought up to date, or the run refused, before
// anything is rewritten. A package the index records as requiring none,
// still the version it recorded, is not opened.
func (s *requirerScan) candidates(ix *crawlindex.Index) ([]committedCandidate, error) {
	var cands []committedCandidate
	for _, k := range ix.Registry.Crawls {
		if k.Name == s.r.crawl.name {
			continue
		}
		if strings.Contains(k.Location, "://") {
			s.r.show.Print("warcdedup: warning: crawl %s is served over HTTP (%s): its packages were not checked for requires entries naming the packages this run rewrites", k.Name, k.Location)
			continue
		}
		files, err := ix.Files(k.Name)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			if c, ok := s.candidate(k, f); ok {
				cands = append(cands, c)
			}
		}
	}
	return cands, nil
}

// candidate reads the committed file f of crawl k, if it is a package
// that may require one the run rewrites or was noted.
func (s *requirerScan) candidate(k *crawlindex.Crawl, f crawlindex.FileInfo) (committedCandidate, bool) {
	if !wacz.IsWACZ(f.Name) {
		return committedCandidate{}, false
	}
	path := filepath.Join(k.Location, filepath.FromSlash(f.Name))
	n, noted := s.noted[path]
	if !noted && requiresNoneAsRecorded(path, f) {
		return committedCandidate{}, false // never stale: not opened (a stat, where reading it could mean a recall from tape)
	}
	byHash, signed, err := requiresByHash(path)
	if err != nil {
		if noted { // being written anew by a stopped attempt
			return committedCandidate{crawl: k.Name, name: f.Name, path: path, noted: &n, recorded: f, unread: err}, true
		}
		s.refused = append(s.refused, fmt.Sprintf("%s (crawl %s) cannot be read, so whether it requires a package the run rewrites is not known: %v", path, k.Name, err))
		return committedCandidate{}, false
	}
	c := committedCandidate{crawl: k.Name, name: f.Name, path: path, byHash: byHash, signed: signed, recorded: f}
	if noted {
		c.noted = &n
	}
	return c, len(byHash) > 0 || c.noted != nil
}

// own are the crawl's own packages not staged that require any by hash:
// they change too when they require one that changes
// (RefreshRequirers), and carry the closure on.
func (s *requirerScan) own() []committedCandidate {
	var own []committedCandidate
	staged := map[string]bool{}
	for _, p := range s.rewrites {
		staged[p] = true
	}
	for _, m := range s.r.coll.wacz.members {
		if staged[m.Path] {
			continue
		}
		staged[m.Path] = true
		if byHash, _, err := requiresByHash(m.Path); err == nil && len(byHash) > 0 {
			own = append(own, committedCandidate{path: m.Path, byHash: byHash})
		}
	}
	return own
}

// decide notes the candidate c, or refuses the run for it; direct are
// the names it requires that change.
func (s *requirerScan) decide(c committedCandidate, direct []string) {
	if len(direct) > 0 && c.signed {
		s.refuse("%s (crawl %s) requires %s and is signed: writing its requires entries anew would invalidate its signature", c.path, c.crawl, strings.Join(direct, ", "))
		return
	}
	why := crawlindex.ChangedSinceCommit(c.path, c.recorded)
	if c.noted != nil {
		delete(s.noted, c.path)
		// Noted by a stopped attempt, as it was when that attempt found
		// it unchanged since its crawl's commit. Changed since, it is
		// taken only as that attempt writes it anew, its records where
		// the note has them (as the commit records it again:
		// crawlindex.Refiles); unchanged, it is noted anew below, as any.
		if why != "" {
			if err := c.noted.Unmoved(); err != nil {
				s.refuse("%s (crawl %s), noted by a stopped attempt of this run, %s, and %v: written anew and recorded again, the index would take its WARC members as where its originals are; warcdedup index verify checks it", c.path, c.crawl, why, err)
				return
			}
			s.notes = append(s.notes, *c.noted)
			return
		}
	}
	if c.unread != nil {
		// Noted, unchanged since its commit, and unreadable now (a file
		// recalled from tape, too many files open): it may require a
		// package the run rewrites, and would be left naming its old
		// hash.
		s.refuse("%s (crawl %s) cannot be read, so whether it requires a package the run rewrites is not known: %v", c.path, c.crawl, c.unread)
		return
	}
	if why != "" {
		// Not noted either way: the commit records again only what the
		// index recorded, written anew here.
		if len(direct) > 0 {
			s.refuse("%s (crawl %s) requires %s and %s: written anew and recorded again, the index would take its WARC members as where its originals are; warcdedup index verify checks it", c.path, c.crawl, strings.Join(direct, ", "), why)
		}
		return
	}
	e, err := crawlindex.NotePackage(c.crawl, c.name, c.path)
	if err != nil {
		if len(direct) > 0 {
			s.refuse("%s (crawl %s) requires %s, which the run rewrites or brings up to date, and cannot be brought up to date: %v", c.path, c.crawl, strings.Join(direct, ", "), err)
		}
		return
	}
	s.notes = append(s.notes, e)
}

func (s *requirerScan) refuse(format string, args ...any) {
	s.refused = append(s.refused, fmt.Sprintf(format, args...))
}

// keepNotedLeft keeps the noted packages no longer listed, for the
// commit to pass over, but those gone: gone with their crawl out of the
// index, there is nothing to bring up to date or record again, and kept,
// each would be a requirer the rewrite cannot open, stopping this run and
// every rerun after the crawl's packages were rewritten.
func (s *requirerScan) keepNotedLeft() {
	for _, n := range s.noted {
		if _, err := os.Stat(n.Path); errors.Is(err, os.ErrNotExist) {
			continue
		}
		s.notes = append(s.notes, n)
	}
}

// requiresNoneAsRecorded reports whether the committed package at path,
// recorded as f, is known to require no package by SHA-256 or size: the
// index recorded its requires entries (none) with the version it still
// is (its stamp and size).
func requiresNoneAsRecorded(path string, f crawlindex.FileInfo) bool {
	if !f.RequiresKnown || f.Requires != "" || f.Stamp == "" {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Size() == f.Size && crawlindex.Stamp(fi) == f.Stamp
}

// committedCandidate is a package that may change with the run: a
// committed crawl's (crawl, name, path), or the crawl's own not staged
// (crawl ""): the file names it requires by SHA-256 or size, whether it
// is signed, and its note from a stopped attempt, if any.
type committedCandidate struct {
	crawl, name, path string
	byHash            []string
	signed            bool
	noted             *crawlindex.RefileEntry
	recorded          crawlindex.FileInfo // as its crawl's commit recorded it
	// unread is why the package could not be read (noted by a stopped
	// attempt, it is a candidate all the same): what it requires is not
	// known.
	unread error
}

// changingPackages finds, from the file names of the packages the run
// rewrites (names), which of cands change with them: those requiring by
// hash a package that changes, and so on (through own, the crawl's own
// packages, too), as RefreshRequirers brings them up to date. It
// returns, by path, the names each changing candidate requires that
// change. File names stand for packages (as requires entries name
// them): a name shared by two packages counts as changing for both.
func changingPackages(names map[string]bool, cands, own []committedCandidate) map[string][]string {
	set := maps.Clone(names)
	out := map[string][]string{}
	all := append(slices.Clone(cands), own...)
	marked := make([]bool, len(all))
	for grew := true; grew; {
		grew = false
		for i, c := range all {
			if marked[i] {
				continue
			}
			var direct []string
			for _, n := range c.byHash {
				if set[n] {
					direct = append(direct, n)
				}
			}
			if len(direct) == 0 {
				continue
			}
			marked[i], grew = true, true
			set[filepath.Base(c.path)] = true
			if i < len(cands) {
				out[c.path] = direct
			}
		}
	}
	return out
}

// requiresByHash reads the requires entries of the package at path: the
// file names it requires by SHA-256 or size, and whether it is signed.
func requiresByHash(path string) (byHash []string, signed bool, err error) {
	p, err := wacz.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer p.Close()
	byHash, err = p.Datapackage.RequiredByHash()
	if err != nil {
		return nil, false, err
	}
	return byHash, p.Signed(), nil
}

// checkCommittedRequirers checks, after the packages were written, that
// every noted committed package names each of the crawl's packages it
// requires with its SHA-256 and size now; what does not is returned,
// for the run's report (not up to date: exit status 1).
func (r *run) checkCommittedRequirers() ([]string, error) {
	if r.crawl == nil || r.opt.DryRun {
		return nil, nil
	}
	notes, err := crawlindex.ReadRefileNote(r.wd.File(crawlRefileNote))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	w := r.coll.wacz
	mine := map[string]string{} // file name -> the crawl's package of that name
	for _, m := range w.members {
		mine[filepath.Base(m.Path)] = m.Path
	}
	now := map[string]wacz.Requirement{}
	var stale []string
	for _, n := range notes {
		p, err := wacz.Open(n.Path)
		if err != nil {
			return nil, err
		}
		reqs, err := p.Datapackage.Requires()
		p.Close()
		if err != nil {
			return nil, err
		}
		for _, q := range reqs {
			path, ok := mine[q.Filename]
			if !ok || q.Hash == "" && q.Size < 0 {
				continue
			}
			cur, ok := now[path]
			if !ok {
				if cur, err = w.requirementOf(path); err != nil {
					return nil, err
				}
				now[path] = cur
			}
			if q.Hash != "" && q.Hash != cur.Hash || q.Size >= 0 && q.Size != cur.Size {
				stale = append(stale, fmt.Sprintf("%s (crawl %s) requires %s by SHA-256 %s, %d bytes; it has %s, %d bytes", n.Path, n.Crawl, q.Filename, q.Hash, q.Size, cur.Hash, cur.Size))
			}
		}
	}
	return stale, nil
}

// requirementOf is the package at path as a requires entry names it:
// its SHA-256 as the rewrite took it while the package is that version,
// else read.
func (w *waczPackages) requirementOf(path string) (wacz.Requirement, error) {
	stamp, _ := fileStamp(path)
	if s, ok := w.sums[path]; ok && stamp != "" && s.stamp == stamp {
		if fi, err := os.Stat(path); err == nil {
			raw, _ := hex.DecodeString(s.sha256)
			return wacz.RequirementOf(path, raw, fi.Size(), ""), nil
		}
	}
	sum, size, err := packageFixity(path)
	if err != nil {
		return wacz.Requirement{}, err
	}
	raw, _ := hex.DecodeString(sum)
	return wacz.RequirementOf(path, raw, size, ""), nil
}

// committedRefiles are the noted committed packages written anew, as
// they are now, for the crawl's commit (crawlindex.Change.Refile); an
// error names any whose records moved.
func (r *run) committedRefiles() (map[string][]crawlindex.FileInfo, error) {
	notes, err := crawlindex.ReadRefileNote(r.wd.File(crawlRefileNote))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	refile, problems, gone, err := crawlindex.Refiles(r.crawl.index, notes)
	if err != nil {
		return nil, err
	}
	for _, g := range gone {
		r.show.Note("warcdedup: warning: %s", g)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("not committed: %s", strings.Join(stage.First(problems, 5), "; "))
	}
	if err := r.refileSources(refile); err != nil {
		return nil, err
	}
	return refile, nil
}

// refileSources brings up to date, before the commit records them, the
// hash and size of the packages refile names in their crawls'
// multi-WACZ JSON (crawlindex.Index.UpdateSources); where the index
// records none, the output says so.
func (r *run) refileSources(refile map[string][]crawlindex.FileInfo) error {
	notes, err := r.crawl.index.UpdateSources(refile)
	for _, n := range notes {
		r.show.Note("warcdedup: note: %s", n)
	}
	return err
}
