package stage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"warcdedup/atomicfile"
	"warcdedup/crawlindex"
	"warcdedup/fixity"
	"warcdedup/inplace"
	"warcdedup/internal/gzfile"
	"warcdedup/internal/openfiles"
	"warcdedup/manifest"
	"warcdedup/originals"
	"warcdedup/wacz"
)

// PackageMember is a WARC member of a WACZ package of the collection: the
// package file (Path, named Package in the collection), the member's name
// in it, and where its stored bytes are.
type PackageMember struct {
	Path, Package, Member string
	Offset, Size          int64
}

// PackageOpener reads the records of WACZ members ("x.wacz#archive/..."
// names) by range from their package, or from the member's staged copy
// while the rewrite rewrites it; every other record through Next.
type PackageOpener struct {
	Next    originals.Opener
	Members map[string]PackageMember // by name (unescaped)
	// Staged are the staged copies of the members the rewrite rewrites
	// (PackageRewrite.Locations): their current version until their
	// package is rebuilt.
	Staged map[string]string
	// InPlace: the members are rewritten where they lie in their packages
	// (PackageRewrite.Sections), and a staged name holds a member's new
	// version only once the rewrite put it there: until then (no file
	// there) the member is read in its package. Both are seen under the
	// member's lock (originals), which its replacement takes for writing,
	// as the log's moves of its offsets are.
	InPlace bool
}

// Open returns length bytes at offset of the file field names (manifest
// field 1).
func (o *PackageOpener) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	return o.open(ctx, field, offset, length, openAlone{next: o.Next})
}

// memberFiles opens the files records are read from: each alone
// (openAlone), or kept open between reads (packageFiles).
type memberFiles interface {
	// file opens the file at path, for reading and closing.
	file(path string) (io.ReaderAt, io.Closer, error)
	// nextRecord opens a record of a file that is no member.
	nextRecord(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error)
	// inPackage and readInPackage are a member's place (InPlace) as
	// last seen: no new version at its staged name, read in its package
	// until it is dropped.
	inPackage(name string) bool
	readInPackage(name string)
}

// open is Open, through files.
func (o *PackageOpener) open(ctx context.Context, field string, offset, length int64, files memberFiles) (io.ReadCloser, error) {
	name, err := manifest.UnescapeFile(field)
	if err != nil {
		return nil, err
	}
	m, ok := o.Members[name]
	if !ok {
		return files.nextRecord(ctx, field, offset, length)
	}
	if p, ok := o.Staged[name]; ok && !files.inPackage(name) {
		r, c, err := files.file(p)
		switch {
		case err == nil:
			return &memberRecord{c: c, r: io.NewSectionReader(r, offset, length), want: length, name: name, offset: offset}, nil
		case !o.InPlace || !errors.Is(err, fs.ErrNotExist):
			return nil, err
		}
		files.readInPackage(name)
	}
	if offset < 0 || length < 0 || offset+length > m.Size {
		return nil, fmt.Errorf("%s: offset %d: a %d-byte record past the member's end (%d bytes): %w", name, offset, length, m.Size, io.ErrUnexpectedEOF)
	}
	r, c, err := files.file(m.Path)
	if err != nil {
		return nil, err
	}
	return &memberRecord{c: c, r: io.NewSectionReader(r, m.Offset+offset, length), want: length, name: name, offset: offset}, nil
}

// openAlone opens each file for the one record read from it.
type openAlone struct{ next originals.Opener }

func (a openAlone) file(path string) (io.ReaderAt, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	return f, f, nil
}

func (a openAlone) nextRecord(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	return a.next.Open(ctx, field, offset, length)
}

func (openAlone) inPackage(string) bool { return false }
func (openAlone) readInPackage(string)  {}

// KeepFiles keeps the packages and the members' new versions it reads
// open between reads, up to limit of them, and the files of Next where
// Next can (originals.KeepOpen, while a rewrite runs). Nothing replaces
// a package meanwhile: a member's new version is put at its staged name
// (or a restore's replaces the staged copy) under the member's lock,
// which drops the member (Drop), and its next read looks at its staged
// name again. A member is never read and dropped at once: its reads
// hold that lock for reading.
func (o *PackageOpener) KeepFiles(limit int) originals.KeptFiles {
	k := &packageFiles{o: o, files: openfiles.New(limit), readInPlace: map[string]bool{}}
	k.next, _ = originals.KeepFilesOf(o.Next, limit)
	return k
}

// packageFiles are the files a PackageOpener keeps open (KeepFiles).
type packageFiles struct {
	o     *PackageOpener
	next  originals.KeptFiles // nil: Next opens each record alone
	files *openfiles.Cache    // packages and staged versions, by path

	mu sync.Mutex
	// readInPlace are the members found with no new version at their
	// staged name (InPlace): read in their package until dropped.
	readInPlace map[string]bool
}

func (k *packageFiles) Open(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	return k.o.open(ctx, field, offset, length, k)
}

func (k *packageFiles) file(path string) (io.ReaderAt, io.Closer, error) {
	f := k.files.Take(path)
	if f == nil {
		opened, err := os.Open(path)
		if err != nil {
			return nil, nil, err
		}
		f = k.files.Keep(path, path, opened)
	}
	return f, &release{f: f}, nil
}

func (k *packageFiles) nextRecord(ctx context.Context, field string, offset, length int64) (io.ReadCloser, error) {
	if k.next != nil {
		return k.next.Open(ctx, field, offset, length)
	}
	return k.o.Next.Open(ctx, field, offset, length)
}

func (k *packageFiles) inPackage(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.readInPlace[name]
}

func (k *packageFiles) readInPackage(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.readInPlace[name] = true
}

// Drop forgets where the file field is read: a member's new version is
// about to be put, or a file of Next replaced.
func (k *packageFiles) Drop(field string) {
	name, err := manifest.UnescapeFile(field)
	if _, ok := k.o.Members[name]; err != nil || !ok {
		if k.next != nil {
			k.next.Drop(field)
		}
		return
	}
	k.mu.Lock()
	delete(k.readInPlace, name)
	k.mu.Unlock()
	if p, ok := k.o.Staged[name]; ok {
		k.files.Drop(p)
	}
}

func (k *packageFiles) Close() error {
	err := k.files.Close()
	if k.next != nil {
		if nerr := k.next.Close(); err == nil {
			err = nerr
		}
	}
	return err
}

// release gives a kept file back, once (openfiles.File.Release).
type release struct {
	f    *openfiles.File
	done bool
}

func (r *release) Close() error {
	if !r.done {
		r.done = true
		r.f.Release()
	}
	return nil
}

// memberRecord is a record read from a member, a file shorter than it an
// unexpected EOF.
type memberRecord struct {
	c         io.Closer
	r         *io.SectionReader
	want, got int64
	name      string
	offset    int64
}

func (m *memberRecord) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.got += int64(n)
	if err == io.EOF && m.got < m.want {
		err = fmt.Errorf("%s: offset %d: member ends %d bytes into a %d-byte record: %w", m.name, m.offset, m.got, m.want, io.ErrUnexpectedEOF)
	}
	return n, err
}

func (m *memberRecord) Close() error { return m.c.Close() }

