package dedup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"warcdedup/collock"
	"warcdedup/internal/progress"
	"warcdedup/source"
	"warcdedup/stage"
	"warcdedup/warcsum"
)

// collection is the files a run or an undo works on: those beneath the
// directories named, or, with a crawl index, the crawl's, named
// CRAWL/PATH; only those named in files when it is not nil.
type collection struct {
	roots []string
	crawl *crawlMode
	files map[string]bool
	// wacz lists the WARC members of WACZ packages (dedup/wacz.go).
	wacz *waczPackages
	// packages, when not nil, restricts the collection to the WACZ
	// packages of these paths (waczinput.go): no other file is read.
	packages map[string]bool
	// others are the other files the last collect found beneath the
	// roots (not WARC or ARC, or still being written: see notread.go).
	others []string
	// locks, when not nil, are the job's directory locks (package
	// collock): each listing adds the directories of the files it found,
	// made since the job locked the collection's tree.
	locks *collock.Set
}

// locator finds the collection's files, each beneath its root; with an
// index, the files of every crawl, named CRAWL/PATH.
func (c *collection) locator() *source.Locator {
	if c.crawl != nil {
		return &source.Locator{Prefixes: c.crawl.prefixes()}
	}
	return &source.Locator{Roots: c.roots}
}

// collect lists the collection's files as they are now (see
// crawlMode.collect with an index), and the files still being written
// that it passes over.
func (c *collection) collect() (inputs []warcsum.Input, inProgress []string, err error) {
	c.others = nil
	col := warcsum.Collector{Recursive: true, InProgress: func(p string) { inProgress = append(inProgress, p) },
		Other: func(p string) {
			if filepath.Base(p) != collock.LockFile { // a job's lock, on a network file system
				c.others = append(c.others, p)
			}
		}}
	if c.wacz != nil {
		if c.crawl != nil {
			c.wacz.prefix = c.crawl.name + "/" // crawlwacz.go
		}
		c.wacz.begin()
		if c.crawl == nil {
			c.wacz.want = c.files
		}
		col.Packages = c.wacz.expand
	}
	seen := map[string]bool{}
	if c.packages != nil {
		// Only the packages named are listed (and checked), nothing else.
		expand := col.Packages
		col.Packages = func(in warcsum.Input) ([]warcsum.Input, error) {
			if !c.packages[in.Path] {
				return nil, nil
			}
			seen[in.Path] = true
			return expand(in)
		}
		col.Other, col.InProgress = nil, nil
	}
	if c.crawl != nil {
		inputs, err = c.crawl.collect(col)
	} else {
		inputs, err = col.Collect(c.roots)
	}
	if c.packages != nil && err == nil {
		inputs = slices.DeleteFunc(inputs, func(in warcsum.Input) bool { return !c.packages[in.Path] })
		for _, p := range slices.Sorted(maps.Keys(c.packages)) {
			if !seen[p] {
				return nil, nil, fmt.Errorf("%s: the package named is missing (or not a regular file)", p)
			}
		}
	}
	if c.wacz != nil {
		c.others = append(c.others, c.wacz.refusedPaths...) // refused WACZ packages
	}
	if err == nil {
		err = c.lockListed(inputs)
	}
	if err != nil || c.files == nil {
		return inputs, inProgress, err
	}
	return slices.DeleteFunc(inputs, func(in warcsum.Input) bool { return !c.files[in.Name] }), inProgress, nil
}

// lockListed locks the directories of the files listed that the job does
// not hold yet: a directory made in the collection after the job locked
// its tree (another job may hold it, on it alone), before any of its
// files is rewritten.
func (c *collection) lockListed(inputs []warcsum.Input) error {
	if c.locks == nil {
		return nil
	}
	paths := make([]string, len(inputs))
	for i, in := range inputs {
		paths[i] = in.Path // a WACZ member's is its package's
	}
	return c.locks.Add(collock.Dirs(paths)...)
}

// size is the bytes of the files named (escaped, as manifest field 1) as
// they are now.
func (c *collection) size(names []string) int64 {
	var total int64
	loc := c.locator()
	for _, n := range names {
		local, err := loc.Resolve(n)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(local.Path()); err == nil {
			total += fi.Size()
		}
	}
	return total
}

// hash runs the Hash stage, shown on show as the stage name; a
// collection whose files hold no record stops the job.
func hash(ctx context.Context, show *progress.Display, name string, h stage.Hash) (stage.HashResult, error) {
	s := show.Start(name, "", 0)
	h.Meter = s
	res, err := h.Run(ctx)
	s.End(err, "")
	if err == nil && res.Stats.Records == 0 {
		err = errors.New("the collection's files hold no record")
	}
	return res, err
}

// ListInputs lists the files and WACZ members a run with opt would read,
// named as its manifests name them, the packages opened but not checked:
// what warcdedup assess --sample draws its sample from (the dry run on
// the sample then checks the packages holding members drawn).
func ListInputs(opt Options) ([]warcsum.Input, error) {
	if err := opt.complete(); err != nil {
		return nil, err
	}
	c := &collection{roots: opt.Collections, wacz: newWACZPackages(opt.Unsign)}
	c.wacz.listOnly = true
	if opt.input != nil {
		c.packages = opt.input.selected()
	}
	inputs, _, err := c.collect()
	return inputs, err
}
