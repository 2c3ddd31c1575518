package dedup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"warcdedup/collock"
	"warcdedup/crawlindex"
	"warcdedup/internal/progress"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/wacz"
	"warcdedup/warcsum"
	"warcdedup/workdir"
)

// What warcdedup undo (package undo), which works on a job after its
// runs, shares with the run: the job's state (read, and reset once the
// undo changed the collection), its collection opened again as the run
// reads it (files, WACZ packages, crawl) and the messages of its stages;
// each is the run's own, so that the undo lists the collection, stamps
// files and words its messages exactly as the run does. (The CDX
// indexes' update is cdx.go's UpdateCDXSince, the work directory's
// records records.go's NewRunDir, WriteUndoRecords and
// WriteCollectionReport; the work directory is found by findworkdir.go;
// the work files' sorts are workdir.Dir.Sort.)

// ReadState reads the job's state in the work directory (state.json); a
// missing file is a new job.
func ReadState(wd *workdir.Dir) (*State, error) { return readState(wd) }

// ResetState forgets every stage the job of the work directory did, as
// after an undo changed its collection: s keeps the job's parameters
// alone and replaces its state in the work directory atomically, so that
// a later run starts a new job on the collection, from its first stage.
func ResetState(wd *workdir.Dir, s *State) error {
	*s = State{Params: s.Params}
	return writeState(wd, s)
}

// FileStamp is a file's identity for "nothing changed", as the job's
// state records its files' (State.Stamps).
func FileStamp(path string) (string, bool) { return fileStamp(path) }

// MemberStamp is a WACZ member's identity for "nothing changed", as the
// job's state records its members' (State.Stamps).
func MemberStamp(m *wacz.Member) string { return memberStamp(m) }

// HashedStamps are the stamps of the files the hash stage of the work
// directory's last job read, taken before it read them (by name; nil if
// it has read none): a file with the same stamp now is as it was before
// that job began, whether or not the job completed.
func HashedStamps(wd *workdir.Dir) (map[string]string, error) {
	m, err := readStamps(wd.File(workdir.HashedFiles))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return m, err
}

// Messages are the stages' messages on show (and so in the run log it
// tees to), worded as a run's.
func Messages(show *progress.Display) stage.Messages { return messages{show} }

// WACZMetadataDir is the work directory's keep of the WACZ packages'
// metadata before their first rewrite (stage.PackageRewrite.MetadataDir,
// stage.SavedPackages), for undo.
func WACZMetadataDir(wd *workdir.Dir) string { return wd.File(waczMetadataDir) }

// RewrittenPackages are the WACZ packages (names in the collection) whose
// members the work directory's rewrite log names.
func RewrittenPackages(wd *workdir.Dir) (map[string]bool, error) { return rewrittenPackages(wd) }

// Collection is a job's collection opened again from its parameters, as
// the run read it: its files now (listed as the run lists them, WACZ
// members included), where they are, its WACZ packages, and, for a crawl
// of an index, the crawl.
type Collection struct {
	wd    *workdir.Dir
	c     *collection
	input *packageInput
}

// OpenCollection opens again the collection of the job in wd, whose
// parameters are params. index is the crawl index of a crawl's job (its
// files are then named CRAWL/PATH, as its rewrite log names them), nil
// for a collection's. The WACZ packages' verdicts are the job's
// (wacz-checked.json); signed packages are listed as any other, not
// refused (as with --unsign). An error if params name no collection.
func OpenCollection(wd *workdir.Dir, params Params, index *crawlindex.Index) (*Collection, error) {
	if len(params.Collections) == 0 {
		return nil, fmt.Errorf("%s: the job's state names no collection", wd.File(workdir.StateFile))
	}
	var crawl *crawlMode
	if index != nil {
		crawl = &crawlMode{index: index, name: params.Crawl, root: params.Collections[0], committed: map[string]bool{}}
	}
	c := &Collection{wd: wd, c: &collection{roots: params.Collections, crawl: crawl, wacz: newWACZPackages(true)}}
	c.c.wacz.store = wd.File(waczCheckedFile)
	if params.Source != "" { // a job named WACZ files or a multi-WACZ JSON (waczinput.go)
		var err error
		if c.input, err = packageInputOf(params); err != nil {
			return nil, err
		}
		c.c.packages = c.input.selected()
		if crawl != nil {
			c.input.prefix = crawl.name + "/" // crawlwacz.go
		}
	}
	return c, nil
}

// LockListed has each listing of the collection lock, in locks, the
// directories of the files it finds (a directory made after the job
// locked the collection's tree).
func (c *Collection) LockListed(locks *collock.Set) { c.c.locks = locks }

// Roots are the collection's directories (a copy).
func (c *Collection) Roots() []string { return slices.Clone(c.c.roots) }

// NamedPackages reports whether the job was named WACZ files or a
// multi-WACZ JSON rather than a directory.
func (c *Collection) NamedPackages() bool { return c.input != nil }

// Expand replaces the multi-WACZ JSON among paths by its packages.
func (c *Collection) Expand(paths []string) []string {
	if c.input == nil {
		return paths
	}
	return c.input.expand(paths)
}

// EachOutside calls fn with each WACZ package of the named packages'
// directory outside the job that opens, and its requires entries (none
// for a job on a directory).
func (c *Collection) EachOutside(fn func(path string, reqs []wacz.Requirement)) error {
	if c.input == nil {
		return nil
	}
	return c.input.eachOutside(fn)
}

// Collect lists the collection's files as they are now.
func (c *Collection) Collect() ([]warcsum.Input, error) {
	inputs, _, err := c.c.collect()
	return inputs, err
}

// Hash runs h, the Hash stage of the collection's files, shown on show as
// name, with the WACZ packages' members checked as a run checks them (the
// collection is listed again without a package refused).
func (c *Collection) Hash(ctx context.Context, show *progress.Display, name string, h stage.Hash) (stage.HashResult, error) {
	return c.c.wacz.hash(ctx, show, name, h, c.Collect)
}

// Locator finds the collection's files by their names in the manifests.
func (c *Collection) Locator() *source.Locator { return c.c.locator() }

// Size is the bytes of the files named (escaped, as manifest field 1) as
// they are now.
func (c *Collection) Size(names []string) int64 { return c.c.size(names) }

// PackageRewrite is the rewrite of the WACZ packages of the last listing
// (Collect, Hash) around members staged beside them, its metadata kept in
// the work directory, nil if the listing holds no member. Its Members are
// a copy of the listing's.
func (c *Collection) PackageRewrite(show *progress.Display) *stage.PackageRewrite {
	w := c.c.wacz
	if w == nil || len(w.members) == 0 {
		return nil
	}
	return &stage.PackageRewrite{Members: maps.Clone(w.members), TempDir: c.wd.File(workdir.TmpDir), MetadataDir: c.wd.File(waczMetadataDir),
		Software: "warcdedup", Messages: messages{show}, Verified: w.verified}
}

// RecoverPackages finishes the WACZ packages a stopped run or undo left
// with their members' logged versions staged beside them, before
// anything reads the collection.
func (c *Collection) RecoverPackages(show *progress.Display) error {
	return recoverPackages(c.wd, c.c.roots, messages{show}, c.c.packages, c.c.crawl)
}

// SyncMultiWACZ brings the multi-WACZ JSON the job was named, if any, up
// to date with the packages the job rewrote, as they are now.
func (c *Collection) SyncMultiWACZ() error { return syncMultiWACZ(c.wd, c.input) }