// PackageRewrite is the part of the rewrite (stage 4) that WACZ packages
// add. Before it, Prepare readies each member with duplicates: a run's
// rewrite (refs) reads it where it lies in its package (Sections, an
// inplace.Section) and puts its new version, checked byte for byte
// against it, at its staged name beside the package, where nothing may
// be; a dry run reads it there too, and puts nothing (before 2026-11-28
// it copied every member with duplicates into the work directory, as
// much space as they take: a collection's assessment needed room for
// most of it). A run's entries are logged under the member's name ("x.wacz#archive/a.warc.gz"), and the
// staged name holds the member's logged version until its package is
// written anew (Recover takes it from there after a kill).
// After it, Finish writes each package whose members changed anew beside
// itself (wacz.Rebuild: other members copied byte for byte, the index
// written fresh in its form, datapackage.json and its digest updated,
// relation.requires naming the packages its new revisits' originals are
// in with their current SHA-256 and size), checks what is on disk
// (wacz.Check with Written: every member's CRC-32 and size, and
// datapackage.json against the SHA-256 each member was written with),
// and renames it over the package. Packages are rebuilt
// after the packages they require (wacz.Order), so that each requires
// entry names the required package as it now is, Jobs at a time.
type PackageRewrite struct {
	Members map[string]PackageMember // the collection's, by name
	DryRun  bool
	// Unsign lets a signed package be rewritten: its signature is removed
	// and recorded in datapackage.json.
	Unsign   bool
	Software string // what removes a signature, for datapackage.json
	TempDir  string // the index while a package is written
	// MetadataDir keeps each package's datapackage.json and digest file
	// as they were before the first rewrite of it, for undo to put back
	// (SavedMetadata); "" keeps none.
	MetadataDir string
	Messages    Messages
	// External finds a package outside the collection by its name in the
	// manifests (a committed crawl's, with a crawl index: CRAWL/PATH.wacz):
	// a revisit of an original in it carries WARC-Refers-To-Container,
	// and its package requires it. nil for none.
	External func(name string) (ExternalPackage, bool)
	// PackageNamed finds a package not beside the one Recover finishes
	// (in another directory of the collection, or a committed crawl's)
	// by its file name, as a revisit's WARC-Refers-To-Container names it:
	// the entry Recover gives a package for it then has its SHA-256,
	// size and crawlId, as a run never stopped writes it (a name alone
	// is never completed later: the package names it). nil for none.
	PackageNamed func(filename string) (ExternalPackage, bool)
	// Changed are more packages (names) whose requirers Finish brings up
	// to date, beside those it writes anew: the job's packages an
	// earlier, stopped attempt at its rewrite wrote (RefreshRequirers).
	Changed []string
	// Moves, if set, follows an offset the numbered manifest gives a
	// record of a member (the hash stage's) to where the record is now:
	// the job's rewrites before this one (the first, for the
	// collisions'; a stopped attempt) moved it. findDependencies reads
	// revisits there (revisitOrigins).
	Moves interface {
		Move(name string, offset int64) (int64, error)
	}
	// Restamp, if set, moves the hash stage's cache entry of a WARC member
	// (by its name in the collection) from the file version that held it
	// to the package written anew around it (warcsum.Cache.Restamp), so
	// that the next listing replays it instead of reading the member.
	Restamp func(name string, from, to os.FileInfo) error
	// Requirers are the paths of more packages, outside the collection
	// (a job on packages named: the others of their directory), whose
	// requires entries RefreshRequirers brings up to date too: an undo
	// of such a job gives back packages that later jobs made them
	// require by hash. Each is checked whole before it is written anew.
	Requirers []string
	// Verified says whether a package, at path and in the version fi
	// describes, is one whose WARC members were compared with its
	// datapackage.json and found what it says (the hash stage's
	// comparison, dedup/wacz.go): nil if so, else why not. A package is
	// rebuilt only from such a version, its other members and their
	// entries copied as they are. nil Verified: each package is checked
	// whole (wacz.Check) before its rebuild.
	Verified func(path string, fi os.FileInfo) error
	// Jobs is how many packages Finish writes anew at once (0: one).
	Jobs int
	// Done, if set, is told the size of each package Finish is through
	// with (written anew, refused, or with nothing to write), as
	// PlannedBytes counted it, once: the progress of the packages'
	// writing, which on a large collection takes a share of the rewrite
	// stage worth showing.
	Done func(bytes int64)
	// WillPut, if set, is told the name of each package about to be
	// renamed over by its new version, before the rename: a package
	// written anew for its requires entries alone is named by no entry
	// of the rewrite log, and a run stopped before its requirers were
	// brought up to date must know on its rerun that it changed
	// (Changed). An error stops the package's writing.
	WillPut func(pkg string) error
	// Lines, if set, holds the index lines of the WARC members as the
	// hash stage read them, and those derived for the staged copies the
	// rewrite replaced (wacz.LineStore): a package whose members' lines
	// it all holds, of the versions written, gets its fresh index from
	// them, no member read again for it.
	Lines *wacz.LineStore
	// PackageSHA256 takes the whole-file SHA-256 of every package written
	// anew as it is written (PackageResult.SHA256), not only of those a
	// later rebuild names by hash: a crawl's commit records it, and need
	// not read the package again for it.
	PackageSHA256 bool
	// KeepPlaces are packages (by path) whose WARC members must stay
	// where they are in the file, a crawl index having their records at
	// offsets in it (a committed crawl's): a new version that would move
	// one (a WARC member after its metadata; data descriptors, which
	// streamed packages have after each member, are kept) is refused
	// before it is renamed.
	KeepPlaces map[string]bool
	// Files finds a file the rewrite rewrites that is no package's
	// member (a WARC or ARC file, by manifest field 1): its new version
	// is written beside it while the staged copies are there, which the
	// check of free space counts (checkSpace). nil: none is counted.
	Files func(field string) (path string, err error)

	// mu guards what the packages written at once share: wroteHere,
	// written, the cache's entries (Restamp), stuck.
	mu sync.Mutex
	// stuck is the first package put in place that could not be given
	// back (noteStuck).
	stuck error
	// noExchange: the run was told that names cannot be exchanged.
	noExchange sync.Once
	staged     map[string]*stagedMember // by member name
	// inPlace: the rewrite reads the members where they lie in their
	// packages (Sections), none is copied out; each staged name gets the
	// member's new version only, and none in a dry run (Prepare; not an
	// undo's PrepareMembers, which copies them).
	inPlace  bool
	packages map[string][]string // package name -> its staged members' names
	deps     map[[2]string]bool  // requirer, required package names
	paths    map[string]string   // package name -> path
	// externals are the packages outside the collection (External) that
	// hold originals of duplicates, by name.
	externals map[string]ExternalPackage
	// written are the SHA-256 and size of the packages written anew here,
	// by name: what RefreshRequirers need not read again.
	written map[string]wacz.Requirement
	// byPackage are the names of pr.Members by package (restamp).
	byPackage map[string][]string
	// restoring: an undo's (PrepareMembers), which keeps no metadata.
	restoring bool
	// wroteHere are the packages rebuild wrote and checked, by path: as
	// trusted as Verified's while they are that version.
	wroteHere map[string]os.FileInfo
	// removing are the removals of the staged copies of packages written
	// anew (removeStaged), which Discard waits for.
	removing sync.WaitGroup
	// fileSystem is checkSpace's look at the file systems (freeSpace
	// when nil; tests give their own).
	fileSystem fileSystem
	// checkedSums are the sums the rewrite's check took of the staged
	// members' new versions, by member name (Replaced).
	checkedSums map[string]checkedSum
	// missing are the packages whose revisits need requires entries they
	// do not have (revisitOrigins): Finish writes them anew for those,
	// with no member to replace.
	missing map[string]bool
	// put are the staged copies (paths) that a new version of their
	// package put in place was written around: Discard keeps any other
	// the rewrite or undo replaced (the member's logged version).
	put map[string]bool
	// newVersions are the new versions the rewrite put at the members'
	// staged names, by member name (Replaced), when it reads the members
	// where they lie (inPlace): only such a file is a member's new
	// version, not one another process put at its name meanwhile (which
	// made the rewrite refuse the member, CommitNew never replacing it).
	newVersions map[string]os.FileInfo
	// planned are the package sizes PlannedBytes counted, by name
	// (plannedSize).
	planned map[string]int64
}

// ExternalPackage is a package outside the collection that holds
// originals: a committed crawl's, never rewritten.
type ExternalPackage struct {
	Path    string
	CrawlID string // its crawl, for relation.requires' crawlId
	// SHA256 (hex), Size and Stamp are the package as its crawl's commit
	// recorded it, if known: while its stamp (crawlindex.Stamp) is the
	// same, its requires entry takes them rather than reading it whole.
	SHA256, Stamp string
	Size          int64
}

// recorded is the package's SHA-256 and size as recorded, when it is
// still the file recorded.
func (e ExternalPackage) recorded() ([]byte, int64, bool) {
	if e.SHA256 == "" || e.Stamp == "" {
		return nil, 0, false
	}
	fi, err := os.Stat(e.Path)
	if err != nil || crawlindex.Stamp(fi) != e.Stamp || fi.Size() != e.Size {
		return nil, 0, false
	}
	sum, err := hex.DecodeString(e.SHA256)
	if err != nil || len(sum) != sha256.Size {
		return nil, 0, false
	}
	return sum, e.Size, true
}

type stagedMember struct {
	PackageMember
	// sum is the member's SHA-256 (hex) as its package's datapackage.json
	// gives it, read from the version of the package sumOf describes,
	// for the rewrite's log (Sections); "" if not known.
	sum   string
	sumOf os.FileInfo
	path  string
	info  os.FileInfo // of the copy as staged
	// movedFrom is the package as the copy was made from it, when the
	// member's cache entry was moved to the copy (Restamp).
	movedFrom os.FileInfo
	// from is the package as the copy was made from it, if it was the
	// same version before and after the copy (nil if not).
	from os.FileInfo
}

// sameVersion reports whether two infos are of one version of a file.
func sameVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// PackageResult is what Finish did.
type PackageResult struct {
	Rebuilt  int      `json:"rebuilt"`
	Requires int      `json:"requires"` // requires entries written
	Refused  []string `json:"refused,omitempty"`
	// Left counts the packages of Refused left as they were with their
	// members' new versions beside them, which the next run's recovery
	// puts in; the others (a requirer whose entries could not be brought
	// up to date) have nothing beside them.
	Left int `json:"left,omitempty"`
	// Checked are the packages written anew, by path: each one's file as
	// it was checked (wacz.Check) and renamed, which a listing of the
	// collection need not check again.
	Checked map[string]os.FileInfo `json:"-"`
	// SHA256 are the whole-file SHA-256 (hex) of packages of Checked,
	// by path, taken as they were written.
	SHA256 map[string]string `json:"-"`
}

// Prepare readies (place) the members that the by-file
// manifest names duplicates in, and finds from the numbered manifest (on digest) which packages
// hold the originals of each one's duplicates.
func (pr *PackageRewrite) Prepare(ctx context.Context, numbered, byFile string) error {
	pr.staged, pr.packages, pr.deps, pr.paths = map[string]*stagedMember{}, map[string][]string{}, map[[2]string]bool{}, map[string]string{}
	pr.externals = map[string]ExternalPackage{}
	pr.inPlace = true
	need := map[string]bool{}
	files := pr.newRewrittenFiles()
	err := EachLine(byFile, func(l *manifest.Line) error {
		if !l.IsDuplicate() {
			return nil
		}
		name, err := manifest.UnescapeFile(l.File)
		if err != nil {
			return err
		}
		if _, ok := pr.Members[name]; ok {
			need[name] = true
		} else {
			files.add(l.File)
		}
		return nil
	})
	if err != nil {
		return err
	}
	names := slices.Sorted(maps.Keys(need))
	if len(names) > 0 && !pr.DryRun { // a dry run writes nothing beside the packages
		if err := pr.checkSpace(names, files.largest); err != nil {
			return err
		}
	}
	// With no member to rewrite too: a package whose revisits lack their
	// requires entries (revisitOrigins) is written anew for them.
	if err := pr.findDependencies(ctx, numbered); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	return pr.placeAll(ctx, names)
}

// placeAll readies the members named for their rewrite where they lie
// (place), Jobs at a time. Every member readied is recorded, for
// Discard, even when another failed.
func (pr *PackageRewrite) placeAll(ctx context.Context, names []string) error {
	sums := pr.memberSums(names)
	staged := make([]*stagedMember, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, max(pr.Jobs, 1))
	var wg sync.WaitGroup
	var failed atomic.Bool
	for i, name := range names {
		if err := ctx.Err(); err != nil {
			errs[i] = err
			break
		}
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			staged[i], errs[i] = pr.place(pr.Members[name], sums[name])
			if errs[i] != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	for i, name := range names {
		if s := staged[i]; s != nil {
			m := s.PackageMember
			pr.staged[name] = s
			pr.packages[m.Package] = append(pr.packages[m.Package], name)
			pr.paths[m.Package] = m.Path
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// EachLine calls fn with each line of a manifest, gzip-compressed (as a
// run keeps its manifests) or plain.
func EachLine(name string, fn func(*manifest.Line) error) error {
	f, err := gzfile.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	mr := manifest.NewReader(bufio.NewReaderSize(f, 256<<10), name)
	for {
		l, err := mr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(&l); err != nil {
			return err
		}
	}
}

// findDependencies reads the numbered manifest, on digest: each class's
// duplicates in a package whose copy 1 is in another package make the one
// require the other. (A duplicate left a response, not smaller as a
// revisit, still counts: the entry is then one more than needed, never
// one less.) The revisits earlier jobs wrote make their package require
// the original's too when it does not name it yet (revisitOrigins,
// wacz_missing.go): such a package is written anew for it, its members
// copied as they are.
func (pr *PackageRewrite) findDependencies(ctx context.Context, numbered string) error {
	var cur string
	// ext -> packages of copy 1: a class may have more than one (the
	// same capture in two packages, a copy of one: each is pinned by the
	// revisits that name it), and the rewrite's revisits may point at
	// any of them, so each is required.
	kept := map[int]map[string]bool{}
	dups := map[int]map[string]bool{} // ext -> packages of duplicates
	origins := pr.newRevisitOrigins(ctx)
	flush := func() {
		origins.endDigest()
		for ext, pkgs := range dups {
			for orig := range kept[ext] {
				for p := range pkgs {
					if p != orig {
						pr.deps[[2]string{p, orig}] = true
					}
				}
			}
		}
		clear(kept)
		clear(dups)
	}
	err := EachLine(numbered, func(l *manifest.Line) error {
		if l.Digest != cur {
			flush()
			cur = l.Digest
		}
		if l.Fields != 10 {
			return nil
		}
		name, err := manifest.UnescapeFile(l.File)
		if err != nil {
			return err
		}
		if l.IsRevisit() {
			if m, ok := pr.Members[name]; ok {
				origins.revisit(l, m)
			}
			return nil
		}
		pkg, path := "", ""
		if m, ok := pr.Members[name]; ok {
			pkg, path = m.Package, m.Path
		} else if e, ok := pr.external(name); ok && l.IsKept() {
			pkg, path = name, e.Path
			pr.externals[name] = e
		}
		switch {
		case l.IsKept():
			if kept[l.Class] == nil {
				kept[l.Class] = map[string]bool{}
			}
			kept[l.Class][pkg] = true
			if pkg != "" {
				if err := origins.kept(l, pkg, path); err != nil {
					return err
				}
			}
		case l.IsDuplicate() && pkg != "":
			if dups[l.Class] == nil {
				dups[l.Class] = map[string]bool{}
			}
			dups[l.Class][pkg] = true
		}
		return nil
	})
	flush()
	if err != nil {
		return err
	}
	if origins.unchecked > 0 && pr.Messages != nil {
		pr.Messages.Note("%d revisits of payloads with more than %d originals were not checked for a relation.requires entry their package may lack (lost by a run of a version before 2026-11-28 stopped while writing packages)", origins.unchecked, maxWaitingOrigins)
	}
	// Originals outside any package need no requires entry.
	for d := range pr.deps {
		if d[1] == "" {
			delete(pr.deps, d)
		}
	}
	return nil
}

// stageName is where a member's staged copy goes beside its package: a
// hidden name no listing takes for a WARC file.
func stageName(m PackageMember) string {
	return "." + filepath.Base(m.Path) + wacz.MemberSep + url.PathEscape(m.Member) + stagedSuffix
}

// StagedName is the file name of the staged copy of member of the
// package at path, beside it.
func StagedName(path, member string) string {
	return stageName(PackageMember{Path: path, Member: member})
}

// stagedSuffix ends the name of a staged member.
const stagedSuffix = ".warcdedup-member"

// stage copies a member out of its package, beside it (an undo's
// PrepareMembers).
func (pr *PackageRewrite) stage(m PackageMember) (*stagedMember, error) {
	path := filepath.Join(filepath.Dir(m.Path), stageName(m))
	pkg, err := os.Open(m.Path)
	if err != nil {
		return nil, err
	}
	defer pkg.Close()
	fi, err := pkg.Stat()
	if err != nil {
		return nil, err
	}
	// A copy an interrupted run staged is made again from the package.
	os.Remove(path)
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fi.Mode().Perm())
	if err != nil {
		return nil, fmt.Errorf("%s: staging %s for its rewrite: %w", m.Package, m.Member, err)
	}
	// Copied by the kernel (copy_file_range: *os.File.ReadFrom of a
	// limited *os.File), not through this process's memory; not synced:
	// a copy the rewrite has not replaced is never used after a crash
	// (it is made again, and Recover takes only a copy that is the
	// version the rewrite log names, which the rewrite synced before it
	// replaced the copy).
	n, err := pkg.Seek(m.Offset, io.SeekStart)
	if err == nil && n != m.Offset {
		err = fmt.Errorf("seek to %d: at %d", m.Offset, n)
	}
	if err == nil {
		n, err = io.Copy(out, io.LimitReader(pkg, m.Size))
	}
	if err == nil && n != m.Size {
		err = fmt.Errorf("%d bytes of %d: %w", n, m.Size, io.ErrUnexpectedEOF)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	var info os.FileInfo
	if err == nil {
		info, err = os.Stat(path)
	}
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("%s: staging %s for its rewrite: %w", m.Package, m.Member, err)
	}
	var from os.FileInfo
	if now, err := pkg.Stat(); err == nil && sameVersion(fi, now) {
		from = fi
	}
	if pr.Restamp != nil && from != nil {
		// The member's cache entry moved to its copy, that the rewrite
		// derives the entry of its new version from it (and Finish moves
		// that one to the new package): when the package is still the
		// version copied from.
		pr.mu.Lock()
		err := pr.Restamp(wacz.JoinName(m.Package, m.Member), fi, info)
		pr.mu.Unlock()
		if err != nil {
			pr.Messages.Note("%v; the hash again reads the member", err)
		} else {
			return &stagedMember{PackageMember: m, path: path, info: info, movedFrom: fi, from: from}, nil
		}
	}
	return &stagedMember{PackageMember: m, path: path, info: info, from: from}, nil
}

// place readies a member for its rewrite where it lies in its package
// (Sections): nothing is copied; what an interrupted run left at its
// staged name, where its new version goes, is removed (Recover, which
// runs before, took what it needed), as stage removes it, but by a dry
// run, which puts nothing there and leaves it for the run. The member's
// cache entry moves to its version in the package (inplace.SectionInfo),
// which the rewrite hands over as the version it replaced, that the
// rewrite derives the entry of its new version from it, as from a copy.
func (pr *PackageRewrite) place(m PackageMember, sum knownSum) (*stagedMember, error) {
	path := filepath.Join(filepath.Dir(m.Path), stageName(m))
	if err := clearStagedName(path, pr.DryRun); err != nil {
		return nil, fmt.Errorf("%s: readying %s for its rewrite: %w", m.Package, m.Member, err)
	}
	if pr.DryRun {
		fi, err := os.Stat(m.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: readying %s for its rewrite: %w", m.Package, m.Member, err)
		}
		return &stagedMember{PackageMember: m, path: path, info: inplace.SectionInfo(fi, m.Size), from: fi}, nil
	}
	fi, err := os.Stat(m.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: readying %s for its rewrite: %w", m.Package, m.Member, err)
	}
	s := &stagedMember{PackageMember: m, sum: sum.sha256, sumOf: sum.of, path: path, info: inplace.SectionInfo(fi, m.Size), from: fi}
	if pr.Restamp != nil {
		pr.mu.Lock() // members are readied at once (placeAll)
		err := pr.Restamp(wacz.JoinName(m.Package, m.Member), fi, s.info)
		pr.mu.Unlock()
		if err != nil {
			pr.Messages.Note("%v; the hash again reads the member", err)
		} else {
			s.movedFrom = fi
		}
	}
	return s, nil
}

// clearStagedName makes way for a member's new version at its staged
// name, path: a file there is what an interrupted run left (Recover,
// which runs before, took what it needed) and is removed, but by a dry
// run, which puts nothing there and leaves it for the run. A directory
// there is no run's: it is refused, by a dry run too, which must stop
// where the run would (before 2026-11-28 a run stopped on a directory
// that held files, its dry run said nothing and exited 0).
func clearStagedName(path string, dryRun bool) error {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, where the member's new version goes (no run makes one there): move it away", path)
	case dryRun:
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing %s, which an interrupted run left where the member's new version goes: %w", path, err)
	}
	return nil
}

// Sections says where each member the rewrite rewrites lies in its
// package, and where its new version goes (its staged name), for
// refs (inplace.Placement.Sections); nil when the members are staged
// (an undo's: Locations names the copies).
func (pr *PackageRewrite) Sections() func(name string) (inplace.Section, bool) {
	if !pr.inPlace {
		return nil
	}
	return func(name string) (inplace.Section, bool) {
		s, ok := pr.staged[name]
		if !ok {
			return inplace.Section{}, false
		}
		sec := inplace.Section{Path: s.Path, Offset: s.Offset, Size: s.Size, NewPath: s.path}
		if s.sum != "" && s.sumOf != nil && pr.Verified != nil {
			sec.SHA256 = s.sum
			sec.Vouched = func(fi os.FileInfo) error {
				if crawlindex.Stamp(fi) != crawlindex.Stamp(s.sumOf) {
					return errors.New("the package is not the version its member's sum was read from")
				}
				return pr.Verified(s.Path, fi)
			}
		}
		return sec, true
	}
}

// knownSum is a member's SHA-256 (hex) as datapackage.json gives it in
// the version of its package of (memberSums).
type knownSum struct {
	sha256 string
	of     os.FileInfo
}

// memberSums reads, for a run's rewrite of the members names where they
// lie (Sections), the SHA-256 each one's package's datapackage.json gives
// it: in a package version Verified accepts (the hash stage compared its
// members with those), it is the member's, which the rewrite's log then
// gives the member's old version without hashing it again. A package
// that cannot be read for it, or changes while it is, gives none (its
// members are hashed). One read of each package's directory and
// datapackage.json.
func (pr *PackageRewrite) memberSums(names []string) map[string]knownSum {
	if !pr.inPlace || pr.Verified == nil || pr.DryRun {
		return nil
	}
	byPath := map[string][]string{}
	for _, name := range names {
		m := pr.Members[name]
		byPath[m.Path] = append(byPath[m.Path], name)
	}
	sums := map[string]knownSum{}
	for path, members := range byPath {
		pr.readMemberSums(path, members, sums)
	}
	return sums
}

// readMemberSums adds to sums those of the members named (of the
// package at path) that its datapackage.json gives, in a version of it
// Verified accepts.
func (pr *PackageRewrite) readMemberSums(path string, names []string, sums map[string]knownSum) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	before, err := f.Stat()
	if err != nil || pr.Verified(path, before) != nil {
		return
	}
	p, err := wacz.NewPackage(f, before.Size(), path)
	if err != nil {
		return
	}
	rs, err := p.Datapackage.Resources()
	if err != nil {
		return
	}
	after, err := f.Stat()
	if err != nil || crawlindex.Stamp(after) != crawlindex.Stamp(before) {
		return
	}
	byPath := map[string][]byte{}
	twice := map[string]bool{}
	for _, r := range rs {
		if _, ok := byPath[r.Path]; ok {
			twice[r.Path] = true // which one the check took is not known
		}
		if len(r.SHA256) == sha256.Size {
			byPath[r.Path] = r.SHA256
		}
	}
	for p := range twice {
		delete(byPath, p)
	}
	for _, name := range names {
		m := pr.Members[name]
		zm := p.Member(m.Member)
		sum, ok := byPath[m.Member]
		if !ok || zm == nil || zm.DataOffset != m.Offset || zm.CompressedSize != m.Size {
			continue
		}
		sums[name] = knownSum{sha256: hex.EncodeToString(sum), of: before}
	}
}

// Container is the WARC-Refers-To-Container of a revisit of dup whose
// original is orig: "file://NAME.wacz" of the original's package when it
// is another than the duplicate's (wabac.js looks there first), "" when
// the original is no package's or the same package's.
func (pr *PackageRewrite) Container(dup, orig *manifest.Line) string {
	on, err1 := manifest.UnescapeFile(orig.File)
	dn, err2 := manifest.UnescapeFile(dup.File)
	if err1 != nil || err2 != nil {
		return ""
	}
	om, ok := pr.Members[on]
	if !ok {
		if e, ok := pr.external(on); ok {
			return wacz.ContainerURI(e.Path)
		}
		return ""
	}
	if pr.Members[dn].Package == om.Package {
		return ""
	}
	return wacz.ContainerURI(om.Path)
}

// external is External's answer, none without it.
func (pr *PackageRewrite) external(name string) (ExternalPackage, bool) {
	if pr.External == nil {
		return ExternalPackage{}, false
	}
	return pr.External(name)
}

// Locations are the staged copies, by member name: where refs finds the
// members it rewrites, and the originals in them once their new versions
// are put; none in a dry run, which puts none (the originals are read in
// the packages).
func (pr *PackageRewrite) Locations() map[string]string {
	if pr.DryRun {
		return nil
	}
	loc := map[string]string{}
	for n, s := range pr.staged {
		loc[n] = s.path
	}
	return loc
}

// Discard removes the staged copies, and moves the cache entries moved
// to them back to their packages (those still the version copied
// from): a rewrite stopped before Finish (Prepare or a check of the
// requirers failed) costs the next run no hashing of its members. A copy
// the rewrite or undo replaced, whose package no new version was put in
// place of (its rebuild failed: a full disk; or the job stopped), stays:
// it is the member's version the rewrite log names, which the next run
// or undo writes its package around first (Recover); removed, the log
// would name a version that is nowhere, the package would keep the
// other, and the next undo would find nothing to restore in it.
func (pr *PackageRewrite) Discard() {
	pr.removing.Wait()
	pr.putBackEntries(nil)
	if pr.DryRun {
		return // nothing staged: what is at a staged name is not the dry run's
	}
	for _, s := range pr.staged {
		if pr.loggedOnly(s) {
			continue
		}
		os.Remove(s.path)
	}
}

// loggedOnly reports whether the staged copy s was replaced (it is no
// longer the copy staged) while no new version of its package written
// around it was put in place (one that copied the member from the
// package, bringing its requires entries up to date, does not count).
func (pr *PackageRewrite) loggedOnly(s *stagedMember) bool {
	if pr.DryRun || s.info == nil {
		return false
	}
	pr.mu.Lock()
	put := pr.put[s.path]
	pr.mu.Unlock()
	fi, err := os.Stat(s.path)
	return !put && err == nil && !os.SameFile(fi, s.info)
}

// PlannedBytes is what Finish may write anew after the rewrite (Prepare
// done): the size of each package with members readied for it or
// lacking requires entries, as it is now. (The requirers Finish brings
// up to date after, found then, are not counted.)
func (pr *PackageRewrite) PlannedBytes() int64 {
	var n int64
	for _, pkg := range pr.plannedPackages() {
		n += pr.plannedSize(pkg)
	}
	return n
}

// plannedPackages are PlannedBytes' packages, by name, sorted.
func (pr *PackageRewrite) plannedPackages() []string {
	set := map[string]bool{}
	for pkg := range pr.packages {
		set[pkg] = true
	}
	for pkg := range pr.missing {
		set[pkg] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// plannedSize is the size PlannedBytes counts for pkg: the package's as
// it was when first asked (0 if it cannot be read), the same each time.
func (pr *PackageRewrite) plannedSize(pkg string) int64 {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if n, ok := pr.planned[pkg]; ok {
		return n
	}
	if pr.planned == nil {
		pr.planned = map[string]int64{}
	}
	var n int64
	if fi, err := os.Stat(pr.paths[pkg]); err == nil {
		n = fi.Size()
	}
	pr.planned[pkg] = n
	return n
}

// done tells Done that Finish is through with the package pkg.
func (pr *PackageRewrite) done(pkg string) {
	if pr.Done != nil {
		pr.Done(pr.plannedSize(pkg))
	}
}

// Finish rebuilds each package whose members the rewrite replaced, the
// packages required first, and removes the staged copies. A package that
// cannot be rebuilt, or whose new version fails its check, is left as it
// was and named in Refused.
func (pr *PackageRewrite) Finish(ctx context.Context, now time.Time) (PackageResult, error) {
	defer pr.Discard()
	var res PackageResult
	defer func() { pr.putBackEntries(res.Checked) }()
	if pr.DryRun {
		return res, nil
	}
	replaced := pr.replacedMembers()
	res.Refused = append(res.Refused, pr.notPutByRewrite(replaced)...)
	for pkg := range pr.missing {
		if replaced[pkg] == nil {
			replaced[pkg] = map[string]string{} // its requires entries alone
		}
	}
	for _, pkg := range pr.plannedPackages() {
		if replaced[pkg] == nil {
			pr.done(pkg) // nothing of it was replaced
		}
	}
	f := pr.finishingOf(replaced, now)
	outcomes := f.run(ctx, replaced)
	rebuilt := res.take(f.order, outcomes, pr.paths)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	// Packages of the collection that required one of those by its
	// former hash (from an earlier run) get its hash now
	// (wacz_requirers.go); those of Changed too, which a stopped attempt
	// may have left stale.
	rr, err := pr.RefreshRequirers(ctx, append(rebuilt, pr.Changed...), now)
	for path, fi := range rr.Checked {
		res.checked(path, fi)
	}
	res.Rebuilt += rr.Rebuilt
	res.Requires += rr.Requires
	res.Refused = append(res.Refused, rr.Refused...)
	if err == nil {
		// Written and renamed, yet not to be called done (nothing the
		// job itself leaves so, unless a package changed under it).
		res.Refused = append(res.Refused, pr.unsoundRequires(res.Checked)...)
	}
	pr.takeSums(&res)
	if stuck := pr.stuckPut(); stuck != nil && err == nil {
		err = stuck
	}
	return res, err
}

// warnNoExchange warns, once, that the packages' file system cannot
// exchange names (NFS): each is renamed over instead, as WARC files are.
func (pr *PackageRewrite) warnNoExchange(err error) {
	pr.noExchange.Do(func() {
		if pr.Messages != nil {
			pr.Messages.Warn(fmt.Errorf("%w: each package is renamed over instead, and a writer that opens it, or a file another process renames over it, in the instant between the last check and the rename is lost", err))
		}
	})
}

// noteStuck keeps the first package whose new version took its name and
// could not give it back (inplace.IsStuck): its rebuild is refused like
// any, and the stage's entry point then stops the run with it.
func (pr *PackageRewrite) noteStuck(err error) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.stuck == nil {
		pr.stuck = err
	}
}

// stuckPut is the first package noteStuck kept, nil for none.
func (pr *PackageRewrite) stuckPut() error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.stuck
}

// replacedMembers are the staged members the rewrite replaced, by
// package: member -> staged copy.
func (pr *PackageRewrite) replacedMembers() map[string]map[string]string {
	replaced := map[string]map[string]string{}
	for pkg, names := range pr.packages {
		for _, n := range names {
			s := pr.staged[n]
			fi, err := os.Stat(s.path)
			if err != nil || os.SameFile(fi, s.info) || !pr.putByRewrite(n, fi) {
				continue // not rewritten (or gone: nothing to put in)
			}
			if replaced[pkg] == nil {
				replaced[pkg] = map[string]string{}
			}
			replaced[pkg][s.Member] = s.path
		}
	}
	return replaced
}

// notPutByRewrite names the members read in place that have a file at
// their staged name other than a new version the rewrite put there
// (replaced has those): another process's, or one whose put the rewrite
// could not see to the end. Neither is written into the package, and the
// run is not done: the file is left for the operator (and the next run's
// Recover, which takes it only if it is the member's logged version).
func (pr *PackageRewrite) notPutByRewrite(replaced map[string]map[string]string) []string {
	if !pr.inPlace {
		return nil
	}
	var out []string
	for pkg, names := range pr.packages {
		for _, n := range names {
			s := pr.staged[n]
			if _, ok := replaced[pkg][s.Member]; ok {
				continue
			}
			if _, err := os.Stat(s.path); err == nil {
				out = append(out, fmt.Sprintf("%s: left as it was: the file at the staged name of %s, %s, is not a new version this run put there", pkg, s.Member, s.path))
			}
		}
	}
	slices.Sort(out)
	return out
}

// putByRewrite reports whether fi, the file at the staged name of the
// member name, is the new version the rewrite put there: always for a
// staged copy (the rewrite renamed its new version over it); when the
// members are read where they lie, only the one Replaced was told of.
func (pr *PackageRewrite) putByRewrite(name string, fi os.FileInfo) bool {
	if !pr.inPlace {
		return true
	}
	pr.mu.Lock()
	nv := pr.newVersions[name]
	pr.mu.Unlock()
	return nv != nil && os.SameFile(fi, nv) && fi.Size() == nv.Size() && fi.ModTime().Equal(nv.ModTime())
}

// finishingOf orders the packages to rebuild, those they require by hash
// first (wacz.Order; in a cycle, none by hash), for a finishing that
// writes them -j at a time, each once those it requires by hash are
// written.
func (pr *PackageRewrite) finishingOf(replaced map[string]map[string]string, now time.Time) *finishing {
	var pkgs []string
	var deps []wacz.Dependency
	for pkg := range replaced {
		pkgs = append(pkgs, pkg)
	}
	slices.Sort(pkgs)
	for d := range pr.deps {
		if replaced[d[0]] != nil {
			deps = append(deps, wacz.Dependency{Requirer: d[0], Required: d[1]})
		}
	}
	slices.SortFunc(deps, func(a, b wacz.Dependency) int {
		return strings.Compare(a.Requirer+"\x00"+a.Required, b.Requirer+"\x00"+b.Required)
	})
	order, cycles := wacz.Order(pkgs, deps)
	inCycle := map[[2]string]bool{}
	for _, c := range cycles {
		for _, a := range c {
			for _, b := range c {
				inCycle[[2]string{a, b}] = true
			}
		}
	}
	// The packages a later rebuild names by hash: only their rebuild
	// takes the SHA-256 of the whole file as it writes it (one that an
	// earlier run's package requires is read for it, by
	// RefreshRequirers, as is one required by a package written first).
	requiredByHash := map[string]bool{}
	for _, d := range deps {
		if !inCycle[[2]string{d.Requirer, d.Required}] {
			requiredByHash[d.Required] = true
		}
	}
	f := &finishing{pr: pr, deps: deps, inCycle: inCycle, requiredByHash: requiredByHash, now: now, order: order,
		sums: map[string]*packageSum{}, done: map[string]chan struct{}{}}
	for _, pkg := range order {
		if replaced[pkg] != nil {
			f.done[pkg] = make(chan struct{})
		}
	}
	return f
}

// take adds up the outcomes of the packages in order (nil where nothing
// was rebuilt) and returns those rebuilt; paths give each package's path.
func (res *PackageResult) take(order []string, outcomes []*finished, paths map[string]string) []string {
	var rebuilt []string
	for i, pkg := range order {
		o := outcomes[i]
		switch {
		case o == nil:
			continue
		case o.refused != "":
			res.Refused = append(res.Refused, o.refused)
			res.Left++
			continue
		}
		res.Rebuilt++
		res.Requires += o.requires
		rebuilt = append(rebuilt, pkg)
		if o.info != nil {
			res.checked(paths[pkg], o.info)
		}
	}
	return rebuilt
}

// checked notes the version of the package at path as checked.
func (res *PackageResult) checked(path string, fi os.FileInfo) {
	if res.Checked == nil {
		res.Checked = map[string]os.FileInfo{}
	}
	res.Checked[path] = fi
}

// takeSums gives res the SHA-256 taken as they were written of the
// packages it checked (each still the size written).
func (pr *PackageRewrite) takeSums(res *PackageResult) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	for pkg, r := range pr.written {
		fi := res.Checked[pr.paths[pkg]]
		if fi == nil || r.Hash == "" || fi.Size() != r.Size {
			continue
		}
		if res.SHA256 == nil {
			res.SHA256 = map[string]string{}
		}
		res.SHA256[pr.paths[pkg]] = r.Hash
	}
}

// finishing is one Finish's rebuild of the packages whose members the
// rewrite replaced, Jobs at a time.
type finishing struct {
	pr             *PackageRewrite
	deps           []wacz.Dependency
	inCycle        map[[2]string]bool
	requiredByHash map[string]bool
	now            time.Time
	order          []string // the packages, those required by hash first
	mu             sync.Mutex
	// sums are each package's SHA-256 and size as it now is, for
	// requires entries: taken once, when first asked for.
	sums map[string]*packageSum
	// done is closed when the package of that name is written anew (or
	// refused): a package requiring it waits for it.
	done map[string]chan struct{}
}

// packageSum is a package's requires entry as it now is, taken once.
type packageSum struct {
	once sync.Once
	r    wacz.Requirement
	err  error
}

// finished is what became of one package.
type finished struct {
	refused  string // why it was left as it was
	requires int
	info     os.FileInfo
}

// run rebuilds the packages of f.order that have replaced members, each
// after the packages it requires by hash (which come before it in
// order), at most Jobs at once: the outcomes, by position in order (nil
// for a package not rebuilt, or not reached once ctx was done).
func (f *finishing) run(ctx context.Context, replaced map[string]map[string]string) []*finished {
	order := f.order
	out := make([]*finished, len(order))
	at := map[string]int{}
	for i, pkg := range order {
		at[pkg] = i
	}
	jobs := max(f.pr.Jobs, 1)
	sem := make(chan struct{}, jobs)
	var wg sync.WaitGroup
	for i, pkg := range order {
		if replaced[pkg] == nil {
			continue
		}
		sem <- struct{}{}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			defer close(f.done[pkg])
			defer f.pr.done(pkg)
			out[i] = f.one(pkg, replaced[pkg], jobs, func(required string) {
				if f.done[required] != nil && at[required] < i {
					<-f.done[required]
				}
			})
		}()
	}
	wg.Wait()
	return out
}

// one rebuilds the package pkg, its requires entries naming the
// packages it requires as they now are. Its members are written at
// once; its requires entries, in datapackage.json after them, once
// wait(required) has returned for each package it requires by hash
// (which waits for the package's rebuild when this Finish rebuilds it
// first): packages requiring each other in a chain, as a crawl's do,
// are written Jobs at a time all the same, each renamed after those it
// requires.
func (f *finishing) one(pkg string, replace map[string]string, jobs int, wait func(required string)) *finished {
	pr := f.pr
	var reqs []wacz.Requirement
	var reqErr error
	requires := func() ([]wacz.Requirement, error) {
		for _, d := range f.deps {
			if d.Requirer != pkg {
				continue
			}
			if f.inCycle[[2]string{d.Requirer, d.Required}] {
				// No order gives both their final hash: named alone, as
				// Browsertrix names a WACZ it has not hashed.
				reqs = append(reqs, wacz.Requirement{Filename: filepath.Base(pr.paths[d.Required]), Size: -1})
				continue
			}
			wait(d.Required)
			r, err := f.sumOf(d.Required)
			if err != nil {
				reqErr = fmt.Errorf("the package it requires, %s: %v", d.Required, err)
				return nil, reqErr
			}
			reqs = append(reqs, r)
		}
		return reqs, nil
	}
	rep, err := pr.rebuild(pkg, replace, f.now, func(b *wacz.Rebuild) {
		b.Requires = requires
		if len(replace) == 0 {
			// Its requires entries alone (revisitOrigins): every member
			// copied byte for byte, the index too.
			b.FreshIndex = false
		}
		b.NoPackageSHA256 = !f.requiredByHash[pkg] && !pr.PackageSHA256
		if jobs > 1 {
			b.SortMemory = sortMemory / jobs
		}
	})
	if err != nil && reqErr != nil && errors.Is(err, reqErr) {
		return &finished{refused: fmt.Sprintf("%s: left as it was: %v", pkg, reqErr)}
	}
	if err != nil {
		msg := fmt.Sprintf("%s: left as it was: %v", pkg, err)
		pr.Messages.Error(errors.New(msg))
		return &finished{refused: msg}
	}
	if rep.synced {
		pr.removeStaged(pkg)
	}
	if rep.sha256 != nil {
		r := wacz.RequirementOf(pr.paths[pkg], rep.sha256, rep.size, "")
		s := &packageSum{r: r}
		s.once.Do(func() {})
		f.mu.Lock()
		f.sums[pkg] = s
		f.mu.Unlock()
		pr.wrote(pkg, r)
	} else {
		f.mu.Lock()
		delete(f.sums, pkg) // of the version replaced
		f.mu.Unlock()
	}
	return &finished{requires: len(reqs), info: rep.info}
}

// sortMemory is the memory the packages written at once share for
// sorting their index lines (wacz.Rebuild.SortMemory).
const sortMemory = 64 << 20

// sumOf is the requires entry of the package pkg as it now is: as this
// Finish wrote it, as its crawl's commit recorded it (External), or
// read whole, once.
func (f *finishing) sumOf(pkg string) (wacz.Requirement, error) {
	pr := f.pr
	f.mu.Lock()
	s, ok := f.sums[pkg]
	if !ok {
		s = &packageSum{}
		f.sums[pkg] = s
	}
	f.mu.Unlock()
	s.once.Do(func() {
		path, crawlID := pr.paths[pkg], ""
		if e, ok := pr.externals[pkg]; ok {
			path, crawlID = e.Path, e.CrawlID
		}
		if path == "" {
			for _, m := range pr.Members {
				if m.Package == pkg {
					path = m.Path
					break
				}
			}
		}
		sum, size, ok := pr.externals[pkg].recorded()
		if !ok {
			if sum, size, s.err = fileSHA256(path); s.err != nil {
				return
			}
		}
		s.r = wacz.RequirementOf(path, sum, size, crawlID)
	})
	return s.r, s.err
}

// rebuilt is a package written anew by rebuild.
type rebuilt struct {
	// sha256 and size are the new file's: its SHA-256 as the check read
	// it back, with the size and CRC-32 it was written with (nil if not
	// asked for: wacz.Rebuild.NoPackageSHA256).
	sha256 []byte
	size   int64
	// info is the file as checked, after its rename; nil if the rename
	// may not be on disk yet or the file is not seen as renamed.
	info os.FileInfo
	// synced: the rename is on disk (atomicfile.File.Commit without
	// ErrNotSynced).
	synced bool
}

// removeStaged removes the staged copies of pkg's members, on another
// core while the next package is written (unlinking a large file takes
// the kernel a while): once the package written anew around them is on
// disk, under its name, nothing needs them (nor would Recover after a
// crash: the package has their versions).
func (pr *PackageRewrite) removeStaged(pkg string) {
	var paths []string
	for _, n := range pr.packages[pkg] {
		p := pr.staged[n].path
		// Read in place, a member the rewrite put no new version of has
		// nothing of this run's at its staged name (a file there is
		// another process's: the rewrite refused the member for it).
		if fi, err := os.Stat(p); pr.inPlace && (err != nil || !pr.putByRewrite(n, fi)) {
			continue
		}
		paths = append(paths, p)
	}
	pr.removing.Add(1)
	go func() {
		defer pr.removing.Done()
		for _, p := range paths {
			os.Remove(p)
		}
	}()
}

// rebuild writes the package anew with its replaced members beside
// itself, checks it, and puts it in place of the package (see
// packageRebuild).
func (pr *PackageRewrite) rebuild(pkg string, replace map[string]string, now time.Time, edit func(*wacz.Rebuild)) (*rebuilt, error) {
	r := &packageRebuild{pr: pr, pkg: pkg, path: pr.paths[pkg], replace: replace}
	defer r.close()
	if err := r.open(); err != nil {
		return nil, err
	}
	b, err := r.prepare(now, edit)
	if err != nil {
		return nil, err
	}
	res, err := r.write(b)
	if err != nil {
		return nil, err
	}
	if pr.WillPut != nil {
		if err := pr.WillPut(pkg); err != nil {
			return nil, fmt.Errorf("%s: %w", pkg, err)
		}
	}
	return r.put(res)
}

// packageRebuild is one package written anew: the package opened and
// guarded as every file replaced in place is (inplace.Target: no other
// process may write it meanwhile, nor put another file under its name
// unseen), its new version written beside it, checked, and exchanged
// with it.
type packageRebuild struct {
	pr        *PackageRewrite
	pkg, path string
	// real is the package's path with symbolic links followed: the file
	// replaced, beside which its new version is written (the link stays).
	real    string
	replace map[string]string // member -> the staged file replacing it
	file    *os.File
	target  *inplace.Target
	old     *wacz.Package
	staged  map[string]os.FileInfo // the staged files as the rebuild began
	tmp     *atomicfile.File
}

// open opens the package, guards it and reads its directory.
func (r *packageRebuild) open() error {
	var err error
	if r.real, err = filepath.EvalSymlinks(r.path); err != nil {
		return err
	}
	f, err := os.Open(r.real)
	if err != nil {
		return err
	}
	r.file = f
	stat := func() (os.FileInfo, error) { return os.Lstat(r.real) }
	if r.target, err = inplace.NewTarget(f, stat, true); err != nil {
		return err
	}
	if !r.target.Info.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", r.path)
	}
	r.old, err = wacz.NewPackage(f, r.target.Info.Size(), r.path)
	return err
}

// prepare says how the package is written anew, once it is known that
// it may be: not signed (unless --unsign), the version committed or
// checked, its datapackage.json kept for undo.
func (r *packageRebuild) prepare(now time.Time, edit func(*wacz.Rebuild)) (*wacz.Rebuild, error) {
	pr := r.pr
	b := &wacz.Rebuild{Source: r.old, Replace: map[string]wacz.Replacement{}, FreshIndex: true, Now: now, TempDir: pr.TempDir}
	edit(b)
	if r.old.Signed() {
		if !pr.Unsign {
			return nil, fmt.Errorf("%w: deduplication invalidates its signature (--unsign removes it)", wacz.ErrSigned)
		}
		b.DropSignature = &wacz.SignatureRemoval{Reason: "WARC records rewritten as revisits by deduplication (warcdedup run --unsign)", Software: pr.Software, When: now}
	}
	if err := pr.trust(r.old, r.path, r.target.Info, len(r.replace) == 0); err != nil {
		return nil, err
	}
	var err error
	if r.staged, err = statFiles(r.replace); err != nil {
		return nil, err
	}
	for m, fi := range r.staged {
		if !pr.putByRewrite(wacz.JoinName(r.pkg, m), fi) {
			return nil, fmt.Errorf("%s: the file at its staged name %s is not the new version this run's rewrite put there (another process's: to keep it, move it away and run again)", m, r.replace[m])
		}
	}
	for m, p := range r.replace {
		b.Replace[m] = pr.replacementOf(r.pkg, m, p, r.staged[m])
	}
	if pr.Lines != nil {
		b.KnownLines = r.knownLines
	}
	if pr.MetadataDir != "" && !pr.restoring {
		if err := saveMetadata(pr.MetadataDir, r.pkg, r.old); err != nil {
			return nil, fmt.Errorf("keeping its datapackage.json for undo: %w", err)
		}
	}
	if pr.TempDir != "" {
		if err := os.MkdirAll(pr.TempDir, 0o755); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// knownLines are the index lines of the package's WARC member as its new
// version holds it, from the hash stage's read (PackageRewrite.Lines):
// of the member as the package holds it, or derived for its staged copy
// the rewrite replaced, when that copy was made from this version of
// the package and rewritten once; nil otherwise.
func (r *packageRebuild) knownLines(member string) *os.File {
	m := r.old.Member(member)
	if m == nil {
		return nil
	}
	name, stamp := wacz.JoinName(r.pkg, member), wacz.MemberStamp(m)
	if _, ok := r.replace[member]; !ok {
		return r.pr.Lines.Read(name, stamp)
	}
	s := r.pr.staged[name]
	if s == nil || s.from == nil || !sameVersion(s.from, r.target.Info) {
		return nil
	}
	return r.pr.Lines.ReadDerived(name, stamp, s.info, r.staged[member])
}

// write writes the new version beside the package and checks it.
func (r *packageRebuild) write(b *wacz.Rebuild) (*wacz.Result, error) {
	// The partial new versions a killed run or undo left are removed, as
	// those of WARC files are (inplace): nothing refers to them, and
	// each would keep up to the package's size.
	atomicfile.RemoveLeftovers(r.real)
	var err error
	if r.tmp, err = atomicfile.Create(r.real, r.target.Info.Mode().Perm()); err != nil {
		return nil, err
	}
	// The package's owner, group and extended attributes, as every file
	// replaced in place keeps them (where this process may give them: a
	// user who may write the directory need not own the package).
	if err := inplace.ShareAttributes(r.tmp.File, r.file); err != nil {
		return nil, fmt.Errorf("giving the new version the package's owner and attributes: %w", err)
	}
	// The whole file's SHA-256, when asked for (a package another
	// requires by hash), is taken by the check's read of what was
	// written, not by the writer: that read is made anyway, and a
	// writer not asked for it has the kernel copy the replaced members
	// in (copy_file_range), their bytes never in this process's memory.
	wantSHA256 := !b.NoPackageSHA256
	b.NoPackageSHA256 = true
	// The members are read back as soon as they are written, while the
	// package waits for the packages it requires to be written and
	// checked (a crawl's packages require each other in a chain): the
	// check below then reads the metadata files and the central
	// directory, every other byte having been read then.
	b.ReadBack = &wacz.ReadBack{PackageSHA256: wantSHA256}
	// Flushed to disk before that wait, the members are not in the sync
	// before the rename (atomicfile's Exchange), which the packages that
	// require this one wait for.
	b.FlushBeforeWait = true
	res, err := b.Write(r.tmp.File)
	if err != nil {
		return nil, err
	}
	if res.IndexedMembers && r.pr.Lines != nil && r.pr.Messages != nil {
		r.pr.Messages.Note("%s: its index made by reading its WARC members again: the hash stage's lines of some are missing or of another version", r.pkg)
	}
	np, err := wacz.NewPackage(r.tmp.File, res.Size, r.pkg+" (new version)")
	if err != nil {
		return nil, fmt.Errorf("the new version does not read back: %w", err)
	}
	if r.pr.KeepPlaces[r.path] {
		if err := sameWARCPlaces(r.old, np); err != nil {
			return nil, fmt.Errorf("writing it anew would move its records, which a crawl index has at their offsets: %w", err)
		}
	}
	// The index was made from the staged members while they were copied
	// in (a fresh index reads them on another core): the same bytes, if
	// they are the versions the rebuild began with.
	if err := unchangedFiles(r.replace, r.staged); err != nil {
		return nil, err
	}
	// The check of what is on disk: every member's CRC-32 and size
	// against the ZIP, the whole file's as written, datapackage.json
	// against the SHA-256 each member was written with (or, copied, had
	// in the version checked), the digest file, the index's structure.
	// The index's lines are not made again from the members: the index
	// member read back has the CRC-32 of the index made from the bytes
	// the WARC members read back have theirs of (wacz.CheckOptions.Written).
	rep, err := wacz.Check(np, wacz.CheckOptions{Written: res, TempDir: r.pr.TempDir, PackageSHA256: wantSHA256})
	if err == nil {
		err = rep.Err()
	}
	if err == nil && (rep.Size != res.Size || rep.CRC32 != res.CRC32) {
		err = fmt.Errorf("it reads back as %d bytes, CRC-32 %08x; it was written as %d bytes, CRC-32 %08x", rep.Size, rep.CRC32, res.Size, res.CRC32)
	}
	if err != nil {
		return nil, fmt.Errorf("the new version failed its check and was removed: %w", err)
	}
	if wantSHA256 {
		// Of the bytes read back, which have the size and CRC-32
		// written.
		res.SHA256 = rep.SHA256
	}
	return res, nil
}

// put puts the checked new version in place of the package, which must
// still be the one rebuilt from, with no writer (inplace.Target.Put), and
// notes the version it left.
func (r *packageRebuild) put(res *wacz.Result) (*rebuilt, error) {
	checked, err := r.tmp.File.Stat()
	if err != nil {
		return nil, err
	}
	if err := r.target.Unchanged(); err != nil {
		return nil, err
	}
	if err := r.target.CheckWriters(); err != nil {
		return nil, err
	}
	out := &rebuilt{sha256: res.SHA256, size: res.Size}
	err = r.target.Put(r.tmp, inplace.Unwritten(unwrittenPackage(res.Size, res.CRC32)), r.pr.warnNoExchange)
	r.tmp = nil
	if inplace.IsStuck(err) {
		r.pr.noteStuck(err)
	}
	if err != nil && !errors.Is(err, atomicfile.ErrNotSynced) {
		return nil, err
	}
	out.synced = err == nil
	r.pr.mu.Lock()
	if r.pr.put == nil {
		r.pr.put = map[string]bool{}
	}
	for _, staged := range r.replace {
		r.pr.put[staged] = true
	}
	r.pr.mu.Unlock()
	if now, serr := os.Stat(r.path); err == nil && serr == nil && os.SameFile(checked, now) && now.Size() == checked.Size() && now.ModTime().Equal(checked.ModTime()) {
		out.info = now
	}
	if out.info != nil {
		pr := r.pr
		pr.mu.Lock()
		if pr.wroteHere == nil {
			pr.wroteHere = map[string]os.FileInfo{}
		}
		pr.wroteHere[r.path] = out.info
		if pr.Restamp != nil {
			pr.restamp(r.pkg, r.target.Info, r.replace, r.staged, out.info)
		}
		pr.mu.Unlock()
	}
	return out, nil
}

// unwrittenPackage says whether f, a new version of a package given the
// name back, still holds the bytes written (size bytes with the CRC-32
// crc): a process that opened the name while it held it, rewrote it at
// the same size and closed it within the file system's timestamp tick
// left its size and modification time as they were (Target.Put's look,
// as for a WARC file).
func unwrittenPackage(size int64, crc uint32) func(*os.File) error {
	return func(f *os.File) error {
		h := crc32.NewIEEE()
		n, err := io.Copy(h, f)
		if err != nil {
			return fmt.Errorf("it cannot be read: %w", err)
		}
		if n != size || h.Sum32() != crc {
			return fmt.Errorf("its bytes are not those written (%d bytes, CRC-32 %08x): it has %d bytes, CRC-32 %08x", size, crc, n, h.Sum32())
		}
		return nil
	}
}

// close removes a new version not put in place, gives the guard up and
// closes the package. The close is not left to another goroutine, though
// freeing a large replaced package's blocks takes the kernel tens of
// milliseconds that the packages requiring this one wait for: the check
// of free space counts those blocks free once the package is replaced,
// and the next package's write ran out of room while they were not
// (dedup's TestUndoWACZSpaceThreshold, in CI).
func (r *packageRebuild) close() {
	if r.tmp != nil {
		r.tmp.Abort()
	}
	if r.target != nil {
		r.target.Release()
	}
	if r.file != nil {
		r.file.Close()
	}
}

// sameWARCPlaces checks that every WARC member of old is in np with
// the same bytes at the same offset.
func sameWARCPlaces(old, np *wacz.Package) error {
	for _, m := range old.Members {
		if !m.IsArchive() {
			continue
		}
		n := np.Member(m.Name)
		if n == nil || n.DataOffset != m.DataOffset || n.Size != m.Size || n.CRC32 != m.CRC32 {
			at := int64(-1)
			if n != nil {
				at = n.DataOffset
			}
			return fmt.Errorf("%s would be at offset %d, not %d", m.Name, at, m.DataOffset)
		}
	}
	return nil
}

// trust checks that the package old (at path, fi) is what its
// datapackage.json says, which its rebuild copies from: the version the
// hash stage compared (Verified), or one this rewrite wrote; else,
// without Verified or for a rebuild that replaces no member (recheck: a
// requirer's entries brought up to date, which the job's listing need
// not describe), read whole now. A package whose members the job
// rewrote is rebuilt only from the version its hash stage read: another
// one is refused, its records' lines being of another file.
func (pr *PackageRewrite) trust(old *wacz.Package, path string, fi os.FileInfo, recheck bool) error {
	pr.mu.Lock()
	w, ok := pr.wroteHere[path]
	pr.mu.Unlock()
	if ok && sameVersion(w, fi) {
		return nil
	}
	if pr.Verified != nil {
		err := pr.Verified(path, fi)
		if err == nil || !recheck {
			return err
		}
	}
	rep, err := wacz.Check(old, wacz.CheckOptions{})
	if err == nil {
		err = rep.Err()
	}
	if err != nil {
		return fmt.Errorf("the package is not what its datapackage.json says: %w", err)
	}
	return nil
}

// unchangedFiles checks that the staged members (by member name) are
// the versions statFiles found.
func unchangedFiles(replace map[string]string, before map[string]os.FileInfo) error {
	for m, p := range replace {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if !sameVersion(before[m], fi) {
			return fmt.Errorf("%s: its new version changed while the package was written", m)
		}
	}
	return nil
}

// putBackEntries moves the cache entries moved to staged copies of
// members whose package was not written anew (checked gives those that
// were) back to the package, when it is still the version copied from.
// Once for each staged member (Finish does it, then Discard, which finds
// nothing more to do).
func (pr *PackageRewrite) putBackEntries(checked map[string]os.FileInfo) {
	if pr.Restamp == nil {
		return
	}
	for name, s := range pr.staged {
		if s.movedFrom == nil || checked[s.Path] != nil {
			continue
		}
		if now, err := os.Stat(s.Path); err == nil && sameVersion(s.movedFrom, now) {
			pr.Restamp(name, s.info, now)
		}
		s.movedFrom = nil
	}
}

// statFiles stats the staged members (by member name), as they were
// when a rebuild read them.
func statFiles(replace map[string]string) (map[string]os.FileInfo, error) {
	infos := map[string]os.FileInfo{}
	for m, p := range replace {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		infos[m] = fi
	}
	return infos, nil
}

// restamp moves the cache entries of the WARC members of the package
// written anew (now) from the versions that held them: the package as it
// was (old), or for a member replaced its staged copy as the rebuild
// read it, if that copy is still that version (the check found every
// member written with the CRC-32 it was written with). An entry not moved only costs the
// member's reading again.
func (pr *PackageRewrite) restamp(pkg string, old os.FileInfo, replace map[string]string, staged map[string]os.FileInfo, now os.FileInfo) {
	if pr.byPackage == nil {
		pr.byPackage = map[string][]string{}
		for name, m := range pr.Members {
			pr.byPackage[m.Package] = append(pr.byPackage[m.Package], name)
		}
	}
	for _, name := range pr.byPackage[pkg] {
		m := pr.Members[name]
		from := old
		if fi, ok := staged[m.Member]; ok {
			if cur, err := os.Stat(replace[m.Member]); err != nil || !sameVersion(fi, cur) {
				continue
			}
			from = fi
		} else if s := pr.staged[name]; s != nil && s.movedFrom != nil {
			// Staged, not rewritten: copied from the package, as it
			// was when staged.
			if !sameVersion(s.movedFrom, old) {
				continue
			}
			from = s.info
		}
		if err := pr.Restamp(name, from, now); err != nil {
			pr.Messages.Note("%v; the next listing reads the member", err)
		}
	}
}

// fileSHA256 is a file's SHA-256 and size: what relation.requires names a
// package by (Browsertrix's hash, "sha256:").
func fileSHA256(path string) ([]byte, int64, error) {
	h, err := fixity.HashFile(path, fixity.SHA256)
	if err != nil {
		return nil, 0, err
	}
	return h.Raw(fixity.SHA256), h.Size(), nil
}

// savedMetadata is a package's metadata as it was before its first
// rewrite, as MetadataDir keeps it.
type savedMetadata struct {
	Package     string `json:"package"`
	Datapackage []byte `json:"datapackage"`
	Digest      []byte `json:"digest,omitempty"`
	// Times are the members' MS-DOS time and date, by name.
	Times map[string][2]uint16 `json:"times,omitempty"`
}

func metadataFile(dir, pkg string) string {
	return filepath.Join(dir, url.PathEscape(pkg)+".json")
}

// saveMetadata keeps the package's metadata unless an earlier rewrite of
// it kept its own (the version before the first run is the one to give
// back).
func saveMetadata(dir, pkg string, p *wacz.Package) error {
	name := metadataFile(dir, pkg)
	if _, err := os.Stat(name); err == nil {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	times := map[string][2]uint16{}
	for _, m := range p.Members {
		times[m.Name] = [2]uint16{m.ModifiedTime, m.ModifiedDate}
	}
	b, err := json.Marshal(savedMetadata{Package: pkg, Datapackage: p.DatapackageRaw, Digest: p.DigestRaw, Times: times})
	if err != nil {
		return err
	}
	f, err := atomicfile.Create(name, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.CommitRenamed()
}

// SavedMetadata is the metadata MetadataDir keeps of the package named
// pkg, nil if none, and its members' times.
func SavedMetadata(dir, pkg string) (*wacz.Metadata, map[string][2]uint16, error) {
	b, err := os.ReadFile(metadataFile(dir, pkg))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var s savedMetadata
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", metadataFile(dir, pkg), err)
	}
	return &wacz.Metadata{Datapackage: s.Datapackage, Digest: s.Digest}, s.Times, nil
}

// ForgetMetadata drops the metadata kept of pkg: an undo gave it back.
func ForgetMetadata(dir, pkg string) error {
	err := os.Remove(metadataFile(dir, pkg))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
